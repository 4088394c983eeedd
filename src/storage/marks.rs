//! `pgcol.row_mark`: what happened to single rows after their stripe was written. One catalog
//! row per mark, keyed by the relation's storage id and the row number: the mark of a DELETE
//! or of an UPDATE (which deletes the row and names its new version, inserted as a new row),
//! or of a row lock (`SELECT ... FOR KEY SHARE / SHARE / NO KEY UPDATE / UPDATE`, and the lock
//! a BEFORE trigger takes on the row it is given).
//!
//! Marks are plain heap tuples, like `pgcol.stripe`'s rows, so PostgreSQL's MVCC decides what
//! they mean: a row is deleted for a snapshot exactly when the snapshot sees its delete mark.
//! A rolled-back DELETE (or savepoint) takes its marks with it, and a reader keeps its
//! snapshot while a DELETE runs or commits. A lock mark matters only while its transaction
//! runs: a writer of the row waits for the running transactions whose marks conflict with its
//! own (`am::modify`), exactly as heap waits for a tuple's xmax. Marks are read with a dirty
//! snapshot for that (every mark whose transaction has not aborted, with the running ones
//! told apart), and under the reader's snapshot for the delete mask of a scan.
//!
//! Marks are written with `heap_insert` and an explicit command id, and never logically
//! decoded (the catalog is this node's own, like the stripe catalog).

use pgrx::pg_sys;

/// What a mark does to its row: the four row locks, in the order of PostgreSQL's
/// `LockTupleMode`, and the two deletions, which lock as heap's do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mode {
    KeyShare = 0,
    Share = 1,
    NoKeyUpdate = 2,
    Update = 3,
    /// Deleted by a DELETE, or by an UPDATE that may change a key column: locks as `FOR
    /// UPDATE`.
    Delete = 4,
    /// Deleted by an UPDATE that changes no key column (a column of a unique index a foreign
    /// key could reference): locks as `FOR NO KEY UPDATE`.
    NoKeyDelete = 5,
    /// Taken back by the `INSERT ... ON CONFLICT` that inserted it, after its index entries
    /// met a conflict (heap's "super-deletion"): the row never existed, for every snapshot,
    /// including a dirty one while the transaction runs.
    Killed = 6,
}

impl Mode {
    fn from_stored(v: i16) -> Option<Mode> {
        use Mode::*;
        [
            KeyShare,
            Share,
            NoKeyUpdate,
            Update,
            Delete,
            NoKeyDelete,
            Killed,
        ]
        .into_iter()
        .find(|m| *m as i16 == v)
    }

    /// Whether the row is gone.
    pub fn deletes(self) -> bool {
        matches!(self, Mode::Delete | Mode::NoKeyDelete | Mode::Killed)
    }

    /// The row lock the mark holds.
    pub fn strength(self) -> Mode {
        match self {
            Mode::Delete | Mode::Killed => Mode::Update,
            Mode::NoKeyDelete => Mode::NoKeyUpdate,
            m => m,
        }
    }

    /// Whether a running transaction's mark of mode `self` keeps out a mark of mode `other`
    /// of another transaction: PostgreSQL's row-lock conflict table, by [`strength`](Self::strength).
    pub fn conflicts(self, other: Mode) -> bool {
        use Mode::*;
        let (a, b) = (self.strength(), other.strength());
        match (a.min(b), a.max(b)) {
            (KeyShare, high) => high >= Update,
            (Share, Share) => false,
            _ => true,
        }
    }
}

/// Whose a mark is, as a dirty snapshot tells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holder {
    /// This transaction (or one of its subtransactions) made it, as command `cmin`.
    Mine { cmin: pg_sys::CommandId },
    /// A transaction that is still running.
    Running(pg_sys::TransactionId),
    /// A transaction that committed.
    Committed(pg_sys::TransactionId),
}

#[derive(Clone, Copy, Debug)]
pub struct Mark {
    pub mode: Mode,
    pub holder: Holder,
    /// The holder's transaction (for `Mine`, the (sub)transaction that placed it).
    pub xid: pg_sys::TransactionId,
    /// The mark's TID in the catalog.
    pub tid: pg_sys::ItemPointerData,
    /// Someone is deleting the mark itself (see [`forget`]).
    pub being_forgotten: bool,
    /// The transaction that inserted the mark's catalog row still runs (another's: a lock
    /// carried to a new version by a running UPDATE, [`insert_carried`]); such a row is not
    /// this backend's to delete.
    pub inserter_running: bool,
    /// A deletion by an UPDATE: where the new version is.
    pub successor: Option<Successor>,
}

impl Mark {
    /// A lock mark whose holder has ended: it holds nothing, and a writer that reads it may
    /// delete it ([`forget`]) unless someone else is, or its inserter still runs.
    pub fn forgettable(&self) -> bool {
        matches!(self.holder, Holder::Committed(_))
            && !self.mode.deletes()
            && !self.being_forgotten
            && !self.inserter_running
    }
}

/// Where an UPDATE put the new version of the row it deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Successor {
    /// This table's row of that number.
    Row(u64),
    /// Another partition (an UPDATE of the partition key): stored as -1, the mark of a
    /// number no row has.
    OtherPartition,
}

impl Successor {
    fn to_stored(self) -> i64 {
        match self {
            Successor::Row(row) => row as i64,
            Successor::OtherPartition => -1,
        }
    }

    fn from_stored(stored: i64) -> Successor {
        if stored < 0 {
            Successor::OtherPartition
        } else {
            Successor::Row(stored as u64)
        }
    }
}

/// Columns of a mark: storage id, row number, mode, successor (NULL: none), and the original
/// transaction of a rewrite's copy (`catalog::StripeRow::original_xid`; NULL: none).
const NATTS: usize = 5;

/// The column of the original transaction (0-based).
const ORIGINAL_XID: usize = 4;

#[derive(Clone, Copy)]
struct Catalog {
    table: pg_sys::Oid,
    index: pg_sys::Oid,
}

thread_local! {
    /// Memory for a mark's tuple and index insertion, reset after each: a DELETE of many rows
    /// would otherwise keep every row's allocations until its statement ends.
    static SCRATCH: std::cell::Cell<pg_sys::MemoryContext> = const { std::cell::Cell::new(std::ptr::null_mut()) };
}

fn catalog() -> Option<Catalog> {
    Some(Catalog {
        table: super::pgcol_relation(c"row_mark")?,
        index: super::pgcol_relation(c"row_mark_storage_row")?,
    })
}

fn required_catalog() -> Catalog {
    catalog().unwrap_or_else(|| {
        pgrx::error!("pg_columnar: pgcol.row_mark is missing; reinstall the extension")
    })
}

/// Runs `f` with the current memory context a scratch context, reset afterwards.
fn in_scratch<R>(f: impl FnOnce() -> R) -> R {
    // SAFETY: the scratch context is made once, under TopMemoryContext, and lives for the
    // backend; nothing `f` allocates in it is kept past the reset (no caller nests these).
    unsafe {
        let mut cxt = SCRATCH.with(|s| s.get());
        if cxt.is_null() {
            cxt = pg_sys::AllocSetContextCreateExtended(
                pg_sys::TopMemoryContext,
                c"pg_columnar row marks".as_ptr(),
                pg_sys::ALLOCSET_DEFAULT_MINSIZE as usize,
                pg_sys::ALLOCSET_DEFAULT_INITSIZE as usize,
                pg_sys::ALLOCSET_DEFAULT_MAXSIZE as usize,
            );
            SCRATCH.with(|s| s.set(cxt));
        }
        let old = pg_sys::MemoryContextSwitchTo(cxt);
        // an ERROR inside leaves the context switched: the transaction's abort switches it back,
        // and the next call resets the scratch before use
        pg_sys::MemoryContextReset(cxt);
        let r = f();
        pg_sys::MemoryContextSwitchTo(old);
        pg_sys::MemoryContextReset(cxt);
        r
    }
}

/// Inserts a mark of `mode` on row `row` of `storage_id` as command `cid` of the current
/// transaction; `successor`: an UPDATE's new version.
pub fn insert(
    storage_id: u64,
    row: u64,
    mode: Mode,
    successor: Option<Successor>,
    cid: pg_sys::CommandId,
) {
    MINE.with_borrow_mut(|mine| mine.record(storage_id, row, mode));
    insert_row(storage_id, row, mode, successor, None, cid);
}

/// Inserts, on row `row` of `storage_id` (a new version that an UPDATE of command `cid`
/// is making), the `FOR KEY SHARE` lock that running transaction `locker` holds on the old
/// version: heap's new tuple keeps its old one's key-share lockers in its xmax, so a foreign
/// key that `locker` checked keeps its row when the new version is deleted. The mark's
/// original transaction column names the holder ([`of_row`]); if the UPDATE rolls back, the
/// mark goes with the new version it was on.
pub fn insert_carried(
    storage_id: u64,
    row: u64,
    locker: pg_sys::TransactionId,
    cid: pg_sys::CommandId,
) {
    insert_row(storage_id, row, Mode::KeyShare, None, Some(locker), cid);
}

/// Inserts a table rewrite's copy of a deletion made by `original` (FrozenTransactionId: one
/// every snapshot saw) on row `row` of the new storage `storage_id` (see
/// `super::scan_catalog`). Not this transaction's own mark.
pub fn insert_copy(
    storage_id: u64,
    row: u64,
    mode: Mode,
    successor: Option<Successor>,
    original: pg_sys::TransactionId,
    cid: pg_sys::CommandId,
) {
    insert_row(storage_id, row, mode, successor, Some(original), cid);
}

fn insert_row(
    storage_id: u64,
    row: u64,
    mode: Mode,
    successor: Option<Successor>,
    original: Option<pg_sys::TransactionId>,
    cid: pg_sys::CommandId,
) {
    let c = required_catalog();
    in_scratch(|| {
        let mut values = [
            pg_sys::Datum::from(storage_id as i64),
            pg_sys::Datum::from(row as i64),
            pg_sys::Datum::from(mode as i16),
            pg_sys::Datum::from(successor.map_or(0, Successor::to_stored)),
            pg_sys::Datum::from(original.map_or(0, |x| x.into_inner() as i64)),
        ];
        let mut nulls = [false, false, false, successor.is_none(), original.is_none()];
        super::insert_catalog_row(c.table, c.index, &mut values, &mut nulls, cid);
    })
}

/// How many marks [`Mine`] records at most; a transaction that places more is asked about
/// its rows through the catalog.
const MINE_KEPT: usize = 1 << 16;

/// The marks this transaction has placed and not taken back, known exactly while there are
/// no more than [`MINE_KEPT`]: what the catalog would say of them, without reading it. A
/// unique check of an UPDATE's new version meets the index entry of the old row, which the
/// same UPDATE has just deleted (`am::fetch`), and an UPDATE of a row the transaction has
/// locked (`INSERT ... ON CONFLICT DO UPDATE` locks the row first, as does `SELECT ... FOR
/// UPDATE` before an UPDATE) meets the lock (`am::modify`).
#[derive(Default)]
struct Mine {
    /// Every mark placed, in order: storage id, row, mode.
    log: Vec<(u64, u64, Mode)>,
    /// Per row, the positions in `log` of its marks.
    rows: std::collections::HashMap<(u64, u64), Vec<u32>>,
    /// Where `log` stood when each running subtransaction began, innermost last: an aborted
    /// one takes the marks placed since (its own and its committed children's).
    starts: Vec<usize>,
    /// Marks were placed past [`MINE_KEPT`], or a subtransaction ended that was not seen
    /// beginning (the library was loaded inside it): nothing more is known until the
    /// transaction ends.
    lost: bool,
}

impl Mine {
    fn record(&mut self, storage_id: u64, row: u64, mode: Mode) {
        if self.lost || self.log.len() == MINE_KEPT {
            self.lost = true;
            return;
        }
        self.rows
            .entry((storage_id, row))
            .or_default()
            .push(self.log.len() as u32);
        self.log.push((storage_id, row, mode));
    }

    /// The modes of this transaction's marks on the row; `None` if that is not known.
    fn modes(&self, storage_id: u64, row: u64) -> Option<impl Iterator<Item = Mode> + '_> {
        (!self.lost).then(|| {
            self.rows
                .get(&(storage_id, row))
                .into_iter()
                .flatten()
                .map(|&i| self.log[i as usize].2)
        })
    }

    fn subtransaction_ended(&mut self, committed: bool) {
        let Some(start) = self.starts.pop() else {
            self.lost = true;
            return;
        };
        if committed {
            return;
        }
        for (storage_id, row, _) in self.log.drain(start..) {
            if let std::collections::hash_map::Entry::Occupied(mut e) =
                self.rows.entry((storage_id, row))
            {
                e.get_mut().retain(|&i| (i as usize) < start);
                if e.get().is_empty() {
                    e.remove();
                }
            }
        }
    }
}

thread_local! {
    /// This transaction's marks ([`Mine`]).
    static MINE: std::cell::RefCell<Mine> = std::cell::RefCell::new(Mine::default());
}

/// Whether this transaction has deleted row `row` of `storage_id` (a deleting mark it placed
/// and has not taken back): `false` also when that is not known here.
pub fn deleted_by_me(storage_id: u64, row: u64) -> bool {
    MINE.with_borrow(|mine| {
        mine.modes(storage_id, row)
            .is_some_and(|mut m| m.any(Mode::deletes))
    })
}

/// Whether [`deleted_by_me`] knows every mark this transaction has placed (it has not lost
/// count of them).
pub fn mine_complete() -> bool {
    MINE.with_borrow(|mine| !mine.lost)
}

/// Whether this transaction holds row `row` of `storage_id` locked at least as strongly as
/// `strength` (a lock mark it placed and has not taken back) and has not deleted it: then no
/// other transaction's mark can stand in the way of a mark of that strength (any that would
/// have had to wait for this one), and the row is not gone. `false` also when that is not
/// known here.
pub fn held_by_me(storage_id: u64, row: u64, strength: Mode) -> bool {
    MINE.with_borrow(|mine| {
        mine.modes(storage_id, row).is_some_and(|modes| {
            let (mut held, mut deleted) = (false, false);
            for m in modes {
                deleted |= m.deletes();
                held |= !m.deletes() && m >= strength;
            }
            held && !deleted
        })
    })
}

/// A subtransaction began: [`Mine`] notes where, for its end.
pub fn subtransaction_began() {
    MINE.with_borrow_mut(|mine| mine.starts.push(mine.log.len()));
}

/// A subtransaction ended: an aborted one takes its marks out of [`Mine`].
pub fn subtransaction_ended(committed: bool) {
    MINE.with_borrow_mut(|mine| mine.subtransaction_ended(committed));
}

/// Forgets this transaction's marks (its end).
pub fn forget_mine() {
    MINE.with_borrow_mut(|mine| *mine = Mine::default());
}

/// Calls `f` with the row number, mode, successor and tuple of every mark of `storage_id` (of
/// the rows in `rows` only, if given) that `snapshot` sees, in row order, for a read of
/// `table` (`super::scan_catalog`; null: none).
fn scan(
    c: &Catalog,
    storage_id: u64,
    rows: Option<std::ops::Range<u64>>,
    snapshot: pg_sys::Snapshot,
    table: pg_sys::Relation,
    mut f: impl FnMut(u64, Mode, Option<Successor>, Option<pg_sys::TransactionId>, pg_sys::HeapTuple),
) {
    // SAFETY: the catalog is opened here and closed after the scan; at most three keys are
    // initialized, and `scan_catalog` passes tuples of `rel` that are valid during each call.
    unsafe {
        let rel = super::open_catalog(c.table, c.index, pg_sys::AccessShareLock);
        let mut keys: [pg_sys::ScanKeyData; 3] = std::mem::zeroed();
        // (attribute, strategy, function, value): one row by equality, a range by two bounds
        let mut bounds = vec![(
            1,
            pg_sys::BTEqualStrategyNumber,
            pg_sys::F_INT8EQ,
            storage_id,
        )];
        match rows {
            Some(r) if r.end == r.start + 1 => {
                bounds.push((2, pg_sys::BTEqualStrategyNumber, pg_sys::F_INT8EQ, r.start))
            }
            Some(r) => {
                bounds.push((
                    2,
                    pg_sys::BTGreaterEqualStrategyNumber,
                    pg_sys::F_INT8GE,
                    r.start,
                ));
                bounds.push((2, pg_sys::BTLessStrategyNumber, pg_sys::F_INT8LT, r.end));
            }
            None => {}
        }
        for (key, &(attno, strategy, function, value)) in keys.iter_mut().zip(&bounds) {
            pg_sys::ScanKeyInit(
                key,
                attno,
                strategy as u16,
                function.into(),
                pg_sys::Datum::from(value as i64),
            );
        }
        let nkeys = bounds.len();
        // (a row lock's mark is no change of the row for a serializable reader's conflicts)
        let deletes = |tuple| parse(rel, tuple, storage_id).1.deletes();
        super::scan_catalog(
            rel,
            c.index,
            snapshot,
            table,
            &mut keys[..nkeys],
            Some(ORIGINAL_XID),
            deletes,
            |tuple| {
                let (row, mode, successor, original) = parse(rel, tuple, storage_id);
                f(row, mode, successor, original, tuple);
            },
        );
        pg_sys::table_close(rel, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
    }
}

/// The row number, mode, successor and original transaction of mark `tuple` of catalog `rel`.
///
/// # Safety
///
/// `rel` must be the open catalog `pgcol.row_mark` and `tuple` a valid tuple of it.
unsafe fn parse(
    rel: pg_sys::Relation,
    tuple: pg_sys::HeapTuple,
    storage_id: u64,
) -> (u64, Mode, Option<Successor>, Option<pg_sys::TransactionId>) {
    // SAFETY: `rel` is the open catalog and `tuple` a valid tuple of it (the contract)
    let (values, nulls) = unsafe { super::deform_catalog_row::<NATTS>(rel, tuple) };
    let mode = Mode::from_stored(values[2].value() as i16);
    let (Some(mode), false) = (mode, nulls[..3].iter().any(|&n| n)) else {
        pgrx::error!(
            "pg_columnar: catalog pgcol.row_mark has an invalid row for storage {storage_id}"
        );
    };
    let successor = (!nulls[3]).then(|| Successor::from_stored(values[3].value() as i64));
    let original = (!nulls[ORIGINAL_XID])
        .then(|| pg_sys::TransactionId::from(values[ORIGINAL_XID].value() as u32));
    (values[1].value() as i64 as u64, mode, successor, original)
}

/// Every mark of row `row` of `storage_id` whose transaction has not aborted, each with its
/// holder: the transaction that inserted the mark, but for a lock carried to a new version
/// ([`insert_carried`]), held by its original transaction as long as the carrying UPDATE has
/// not rolled back, and for a rewrite's copy of a deletion, made by its original transaction.
pub fn of_row(storage_id: u64, row: u64) -> Vec<Mark> {
    let c = required_catalog();
    let mut marks = Vec::new();
    // SAFETY: `dirty` is a zeroed SnapshotData of type dirty (what InitDirtySnapshot makes) that
    // outlives the scan; `scan` passes tuples valid during each call, checked with `dirty`.
    in_scratch(|| unsafe {
        let mut dirty: pg_sys::SnapshotData = std::mem::zeroed();
        dirty.snapshot_type = pg_sys::SnapshotType::SNAPSHOT_DIRTY;
        let dirty_ptr: pg_sys::Snapshot = &mut dirty;
        scan(
            &c,
            storage_id,
            Some(row..row + 1),
            dirty_ptr,
            std::ptr::null_mut(),
            |_, mode, successor, original, tuple| {
                let header = (*tuple).t_data;
                let raw_xmin = (*header).t_choice.t_heap.t_xmin;
                // the dirty snapshot's check of this tuple left the running inserter and deleter
                // in it
                let inserter_running = (*dirty_ptr).xmin != pg_sys::InvalidTransactionId;
                let (holder, xid) = match original {
                    Some(locker) if !mode.deletes() => {
                        let holder = if pg_sys::TransactionIdIsCurrentTransactionId(locker) {
                            Holder::Mine {
                                cmin: pg_sys::FirstCommandId,
                            }
                        } else if pg_sys::TransactionIdIsInProgress(locker) {
                            Holder::Running(locker)
                        } else {
                            // ended: the lock holds nothing, however it ended
                            Holder::Committed(locker)
                        };
                        (holder, locker)
                    }
                    _ if pg_sys::TransactionIdIsCurrentTransactionId(raw_xmin) => (
                        Holder::Mine {
                            cmin: pg_sys::HeapTupleHeaderGetCmin(header),
                        },
                        raw_xmin,
                    ),
                    _ if inserter_running => {
                        (Holder::Running((*dirty_ptr).xmin), (*dirty_ptr).xmin)
                    }
                    // (a rewrite's copy: the deletion's own transaction)
                    _ => (
                        Holder::Committed(original.unwrap_or(raw_xmin)),
                        original.unwrap_or(raw_xmin),
                    ),
                };
                let being_forgotten = (*dirty_ptr).xmax != pg_sys::InvalidTransactionId;
                marks.push(Mark {
                    mode,
                    holder,
                    xid,
                    tid: (*tuple).t_self,
                    being_forgotten,
                    inserter_running,
                    successor,
                });
            },
        );
    });
    marks
}

/// The transaction whose deletion of row `row` of `storage_id` makes the row dead to every
/// transaction, now and later: a deletion that every snapshot sees (its transaction committed
/// before any running transaction's snapshot was taken), or the taking back of the row by the
/// `INSERT ... ON CONFLICT` that inserted it, once that is settled likewise. FrozenTransactionId
/// for a rewrite's copy of a deletion every snapshot saw. An index that removes the row's
/// entries gives it as its conflict horizon on a standby.
pub fn settled_deleter(storage_id: u64, row: u64) -> Option<pg_sys::TransactionId> {
    let c = catalog()?;
    let mut found = None;
    // SAFETY: the catalog is opened here and closed after the scan, and `vistest` is its own;
    // `scan` passes tuples valid during each call.
    in_scratch(|| unsafe {
        let rel = pg_sys::table_open(c.table, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        let vistest = pg_sys::GlobalVisTestFor(rel);
        let snapshot = std::ptr::addr_of_mut!(pg_sys::SnapshotSelfData);
        scan(
            &c,
            storage_id,
            Some(row..row + 1),
            snapshot,
            std::ptr::null_mut(),
            |_, mode, _, original, tuple| {
                if found.is_some() || !mode.deletes() {
                    return;
                }
                let settled = match original {
                    // a rewrite's copy stands for its original deletion
                    Some(x) if x == pg_sys::FrozenTransactionId => true,
                    Some(x) => {
                        pg_sys::TransactionIdDidCommit(x)
                            && crate::compat::xid_removable(vistest, x)
                    }
                    None => super::inserter_settled(tuple, vistest),
                };
                if settled {
                    found = Some(
                        original
                            .or(super::inserter(tuple))
                            .unwrap_or(pg_sys::FrozenTransactionId),
                    );
                }
            },
        );
        pg_sys::table_close(rel, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
    });
    found
}

/// The rows of `storage_id` that a reader under `snapshot` finds deleted, ascending. What
/// each kind of snapshot means (as for stripes, `catalog::stripes`):
///
/// * MVCC, historic MVCC, SnapshotSelf: the deleting marks (DELETE's and UPDATE's) the
///   snapshot sees.
/// * SnapshotAny (index builds, and the fetch of a row just deleted for `RETURNING` and AFTER
///   triggers): none; every stored row is there.
/// * SnapshotDirty, SnapshotNonVacuumable, SnapshotToast: the marks of committed
///   transactions and of this one; a row that a running transaction is deleting is still
///   there, as a dirty snapshot sees a heap tuple whose deleter runs; a row an ON CONFLICT
///   took back is gone whoever took it back (heap's super-deleted tuple).
///
/// `table` is the pg_columnar table read, for a serializable transaction's checks of its
/// conflicts (`super::scan_catalog`); null where this is not a read of its rows.
pub fn deleted_rows(
    storage_id: u64,
    snapshot: pg_sys::Snapshot,
    table: pg_sys::Relation,
) -> Vec<u64> {
    deleted(storage_id, None, snapshot, table)
}

/// Whether a reader under `snapshot` finds row `row` of `storage_id` deleted
/// ([`deleted_rows`] of one row: an index probe).
pub fn is_deleted(
    storage_id: u64,
    row: u64,
    snapshot: pg_sys::Snapshot,
    table: pg_sys::Relation,
) -> bool {
    !deleted(storage_id, Some(row..row + 1), snapshot, table).is_empty()
}

/// The rows among `rows` that a reader under `snapshot` finds deleted, ascending
/// ([`deleted_rows`] of a range: one index scan).
pub fn deleted_among(
    storage_id: u64,
    rows: std::ops::Range<u64>,
    snapshot: pg_sys::Snapshot,
    table: pg_sys::Relation,
) -> Vec<u64> {
    deleted(storage_id, Some(rows), snapshot, table)
}

/// [`deleted_among`] for an index fetch, each row with whether it is dead to every
/// transaction, now and later ([`settled_deleter`]), as far as the mark's header tells without
/// asking the commit log (a deletion whose commit is not hinted yet counts as not settled:
/// the next fetch asks again).
pub fn deletions_among(
    storage_id: u64,
    rows: std::ops::Range<u64>,
    snapshot: pg_sys::Snapshot,
    table: pg_sys::Relation,
) -> Vec<(u64, bool)> {
    let mut found = Vec::new();
    let Some(c) = catalog() else { return found };
    // SAFETY: the catalog is opened here and closed after the scan, and `vistest` is its own;
    // `deleted_each` passes tuples valid during each call.
    unsafe {
        let marks_rel = pg_sys::table_open(c.table, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        let vistest = pg_sys::GlobalVisTestFor(marks_rel);
        deleted_each(
            &c,
            storage_id,
            Some(rows),
            snapshot,
            table,
            &mut |row, original, tuple| {
                let settled = match original {
                    Some(x) => x == pg_sys::FrozenTransactionId,
                    None => {
                        let infomask = (*(*tuple).t_data).t_infomask;
                        let hinted = infomask & pg_sys::HEAP_XMIN_COMMITTED as u16 != 0;
                        hinted
                            && super::inserter(tuple)
                                .is_none_or(|x| crate::compat::xid_removable(vistest, x))
                    }
                };
                if found.last().is_none_or(|&(r, _)| r != row) {
                    found.push((row, settled));
                }
            },
        );
        pg_sys::table_close(marks_rel, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
    }
    found
}

/// [`deleted_rows`], of the rows in `rows` only if given.
fn deleted(
    storage_id: u64,
    among: Option<std::ops::Range<u64>>,
    snapshot: pg_sys::Snapshot,
    table: pg_sys::Relation,
) -> Vec<u64> {
    let mut rows = Vec::new();
    let Some(c) = catalog() else { return rows };
    deleted_each(&c, storage_id, among, snapshot, table, &mut |row, _, _| {
        rows.push(row)
    });
    // the index returns them in order; a row has one delete mark a snapshot can see, but
    // the dirty reading may also meet a mark being replaced
    rows.dedup();
    rows
}

/// Calls `f` with the row, the original transaction and the tuple of each deleting mark a
/// reader under `snapshot` goes by ([`deleted_rows`]), in row order.
fn deleted_each(
    c: &Catalog,
    storage_id: u64,
    among: Option<std::ops::Range<u64>>,
    snapshot: pg_sys::Snapshot,
    table: pg_sys::Relation,
    f: &mut dyn FnMut(u64, Option<pg_sys::TransactionId>, pg_sys::HeapTuple),
) {
    use pg_sys::SnapshotType::*;
    // SAFETY: callers pass a valid `snapshot` (and a null or open `table`); an MVCC one is
    // registered for the scan and unregistered after, and the dirty one outlives its scan.
    unsafe {
        match (*snapshot).snapshot_type {
            SNAPSHOT_ANY => {}
            SNAPSHOT_MVCC => {
                let registered = pg_sys::RegisterSnapshot(snapshot);
                scan(
                    c,
                    storage_id,
                    among,
                    registered,
                    table,
                    |row, mode, _, original, tuple| {
                        if mode.deletes() {
                            f(row, original, tuple)
                        }
                    },
                );
                pg_sys::UnregisterSnapshot(registered);
            }
            SNAPSHOT_SELF | SNAPSHOT_HISTORIC_MVCC => scan(
                c,
                storage_id,
                among,
                snapshot,
                table,
                |row, mode, _, original, tuple| {
                    if mode.deletes() {
                        f(row, original, tuple)
                    }
                },
            ),
            _ => {
                let mut dirty: pg_sys::SnapshotData = std::mem::zeroed();
                dirty.snapshot_type = SNAPSHOT_DIRTY;
                let dirty_ptr: pg_sys::Snapshot = &mut dirty;
                scan(
                    c,
                    storage_id,
                    among,
                    dirty_ptr,
                    std::ptr::null_mut(),
                    |row, mode, _, original, tuple| {
                        if mode == Mode::Killed
                            || (mode.deletes() && (*dirty_ptr).xmin == pg_sys::InvalidTransactionId)
                        {
                            f(row, original, tuple)
                        }
                    },
                );
            }
        }
    }
}

/// A mark as VACUUM reads it ([`for_vacuum`]).
pub struct VacuumMark {
    pub row: u64,
    pub mode: Mode,
    /// An UPDATE's new version.
    pub successor: Option<Successor>,
    /// A rewrite's copy's original transaction (`insert_copy`).
    pub original: Option<pg_sys::TransactionId>,
    /// The mark's TID in the catalog (to delete it).
    pub tid: pg_sys::ItemPointerData,
    /// Every snapshot, now and later, sees the mark.
    pub settled: bool,
    /// The transaction that made the mark (the deleter, for a delete mark); `None` once the
    /// mark is frozen.
    pub maker: Option<pg_sys::TransactionId>,
}

/// Every mark of `storage_id` that `snapshot` (MVCC, or dirty for a rewrite) sees, in row
/// order.
pub fn for_vacuum(storage_id: u64, snapshot: pg_sys::Snapshot) -> Vec<VacuumMark> {
    let Some(c) = catalog() else {
        return Vec::new();
    };
    let mut marks = Vec::new();
    // SAFETY: callers pass a valid `snapshot`; the catalog is opened here and closed after the
    // scan, `vistest` is its own, and `scan` passes tuples valid during each call.
    unsafe {
        let rel = pg_sys::table_open(c.table, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        let vistest = pg_sys::GlobalVisTestFor(rel);
        scan(
            &c,
            storage_id,
            None,
            snapshot,
            std::ptr::null_mut(),
            |row, mode, successor, original, tuple| {
                marks.push(VacuumMark {
                    row,
                    mode,
                    successor,
                    original,
                    tid: (*tuple).t_self,
                    settled: super::inserter_settled(tuple, vistest),
                    maker: super::inserter(tuple),
                })
            },
        );
        pg_sys::table_close(rel, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
    }
    marks
}

/// The rows of `deleted` (ascending) among the `count` rows from `first`.
pub fn rows_in(deleted: &[u64], first: u64, count: u64) -> &[u64] {
    let lo = deleted.partition_point(|&r| r < first);
    let hi = deleted.partition_point(|&r| r < first + count);
    &deleted[lo..hi]
}

/// Deletes the marks `tids` (transactionally). The caller holds what keeps every other
/// deleter of them out.
pub fn forget(tids: &[pg_sys::ItemPointerData]) {
    if !tids.is_empty() {
        super::delete_catalog_rows(required_catalog().table, tids);
    }
}

/// Deletes every mark of `storage_id` (transactionally), when the storage is dropped or
/// truncated under a lock that excludes its writers. Nothing to do while DROP EXTENSION
/// removes the catalog.
pub fn delete_storage(storage_id: u64) {
    let Some(c) = catalog() else { return };
    let mut tids = Vec::new();
    let snapshot = std::ptr::addr_of_mut!(pg_sys::SnapshotSelfData);
    scan(
        &c,
        storage_id,
        None,
        snapshot,
        std::ptr::null_mut(),
        // SAFETY: `scan` passes a tuple valid during the call.
        |_, _, _, _, tuple| tids.push(unsafe { (*tuple).t_self }),
    );
    forget(&tids);
    if !tids.is_empty() {
        // SAFETY: called in a transaction (a DROP or TRUNCATE), where commands count.
        unsafe { pg_sys::CommandCounterIncrement() };
    }
}

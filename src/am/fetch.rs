//! Fetching single rows by TID: index scans, TID scans, snapshot checks.
//!
//! An index fetch keeps the stripes its snapshot sees and the last decoded vector, so an
//! index scan that visits nearby rows decodes each vector once, not once per row.

use pgrx::pg_sys;

use super::read::stripe_index_of;
use super::scan::StripeReader;
use crate::storage::tid;
use crate::storage::{catalog, marks};

/// Identity of a snapshot for cache purposes: a different command, xmin or xmax means a
/// possibly different set of visible stripes, as does a stripe this backend has made visible
/// since (`write::published_stripes`).
type SnapshotKey = (usize, u32, u32, u32, u64);

fn snapshot_key(s: pg_sys::Snapshot) -> SnapshotKey {
    // SAFETY: `s` is the snapshot [`fetch`] was given (its only caller), valid for that call
    let (curcid, xmin, xmax) = unsafe { ((*s).curcid, (*s).xmin, (*s).xmax) };
    (
        s as usize,
        curcid,
        xmin.into_inner(),
        xmax.into_inner(),
        super::write::published_stripes(),
    )
}

#[repr(C)]
pub(super) struct FetchDesc {
    base: pg_sys::IndexFetchTableData,
    state: *mut FetchState,
}

struct FetchState {
    key: Option<SnapshotKey>,
    reader: Option<StripeReader>,
    /// The delete marks the scan's snapshot (MVCC) sees, a window at a time.
    marks: MarkWindow,
    /// A rescan happened: a scan under a snapshot other than MVCC is made again (what it sees
    /// can change while the snapshot stays the same).
    rescanned: bool,
}

/// Frees the Rust state of the index fetch descriptor `arg`, once, and forgets it as the last
/// fetch's ([`LAST_FETCH`]): called by [`end`] and, for a fetch that ended in an error, when
/// the memory context holding the descriptor is reset. Not `#[pg_guard]`: it raises no ERROR
/// and dropping the state does not panic (its reader gives its stripe to `read::keep`, and
/// has no buffer access strategy to free).
///
/// # Safety
/// `arg` is a descriptor [`begin`] made, in memory not yet freed.
unsafe extern "C-unwind" fn drop_state(arg: *mut std::ffi::c_void) {
    let desc = arg as *mut FetchDesc;
    // SAFETY: `desc` is a live descriptor of `begin`'s (this function's contract)
    let state = unsafe { (*desc).state };
    if !state.is_null() {
        LAST_FETCH.with(|l| {
            if l.get().is_some_and(|last| last.state == state as usize) {
                l.set(None);
            }
        });
        // SAFETY: a non-null `state` is the Box `begin` leaked, nulled here so it is freed
        // once; `desc` is live (this function's contract)
        unsafe {
            drop(Box::from_raw(state));
            (*desc).state = std::ptr::null_mut();
        }
    }
}

/// The row an index fetch under an MVCC snapshot returned last, and the fetch's state (alive
/// while this is set: [`drop_state`] clears it).
#[derive(Clone, Copy)]
struct LastFetch {
    state: usize,
    relid: pg_sys::Oid,
    relfile: u32,
    row: u64,
}

thread_local! {
    /// An UPDATE (or DELETE ... RETURNING, or a row lock) finds each row by an index scan and
    /// then fetches it again by TID with SnapshotAny for its old version; the second fetch
    /// reads it from the index fetch's scan, whose decoded vector holds it, instead of
    /// decoding the vector of every column once more.
    static LAST_FETCH: std::cell::Cell<Option<LastFetch>> = const { std::cell::Cell::new(None) };
    /// Fetches of an old version served that way, so far (`pgcol.kept_stripes`).
    static REFETCHED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Fetches of a row's old version read from the index fetch that had just returned it.
pub fn refetched_from_index_fetch() -> u64 {
    REFETCHED.with(|r| r.get())
}

/// Allocates an index fetch descriptor of `rel` in the current memory context. Its Rust state
/// is freed by [`end`], or when the memory context goes away if the fetch ended in an error.
///
/// # Safety
/// `rel` is `index_fetch_begin`'s relation: open, and kept open while the descriptor is used.
pub unsafe fn begin(rel: pg_sys::Relation) -> *mut pg_sys::IndexFetchTableData {
    // SAFETY: palloc0 returns zeroed memory of the size asked, in the current context (it
    // raises an ERROR rather than return null); the callback is registered in the same
    // context, so it runs before that memory is freed
    unsafe {
        let desc = pg_sys::palloc0(std::mem::size_of::<FetchDesc>()) as *mut FetchDesc;
        (*desc).base.rel = rel;
        (*desc).state = Box::into_raw(Box::new(FetchState {
            key: None,
            reader: None,
            marks: MarkWindow::default(),
            rescanned: false,
        }));
        let cb = pg_sys::palloc0(std::mem::size_of::<pg_sys::MemoryContextCallback>())
            as *mut pg_sys::MemoryContextCallback;
        (*cb).func = Some(drop_state);
        (*cb).arg = desc as *mut std::ffi::c_void;
        pg_sys::MemoryContextRegisterResetCallback(pg_sys::CurrentMemoryContext, cb);
        desc as *mut pg_sys::IndexFetchTableData
    }
}

/// `index_fetch_reset`: the fetch's next call makes its reader again unless its snapshot is
/// an MVCC one.
///
/// # Safety
/// `data` is a descriptor [`begin`] made, not freed.
pub(super) unsafe fn reset(data: *mut pg_sys::IndexFetchTableData) {
    // SAFETY: `data` is a live descriptor of `begin`'s (this function's contract)
    let st = unsafe { (*(data as *mut FetchDesc)).state };
    if !st.is_null() {
        // kept: an index scan rescanned per outer row of a nested loop would otherwise read
        // the stripe catalog per row
        // SAFETY: a non-null `state` is `begin`'s live Box, borrowed by no fetch during this
        unsafe { (*st).rescanned = true };
    }
}

/// Ends the fetch: frees its Rust state (the descriptor goes with its memory context).
///
/// # Safety
/// `data` is a descriptor [`begin`] made, not freed.
pub unsafe fn end(data: *mut pg_sys::IndexFetchTableData) {
    // SAFETY: `data` is a live descriptor of `begin`'s (this function's contract), as
    // `drop_state` asks
    unsafe { drop_state(data as *mut std::ffi::c_void) };
}

/// Rows whose delete marks [`MarkWindow`] reads at once: an aligned window of row numbers.
const MARK_WINDOW: u64 = 1024;

/// Fetches in a row of one window that [`MarkWindow`] answers with a probe each before it
/// reads the window's marks whole.
const PROBES_BEFORE_WINDOW: u32 = 8;

thread_local! {
    /// Delete marks read for fetches under an MVCC snapshot: probes of one row, and windows
    /// read whole ([`MarkWindow`]), so far (`pgcol.kept_stripes`).
    static MARK_READS: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) };
}

/// Delete marks read for fetches: (one-row probes, windows read).
pub fn mark_reads() -> (u64, u64) {
    MARK_READS.with(|m| m.get())
}

fn count_mark_read(window: bool) {
    count_one(&MARK_READS, window);
}

/// Adds one to the first of a pair of counters, or (`second`) to the second.
fn count_one(counters: &'static std::thread::LocalKey<std::cell::Cell<(u64, u64)>>, second: bool) {
    counters.with(|c| {
        let (first, other) = c.get();
        c.set(if second {
            (first, other + 1)
        } else {
            (first + 1, other)
        })
    });
}

/// Which rows a fetch's MVCC snapshot finds deleted. A fetch asks the mark catalog about its
/// row alone, one index probe; when more than [`PROBES_BEFORE_WINDOW`] fetches in a row are
/// of the same window ([`MARK_WINDOW`]), as in an index scan over a range of keys stored in
/// order or a nested loop over neighbouring keys, the window's marks are read in one index
/// scan and answer its rows from then on. Random lookups keep one probe each, and so do the
/// few versions of one key an UPDATE's index scan meets: the window they share holds a mark
/// for every row updated since, and reading it whole for them cost more than the probes. Kept as long as the fetch's scan (the same snapshot key): the marks an MVCC
/// snapshot sees do not change.
#[derive(Default)]
struct MarkWindow {
    /// The window of the last row asked about, and the rows of it asked about in a row.
    last: Option<(u64, u32)>,
    /// A window read, with its deleted rows (ascending), each with whether it is dead to all.
    read: Option<(u64, Vec<(u64, bool)>)>,
}

impl MarkWindow {
    /// Whether the snapshot finds row `row` deleted: `None` if not, else whether the row is
    /// dead to every transaction (`marks::deletions_among`).
    fn deletion(
        &mut self,
        rel: pg_sys::Relation,
        storage_id: u64,
        row: u64,
        snapshot: pg_sys::Snapshot,
    ) -> Option<bool> {
        let window = row / MARK_WINDOW;
        if self.read.as_ref().map(|r| r.0) != Some(window) {
            let probes = match self.last {
                Some((w, n)) if w == window => n + 1,
                _ => 1,
            };
            self.last = Some((window, probes));
            if probes <= PROBES_BEFORE_WINDOW {
                count_mark_read(false);
                return marks::deletions_among(storage_id, row..row + 1, snapshot, rel)
                    .first()
                    .map(|&(_, dead)| dead);
            }
            count_mark_read(true);
            let first = window * MARK_WINDOW;
            self.read = Some((
                window,
                marks::deletions_among(
                    storage_id,
                    first..first.saturating_add(MARK_WINDOW),
                    snapshot,
                    rel,
                ),
            ));
        }
        let (_, deleted) = self.read.as_ref()?;
        deleted
            .binary_search_by_key(&row, |&(r, _)| r)
            .ok()
            .map(|i| deleted[i].1)
    }
}

/// Stores row `row` into `slot` if `snapshot` (that of `reader`, a [`StripeReader::for_fetch`])
/// sees it: its stripe, and not its delete mark.
fn fetch_into(
    reader: &mut StripeReader,
    row: u64,
    snapshot: pg_sys::Snapshot,
    slot: *mut pg_sys::TupleTableSlot,
) -> bool {
    let rel = reader.rel;
    fetch_unless_deleted(reader, row, snapshot, slot, |id| {
        marks::is_deleted(id, row, snapshot, rel)
    })
}

/// Stores row `row` into `slot` if a stripe of `reader` holds it and `deleted` (given the
/// table's storage id) says no.
fn fetch_unless_deleted(
    reader: &mut StripeReader,
    row: u64,
    snapshot: pg_sys::Snapshot,
    slot: *mut pg_sys::TupleTableSlot,
    deleted: impl FnOnce(u64) -> bool,
) -> bool {
    let Some(i) = reader.stripe_of_row(row, snapshot) else {
        return false;
    };
    if reader.storage_id.is_some_and(deleted) {
        return false;
    }
    let first = reader.stripes[i].first_row;
    reader.store_offset(i, row - first, slot);
    true
}

/// An index fetch. `all_dead` is set when the row is known to be dead to every transaction
/// (so the index may mark its entry dead and skip it from then on, as heap's
/// `kill_prior_tuple`): under an MVCC snapshot, a row whose deletion every snapshot sees
/// (`marks::deletions_among`), so an index scan for a key updated again and again does not
/// visit every old version until VACUUM; under a dirty snapshot, see [`fetch_dirty`].
///
/// # Safety
/// `data` is a descriptor [`begin`] made, not ended; `tid` and `snapshot` are valid for the
/// call; `slot` is a valid slot of the relation's descriptor.
pub unsafe fn fetch(
    data: *mut pg_sys::IndexFetchTableData,
    tid: pg_sys::ItemPointer,
    snapshot: pg_sys::Snapshot,
    slot: *mut pg_sys::TupleTableSlot,
    all_dead: &mut bool,
) -> bool {
    let desc = data as *mut FetchDesc;
    // SAFETY: `data` is a descriptor of `begin`'s, not ended (this function's contract): `rel`
    // is the relation it was given, and `state` the live Box it leaked, borrowed nowhere else
    let (rel, st) = unsafe { ((*desc).base.rel, &mut *(*desc).state) };
    *all_dead = false;
    // SAFETY: `tid` and `snapshot` are valid for the call (this function's contract)
    let (tid, kind) = unsafe { (&*tid, (*snapshot).snapshot_type) };
    let Some(row) = tid::from_tid(tid) else {
        return false;
    };
    if kind == pg_sys::SnapshotType::SNAPSHOT_DIRTY {
        // SAFETY: `rel` is open, `snapshot` (a dirty one, the caller's to fill in) and `slot`
        // are valid (this function's contract)
        return unsafe { fetch_dirty(rel, row, snapshot, slot, all_dead) };
    }
    super::write::flush_for_snapshot(rel, snapshot);
    let key = snapshot_key(snapshot);
    let mvcc = kind == pg_sys::SnapshotType::SNAPSHOT_MVCC;
    // a serializable read of the row: locked before its stripe and marks are looked at, which
    // are then read for this row alone (`super::ssi`)
    let serializable = mvcc && crate::storage::serializable_transaction();
    if serializable {
        super::ssi::lock_row(rel, tid, snapshot);
    }
    if st.key != Some(key) || st.reader.is_none() || (st.rescanned && !mvcc) {
        st.reader = Some(StripeReader::for_fetch(rel, snapshot));
        st.marks = MarkWindow::default();
        st.key = Some(key);
    }
    st.rescanned = false;
    let reader = st.reader.as_mut().unwrap();
    let found = if mvcc && !serializable {
        let window = &mut st.marks;
        fetch_unless_deleted(reader, row, snapshot, slot, |id| {
            match window.deletion(rel, id, row, snapshot) {
                Some(dead) => {
                    *all_dead = dead;
                    true
                }
                None => false,
            }
        })
    } else if mvcc {
        fetch_into(reader, row, snapshot, slot)
    } else {
        // copied: a check of a deferrable unique or exclusion constraint
        // (`unique_key_recheck`, under SnapshotSelf) ends the fetch, which frees the decoded
        // vectors, before it reads the values (a heap slot keeps its buffer pinned)
        // SAFETY: `slot` is a valid slot of the relation's descriptor (this function's contract)
        unsafe { fetch_copied(reader, row, snapshot, slot) }
    };
    if serializable && stripe_index_of(&reader.stripes, row).is_none() {
        if let Some(id) = reader.storage_id {
            // in no stripe the reader listed, perhaps in one written since: the catalog read
            // again for its check of conflicts with that stripe's writer
            catalog::stripes(id, snapshot, rel);
        }
    }
    if found && mvcc {
        let last = LastFetch {
            state: st as *mut FetchState as usize,
            // SAFETY: `rel` is open (this function's contract)
            relid: unsafe { (*rel).rd_id },
            relfile: crate::compat::relfile_number(rel),
            row,
        };
        LAST_FETCH.with(|l| l.set(Some(last)));
    }
    found
}

/// What a cached SnapshotAny fetch is valid for: the relation (its relcache entry, OID and
/// file), the command and the transaction nesting level.
type AnyFetchKey = (usize, pg_sys::Oid, u32, pg_sys::CommandId, i32, u64);

thread_local! {
    /// The reader of the last SnapshotAny fetch by TID, kept for the next one of the same
    /// relation in the same command: an UPDATE fetches every old row this way (to build the
    /// new version), as do RETURNING and AFTER triggers, and a scan per row would read the
    /// stripe catalog and parse a stripe directory per row. Rows never change and SnapshotAny
    /// masks none, so only a stripe written since can be missing: a row not found rebuilds it.
    /// Forgotten at the end of every (sub)transaction ([`forget_cached_fetch`]).
    static ANY_FETCH: std::cell::RefCell<Option<(AnyFetchKey, StripeReader)>> = const { std::cell::RefCell::new(None) };
}

/// Forgets the cached SnapshotAny fetch, and what this (sub)transaction asked of the aborted
/// reservations (transaction and subtransaction ends).
pub(super) fn forget_cached_fetch() {
    ANY_FETCH.with(|c| c.borrow_mut().take());
    forget_aborted_reads();
}

/// Forgets the aborted reservations read (transaction ends).
pub(super) fn forget_aborted_reservations() {
    ABORTED.with_borrow_mut(|cache| *cache = None);
}

/// `tuple_fetch_row_version`: the row at `tid` into `slot` if `snapshot` sees it, its values
/// copied into the slot's memory.
///
/// # Safety
/// `rel` is an open relation of ours; `tid` and `snapshot` are valid for the call; `slot` is
/// a valid slot of `rel`'s descriptor.
pub(super) unsafe fn fetch_row_version(
    rel: pg_sys::Relation,
    tid: pg_sys::ItemPointer,
    snapshot: pg_sys::Snapshot,
    slot: *mut pg_sys::TupleTableSlot,
) -> bool {
    // SAFETY: `tid`, `snapshot` and the open `rel` are valid for the call (this function's
    // contract)
    let (tid, kind, relid) = unsafe { (&*tid, (*snapshot).snapshot_type, (*rel).rd_id) };
    let Some(row) = tid::from_tid(tid) else {
        return false;
    };
    // SAFETY: `slot` is a valid slot of `rel`'s descriptor (this function's contract), which
    // every reader here reads `rel` for
    let copy = |reader: &mut StripeReader| unsafe { fetch_copied(reader, row, snapshot, slot) };
    if kind == pg_sys::SnapshotType::SNAPSHOT_ANY {
        let fresh = super::write::flush_if_holding(rel, row);
        // the row an index fetch just returned: read from that fetch's reader, which has it
        // (in one of its stripes, decoded); SnapshotAny masks no row there either
        let last = LAST_FETCH.with(|l| l.get());
        if let Some(last) = last.filter(|l| {
            !fresh
                && l.row == row
                && l.relid == relid
                && l.relfile == crate::compat::relfile_number(rel)
        }) {
            // SAFETY: a state LAST_FETCH names is live (`drop_state` forgets it before the Box
            // is freed), and no `fetch` of it runs now to borrow it
            let st = unsafe { &mut *(last.state as *mut FetchState) };
            if let Some(reader) = st.reader.as_mut() {
                if copy(reader) {
                    REFETCHED.with(|r| r.set(r.get() + 1));
                    return true;
                }
            }
        }
        // a row not among the cached reader's stripes may be in a stripe written since
        with_latest_reader(rel, fresh, copy) || with_latest_reader(rel, true, copy)
    } else {
        super::write::flush_if_holding(rel, row);
        if kind == pg_sys::SnapshotType::SNAPSHOT_MVCC {
            // before the stripes and marks are read (`super::ssi`)
            super::ssi::lock_row(rel, tid, snapshot);
        }
        copy(&mut StripeReader::for_fetch(rel, snapshot))
    }
}

/// Runs `f` on the cached SnapshotAny reader of `rel` ([`ANY_FETCH`]), made first if there is
/// none for this relation and command, or if `fresh`. The caller has written this backend's
/// rows of `rel` that it needs.
fn with_latest_reader<R>(
    rel: pg_sys::Relation,
    fresh: bool,
    f: impl FnOnce(&mut StripeReader) -> R,
) -> R {
    let key = any_fetch_key(rel);
    ANY_FETCH.with(|c| {
        let mut cache = c.borrow_mut();
        if fresh || !cache.as_ref().is_some_and(|(k, _)| *k == key) {
            let any = std::ptr::addr_of_mut!(pg_sys::SnapshotAnyData);
            *cache = Some((key, StripeReader::for_fetch(rel, any)));
        }
        f(&mut cache.as_mut().expect("just made").1)
    })
}

/// What the cached SnapshotAny reader of `rel` would be kept for now ([`ANY_FETCH`]).
fn any_fetch_key(rel: pg_sys::Relation) -> AnyFetchKey {
    // SAFETY: `rel` is open (every caller's is a table callback's relation, or the one
    // `read_deferred` opened), and the calls read the state of the backend's transaction
    let (relid, cid, level) = unsafe {
        (
            (*rel).rd_id,
            pg_sys::GetCurrentCommandId(false),
            pg_sys::GetCurrentTransactionNestLevel(),
        )
    };
    (
        rel as usize,
        relid,
        crate::compat::relfile_number(rel),
        cid,
        level,
        super::write::published_stripes(),
    )
}

/// Whether [`with_latest_reader`] has a reader of `rel` for this command already.
fn has_latest_reader(rel: pg_sys::Relation) -> bool {
    let key = any_fetch_key(rel);
    ANY_FETCH.with(|c| c.borrow().as_ref().is_some_and(|(k, _)| *k == key))
}

/// Where a dirty snapshot finds a row: in a stripe (whose inserter may still run), or only
/// in a range of row numbers a running transaction reserved (the row is in its memory).
enum DirtyPlace {
    /// In a stripe, inserted (the catalog row's raw `xmin` and `cmin`) by `origin`.
    Stripe {
        running_inserter: Option<pg_sys::TransactionId>,
        origin: (pg_sys::TransactionId, pg_sys::CommandId),
    },
    Reserved(pg_sys::TransactionId),
}

/// Whether `stripes` (a dirty reading of the stripe catalog) have row `row` in a stripe
/// whose inserter has not aborted, and that inserter if it still runs (the reading said so;
/// it may have ended since).
fn dirty_stripe_of(stripes: &[catalog::StripeRow], row: u64) -> Option<DirtyPlace> {
    dirty_place(&stripes[stripe_index_of(stripes, row)?])
}

/// [`dirty_stripe_of`] for the stripe `stripe` (from a dirty reading) that holds the row.
fn dirty_place(stripe: &catalog::StripeRow) -> Option<DirtyPlace> {
    let running_inserter = match stripe.running_inserter {
        None => None,
        // SAFETY: asked in a transaction, of the catalog row's inserter; either call takes any
        // xid (one whose status is gone is an ERROR)
        Some(xid) if unsafe { pg_sys::TransactionIdIsInProgress(xid) } => Some(xid),
        // SAFETY: as above
        Some(xid) if unsafe { pg_sys::TransactionIdDidCommit(xid) } => None,
        Some(_) => return None,
    };
    Some(DirtyPlace::Stripe {
        running_inserter,
        origin: (stripe.xmin, stripe.cmin),
    })
}

/// What a writer (a row lock, and the UPDATE or DELETE it precedes) finds at a TID.
pub(super) enum ForChange {
    /// A row a committed transaction inserted, or this one in an earlier command.
    Found,
    /// A row another transaction is inserting, or this command inserted (heap's
    /// `TM_Invisible`); the slot has it all the same, for its `xmin`.
    Invisible,
    Missing,
}

/// The row at `tid` into `slot` for a writer of command `cid`, whatever a snapshot sees:
/// heap locks the latest state of a tuple the same way (`HeapTupleSatisfiesUpdate` on its
/// inserter), so ON CONFLICT DO UPDATE can lock a row its statement's snapshot cannot see.
/// Deletions and locks are the row's marks, for the caller to read.
///
/// # Safety
/// `rel` is an open relation of ours; `slot` is a valid slot of its descriptor.
pub(super) unsafe fn fetch_for_change(
    rel: pg_sys::Relation,
    tid: &pg_sys::ItemPointerData,
    cid: pg_sys::CommandId,
    slot: *mut pg_sys::TupleTableSlot,
) -> ForChange {
    let Some(row) = tid::from_tid(tid) else {
        return ForChange::Missing;
    };
    let any = std::ptr::addr_of_mut!(pg_sys::SnapshotAnyData);
    let look = |reader: &mut StripeReader| {
        let i = reader.stripe_of_row(row, any)?;
        let place = dirty_stripe_of(&reader.stripes, row)?;
        let (xmin, cmin) = (reader.stripes[i].xmin, reader.stripes[i].cmin);
        // SAFETY: `slot` is a valid slot of `rel`'s descriptor (this function's contract)
        unsafe { fetch_copied(reader, row, any, slot) };
        Some(match place {
            DirtyPlace::Stripe {
                running_inserter: Some(_),
                ..
            } => ForChange::Invisible,
            // SAFETY: asks the backend's own transaction state, for any xid
            _ if unsafe { pg_sys::TransactionIdIsCurrentTransactionId(xmin) } && cmin >= cid => {
                ForChange::Invisible
            }
            _ => ForChange::Found,
        })
    };
    let fresh = super::write::flush_if_holding(rel, row);
    with_latest_reader(rel, fresh, look)
        .or_else(|| with_latest_reader(rel, true, look))
        .unwrap_or(ForChange::Missing)
}

/// An index fetch under a dirty snapshot: unique checks, exclusion constraints' checks, and
/// ON CONFLICT's look for a conflicting row. As heap's `HeapTupleSatisfiesDirty`, the row is
/// returned if no aborted transaction inserted it and no committed one (nor this one)
/// deleted it, and the snapshot says which running transaction inserts (`xmin`) or deletes
/// (`xmax`) it: the caller waits for that transaction and looks again. A row another
/// transaction still holds in memory is found through its reservation
/// (`storage::reservations`) and returned with every value NULL: its inserter is running, so
/// a unique check waits before it uses the values. An exclusion constraint's check compares
/// the values first (a lossy index's recheck), so for a table with one this waits for the
/// holder itself and looks again, unless the caller holds an LWLock (a btree's unique
/// check, which holds its leaf page and needs no values). Rows of this backend still in a
/// buffer are read from it (`write::read_buffered`); those being written are written first.
///
/// A row in no stripe that a running or committed transaction wrote, and in no running
/// transaction's reservation, is dead to every transaction (`all_dead`): its inserter
/// aborted (a rolled-back load's rows keep their index entries). Nothing can bring it back:
/// row numbers are not handed out twice, and a row that is still to be written has a
/// reservation (a table with a unique index or an exclusion constraint, the only kinds that
/// check with a dirty snapshot) or is this backend's, written above. The check then marks
/// the entry dead (as it does for a heap tuple dead to all), instead of coming back to it at
/// every insert of the key, each time reading the stripe catalog again.
///
/// # Safety
/// `rel` is an open relation of ours; `snapshot` is a dirty snapshot of the caller's, which
/// this fills in (`xmin`, `xmax`, `speculativeToken`); `slot` is a valid slot of `rel`'s
/// descriptor.
unsafe fn fetch_dirty(
    rel: pg_sys::Relation,
    row: u64,
    snapshot: pg_sys::Snapshot,
    slot: *mut pg_sys::TupleTableSlot,
    all_dead: &mut bool,
) -> bool {
    loop {
        // SAFETY: this function's contract is `find_dirty`'s
        match unsafe { find_dirty(rel, row, snapshot, slot, all_dead) } {
            Dirty::Found(found) => return found,
            Dirty::WaitFor(xid) => {
                let tid = tid::to_tid(row);
                // SAFETY: `rel` is open (this function's contract); `tid` outlives the call,
                // which only reads it (for its error context)
                unsafe {
                    pg_sys::XactLockTableWait(
                        xid,
                        rel,
                        &tid as *const _ as *mut _,
                        pg_sys::XLTW_Oper::XLTW_RecheckExclusionConstr,
                    )
                };
            }
        }
    }
}

enum Dirty {
    Found(bool),
    /// The row is in the memory of running transaction `xid`, and the caller needs its values.
    WaitFor(pg_sys::TransactionId),
}

/// Whether `row`'s delete marks take it away from a dirty snapshot (killed by ON CONFLICT,
/// deleted by a committed transaction or this one); a running deleter becomes the
/// snapshot's `xmax`. A row a committed transaction deleted is also looked at for whether it
/// is dead to all (`all_dead`): a unique check then marks the index entry dead, and the
/// checks of a key updated again and again do not each visit every old version.
///
/// # Safety
/// `snapshot` is a dirty snapshot of the caller's, whose `xmax` this may set.
unsafe fn gone_by_marks(
    storage_id: u64,
    row: u64,
    snapshot: pg_sys::Snapshot,
    all_dead: &mut bool,
) -> bool {
    for m in marks::of_row(storage_id, row) {
        match m.holder {
            _ if m.mode == marks::Mode::Killed => return true,
            marks::Holder::Committed(_) if m.mode.deletes() => {
                *all_dead = marks::settled_deleter(storage_id, row).is_some();
                return true;
            }
            marks::Holder::Mine { .. } if m.mode.deletes() => return true,
            marks::Holder::Running(xid) if m.mode.deletes() => {
                // SAFETY: `snapshot` is the caller's dirty snapshot, for this to fill in (this
                // function's contract)
                unsafe { (*snapshot).xmax = xid }
            }
            _ => {}
        }
    }
    false
}

/// [`fetch_dirty`]'s look at row `row`, once: found (or not), or the running transaction
/// to wait for.
///
/// # Safety
/// As [`fetch_dirty`].
unsafe fn find_dirty(
    rel: pg_sys::Relation,
    row: u64,
    snapshot: pg_sys::Snapshot,
    slot: *mut pg_sys::TupleTableSlot,
    all_dead: &mut bool,
) -> Dirty {
    // SAFETY: `snapshot` is the caller's dirty snapshot, for this to fill in (this function's
    // contract)
    unsafe {
        (*snapshot).xmin = pg_sys::InvalidTransactionId;
        (*snapshot).xmax = pg_sys::InvalidTransactionId;
        (*snapshot).speculativeToken = 0;
    }
    let Some(storage_id) = crate::storage::meta::storage_id(rel) else {
        return Dirty::Found(false);
    };
    if marks::deleted_by_me(storage_id, row) {
        // (the old version of a row this transaction's UPDATE just changed, met by the
        // unique check of the new version: what its marks would say)
        return Dirty::Found(false);
    }
    // SAFETY: `slot` is a valid slot of `rel`'s descriptor (this function's contract)
    if unsafe { super::write::read_buffered(rel, row, slot) } {
        // a row in this backend's memory has no marks but this transaction's (ON CONFLICT's
        // taking back), which `deleted_by_me` knew unless it lost count
        if !marks::mine_complete()
            // SAFETY: `snapshot` is the caller's dirty snapshot (this function's contract)
            && unsafe { gone_by_marks(storage_id, row, snapshot, &mut false) }
        {
            // SAFETY: `slot` is valid (this function's contract)
            unsafe { pg_sys::ExecClearTuple(slot) };
            return Dirty::Found(false);
        }
        return Dirty::Found(true);
    }
    let fresh = super::write::flush_if_holding(rel, row);
    // the cached SnapshotAny reader of this command if there is one; else the row's stripe
    // alone, probed in the catalog: a unique check meets the few rows of one key, and a list
    // of every stripe costs a catalog row per stripe (a table whose rows are updated one
    // statement at a time has a stripe per statement until VACUUM merges them)
    let cached = !fresh && has_latest_reader(rel);
    let mut place = if cached {
        with_latest_reader(rel, false, |reader| dirty_stripe_of(&reader.stripes, row))
    } else {
        catalog::dirty_stripe_holding(storage_id, row).and_then(|s| dirty_place(&s))
    };
    if place.is_none() {
        if in_aborted_reservation(rel, storage_id, row) {
            // a rolled-back transaction's row (a loader's retry meets every row of the
            // batch that failed): dead for every transaction, known without the probes below
            *all_dead = true;
            return Dirty::Found(false);
        }
        count_dead_check(false);
        // the reservation first, then the stripes again: a transaction that commits in
        // between has written its stripes before, so the row is in one or the other. The
        // catalog is probed for the row's stripe, and the cached scan made again only if
        // there is one: most rows met here are dead (a rolled-back statement's), and the
        // scan's rebuild (or a reading of every stripe's row) cost more than the probe.
        place = match crate::storage::reservations::running_holder(storage_id, row) {
            Some(xid) => Some(DirtyPlace::Reserved(xid)),
            None => catalog::dirty_stripe_holding(storage_id, row).and_then(|s| dirty_place(&s)),
        };
    }
    let Some(place) = place else {
        *all_dead = true;
        return Dirty::Found(false);
    };
    // SAFETY: `snapshot` is the caller's dirty snapshot (this function's contract)
    if unsafe { gone_by_marks(storage_id, row, snapshot, all_dead) } {
        return Dirty::Found(false);
    }
    match place {
        DirtyPlace::Stripe {
            running_inserter,
            origin: (xmin, cmin),
        } => {
            if let Some(xid) = running_inserter {
                // SAFETY: the caller's dirty snapshot, for this to fill in (this function's
                // contract)
                unsafe { (*snapshot).xmin = xid };
            }
            if super::slot::is_row_slot(slot) {
                // the values are read when asked: a unique check reads none, ON CONFLICT's
                // look for a conflict the index's columns
                let d = super::slot::Deferred {
                    // SAFETY: `rel` is open (this function's contract)
                    relid: unsafe { (*rel).rd_id },
                    relfile: crate::compat::relfile_number(rel),
                    row,
                };
                // SAFETY: `slot` is one of ours (`is_row_slot`) for the descriptor of `rel`
                // (this function's contract), whose row `d` names
                unsafe { super::slot::store_deferred(slot, d, xmin, cmin) };
                return Dirty::Found(true);
            }
            // copied: the cached scan's next fetch may reuse the vector the values are in
            Dirty::Found(with_latest_reader(rel, false, |reader| {
                // SAFETY: `slot` is a valid slot of `rel`'s descriptor (this function's
                // contract)
                unsafe {
                    fetch_copied(
                        reader,
                        row,
                        std::ptr::addr_of_mut!(pg_sys::SnapshotAnyData),
                        slot,
                    )
                }
            }))
        }
        DirtyPlace::Reserved(xid) => {
            // (interrupts are held off while an LWLock is held)
            let holds_lwlock =
                // SAFETY: a global of this (single-threaded) backend's, aligned and always
                // initialized, read volatile as PostgreSQL's own interrupt checks do
                unsafe { std::ptr::addr_of!(pg_sys::InterruptHoldoffCount).read_volatile() } > 0;
            if !holds_lwlock && super::write::constraint_indexes(rel).1 {
                return Dirty::WaitFor(xid);
            }
            // SAFETY: the caller's dirty snapshot, for this to fill in; `slot` a valid slot of
            // the open `rel`'s descriptor (this function's contract)
            unsafe {
                (*snapshot).xmin = xid;
                pg_sys::ExecStoreAllNullTuple(slot);
                (*slot).tts_tid = tid::to_tid(row);
                (*slot).tts_tableOid = (*rel).rd_id;
            }
            Dirty::Found(true)
        }
    }
}

/// The row numbers of one storage that rolled-back transactions had reserved
/// ([`crate::storage::reservations::aborted_ranges`]), as last read, and what the current
/// (sub)transaction has asked of them.
struct AbortedReservations {
    /// The relation, its file and the storage (a storage id is unique to the database's
    /// sequence, which a dropped and created extension starts again).
    key: (pg_sys::Oid, u32, u64),
    ranges: Vec<(u64, u64)>,
    /// Rows of this storage asked about in this (sub)transaction that the ranges did not
    /// hold, and whether it has read the ranges.
    unanswered: u32,
    read_here: bool,
}

/// Rows a (sub)transaction asks [`in_aborted_reservation`] about unanswered before it reads
/// the aborted reservations (once): a statement that meets a few dead rows probes them one
/// at a time, one that meets a rolled-back batch's rows reads the catalog once.
const ABORTED_READ_AFTER: u32 = 4;

thread_local! {
    /// Kept to the transaction's end; one storage at a time.
    static ABORTED: std::cell::RefCell<Option<AbortedReservations>> = const { std::cell::RefCell::new(None) };
    /// Rows a dirty fetch looked for in the catalogs (reservations, then stripes) for want
    /// of a stripe in its cached scan, and rows known dead as a rolled-back transaction's
    /// instead, so far (`pgcol.kept_stripes`).
    static DEAD_CHECKS: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) };
}

/// (catalog probes, rows known dead as a rolled-back transaction's) of dirty fetches so far.
pub fn dead_checks() -> (u64, u64) {
    DEAD_CHECKS.with(|c| c.get())
}

fn count_dead_check(rolled_back: bool) {
    count_one(&DEAD_CHECKS, rolled_back);
}

/// Whether row `row` of `storage_id` was numbered by a transaction that rolled back, by the
/// aborted reservations last read, read again (once per (sub)transaction) after
/// [`ABORTED_READ_AFTER`] rows it could not answer. (Only a table with a unique index or an
/// exclusion constraint records its reservations: the tables whose checks ask.)
fn in_aborted_reservation(rel: pg_sys::Relation, storage_id: u64, row: u64) -> bool {
    // SAFETY: `rel` is open (its one caller's, `find_dirty`'s contract)
    let relid = unsafe { (*rel).rd_id };
    let key = (relid, crate::compat::relfile_number(rel), storage_id);
    let holds = |a: &AbortedReservations| {
        let i = a.ranges.partition_point(|&(first, _)| first <= row);
        i > 0 && row < a.ranges[i - 1].1
    };
    ABORTED.with_borrow_mut(|cache| {
        let a = match cache {
            Some(a) if a.key == key => a,
            _ => cache.insert(AbortedReservations {
                key,
                ranges: Vec::new(),
                unanswered: 0,
                read_here: false,
            }),
        };
        if !holds(a) {
            a.unanswered += 1;
            if a.read_here || a.unanswered < ABORTED_READ_AFTER {
                return false;
            }
            a.ranges = crate::storage::reservations::aborted_ranges(storage_id);
            a.read_here = true;
            if !holds(a) {
                return false;
            }
        }
        count_dead_check(true);
        true
    })
}

/// Starts [`in_aborted_reservation`]'s count again (subtransaction ends); the ranges read
/// stay.
fn forget_aborted_reads() {
    ABORTED.with_borrow_mut(|cache| {
        if let Some(a) = cache {
            a.unanswered = 0;
            a.read_here = false;
        }
    });
}

/// Gives `out` the values of `columns` of the deferred row `d` (`slot::store_deferred`),
/// each with its column, read alone from the row's stripe; returns the end of the columns
/// given (lower than `columns.end` when the stripe stores fewer). The row's table is open
/// (the statement that fetched the row holds its lock); a row asked for after its table was
/// given a new file (TRUNCATE, a rewrite, in the same transaction) is an ERROR, not another
/// row's values.
pub fn read_deferred(
    d: super::slot::Deferred,
    columns: std::ops::Range<usize>,
    desc: pg_sys::TupleDesc,
    out: &mut dyn FnMut(usize, pg_sys::Datum, bool),
) -> usize {
    // SAFETY: a relcache lookup by OID, in the transaction of the statement that fetched the
    // row (which holds the table's lock); null if the table is gone
    let rel = unsafe { pg_sys::RelationIdGetRelation(d.relid) };
    if rel.is_null() {
        pgrx::error!(
            "pg_columnar: the table of a row being read (OID {}) is gone",
            d.relid.to_u32()
        );
    }
    let name = || {
        // SAFETY: `rel` is the entry opened above (every call is before it is closed); its
        // `relname` is a NUL-terminated NameData
        unsafe { std::ffi::CStr::from_ptr((*(*rel).rd_rel).relname.data.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    };
    if crate::compat::relfile_number(rel) != d.relfile {
        let name = name();
        // SAFETY: closes the reference opened above, once; `rel` is not used after
        unsafe { pg_sys::RelationClose(rel) };
        pgrx::error!(
            "pg_columnar: row {} of \"{name}\" was read after the table was given a new file",
            d.row
        );
    }
    // a row written since the cached scan was made is in a stripe it lacks: made again
    let any = std::ptr::addr_of_mut!(pg_sys::SnapshotAnyData);
    let end = with_latest_reader(rel, false, |reader| {
        reader.row_columns(d.row, any, columns.clone(), desc, out)
    })
    .or_else(|| {
        with_latest_reader(rel, true, |reader| {
            reader.row_columns(d.row, any, columns.clone(), desc, out)
        })
    });
    let Some(end) = end else {
        let name = name();
        // SAFETY: as above
        unsafe { pg_sys::RelationClose(rel) };
        pgrx::error!("pg_columnar: row {} of \"{name}\" is in no stripe", d.row);
    };
    // SAFETY: as above
    unsafe { pg_sys::RelationClose(rel) };
    end
}

/// [`fetch_into`], then the values copied into the slot's own memory: they point into the
/// scan's decoded vector, which the next fetch reuses or the scan's end frees.
///
/// # Safety
/// `slot` is a valid slot of the descriptor of `reader`'s relation.
unsafe fn fetch_copied(
    reader: &mut StripeReader,
    row: u64,
    snapshot: pg_sys::Snapshot,
    slot: *mut pg_sys::TupleTableSlot,
) -> bool {
    if !fetch_into(reader, row, snapshot, slot) {
        return false;
    }
    // SAFETY: `slot` is valid (this function's contract) and holds the row just stored
    unsafe { super::slot::own_values(slot) };
    true
}

/// `tuple_tid_valid`: whether `tid` names a row number the table has handed out.
///
/// # Safety
/// `scan` is a valid scan descriptor of an open relation of ours; `tid` is valid for the call.
pub(super) unsafe fn tid_valid(scan: pg_sys::TableScanDesc, tid: pg_sys::ItemPointer) -> bool {
    // SAFETY: `tid` and `scan` are valid for the call (this function's contract)
    let (tid, rel) = unsafe { (&*tid, (*scan).rs_rd) };
    match (tid::from_tid(tid), crate::storage::meta::read(rel)) {
        (Some(row), Some(m)) => row < m.next_row,
        _ => false,
    }
}

/// Whether `snapshot` sees the row at `tid`: its stripe, and not its delete mark. (No read
/// of the row for a serializable transaction's checks, as heap's `tuple_satisfies_snapshot`
/// is none.)
pub(super) fn row_visible(
    rel: pg_sys::Relation,
    tid: &pg_sys::ItemPointerData,
    snapshot: pg_sys::Snapshot,
) -> bool {
    let Some(row) = tid::from_tid(tid) else {
        return false;
    };
    super::write::flush_if_holding(rel, row);
    let Some(storage_id) = crate::storage::meta::storage_id(rel) else {
        return false;
    };
    let none = std::ptr::null_mut();
    catalog::stripe_holding(storage_id, row, snapshot).is_some()
        && !marks::is_deleted(storage_id, row, snapshot, none)
}

/// `tuple_satisfies_snapshot`: [`row_visible`] for the row in `slot`.
///
/// # Safety
/// `rel` is an open relation of ours, `slot` a valid slot holding one of its rows, and
/// `snapshot` valid for the call.
pub(super) unsafe fn satisfies_snapshot(
    rel: pg_sys::Relation,
    slot: *mut pg_sys::TupleTableSlot,
    snapshot: pg_sys::Snapshot,
) -> bool {
    // SAFETY: `slot` is valid for the call (this function's contract)
    let tid = unsafe { &(*slot).tts_tid };
    row_visible(rel, tid, snapshot)
}

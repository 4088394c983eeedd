//! `pgcol.stripe`: one row per stripe, keyed by the relation's storage id. Rows are plain
//! heap tuples, so PostgreSQL's MVCC decides which stripes a snapshot sees: an aborted load
//! leaves pages no snapshot can reach, and a rolled-back savepoint takes its stripes with it.
//! The catalog is a materialized view (see the extension script) so that no publication
//! includes it, and its inserts are not logically decoded.
//!
//! Rows are written with `heap_insert` and an explicit command id (see [`insert`]) and read
//! with `systable_beginscan` under the caller's snapshot, never through SQL, so no role needs
//! privileges on the catalog and no `search_path` is consulted.

use std::rc::Rc;

use pg_columnar_codec::stripe::StripeSummary;
use pg_columnar_codec::DecodeError;
use pgrx::pg_sys;

/// One stripe's catalog row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StripeRow {
    pub storage_id: u64,
    /// Row number of the stripe's first row; its rows are `first_row..first_row + row_count`.
    pub first_row: u64,
    pub row_count: u64,
    pub first_block: u32,
    /// Bytes of the stripe image.
    pub byte_length: u64,
    /// Bytes of the image's header and directory, and their xxh3-64.
    pub prefix_length: u64,
    pub prefix_checksum: u64,
    /// The transaction and command that inserted the catalog row, from its tuple header as
    /// read (the raw fields, as heap reports a tuple's `xmin` and `cmin`); ignored by
    /// [`insert`].
    pub xmin: pg_sys::TransactionId,
    pub cmin: pg_sys::CommandId,
    /// Read with a dirty snapshot (see [`stripes`]): the inserting transaction, if another
    /// transaction that was still running then.
    pub running_inserter: Option<pg_sys::TransactionId>,
    /// Written by VACUUM (`am::vacuum`) from rows every snapshot already saw: its rows report
    /// `xmin` FrozenTransactionId and `cmin` 0, and a dirty read never finds them being
    /// inserted.
    pub vacuumed: bool,
    /// Row offsets (from `first_row`) in the stripe's range that hold no row, as ascending,
    /// disjoint `(offset, count)` runs: rows VACUUM removed, and row numbers no row ever had.
    /// The image stores a row there (the removed row's values, or a copy of a neighbouring
    /// row) that no reader returns. Empty for a stripe written by its inserter.
    pub absent: Absent,
    /// Set on a stripe a table rewrite (VACUUM FULL, CLUSTER) wrote: the transaction that
    /// inserted its rows in the table rewritten (FrozenTransactionId: rows every snapshot
    /// saw). A snapshot that does not see the rewrite sees the stripe exactly when it sees
    /// that transaction (`storage::scan_catalog`), as a heap rewrite keeps each tuple's
    /// `xmin`; its rows report it as their `xmin`.
    pub original_xid: Option<pg_sys::TransactionId>,
}

impl StripeRow {
    /// Whether row number `row` is one of this stripe's rows: in its range, and not absent.
    pub fn holds(&self, row: u64) -> bool {
        let Some(offset) = row
            .checked_sub(self.first_row)
            .filter(|&o| o < self.row_count)
        else {
            return false;
        };
        let run = self.absent.partition_point(|&(o, _)| o as u64 <= offset);
        run == 0 || {
            let (o, n) = self.absent[run - 1];
            offset >= o as u64 + n as u64
        }
    }
}

/// A stripe's absent rows ([`StripeRow::absent`]).
pub type Absent = std::rc::Rc<[(u32, u32)]>;

/// The absent rows of `row` as row numbers, ascending.
pub fn absent_rows(row: &StripeRow) -> impl Iterator<Item = u64> + '_ {
    row.absent
        .iter()
        .flat_map(move |&(o, n)| (row.first_row + o as u64)..(row.first_row + o as u64 + n as u64))
}

/// How many rows of `row`'s range hold no row.
pub fn absent_count(row: &StripeRow) -> u64 {
    row.absent.iter().map(|&(_, n)| n as u64).sum()
}

/// The stored form of an absent list: `(offset: u32 LE, count: u32 LE)` per run.
fn absent_to_bytes(absent: &[(u32, u32)]) -> Vec<u8> {
    absent
        .iter()
        .flat_map(|&(o, n)| o.to_le_bytes().into_iter().chain(n.to_le_bytes()))
        .collect()
}

/// Parses a stored absent list, checked against the stripe's row count (runs ascending,
/// disjoint, non-empty and inside the stripe); `None` if it is not one.
fn absent_from_bytes(bytes: &[u8], row_count: u64) -> Option<Absent> {
    if bytes.len() % 8 != 0 {
        return None;
    }
    let mut runs = Vec::with_capacity(bytes.len() / 8);
    let mut end = 0u64;
    for chunk in bytes.chunks_exact(8) {
        let o = u32::from_le_bytes(chunk[..4].try_into().ok()?);
        let n = u32::from_le_bytes(chunk[4..].try_into().ok()?);
        if n == 0 || (o as u64) < end || o as u64 + n as u64 > row_count {
            return None;
        }
        end = o as u64 + n as u64;
        runs.push((o, n));
    }
    Some(runs.into())
}

/// Columns of a catalog row: the seven of [`StripeRow`], then the stripe's zone summary
/// (`codec::stripe::StripeSummary`, bytea; NULL: none), then `vacuumed` (boolean) and the
/// absent rows (bytea, [`absent_to_bytes`]; NULL: none), then the original transaction
/// ([`StripeRow::original_xid`], bigint; NULL: none).
const NATTS: usize = 11;

/// The column of [`StripeRow::original_xid`] (0-based).
const ORIGINAL_XID: usize = 10;

struct Catalog {
    table: pg_sys::Oid,
    index: pg_sys::Oid,
}

fn catalog() -> Catalog {
    Catalog {
        table: super::required_pgcol_relation(c"stripe"),
        index: super::required_pgcol_relation(c"stripe_storage_first_row"),
    }
}

/// Inserts a stripe row, with its zone summary (`None`: a stripe written before summaries
/// were, which VACUUM carries over as it is), as command `cid` of the current transaction.
/// The writer passes the command that buffered the rows, which can be older than the current
/// one: rows an INSERT buffered are flushed when a later SELECT of the same transaction
/// starts, and must be visible to that SELECT's snapshot.
pub fn insert(row: &StripeRow, zones: Option<&[u8]>, cid: pg_sys::CommandId) {
    let c = catalog();
    let mut values: [pg_sys::Datum; NATTS] = [
        pg_sys::Datum::from(row.storage_id as i64),
        pg_sys::Datum::from(row.first_row as i64),
        pg_sys::Datum::from(row.row_count as i64),
        pg_sys::Datum::from(row.first_block as i64),
        pg_sys::Datum::from(row.byte_length as i64),
        pg_sys::Datum::from(row.prefix_length as i64),
        pg_sys::Datum::from(row.prefix_checksum as i64),
        pg_sys::Datum::from(0),
        pg_sys::Datum::from(row.vacuumed),
        pg_sys::Datum::from(0),
        pg_sys::Datum::from(row.original_xid.map_or(0, |x| x.into_inner() as i64)),
    ];
    let mut nulls = [false; NATTS];
    nulls[ORIGINAL_XID] = row.original_xid.is_none();
    match zones {
        Some(zones) => {
            values[7] = pg_sys::Datum::from(pgrx::rust_byte_slice_to_bytea(zones).into_pg())
        }
        None => nulls[7] = true,
    }
    if row.absent.is_empty() {
        nulls[9] = true;
    } else {
        values[9] = pg_sys::Datum::from(
            pgrx::rust_byte_slice_to_bytea(&absent_to_bytes(&row.absent)).into_pg(),
        );
    }
    super::insert_catalog_row(c.table, c.index, &mut values, &mut nulls, cid);
    forget_reads();
}

/// Calls `f` with every row of `storage_id` that `snapshot` sees (and its TID in the
/// catalog), for a read of `table` (`super::scan_catalog`; null: none).
fn scan(
    storage_id: u64,
    snapshot: pg_sys::Snapshot,
    table: pg_sys::Relation,
    lockmode: u32,
    mut f: impl FnMut(pg_sys::HeapTuple, StripeRow, Option<&[u8]>, bool),
) {
    // SAFETY: callers pass a valid `snapshot`; the catalog is opened here and closed after the
    // scan, whose tuples (and the zone bytes read from them) are valid during each call of `f`.
    unsafe {
        let c = catalog();
        let rel = super::open_catalog(c.table, c.index, lockmode);
        let mut key: pg_sys::ScanKeyData = std::mem::zeroed();
        pg_sys::ScanKeyInit(
            &mut key,
            1,
            pg_sys::BTEqualStrategyNumber as u16,
            pg_sys::F_INT8EQ.into(),
            pg_sys::Datum::from(storage_id as i64),
        );
        super::scan_catalog(
            rel,
            c.index,
            snapshot,
            table,
            std::slice::from_mut(&mut key),
            Some(ORIGINAL_XID),
            |_| true,
            |tuple| {
                let (row, values, nulls, being_deleted) =
                    parse_row(rel, tuple, snapshot, storage_id);
                let zones = (!nulls[7]).then(|| {
                    pgrx::varlena::varlena_to_byte_slice(pg_sys::pg_detoast_datum_packed(
                        values[7].cast_mut_ptr(),
                    ))
                });
                f(tuple, row, zones, being_deleted);
            },
        );
        pg_sys::table_close(rel, lockmode as pg_sys::LOCKMODE);
    }
}

/// The stripe row in catalog tuple `tuple` of `rel`, just read under `snapshot` (a dirty
/// snapshot's check of the tuple leaves its running inserter and deleter in it), with the
/// tuple's fields and whether a running transaction is deleting it (dirty snapshots only).
///
/// # Safety
///
/// `rel` must be the open catalog `pgcol.stripe`, `tuple` a valid tuple of it (its
/// by-reference values are returned pointing into it) and `snapshot` a valid snapshot.
unsafe fn parse_row(
    rel: pg_sys::Relation,
    tuple: pg_sys::HeapTuple,
    snapshot: pg_sys::Snapshot,
    storage_id: u64,
) -> (StripeRow, [pg_sys::Datum; NATTS], [bool; NATTS], bool) {
    // SAFETY: `rel` is the open catalog and `tuple` a valid tuple of it (the contract)
    let (values, nulls) = unsafe { super::deform_catalog_row::<NATTS>(rel, tuple) };
    if nulls[..7].iter().any(|&n| n) {
        pgrx::error!("pg_columnar: catalog pgcol.stripe has a NULL field for storage {storage_id}");
    }
    let v = |i: usize| values[i].value() as i64;
    let vacuumed = !nulls[8] && values[8].value() != 0;
    // SAFETY: `snapshot` is valid (the contract).
    let dirty = unsafe { (*snapshot).snapshot_type } == pg_sys::SnapshotType::SNAPSHOT_DIRTY;
    let row_count = v(2) as u64;
    let absent = if nulls[9] {
        Absent::from([])
    } else {
        // SAFETY: column 9 is a non-NULL bytea of the valid `tuple` (the contract); the bytes,
        // detoasted if need be, are copied out before this returns.
        let bytes = unsafe {
            pgrx::varlena::varlena_to_byte_slice(pg_sys::pg_detoast_datum_packed(
                values[9].cast_mut_ptr(),
            ))
        };
        absent_from_bytes(bytes, row_count).unwrap_or_else(|| {
            pgrx::error!("pg_columnar: catalog pgcol.stripe has an invalid absent-row list for storage {storage_id} at row {}", v(1))
        })
    };
    let original_xid = (!nulls[ORIGINAL_XID])
        .then(|| pg_sys::TransactionId::from(values[ORIGINAL_XID].value() as u32));
    // SAFETY: `tuple`'s header and `snapshot` are valid (the contract); only read here.
    let row = unsafe {
        StripeRow {
            storage_id: v(0) as u64,
            first_row: v(1) as u64,
            row_count,
            first_block: v(3) as u32,
            byte_length: v(4) as u64,
            prefix_length: v(5) as u64,
            prefix_checksum: v(6) as u64,
            // rows VACUUM wrote again were visible to every snapshot: frozen, as heap
            // reports a frozen tuple's inserter to those who ask what it means; a rewrite's
            // copy reports its rows' own inserter, as a heap rewrite keeps it
            xmin: match (vacuumed, original_xid) {
                (true, _) => pg_sys::FrozenTransactionId,
                (false, Some(x)) => x,
                (false, None) => (*(*tuple).t_data).t_choice.t_heap.t_xmin,
            },
            cmin: if vacuumed || original_xid.is_some() {
                pg_sys::FirstCommandId
            } else {
                inserting_command((*tuple).t_data)
            },
            running_inserter: (dirty
                && !vacuumed
                && (*snapshot).xmin != pg_sys::InvalidTransactionId)
                .then_some((*snapshot).xmin),
            vacuumed,
            absent,
            original_xid,
        }
    };
    // SAFETY: `snapshot` is valid (the contract).
    let being_deleted = dirty && unsafe { (*snapshot).xmax } != pg_sys::InvalidTransactionId;
    (row, values, nulls, being_deleted)
}

/// The command that inserted a catalog row. When this transaction also deleted the row (a
/// TRUNCATE or DROP in a savepoint since rolled back) the header holds a combo command id,
/// which only `HeapTupleHeaderGetCmin` turns back into the inserting command; it may be
/// asked only of this transaction's rows, and another's raw field is its command already.
///
/// # Safety
///
/// `header` must be the valid header of a heap tuple the caller holds (its buffer pinned).
unsafe fn inserting_command(header: pg_sys::HeapTupleHeader) -> pg_sys::CommandId {
    // SAFETY: `header` is valid (the contract); `HeapTupleHeaderGetCmin` is asked only of this
    // transaction's rows, as it requires.
    unsafe {
        let combo = (*header).t_infomask & pg_sys::HEAP_COMBOCID as u16 != 0;
        if combo && pg_sys::TransactionIdIsCurrentTransactionId((*header).t_choice.t_heap.t_xmin) {
            pg_sys::HeapTupleHeaderGetCmin(header)
        } else {
            (*header).t_choice.t_heap.t_field3.t_cid
        }
    }
}

/// The stripe that holds row `row` of `storage_id` for a dirty snapshot, if one does: what
/// [`stripes`] under SnapshotAny would give for that row (`read::stripe_index_of` of it),
/// without reading every stripe's row. The catalog's index is read backwards from the row:
/// stripes that no VACUUM is replacing do not overlap, so the first of them met is the only
/// one that can hold the row. A stripe being replaced met first (a VACUUM runs) sends the
/// question to [`stripes`], which decides between old and new stripes.
pub fn dirty_stripe_holding(storage_id: u64, row: u64) -> Option<StripeRow> {
    let c = catalog();
    let found = super::last_row_at_or_before(
        c.table,
        c.index,
        storage_id,
        row,
        // SAFETY: `last_row_at_or_before` passes the open `pgcol.stripe`, a tuple its scan
        // holds and the dirty snapshot that checked it, all valid during the call.
        |rel, tuple, dirty| unsafe {
            let (row, _, _, being_deleted) = parse_row(rel, tuple, dirty, storage_id);
            (row, being_deleted)
        },
    );
    match found {
        None => None,
        Some((stripe, false)) => stripe.holds(row).then_some(stripe),
        Some((_, true)) => {
            let any = std::ptr::addr_of_mut!(pg_sys::SnapshotAnyData);
            stripes(storage_id, any, std::ptr::null_mut())
                .into_iter()
                .find(|s| s.holds(row))
        }
    }
}

/// The stripe of those [`stripes`] would list for `snapshot` that holds row `row`, found
/// through the catalog's index without reading the others' rows: what a fetch of one row
/// needs. Not for a serializable transaction's read of the table (see
/// `super::last_seen_at_or_before`).
pub fn stripe_holding(storage_id: u64, row: u64, snapshot: pg_sys::Snapshot) -> Option<StripeRow> {
    use pg_sys::SnapshotType::*;
    let c = catalog();
    // SAFETY: `snapshot` is the caller's valid snapshot, registered (as [`visible`] does) for
    // as long as the catalog is read with it; `parse_row` gets the open catalog and its tuple.
    unsafe {
        match (*snapshot).snapshot_type {
            SNAPSHOT_MVCC | SNAPSHOT_SELF | SNAPSHOT_HISTORIC_MVCC => {
                let registered = pg_sys::RegisterSnapshot(snapshot);
                let found = super::last_seen_at_or_before(
                    c.table,
                    c.index,
                    storage_id,
                    row,
                    registered,
                    Some(ORIGINAL_XID),
                    |rel, tuple| parse_row(rel, tuple, registered, storage_id).0,
                );
                pg_sys::UnregisterSnapshot(registered);
                found.filter(|s| s.holds(row))
            }
            _ => dirty_stripe_holding(storage_id, row),
        }
    }
}

/// The stripes of `storage_id` that a table scan under `snapshot` sees, in row order. What
/// each kind of snapshot means for the stripe catalog is decided here, for every path:
///
/// * MVCC (also historic MVCC): the same snapshot; a stripe is visible exactly when its rows
///   are (registered for the catalog scan, as it may be one just taken).
/// * SnapshotSelf: SnapshotSelf (committed, and this transaction's stripes of any command).
/// * SnapshotAny, SnapshotDirty, SnapshotNonVacuumable and SnapshotToast: every stripe whose
///   inserting transaction has not aborted, i.e. the catalog read with a dirty snapshot. Their
///   callers (index builds, trigger and foreign-key fetches of rows this transaction just
///   inserted, the planner's index probes) want every row that is not dead; the rows of an
///   aborted load are dead, and VACUUM may already have given back their pages.
///
/// `table` is the pg_columnar table read, for a serializable transaction's checks of its
/// conflicts (`super::scan_catalog`); null where the list is not a read of its rows (the
/// planner's estimates).
pub fn stripes(
    storage_id: u64,
    snapshot: pg_sys::Snapshot,
    table: pg_sys::Relation,
) -> Vec<StripeRow> {
    stripe_list(storage_id, snapshot, table)
        .rows()
        .cloned()
        .collect()
}

/// The stripes of one read of the catalog ([`stripe_list`]), in row order, with their zone
/// summaries.
pub struct StripeList {
    rows: Vec<(StripeRow, Option<Vec<u8>>)>,
    /// Parsed on first use: the planner's estimate and the scan both ask.
    summaries: std::cell::OnceCell<Vec<Option<Result<StripeSummary, DecodeError>>>>,
    /// Rows stored and rows held (stored, less the absent ones), counted on first use: the
    /// planner asks of every statement.
    totals: std::cell::OnceCell<(u64, u64)>,
    /// Made on first use ([`sample`](Self::sample)).
    sample: std::cell::OnceCell<StripeSample>,
}

/// The stripes of a [`StripeList`] a question about each may be asked of instead
/// ([`StripeList::sample`]).
pub struct StripeSample {
    /// Those holding at least 1/`limit` of the stored rows (every stripe, if there are at
    /// most `limit`): asked each.
    pub large: Vec<usize>,
    /// An evenly spaced sample of at most `limit` of the others.
    pub sampled: Vec<usize>,
    /// The others: how many, and their rows; and the rows of those sampled.
    pub small_count: usize,
    pub small_rows: u64,
    pub sampled_rows: u64,
}

impl StripeList {
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn rows(&self) -> impl Iterator<Item = &StripeRow> {
        self.rows.iter().map(|(row, _)| row)
    }

    /// The `i`-th stripe, in row order.
    pub fn row(&self, i: usize) -> &StripeRow {
        &self.rows[i].0
    }

    /// Rows the stripes store (absent ones too: their range).
    pub fn stored_rows(&self) -> u64 {
        self.totals().0
    }

    /// Rows the stripes hold: those they store, less the absent ones.
    pub fn held_rows(&self) -> u64 {
        self.totals().1
    }

    /// The stripes to ask about instead of all of them, at most about 2 × `limit` (one limit
    /// per list: the first asked makes the sample), so that the planner's question of every
    /// stripe costs the same however many small stripes the table has.
    pub fn sample(&self, limit: usize) -> &StripeSample {
        self.sample.get_or_init(|| {
            let stored = self.stored_rows() as u128;
            let few = self.rows.len() <= limit;
            let (large, small): (Vec<usize>, Vec<usize>) = (0..self.rows.len())
                .partition(|&i| few || self.rows[i].0.row_count as u128 * limit as u128 >= stored);
            let step = small.len().div_ceil(limit.max(1)).max(1);
            let sampled: Vec<usize> = small.iter().copied().step_by(step).collect();
            let rows = |ix: &[usize]| ix.iter().map(|&i| self.rows[i].0.row_count).sum::<u64>();
            StripeSample {
                small_count: small.len(),
                small_rows: rows(&small),
                sampled_rows: rows(&sampled),
                large,
                sampled,
            }
        })
    }

    fn totals(&self) -> (u64, u64) {
        *self.totals.get_or_init(|| {
            self.rows().fold((0, 0), |(stored, held), s| {
                (stored + s.row_count, held + s.row_count - absent_count(s))
            })
        })
    }

    /// Each stripe's zone summary, parsed: `None` where its row has none, an error where the
    /// stored bytes do not parse (the caller reports it, naming the relation).
    pub fn summaries(&self) -> &[Option<Result<StripeSummary, DecodeError>>] {
        self.summaries.get_or_init(|| {
            self.rows
                .iter()
                .map(|(_, zones)| zones.as_deref().map(StripeSummary::parse))
                .collect()
        })
    }
}

/// [`stripes`] with each stripe's zone summary, shared: a read under an MVCC snapshot is kept
/// and given again for a snapshot of the same content in the same transaction
/// ([`SnapshotContent`](super::SnapshotContent)), so planning and executing a query, and the
/// queries after it, read the catalog and parse its summaries once, not once per question.
/// This backend's own changes to the catalog ([`insert`], [`delete_rows`]) and every
/// subtransaction end ([`forget_reads`]) forget the kept reads; other transactions' changes
/// become visible only through a snapshot of other content.
pub fn stripe_list(
    storage_id: u64,
    snapshot: pg_sys::Snapshot,
    table: pg_sys::Relation,
) -> Rc<StripeList> {
    let read = || {
        let mut rows = Vec::new();
        visible(storage_id, snapshot, table, |row, zones| {
            rows.push((row, zones.map(<[u8]>::to_vec)))
        });
        rows.sort_by_key(|r| r.0.first_row);
        Rc::new(StripeList {
            rows,
            summaries: std::cell::OnceCell::new(),
            totals: std::cell::OnceCell::new(),
            sample: std::cell::OnceCell::new(),
        })
    };
    // under SERIALIZABLE each read is made afresh: a read is also the transaction's check of
    // its conflicts with the writers of the stripes it passes over (`scan_catalog`), and one
    // kept from before the transaction took its predicate lock on the table (`am::ssi`) would
    // miss a writer that found no lock yet
    let Some(content) = super::SnapshotContent::of(snapshot) else {
        return read();
    };
    let serializable = super::serializable_transaction();
    if let Some(list) = (!serializable)
        .then(|| kept_read(storage_id, &content))
        .flatten()
    {
        return list;
    }
    READ_COUNTS.set({
        let (scans, reuses) = READ_COUNTS.get();
        (scans + 1, reuses)
    });
    let list = read();
    if serializable {
        return list;
    }
    READS.with_borrow_mut(|reads| {
        // the table's read for another snapshot content (an earlier commit's) is replaced
        reads.retain(|(id, _, _)| *id != storage_id);
        if make_room(reads, |(_, _, l)| l.len(), list.len()) {
            reads.push((storage_id, content, list.clone()));
        }
    });
    list
}

/// The read kept for a snapshot of `content`, if there is one (counted as a reuse).
fn kept_read(storage_id: u64, content: &super::SnapshotContent) -> Option<Rc<StripeList>> {
    let kept = READS.with_borrow(|reads| {
        reads
            .iter()
            .find(|(id, c, _)| *id == storage_id && c == content)
            .map(|(_, _, l)| l.clone())
    });
    if kept.is_some() {
        READ_COUNTS.set({
            let (scans, reuses) = READ_COUNTS.get();
            (scans, reuses + 1)
        });
    }
    kept
}

/// Reads [`stripe_list`] and [`planning_list`] keep (the latest, oldest first): a query's
/// tables, each partition of a partitioned one among them (a lifecycle's dozens; with eight,
/// each query over 22 partitions read every partition's catalog again, twice).
const KEPT_READS: usize = 64;

/// The most stripes the kept reads of each kind list, together, so that large tables' lists
/// do not hold much memory (a stripe's summary is about 40 bytes a column): two tables of a
/// billion rows (7,700 stripes each) fit.
const KEPT_STRIPES: usize = 16_384;

/// Drops the oldest of `reads` until one more read listing `adding` stripes fits in
/// [`KEPT_READS`] and [`KEPT_STRIPES`]; `false` (nothing dropped) if that read alone is over
/// the stripe limit: it is not kept, rather than drop every other.
fn make_room<T>(reads: &mut Vec<T>, stripes: impl Fn(&T) -> usize, adding: usize) -> bool {
    if adding > KEPT_STRIPES {
        return false;
    }
    let mut total: usize = reads.iter().map(&stripes).sum();
    while !reads.is_empty() && (reads.len() >= KEPT_READS || total + adding > KEPT_STRIPES) {
        total -= stripes(&reads[0]);
        reads.remove(0);
    }
    true
}

thread_local! {
    static READS: std::cell::RefCell<Vec<(u64, super::SnapshotContent, Rc<StripeList>)>> = const { std::cell::RefCell::new(Vec::new()) };
    /// [`stripe_list`]'s reads under MVCC snapshots so far: those that scanned the catalog,
    /// and those given a kept read.
    static READ_COUNTS: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) };
}

/// Reads kept now, and [`stripe_list`]'s MVCC reads so far that scanned the catalog and that
/// were given a kept read (`pgcol.kept_catalog_reads`).
pub fn read_stats() -> (usize, u64, u64) {
    let (scans, reuses) = READ_COUNTS.get();
    (READS.with_borrow(Vec::len), scans, reuses)
}

/// Forgets [`stripe_list`]'s kept reads: this backend changed the catalog, or a
/// subtransaction ended (an aborted one takes its catalog rows with it, and a snapshot of the
/// same content after it no longer sees them).
pub fn forget_reads() {
    READS.with_borrow_mut(Vec::clear);
}

/// What the planner estimates from: a read of the stripe catalog ([`stripe_list`]) and the
/// rows numbered since it was made, which it does not describe.
pub struct PlanningRead {
    pub list: Rc<StripeList>,
    pub rows_since: u64,
}

/// How long the planner may go on estimating from a read made in an earlier transaction, at
/// least; a read that took long is kept [`PLANNING_READ_COST_TIMES`] as long as it took.
const PLANNING_READ_AGE_US: i64 = 1_000_000;
const PLANNING_READ_COST_TIMES: i64 = 100;

/// A read kept for the planner ([`planning_list`]).
struct PlanningEntry {
    storage_id: u64,
    /// The storage's `next_row` when the read was made.
    next_row: u64,
    /// When (statement start), and how long the read took, in microseconds.
    read_at: i64,
    cost: i64,
    list: Rc<StripeList>,
}

thread_local! {
    /// Reads kept for the planner across transactions, one per storage.
    static PLANNING_READS: std::cell::RefCell<Vec<PlanningEntry>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The stripes the planner estimates a scan of `storage_id` from, whose metapage now says
/// `next_row`. A read kept for a snapshot of the current one's content is exact and is given
/// first ([`stripe_list`]). Otherwise a read made by an earlier statement, possibly of an
/// earlier transaction, is given with the count of rows numbered since, while it is under a
/// second old (or a hundred times as long as it took to make) and those rows are at most
/// 1,024, an eighth of the rows it lists, or as many as its stripes: a table that takes one
/// small stripe per statement (single-row UPDATEs from many sessions) would otherwise have
/// each statement's planning read every stripe written since the last VACUUM, and the
/// planning of each cost more than the last; so a read is made again no more often than
/// its cost allows. An estimate, as heap's is (its row count is the last VACUUM's or
/// ANALYZE's, scaled by the file's size now): it may count rows a transaction since rolled
/// back, or that another session's VACUUM has removed since, for that long. Scans read the
/// catalog for their own snapshot; only the planner asks here.
pub fn planning_list(storage_id: u64, next_row: u64, snapshot: pg_sys::Snapshot) -> PlanningRead {
    let exact = super::SnapshotContent::of(snapshot)
        .filter(|_| !super::serializable_transaction())
        .and_then(|content| kept_read(storage_id, &content));
    if let Some(list) = exact {
        return PlanningRead {
            list,
            rows_since: 0,
        };
    }
    // SAFETY: a plain read of the current statement's start time, inside a transaction (planning)
    let now = unsafe { pg_sys::GetCurrentStatementStartTimestamp() };
    let kept = PLANNING_READS.with_borrow(|reads| {
        let e = reads.iter().find(|e| e.storage_id == storage_id)?;
        let since = next_row.checked_sub(e.next_row)?;
        let fresh = now.saturating_sub(e.read_at)
            < PLANNING_READ_AGE_US.max(e.cost.saturating_mul(PLANNING_READ_COST_TIMES))
            && since
                <= (e.list.stored_rows() / 8)
                    .max(e.list.len() as u64)
                    .max(1024);
        fresh.then(|| PlanningRead {
            list: e.list.clone(),
            rows_since: since,
        })
    });
    if let Some(read) = kept {
        return read;
    }
    let started = std::time::Instant::now();
    let list = stripe_list(storage_id, snapshot, std::ptr::null_mut());
    let cost = started.elapsed().as_micros().min(i64::MAX as u128) as i64;
    PLANNING_READS.with_borrow_mut(|reads| {
        reads.retain(|e| e.storage_id != storage_id);
        if !make_room(reads, |e| e.list.len(), list.len()) {
            return;
        }
        reads.push(PlanningEntry {
            storage_id,
            next_row,
            read_at: now,
            cost,
            list: list.clone(),
        });
    });
    PlanningRead {
        list,
        rows_since: 0,
    }
}

/// Forgets the planner's kept reads ([`planning_list`]): this backend removed catalog rows
/// (VACUUM, TRUNCATE, DROP) or rolled back rows it had numbered.
pub fn forget_planning_reads() {
    PLANNING_READS.with_borrow_mut(Vec::clear);
}

/// The catalog scan of [`stripes`]: what each kind of snapshot sees.
fn visible(
    storage_id: u64,
    snapshot: pg_sys::Snapshot,
    table: pg_sys::Relation,
    mut f: impl FnMut(StripeRow, Option<&[u8]>),
) {
    use pg_sys::SnapshotType::*;
    // SAFETY: callers pass a valid `snapshot`; an MVCC one is registered for the scan and
    // unregistered after, and the zeroed dirty one (as InitDirtySnapshot makes) outlives its scan.
    unsafe {
        match (*snapshot).snapshot_type {
            SNAPSHOT_MVCC => {
                let registered = pg_sys::RegisterSnapshot(snapshot);
                scan(
                    storage_id,
                    registered,
                    table,
                    pg_sys::AccessShareLock,
                    |_, row, z, _| f(row, z),
                );
                pg_sys::UnregisterSnapshot(registered);
            }
            SNAPSHOT_SELF | SNAPSHOT_HISTORIC_MVCC => scan(
                storage_id,
                snapshot,
                table,
                pg_sys::AccessShareLock,
                |_, row, z, _| f(row, z),
            ),
            _ => {
                // While a VACUUM that rewrites stripes runs, a dirty read sees both the rows it
                // is deleting and the ones it is inserting for the same rows (`am::vacuum`):
                // the new one has every row any snapshot can see, so the old one is left out.
                let mut dirty: pg_sys::SnapshotData = std::mem::zeroed();
                dirty.snapshot_type = SNAPSHOT_DIRTY;
                let mut rows: Vec<(StripeRow, Option<Vec<u8>>, bool)> = Vec::new();
                scan(
                    storage_id,
                    &mut dirty,
                    std::ptr::null_mut(),
                    pg_sys::AccessShareLock,
                    |_, row, z, being_deleted| {
                        rows.push((row, z.map(<[u8]>::to_vec), being_deleted))
                    },
                );
                // (the ranges of the rows not being deleted, by first row: they do not overlap)
                let mut kept: Vec<(u64, u64)> = Vec::new();
                if rows.iter().any(|(_, _, being_deleted)| *being_deleted) {
                    kept = rows
                        .iter()
                        .filter(|(_, _, d)| !d)
                        .map(|(r, _, _)| (r.first_row, r.first_row + r.row_count))
                        .collect();
                    kept.sort_unstable();
                }
                let replaced = |r: &StripeRow| {
                    // the last kept range starting before `r` ends, and whether it reaches `r`
                    let i = kept.partition_point(|&(first, _)| first < r.first_row + r.row_count);
                    i > 0 && kept[i - 1].1 > r.first_row
                };
                let keep: Vec<bool> = rows
                    .iter()
                    .map(|(r, _, being_deleted)| !being_deleted || !replaced(r))
                    .collect();
                for ((row, zones, _), keep) in rows.into_iter().zip(keep) {
                    if keep {
                        f(row, zones.as_deref());
                    }
                }
            }
        }
    }
}

/// A stripe's catalog row as VACUUM reads it ([`for_vacuum`]).
pub struct VacuumRow {
    pub row: StripeRow,
    pub zones: Option<Vec<u8>>,
    /// The row's TID in the catalog (to delete it).
    pub tid: pg_sys::ItemPointerData,
    /// Every snapshot, now and later, sees the stripe: its inserter committed before any
    /// running transaction's snapshot.
    pub settled: bool,
}

/// Every stripe of `storage_id` that `snapshot` (MVCC) sees, in row order, with what VACUUM
/// needs to replace it.
pub fn for_vacuum(storage_id: u64, snapshot: pg_sys::Snapshot) -> Vec<VacuumRow> {
    let mut rows = Vec::new();
    // SAFETY: callers pass a valid `snapshot`; the catalog is opened here and closed after the
    // scan, `vistest` is its own, and `scan` passes tuples valid during each call.
    unsafe {
        let rel = pg_sys::table_open(catalog().table, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        let vistest = pg_sys::GlobalVisTestFor(rel);
        scan(
            storage_id,
            snapshot,
            std::ptr::null_mut(),
            pg_sys::AccessShareLock,
            |tuple, row, zones, _| {
                let settled = super::inserter_settled(tuple, vistest);
                rows.push(VacuumRow {
                    row,
                    zones: zones.map(<[u8]>::to_vec),
                    tid: (*tuple).t_self,
                    settled,
                })
            },
        );
        pg_sys::table_close(rel, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
    }
    rows.sort_by_key(|r| r.row.first_row);
    rows
}

/// The page ranges (first block, pages) of every stripe of `storage_id` that some snapshot,
/// now or later, may still read: the catalog rows VACUUM cannot remove yet (live ones,
/// those deleted recently, and those of running transactions). The other blocks of the file
/// hold nothing anyone reads, provided no writer is between writing a stripe's pages and
/// inserting its catalog row (see `am::vacuum`).
pub fn occupied(storage_id: u64) -> Vec<(u32, u32)> {
    let mut ranges = Vec::new();
    // SAFETY: the catalog is opened here and closed after the scan; the zeroed non-vacuumable
    // snapshot, given the catalog's own `vistest`, outlives the scan.
    unsafe {
        let rel = pg_sys::table_open(catalog().table, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        let mut snapshot: pg_sys::SnapshotData = std::mem::zeroed();
        snapshot.snapshot_type = pg_sys::SnapshotType::SNAPSHOT_NON_VACUUMABLE;
        snapshot.vistest = pg_sys::GlobalVisTestFor(rel);
        scan(
            storage_id,
            &mut snapshot,
            std::ptr::null_mut(),
            pg_sys::AccessShareLock,
            |_, row, _, _| {
                ranges.push((
                    row.first_block,
                    super::pages::pages_for(row.byte_length as usize),
                ))
            },
        );
        pg_sys::table_close(rel, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
    }
    ranges.sort_unstable();
    ranges
}

/// The newest transaction that deleted a catalog row of `storage_id` which no snapshot can
/// read any more (`None` if the catalog holds no such row): the pages that row pointed at
/// are free ([`occupied`]), and a hot standby's queries whose snapshots may still read them
/// are cancelled before they are written again (`am::standby`). A row already pruned from
/// the catalog needs nothing here: heap's pruning logged its deleter itself. The catalog is
/// read whole, not through its index: index scans skip the entries of rows they found dead
/// for every snapshot, which are the ones asked for.
pub fn freed_horizon(storage_id: u64) -> Option<pg_sys::TransactionId> {
    let mut horizon = None;
    // SAFETY: the catalog is opened here and closed at the end; `key` is initialized before
    // the scan, each tuple is read before the next is fetched, and the scan is ended.
    unsafe {
        let rel = pg_sys::table_open(catalog().table, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        let vistest = pg_sys::GlobalVisTestFor(rel);
        let mut key: pg_sys::ScanKeyData = std::mem::zeroed();
        pg_sys::ScanKeyInit(
            &mut key,
            1,
            pg_sys::BTEqualStrategyNumber as u16,
            pg_sys::F_INT8EQ.into(),
            pg_sys::Datum::from(storage_id as i64),
        );
        let any = std::ptr::addr_of_mut!(pg_sys::SnapshotAnyData);
        let scan = pg_sys::systable_beginscan(rel, pg_sys::InvalidOid, false, any, 1, &mut key);
        loop {
            let tuple = pg_sys::systable_getnext(scan);
            if tuple.is_null() {
                break;
            }
            if let Some(deleter) = super::settled_deleter(tuple, vistest) {
                horizon = Some(super::newer_xid(horizon, deleter));
            }
        }
        pg_sys::systable_endscan(scan);
        pg_sys::table_close(rel, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
    }
    horizon
}

/// Deletes the catalog rows `tids` (transactionally), as VACUUM replaces their stripes.
pub fn delete_rows(tids: &[pg_sys::ItemPointerData]) {
    super::delete_catalog_rows(catalog().table, tids);
    forget_reads();
    forget_planning_reads();
}

/// Deletes every row of `storage_id` (transactionally: a rollback brings them back). Used
/// when a storage is dropped or truncated, under a lock that excludes its writers.
pub fn delete_storage(storage_id: u64) {
    let snapshot = std::ptr::addr_of_mut!(pg_sys::SnapshotSelfData);
    let mut tids = Vec::new();
    scan(
        storage_id,
        snapshot,
        std::ptr::null_mut(),
        pg_sys::RowExclusiveLock,
        // SAFETY: `scan` passes a tuple valid during the call.
        |tuple, _, _, _| tids.push(unsafe { (*tuple).t_self }),
    );
    if !tids.is_empty() {
        delete_rows(&tids);
        // SAFETY: called in a transaction (a DROP or TRUNCATE), where commands count.
        unsafe { pg_sys::CommandCounterIncrement() };
    }
}

/// Whether the catalog exists (it does not while DROP EXTENSION is removing it).
pub fn exists() -> bool {
    super::pgcol_relation(c"stripe").is_some()
}

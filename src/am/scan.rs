//! Sequential, TID-range, parallel and ANALYZE scans, and the row source of the custom scan
//! (`crate::exec`).
//!
//! A scan lists the stripes its snapshot sees (one catalog lookup at the start), then walks
//! them vector by vector, decoding each vector of every column it wants once into Datums that
//! the returned slots point into. Decoded memory is reused from vector to vector, so a scan's
//! memory does not grow with the table. Parallel workers share an atomic stripe counter and
//! each takes whole stripes.
//!
//! Rows deleted for the scan's snapshot, and rows VACUUM removed (the scan's
//! [`DeleteMask`], read a stripe at a time as the scan reaches them) are left out by every
//! path: row at a time, vector at a time (they are taken out of each vector's selection),
//! bitmap, ANALYZE; and a stripe or vector holding one is never answered from its metadata.
//!
//! The custom scan reads vector at a time ([`ScanState::next_selected`]): a [`VectorSkip`]
//! decides, per stripe from its catalog summary and then per vector from the directory,
//! which vectors can hold a wanted row; a [`VectorFilter`] selects the rows of each vector
//! read from its filter columns, and only the selected rows are laid out and returned.

use std::sync::atomic::{AtomicU64, Ordering};

use pg_columnar_codec::aggregate::ColumnFacts;
use pg_columnar_codec::filter::Selection;
use pg_columnar_codec::stripe::{StripeDirectory, StripeSummary};
use pg_columnar_codec::{ColumnContext, Form, Unpacked, Vector};
use pgrx::pg_sys;

use super::datum::{column_types, ColumnBuffer, ColumnType};
use super::mask::DeleteMask;
use super::read::{self, DecodedVector, LoadedStripe, RowOrder, Selected};
use super::write;
use crate::storage::catalog::{self, StripeRow};
use crate::storage::meta;
use crate::storage::pages::PageReader;
use crate::storage::tid;

/// The shared state of a parallel scan, in dynamic shared memory.
#[repr(C)]
pub struct ParallelShared {
    base: pg_sys::ParallelTableScanDescData,
    next_stripe: AtomicU64,
}

#[repr(C)]
pub struct ScanDesc {
    base: pg_sys::TableScanDescData,
    state: *mut ScanState,
}

/// The unpacked vectors of one vector's columns, by column, with the contexts they were
/// unpacked with.
pub type ColumnLookup<'v> = dyn Fn(usize) -> Option<(&'v Unpacked, ColumnContext<'v>)> + 'v;

/// What a directory knows of column `c` of vector `v` (`None` for a column the stripe does
/// not store).
fn column_facts_of_vector(dir: &StripeDirectory, v: usize, c: usize) -> Option<ColumnFacts<'_>> {
    let e = &dir.stored_vectors(c)?[v];
    Some(ColumnFacts {
        nulls: e.null_count,
        zone: Some(&e.zone),
    })
}

/// The [`ColumnLookup`] of vectors unpacked from `stripe` (a column the stripe does not store
/// has no context).
fn lookup_in<'a>(
    stripe: &'a LoadedStripe,
    unpacked: &'a [(usize, Unpacked)],
) -> impl Fn(usize) -> Option<(&'a Unpacked, ColumnContext<'a>)> + 'a {
    let stored = stripe.dir.columns.len();
    move |c| {
        let ctx = if c < stored {
            stripe.loaded_context(c)
        } else {
            ColumnContext::default()
        };
        unpacked
            .iter()
            .find(|(k, _)| *k == c)
            .map(|(_, u)| (u, ctx))
    }
}

/// Evaluates quals over whole decoded vectors (`exec::filter`).
pub trait VectorFilter {
    /// The columns (0-based) whose vectors [`select`](Self::select) reads.
    fn columns(&self) -> &[usize];
    /// The rows of a vector of `rows` rows that satisfy the quals, given the unpacked vectors
    /// of [`columns`](Self::columns), the contexts they were unpacked with and the serial
    /// number of their stripe's load (which names its shared dictionaries); `None` if a
    /// vector is not of the form its predicate reads (a corrupt stripe: the kind of every
    /// vector is checked against the column's).
    fn select<'v>(
        &mut self,
        vector: &ColumnLookup<'v>,
        stripe: u64,
        rows: usize,
    ) -> Option<Selection>;
}

/// Decides from a stripe's directory (zone maps, null counts) whether a vector may hold a
/// wanted row. `false` must be a proof that it holds none; the scan then never reads it.
/// Also decides whether every row of a vector is wanted: `true` must be a proof.
pub trait VectorSkip {
    fn may_match(&mut self, dir: &StripeDirectory, vector: usize) -> bool;
    /// The same question for a whole stripe of `rows` rows, from its catalog summary.
    fn may_match_stripe(&mut self, summary: &StripeSummary, rows: usize) -> bool;
    fn covers(&mut self, dir: &StripeDirectory, vector: usize) -> bool;
    fn covers_stripe(&mut self, summary: &StripeSummary, rows: usize) -> bool;
}

/// Two skips at once: a vector may match if both say it may (the second is asked only then),
/// and every row is wanted if both say so.
struct BothSkips(Box<dyn VectorSkip>, Box<dyn VectorSkip>);

impl VectorSkip for BothSkips {
    fn may_match(&mut self, dir: &StripeDirectory, vector: usize) -> bool {
        self.0.may_match(dir, vector) && self.1.may_match(dir, vector)
    }
    fn may_match_stripe(&mut self, summary: &StripeSummary, rows: usize) -> bool {
        self.0.may_match_stripe(summary, rows) && self.1.may_match_stripe(summary, rows)
    }
    fn covers(&mut self, dir: &StripeDirectory, vector: usize) -> bool {
        self.0.covers(dir, vector) && self.1.covers(dir, vector)
    }
    fn covers_stripe(&mut self, summary: &StripeSummary, rows: usize) -> bool {
        self.0.covers_stripe(summary, rows) && self.1.covers_stripe(summary, rows)
    }
}

/// Answers for rows an aggregate over the scan need not read: every one of them is
/// selected, and `facts` gives what the metadata knows of each column (`None`: nothing).
/// True if it took them (the scan then reads nothing of them), false to have them read.
pub trait MetadataAnswer {
    fn answer<'f>(&mut self, rows: usize, facts: &dyn Fn(usize) -> Option<ColumnFacts<'f>>)
        -> bool;
}

/// How [`ScanState::store_row`] decodes a row whose vector it does not hold.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Decode {
    /// The vector, every row.
    Whole,
    /// The vector's rows the current row cursor selected (a vector-at-a-time scan), or the
    /// rows a node chose ([`ScanState::store_chosen`]).
    Selected,
    /// The row alone.
    Alone,
    /// A row stored one at a time by number: alone, unless the row stored before it was
    /// alone of the same vector, which is then decoded whole.
    Fetched,
}

/// What a scan did, for EXPLAIN ANALYZE.
#[derive(Debug, Default, Clone)]
pub struct ScanCounters {
    pub stripes: u64,
    pub stripes_skipped: u64,
    /// Of the skipped stripes, those ruled out by their catalog summary, whose directory
    /// was not read either.
    pub stripes_unread: u64,
    pub vectors: u64,
    pub vectors_skipped: u64,
    /// Vectors read in which the filter selected no row.
    pub vectors_filtered: u64,
    /// Vectors read whose zone maps prove that the filter selects every row (it was not
    /// evaluated, nor its columns decoded for it).
    pub vectors_covered: u64,
    /// Rows of the vectors read that the filter did not select.
    pub rows_filtered: u64,
    /// Stripes and vectors whose rows an aggregate took from their metadata (counted
    /// neither as skipped nor as read).
    pub stripes_answered: u64,
    pub vectors_answered: u64,
}

thread_local! {
    /// Rows that scans storing rows one at a time (fetches by number, PgcolTopN's rows)
    /// decoded alone, and vectors they decoded whole because a second row of one was asked
    /// for right after the first.
    static ROW_DECODES: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) };
}

/// Rows stored one at a time that were decoded alone, and vectors decoded whole for them,
/// so far in this backend (`pgcol.kept_stripes`).
pub fn row_at_a_time_decodes() -> (u64, u64) {
    ROW_DECODES.get()
}

/// How many of the stripes it loads the query engine's scan gives to the ones this backend
/// keeps (`ScanState::keep_first_stripes`).
const SCAN_KEEPS: usize = 4;

/// Stripes a fetch scan looks up one by one before it lists them all
/// ([`ScanState::stripe_of_row`]).
const FETCH_LOOKUPS: usize = 16;

pub struct ScanState {
    pub rel: pg_sys::Relation,
    relid: pg_sys::Oid,
    /// Storage types of the columns, from the descriptor of the slots being filled (during
    /// ALTER COLUMN TYPE the relation's descriptor is already the new one; the slots and the
    /// stored data still have the old).
    pub types: Vec<ColumnType>,
    types_of: pg_sys::TupleDesc,
    pub stripes: Vec<StripeRow>,
    /// The storage id of the relation (`None`: it has no rows yet).
    pub storage_id: Option<u64>,
    /// The rows the snapshot finds deleted or absent (none for [`ScanState::for_fetch`]).
    mask: DeleteMask,
    /// The stored positions of the deleted rows of the loaded stripe, ascending, and the
    /// first row of the stripe they are of.
    deleted_positions: Option<(u64, Vec<u64>)>,
    /// Zone summaries of `stripes` (same order), if the scan asked for them
    /// ([`ScanState::with_summaries`]) and the catalog rows have them.
    summaries: Vec<Option<StripeSummary>>,
    /// The stripe counter the workers of a parallel scan share; null for a serial scan.
    parallel: *const AtomicU64,
    /// Position: stripe index and row within the stripe of the row last returned; `None`
    /// before the first row.
    pos: Option<(usize, u64)>,
    stripe: Option<LoadedStripe>,
    /// How many more of the stripes this scan loads go to the ones this backend keeps across
    /// scans (`read::keep`) once the scan leaves them; every scan looks there first. A fetch
    /// scan ([`ScanState::for_fetch`]) keeps every one, the query engine's scan its first
    /// [`SCAN_KEEPS`] ([`keep_first_stripes`](Self::keep_first_stripes)), the others (table
    /// AM scans, index builds, rewrites, VACUUM) none.
    keeps_left: usize,
    decoded: DecodedVector,
    /// Rows stored one at a time by number (a fetch scan): [`Decode::Fetched`].
    row_at_a_time: bool,
    /// A fetch scan that lists the stripes of the rows it is asked for as it is asked
    /// ([`stripe_of_row`](Self::stripe_of_row)): the lookups made so far, and the type of the
    /// snapshot they are made for. `None`: `stripes` lists every stripe the snapshot sees.
    lookups: Option<(usize, pg_sys::SnapshotType::Type)>,
    /// Integers of a block that [`DecodedVector::decode_row`] decodes whole.
    scratch: Vec<i64>,
    pub pages: PageReader,
    buf: Vec<u8>,
    /// Inclusive row-number bounds of a TID range scan.
    range: Option<(u64, u64)>,
    /// ANALYZE: rows of the current sample block still to return.
    analyze: Option<std::ops::Range<u64>>,
    /// Total rows of the visible stripes (ANALYZE spreads them over the blocks).
    pub total_rows: u64,
    /// ANALYZE: ordinal (among the stored rows of visible stripes) of each stripe's first row.
    first_ordinals: Vec<u64>,
    /// Bitmap scan: visible rows of the current TID-bitmap block still to return, as stripe
    /// index and insert offset within the stripe.
    bitmap_rows: std::collections::VecDeque<(usize, u64)>,
    /// TABLESAMPLE: the block whose rows [`sample_next_row`](Self::sample_next_row) picks
    /// from (its visible rows in `bitmap_rows`), and whether the blocks are done.
    sample_block: Option<u32>,
    sample_done: bool,
    /// Columns to decode (`None`: all), kept to rebuild `decoded` when the slots' descriptor
    /// changes.
    wanted: Option<Vec<bool>>,
    skip: Option<Box<dyn VectorSkip>>,
    filter: Option<Box<dyn VectorFilter>>,
    /// The stripes a serial vector-at-a-time scan reads, in order, and each stripe's position
    /// in that order (`usize::MAX`: not read); see [`ScanState::set_order`].
    order: Option<(Vec<usize>, Vec<usize>)>,
    /// Vector-at-a-time scans: the stripe being read and the vector being returned.
    vector_cursor: Option<StripeCursor>,
    row_cursor: Option<RowCursor>,
    /// Row cursors made so far (their ids).
    cursor_ids: u64,
    pub counters: ScanCounters,
}

/// A stripe a vector-at-a-time scan is in: which of its vectors to read, and the next one.
struct StripeCursor {
    stripe: usize,
    survivors: Vec<bool>,
    next: usize,
}

/// A vector a vector-at-a-time scan is returning rows of.
struct RowCursor {
    stripe: usize,
    vector: usize,
    selection: Selection,
    next: usize,
    /// Names the selection in the decoded vector's key (`read::VectorKey`).
    id: u64,
}

/// A vector of `rows` rows of column `c`'s default (a column added after the stripe was
/// written), in the codec's form, from the missing-attribute value the slot's descriptor
/// gives.
///
/// # Safety
/// `slot` must be a valid slot of the relation's descriptor; attribute `c` of it is
/// overwritten (the row stored next replaces it).
unsafe fn missing_vector(
    slot: *mut pg_sys::TupleTableSlot,
    c: usize,
    ty: ColumnType,
    rows: usize,
) -> Vector {
    pg_sys::slot_getmissingattrs(slot, c as i32, c as i32 + 1);
    let (datum, is_null) = (*(*slot).tts_values.add(c), *(*slot).tts_isnull.add(c));
    let mut column = ColumnBuffer::new(ty);
    for _ in 0..rows {
        column.push(datum, is_null);
    }
    Vector {
        rows,
        nulls: column.has_nulls.then_some(column.nulls),
        values: column.values,
    }
}

/// Lists the stripes of `rel` that `snapshot` sees, in row order (what each kind of snapshot
/// sees: [`catalog::stripes`]), to count rows, not to read them.
pub fn visible_stripes(rel: pg_sys::Relation, snapshot: pg_sys::Snapshot) -> Vec<StripeRow> {
    match meta::storage_id(rel) {
        Some(id) => catalog::stripes(id, snapshot, std::ptr::null_mut()),
        None => Vec::new(),
    }
}

/// A snapshot to read with when the caller gave none (ANALYZE).
pub fn current_snapshot() -> pg_sys::Snapshot {
    unsafe {
        if pg_sys::ActiveSnapshotSet() {
            pg_sys::GetActiveSnapshot()
        } else {
            pg_sys::GetTransactionSnapshot()
        }
    }
}

impl Drop for ScanState {
    /// A scan gives the stripe it holds to the kept ones (see `keeps_left`), for the next
    /// scans.
    fn drop(&mut self) {
        self.leave_stripe();
    }
}

impl ScanState {
    pub fn new(
        rel: pg_sys::Relation,
        snapshot: pg_sys::Snapshot,
        parallel: *const AtomicU64,
        bulk: bool,
    ) -> ScanState {
        Self::build(rel, snapshot, parallel, bulk, true, false, true)
    }

    /// A scan that fetches single rows by number ([`store_offset`](Self::store_offset)) and
    /// asks whether each is deleted itself (`storage::marks::is_deleted`, an index probe per
    /// row) rather than reading the table's whole delete mask: it has none, and its other
    /// paths must not be used. It writes none of this backend's rows first: its caller
    /// writes those it needs (`write::flush_if_holding`, `write::flush_for_snapshot`); a
    /// BEFORE UPDATE trigger's fetch of each row would otherwise write the new versions
    /// buffered so far as a stripe per row.
    ///
    /// It lists no stripe to begin with, and looks up the stripe of each row it is asked for
    /// ([`stripe_of_row`](Self::stripe_of_row)), unless it is a serializable transaction's
    /// MVCC read, whose read of the whole catalog is also its check of conflicts with the
    /// writers of the stripes it passes over (`storage::scan_catalog`).
    pub fn for_fetch(rel: pg_sys::Relation, snapshot: pg_sys::Snapshot) -> ScanState {
        let mut scan = Self::listing_as_asked(rel, snapshot, false);
        scan.keeps_left = usize::MAX;
        scan.row_at_a_time = true;
        scan
    }

    /// A bitmap heap scan's: it lists the stripes of the rows the bitmap names as it meets
    /// them, as [`for_fetch`](Self::for_fetch) does, and masks the rows its snapshot finds
    /// deleted, as [`new`](Self::new) does: a bitmap of a few rows reads a few stripes' catalog
    /// rows, not the table's.
    pub fn for_bitmap(rel: pg_sys::Relation, snapshot: pg_sys::Snapshot) -> ScanState {
        write::flush_relation(rel);
        Self::listing_as_asked(rel, snapshot, true)
    }

    /// A scan that lists the stripes of the rows it is asked for as it is asked
    /// ([`stripe_of_row`](Self::stripe_of_row)), with a delete mask (`mask`) or none; one
    /// that lists every stripe at once for a serializable transaction's MVCC read, whose read
    /// of the whole catalog is also its check of conflicts with the writers of the stripes
    /// it passes over (`storage::scan_catalog`).
    fn listing_as_asked(
        rel: pg_sys::Relation,
        snapshot: pg_sys::Snapshot,
        mask: bool,
    ) -> ScanState {
        let snapshot = if snapshot.is_null() {
            current_snapshot()
        } else {
            snapshot
        };
        // SAFETY: a valid snapshot of the caller's
        let kind = unsafe { (*snapshot).snapshot_type };
        if kind == pg_sys::SnapshotType::SNAPSHOT_MVCC && crate::storage::serializable_transaction()
        {
            return Self::build(rel, snapshot, std::ptr::null(), false, false, false, mask);
        }
        let storage_id = meta::storage_id(rel);
        let mask = if mask {
            DeleteMask::new(rel, storage_id, snapshot, 0)
        } else {
            DeleteMask::none(0)
        };
        let mut scan = Self::assemble(
            rel,
            Vec::new(),
            Vec::new(),
            storage_id,
            mask,
            std::ptr::null(),
            false,
        );
        scan.lookups = Some((0, kind));
        scan
    }

    /// A scan that also reads the stripes' zone summaries from the catalog, so that a
    /// [`VectorSkip`] can rule out whole stripes without reading their directories.
    pub fn with_summaries(
        rel: pg_sys::Relation,
        snapshot: pg_sys::Snapshot,
        parallel: *const AtomicU64,
        bulk: bool,
    ) -> ScanState {
        Self::build(rel, snapshot, parallel, bulk, true, true, true)
    }

    /// `flush`: write this backend's unwritten rows of `rel` first (not in a parallel
    /// worker, whose leader did).
    fn build(
        rel: pg_sys::Relation,
        snapshot: pg_sys::Snapshot,
        parallel: *const AtomicU64,
        bulk: bool,
        flush: bool,
        summaries: bool,
        mask: bool,
    ) -> ScanState {
        if flush && (parallel.is_null() || unsafe { pg_sys::ParallelWorkerNumber < 0 }) {
            write::flush_relation(rel);
        }
        let snapshot = if snapshot.is_null() {
            current_snapshot()
        } else {
            snapshot
        };
        let storage_id = meta::storage_id(rel);
        let (stripes, summaries) = if summaries {
            match storage_id {
                Some(id) => {
                    let list = catalog::stripe_list(id, snapshot, rel);
                    list.rows()
                        .zip(list.summaries())
                        .map(|(row, summary)| {
                            let summary = summary.as_ref().map(|s| {
                                s.clone().unwrap_or_else(|e| {
                                    crate::storage::corrupt(rel, format!("zone summary of the stripe at row {} in pgcol.stripe: {e}", row.first_row))
                                })
                            });
                            (row.clone(), summary)
                        })
                        .unzip()
                }
                None => (Vec::new(), Vec::new()),
            }
        } else {
            let stripes =
                storage_id.map_or_else(Vec::new, |id| catalog::stripes(id, snapshot, rel));
            let none = vec![None; stripes.len()];
            (stripes, none)
        };
        let mask = if mask {
            DeleteMask::new(rel, storage_id, snapshot, stripes.len())
        } else {
            DeleteMask::none(stripes.len())
        };
        Self::assemble(rel, stripes, summaries, storage_id, mask, parallel, bulk)
    }

    /// A scan of every row `stripes` (of `rel`'s storage, sorted by first row) store, deleted
    /// and absent ones too: VACUUM's read of the stripes it merges (`am::vacuum`). It writes
    /// none of this backend's rows.
    pub fn every_stored_row(rel: pg_sys::Relation, stripes: Vec<StripeRow>) -> ScanState {
        let storage_id = meta::storage_id(rel);
        let none = vec![None; stripes.len()];
        let mask = DeleteMask::none(stripes.len());
        Self::assemble(rel, stripes, none, storage_id, mask, std::ptr::null(), true)
    }

    fn assemble(
        rel: pg_sys::Relation,
        stripes: Vec<StripeRow>,
        summaries: Vec<Option<StripeSummary>>,
        storage_id: Option<u64>,
        mask: DeleteMask,
        parallel: *const AtomicU64,
        bulk: bool,
    ) -> ScanState {
        let types_of = unsafe { (*rel).rd_att };
        let types = column_types(types_of);
        let natts = types.len();
        let first_ordinals: Vec<u64> = stripes
            .iter()
            .scan(0, |next, s| {
                let first = *next;
                *next += s.row_count;
                Some(first)
            })
            .collect();
        let total_rows = stripes.iter().map(|s| s.row_count).sum();
        ScanState {
            rel,
            relid: unsafe { (*rel).rd_id },
            types,
            types_of,
            stripes,
            storage_id,
            mask,
            deleted_positions: None,
            summaries,
            parallel,
            pos: None,
            stripe: None,
            decoded: DecodedVector::new(natts),
            row_at_a_time: false,
            lookups: None,
            scratch: Vec::new(),
            pages: PageReader::new(rel, bulk),
            buf: Vec::new(),
            range: None,
            analyze: None,
            total_rows,
            first_ordinals,
            bitmap_rows: Default::default(),
            sample_block: None,
            sample_done: false,
            wanted: None,
            skip: None,
            filter: None,
            order: None,
            vector_cursor: None,
            row_cursor: None,
            cursor_ids: 0,
            counters: ScanCounters::default(),
            keeps_left: 0,
        }
    }

    /// Gives the first [`SCAN_KEEPS`] stripes this scan loads to the ones this backend keeps,
    /// so that a query that reads a few stripes finds them next time without reading and
    /// parsing their directories again, while one that reads many pushes out no more than
    /// that.
    pub fn keep_first_stripes(&mut self) {
        self.keeps_left = SCAN_KEEPS;
    }

    /// Decodes only the columns marked in `wanted` (by attribute index); the others read as
    /// NULL.
    pub fn set_projection(&mut self, wanted: Vec<bool>) {
        self.decoded.set_wanted(Some(wanted.clone()));
        self.decoded.key = None;
        self.wanted = Some(wanted);
    }

    /// Reads only the vectors `skip` lets through ([`next_selected`](Self::next_selected)).
    pub fn set_skip(&mut self, skip: Box<dyn VectorSkip>) {
        self.skip = Some(skip);
    }

    /// Reads every vector again.
    pub fn clear_skip(&mut self) {
        self.skip = None;
    }

    /// Reads only the vectors that `skip` also lets through.
    pub fn add_skip(&mut self, skip: Box<dyn VectorSkip>) {
        self.skip = Some(match self.skip.take() {
            Some(first) => Box::new(BothSkips(first, skip)),
            None => skip,
        });
    }

    /// Returns only the rows `filter` selects ([`next_selected`](Self::next_selected)).
    pub fn set_filter(&mut self, filter: Box<dyn VectorFilter>) {
        self.filter = Some(filter);
    }

    /// The stripe counter of the parallel scan this one is part of (null: a serial scan).
    pub fn set_parallel(&mut self, shared: *const AtomicU64) {
        self.parallel = shared;
    }

    /// Vectors decoded so far, per column.
    pub fn decoded_per_column(&self) -> &[u64] {
        &self.decoded.decoded_count
    }

    pub fn bytes_read(&self) -> u64 {
        self.pages.bytes_read
    }

    pub fn restart(&mut self) {
        self.sample_block = None;
        self.sample_done = false;
        self.pos = None;
        self.vector_cursor = None;
        self.row_cursor = None;
    }

    /// A serial vector-at-a-time scan reads only the stripes of `order` (indexes into
    /// [`stripes`](Self::stripes)), in that order; `None`: every stripe in storage order.
    /// Restarts the scan.
    pub fn set_order(&mut self, order: Option<Vec<usize>>) {
        self.order = order.map(|order| {
            let mut rank = vec![usize::MAX; self.stripes.len()];
            for (p, &i) in order.iter().enumerate() {
                rank[i] = p;
            }
            (order, rank)
        });
        self.restart();
    }

    /// The stripe the last vector given came from.
    pub fn current_stripe(&self) -> Option<usize> {
        self.vector_cursor.as_ref().map(|c| c.stripe)
    }

    /// What stripe `i`'s catalog summary says of `column`: how many NULLs and its zone
    /// (`None` without a summary or a zone).
    pub fn stripe_facts(&self, i: usize, column: usize) -> Option<ColumnFacts<'_>> {
        let col = self.summaries.get(i)?.as_ref()?.columns.get(column)?;
        Some(ColumnFacts {
            nulls: col.null_count as usize,
            zone: col.zone.as_ref(),
        })
    }

    /// The deleted (and absent) rows of stripe `i`, ascending.
    fn deleted_in(&mut self, i: usize) -> &[u64] {
        self.mask.of_stripe(&self.stripes, i)
    }

    /// The stored positions of the deleted rows of stripe `i`, ascending (loads the stripe if
    /// it has any).
    fn deleted_positions(&mut self, i: usize) -> &[u64] {
        let first_row = self.stripes[i].first_row;
        if self.deleted_positions.as_ref().map(|d| d.0) != Some(first_row) {
            let offsets: Vec<u64> = self.deleted_in(i).iter().map(|r| r - first_row).collect();
            let mut positions: Vec<u64> = offsets
                .into_iter()
                .map(|o| self.position_of(i, o))
                .collect();
            positions.sort_unstable();
            self.deleted_positions = Some((first_row, positions));
        }
        &self.deleted_positions.as_ref().unwrap().1
    }

    /// Whether the row stripe `i` stores at `position` is deleted.
    fn stored_row_deleted(&mut self, i: usize, position: u64) -> bool {
        if self.deleted_in(i).is_empty() {
            return false;
        }
        let row = self.stripes[i].first_row + self.offset_of(i, position);
        self.mask.hides(&self.stripes, i, row)
    }

    /// The rows of vector `v` of stripe `i` that are deleted, as their positions within the
    /// vector, ascending (stripe `i` is loaded only if it has any).
    fn deleted_in_vector(&mut self, i: usize, v: usize) -> impl Iterator<Item = usize> + '_ {
        let lo = (v * pg_columnar_codec::MAX_ROWS) as u64;
        let hi = lo + pg_columnar_codec::MAX_ROWS as u64;
        let positions: &[u64] = if self.deleted_in(i).is_empty() {
            &[]
        } else {
            self.deleted_positions(i)
        };
        let k = positions.partition_point(|&p| p < lo);
        positions[k..]
            .iter()
            .take_while(move |&&p| p < hi)
            .map(move |&p| (p - lo) as usize)
    }

    /// Whether vector `v` of stripe `i` holds a deleted row.
    fn vector_has_deleted(&mut self, i: usize, v: usize) -> bool {
        self.deleted_in_vector(i, v).next().is_some()
    }

    /// Takes the deleted rows of vector `v` of stripe `i` out of `selection`.
    fn remove_deleted(&mut self, i: usize, v: usize, selection: &mut Selection) {
        self.deleted_in_vector(i, v)
            .for_each(|r| selection.unset(r));
    }

    /// Loads stripe `i` if it is not the one loaded. A fetch scan copies it from the stripes
    /// kept by earlier fetches, and keeps the one it leaves (`read::keep`).
    fn load(&mut self, i: usize) {
        let row = self.stripes[i].clone();
        if self.stripe.as_ref().map(|s| s.row.first_row) != Some(row.first_row) {
            self.leave_stripe();
            self.stripe =
                Some(read::kept(&row).unwrap_or_else(|| LoadedStripe::load(&mut self.pages, row)));
        }
    }

    /// Gives the stripe this scan holds to the kept ones while it may keep more.
    fn leave_stripe(&mut self) {
        if let Some(old) = self.stripe.take() {
            if self.keeps_left > 0 {
                self.keeps_left -= 1;
                read::keep(old);
            }
        }
    }

    /// Stores the row at stripe `i`, row `r` into `slot`.
    pub fn store(&mut self, i: usize, r: u64, slot: *mut pg_sys::TupleTableSlot) {
        let how = if self.row_at_a_time {
            Decode::Fetched
        } else {
            Decode::Whole
        };
        self.store_row(i, r, slot, how, None)
    }

    /// [`store`](Self::store), decoding the row alone (one value of each column) unless its
    /// vector is held: for a caller that knows no other row of the vector follows
    /// (PgcolTopN's chosen rows).
    pub fn store_alone(&mut self, i: usize, r: u64, slot: *mut pg_sys::TupleTableSlot) {
        self.store_row(i, r, slot, Decode::Alone, None)
    }

    /// [`store`](Self::store) for one of the rows of its vector a node chose, `chosen`
    /// (named by `id`, from [`selection_id`](Self::selection_id)): the vector is decoded
    /// and only those rows laid out as Datums (PgcolTopN's rows that share a vector).
    pub fn store_chosen(
        &mut self,
        i: usize,
        r: u64,
        slot: *mut pg_sys::TupleTableSlot,
        chosen: &Selection,
        id: u64,
    ) {
        self.store_row(i, r, slot, Decode::Selected, Some((id, chosen)))
    }

    /// A new id for a selection of rows to store, unlike any this scan gave before.
    pub fn selection_id(&mut self) -> u64 {
        self.cursor_ids += 1;
        self.cursor_ids
    }

    /// [`store`](Self::store) as `how` says; `chosen`: the selection [`Decode::Selected`]
    /// lays out (`None`: the row cursor's).
    fn store_row(
        &mut self,
        i: usize,
        r: u64,
        slot: *mut pg_sys::TupleTableSlot,
        how: Decode,
        chosen: Selected<'_>,
    ) {
        let desc = unsafe { (*slot).tts_tupleDescriptor };
        if desc != self.types_of {
            self.types = column_types(desc);
            self.types_of = desc;
            self.decoded = DecodedVector::new(self.types.len());
            self.decoded.set_wanted(self.wanted.clone());
        }
        self.load(i);
        let v = (r / pg_columnar_codec::MAX_ROWS as u64) as usize;
        let in_vector = (r % pg_columnar_codec::MAX_ROWS as u64) as usize;
        let stripe = self.stripe.as_mut().unwrap();
        let held = self.decoded.holds(stripe.row.first_row, v);
        match (held, how) {
            (Some(None), Decode::Fetched | Decode::Alone) => {}
            (Some(Some(held_row)), _) if held_row == in_vector => {}
            (None, Decode::Fetched) | (_, Decode::Alone) => {
                self.decoded.decode_row(
                    &mut self.pages,
                    stripe,
                    v,
                    in_vector,
                    &self.types,
                    &mut self.buf,
                    &mut self.scratch,
                );
                read::count_either(&ROW_DECODES, true);
            }
            _ => {
                if how == Decode::Fetched {
                    // a second row of the vector right after the first: the next ones are
                    // likely near
                    read::count_either(&ROW_DECODES, false);
                }
                let selected = if how == Decode::Selected {
                    chosen.or_else(|| self.row_cursor.as_ref().map(|c| (c.id, &c.selection)))
                } else {
                    None
                };
                self.decoded.decode(
                    &mut self.pages,
                    stripe,
                    v,
                    &self.types,
                    &mut self.buf,
                    selected,
                );
            }
        }
        // a sorted stripe's row keeps the number it was inserted with
        let offset = stripe
            .row_order(&mut self.pages, &mut self.buf)
            .map_or(r, |o| o.offset_of(r));
        let row = &self.stripes[i];
        unsafe {
            self.decoded.store(
                (r % pg_columnar_codec::MAX_ROWS as u64) as usize,
                slot,
                row.first_row + offset,
                self.relid,
                row,
            )
        };
    }

    /// The index in `stripes` of the stripe that holds row `row`, for `snapshot`: that of the
    /// scan ([`for_fetch`](Self::for_fetch)); another's (a fetch of the row under SnapshotAny
    /// from an MVCC fetch's scan) finds only the stripes listed already. A fetch scan that
    /// does not list its stripe yet looks it up through the catalog's index
    /// (`catalog::stripe_holding`), so a fetch of one row costs the same however many
    /// stripes the table has; after [`FETCH_LOOKUPS`] lookups it lists every stripe, one
    /// read of the catalog, as an index scan over many stripes would otherwise look up each.
    pub fn stripe_of_row(&mut self, row: u64, snapshot: pg_sys::Snapshot) -> Option<usize> {
        // (a row in a listed stripe's range that it does not hold is absent: in no stripe)
        if let Some(i) = read::stripe_index_of_position(&self.stripes, row) {
            return read::stripe_index_of(&self.stripes, row).map(|_| i);
        }
        let (Some((made, kind)), Some(storage_id)) = (self.lookups, self.storage_id) else {
            return None;
        };
        // SAFETY: a valid snapshot of the caller's
        if unsafe { (*snapshot).snapshot_type } != kind {
            return None;
        }
        if made >= FETCH_LOOKUPS {
            self.stripes = catalog::stripes(storage_id, snapshot, self.rel);
            self.lookups = None;
            self.mask = self.mask.relisted(self.stripes.len());
            self.summaries = vec![None; self.stripes.len()];
        } else {
            self.lookups = Some((made + 1, kind));
            let found = catalog::stripe_holding(storage_id, row, snapshot)?;
            // a dirty reading changes as transactions end: the stripe read now replaces any
            // listed one it overlaps (a VACUUM's stripe for the old ones it merged)
            let end = found.first_row + found.row_count;
            if self
                .stripes
                .iter()
                .any(|s| s.first_row < end && found.first_row < s.first_row + s.row_count)
            {
                self.stripes
                    .retain(|s| s.first_row + s.row_count <= found.first_row || s.first_row >= end);
                self.mask = self.mask.relisted(self.stripes.len());
                self.summaries = vec![None; self.stripes.len()];
            }
            let at = self
                .stripes
                .partition_point(|s| s.first_row < found.first_row);
            self.stripes.insert(at, found);
            self.mask.stripe_listed(at);
            self.summaries.insert(at, None);
        }
        read::stripe_index_of(&self.stripes, row)
    }

    /// Stores the row of stripe `i` whose row number is the stripe's first plus `offset`
    /// (its insert offset) into `slot`.
    pub fn store_offset(&mut self, i: usize, offset: u64, slot: *mut pg_sys::TupleTableSlot) {
        let position = self.position_of(i, offset);
        self.store(i, position, slot)
    }

    /// The values of `columns` (0-based, those the stripe stores) of row `row`, decoded alone
    /// and given to `out` with their column, whatever this scan's snapshot masks: what a
    /// slot holding a row whose values are read when asked needs (`slot::store_deferred`).
    /// Returns the end of the columns given (`columns.end`, or the count the stripe stores
    /// if lower; the relation's later columns are its missing-attribute defaults), `None` if
    /// no stripe of this scan holds the row. Leaves the vector this scan holds decoded as it
    /// was.
    pub fn row_columns(
        &mut self,
        row: u64,
        snapshot: pg_sys::Snapshot,
        columns: std::ops::Range<usize>,
        desc: pg_sys::TupleDesc,
        out: &mut dyn FnMut(usize, pg_sys::Datum, bool),
    ) -> Option<usize> {
        let i = self.stripe_of_row(row, snapshot)?;
        let position = self.position_of(i, row - self.stripes[i].first_row);
        let types = column_types(desc);
        let mut decoded = DecodedVector::new(types.len());
        decoded.set_wanted(Some(
            (0..types.len()).map(|c| columns.contains(&c)).collect(),
        ));
        let stripe = self.stripe.as_mut().expect("loaded by position_of");
        let (v, r) = (
            (position / pg_columnar_codec::MAX_ROWS as u64) as usize,
            (position % pg_columnar_codec::MAX_ROWS as u64) as usize,
        );
        decoded.decode_row(
            &mut self.pages,
            stripe,
            v,
            r,
            &types,
            &mut self.buf,
            &mut self.scratch,
        );
        let end = columns.end.min(decoded.stored_columns).max(columns.start);
        for c in columns.start..end {
            out(c, decoded.columns[c].datums[0], decoded.columns[c].nulls[0]);
        }
        Some(end)
    }

    /// The row order of stripe `i` (`None`: stored in insert order), loading the stripe.
    fn row_order(&mut self, i: usize) -> Option<&RowOrder> {
        self.load(i);
        self.stripe
            .as_mut()
            .unwrap()
            .row_order(&mut self.pages, &mut self.buf)
    }

    /// Where stripe `i` stores the row of insert offset `offset`.
    fn position_of(&mut self, i: usize, offset: u64) -> u64 {
        self.row_order(i).map_or(offset, |o| o.position_of(offset))
    }

    /// The insert offset of the row stripe `i` stores at `position`.
    fn offset_of(&mut self, i: usize, position: u64) -> u64 {
        self.row_order(i)
            .map_or(position, |o| o.offset_of(position))
    }

    /// The next stripe of a parallel scan, or of a serial one (in [`set_order`](Self::set_order)'s
    /// order if given).
    fn next_stripe(&self, after: Option<usize>) -> Option<usize> {
        if let Some((order, rank)) = &self.order {
            let p = after.map_or(0, |i| rank[i] + 1);
            return order.get(p).copied();
        }
        let i = if self.parallel.is_null() {
            after.map_or(0, |i| i + 1)
        } else {
            unsafe { (*self.parallel).fetch_add(1, Ordering::SeqCst) as usize }
        };
        (i < self.stripes.len()).then_some(i)
    }

    /// Whether the row stripe `i` stores at `r` is in the TID range.
    fn in_range(&mut self, i: usize, r: u64) -> bool {
        let Some((lo, hi)) = self.range else {
            return true;
        };
        let n = self.stripes[i].first_row + self.offset_of(i, r);
        lo <= n && n <= hi
    }

    /// Moves to the next row (forward or backward) and returns its position.
    fn step(&mut self, forward: bool) -> Option<(usize, u64)> {
        loop {
            let next = if forward {
                match self.pos {
                    Some((i, r)) if r + 1 < self.stripes[i].row_count => Some((i, r + 1)),
                    Some((i, _)) => self.next_stripe(Some(i)).map(|j| (j, 0)),
                    None => self.next_stripe(None).map(|j| (j, 0)),
                }
            } else {
                match self.pos {
                    Some((i, r)) if r > 0 => Some((i, r - 1)),
                    Some((0, _)) => None,
                    Some((i, _)) => Some((i - 1, self.stripes[i - 1].row_count - 1)),
                    None => self
                        .stripes
                        .len()
                        .checked_sub(1)
                        .map(|j| (j, self.stripes[j].row_count - 1)),
                }
            };
            // Off either end the position is "outside the table", as heap's `rs_inited = false`:
            // a step back after running off the end starts at the last row, not the one before.
            let Some((i, r)) = next else {
                self.pos = None;
                return None;
            };
            self.pos = Some((i, r));
            if self.stripes[i].row_count == 0 {
                continue;
            }
            if let Some((lo, hi)) = self.range {
                let s = self.stripes[i].clone();
                // skip whole stripes outside the range
                if s.first_row + s.row_count <= lo || s.first_row > hi {
                    self.pos = Some((i, if forward { s.row_count - 1 } else { 0 }));
                    if !forward && i == 0 {
                        self.pos = None;
                        return None;
                    }
                    continue;
                }
                if !self.in_range(i, r) {
                    continue;
                }
            }
            if self.stored_row_deleted(i, r) {
                continue;
            }
            return Some((i, r));
        }
    }

    /// Enters stripe `i` of a vector-at-a-time scan: counts it, and with a [`VectorSkip`]
    /// decides which of its vectors to read (from the catalog summary alone if that rules the
    /// whole stripe out, else from the directory).
    fn enter_stripe(&mut self, i: usize) -> StripeCursor {
        let vectors = self.stripes[i]
            .row_count
            .div_ceil(pg_columnar_codec::MAX_ROWS as u64);
        self.counters.stripes += 1;
        self.counters.vectors += vectors;
        let mut survivors = vec![true; vectors as usize];
        if let Some(skip) = self.skip.as_mut() {
            if let Some(summary) = self.summaries[i].as_ref() {
                if !skip.may_match_stripe(summary, self.stripes[i].row_count as usize) {
                    self.counters.stripes_skipped += 1;
                    self.counters.stripes_unread += 1;
                    self.counters.vectors_skipped += vectors;
                    return StripeCursor {
                        stripe: i,
                        survivors: Vec::new(),
                        next: 0,
                    };
                }
            }
            self.load(i);
            let dir = &self.stripe.as_ref().unwrap().dir;
            let skip = self.skip.as_mut().unwrap();
            for (v, s) in survivors.iter_mut().enumerate() {
                *s = skip.may_match(dir, v);
            }
            let skipped = survivors.iter().filter(|&&s| !s).count() as u64;
            self.counters.vectors_skipped += skipped;
            if skipped == vectors {
                self.counters.stripes_skipped += 1;
            }
        }
        StripeCursor {
            stripe: i,
            survivors,
            next: 0,
        }
    }

    /// The next vector (stripe index, vector index) a vector-at-a-time scan reads.
    /// The next vector to read; with `answer`, stripes and vectors whose every row the
    /// quals select are offered to it first, and not read if it takes them.
    fn next_vector<'a>(
        &mut self,
        mut answer: Option<&mut (dyn MetadataAnswer + 'a)>,
    ) -> Option<(usize, usize)> {
        loop {
            let next = self.vector_cursor.as_mut().and_then(|c| {
                while c.next < c.survivors.len() {
                    c.next += 1;
                    if c.survivors[c.next - 1] {
                        return Some((c.stripe, c.next - 1));
                    }
                }
                None
            });
            if let Some((i, v)) = next {
                if answer
                    .as_deref_mut()
                    .is_some_and(|a| self.answer_vector(i, v, a))
                {
                    continue;
                }
                return Some((i, v));
            }
            let i = self.next_stripe(self.vector_cursor.as_ref().map(|c| c.stripe))?;
            if self.stripes[i].row_count == 0 {
                self.vector_cursor = Some(StripeCursor {
                    stripe: i,
                    survivors: Vec::new(),
                    next: 0,
                });
                continue;
            }
            if let Some(a) = answer.as_deref_mut() {
                if self.answer_stripe(i, a) {
                    self.vector_cursor = Some(StripeCursor {
                        stripe: i,
                        survivors: Vec::new(),
                        next: 0,
                    });
                    continue;
                }
            }
            let cursor = self.enter_stripe(i);
            if answer.is_some() && cursor.survivors.contains(&true) {
                // the directory, for the vectors' metadata
                self.load(i);
            }
            self.vector_cursor = Some(cursor);
        }
    }

    /// Offers vector `v` of stripe `i` (the loaded one) to `answer` if its directory proves
    /// that the quals select every row and none is deleted; true if it took the vector.
    fn answer_vector(&mut self, i: usize, v: usize, answer: &mut dyn MetadataAnswer) -> bool {
        let loaded = self
            .stripe
            .as_ref()
            .is_some_and(|s| s.row.first_row == self.stripes[i].first_row);
        if !loaded || self.vector_has_deleted(i, v) {
            return false;
        }
        let dir = &self.stripe.as_ref().unwrap().dir;
        let covered = self.skip.as_mut().is_none_or(|skip| skip.covers(dir, v));
        if covered
            && answer.answer(dir.vector_rows(v), &|col| {
                column_facts_of_vector(dir, v, col)
            })
        {
            self.counters.vectors_answered += 1;
            return true;
        }
        false
    }

    /// Offers stripe `i` to `answer` if its catalog summary proves that the quals select
    /// every row (or there are none); true if it took the stripe.
    fn answer_stripe(&mut self, i: usize, answer: &mut dyn MetadataAnswer) -> bool {
        let rows = self.stripes[i].row_count as usize;
        let covered = match (
            self.skip.as_mut(),
            self.summaries.get(i).and_then(|s| s.as_ref()),
        ) {
            (None, _) => true,
            (Some(skip), Some(summary)) => skip.covers_stripe(summary, rows),
            (Some(_), None) => false,
        };
        // (asked after the summary: a stripe the quals do not cover has no deletions read)
        if !covered || !self.deleted_in(i).is_empty() {
            return false;
        }
        let summary = self.summaries.get(i).and_then(|s| s.as_ref());
        let facts = |c: usize| {
            let col = summary?.columns.get(c)?;
            Some(ColumnFacts {
                nulls: col.null_count as usize,
                zone: col.zone.as_ref(),
            })
        };
        if !answer.answer(rows, &facts) {
            return false;
        }
        let vectors = self.stripes[i]
            .row_count
            .div_ceil(pg_columnar_codec::MAX_ROWS as u64);
        self.counters.stripes += 1;
        self.counters.vectors += vectors;
        self.counters.stripes_answered += 1;
        self.counters.vectors_answered += vectors;
        true
    }

    /// Unpacks vector `v` of stripe `i` of each of `columns` not in `out` yet into `out`. A
    /// column the stripe does not store (added since) is the column's default on every row,
    /// taken from the slot's missing-attribute values; dropped columns are left out.
    fn unpack_columns(
        &mut self,
        i: usize,
        v: usize,
        slot: *mut pg_sys::TupleTableSlot,
        columns: &[usize],
        out: &mut Vec<(usize, Unpacked)>,
    ) {
        self.load(i);
        let stripe = self.stripe.as_mut().unwrap();
        let rows = stripe.dir.vector_rows(v);
        let stored = stripe.dir.columns.len();
        for &c in columns {
            if c >= self.types.len()
                || self.types[c] == ColumnType::Dropped
                || out.iter().any(|(k, _)| *k == c)
            {
                continue;
            }
            if c < stored {
                out.push((
                    c,
                    stripe.unpack(&mut self.pages, c, v, self.types[c], &mut self.buf),
                ));
                self.decoded.decoded_count[c] += 1;
            } else {
                let m = unsafe { missing_vector(slot, c, self.types[c], rows) };
                out.push((
                    c,
                    Unpacked {
                        rows: m.rows,
                        nulls: m.nulls,
                        form: Form::Values(m.values),
                    },
                ));
            }
        }
    }

    /// The rows of vector `v` of stripe `i` that the [`VectorFilter`] selects (all rows
    /// without one), and the filter columns' vectors, unpacked (only those are read).
    fn filter_vector(
        &mut self,
        i: usize,
        v: usize,
        slot: *mut pg_sys::TupleTableSlot,
    ) -> (Selection, Vec<(usize, Unpacked)>) {
        self.load(i);
        let rows = self.stripe.as_ref().unwrap().dir.vector_rows(v);
        // every filter part is a part of the skip expression too (plan.rs), so where that
        // covers the vector, the filter would select every row
        let covered = self.filter.is_some()
            && self
                .skip
                .as_mut()
                .is_some_and(|skip| skip.covers(&self.stripe.as_ref().unwrap().dir, v));
        if covered {
            self.counters.vectors_covered += 1;
        }
        let Some(mut filter) = (if covered { None } else { self.filter.take() }) else {
            let mut selection = Selection::all(rows);
            self.remove_deleted(i, v, &mut selection);
            return (selection, Vec::new());
        };
        let mut unpacked = Vec::new();
        self.unpack_columns(i, v, slot, filter.columns(), &mut unpacked);
        let stripe: &LoadedStripe = self.stripe.as_ref().unwrap();
        let selection = filter.select(&lookup_in(stripe, &unpacked), stripe.serial, rows);
        self.filter = Some(filter);
        let selection = selection.unwrap_or_else(|| {
            crate::storage::corrupt(
                self.pages.rel(),
                format!(
                    "stripe at row {}: a filter column's vector {v} is not of its type",
                    self.stripes[i].first_row
                ),
            )
        });
        self.counters.rows_filtered += (rows - selection.count()) as u64;
        if selection.is_empty() {
            self.counters.vectors_filtered += 1;
        }
        let mut selection = selection;
        self.remove_deleted(i, v, &mut selection);
        (selection, unpacked)
    }

    /// [`filter_vector`](Self::filter_vector), then the selected rows of the filter columns
    /// laid out as Datums (the other columns are decoded when a row is stored, so a vector
    /// without a selected row costs the filter columns' decoding alone).
    fn select(
        &mut self,
        i: usize,
        v: usize,
        slot: *mut pg_sys::TupleTableSlot,
        id: u64,
    ) -> Selection {
        let (selection, unpacked) = self.filter_vector(i, v, slot);
        if !selection.is_empty() && !unpacked.is_empty() {
            let stripe = self.stripe.as_ref().unwrap();
            let stored = stripe.dir.columns.len();
            // hand the filter's vectors to the row store, which would decode them again
            self.decoded.prefill(
                stripe,
                v,
                &self.types,
                unpacked.into_iter().filter(|(c, _)| *c < stored).collect(),
                Some((id, &selection)),
            );
        }
        selection
    }

    /// Vector at a time without rows (an aggregate over the scan): gives `consume` the next
    /// vector's selection (never empty), a lookup of its `columns`, unpacked with their
    /// contexts, and the serial number of the stripe load (which names the stripe's shared
    /// dictionaries); false at the end. `slot` gives the defaults of columns added since a
    /// stripe was written.
    ///
    /// With `answer`, whole stripes and vectors that the quals are proven to select every
    /// row of (by the skip expression, which must then hold every qual of the scan, as it
    /// does when every qual is vectorized) are offered to it first (see [`MetadataAnswer`]).
    pub fn next_batch<'a>(
        &mut self,
        slot: *mut pg_sys::TupleTableSlot,
        columns: &[usize],
        consume: &mut dyn for<'v> FnMut(&Selection, &ColumnLookup<'v>, u64),
        mut answer: Option<&mut (dyn MetadataAnswer + 'a)>,
    ) -> bool {
        loop {
            let Some((i, v)) = self.next_vector(answer.as_deref_mut()) else {
                return false;
            };
            let (selection, mut unpacked) = self.filter_vector(i, v, slot);
            if selection.is_empty() {
                continue;
            }
            self.unpack_columns(i, v, slot, columns, &mut unpacked);
            let stripe = self.stripe.as_ref().unwrap();
            consume(&selection, &lookup_in(stripe, &unpacked), stripe.serial);
            return true;
        }
    }

    /// For a node that picks the vectors it reads (PgcolTopN): whether stripe `i` may
    /// hold a row the quals select, by its catalog summary. Counts the stripe, and if not,
    /// counts it skipped.
    pub fn stripe_may_match(&mut self, i: usize) -> bool {
        let rows = self.stripes[i].row_count;
        let vectors = rows.div_ceil(pg_columnar_codec::MAX_ROWS as u64);
        self.counters.stripes += 1;
        self.counters.vectors += vectors;
        let summary = self.summaries.get(i).and_then(|s| s.as_ref());
        let may = rows > 0
            && match (self.skip.as_mut(), summary) {
                (Some(skip), Some(summary)) => skip.may_match_stripe(summary, rows as usize),
                _ => true,
            };
        if !may {
            self.skip_unread(vectors);
        }
        may
    }

    /// Counts a stripe that [`stripe_may_match`](Self::stripe_may_match) let through as
    /// skipped after all, without its directory read, and its `vectors`.
    pub fn skip_unread(&mut self, vectors: u64) {
        self.counters.stripes_skipped += 1;
        self.counters.stripes_unread += 1;
        self.counters.vectors_skipped += vectors;
    }

    /// The directory of stripe `i`, read if it is not the one loaded.
    pub fn directory(&mut self, i: usize) -> &StripeDirectory {
        self.load(i);
        &self.stripe.as_ref().unwrap().dir
    }

    /// Gives `f` the shared dictionary of column `c` of stripe `i` (in a context; none if the
    /// stripe has none or does not store the column), whether the column has NULLs there,
    /// and the serial number that names the dictionary. A stripe other than the loaded one
    /// is not loaded: its directory is walked only as far as the column.
    pub fn with_stripe_dictionary<R>(
        &mut self,
        i: usize,
        c: usize,
        f: impl FnOnce(&ColumnContext<'_>, bool, u64) -> R,
    ) -> R {
        let row = self.stripes[i].clone();
        if let Some(stripe) = self
            .stripe
            .as_mut()
            .filter(|s| s.row.first_row == row.first_row)
        {
            let Some(vectors) = stripe.dir.stored_vectors(c) else {
                return f(&ColumnContext::default(), true, stripe.serial);
            };
            let nulls = vectors.iter().any(|v| v.null_count > 0);
            stripe.read_context(&mut self.pages, c, &mut self.buf);
            let ctx = stripe.loaded_context(c);
            return f(
                &ColumnContext {
                    dictionary: ctx.dictionary,
                    ..Default::default()
                },
                nulls,
                stripe.serial,
            );
        }
        let (dictionary, nulls, serial) =
            super::read::column_dictionary(&mut self.pages, row, c, &mut self.buf);
        f(
            &ColumnContext {
                dictionary: dictionary.as_deref(),
                ..Default::default()
            },
            nulls,
            serial,
        )
    }

    /// For a node that picks the vectors it reads: vector `v` of stripe `i`, as
    /// [`next_batch`](Self::next_batch) gives vectors to `consume`; false, without calling
    /// it, if the quals' zone maps rule the vector out or the filter selects no row of it.
    /// Every vector asked for is counted; `skipped` ones (left out by the caller) too.
    pub fn read_vector(
        &mut self,
        i: usize,
        v: usize,
        slot: *mut pg_sys::TupleTableSlot,
        columns: &[usize],
        consume: &mut dyn for<'v> FnMut(&Selection, &ColumnLookup<'v>, u64),
    ) -> bool {
        self.load(i);
        let dir = &self.stripe.as_ref().unwrap().dir;
        if let Some(skip) = self.skip.as_mut() {
            if !skip.may_match(dir, v) {
                self.counters.vectors_skipped += 1;
                return false;
            }
        }
        let (selection, mut unpacked) = self.filter_vector(i, v, slot);
        if selection.is_empty() {
            return false;
        }
        self.unpack_columns(i, v, slot, columns, &mut unpacked);
        let stripe = self.stripe.as_ref().unwrap();
        consume(&selection, &lookup_in(stripe, &unpacked), stripe.serial);
        true
    }

    /// Counts `vectors` of the loaded stripe that a node picking its own vectors left out.
    pub fn skip_vectors(&mut self, vectors: u64) {
        self.counters.vectors_skipped += vectors;
    }

    /// Forward, vector at a time (the custom scan): stores the next row that the skip and
    /// the filter let through into `slot`; false at the end.
    pub fn next_selected(&mut self, slot: *mut pg_sys::TupleTableSlot) -> bool {
        loop {
            if let Some(c) = self.row_cursor.as_mut() {
                if let Some(r) = c.selection.next_from(c.next) {
                    c.next = r + 1;
                    let (i, row) = (
                        c.stripe,
                        (c.vector * pg_columnar_codec::MAX_ROWS + r) as u64,
                    );
                    self.store_row(i, row, slot, Decode::Selected, None);
                    return true;
                }
                self.row_cursor = None;
            }
            let Some((i, v)) = self.next_vector(None) else {
                unsafe { pg_sys::ExecClearTuple(slot) };
                return false;
            };
            let id = self.selection_id();
            let selection = self.select(i, v, slot, id);
            self.row_cursor = Some(RowCursor {
                stripe: i,
                vector: v,
                selection,
                next: 0,
                id,
            });
        }
    }

    pub fn next(&mut self, forward: bool, slot: *mut pg_sys::TupleTableSlot) -> bool {
        match self.step(forward) {
            Some((i, r)) => {
                self.store(i, r, slot);
                true
            }
            None => {
                unsafe { pg_sys::ExecClearTuple(slot) };
                false
            }
        }
    }

    /// Bitmap scan: takes the rows of TID block `block` at `offsets` (every offset if
    /// `None`, a lossy page) that this scan's snapshot sees; returns whether there are any.
    pub fn bitmap_block(
        &mut self,
        block: u32,
        offsets: Option<&[pg_sys::OffsetNumber]>,
        snapshot: pg_sys::Snapshot,
    ) -> bool {
        self.bitmap_rows.clear();
        let base = block as u64 * tid::ROWS_PER_BLOCK;
        let rows: Vec<u64> = match offsets {
            Some(offsets) => offsets
                .iter()
                .filter(|&&o| o >= 1 && o as u64 <= tid::ROWS_PER_BLOCK)
                .map(|&o| base + o as u64 - 1)
                .collect(),
            None => (0..tid::ROWS_PER_BLOCK).map(|o| base + o).collect(),
        };
        // every stripe listed first: listing one moves the indexes of those after it
        for &row in &rows {
            self.stripe_of_row(row, snapshot);
        }
        for row in rows {
            if let Some(i) = super::read::stripe_index_of(&self.stripes, row) {
                if !self.mask.hides(&self.stripes, i, row) {
                    self.bitmap_rows
                        .push_back((i, row - self.stripes[i].first_row));
                }
            }
        }
        !self.bitmap_rows.is_empty()
    }

    /// TABLESAMPLE: the TID blocks the visible stripes' row numbers reach into, from block 0:
    /// what a sampling method picks blocks among (a block's rows are consecutive row numbers,
    /// [`tid::ROWS_PER_BLOCK`] of them, as its offsets).
    fn sample_blocks(&self) -> u32 {
        let end = self
            .stripes
            .iter()
            .map(|s| s.first_row + s.row_count)
            .max()
            .unwrap_or(0);
        end.div_ceil(tid::ROWS_PER_BLOCK)
            .min(pg_sys::InvalidBlockNumber as u64) as u32
    }

    /// TABLESAMPLE: moves to the next block the sampling method of `state` picks (SYSTEM's
    /// hash of the block number, for one), or, for a method that picks rows only (BERNOULLI),
    /// the next block in order; takes the rows of it this scan's snapshot sees. False when
    /// there are no more blocks.
    ///
    /// # Safety
    /// `state` is the sample scan's node, with its method's routine.
    pub unsafe fn sample_next_block(&mut self, state: *mut pg_sys::SampleScanState) -> bool {
        let nblocks = self.sample_blocks();
        let block = match (*(*state).tsmroutine).NextSampleBlock {
            Some(next) => Some(next(state, nblocks)).filter(|&b| b != pg_sys::InvalidBlockNumber),
            None if self.sample_done => None,
            None => Some(self.sample_block.map_or(0, |b| b + 1)).filter(|&b| b < nblocks),
        };
        self.sample_block = block;
        self.sample_done = block.is_none();
        match block {
            Some(b) => {
                self.bitmap_block(b, None, (*(*state).ss.ps.state).es_snapshot);
                true
            }
            None => {
                self.bitmap_rows.clear();
                false
            }
        }
    }

    /// TABLESAMPLE: stores the next row of the current block that the sampling method picks
    /// (it names offsets, ascending; an offset with no visible row is passed over, as heap
    /// passes over a dead tuple); false when it picks no more in this block.
    ///
    /// # Safety
    /// As [`sample_next_block`](Self::sample_next_block); `slot` a slot of the relation.
    pub unsafe fn sample_next_row(
        &mut self,
        state: *mut pg_sys::SampleScanState,
        slot: *mut pg_sys::TupleTableSlot,
    ) -> bool {
        let Some(block) = self.sample_block else {
            return false;
        };
        let next = (*(*state).tsmroutine)
            .NextSampleTuple
            .expect("a sampling method picks rows");
        loop {
            let offset = next(state, block, tid::ROWS_PER_BLOCK as pg_sys::OffsetNumber);
            if offset == pg_sys::InvalidOffsetNumber || offset as u64 > tid::ROWS_PER_BLOCK {
                pg_sys::ExecClearTuple(slot);
                return false;
            }
            let row = block as u64 * tid::ROWS_PER_BLOCK + offset as u64 - 1;
            // the block's visible rows are in offset order: those before `row` were not picked
            while let Some(&(i, o)) = self.bitmap_rows.front() {
                let r = self.stripes[i].first_row + o;
                if r > row {
                    break;
                }
                self.bitmap_rows.pop_front();
                if r == row {
                    self.store_offset(i, o, slot);
                    return true;
                }
            }
        }
    }

    /// Bitmap scan: the next row of the current block.
    pub fn bitmap_next(&mut self, slot: *mut pg_sys::TupleTableSlot) -> bool {
        let Some((i, offset)) = self.bitmap_rows.pop_front() else {
            return false;
        };
        self.store_offset(i, offset, slot);
        true
    }

    /// ANALYZE: block `block` of `nblocks` stands for an equal share of the visible rows.
    pub fn analyze_block(&mut self, block: u32, nblocks: u32) {
        let n = nblocks.max(1) as u64;
        let lo = self.total_rows * block as u64 / n;
        let hi = self.total_rows * (block as u64 + 1) / n;
        self.analyze = Some(lo..hi);
    }

    /// ANALYZE: the next row of the current sample block (by ordinal among stored rows).
    /// Rows deleted for the snapshot are passed over (and counted in `dead`).
    pub fn analyze_next(&mut self, slot: *mut pg_sys::TupleTableSlot, dead: &mut f64) -> bool {
        loop {
            let Some(range) = self.analyze.as_mut() else {
                return false;
            };
            let Some(ordinal) = range.next() else {
                return false;
            };
            if ordinal >= self.total_rows {
                return false;
            }
            // the stripe holding the ordinal-th stored row: the last one starting at or before
            // it (a stripe of no rows starts where the next does, and partition_point passes it)
            let i = self
                .first_ordinals
                .partition_point(|&first| first <= ordinal)
                - 1;
            let position = ordinal - self.first_ordinals[i];
            if self.stored_row_deleted(i, position) {
                *dead += 1.0;
                continue;
            }
            self.store(i, position, slot);
            return true;
        }
    }
}

unsafe extern "C-unwind" fn drop_state(arg: *mut std::ffi::c_void) {
    let desc = arg as *mut ScanDesc;
    if !(*desc).state.is_null() {
        drop(Box::from_raw((*desc).state));
        (*desc).state = std::ptr::null_mut();
    }
}

/// Allocates a scan descriptor in the current memory context. Its Rust state is freed by
/// `scan_end`, or when the memory context goes away if the scan ended in an error.
pub unsafe fn begin(
    rel: pg_sys::Relation,
    snapshot: pg_sys::Snapshot,
    nkeys: i32,
    key: *mut pg_sys::ScanKeyData,
    pscan: pg_sys::ParallelTableScanDesc,
    flags: u32,
) -> pg_sys::TableScanDesc {
    let bulk = flags & pg_sys::ScanOptions::SO_TYPE_SEQSCAN != 0;
    use pg_sys::ScanOptions::*;
    if flags & (SO_TYPE_SEQSCAN | SO_TYPE_SAMPLESCAN | SO_TYPE_TIDRANGESCAN | SO_TYPE_BITMAPSCAN)
        != 0
    {
        // before the stripes are listed (`super::ssi`)
        super::ssi::lock_relation(rel, snapshot);
    }
    let shared = if pscan.is_null() {
        std::ptr::null()
    } else {
        &(*(pscan as *mut ParallelShared)).next_stripe as *const AtomicU64
    };
    let state = if flags & SO_TYPE_BITMAPSCAN != 0 && pscan.is_null() {
        ScanState::for_bitmap(rel, snapshot)
    } else {
        ScanState::new(rel, snapshot, shared, bulk)
    };
    let desc = pg_sys::palloc0(std::mem::size_of::<ScanDesc>()) as *mut ScanDesc;
    (*desc).base.rs_rd = rel;
    (*desc).base.rs_snapshot = snapshot;
    (*desc).base.rs_nkeys = nkeys;
    (*desc).base.rs_key = key;
    (*desc).base.rs_flags = flags;
    (*desc).base.rs_parallel = pscan;
    (*desc).state = Box::into_raw(Box::new(state));
    let cb = pg_sys::palloc0(std::mem::size_of::<pg_sys::MemoryContextCallback>())
        as *mut pg_sys::MemoryContextCallback;
    (*cb).func = Some(drop_state);
    (*cb).arg = desc as *mut std::ffi::c_void;
    pg_sys::MemoryContextRegisterResetCallback(pg_sys::CurrentMemoryContext, cb);
    desc as pg_sys::TableScanDesc
}

pub unsafe fn state<'a>(scan: pg_sys::TableScanDesc) -> &'a mut ScanState {
    let desc = scan as *mut ScanDesc;
    if (*desc).state.is_null() {
        pgrx::error!("pg_columnar: scan used after it ended");
    }
    &mut *(*desc).state
}

pub unsafe fn end(scan: pg_sys::TableScanDesc) {
    drop_state(scan as *mut std::ffi::c_void);
    if (*scan).rs_flags & pg_sys::ScanOptions::SO_TEMP_SNAPSHOT != 0 {
        pg_sys::UnregisterSnapshot((*scan).rs_snapshot);
    }
}

pub unsafe fn rescan(scan: pg_sys::TableScanDesc) {
    state(scan).restart();
}

pub unsafe fn getnextslot(
    scan: pg_sys::TableScanDesc,
    direction: pg_sys::ScanDirection::Type,
    slot: *mut pg_sys::TupleTableSlot,
) -> bool {
    let forward = direction != pg_sys::ScanDirection::BackwardScanDirection;
    state(scan).next(forward, slot)
}

pub unsafe fn set_tidrange(
    scan: pg_sys::TableScanDesc,
    mintid: pg_sys::ItemPointer,
    maxtid: pg_sys::ItemPointer,
) {
    let st = state(scan);
    let lo = tid::block_of(&*mintid) as u64 * tid::ROWS_PER_BLOCK
        + ((*mintid).ip_posid as u64).saturating_sub(1);
    let hi_block = tid::block_of(&*maxtid) as u64 * tid::ROWS_PER_BLOCK;
    let hi = match (*maxtid).ip_posid as u64 {
        0 => hi_block.checked_sub(1),
        p => Some(hi_block + p.min(tid::ROWS_PER_BLOCK) - 1),
    };
    st.range = Some(match hi {
        Some(hi) => (lo, hi),
        None => (1, 0),
    });
    st.restart();
}

pub fn parallel_size() -> usize {
    std::mem::size_of::<ParallelShared>().next_multiple_of(pg_sys::MAXIMUM_ALIGNOF as usize)
}

pub unsafe fn parallel_initialize(
    rel: pg_sys::Relation,
    pscan: pg_sys::ParallelTableScanDesc,
) -> usize {
    // rows this backend buffered must be written before workers look for stripes
    write::flush_relation(rel);
    let shared = pscan as *mut ParallelShared;
    std::ptr::write_bytes(shared as *mut u8, 0, std::mem::size_of::<ParallelShared>());
    (*shared).next_stripe = AtomicU64::new(0);
    crate::compat::set_parallel_scan_relation(pscan, rel);
    parallel_size()
}

pub unsafe fn parallel_reinitialize(pscan: pg_sys::ParallelTableScanDesc) {
    (*(pscan as *mut ParallelShared))
        .next_stripe
        .store(0, Ordering::SeqCst);
}

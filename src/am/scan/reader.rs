//! The stripe-reading core every scan is built on: which stripes a snapshot sees (listed at
//! the start, or looked up one by one as rows are asked for), the rows its snapshot finds
//! deleted ([`DeleteMask`], read a stripe at a time), the loaded stripe, and the decoding of
//! a vector or a single row into the slot being filled. What a scan does with it (where it
//! is, what it returns next) is its cursor's: [`super::rows`], [`super::vectors`],
//! [`super::bitmap`], [`super::analyze`]. A fetch by row number uses the reader alone
//! ([`StripeReader::for_fetch`]).

use std::sync::atomic::{AtomicU64, Ordering};

use pg_columnar_codec::aggregate::ColumnFacts;
use pg_columnar_codec::filter::Selection;
use pg_columnar_codec::stripe::{StripeDirectory, StripeSummary};
use pg_columnar_codec::{ColumnContext, Form, Unpacked, Vector};
use pgrx::pg_sys;

use crate::am::datum::{column_types, ColumnBuffer, ColumnType};
use crate::am::mask::DeleteMask;
use crate::am::read::{self, DecodedVector, LoadedStripe, RowOrder, Selected};
use crate::am::write;
use crate::storage::catalog::{self, StripeRow};
use crate::storage::meta;
use crate::storage::pages::PageReader;

/// How [`StripeReader::store_row`] decodes a row whose vector it does not hold.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Decode {
    /// The vector, every row.
    Whole,
    /// The vector's rows a cursor or a node chose ([`StripeReader::store_chosen`]), laid
    /// out alone.
    Selected,
    /// The row alone.
    Alone,
    /// A row stored one at a time by number: alone, unless the row stored before it was
    /// alone of the same vector, which is then decoded whole.
    Fetched,
}

thread_local! {
    /// Rows that readers storing rows one at a time (fetches by number, PgcolTopN's rows)
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
/// keeps (`StripeReader::keep_first_stripes`).
const SCAN_KEEPS: usize = 4;

/// Stripes a fetch looks up one by one before it lists them all
/// ([`StripeReader::stripe_of_row`]).
const FETCH_LOOKUPS: usize = 16;

pub struct StripeReader {
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
    /// The rows the snapshot finds deleted or absent (none for [`StripeReader::for_fetch`]).
    mask: DeleteMask,
    /// The stored positions of the deleted rows of the loaded stripe, ascending, and the
    /// first row of the stripe they are of.
    deleted_positions: Option<(u64, Vec<u64>)>,
    /// Zone summaries of `stripes` (same order), if the reader was asked for them
    /// ([`StripeReader::visible_with_summaries`]) and the catalog rows have them.
    summaries: Vec<Option<StripeSummary>>,
    pub(super) stripe: Option<LoadedStripe>,
    /// How many more of the stripes this reader loads go to the ones this backend keeps across
    /// scans (`read::keep`) once it leaves them; every reader looks there first. A fetch
    /// ([`StripeReader::for_fetch`]) keeps every one, the query engine's scan its first
    /// [`SCAN_KEEPS`] ([`keep_first_stripes`](Self::keep_first_stripes)), the others (table
    /// AM scans, index builds, rewrites, VACUUM) none.
    keeps_left: usize,
    pub(super) decoded: DecodedVector,
    /// Rows stored one at a time by number (a fetch): [`Decode::Fetched`].
    row_at_a_time: bool,
    /// A reader that lists the stripes of the rows it is asked for as it is asked
    /// ([`stripe_of_row`](Self::stripe_of_row)): the lookups made so far, and the type of the
    /// snapshot they are made for. `None`: `stripes` lists every stripe the snapshot sees.
    lookups: Option<(usize, pg_sys::SnapshotType::Type)>,
    /// Integers of a block that [`DecodedVector::decode_row`] decodes whole.
    scratch: Vec<i64>,
    pub pages: PageReader,
    pub(super) buf: Vec<u8>,
    /// Columns to decode (`None`: all), kept to rebuild `decoded` when the slots' descriptor
    /// changes.
    wanted: Option<Vec<bool>>,
    /// Selections of rows to store given an id so far ([`selection_id`](Self::selection_id)).
    selection_ids: u64,
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
    // SAFETY: `slot` is a valid slot of the relation's descriptor, which has attribute `c`
    // (this function's contract): its value arrays hold that many entries
    let (datum, is_null) = unsafe {
        pg_sys::slot_getmissingattrs(slot, c as i32, c as i32 + 1);
        (*(*slot).tts_values.add(c), *(*slot).tts_isnull.add(c))
    };
    let mut column = ColumnBuffer::new(ty);
    for _ in 0..rows {
        // SAFETY: the descriptor's missing value for attribute `c`, of the column's type
        unsafe { column.push(datum, is_null) };
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
    // SAFETY: called in a transaction, where the snapshot manager's state is valid; the
    // active snapshot is asked for only if one is set
    unsafe {
        if pg_sys::ActiveSnapshotSet() {
            pg_sys::GetActiveSnapshot()
        } else {
            pg_sys::GetTransactionSnapshot()
        }
    }
}

/// Writes this backend's unwritten rows of `rel`, unless this is a parallel worker (whose
/// leader wrote them before the workers started).
fn flush_unless_worker(rel: pg_sys::Relation) {
    // SAFETY: a global of the backend's, set at its start (a worker's before it runs plans)
    if unsafe { pg_sys::ParallelWorkerNumber } < 0 {
        write::flush_relation(rel);
    }
}

/// The next stripe after stripe `after` (the first if `None`) of `count`: that of a serial
/// scan, in order, or, given the stripe counter a parallel scan's workers share, the next
/// one no worker has taken.
pub(super) fn next_stripe(
    parallel: *const AtomicU64,
    after: Option<usize>,
    count: usize,
) -> Option<usize> {
    let i = if parallel.is_null() {
        after.map_or(0, |i| i + 1)
    } else {
        // SAFETY: a non-null counter is in the parallel scan's shared memory, which outlives
        // the scan
        unsafe { (*parallel).fetch_add(1, Ordering::SeqCst) as usize }
    };
    (i < count).then_some(i)
}

impl Drop for StripeReader {
    /// A reader gives the stripe it holds to the kept ones (see `keeps_left`), for the next
    /// scans.
    fn drop(&mut self) {
        self.leave_stripe();
    }
}

impl StripeReader {
    /// Lists every stripe `snapshot` (the active one if null) sees, and masks the rows it
    /// finds deleted; writes this backend's unwritten rows of `rel` first (not in a parallel
    /// worker, whose leader did). `bulk`: read pages through a ring of buffers, as a
    /// sequential scan of the whole table does.
    pub fn visible(rel: pg_sys::Relation, snapshot: pg_sys::Snapshot, bulk: bool) -> StripeReader {
        flush_unless_worker(rel);
        Self::listing_all(rel, snapshot, bulk, false)
    }

    /// [`visible`](Self::visible), with the stripes' zone summaries from the catalog, so that
    /// a scan can rule out whole stripes without reading their directories.
    pub fn visible_with_summaries(
        rel: pg_sys::Relation,
        snapshot: pg_sys::Snapshot,
        bulk: bool,
    ) -> StripeReader {
        flush_unless_worker(rel);
        Self::listing_all(rel, snapshot, bulk, true)
    }

    /// A reader of single rows by number ([`store_offset`](Self::store_offset)) that asks
    /// whether each is deleted itself (`storage::marks::is_deleted`, an index probe per row)
    /// rather than reading the table's whole delete mask: it has none. It writes none of this
    /// backend's rows first: its caller writes those it needs (`write::flush_if_holding`,
    /// `write::flush_for_snapshot`); a BEFORE UPDATE trigger's fetch of each row would
    /// otherwise write the new versions buffered so far as a stripe per row.
    ///
    /// It lists no stripe to begin with, and looks up the stripe of each row it is asked for
    /// ([`stripe_of_row`](Self::stripe_of_row)), unless it is a serializable transaction's
    /// MVCC read, whose read of the whole catalog is also its check of conflicts with the
    /// writers of the stripes it passes over (`storage::scan_catalog`).
    pub fn for_fetch(rel: pg_sys::Relation, snapshot: pg_sys::Snapshot) -> StripeReader {
        let mut reader = Self::listing_as_asked(rel, snapshot, false);
        reader.keeps_left = usize::MAX;
        reader.row_at_a_time = true;
        reader
    }

    /// A bitmap heap scan's: it lists the stripes of the rows the bitmap names as it meets
    /// them, as [`for_fetch`](Self::for_fetch) does, and masks the rows its snapshot finds
    /// deleted, as [`visible`](Self::visible) does: a bitmap of a few rows reads a few
    /// stripes' catalog rows, not the table's.
    pub(super) fn for_bitmap(rel: pg_sys::Relation, snapshot: pg_sys::Snapshot) -> StripeReader {
        write::flush_relation(rel);
        Self::listing_as_asked(rel, snapshot, true)
    }

    /// A reader of every row `stripes` (of `rel`'s storage, sorted by first row) store,
    /// deleted and absent ones too: VACUUM's read of the stripes it merges (`am::vacuum`). It
    /// writes none of this backend's rows.
    pub fn of_stripes(rel: pg_sys::Relation, stripes: Vec<StripeRow>) -> StripeReader {
        let storage_id = meta::storage_id(rel);
        let none = vec![None; stripes.len()];
        let mask = DeleteMask::none(stripes.len());
        Self::assemble(rel, stripes, none, storage_id, mask, true)
    }

    /// Lists the stripes of the rows it is asked for as it is asked
    /// ([`stripe_of_row`](Self::stripe_of_row)), with a delete mask (`mask`) or none; lists
    /// every stripe at once for a serializable transaction's MVCC read, whose read of the
    /// whole catalog is also its check of conflicts with the writers of the stripes it passes
    /// over (`storage::scan_catalog`).
    fn listing_as_asked(
        rel: pg_sys::Relation,
        snapshot: pg_sys::Snapshot,
        mask: bool,
    ) -> StripeReader {
        let snapshot = if snapshot.is_null() {
            current_snapshot()
        } else {
            snapshot
        };
        // SAFETY: a valid snapshot of the caller's
        let kind = unsafe { (*snapshot).snapshot_type };
        if kind == pg_sys::SnapshotType::SNAPSHOT_MVCC && crate::storage::serializable_transaction()
        {
            let mut reader = Self::listing_all(rel, snapshot, false, false);
            if !mask {
                reader.mask = DeleteMask::none(reader.stripes.len());
            }
            return reader;
        }
        let storage_id = meta::storage_id(rel);
        let mask = if mask {
            DeleteMask::new(rel, storage_id, snapshot, 0)
        } else {
            DeleteMask::none(0)
        };
        let mut reader = Self::assemble(rel, Vec::new(), Vec::new(), storage_id, mask, false);
        reader.lookups = Some((0, kind));
        reader
    }

    /// Lists every stripe `snapshot` sees (with their zone summaries if `summaries`) and
    /// masks the rows it finds deleted.
    fn listing_all(
        rel: pg_sys::Relation,
        snapshot: pg_sys::Snapshot,
        bulk: bool,
        summaries: bool,
    ) -> StripeReader {
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
        let mask = DeleteMask::new(rel, storage_id, snapshot, stripes.len());
        Self::assemble(rel, stripes, summaries, storage_id, mask, bulk)
    }

    fn assemble(
        rel: pg_sys::Relation,
        stripes: Vec<StripeRow>,
        summaries: Vec<Option<StripeSummary>>,
        storage_id: Option<u64>,
        mask: DeleteMask,
        bulk: bool,
    ) -> StripeReader {
        // SAFETY: every constructor is given an open relation
        let types_of = unsafe { (*rel).rd_att };
        let types = column_types(types_of);
        let natts = types.len();
        StripeReader {
            rel,
            // SAFETY: as above
            relid: unsafe { (*rel).rd_id },
            types,
            types_of,
            stripes,
            storage_id,
            mask,
            deleted_positions: None,
            summaries,
            stripe: None,
            decoded: DecodedVector::new(natts),
            row_at_a_time: false,
            lookups: None,
            scratch: Vec::new(),
            pages: PageReader::new(rel, bulk),
            buf: Vec::new(),
            wanted: None,
            selection_ids: 0,
            keeps_left: 0,
        }
    }

    /// Gives the first [`SCAN_KEEPS`] stripes this reader loads to the ones this backend keeps,
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

    /// Vectors decoded so far, per column.
    pub fn decoded_per_column(&self) -> &[u64] {
        &self.decoded.decoded_count
    }

    pub fn bytes_read(&self) -> u64 {
        self.pages.bytes_read
    }

    /// Rows of the listed stripes, deleted ones too.
    pub fn total_rows(&self) -> u64 {
        self.stripes.iter().map(|s| s.row_count).sum()
    }

    /// The zone summary of stripe `i`, if the reader read them and the stripe has one.
    pub(super) fn summary(&self, i: usize) -> Option<&StripeSummary> {
        self.summaries.get(i).and_then(|s| s.as_ref())
    }

    /// Whether the snapshot finds row `row` of stripe `i` deleted or absent.
    pub(super) fn hides(&mut self, i: usize, row: u64) -> bool {
        self.mask.hides(&self.stripes, i, row)
    }

    /// The loaded stripe ([`load`](Self::load) was called).
    pub(super) fn loaded(&self) -> &LoadedStripe {
        self.stripe.as_ref().expect("a stripe is loaded")
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
    pub(super) fn deleted_in(&mut self, i: usize) -> &[u64] {
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
    pub(super) fn stored_row_deleted(&mut self, i: usize, position: u64) -> bool {
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
    pub(super) fn vector_has_deleted(&mut self, i: usize, v: usize) -> bool {
        self.deleted_in_vector(i, v).next().is_some()
    }

    /// Takes the deleted rows of vector `v` of stripe `i` out of `selection`.
    pub(super) fn remove_deleted(&mut self, i: usize, v: usize, selection: &mut Selection) {
        self.deleted_in_vector(i, v)
            .for_each(|r| selection.unset(r));
    }

    /// Loads stripe `i` if it is not the one loaded. A fetch copies it from the stripes
    /// kept by earlier fetches, and keeps the one it leaves (`read::keep`).
    pub(super) fn load(&mut self, i: usize) {
        let row = self.stripes[i].clone();
        if self.stripe.as_ref().map(|s| s.row.first_row) != Some(row.first_row) {
            self.leave_stripe();
            self.stripe =
                Some(read::kept(&row).unwrap_or_else(|| LoadedStripe::load(&mut self.pages, row)));
        }
    }

    /// Drops the page reader's kept pages (a scan that has read its last stripe).
    pub(super) fn forget_pages(&mut self) {
        self.pages.forget_pages();
    }

    /// Gives the stripe this reader holds to the kept ones while it may keep more.
    fn leave_stripe(&mut self) {
        self.pages.forget_pages();
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

    /// A new id for a selection of rows to store, unlike any this reader gave before.
    pub fn selection_id(&mut self) -> u64 {
        self.selection_ids += 1;
        self.selection_ids
    }

    /// [`store`](Self::store) as `how` says; `chosen`: the selection [`Decode::Selected`]
    /// lays out.
    fn store_row(
        &mut self,
        i: usize,
        r: u64,
        slot: *mut pg_sys::TupleTableSlot,
        how: Decode,
        chosen: Selected<'_>,
    ) {
        // SAFETY: the slots callers fill are the executor's, valid for the call
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
                    chosen
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
        // SAFETY: `slot` is valid (above) and of the descriptor `decoded` was laid out for
        // (remade above when it changed)
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
    /// reader ([`for_fetch`](Self::for_fetch)); another's (a fetch of the row under SnapshotAny
    /// from an MVCC fetch's reader) finds only the stripes listed already. A fetch that
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
    /// and given to `out` with their column, whatever this reader's snapshot masks: what a
    /// slot holding a row whose values are read when asked needs (`slot::store_deferred`).
    /// Returns the end of the columns given (`columns.end`, or the count the stripe stores
    /// if lower; the relation's later columns are its missing-attribute defaults), `None` if
    /// no stripe of this reader holds the row. Leaves the vector this reader holds decoded as it
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
    pub(super) fn position_of(&mut self, i: usize, offset: u64) -> u64 {
        self.row_order(i).map_or(offset, |o| o.position_of(offset))
    }

    /// The insert offset of the row stripe `i` stores at `position`.
    pub(super) fn offset_of(&mut self, i: usize, position: u64) -> u64 {
        self.row_order(i)
            .map_or(position, |o| o.offset_of(position))
    }

    /// Unpacks vector `v` of stripe `i` of each of `columns` not in `out` yet into `out`. A
    /// column the stripe does not store (added since) is the column's default on every row,
    /// taken from the slot's missing-attribute values; dropped columns are left out.
    pub(super) fn unpack_columns(
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
                // SAFETY: `slot` is the executor's slot of this relation, whose descriptor
                // `types` was read from (c < its length, checked above)
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
            read::column_dictionary(&mut self.pages, row, c, &mut self.buf);
        f(
            &ColumnContext {
                dictionary: dictionary.as_deref(),
                ..Default::default()
            },
            nulls,
            serial,
        )
    }
}

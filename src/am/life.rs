//! A table's life: new storage (CREATE, TRUNCATE, rewrites), truncation, moving to another
//! tablespace, size estimates, index builds, and DROP (VACUUM FULL and CLUSTER: `rewrite`;
//! VACUUM: `vacuum`).

use pgrx::pg_sys;

use super::relation::not_supported;
use super::scan::{self, RowScan, StripeReader};
use super::write;
use crate::storage::tid;
use crate::storage::{catalog, marks, meta, reservations};

/// Deletes the catalog rows (stripes, row marks, row reservations) of the storage `rel` currently has, if it
/// has any (whatever its block 0 holds: DROP and TRUNCATE work on a damaged table too).
///
/// # Safety
///
/// `rel` is an open pg_columnar relation, locked against writers.
unsafe fn forget_storage(rel: pg_sys::Relation) {
    if let Some(m) = meta::read_for_drop(rel) {
        catalog::delete_storage(m.storage_id);
        marks::delete_storage(m.storage_id);
        reservations::delete_storage(m.storage_id);
    }
}

/// `relation_set_new_filelocator`: the relation gets a new, empty file. The old file (on
/// TRUNCATE) is dropped at commit; its catalog rows go now, transactionally.
///
/// # Safety
///
/// `rel` is an open pg_columnar relation, locked exclusively, as the callback is given it;
/// `create` returns the new file's valid SMgrRelation.
pub(super) unsafe fn new_storage(
    rel: pg_sys::Relation,
    new_relfile: u32,
    create: impl FnOnce() -> pg_sys::SMgrRelation,
    persistence: std::ffi::c_char,
) {
    // SAFETY: `rel` is open (this function's contract)
    let relid = unsafe { (*rel).rd_id };
    write::discard_relation(relid);
    if new_relfile != crate::compat::relfile_number(rel) {
        // SAFETY: `rel` is open and locked (this function's contract)
        unsafe { forget_storage(rel) };
    }
    // the new file's storage id, taken while a sequence may still be advanced (a parallel
    // CREATE TABLE AS writes its first stripe in parallel mode)
    meta::reserve_storage_id(relid, new_relfile);
    let srel = create();
    // SAFETY: `srel` is the new file's SMgrRelation (this function's contract), closed here
    // once and not used after
    unsafe {
        if persistence == pg_sys::RELPERSISTENCE_UNLOGGED as std::ffi::c_char {
            // an empty init fork: after a crash the table is reset to no blocks, i.e. empty
            pg_sys::smgrcreate(srel, pg_sys::ForkNumber::INIT_FORKNUM, false);
            crate::compat::log_init_fork_created(srel);
        }
        pg_sys::smgrclose(srel);
    }
}

/// `relation_nontransactional_truncate`: TRUNCATE of a table created or truncated in the
/// same transaction empties the file in place.
///
/// # Safety
///
/// `rel` is an open pg_columnar relation, locked exclusively, as the callback is given it.
pub(super) unsafe fn truncate_in_place(rel: pg_sys::Relation) {
    // SAFETY: `rel` is open (this function's contract)
    let relid = unsafe { (*rel).rd_id };
    write::discard_relation(relid);
    // SAFETY: `rel` is open and locked exclusively (this function's contract), as truncating
    // its file needs
    unsafe {
        forget_storage(rel);
        pg_sys::RelationTruncate(rel, 0);
    }
    // the file keeps its number: its next write makes a metapage with a new storage id
    meta::forget_storage_id(relid);
}

/// Pages of the relation, and rows the current snapshot sees (plus rows this backend has
/// buffered): what VACUUM records in `pg_class`.
///
/// # Safety
///
/// `rel` is an open pg_columnar relation, in a transaction with a snapshot.
pub(super) unsafe fn counted_size(rel: pg_sys::Relation) -> (pg_sys::BlockNumber, f64) {
    let rows: u64 = scan::visible_stripes(rel, scan::current_snapshot())
        .iter()
        .map(|s| s.row_count - catalog::absent_count(s))
        .sum();
    (file_pages(rel), (rows + write::pending_rows(rel)) as f64)
}

/// Pages of the relation, and the planner's estimate of its rows: [`counted_size`]'s count,
/// or one made by a recent statement plus the rows numbered since (`catalog::planning_list`).
///
/// # Safety
///
/// `rel` is an open pg_columnar relation, in a transaction.
pub unsafe fn estimate_size(rel: pg_sys::Relation) -> (pg_sys::BlockNumber, f64) {
    let rows = match meta::read(rel) {
        Some(m) => {
            let read = catalog::planning_list(m.storage_id, m.next_row, scan::current_snapshot());
            read.list.held_rows() + read.rows_since
        }
        None => 0,
    };
    (file_pages(rel), (rows + write::pending_rows(rel)) as f64)
}

fn file_pages(rel: pg_sys::Relation) -> pg_sys::BlockNumber {
    // SAFETY: `rel` is an open relation of the caller's (a safe fn over a raw pointer: not
    // checked)
    unsafe { pg_sys::RelationGetNumberOfBlocksInFork(rel, pg_sys::ForkNumber::MAIN_FORKNUM) }
}

/// `index_build_range_scan`: feeds every row (or those whose TID block is in the range) to
/// the index build callback.
///
/// # Safety
///
/// As `index_build_range_scan` is called: `table` and `index` open and locked, `info` the
/// index's, `parallel_scan` null or a parallel scan of `table` begun by this access method.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn index_build(
    table: pg_sys::Relation,
    index: pg_sys::Relation,
    info: *mut pg_sys::IndexInfo,
    start_blockno: pg_sys::BlockNumber,
    numblocks: pg_sys::BlockNumber,
    callback: pg_sys::IndexBuildCallback,
    callback_state: *mut std::ffi::c_void,
    parallel_scan: pg_sys::TableScanDesc,
) -> f64 {
    // BRIN summarises ranges of the table's blocks up to its size in blocks, and a pg_columnar
    // table's rows live in virtual blocks far past its (compressed) file, which that size must
    // stay (ANALYZE reads the blocks it samples). Its scans would miss rows: refused.
    // SAFETY: `index` is open (this function's contract)
    if unsafe { (*(*index).rd_rel).relam } == pg_sys::Oid::from(pg_sys::BRIN_AM_OID) {
        not_supported("BRIN indexes (their block ranges cannot cover a pg_columnar table's rows)");
    }
    let callback = callback.expect("an index build callback");
    // SAFETY: `table` is open and `info` its index's (this function's contract)
    let mut entry = unsafe { EntryFormer::new(table, info) };
    let slot = entry.slot;

    // Every stored row of a stripe no aborted transaction wrote: our own scan under
    // SnapshotAny, or the parallel scan a parallel build hands us (heap's uses SnapshotAny
    // too). A deleted row is indexed as dead, as heap indexes a recently dead tuple: a
    // snapshot older than the deletion may still read it through the index, and a unique
    // index leaves it out of its check. The table is locked against writers, so deletions
    // are those of committed transactions and this one, as a dirty snapshot reads them (no
    // new snapshot can be taken in a parallel build).
    //
    // A concurrent build (CREATE INDEX CONCURRENTLY, REINDEX CONCURRENTLY), whose table takes
    // writes meanwhile, indexes the rows an MVCC snapshot sees instead, all as live, as heap's
    // does: the rows committed after it are added by the validation (`index_validate`).
    let mut own_scan = None;
    let mut own_snapshot: pg_sys::Snapshot = std::ptr::null_mut();
    let st: &mut RowScan = if parallel_scan.is_null() {
        // SAFETY: `info` is valid (this function's contract); the snapshot registered here is
        // unregistered below, after the scan that reads with it is dropped
        let snapshot = unsafe {
            if (*info).ii_Concurrent {
                own_snapshot = pg_sys::RegisterSnapshot(pg_sys::GetTransactionSnapshot());
                own_snapshot
            } else {
                std::ptr::addr_of_mut!(pg_sys::SnapshotAnyData)
            }
        };
        own_scan.insert(RowScan::new(
            StripeReader::visible(table, snapshot, true),
            std::ptr::null(),
        ))
    } else {
        // SAFETY: `parallel_scan` is a scan this access method began (this function's
        // contract), ended only below
        unsafe { scan::state(parallel_scan) }.rows()
    };
    // SAFETY: `info` is valid (this function's contract)
    let mvcc = unsafe { (*info).ii_Concurrent };
    let deleted = match st.reader.storage_id {
        Some(_) if mvcc => Vec::new(),
        Some(id) => {
            // SAFETY: SnapshotData is plain C data, for which all zeroes is a valid value
            // (and, with its type set below, the dirty snapshot InitDirtySnapshot makes)
            let mut dirty: pg_sys::SnapshotData = unsafe { std::mem::zeroed() };
            dirty.snapshot_type = pg_sys::SnapshotType::SNAPSHOT_DIRTY;
            marks::deleted_rows(id, &mut dirty, std::ptr::null_mut())
        }
        None => Vec::new(),
    };
    let range = (numblocks != pg_sys::InvalidBlockNumber)
        .then(|| start_blockno as u64..start_blockno as u64 + numblocks as u64);
    let mut count = 0.0;
    while st.next(true, slot) {
        // SAFETY: `entry` and its `slot` were made above and live until the end; the slot
        // holds the row just scanned
        let mut t = unsafe {
            entry.next_row();
            (*slot).tts_tid
        };
        if let Some(r) = &range {
            if !r.contains(&(tid::block_of(&t) as u64)) {
                continue;
            }
        }
        let alive = tid::from_tid(&t).is_some_and(|row| deleted.binary_search(&row).is_err());
        if alive {
            count += 1.0;
        }
        // SAFETY: `entry`'s slot holds the row just scanned and `info` is the index's (this
        // function's contract); the build callback and its state are the caller's, given an
        // entry of `index`'s INDEX_MAX_KEYS values
        unsafe {
            if !entry.in_index() {
                continue;
            }
            entry.form(info);
            callback(
                index,
                &mut t,
                entry.values.as_mut_ptr(),
                entry.isnull.as_mut_ptr(),
                alive,
                callback_state,
            );
        }
    }
    drop(own_scan);
    if !own_snapshot.is_null() {
        // SAFETY: registered above, and the scan that read with it is dropped
        unsafe { pg_sys::UnregisterSnapshot(own_snapshot) };
    }
    if !parallel_scan.is_null() {
        // the scan a parallel build hands over is ended by the build callback, as heap's ends
        // it (with the snapshot a concurrent build's scan registered)
        // SAFETY: a scan this access method began (this function's contract), not used after
        unsafe { scan::end(parallel_scan) };
    }
    count
}

/// What turning a table row into an index entry takes: an executor state whose per-row
/// context holds the row's slot, the index's predicate (a partial index) and the entry's
/// values. Freed when dropped.
struct EntryFormer {
    estate: *mut pg_sys::EState,
    econtext: *mut pg_sys::ExprContext,
    /// The row (a virtual slot of the table's descriptor).
    slot: *mut pg_sys::TupleTableSlot,
    predicate: *mut pg_sys::ExprState,
    values: [pg_sys::Datum; pg_sys::INDEX_MAX_KEYS as usize],
    isnull: [bool; pg_sys::INDEX_MAX_KEYS as usize],
}

impl EntryFormer {
    /// # Safety
    ///
    /// `table` is an open relation and `info` the IndexInfo of one of its indexes.
    unsafe fn new(table: pg_sys::Relation, info: *mut pg_sys::IndexInfo) -> EntryFormer {
        // SAFETY: `table` and `info` are valid (this function's contract); the executor state
        // and the slot made here are freed by `drop`
        let (estate, econtext, slot, predicate) = unsafe {
            let estate = pg_sys::CreateExecutorState();
            let econtext = pg_sys::MakePerTupleExprContext(estate);
            let slot = pg_sys::MakeSingleTupleTableSlot((*table).rd_att, &pg_sys::TTSOpsVirtual);
            (*econtext).ecxt_scantuple = slot;
            let predicate = pg_sys::ExecPrepareQual((*info).ii_Predicate, estate);
            (estate, econtext, slot, predicate)
        };
        EntryFormer {
            estate,
            econtext,
            slot,
            predicate,
            values: [pg_sys::Datum::from(0); pg_sys::INDEX_MAX_KEYS as usize],
            isnull: [false; pg_sys::INDEX_MAX_KEYS as usize],
        }
    }

    /// Frees what the last row's predicate and entry took.
    ///
    /// # Safety
    ///
    /// Nothing made in the per-row memory (the previous row's entry) is used after.
    unsafe fn next_row(&self) {
        // SAFETY: `econtext` is this former's, made in `new` and alive until `drop`
        unsafe { pg_sys::MemoryContextReset((*self.econtext).ecxt_per_tuple_memory) };
    }

    /// Whether the row in `slot` belongs in the index (always, unless it is partial).
    ///
    /// # Safety
    ///
    /// `slot` holds a row of the table.
    unsafe fn in_index(&self) -> bool {
        // SAFETY: the predicate was prepared in `new` for this former's expression context,
        // whose scan tuple is `slot`, holding a row (this function's contract)
        self.predicate.is_null() || unsafe { pg_sys::ExecQual(self.predicate, self.econtext) }
    }

    /// The index entry of the row in `slot`, into `values` and `isnull`.
    ///
    /// # Safety
    ///
    /// `slot` holds a row of the table, and `info` is the IndexInfo `new` was given.
    unsafe fn form(&mut self, info: *mut pg_sys::IndexInfo) {
        // SAFETY: `info` is the index's and `slot` holds a row (this function's contract); the
        // arrays have INDEX_MAX_KEYS entries, at least the index's attributes
        unsafe {
            pg_sys::FormIndexDatum(
                info,
                self.slot,
                self.estate,
                self.values.as_mut_ptr(),
                self.isnull.as_mut_ptr(),
            )
        };
    }
}

impl Drop for EntryFormer {
    fn drop(&mut self) {
        // SAFETY: the slot and the executor state were made in `new` and are freed only here
        unsafe {
            pg_sys::ExecDropSingleTupleTableSlot(self.slot);
            pg_sys::FreeExecutorState(self.estate);
        }
    }
}

/// `index_validate_scan`, the last pass of a concurrent index build: inserts into `index`
/// every row `snapshot` sees that the index does not hold yet (rows committed after the
/// build's snapshot by writers that did not know of the index), as heap's validation does.
/// `state.tuplesort` gives the TIDs the index holds, ascending. The table's rows come stripe
/// by stripe in row order, each stripe's in any order (a sorted stripe's in key order), so
/// the TIDs of one stripe are gathered before its rows are looked at.
///
/// # Safety
///
/// As `index_validate_scan` is called: `table` and `index` open and locked, `info` the
/// index's, `snapshot` registered, `state` the validation's with its sort performed.
pub(super) unsafe fn index_validate(
    table: pg_sys::Relation,
    index: pg_sys::Relation,
    info: *mut pg_sys::IndexInfo,
    snapshot: pg_sys::Snapshot,
    state: *mut pg_sys::ValidateIndexState,
) {
    // SAFETY: `table` is open and `info` its index's (this function's contract)
    let mut entry = unsafe { EntryFormer::new(table, info) };
    let slot = entry.slot;
    // SAFETY: `info` is valid (this function's contract)
    let check = if unsafe { (*info).ii_Unique } {
        pg_sys::IndexUniqueCheck::UNIQUE_CHECK_YES
    } else {
        pg_sys::IndexUniqueCheck::UNIQUE_CHECK_NO
    };
    let mut st = RowScan::new(
        StripeReader::visible(table, snapshot, true),
        std::ptr::null(),
    );
    // the index's TIDs as row numbers, one stripe's at a time: the stripe, and which of its
    // rows the index holds
    let mut indexed = IndexedRows {
        // SAFETY: `state` is valid (this function's contract)
        sort: unsafe { (*state).tuplesort },
        next: None,
        done: false,
    };
    let mut current: Option<(usize, Vec<bool>)> = None;
    while st.next(true, slot) {
        pgrx::check_for_interrupts!();
        // SAFETY: `entry` and its `slot` were made above, the slot holding the row just
        // scanned; `state` is valid (this function's contract)
        let mut t = unsafe {
            entry.next_row();
            (*state).htups += 1.0;
            (*slot).tts_tid
        };
        let Some(row) = tid::from_tid(&t) else {
            continue;
        };
        let Some(i) = super::read::stripe_index_of(&st.reader.stripes, row) else {
            continue;
        };
        let stripe = &st.reader.stripes[i];
        if current.as_ref().is_none_or(|(c, _)| *c != i) {
            let mut held = vec![false; stripe.row_count as usize];
            for r in indexed.take_below(stripe.first_row + stripe.row_count) {
                if let Some(offset) = r.checked_sub(stripe.first_row) {
                    held[offset as usize] = true;
                }
            }
            current = Some((i, held));
        }
        let (_, held) = current.as_ref().expect("set above");
        if held[(row - stripe.first_row) as usize] {
            continue;
        }
        // SAFETY: `entry`'s slot holds the row just scanned; `index` is open and `info` is
        // its (this function's contract); `state` is valid
        unsafe {
            if !entry.in_index() {
                continue;
            }
            entry.form(info);
            pg_sys::index_insert(
                index,
                entry.values.as_mut_ptr(),
                entry.isnull.as_mut_ptr(),
                &mut t,
                table,
                check,
                false,
                info,
            );
            (*state).tups_inserted += 1.0;
        }
    }
}

/// The TIDs a concurrent build's validation reads from the index (`ValidateIndexState`'s
/// sort of encoded TIDs, ascending), as row numbers.
struct IndexedRows {
    sort: *mut pg_sys::Tuplesortstate,
    /// A row number read but not taken yet.
    next: Option<u64>,
    done: bool,
}

impl IndexedRows {
    /// The row numbers below `end` not taken yet (those of stripes passed over included:
    /// the caller keeps the ones in its stripe).
    fn take_below(&mut self, end: u64) -> Vec<u64> {
        let mut rows = Vec::new();
        loop {
            if self.next.is_none() && !self.done {
                // (int8 by value: the encoded TID)
                // SAFETY: `sort` is the validation's performed sort (`index_validate`'s
                // contract), read forward only, by this one reader
                self.next = unsafe { crate::compat::tuplesort_next_datum(self.sort) }
                    .map(|d| tid::from_encoded(d.value() as i64).unwrap_or(u64::MAX));
                self.done = self.next.is_none();
            }
            match self.next {
                Some(r) if r < end => {
                    rows.push(r);
                    self.next = None;
                }
                _ => return rows,
            }
        }
    }
}

/// Called when any relation is dropped: if it is a pg_columnar table, its buffered rows and
/// catalog rows go with it (the catalog rows transactionally).
///
/// # Safety
///
/// Called from the object access hook at a drop of relation `relid`, which the dropping
/// command holds locked, in a transaction.
pub unsafe fn on_drop(relid: pg_sys::Oid) {
    // SAFETY: a syscache lookup, in a transaction (this function's contract); an absent
    // relation's kind is 0, not an ERROR
    let kind = unsafe { pg_sys::get_rel_relkind(relid) } as u8;
    if kind != pg_sys::RELKIND_RELATION as u8 && kind != pg_sys::RELKIND_MATVIEW as u8 {
        return;
    }
    // SAFETY: in a transaction, `relid` locked by the dropping command (this function's
    // contract); null when the relation cannot be opened, and closed below otherwise
    let rel = unsafe { pg_sys::RelationIdGetRelation(relid) };
    if rel.is_null() {
        return;
    }
    if super::relation::is_columnar(rel) {
        write::discard_relation(relid);
        if catalog::exists() {
            // SAFETY: `rel` is an open pg_columnar relation, locked by the dropping command
            // (this function's contract)
            unsafe { forget_storage(rel) };
        }
    }
    // SAFETY: opened above, closed once
    unsafe { pg_sys::RelationClose(rel) };
}

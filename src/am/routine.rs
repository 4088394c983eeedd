//! The `TableAmRoutine`: every callback PostgreSQL calls on a pg_columnar table. Callbacks
//! whose signature is the same on every supported major are defined here; the ones that
//! differ are installed by [`super::versioned::install`], which forwards to the functions here.
//!
//! What a columnar table refuses (with an ERROR naming the feature): BRIN indexes.

use std::sync::OnceLock;

use pgrx::pg_sys;

use super::relation::not_supported;
use super::{fetch, life, modify, scan};

struct Routine(pg_sys::TableAmRoutine);
// SAFETY: a NodeTag and function pointers, immutable once built.
unsafe impl Sync for Routine {}
unsafe impl Send for Routine {}
static ROUTINE: OnceLock<Routine> = OnceLock::new();

/// The routine; the relcache keeps pointers to it, so it lives as long as the process.
pub fn routine() -> *const pg_sys::TableAmRoutine {
    let routine = &ROUTINE.get_or_init(|| Routine(build())).0;
    super::relation::note_routine(routine);
    routine
}

fn build() -> pg_sys::TableAmRoutine {
    let mut r: pg_sys::TableAmRoutine = unsafe { std::mem::zeroed() };
    r.type_ = pg_sys::NodeTag::T_TableAmRoutine;
    r.slot_callbacks = Some(slot_callbacks);
    r.scan_begin = Some(scan_begin);
    r.scan_end = Some(scan_end);
    r.scan_rescan = Some(scan_rescan);
    r.scan_getnextslot = Some(scan_getnextslot);
    r.scan_set_tidrange = Some(scan_set_tidrange);
    r.scan_getnextslot_tidrange = Some(scan_getnextslot);
    r.parallelscan_estimate = Some(parallelscan_estimate);
    r.parallelscan_initialize = Some(parallelscan_initialize);
    r.parallelscan_reinitialize = Some(parallelscan_reinitialize);
    r.index_fetch_reset = Some(index_fetch_reset);
    r.index_fetch_end = Some(index_fetch_end);
    r.index_fetch_tuple = Some(index_fetch_tuple);
    r.tuple_fetch_row_version = Some(tuple_fetch_row_version);
    r.tuple_tid_valid = Some(tuple_tid_valid);
    r.tuple_get_latest_tid = Some(tuple_get_latest_tid);
    r.tuple_satisfies_snapshot = Some(tuple_satisfies_snapshot);
    r.index_delete_tuples = Some(index_delete_tuples);
    r.tuple_complete_speculative = Some(tuple_complete_speculative);
    r.tuple_lock = Some(tuple_lock);
    r.relation_nontransactional_truncate = Some(relation_nontransactional_truncate);
    r.index_build_range_scan = Some(index_build_range_scan);
    r.index_validate_scan = Some(index_validate_scan);
    r.relation_size = Some(relation_size);
    r.relation_needs_toast_table = Some(relation_needs_toast_table);
    r.relation_toast_am = Some(relation_toast_am);
    r.relation_fetch_toast_slice = Some(relation_fetch_toast_slice);
    r.relation_estimate_size = Some(relation_estimate_size);
    r.scan_sample_next_block = Some(scan_sample_next_block);
    r.scan_sample_next_tuple = Some(scan_sample_next_tuple);
    super::versioned::install(&mut r);
    r
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn slot_callbacks(
    _rel: pg_sys::Relation,
) -> *const pg_sys::TupleTableSlotOps {
    super::slot::ops()
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn scan_begin(
    rel: pg_sys::Relation,
    snapshot: pg_sys::Snapshot,
    nkeys: std::ffi::c_int,
    key: *mut pg_sys::ScanKeyData,
    pscan: pg_sys::ParallelTableScanDesc,
    flags: u32,
) -> pg_sys::TableScanDesc {
    scan::begin(rel, snapshot, nkeys, key, pscan, flags)
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn scan_end(s: pg_sys::TableScanDesc) {
    scan::end(s)
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn scan_rescan(
    s: pg_sys::TableScanDesc,
    _key: *mut pg_sys::ScanKeyData,
    _set_params: bool,
    _allow_strat: bool,
    _allow_sync: bool,
    _allow_pagemode: bool,
) {
    scan::rescan(s)
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn scan_getnextslot(
    s: pg_sys::TableScanDesc,
    direction: pg_sys::ScanDirection::Type,
    slot: *mut pg_sys::TupleTableSlot,
) -> bool {
    scan::getnextslot(s, direction, slot)
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn scan_set_tidrange(
    s: pg_sys::TableScanDesc,
    mintid: pg_sys::ItemPointer,
    maxtid: pg_sys::ItemPointer,
) {
    scan::set_tidrange(s, mintid, maxtid)
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn parallelscan_estimate(_rel: pg_sys::Relation) -> pg_sys::Size {
    scan::parallel_size()
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn parallelscan_initialize(
    rel: pg_sys::Relation,
    pscan: pg_sys::ParallelTableScanDesc,
) -> pg_sys::Size {
    scan::parallel_initialize(rel, pscan)
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn parallelscan_reinitialize(
    _rel: pg_sys::Relation,
    pscan: pg_sys::ParallelTableScanDesc,
) {
    scan::parallel_reinitialize(pscan)
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn index_fetch_reset(data: *mut pg_sys::IndexFetchTableData) {
    fetch::reset(data)
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn index_fetch_end(data: *mut pg_sys::IndexFetchTableData) {
    fetch::end(data)
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn index_fetch_tuple(
    data: *mut pg_sys::IndexFetchTableData,
    tid: pg_sys::ItemPointer,
    snapshot: pg_sys::Snapshot,
    slot: *mut pg_sys::TupleTableSlot,
    call_again: *mut bool,
    all_dead: *mut bool,
) -> bool {
    *call_again = false;
    let mut dead = false;
    let found = fetch::fetch(data, tid, snapshot, slot, &mut dead);
    if !all_dead.is_null() {
        *all_dead = dead;
    }
    found
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn tuple_fetch_row_version(
    rel: pg_sys::Relation,
    tid: pg_sys::ItemPointer,
    snapshot: pg_sys::Snapshot,
    slot: *mut pg_sys::TupleTableSlot,
) -> bool {
    fetch::fetch_row_version(rel, tid, snapshot, slot)
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn tuple_tid_valid(
    s: pg_sys::TableScanDesc,
    tid: pg_sys::ItemPointer,
) -> bool {
    fetch::tid_valid(s, tid)
}

/// The newest version of the row at `tid` that the scan's snapshot sees (`currtid_byrelname`,
/// `WHERE CURRENT OF` through a TID scan): follows UPDATEs' marks.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn tuple_get_latest_tid(
    s: pg_sys::TableScanDesc,
    tid: pg_sys::ItemPointer,
) {
    modify::latest_version((*s).rs_rd, &mut *tid, (*s).rs_snapshot)
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn tuple_satisfies_snapshot(
    rel: pg_sys::Relation,
    slot: *mut pg_sys::TupleTableSlot,
    snapshot: pg_sys::Snapshot,
) -> bool {
    fetch::satisfies_snapshot(rel, slot, snapshot)
}

/// Which of an index page's entries may be removed. The index's own dead marks (`LP_DEAD`,
/// `knowndeletable` here) are kept: an entry is marked only when a fetch reported its row
/// dead to all (`fetch::fetch`): a row whose inserter aborted, which no snapshot can see, or
/// one whose deletion every snapshot sees. The latest transaction of such deletions is the
/// conflict horizon: a standby cancels its queries whose snapshots may still see the rows
/// before it removes the entries. Other entries are not looked into, so a bottom-up deletion,
/// which asks the table for rows dead to every snapshot, gets none: VACUUM removes the
/// entries of such rows (`am::vacuum`).
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn index_delete_tuples(
    rel: pg_sys::Relation,
    delstate: *mut pg_sys::TM_IndexDeleteOp,
) -> pg_sys::TransactionId {
    if (*delstate).bottomup {
        (*delstate).ndeltids = 0;
        return pg_sys::InvalidTransactionId;
    }
    let mut horizon = pg_sys::InvalidTransactionId;
    let Some(storage_id) = crate::storage::meta::storage_id(rel) else {
        return horizon;
    };
    let deltids =
        std::slice::from_raw_parts((*delstate).deltids, (*delstate).ndeltids.max(0) as usize);
    for d in deltids {
        if !(*(*delstate).status.add(d.id as usize)).knowndeletable {
            continue;
        }
        let Some(row) = crate::storage::tid::from_tid(&d.tid) else {
            continue;
        };
        match crate::storage::marks::settled_deleter(storage_id, row) {
            Some(xid)
                if xid.into_inner() >= pg_sys::FirstNormalTransactionId.into_inner()
                    && (horizon == pg_sys::InvalidTransactionId
                        || pg_sys::TransactionIdFollows(xid, horizon)) =>
            {
                horizon = xid
            }
            _ => {}
        }
    }
    horizon
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn tuple_complete_speculative(
    rel: pg_sys::Relation,
    slot: *mut pg_sys::TupleTableSlot,
    _token: u32,
    succeeded: bool,
) {
    modify::complete_speculative(rel, slot, succeeded)
}

/// Row locks, every mode: a mark on the row (`modify`).
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn tuple_lock(
    rel: pg_sys::Relation,
    tid: pg_sys::ItemPointer,
    _snapshot: pg_sys::Snapshot,
    slot: *mut pg_sys::TupleTableSlot,
    cid: pg_sys::CommandId,
    mode: pg_sys::LockTupleMode::Type,
    wait_policy: pg_sys::LockWaitPolicy::Type,
    flags: u8,
    tmfd: *mut pg_sys::TM_FailureData,
) -> pg_sys::TM_Result::Type {
    modify::lock(rel, tid, slot, cid, mode, wait_policy, flags, tmfd)
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn relation_nontransactional_truncate(rel: pg_sys::Relation) {
    life::truncate_in_place(rel)
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn index_build_range_scan(
    table: pg_sys::Relation,
    index: pg_sys::Relation,
    info: *mut pg_sys::IndexInfo,
    _allow_sync: bool,
    _anyvisible: bool,
    _progress: bool,
    start_blockno: pg_sys::BlockNumber,
    numblocks: pg_sys::BlockNumber,
    callback: pg_sys::IndexBuildCallback,
    callback_state: *mut std::ffi::c_void,
    scan: pg_sys::TableScanDesc,
) -> f64 {
    life::index_build(
        table,
        index,
        info,
        start_blockno,
        numblocks,
        callback,
        callback_state,
        scan,
    )
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn index_validate_scan(
    table: pg_sys::Relation,
    index: pg_sys::Relation,
    info: *mut pg_sys::IndexInfo,
    snapshot: pg_sys::Snapshot,
    state: *mut pg_sys::ValidateIndexState,
) {
    life::index_validate(table, index, info, snapshot, state)
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn relation_size(
    rel: pg_sys::Relation,
    fork: pg_sys::ForkNumber::Type,
) -> u64 {
    pg_sys::table_block_relation_size(rel, fork)
}

/// Values are stored whole, detoasted, in the stripes: no TOAST table is needed.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn relation_needs_toast_table(_rel: pg_sys::Relation) -> bool {
    false
}

/// Should a TOAST table ever be made for a pg_columnar table, it is a heap table.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn relation_toast_am(_rel: pg_sys::Relation) -> pg_sys::Oid {
    pg_sys::Oid::from(pg_sys::HEAP_TABLE_AM_OID)
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn relation_fetch_toast_slice(
    _toastrel: pg_sys::Relation,
    _valueid: pg_sys::Oid,
    _attrsize: i32,
    _sliceoffset: i32,
    _slicelength: i32,
    _result: *mut pg_sys::varlena,
) {
    not_supported("serving as a TOAST table")
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn relation_estimate_size(
    rel: pg_sys::Relation,
    _attr_widths: *mut i32,
    pages: *mut pg_sys::BlockNumber,
    tuples: *mut f64,
    allvisfrac: *mut f64,
) {
    let (p, t) = life::estimate_size(rel);
    *pages = p;
    *tuples = t;
    // there is no visibility map: an index-only scan always fetches the row
    *allvisfrac = 0.0;
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn scan_sample_next_block(
    s: pg_sys::TableScanDesc,
    state: *mut pg_sys::SampleScanState,
) -> bool {
    scan::state(s).sample().next_block(state)
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn scan_sample_next_tuple(
    s: pg_sys::TableScanDesc,
    state: *mut pg_sys::SampleScanState,
    slot: *mut pg_sys::TupleTableSlot,
) -> bool {
    scan::state(s).sample().next_row(state, slot)
}

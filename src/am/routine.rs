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
// SAFETY: plain data (no pointer to memory it owns), never written after it is built
unsafe impl Send for Routine {}
static ROUTINE: OnceLock<Routine> = OnceLock::new();

/// The routine; the relcache keeps pointers to it, so it lives as long as the process.
pub fn routine() -> *const pg_sys::TableAmRoutine {
    let routine = &ROUTINE.get_or_init(|| Routine(build())).0;
    super::relation::note_routine(routine);
    routine
}

fn build() -> pg_sys::TableAmRoutine {
    // SAFETY: TableAmRoutine is a tag and optional function pointers, for which all zeroes is
    // a valid value (no callback)
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

/// The `slot_callbacks` callback.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `slot_callbacks`, with that callback's
/// arguments.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn slot_callbacks(
    _rel: pg_sys::Relation,
) -> *const pg_sys::TupleTableSlotOps {
    super::slot::ops()
}

/// The `scan_begin` callback.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `scan_begin`, with that callback's arguments.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn scan_begin(
    rel: pg_sys::Relation,
    snapshot: pg_sys::Snapshot,
    nkeys: std::ffi::c_int,
    key: *mut pg_sys::ScanKeyData,
    pscan: pg_sys::ParallelTableScanDesc,
    flags: u32,
) -> pg_sys::TableScanDesc {
    // SAFETY: PostgreSQL's arguments of `scan_begin` (this function's contract), as
    // `scan::begin` takes them
    unsafe { scan::begin(rel, snapshot, nkeys, key, pscan, flags) }
}

/// The `scan_end` callback.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `scan_end`, with that callback's arguments.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn scan_end(s: pg_sys::TableScanDesc) {
    // SAFETY: PostgreSQL's arguments of `scan_end` (this function's contract), as
    // `scan::end` takes them
    unsafe { scan::end(s) }
}

/// The `scan_rescan` callback.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `scan_rescan`, with that callback's
/// arguments.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn scan_rescan(
    s: pg_sys::TableScanDesc,
    _key: *mut pg_sys::ScanKeyData,
    _set_params: bool,
    _allow_strat: bool,
    _allow_sync: bool,
    _allow_pagemode: bool,
) {
    // SAFETY: PostgreSQL's arguments of `scan_rescan` (this function's contract), as
    // `scan::rescan` takes them
    unsafe { scan::rescan(s) }
}

/// The `scan_getnextslot` and `scan_getnextslot_tidrange` callbacks.
///
/// # Safety
///
/// Only PostgreSQL calls it, as either callback, with that callback's arguments.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn scan_getnextslot(
    s: pg_sys::TableScanDesc,
    direction: pg_sys::ScanDirection::Type,
    slot: *mut pg_sys::TupleTableSlot,
) -> bool {
    // SAFETY: PostgreSQL's arguments of either callback (this function's contract), as
    // `scan::getnextslot` takes them
    unsafe { scan::getnextslot(s, direction, slot) }
}

/// The `scan_set_tidrange` callback.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `scan_set_tidrange`, with that callback's
/// arguments.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn scan_set_tidrange(
    s: pg_sys::TableScanDesc,
    mintid: pg_sys::ItemPointer,
    maxtid: pg_sys::ItemPointer,
) {
    // SAFETY: PostgreSQL's arguments of `scan_set_tidrange` (this function's contract), as
    // `scan::set_tidrange` takes them
    unsafe { scan::set_tidrange(s, mintid, maxtid) }
}

/// The `parallelscan_estimate` callback.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `parallelscan_estimate`, with that callback's
/// arguments.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn parallelscan_estimate(_rel: pg_sys::Relation) -> pg_sys::Size {
    scan::parallel_size()
}

/// The `parallelscan_initialize` callback.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `parallelscan_initialize`, with that
/// callback's arguments.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn parallelscan_initialize(
    rel: pg_sys::Relation,
    pscan: pg_sys::ParallelTableScanDesc,
) -> pg_sys::Size {
    // SAFETY: PostgreSQL's arguments of `parallelscan_initialize` (this function's
    // contract), as `scan::parallel_initialize` takes them
    unsafe { scan::parallel_initialize(rel, pscan) }
}

/// The `parallelscan_reinitialize` callback.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `parallelscan_reinitialize`, with that
/// callback's arguments.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn parallelscan_reinitialize(
    _rel: pg_sys::Relation,
    pscan: pg_sys::ParallelTableScanDesc,
) {
    // SAFETY: PostgreSQL's arguments of `parallelscan_reinitialize` (this function's
    // contract), as `scan::parallel_reinitialize` takes them
    unsafe { scan::parallel_reinitialize(pscan) }
}

/// The `index_fetch_reset` callback.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `index_fetch_reset`, with that callback's
/// arguments.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn index_fetch_reset(data: *mut pg_sys::IndexFetchTableData) {
    // SAFETY: PostgreSQL's arguments of `index_fetch_reset` (this function's contract), as
    // `fetch::reset` takes them
    unsafe { fetch::reset(data) }
}

/// The `index_fetch_end` callback.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `index_fetch_end`, with that callback's
/// arguments.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn index_fetch_end(data: *mut pg_sys::IndexFetchTableData) {
    // SAFETY: PostgreSQL's arguments of `index_fetch_end` (this function's contract), as
    // `fetch::end` takes them
    unsafe { fetch::end(data) }
}

/// The `index_fetch_tuple` callback.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `index_fetch_tuple`, with that callback's
/// arguments.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn index_fetch_tuple(
    data: *mut pg_sys::IndexFetchTableData,
    tid: pg_sys::ItemPointer,
    snapshot: pg_sys::Snapshot,
    slot: *mut pg_sys::TupleTableSlot,
    call_again: *mut bool,
    all_dead: *mut bool,
) -> bool {
    // SAFETY: PostgreSQL's arguments of `index_fetch_tuple` (this function's contract):
    // `call_again` valid to write, `all_dead` null or valid, the rest as `fetch::fetch` takes
    unsafe {
        *call_again = false;
        let mut dead = false;
        let found = fetch::fetch(data, tid, snapshot, slot, &mut dead);
        if !all_dead.is_null() {
            *all_dead = dead;
        }
        found
    }
}

/// The `tuple_fetch_row_version` callback.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `tuple_fetch_row_version`, with that
/// callback's arguments.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn tuple_fetch_row_version(
    rel: pg_sys::Relation,
    tid: pg_sys::ItemPointer,
    snapshot: pg_sys::Snapshot,
    slot: *mut pg_sys::TupleTableSlot,
) -> bool {
    // SAFETY: PostgreSQL's arguments of `tuple_fetch_row_version` (this function's
    // contract), as `fetch::fetch_row_version` takes them
    unsafe { fetch::fetch_row_version(rel, tid, snapshot, slot) }
}

/// The `tuple_tid_valid` callback.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `tuple_tid_valid`, with that callback's
/// arguments.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn tuple_tid_valid(
    s: pg_sys::TableScanDesc,
    tid: pg_sys::ItemPointer,
) -> bool {
    // SAFETY: PostgreSQL's arguments of `tuple_tid_valid` (this function's contract), as
    // `fetch::tid_valid` takes them
    unsafe { fetch::tid_valid(s, tid) }
}

/// The newest version of the row at `tid` that the scan's snapshot sees (`currtid_byrelname`,
/// `WHERE CURRENT OF` through a TID scan): follows UPDATEs' marks.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `tuple_get_latest_tid`, with that callback's
/// arguments.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn tuple_get_latest_tid(
    s: pg_sys::TableScanDesc,
    tid: pg_sys::ItemPointer,
) {
    // SAFETY: `s` is a scan of this access method, of an open relation under a valid
    // snapshot, and `tid` a valid TID (this function's contract: PostgreSQL's arguments)
    unsafe { modify::latest_version((*s).rs_rd, &mut *tid, (*s).rs_snapshot) }
}

/// The `tuple_satisfies_snapshot` callback.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `tuple_satisfies_snapshot`, with that
/// callback's arguments.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn tuple_satisfies_snapshot(
    rel: pg_sys::Relation,
    slot: *mut pg_sys::TupleTableSlot,
    snapshot: pg_sys::Snapshot,
) -> bool {
    // SAFETY: PostgreSQL's arguments of `tuple_satisfies_snapshot` (this function's
    // contract), as `fetch::satisfies_snapshot` takes them
    unsafe { fetch::satisfies_snapshot(rel, slot, snapshot) }
}

/// Which of an index page's entries may be removed. The index's own dead marks (`LP_DEAD`,
/// `knowndeletable` here) are kept: an entry is marked only when a fetch reported its row
/// dead to all (`fetch::fetch`): a row whose inserter aborted, which no snapshot can see, or
/// one whose deletion every snapshot sees. The latest transaction of such deletions is the
/// conflict horizon: a standby cancels its queries whose snapshots may still see the rows
/// before it removes the entries. Other entries are not looked into, so a bottom-up deletion,
/// which asks the table for rows dead to every snapshot, gets none: VACUUM removes the
/// entries of such rows (`am::vacuum`).
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `index_delete_tuples`, with that callback's
/// arguments.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn index_delete_tuples(
    rel: pg_sys::Relation,
    delstate: *mut pg_sys::TM_IndexDeleteOp,
) -> pg_sys::TransactionId {
    // SAFETY: `delstate` is valid (this function's contract: PostgreSQL's argument)
    if unsafe { (*delstate).bottomup } {
        // SAFETY: `delstate` is valid to write (this function's contract)
        unsafe { (*delstate).ndeltids = 0 };
        return pg_sys::InvalidTransactionId;
    }
    let mut horizon = pg_sys::InvalidTransactionId;
    let Some(storage_id) = crate::storage::meta::storage_id(rel) else {
        return horizon;
    };
    // SAFETY: `delstate` is valid, its `deltids` holding `ndeltids` entries
    let deltids = unsafe {
        std::slice::from_raw_parts((*delstate).deltids, (*delstate).ndeltids.max(0) as usize)
    };
    for d in deltids {
        // SAFETY: `status` has an entry for every id of `deltids` (tableam.h's
        // TM_IndexDeleteOp)
        if !unsafe { (*(*delstate).status.add(d.id as usize)).knowndeletable } {
            continue;
        }
        let Some(row) = crate::storage::tid::from_tid(&d.tid) else {
            continue;
        };
        match crate::storage::marks::settled_deleter(storage_id, row) {
            Some(xid)
                if xid.into_inner() >= pg_sys::FirstNormalTransactionId.into_inner()
                    && (horizon == pg_sys::InvalidTransactionId
                        // SAFETY: a comparison of two transaction ids, reading no shared state
                        || unsafe { pg_sys::TransactionIdFollows(xid, horizon) }) =>
            {
                horizon = xid
            }
            _ => {}
        }
    }
    horizon
}

/// The `tuple_complete_speculative` callback.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `tuple_complete_speculative`, with that
/// callback's arguments.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn tuple_complete_speculative(
    rel: pg_sys::Relation,
    slot: *mut pg_sys::TupleTableSlot,
    _token: u32,
    succeeded: bool,
) {
    // SAFETY: PostgreSQL's arguments of `tuple_complete_speculative` (this function's
    // contract), as `modify::complete_speculative` takes them
    unsafe { modify::complete_speculative(rel, slot, succeeded) }
}

/// Row locks, every mode: a mark on the row (`modify`).
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `tuple_lock`, with that callback's arguments.
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
    // SAFETY: PostgreSQL's arguments of `tuple_lock` (this function's contract), as
    // `modify::lock` takes them
    unsafe { modify::lock(rel, tid, slot, cid, mode, wait_policy, flags, tmfd) }
}

/// The `relation_nontransactional_truncate` callback.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `relation_nontransactional_truncate`, with
/// that callback's arguments.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn relation_nontransactional_truncate(rel: pg_sys::Relation) {
    // SAFETY: PostgreSQL's arguments of `relation_nontransactional_truncate` (this
    // function's contract), as `life::truncate_in_place` takes them
    unsafe { life::truncate_in_place(rel) }
}

/// The `index_build_range_scan` callback.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `index_build_range_scan`, with that
/// callback's arguments.
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
    // SAFETY: PostgreSQL's arguments of `index_build_range_scan` (this function's contract),
    // as `life::index_build` takes them
    unsafe {
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
}

/// The `index_validate_scan` callback.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `index_validate_scan`, with that callback's
/// arguments.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn index_validate_scan(
    table: pg_sys::Relation,
    index: pg_sys::Relation,
    info: *mut pg_sys::IndexInfo,
    snapshot: pg_sys::Snapshot,
    state: *mut pg_sys::ValidateIndexState,
) {
    // SAFETY: PostgreSQL's arguments of `index_validate_scan` (this function's contract),
    // as `life::index_validate` takes them
    unsafe { life::index_validate(table, index, info, snapshot, state) }
}

/// The `relation_size` callback.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `relation_size`, with that callback's
/// arguments.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn relation_size(
    rel: pg_sys::Relation,
    fork: pg_sys::ForkNumber::Type,
) -> u64 {
    // SAFETY: PostgreSQL's arguments of `relation_size` (this function's contract), as
    // `pg_sys::table_block_relation_size` takes them
    unsafe { pg_sys::table_block_relation_size(rel, fork) }
}

/// Values are stored whole, detoasted, in the stripes: no TOAST table is needed.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `relation_needs_toast_table`, with that
/// callback's arguments.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn relation_needs_toast_table(_rel: pg_sys::Relation) -> bool {
    false
}

/// Should a TOAST table ever be made for a pg_columnar table, it is a heap table.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `relation_toast_am`, with that callback's
/// arguments.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn relation_toast_am(_rel: pg_sys::Relation) -> pg_sys::Oid {
    pg_sys::Oid::from(pg_sys::HEAP_TABLE_AM_OID)
}

/// The `relation_fetch_toast_slice` callback.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `relation_fetch_toast_slice`, with that
/// callback's arguments.
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

/// The `relation_estimate_size` callback.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `relation_estimate_size`, with that
/// callback's arguments.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn relation_estimate_size(
    rel: pg_sys::Relation,
    _attr_widths: *mut i32,
    pages: *mut pg_sys::BlockNumber,
    tuples: *mut f64,
    allvisfrac: *mut f64,
) {
    // SAFETY: PostgreSQL's arguments of `relation_estimate_size` (this function's contract):
    // `rel` open, the three outputs valid to write
    unsafe {
        let (p, t) = life::estimate_size(rel);
        *pages = p;
        *tuples = t;
        // there is no visibility map: an index-only scan always fetches the row
        *allvisfrac = 0.0;
    }
}

/// The `scan_sample_next_block` callback.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `scan_sample_next_block`, with that
/// callback's arguments.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn scan_sample_next_block(
    s: pg_sys::TableScanDesc,
    state: *mut pg_sys::SampleScanState,
) -> bool {
    // SAFETY: PostgreSQL's arguments of `scan_sample_next_block` (this function's
    // contract), as `scan::state` takes them
    unsafe { scan::state(s).sample().next_block(state) }
}

/// The `scan_sample_next_tuple` callback.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `scan_sample_next_tuple`, with that
/// callback's arguments.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn scan_sample_next_tuple(
    s: pg_sys::TableScanDesc,
    state: *mut pg_sys::SampleScanState,
    slot: *mut pg_sys::TupleTableSlot,
) -> bool {
    // SAFETY: PostgreSQL's arguments of `scan_sample_next_tuple` (this function's
    // contract), as `scan::state` takes them
    unsafe { scan::state(s).sample().next_row(state, slot) }
}

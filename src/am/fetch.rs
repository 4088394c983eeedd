//! Fetching single rows by TID: index scans, TID scans, snapshot checks.
//!
//! An index fetch keeps the stripes its snapshot sees and the last decoded vector, so an
//! index scan that visits nearby rows decodes each vector once, not once per row.

use pgrx::pg_sys;

use super::read::stripe_index_of;
use super::scan::ScanState;
use super::tid;
use crate::storage::{catalog, marks};

/// Identity of a snapshot for cache purposes: a different command, xmin or xmax means a
/// possibly different set of visible stripes.
type SnapshotKey = (usize, u32, u32, u32);

fn snapshot_key(s: pg_sys::Snapshot) -> SnapshotKey {
    unsafe { (s as usize, (*s).curcid, (*s).xmin.into_inner(), (*s).xmax.into_inner()) }
}

#[repr(C)]
pub struct FetchDesc {
    base: pg_sys::IndexFetchTableData,
    state: *mut FetchState,
}

struct FetchState {
    key: Option<SnapshotKey>,
    scan: Option<ScanState>,
}

unsafe extern "C-unwind" fn drop_state(arg: *mut std::ffi::c_void) {
    let desc = arg as *mut FetchDesc;
    if !(*desc).state.is_null() {
        drop(Box::from_raw((*desc).state));
        (*desc).state = std::ptr::null_mut();
    }
}

pub unsafe fn begin(rel: pg_sys::Relation) -> *mut pg_sys::IndexFetchTableData {
    let desc = pg_sys::palloc0(std::mem::size_of::<FetchDesc>()) as *mut FetchDesc;
    (*desc).base.rel = rel;
    (*desc).state = Box::into_raw(Box::new(FetchState { key: None, scan: None }));
    let cb = pg_sys::palloc0(std::mem::size_of::<pg_sys::MemoryContextCallback>()) as *mut pg_sys::MemoryContextCallback;
    (*cb).func = Some(drop_state);
    (*cb).arg = desc as *mut std::ffi::c_void;
    pg_sys::MemoryContextRegisterResetCallback(pg_sys::CurrentMemoryContext, cb);
    desc as *mut pg_sys::IndexFetchTableData
}

pub unsafe fn reset(data: *mut pg_sys::IndexFetchTableData) {
    let st = (*(data as *mut FetchDesc)).state;
    if !st.is_null() {
        (*st).key = None;
        (*st).scan = None;
    }
}

pub unsafe fn end(data: *mut pg_sys::IndexFetchTableData) {
    drop_state(data as *mut std::ffi::c_void);
}

/// Stores row `row` into `slot` if `snapshot` (that of `scan`, a [`ScanState::for_fetch`])
/// sees it: its stripe, and not its delete mark.
fn fetch_into(scan: &mut ScanState, row: u64, snapshot: pg_sys::Snapshot, slot: *mut pg_sys::TupleTableSlot) -> bool {
    match (stripe_index_of(&scan.stripes, row), scan.storage_id) {
        (Some(_), Some(id)) if marks::is_deleted(id, row, snapshot) => false,
        (Some(i), _) => {
            let first = scan.stripes[i].first_row;
            scan.store_offset(i, row - first, slot);
            true
        }
        (None, _) => false,
    }
}

pub unsafe fn fetch(
    data: *mut pg_sys::IndexFetchTableData,
    tid: pg_sys::ItemPointer,
    snapshot: pg_sys::Snapshot,
    slot: *mut pg_sys::TupleTableSlot,
) -> bool {
    let desc = data as *mut FetchDesc;
    let st = &mut *(*desc).state;
    let Some(row) = tid::from_tid(&*tid) else { return false };
    let key = snapshot_key(snapshot);
    if st.key != Some(key) || st.scan.is_none() {
        st.scan = Some(ScanState::for_fetch((*desc).base.rel, snapshot, None));
        st.key = Some(key);
    }
    fetch_into(st.scan.as_mut().unwrap(), row, snapshot, slot)
}

pub unsafe fn fetch_row_version(
    rel: pg_sys::Relation,
    tid: pg_sys::ItemPointer,
    snapshot: pg_sys::Snapshot,
    slot: *mut pg_sys::TupleTableSlot,
) -> bool {
    let Some(row) = tid::from_tid(&*tid) else { return false };
    let mut scan = ScanState::for_fetch(rel, snapshot, Some(row));
    if !fetch_into(&mut scan, row, snapshot, slot) {
        return false;
    }
    // the slot points into the decoded vector, which goes away with `scan`: copy the values
    // into the slot's own memory
    if let Some(materialize) = (*(*slot).tts_ops).materialize {
        materialize(slot);
    }
    true
}

pub unsafe fn tid_valid(scan: pg_sys::TableScanDesc, tid: pg_sys::ItemPointer) -> bool {
    match (tid::from_tid(&*tid), crate::storage::meta::read((*scan).rs_rd)) {
        (Some(row), Some(m)) => row < m.next_row,
        _ => false,
    }
}

/// Whether `snapshot` sees the row at `tid`: its stripe, and not its delete mark.
pub fn row_visible(rel: pg_sys::Relation, tid: &pg_sys::ItemPointerData, snapshot: pg_sys::Snapshot) -> bool {
    let Some(row) = tid::from_tid(tid) else { return false };
    if super::write::holds_row(rel, row) {
        super::write::flush_relation(rel);
    }
    let Some(m) = crate::storage::meta::read(rel) else { return false };
    stripe_index_of(&catalog::stripes(m.storage_id, snapshot), row).is_some() && !marks::is_deleted(m.storage_id, row, snapshot)
}

pub unsafe fn satisfies_snapshot(rel: pg_sys::Relation, slot: *mut pg_sys::TupleTableSlot, snapshot: pg_sys::Snapshot) -> bool {
    row_visible(rel, &(*slot).tts_tid, snapshot)
}

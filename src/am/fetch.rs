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

/// What a cached SnapshotAny fetch is valid for: the relation (its relcache entry, OID and
/// file), the command and the transaction nesting level.
type AnyFetchKey = (usize, pg_sys::Oid, u32, pg_sys::CommandId, i32);

thread_local! {
    /// The scan of the last SnapshotAny fetch by TID, kept for the next one of the same
    /// relation in the same command: an UPDATE fetches every old row this way (to build the
    /// new version), as do RETURNING and AFTER triggers, and a scan per row would read the
    /// stripe catalog and parse a stripe directory per row. Rows never change and SnapshotAny
    /// masks none, so only a stripe written since can be missing: a row not found rebuilds it.
    /// Forgotten at the end of every (sub)transaction ([`forget_cached_fetch`]).
    static ANY_FETCH: std::cell::RefCell<Option<(AnyFetchKey, ScanState)>> = const { std::cell::RefCell::new(None) };
}

/// Forgets the cached SnapshotAny fetch (transaction and subtransaction ends).
pub fn forget_cached_fetch() {
    ANY_FETCH.with(|c| c.borrow_mut().take());
}

pub unsafe fn fetch_row_version(
    rel: pg_sys::Relation,
    tid: pg_sys::ItemPointer,
    snapshot: pg_sys::Snapshot,
    slot: *mut pg_sys::TupleTableSlot,
) -> bool {
    let Some(row) = tid::from_tid(&*tid) else { return false };
    if (*snapshot).snapshot_type == pg_sys::SnapshotType::SNAPSHOT_ANY {
        let key = (rel as usize, (*rel).rd_id, crate::compat::relfile_number(rel), pg_sys::GetCurrentCommandId(false), pg_sys::GetCurrentTransactionNestLevel());
        ANY_FETCH.with(|c| {
            let mut cache = c.borrow_mut();
            let fresh = super::write::flush_if_holding(rel, row) || !cache.as_ref().is_some_and(|(k, _)| *k == key);
            if !fresh {
                if let Some((_, scan)) = cache.as_mut() {
                    if fetch_copied(scan, row, snapshot, slot) {
                        return true;
                    }
                }
            }
            let mut scan = ScanState::for_fetch(rel, snapshot, Some(row));
            let found = fetch_copied(&mut scan, row, snapshot, slot);
            *cache = Some((key, scan));
            found
        })
    } else {
        fetch_copied(&mut ScanState::for_fetch(rel, snapshot, Some(row)), row, snapshot, slot)
    }
}

/// [`fetch_into`], then the values copied into the slot's own memory: they point into the
/// scan's decoded vector, which the next fetch reuses or the scan's end frees.
unsafe fn fetch_copied(scan: &mut ScanState, row: u64, snapshot: pg_sys::Snapshot, slot: *mut pg_sys::TupleTableSlot) -> bool {
    if !fetch_into(scan, row, snapshot, slot) {
        return false;
    }
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
    super::write::flush_if_holding(rel, row);
    let Some(m) = crate::storage::meta::read(rel) else { return false };
    stripe_index_of(&catalog::stripes(m.storage_id, snapshot), row).is_some() && !marks::is_deleted(m.storage_id, row, snapshot)
}

pub unsafe fn satisfies_snapshot(rel: pg_sys::Relation, slot: *mut pg_sys::TupleTableSlot, snapshot: pg_sys::Snapshot) -> bool {
    row_visible(rel, &(*slot).tts_tid, snapshot)
}

//! The table access method's scan descriptor: `scan_begin` picks, from the scan's flags, the
//! cursor that reads the way the executor will ask ([`TableScan`]), over a reader of the
//! stripes the snapshot sees; the other scan callbacks reach it through [`state`].

use std::sync::atomic::{AtomicU64, Ordering};

use pgrx::pg_sys;

use super::analyze::AnalyzeScan;
use super::bitmap::{BitmapScan, SampleScan};
use super::reader::StripeReader;
use super::rows::RowScan;
use crate::am::write;
use crate::storage::tid;

/// The shared state of a parallel scan, in dynamic shared memory.
#[repr(C)]
pub(super) struct ParallelShared {
    base: pg_sys::ParallelTableScanDescData,
    next_stripe: AtomicU64,
}

#[repr(C)]
pub(super) struct ScanDesc {
    base: pg_sys::TableScanDescData,
    state: *mut TableScan,
}

/// A table access method scan, by the way the executor reads it.
pub enum TableScan {
    /// Sequential and TID-range scans (also index builds' and other callers' scans).
    Rows(RowScan),
    Bitmap(BitmapScan),
    Sample(SampleScan),
    Analyze(AnalyzeScan),
}

impl TableScan {
    fn restart(&mut self) {
        match self {
            TableScan::Rows(s) => s.restart(),
            TableScan::Bitmap(s) => s.restart(),
            TableScan::Sample(s) => s.restart(),
            TableScan::Analyze(_) => {}
        }
    }

    pub fn rows(&mut self) -> &mut RowScan {
        match self {
            TableScan::Rows(s) => s,
            _ => misused("rows in order"),
        }
    }

    pub fn bitmap(&mut self) -> &mut BitmapScan {
        match self {
            TableScan::Bitmap(s) => s,
            _ => misused("a bitmap's rows"),
        }
    }

    pub fn sample(&mut self) -> &mut SampleScan {
        match self {
            TableScan::Sample(s) => s,
            _ => misused("a sample's rows"),
        }
    }

    pub fn analyze(&mut self) -> &mut AnalyzeScan {
        match self {
            TableScan::Analyze(s) => s,
            _ => misused("ANALYZE's sample"),
        }
    }
}

/// A scan asked for rows in a way its flags did not say at `scan_begin` (a caller outside
/// PostgreSQL's executor).
fn misused(what: &str) -> ! {
    pgrx::error!(
        "pg_columnar: a scan was asked for {what}, which its flags at its start did not announce"
    )
}

/// Frees the Rust state of the scan descriptor `arg`, once: called by [`end`] and, for a scan
/// that ended in an error, when the memory context holding the descriptor is reset. Not
/// `#[pg_guard]`: it raises no ERROR and dropping the state does not panic.
///
/// # Safety
/// `arg` is a descriptor [`begin`] made, in memory not yet freed.
unsafe extern "C-unwind" fn drop_state(arg: *mut std::ffi::c_void) {
    let desc = arg as *mut ScanDesc;
    // SAFETY: `desc` is a live descriptor of `begin`'s (this function's contract); a non-null
    // `state` is the Box it leaked, and is nulled here so it is freed once
    unsafe {
        if !(*desc).state.is_null() {
            drop(Box::from_raw((*desc).state));
            (*desc).state = std::ptr::null_mut();
        }
    }
}

/// Allocates a scan descriptor in the current memory context. Its Rust state is freed by
/// `scan_end`, or when the memory context goes away if the scan ended in an error.
///
/// # Safety
/// The arguments are `scan_begin`'s: `rel` open and locked, `snapshot` registered or null,
/// `pscan` null or the parallel scan's shared state, sized by [`parallel_size`].
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
        // before the stripes are listed (`am::ssi`)
        crate::am::ssi::lock_relation(rel, snapshot);
    }
    let shared = if pscan.is_null() {
        std::ptr::null()
    } else {
        // SAFETY: a parallel scan's shared state is a `ParallelShared`, laid out by
        // `parallel_initialize` in memory that outlives every worker's scan
        unsafe { &(*(pscan as *mut ParallelShared)).next_stripe as *const AtomicU64 }
    };
    let state = if flags & SO_TYPE_BITMAPSCAN != 0 {
        TableScan::Bitmap(BitmapScan::new(StripeReader::for_bitmap(rel, snapshot)))
    } else if flags & SO_TYPE_SAMPLESCAN != 0 {
        TableScan::Sample(SampleScan::new(StripeReader::visible(rel, snapshot, false)))
    } else if flags & SO_TYPE_ANALYZE != 0 {
        TableScan::Analyze(AnalyzeScan::new(StripeReader::visible(
            rel, snapshot, false,
        )))
    } else {
        TableScan::Rows(RowScan::new(
            StripeReader::visible(rel, snapshot, bulk),
            shared,
        ))
    };
    // SAFETY: palloc0 returns zeroed memory of the size asked, in the current context (it
    // raises an ERROR rather than return null); the callback is registered in the same
    // context, so it runs before that memory is freed
    unsafe {
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
}

/// The Rust state of scan `scan`; an ERROR if the scan has ended.
///
/// # Safety
/// `scan` is a descriptor [`begin`] made, not freed; the state is not borrowed elsewhere.
pub unsafe fn state<'a>(scan: pg_sys::TableScanDesc) -> &'a mut TableScan {
    let desc = scan as *mut ScanDesc;
    // SAFETY: `desc` is `begin`'s descriptor (this function's contract), and a non-null
    // `state` its live Box, borrowed by no one else
    unsafe {
        if (*desc).state.is_null() {
            pgrx::error!("pg_columnar: scan used after it ended");
        }
        &mut *(*desc).state
    }
}

/// Ends scan `scan`: frees its state and unregisters the snapshot it registered itself.
///
/// # Safety
/// `scan` is a descriptor [`begin`] made, not freed.
pub unsafe fn end(scan: pg_sys::TableScanDesc) {
    // SAFETY: `scan` is `begin`'s live descriptor (this function's contract); with
    // SO_TEMP_SNAPSHOT its snapshot was registered for the scan alone
    unsafe {
        drop_state(scan as *mut std::ffi::c_void);
        if (*scan).rs_flags & pg_sys::ScanOptions::SO_TEMP_SNAPSHOT != 0 {
            pg_sys::UnregisterSnapshot((*scan).rs_snapshot);
        }
    }
}

/// # Safety
/// As [`state`].
pub unsafe fn rescan(scan: pg_sys::TableScanDesc) {
    // SAFETY: this function's contract is `state`'s
    unsafe { state(scan) }.restart();
}

/// # Safety
/// As [`state`]; `slot` a slot of the scanned relation.
pub unsafe fn getnextslot(
    scan: pg_sys::TableScanDesc,
    direction: pg_sys::ScanDirection::Type,
    slot: *mut pg_sys::TupleTableSlot,
) -> bool {
    let forward = direction != pg_sys::ScanDirection::BackwardScanDirection;
    // SAFETY: this function's contract is `state`'s
    let found = unsafe { state(scan) }.rows().next(forward, slot);
    // A dirty snapshot's reader waits for the transaction it names as inserting (`xmin`) or
    // deleting (`xmax`) the row returned, as heap's dirty check sets them for each tuple
    // (logical replication's apply finds a row without a usable index so). The rows a scan
    // returns name none: the snapshot's own fields, which PostgreSQL does not initialize,
    // would be read as a transaction to wait for (an ERROR on a transaction id that never
    // was).
    // SAFETY: the scan's snapshot is valid while the scan runs (`state`'s contract)
    unsafe {
        let snapshot = (*scan).rs_snapshot;
        if found
            && !snapshot.is_null()
            && (*snapshot).snapshot_type == pg_sys::SnapshotType::SNAPSHOT_DIRTY
        {
            (*snapshot).xmin = pg_sys::InvalidTransactionId;
            (*snapshot).xmax = pg_sys::InvalidTransactionId;
        }
    }
    found
}

/// Restricts scan `scan` to the rows between two TIDs, inclusive, and restarts it.
///
/// # Safety
/// As [`state`]; `mintid` and `maxtid` point to valid item pointers.
pub unsafe fn set_tidrange(
    scan: pg_sys::TableScanDesc,
    mintid: pg_sys::ItemPointer,
    maxtid: pg_sys::ItemPointer,
) {
    // SAFETY: the TIDs are valid (this function's contract)
    let (min, max) = unsafe { (*mintid, *maxtid) };
    let lo =
        tid::block_of(&min) as u64 * tid::ROWS_PER_BLOCK + (min.ip_posid as u64).saturating_sub(1);
    let hi_block = tid::block_of(&max) as u64 * tid::ROWS_PER_BLOCK;
    let hi = match max.ip_posid as u64 {
        0 => hi_block.checked_sub(1),
        p => Some(hi_block + p.min(tid::ROWS_PER_BLOCK) - 1),
    };
    // SAFETY: this function's contract is `state`'s
    let rows = unsafe { state(scan) }.rows();
    match hi {
        Some(hi) => rows.set_range(lo, hi),
        None => rows.set_range(1, 0),
    }
}

pub fn parallel_size() -> usize {
    std::mem::size_of::<ParallelShared>().next_multiple_of(pg_sys::MAXIMUM_ALIGNOF as usize)
}

/// Lays out a parallel scan's shared state; returns its size.
///
/// # Safety
/// `rel` is open; `pscan` points to at least [`parallel_size`] bytes of shared memory.
pub unsafe fn parallel_initialize(
    rel: pg_sys::Relation,
    pscan: pg_sys::ParallelTableScanDesc,
) -> usize {
    // rows this backend buffered must be written before workers look for stripes
    write::flush_relation(rel);
    let shared = pscan as *mut ParallelShared;
    // SAFETY: `pscan` holds `parallel_size()` bytes (this function's contract), as many as a
    // `ParallelShared`, which all-zero bytes and then a zero counter make valid
    unsafe {
        std::ptr::write_bytes(shared as *mut u8, 0, std::mem::size_of::<ParallelShared>());
        (*shared).next_stripe = AtomicU64::new(0);
        crate::compat::set_parallel_scan_relation(pscan, rel);
    }
    parallel_size()
}

/// # Safety
/// `pscan` is a shared state [`parallel_initialize`] laid out.
pub unsafe fn parallel_reinitialize(pscan: pg_sys::ParallelTableScanDesc) {
    // SAFETY: `pscan` is a `ParallelShared` (this function's contract); workers share the
    // counter only through atomic operations
    unsafe { &(*(pscan as *mut ParallelShared)).next_stripe }.store(0, Ordering::SeqCst);
}

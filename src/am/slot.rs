//! The tuple slot a pg_columnar scan fills: a virtual slot (the values point into decoded
//! vectors) that also answers the system columns `xmin`, `cmin`, `xmax` and `cmax`, which a
//! plain virtual slot refuses. A row's `xmin` and `cmin` are those of the catalog row that
//! made its stripe visible (the transaction and command that wrote it, as heap reports a
//! tuple's raw header fields); rows are never deleted, so `xmax` is 0 and `cmax` equals
//! `cmin`, as in an undeleted heap tuple. `ctid` and `tableoid` are every slot's own, and a
//! heap copy of the row keeps them.

use std::sync::OnceLock;

use pgrx::pg_sys;

#[repr(C)]
struct RowSlot {
    base: pg_sys::VirtualTupleTableSlot,
    /// Of the row stored, or InvalidTransactionId when the slot holds no row of a stripe
    /// (empty, or values copied in from another slot).
    xmin: pg_sys::TransactionId,
    cmin: pg_sys::CommandId,
}

struct Ops(pg_sys::TupleTableSlotOps);
// SAFETY: a size and function pointers, immutable once built.
unsafe impl Sync for Ops {}
unsafe impl Send for Ops {}
static OPS: OnceLock<Ops> = OnceLock::new();

/// The slot operations of pg_columnar tables (`slot_callbacks`).
pub fn ops() -> *const pg_sys::TupleTableSlotOps {
    &OPS.get_or_init(|| {
        let mut ops = unsafe { pg_sys::TTSOpsVirtual };
        ops.base_slot_size = std::mem::size_of::<RowSlot>();
        ops.clear = Some(clear);
        ops.copyslot = Some(copyslot);
        ops.getsysattr = Some(getsysattr);
        ops.copy_heap_tuple = Some(copy_heap_tuple);
        crate::compat::set_is_current_xact_tuple(&mut ops, is_current_xact_tuple);
        Ops(ops)
    })
    .0
}

fn is_row_slot(slot: *mut pg_sys::TupleTableSlot) -> bool {
    unsafe { std::ptr::eq((*slot).tts_ops, ops()) }
}

/// Records which stripe the row just stored in `slot` comes from (a no-op for other slots).
pub fn set_origin(slot: *mut pg_sys::TupleTableSlot, xmin: pg_sys::TransactionId, cmin: pg_sys::CommandId) {
    if is_row_slot(slot) {
        unsafe {
            let s = slot as *mut RowSlot;
            (*s).xmin = xmin;
            (*s).cmin = cmin;
        }
    }
}

/// `ExecClearTuple` for a slot about to take a scan's next row, without a call into
/// PostgreSQL in the common case: a pg_columnar slot or a virtual one that holds no memory
/// of its own is cleared as `tts_virtual_clear` would (the slot forgets its values and its
/// TID, ours also the row's origin). Other slots, and one that owns a materialized copy, go
/// through `ExecClearTuple`.
///
/// # Safety
/// `slot` must be a valid slot.
pub unsafe fn clear_for_row(slot: *mut pg_sys::TupleTableSlot) {
    let flags = (*slot).tts_flags as u32;
    let ours = is_row_slot(slot);
    let virtual_ = std::ptr::eq((*slot).tts_ops, &raw const pg_sys::TTSOpsVirtual);
    if (ours || virtual_) && flags & pg_sys::TTS_FLAG_SHOULDFREE == 0 {
        if ours {
            forget_origin(slot);
        }
        (*slot).tts_nvalid = 0;
        (*slot).tts_flags |= pg_sys::TTS_FLAG_EMPTY as u16;
        (*slot).tts_tid = super::tid::INVALID;
    } else {
        pg_sys::ExecClearTuple(slot);
    }
}

/// `ExecStoreVirtualTuple` on an empty slot whose values and nulls are set: marks them
/// valid, as that function does, without the call.
///
/// # Safety
/// `slot` must be a valid, empty slot with its first `natts` values set.
pub unsafe fn store_virtual(slot: *mut pg_sys::TupleTableSlot) {
    debug_assert!((*slot).tts_flags as u32 & pg_sys::TTS_FLAG_EMPTY != 0);
    (*slot).tts_flags &= !(pg_sys::TTS_FLAG_EMPTY as u16);
    (*slot).tts_nvalid = (*(*slot).tts_tupleDescriptor).natts as i16;
}

unsafe fn forget_origin(slot: *mut pg_sys::TupleTableSlot) {
    (*(slot as *mut RowSlot)).xmin = pg_sys::InvalidTransactionId;
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn clear(slot: *mut pg_sys::TupleTableSlot) {
    forget_origin(slot);
    (pg_sys::TTSOpsVirtual.clear.expect("virtual slots clear"))(slot)
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn copyslot(dst: *mut pg_sys::TupleTableSlot, src: *mut pg_sys::TupleTableSlot) {
    forget_origin(dst);
    (pg_sys::TTSOpsVirtual.copyslot.expect("virtual slots copy"))(dst, src)
}

/// A heap copy of the row that keeps its TID and table, as a heap slot's copy does (a plain
/// virtual slot's copy has neither). ANALYZE sorts its sample by the copies' TIDs before it
/// computes each column's correlation with row order, which the custom scan's costs read.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn copy_heap_tuple(slot: *mut pg_sys::TupleTableSlot) -> pg_sys::HeapTuple {
    let tuple = (pg_sys::TTSOpsVirtual.copy_heap_tuple.expect("virtual slots copy heap tuples"))(slot);
    (*tuple).t_self = (*slot).tts_tid;
    (*tuple).t_tableOid = (*slot).tts_tableOid;
    tuple
}

fn no_system_column() -> ! {
    pgrx::ereport!(
        ERROR,
        pgrx::PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
        "cannot retrieve a system column in this context"
    );
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn getsysattr(slot: *mut pg_sys::TupleTableSlot, attnum: std::ffi::c_int, isnull: *mut bool) -> pg_sys::Datum {
    let s = slot as *mut RowSlot;
    if (*s).xmin == pg_sys::InvalidTransactionId {
        no_system_column();
    }
    *isnull = false;
    match attnum {
        pg_sys::MinTransactionIdAttributeNumber => pg_sys::Datum::from((*s).xmin.into_inner()),
        pg_sys::MaxTransactionIdAttributeNumber => pg_sys::Datum::from(0u32),
        pg_sys::MinCommandIdAttributeNumber | pg_sys::MaxCommandIdAttributeNumber => pg_sys::Datum::from((*s).cmin),
        _ => no_system_column(),
    }
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn is_current_xact_tuple(slot: *mut pg_sys::TupleTableSlot) -> bool {
    let s = slot as *mut RowSlot;
    if (*s).xmin == pg_sys::InvalidTransactionId {
        no_system_column();
    }
    pg_sys::TransactionIdIsCurrentTransactionId((*s).xmin)
}

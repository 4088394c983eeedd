//! The tuple slot a pg_columnar scan fills: a virtual slot (the values point into decoded
//! vectors) that also answers the system columns `xmin`, `cmin`, `xmax` and `cmax`, which a
//! plain virtual slot refuses. A row's `xmin` and `cmin` are those of the catalog row that
//! made its stripe visible (the transaction and command that wrote it, as heap reports a
//! tuple's raw header fields); a row just inserted, or an UPDATE's new version, has its
//! inserting (sub)transaction and command. `xmax` is what heap's raw xmax would be: the
//! transaction of the row's deletion if it has one that has not aborted, else of its latest
//! row lock (read from the row's marks when asked), 0 for a row with neither; a new version
//! that kept row locks (an upsert's, of a row it locked) has its updater's. `cmax` equals
//! `cmin`. `ctid` and `tableoid` are every slot's own, and a heap copy of the row keeps them.
//! A slot can also hold a row without its values, read column by column when asked
//! ([`store_deferred`]).

use std::sync::OnceLock;

use pgrx::pg_sys;

#[repr(C)]
struct RowSlot {
    base: pg_sys::VirtualTupleTableSlot,
    /// Of the row stored, or InvalidTransactionId when the slot holds no row of a stripe
    /// (empty, or values copied in from another slot).
    xmin: pg_sys::TransactionId,
    cmin: pg_sys::CommandId,
    /// `xmax` as the row's writer knows it ([`set_xmax`]), when `xmax_known`; otherwise it
    /// is read from the row's marks.
    xmax: pg_sys::TransactionId,
    xmax_known: bool,
    /// A row stored without its values ([`store_deferred`]), read when asked; `relid`
    /// InvalidOid when there is none.
    deferred: Deferred,
    /// Where the values read for a deferred row live until the slot is cleared (made when
    /// first needed, a child of the slot's context).
    deferred_mcxt: pg_sys::MemoryContext,
}

/// A row of a pg_columnar table whose values a slot has not read yet: the table (its OID and
/// the file its row numbers belong to) and the row number.
#[derive(Clone, Copy)]
pub struct Deferred {
    pub relid: pg_sys::Oid,
    pub relfile: u32,
    pub row: u64,
}

/// Reads columns of a deferred row ([`store_deferred`]) and gives each to the callback with
/// its column; returns the end of the columns given. The slot stores rows for every reader
/// of the access method, so the one that reads a deferred row (`fetch::read_deferred`) is
/// given to it when the library loads ([`set_deferred_reader`]) rather than named here.
pub(super) type DeferredReader = fn(
    Deferred,
    std::ops::Range<usize>,
    pg_sys::TupleDesc,
    &mut dyn FnMut(usize, pg_sys::Datum, bool),
) -> usize;

static DEFERRED_READER: OnceLock<DeferredReader> = OnceLock::new();

/// Sets the reader of deferred rows (once, at load).
pub fn set_deferred_reader(reader: DeferredReader) {
    let _ = DEFERRED_READER.set(reader);
}

struct Ops(pg_sys::TupleTableSlotOps);
// SAFETY: a size and function pointers, immutable once built.
unsafe impl Sync for Ops {}
// SAFETY: plain data (no pointer to memory it owns), never written after it is built
unsafe impl Send for Ops {}
static OPS: OnceLock<Ops> = OnceLock::new();

/// The slot operations of pg_columnar tables (`slot_callbacks`).
pub fn ops() -> *const pg_sys::TupleTableSlotOps {
    &OPS.get_or_init(|| {
        // SAFETY: a copy of PostgreSQL's constant table of the virtual slot's operations
        let mut ops = unsafe { pg_sys::TTSOpsVirtual };
        ops.base_slot_size = std::mem::size_of::<RowSlot>();
        ops.clear = Some(clear);
        ops.copyslot = Some(copyslot);
        ops.getsysattr = Some(getsysattr);
        ops.copy_heap_tuple = Some(copy_heap_tuple);
        ops.getsomeattrs = Some(getsomeattrs);
        ops.materialize = Some(materialize);
        ops.release = Some(release);
        set_copy_minimal_tuple(&mut ops);
        crate::compat::set_is_current_xact_tuple(&mut ops, is_current_xact_tuple);
        Ops(ops)
    })
    .0
}

pub(super) fn is_row_slot(slot: *mut pg_sys::TupleTableSlot) -> bool {
    // SAFETY: `slot` is a valid slot (every caller's; a safe fn over a raw pointer, so not
    // checked)
    unsafe { std::ptr::eq((*slot).tts_ops, ops()) }
}

/// Records which stripe the row just stored in `slot` comes from (a no-op for other slots).
pub(super) fn set_origin(
    slot: *mut pg_sys::TupleTableSlot,
    xmin: pg_sys::TransactionId,
    cmin: pg_sys::CommandId,
) {
    if is_row_slot(slot) {
        // SAFETY: a valid slot (every caller's, not checked) made with our operations, so a
        // RowSlot (checked just above)
        unsafe {
            let s = slot as *mut RowSlot;
            (*s).xmin = xmin;
            (*s).cmin = cmin;
            (*s).xmax_known = false;
        }
    }
}

/// Records the `xmax` of the row in `slot`, which its writer knows: 0 for a row just
/// inserted, the updater for a new version that kept row locks (a no-op for other slots).
pub(super) fn set_xmax(slot: *mut pg_sys::TupleTableSlot, xmax: pg_sys::TransactionId) {
    if is_row_slot(slot) {
        // SAFETY: a valid slot (every caller's, not checked) made with our operations, so a
        // RowSlot (checked just above)
        unsafe {
            let s = slot as *mut RowSlot;
            (*s).xmax = xmax;
            (*s).xmax_known = true;
        }
    }
}

/// The raw `xmax` of the row in `slot` (see the module documentation), from its marks.
///
/// # Safety
///
/// `slot` is a valid slot holding a row of a pg_columnar table, in a transaction.
unsafe fn xmax_of_marks(slot: *mut pg_sys::TupleTableSlot) -> pg_sys::TransactionId {
    // SAFETY: `slot` is valid (this function's contract)
    let Some(row) = crate::storage::tid::from_tid(unsafe { &(*slot).tts_tid }) else {
        return pg_sys::InvalidTransactionId;
    };
    // the table is open: the statement that read the row holds its lock
    // SAFETY: `slot` is valid, in a transaction (this function's contract); opening by OID
    // gives null if the relation is gone, and it is closed below
    let rel = unsafe { pg_sys::RelationIdGetRelation((*slot).tts_tableOid) };
    if rel.is_null() {
        return pg_sys::InvalidTransactionId;
    }
    let storage_id = crate::storage::meta::storage_id(rel);
    // SAFETY: opened above, closed once, not used after
    unsafe { pg_sys::RelationClose(rel) };
    let Some(storage_id) = storage_id else {
        return pg_sys::InvalidTransactionId;
    };
    let marks = crate::storage::marks::of_row(storage_id, row);
    marks
        .iter()
        .find(|m| m.mode.deletes())
        .or_else(|| marks.last())
        .map_or(pg_sys::InvalidTransactionId, |m| m.xid)
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
    // SAFETY: `slot` is valid (this function's contract)
    let flags = unsafe { (*slot).tts_flags } as u32;
    let ours = is_row_slot(slot);
    // SAFETY: `slot` is valid (this function's contract)
    let virtual_ = std::ptr::eq(unsafe { (*slot).tts_ops }, &raw const pg_sys::TTSOpsVirtual);
    // SAFETY: `slot` is valid (this function's contract), and a RowSlot when `ours`; one that
    // owns no memory (no SHOULDFREE) is cleared by forgetting its values, as the virtual
    // slot's clear does
    unsafe {
        if (ours || virtual_) && flags & pg_sys::TTS_FLAG_SHOULDFREE == 0 {
            if ours {
                forget_origin(slot);
                forget_deferred(slot);
            }
            (*slot).tts_nvalid = 0;
            (*slot).tts_flags |= pg_sys::TTS_FLAG_EMPTY as u16;
            (*slot).tts_tid = crate::storage::tid::INVALID;
        } else {
            pg_sys::ExecClearTuple(slot);
        }
    }
}

/// `ExecStoreVirtualTuple` on an empty slot whose values and nulls are set: marks them
/// valid, as that function does, without the call.
///
/// # Safety
/// `slot` must be a valid, empty slot with its first `natts` values set.
pub unsafe fn store_virtual(slot: *mut pg_sys::TupleTableSlot) {
    // SAFETY: `slot` is a valid, empty slot whose values are set (this function's contract)
    unsafe {
        debug_assert!((*slot).tts_flags as u32 & pg_sys::TTS_FLAG_EMPTY != 0);
        (*slot).tts_flags &= !(pg_sys::TTS_FLAG_EMPTY as u16);
        (*slot).tts_nvalid = (*(*slot).tts_tupleDescriptor).natts as i16;
    }
}

/// Copies the by-reference values of the row stored in `slot` into the slot's own memory
/// (`ExecMaterializeSlot`), for values that point into memory about to be reused or freed.
///
/// # Safety
/// `slot` must be a valid slot holding a row.
pub(super) unsafe fn own_values(slot: *mut pg_sys::TupleTableSlot) {
    // SAFETY: `slot` is a valid slot holding a row (this function's contract), whose
    // operations' `materialize` takes it
    unsafe {
        if let Some(materialize) = (*(*slot).tts_ops).materialize {
            materialize(slot);
        }
    }
}

/// Forgets the origin of the row in `slot`.
///
/// # Safety
///
/// `slot` is a valid slot of ours (a `RowSlot`).
unsafe fn forget_origin(slot: *mut pg_sys::TupleTableSlot) {
    // SAFETY: `slot` is a RowSlot (this function's contract)
    unsafe {
        (*(slot as *mut RowSlot)).xmin = pg_sys::InvalidTransactionId;
        (*(slot as *mut RowSlot)).xmax_known = false;
    }
}

/// Forgets the deferred row of `slot` (one of ours) and frees the values read for it.
///
/// # Safety
///
/// `slot` is a valid slot of ours (a `RowSlot`), whose deferred values are not used after.
unsafe fn forget_deferred(slot: *mut pg_sys::TupleTableSlot) {
    let s = slot as *mut RowSlot;
    // SAFETY: `slot` is a RowSlot (this function's contract); its deferred context, if made,
    // is its own, and nothing keeps its values (this function's contract)
    unsafe {
        (*s).deferred.relid = pg_sys::InvalidOid;
        if !(*s).deferred_mcxt.is_null() {
            pg_sys::MemoryContextReset((*s).deferred_mcxt);
        }
    }
}

/// Stores row `d` in `slot` (one of ours, see [`is_row_slot`]) without its values: each
/// column is read from the table when something asks for it (`slot_getsomeattrs`, and
/// every copy or materialization, which read them all). A unique check only asks whether
/// a row is there, and ON CONFLICT's look for a conflicting row reads the index's columns,
/// where decoding every column (a page each) took about 30% of an INSERT ... ON CONFLICT
/// DO NOTHING whose rows half conflict. `xmin` and `cmin` are those of the row's stripe, as [`set_origin`] takes them.
///
/// # Safety
/// `slot` must be a valid slot of ours for `d`'s relation's descriptor.
pub(super) unsafe fn store_deferred(
    slot: *mut pg_sys::TupleTableSlot,
    d: Deferred,
    xmin: pg_sys::TransactionId,
    cmin: pg_sys::CommandId,
) {
    debug_assert!(is_row_slot(slot));
    // SAFETY: `slot` is a valid slot of ours, a RowSlot (this function's contract); cleared
    // first, it holds the deferred row, no value valid yet
    unsafe {
        pg_sys::ExecClearTuple(slot);
        let s = slot as *mut RowSlot;
        (*s).deferred = d;
        (*slot).tts_flags &= !(pg_sys::TTS_FLAG_EMPTY as u16);
        (*slot).tts_nvalid = 0;
        (*slot).tts_tid = crate::storage::tid::to_tid(d.row);
        (*slot).tts_tableOid = d.relid;
    }
    set_origin(slot, xmin, cmin);
    DEFERRED_ROWS.with(|n| n.set(n.get() + 1));
}

thread_local! {
    /// Rows stored deferred so far, and the columns read for them (`pgcol.kept_stripes`).
    static DEFERRED_ROWS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    static DEFERRED_COLUMNS_READ: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Rows stored deferred so far in this backend, and the column values read for them.
pub fn deferred_stats() -> (u64, u64) {
    (
        DEFERRED_ROWS.with(|n| n.get()),
        DEFERRED_COLUMNS_READ.with(|n| n.get()),
    )
}

/// Reads every value of `slot`'s deferred row, if it holds one: what copies and
/// materializations of a virtual slot need (they read `tts_values` whole).
///
/// # Safety
/// `slot` must be a valid slot of ours.
pub(super) unsafe fn read_all(slot: *mut pg_sys::TupleTableSlot) {
    // SAFETY: `slot` is a valid slot (this function's contract); `natts` is its descriptor's
    unsafe {
        let natts = (*(*slot).tts_tupleDescriptor).natts;
        if (*slot).tts_nvalid < natts as i16 {
            pg_sys::slot_getsomeattrs_int(slot, natts);
        }
    }
}

/// Reads columns `tts_nvalid..natts` of the deferred row (those the row's stripe stores;
/// PostgreSQL fills the later ones with their defaults), copying values passed by reference
/// into the slot's deferred context.
///
/// # Safety
///
/// Called by PostgreSQL through [`ops`]: `slot` is a valid slot made with these operations,
/// so a `RowSlot`.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn getsomeattrs(
    slot: *mut pg_sys::TupleTableSlot,
    natts: std::ffi::c_int,
) {
    let s = slot as *mut RowSlot;
    // SAFETY: `slot` is a RowSlot (this function's contract)
    let d = unsafe { (*s).deferred };
    if d.relid == pg_sys::InvalidOid {
        // what a virtual slot says to this
        // SAFETY: a RowSlot begins with a virtual slot, whose operation this is
        return unsafe {
            (pg_sys::TTSOpsVirtual
                .getsomeattrs
                .expect("virtual slots have getsomeattrs"))(slot, natts)
        };
    }
    // SAFETY: `slot` is a RowSlot (this function's contract); the deferred context is made
    // once, a child of the slot's, and deleted in `release`
    let (desc, from, values, nulls, mcxt) = unsafe {
        if (*s).deferred_mcxt.is_null() {
            (*s).deferred_mcxt = pg_sys::AllocSetContextCreateInternal(
                (*slot).tts_mcxt,
                c"pg_columnar deferred row".as_ptr(),
                0,
                pg_sys::ALLOCSET_SMALL_INITSIZE as usize,
                pg_sys::ALLOCSET_SMALL_MAXSIZE as usize,
            );
        }
        (
            (*slot).tts_tupleDescriptor,
            (*slot).tts_nvalid as usize,
            (*slot).tts_values,
            (*slot).tts_isnull,
            (*s).deferred_mcxt,
        )
    };
    let read = DEFERRED_READER
        .get()
        .expect("the reader of deferred rows is set when the library loads");
    let end = read(d, from..natts as usize, desc, &mut |c, value, null| {
        // SAFETY: the reader gives columns `c` below `natts`, at most the descriptor's, which
        // the slot's arrays have; a by-reference value is copied into the deferred context
        unsafe {
            *nulls.add(c) = null;
            *values.add(c) = if null {
                pg_sys::Datum::from(0)
            } else {
                let attr = crate::compat::tuple_desc_attr(desc, c);
                if (*attr).attbyval {
                    value
                } else {
                    let old = pg_sys::MemoryContextSwitchTo(mcxt);
                    let copy = pg_sys::datumCopy(value, false, (*attr).attlen as i32);
                    pg_sys::MemoryContextSwitchTo(old);
                    copy
                }
            };
        }
    });
    DEFERRED_COLUMNS_READ.with(|n| n.set(n.get() + end.saturating_sub(from) as u64));
    // SAFETY: `slot` is valid (this function's contract); columns below `end` were set above
    unsafe { (*slot).tts_nvalid = end as i16 };
}

/// The slot's `materialize`: the virtual slot's, after the deferred values are read.
///
/// # Safety
///
/// Called by PostgreSQL through [`ops`]: `slot` is a valid slot made with these operations,
/// so a `RowSlot`.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn materialize(slot: *mut pg_sys::TupleTableSlot) {
    // SAFETY: `slot` is a RowSlot (this function's contract), which begins with a virtual
    // slot, whose operation this is
    unsafe {
        read_all(slot);
        (pg_sys::TTSOpsVirtual
            .materialize
            .expect("virtual slots materialize"))(slot)
    }
}

/// The slot's `release`: frees the deferred context, then as the virtual slot's.
///
/// # Safety
///
/// Called by PostgreSQL through [`ops`]: `slot` is a valid slot made with these operations,
/// so a `RowSlot`.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn release(slot: *mut pg_sys::TupleTableSlot) {
    let s = slot as *mut RowSlot;
    // SAFETY: `slot` is a RowSlot (this function's contract); its deferred context, if made,
    // is deleted once (the pointer is reset); then the virtual slot's operation
    unsafe {
        if !(*s).deferred_mcxt.is_null() {
            pg_sys::MemoryContextDelete((*s).deferred_mcxt);
            (*s).deferred_mcxt = std::ptr::null_mut();
        }
        (pg_sys::TTSOpsVirtual
            .release
            .expect("virtual slots release"))(slot)
    }
}

/// The slot's `clear`: forgets the row's origin and deferred values, then as the virtual
/// slot's.
///
/// # Safety
///
/// Called by PostgreSQL through [`ops`]: `slot` is a valid slot made with these operations,
/// so a `RowSlot`.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn clear(slot: *mut pg_sys::TupleTableSlot) {
    // SAFETY: `slot` is a RowSlot (this function's contract), which begins with a virtual
    // slot; clearing it ends the use of its deferred values
    unsafe {
        forget_origin(slot);
        forget_deferred(slot);
        (pg_sys::TTSOpsVirtual.clear.expect("virtual slots clear"))(slot)
    }
}

/// The slot's `copyslot`: `dst` forgets its row's origin, then as the virtual slot's, and
/// keeps `src`'s TID as a heap slot's copy keeps its tuple's. Logical replication's apply
/// finds a row of a table without a usable index by a scan, copies it into its own slot and
/// locks it by that slot's TID: without the TID the lock met no row ("attempted to lock
/// invisible tuple") and the subscription stopped at the first UPDATE or DELETE of a
/// `REPLICA IDENTITY FULL` table.
///
/// # Safety
///
/// Called by PostgreSQL through [`ops`]: `dst` is a valid slot made with these operations (a
/// `RowSlot`) and `src` a valid slot of the same descriptor.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn copyslot(
    dst: *mut pg_sys::TupleTableSlot,
    src: *mut pg_sys::TupleTableSlot,
) {
    // SAFETY: `dst` is a RowSlot and `src` a valid slot (this function's contract); the
    // copy replaces `dst`'s row, ending the use of its deferred values
    unsafe {
        forget_origin(dst);
        forget_deferred(dst);
        (pg_sys::TTSOpsVirtual.copyslot.expect("virtual slots copy"))(dst, src);
        (*dst).tts_tid = (*src).tts_tid;
    }
}

/// A heap copy of the row that keeps its TID and table, as a heap slot's copy does (a plain
/// virtual slot's copy has neither). ANALYZE sorts its sample by the copies' TIDs before it
/// computes each column's correlation with row order, which the custom scan's costs read.
///
/// # Safety
///
/// Called by PostgreSQL through [`ops`]: `slot` is a valid slot made with these operations,
/// so a `RowSlot`.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn copy_heap_tuple(
    slot: *mut pg_sys::TupleTableSlot,
) -> pg_sys::HeapTuple {
    // SAFETY: `slot` is a RowSlot (this function's contract), which begins with a virtual
    // slot; the copy it makes is a fresh heap tuple (an ERROR rather than null)
    unsafe {
        read_all(slot);
        let tuple = (pg_sys::TTSOpsVirtual
            .copy_heap_tuple
            .expect("virtual slots copy heap tuples"))(slot);
        (*tuple).t_self = (*slot).tts_tid;
        (*tuple).t_tableOid = (*slot).tts_tableOid;
        tuple
    }
}

fn no_system_column() -> ! {
    pgrx::ereport!(
        ERROR,
        pgrx::PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
        "cannot retrieve a system column in this context"
    );
}

/// The slot's `getsysattr`: `xmin`, `xmax`, `cmin` and `cmax` of a row of a stripe.
///
/// # Safety
///
/// Called by PostgreSQL through [`ops`]: `slot` is a valid slot made with these operations (a
/// `RowSlot`), `isnull` valid to write.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn getsysattr(
    slot: *mut pg_sys::TupleTableSlot,
    attnum: std::ffi::c_int,
    isnull: *mut bool,
) -> pg_sys::Datum {
    let s = slot as *mut RowSlot;
    // SAFETY: `slot` is a RowSlot and `isnull` valid to write (this function's contract); a
    // slot with an origin holds a row of a stripe, as `xmax_of_marks` wants
    unsafe {
        if (*s).xmin == pg_sys::InvalidTransactionId {
            no_system_column();
        }
        *isnull = false;
        match attnum {
            pg_sys::MinTransactionIdAttributeNumber => pg_sys::Datum::from((*s).xmin.into_inner()),
            pg_sys::MaxTransactionIdAttributeNumber => {
                let xmax = if (*s).xmax_known {
                    (*s).xmax
                } else {
                    xmax_of_marks(slot)
                };
                pg_sys::Datum::from(xmax.into_inner())
            }
            pg_sys::MinCommandIdAttributeNumber | pg_sys::MaxCommandIdAttributeNumber => {
                pg_sys::Datum::from((*s).cmin)
            }
            _ => no_system_column(),
        }
    }
}

/// The slot's `is_current_xact_tuple` (from 17): whether this transaction wrote the row.
///
/// # Safety
///
/// Called by PostgreSQL through [`ops`]: `slot` is a valid slot made with these operations,
/// so a `RowSlot`.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn is_current_xact_tuple(slot: *mut pg_sys::TupleTableSlot) -> bool {
    let s = slot as *mut RowSlot;
    // SAFETY: `slot` is a RowSlot (this function's contract)
    let xmin = unsafe { (*s).xmin };
    if xmin == pg_sys::InvalidTransactionId {
        no_system_column();
    }
    // SAFETY: asks about this backend's transaction state, in a transaction
    unsafe { pg_sys::TransactionIdIsCurrentTransactionId(xmin) }
}

/// Sets a slot type's `copy_minimal_tuple` to the virtual slot's after the slot's deferred
/// values are read (`am::slot::read_all`); from 18 it takes the bytes to leave free before
/// the tuple.
fn set_copy_minimal_tuple(ops: &mut pg_sys::TupleTableSlotOps) {
    ops.copy_minimal_tuple = Some(copy_minimal_tuple);
}

/// The slot's `copy_minimal_tuple`: the virtual slot's, after the deferred values are read.
///
/// # Safety
///
/// Called by PostgreSQL through [`ops`]: `slot` is a valid slot made with these operations,
/// so a `RowSlot`.
#[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn copy_minimal_tuple(
    slot: *mut pg_sys::TupleTableSlot,
) -> pg_sys::MinimalTuple {
    // SAFETY: `slot` is a RowSlot (this function's contract), which begins with a virtual
    // slot, whose operation this is
    unsafe {
        read_all(slot);
        (pg_sys::TTSOpsVirtual
            .copy_minimal_tuple
            .expect("virtual slots copy minimal tuples"))(slot)
    }
}

/// The slot's `copy_minimal_tuple`: the virtual slot's, after the deferred values are read.
///
/// # Safety
///
/// Called by PostgreSQL through [`ops`]: `slot` is a valid slot made with these operations,
/// so a `RowSlot`.
#[cfg(any(feature = "pg18", feature = "pg19"))]
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn copy_minimal_tuple(
    slot: *mut pg_sys::TupleTableSlot,
    extra: pg_sys::Size,
) -> pg_sys::MinimalTuple {
    // SAFETY: `slot` is a RowSlot (this function's contract), which begins with a virtual
    // slot, whose operation this is
    unsafe {
        read_all(slot);
        (pg_sys::TTSOpsVirtual
            .copy_minimal_tuple
            .expect("virtual slots copy minimal tuples"))(slot, extra)
    }
}

/// Whether the rows in slots `a` and `b` have the same value (by its bytes, as heap compares
/// them; NULL equal to NULL) in each column `compared` marks (by 0-based attribute index).
///
/// # Safety
///
/// `rel` is an open relation, `a` and `b` slots of its descriptor holding rows, and
/// `compared` at most as long as the descriptor.
pub(super) unsafe fn same_values(
    rel: pg_sys::Relation,
    a: *mut pg_sys::TupleTableSlot,
    b: *mut pg_sys::TupleTableSlot,
    compared: &[bool],
) -> bool {
    // SAFETY: both slots are of `rel`'s descriptor and hold a row (this function's
    // contract); after slot_getallattrs each has `natts` deformed values, and every index
    // compared is below `natts`
    unsafe {
        pg_sys::slot_getallattrs(a);
        pg_sys::slot_getallattrs(b);
        compared
            .iter()
            .enumerate()
            .filter(|(_, &c)| c)
            .all(|(i, _)| {
                let attr = &*crate::compat::tuple_desc_attr((*rel).rd_att, i);
                match (*(*a).tts_isnull.add(i), *(*b).tts_isnull.add(i)) {
                    (true, true) => true,
                    (false, false) => pg_sys::datumIsEqual(
                        *(*a).tts_values.add(i),
                        *(*b).tts_values.add(i),
                        attr.attbyval,
                        attr.attlen.into(),
                    ),
                    _ => false,
                }
            })
    }
}

/// The user columns a relation's attribute bitmap holds (attribute numbers offset by
/// `FirstLowInvalidHeapAttributeNumber`, as `RelationGetIndexAttrBitmap` gives them), as a
/// flag per 0-based column of the `natts`; `Err` if it holds a system column or one past
/// `natts`.
///
/// # Safety
///
/// `bits` is null or a valid Bitmapset.
pub(super) unsafe fn columns_of(
    bits: *mut pg_sys::Bitmapset,
    natts: usize,
) -> Result<Vec<bool>, ()> {
    let mut columns = vec![false; natts];
    let mut member = -1;
    loop {
        // SAFETY: `bits` is null or valid (this function's contract)
        member = unsafe { pg_sys::bms_next_member(bits, member) };
        if member < 0 {
            return Ok(columns);
        }
        let attno = member + pg_sys::FirstLowInvalidHeapAttributeNumber;
        if attno <= 0 || attno as usize > natts {
            return Err(());
        }
        columns[attno as usize - 1] = true;
    }
}

//! Transaction and subtransaction ends: every per-backend state of the access method that a
//! (sub)transaction's end resets or writes, in one place (the callbacks `hooks` registers).
//! What each state is: docs/ARCHITECTURE.md, "What a backend keeps".

use pgrx::pg_sys;

use super::{fetch, write};
use crate::storage::{catalog, marks, meta, reservations};

/// The transaction callback (`RegisterXactCallback`).
///
/// # Safety
///
/// Called only by PostgreSQL, for a transaction event of this backend, `_arg` unused.
#[pgrx::pg_guard]
pub unsafe extern "C-unwind" fn xact_callback(
    event: pg_sys::XactEvent::Type,
    _arg: *mut std::ffi::c_void,
) {
    use pg_sys::XactEvent::*;
    match event {
        XACT_EVENT_PRE_COMMIT | XACT_EVENT_PARALLEL_PRE_COMMIT | XACT_EVENT_PRE_PREPARE => {
            // Rows can still be buffered here when no statement's end wrote them: a logical
            // replication apply worker inserts without an executor and commits without a
            // snapshot. Writing them inserts catalog rows, which (having a TOAST table) want
            // an active snapshot (PostgreSQL 18 asserts it), so one is taken for the writing.
            // SAFETY: only reads whether this backend's stack of active snapshots is empty
            let pushed = !unsafe { pg_sys::ActiveSnapshotSet() };
            if pushed {
                // SAFETY: the transaction is open (pre-commit); the snapshot is popped below
                unsafe { pg_sys::PushActiveSnapshot(pg_sys::GetTransactionSnapshot()) };
            }
            write::flush_all();
            reservations::forget_mine();
            if pushed {
                // SAFETY: pops the snapshot pushed above (an ERROR in between skips this, and
                // the abort then clears the active snapshots)
                unsafe { pg_sys::PopActiveSnapshot() };
            }
        }
        XACT_EVENT_ABORT
        | XACT_EVENT_PARALLEL_ABORT
        | XACT_EVENT_COMMIT
        | XACT_EVENT_PARALLEL_COMMIT
        | XACT_EVENT_PREPARE => {
            write::discard_all();
            reservations::forget_reserved();
            fetch::forget_cached_fetch();
            fetch::forget_aborted_reservations();
            meta::forget_reserved_ids();
            marks::forget_mine();
            crate::storage::forget_held_locks();
            if matches!(event, XACT_EVENT_ABORT | XACT_EVENT_PARALLEL_ABORT) {
                // the rows it numbered are gone; the planner's kept reads count them
                catalog::forget_planning_reads();
            }
        }
        _ => {}
    }
}

/// The subtransaction callback (`RegisterSubXactCallback`).
///
/// # Safety
///
/// Called only by PostgreSQL, for a subtransaction event of this backend, `_arg` unused.
#[pgrx::pg_guard]
pub unsafe extern "C-unwind" fn subxact_callback(
    event: pg_sys::SubXactEvent::Type,
    _my: pg_sys::SubTransactionId,
    _parent: pg_sys::SubTransactionId,
    _arg: *mut std::ffi::c_void,
) {
    use pg_sys::SubXactEvent::*;
    // SAFETY: reads this backend's transaction state, which exists at every event
    let level = unsafe { pg_sys::GetCurrentTransactionNestLevel() };
    match event {
        SUBXACT_EVENT_START_SUB => marks::subtransaction_began(),
        SUBXACT_EVENT_COMMIT_SUB => {
            marks::subtransaction_ended(true);
            write::end_subtransaction(level, true);
            fetch::forget_cached_fetch();
            catalog::forget_reads();
        }
        SUBXACT_EVENT_ABORT_SUB => {
            write::end_subtransaction(level, false);
            fetch::forget_cached_fetch();
            catalog::forget_reads();
            catalog::forget_planning_reads();
            marks::subtransaction_ended(false);
        }
        _ => {}
    }
}

//! DELETE, UPDATE and row locks: marks on single rows in `pgcol.row_mark`
//! (`storage::marks`). An UPDATE deletes the row and inserts its new version as a new row;
//! its mark names the new version, as heap's `t_ctid` does.
//!
//! A writer of a row (a DELETE, an UPDATE, a row lock) does what heap does with a tuple's
//! xmax, with marks in its place and two heavyweight locks on the row where heap has its
//! buffer's content lock and its tuple lock:
//!
//! 1. A lock this transaction already holds at least as strongly needs nothing more
//!    (`marks::held_by_me`, known in memory): heap's "I already hold it" check, made before
//!    any lock is taken, so a transaction never queues behind a waiter for its own row.
//! 2. Under the row's *marks lock* (a short exclusive lock, [`MarksLock`]; heap's buffer lock),
//!    it reads the row's marks with a dirty snapshot and, if nothing stands in the way, adds
//!    its own before letting go: looking and marking are one step. A committed delete mark:
//!    the row is gone (`TM_Deleted`, or `TM_Updated` naming the new version). Its own marks:
//!    a row this transaction deleted is gone for it (`TM_SelfModified` in the same or a later
//!    command, `TM_Invisible` in an earlier one).
//! 3. A running transaction's mark in a conflicting mode: it lets the marks lock go, takes
//!    the row's *tuple lock* (`LockTuple` in the mode heap takes for the request, so waiters
//!    queue in order and compatible requests do not queue behind each other), waits for that
//!    transaction (or gives up, by the wait policy) holding it, and looks again. The tuple
//!    lock is taken only by a writer that must wait, as in heap.
//! 4. An UPDATE that changes no key column carries the running transactions' `FOR KEY SHARE`
//!    locks of the old version to the new one (`marks::insert_carried`; heap keeps them in
//!    the new tuple's xmax), and a `FOR KEY SHARE` of a row whose deletion is such an UPDATE,
//!    running or committed, does not conflict with it and locks the new versions too (heap's
//!    `heap_lock_updated_tuple`): the key a foreign key checked cannot go away under it.
//!
//! Writers of different rows take different locks and never wait for each other. Whether a
//! reader sees a deleted row is the reader's snapshot's business: it sees the delete mark or
//! not (`marks::deleted_rows`).

use pgrx::pg_sys;

use super::publication::{self, Change};
use super::{fetch, write};
use crate::storage::marks::{self, Holder, Mode, Successor};
use crate::storage::meta;
use crate::storage::tid;

/// How to wait for a conflicting transaction.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Wait {
    Block,
    /// Give up with `TM_WouldBlock` (SKIP LOCKED; a DELETE called not to wait).
    Skip,
    /// Raise "could not obtain lock on row" (NOWAIT).
    Error,
}

impl Wait {
    pub(super) fn of_policy(policy: pg_sys::LockWaitPolicy::Type) -> Wait {
        match policy {
            pg_sys::LockWaitPolicy::LockWaitSkip => Wait::Skip,
            pg_sys::LockWaitPolicy::LockWaitError => Wait::Error,
            _ => Wait::Block,
        }
    }
}

/// The tuple lock's mode for a mark of `mode`: heap's (`tupleLockExtraInfo`), so that two
/// waiters for compatible row locks do not wait for each other.
fn tuple_lock_mode(mode: Mode) -> pg_sys::LOCKMODE {
    (match mode.strength() {
        Mode::KeyShare => pg_sys::AccessShareLock,
        Mode::Share => pg_sys::RowShareLock,
        Mode::NoKeyUpdate => pg_sys::ExclusiveLock,
        _ => pg_sys::AccessExclusiveLock,
    }) as pg_sys::LOCKMODE
}

/// The row's marks lock: an exclusive lock held only while its marks are read and one is
/// added, never while waiting for a transaction, so that no two writers decide from the same
/// reading. It is a tuple lock of the relation at an offset no TID of a row has (offsets
/// past `tid::ROWS_PER_BLOCK`), so it shows in `pg_locks` beside the row's tuple lock and the
/// deadlock detector knows it.
struct MarksLock {
    rel: pg_sys::Relation,
    tid: pg_sys::ItemPointerData,
}

/// Added to a row's TID offset for its marks lock (above any offset `tid::to_tid` gives).
const MARKS_LOCK_OFFSET: u16 = 0x8000;

impl MarksLock {
    fn take(rel: pg_sys::Relation, row_tid: &pg_sys::ItemPointerData) -> MarksLock {
        const _: () = assert!(tid::ROWS_PER_BLOCK < MARKS_LOCK_OFFSET as u64);
        let mut tid = *row_tid;
        tid.ip_posid += MARKS_LOCK_OFFSET;
        // SAFETY: `rel` is an open relation (every caller's, as `mark_row`'s contract says);
        // the lock is released by `drop` or, on an ERROR, by the transaction's abort.
        unsafe { pg_sys::LockTuple(rel, &mut tid, pg_sys::ExclusiveLock as pg_sys::LOCKMODE) };
        MarksLock { rel, tid }
    }
}

impl Drop for MarksLock {
    fn drop(&mut self) {
        // SAFETY: taken in `take` on the same relation and TID.
        unsafe {
            pg_sys::UnlockTuple(
                self.rel,
                &mut self.tid,
                pg_sys::ExclusiveLock as pg_sys::LOCKMODE,
            )
        };
    }
}

/// Heap's NOWAIT error, word for word.
fn lock_not_available(rel: pg_sys::Relation) -> ! {
    // SAFETY: `rel` is an open relation of the caller's (a safe fn over a raw pointer: not
    // checked), whose `relname` is a NUL-terminated NameData
    let name = unsafe { std::ffi::CStr::from_ptr((*(*rel).rd_rel).relname.data.as_ptr()) };
    pgrx::ereport!(
        ERROR,
        pgrx::PgSqlErrorCode::ERRCODE_LOCK_NOT_AVAILABLE,
        format!(
            "could not obtain lock on row in relation \"{}\"",
            name.to_string_lossy()
        )
    );
}

/// Takes the tuple lock of `tid` in `lockmode`; false if `wait` says not to wait and it is
/// taken.
///
/// # Safety
///
/// `rel` is an open relation, in a transaction (which releases the lock at its end if the
/// caller does not).
unsafe fn lock_tuple(
    rel: pg_sys::Relation,
    tid: &mut pg_sys::ItemPointerData,
    lockmode: pg_sys::LOCKMODE,
    wait: Wait,
) -> bool {
    match wait {
        Wait::Block => {
            // SAFETY: `rel` is open, in a transaction (this function's contract)
            unsafe { pg_sys::LockTuple(rel, tid, lockmode) };
            true
        }
        // SAFETY: `rel` is open, in a transaction (this function's contract)
        Wait::Skip => unsafe { crate::compat::conditional_lock_tuple(rel, tid, lockmode) },
        Wait::Error => {
            // SAFETY: `rel` is open, in a transaction (this function's contract)
            let taken = unsafe { crate::compat::conditional_lock_tuple(rel, tid, lockmode) };
            taken || lock_not_available(rel)
        }
    }
}

/// What a row's marks say to a writer of `mode` as command `cid` (steps 2 and 4 of the module
/// documentation).
enum MarksSay {
    /// The row is gone: the failure to report (result, ctid, xmax, cmax).
    Gone(
        pg_sys::TM_Result::Type,
        pg_sys::ItemPointerData,
        pg_sys::TransactionId,
        pg_sys::CommandId,
    ),
    /// A running transaction's mark conflicts: wait for it, then look again.
    Wait(pg_sys::TransactionId),
    /// This transaction holds a lock at least as strong already.
    Held,
    /// Nothing stands in the way of the mark.
    Free {
        /// This transaction holds a lock at least as strong already: no mark to add, only
        /// the new versions to follow.
        held: bool,
        /// Running transactions holding `FOR KEY SHARE` on the row (for a no-key UPDATE to
        /// carry to the new version).
        key_sharers: Vec<pg_sys::TransactionId>,
        /// The new version of the row made by a no-key UPDATE, running or committed, that a
        /// `FOR KEY SHARE` lets through: to be locked too.
        follow: Option<pg_sys::ItemPointerData>,
    },
}

/// Reads the marks of row `row` (TID `row_tid`) of `storage_id` with a dirty snapshot and
/// says what they mean for a mark of `mode` as command `cid`; deletes the marks of finished
/// transactions' locks it meets when nothing stands in the way. The caller holds the row's
/// [`MarksLock`].
fn read_marks(
    storage_id: u64,
    row: u64,
    row_tid: pg_sys::ItemPointerData,
    mode: Mode,
    cid: pg_sys::CommandId,
) -> MarksSay {
    use pg_sys::TM_Result::*;
    let mut gone = None;
    let mut held = false;
    let mut blocker = None;
    let mut finished_locks = Vec::new();
    let mut key_sharers = Vec::new();
    let mut follow = None;
    for m in marks::of_row(storage_id, row) {
        let successor_tid = match m.successor {
            None => row_tid,
            Some(Successor::Row(row)) => tid::to_tid(row),
            Some(Successor::OtherPartition) => tid::moved_partitions(),
        };
        // a FOR KEY SHARE lets a no-key UPDATE's deletion through and follows it (heap:
        // "even if there is an update, we can still continue if the key hasn't been
        // modified")
        let key_kept = mode == Mode::KeyShare
            && m.mode == Mode::NoKeyDelete
            && matches!(m.successor, Some(Successor::Row(_)));
        match m.holder {
            Holder::Mine { cmin } if m.mode.deletes() => {
                let result = if cmin >= cid {
                    TM_SelfModified
                } else {
                    TM_Invisible
                };
                gone = Some(MarksSay::Gone(result, successor_tid, m.xid, cmin));
            }
            Holder::Mine { .. } => held |= !mode.deletes() && m.mode >= mode,
            Holder::Committed(_) | Holder::Running(_) if key_kept => follow = Some(successor_tid),
            Holder::Committed(xid) if m.mode.deletes() => {
                let result = if m.successor.is_some() {
                    TM_Updated
                } else {
                    TM_Deleted
                };
                gone = Some(MarksSay::Gone(
                    result,
                    successor_tid,
                    xid,
                    pg_sys::InvalidCommandId,
                ));
            }
            // the lock of a finished transaction holds nothing: not kept
            Holder::Committed(_) if m.forgettable() => finished_locks.push(m.tid),
            Holder::Committed(_) => {}
            // an ON CONFLICT's row taken back never existed, whoever took it back
            Holder::Running(xid) if m.mode == Mode::Killed => {
                gone = Some(MarksSay::Gone(
                    TM_Deleted,
                    row_tid,
                    xid,
                    pg_sys::InvalidCommandId,
                ));
            }
            Holder::Running(xid) => {
                if m.mode.conflicts(mode) {
                    blocker.get_or_insert(xid);
                } else if m.mode == Mode::KeyShare && !key_sharers.contains(&xid) {
                    key_sharers.push(xid);
                }
            }
        }
    }
    if let Some(gone) = gone {
        return gone;
    }
    if let Some(xid) = blocker {
        return MarksSay::Wait(xid);
    }
    marks::forget(&finished_locks);
    if held && follow.is_none() {
        MarksSay::Held
    } else {
        MarksSay::Free {
            held,
            key_sharers,
            follow,
        }
    }
}

/// What kind of change a mark is for: the wait's context line names it, as heap's does.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Doing {
    Delete,
    Update,
    Lock,
}

/// A mark to place: its mode, command, wait policy and kind; `follow_updates`: a `FOR KEY
/// SHARE` also locks the new versions of a row a no-key UPDATE changed (step 4).
#[derive(Clone, Copy)]
struct Request {
    mode: Mode,
    cid: pg_sys::CommandId,
    wait: Wait,
    doing: Doing,
    follow_updates: bool,
}

/// What placing a mark did: the result, and for a deletion, whether row locks stay on the
/// new version (this transaction's own, or others' `FOR KEY SHARE` carried to it): heap's
/// new tuple then has an xmax, which `RETURNING xmax` shows.
struct Marked {
    result: pg_sys::TM_Result::Type,
    locks_kept: bool,
}

/// Places the mark `req` asks for on the row at `tid`, by the steps of the module
/// documentation; fills `tmfd` when it does not. `before_mark` runs once the row is the
/// caller's to change, under the marks lock: it gives the successor to name in the mark (an
/// UPDATE inserts the new version there), or a result to return without a mark.
///
/// # Safety
///
/// `rel` is an open pg_columnar relation, locked as a row change locks it, in a transaction;
/// `tmfd` is valid to write.
unsafe fn mark_row(
    rel: pg_sys::Relation,
    tid: &pg_sys::ItemPointerData,
    req: Request,
    tmfd: *mut pg_sys::TM_FailureData,
    before_mark: impl FnOnce() -> Result<Option<Successor>, pg_sys::TM_Result::Type>,
) -> Marked {
    let Request {
        mode,
        cid,
        wait,
        doing,
        follow_updates,
    } = req;
    use pg_sys::TM_Result::*;
    let Some(row) = tid::from_tid(tid) else {
        pgrx::error!("pg_columnar: invalid TID of a row to change")
    };
    let Some(storage_id) = meta::storage_id(rel) else {
        pgrx::error!(
            "pg_columnar: relation \"{}\" has no rows to change",
            crate::storage::relation_name(rel)
        )
    };
    let row_tid = *tid;
    // SAFETY: `tmfd` is valid to write (this function's contract)
    let fail = |result, ctid, xmax, cmax| unsafe { failed(tmfd, result, ctid, xmax, cmax) };
    let done = |result| Marked {
        result,
        locks_kept: false,
    };
    // step 1: a row this transaction holds locked at least as strongly and has not deleted
    if !mode.deletes() && marks::held_by_me(storage_id, row, mode.strength()) {
        return done(TM_Ok);
    }
    let mut locks_kept = mode.deletes() && marks::held_by_me(storage_id, row, Mode::KeyShare);
    // a row this transaction holds `FOR UPDATE` (or deletes by a key UPDATE after locking it
    // so): every other mark would have waited for it, so there is nothing to read
    let held_exclusively = mode.deletes() && marks::held_by_me(storage_id, row, Mode::Update);
    let oper = match doing {
        Doing::Delete => pg_sys::XLTW_Oper::XLTW_Delete,
        Doing::Update => pg_sys::XLTW_Oper::XLTW_Update,
        Doing::Lock => pg_sys::XLTW_Oper::XLTW_Lock,
    };
    let lockmode = tuple_lock_mode(mode);
    let mut queued = false;
    let mut queue_tid = row_tid;
    let mut before_mark = Some(before_mark);
    let mut then_follow = None;
    let result = loop {
        let marks_lock = MarksLock::take(rel, &row_tid);
        let says = if held_exclusively {
            MarksSay::Free {
                held: false,
                key_sharers: Vec::new(),
                follow: None,
            }
        } else {
            read_marks(storage_id, row, row_tid, mode, cid)
        };
        match says {
            MarksSay::Gone(result, ctid, xmax, cmax) => break fail(result, ctid, xmax, cmax),
            MarksSay::Wait(xid) => {
                drop(marks_lock);
                // step 3: queue for the row, then wait for the transaction
                if !queued {
                    // SAFETY: `rel` is open, in a transaction (this function's contract); the
                    // lock is released below
                    if !unsafe { lock_tuple(rel, &mut queue_tid, lockmode, wait) } {
                        break fail(TM_WouldBlock, row_tid, xid, pg_sys::InvalidCommandId);
                    }
                    queued = true;
                }
                // SAFETY: `rel` is open (this function's contract) and `queue_tid` names the row,
                // for the wait's context line; both waits take and release a lock on `xid`
                let waited = unsafe {
                    if wait == Wait::Block {
                        pg_sys::XactLockTableWait(xid, rel, &mut queue_tid, oper);
                        true
                    } else {
                        crate::compat::conditional_xact_lock_table_wait(xid)
                    }
                };
                if !waited {
                    if wait == Wait::Error {
                        lock_not_available(rel);
                    }
                    break fail(TM_WouldBlock, row_tid, xid, pg_sys::InvalidCommandId);
                }
                continue;
            }
            MarksSay::Held => break TM_Ok,
            MarksSay::Free {
                held: true, follow, ..
            } => {
                then_follow = follow.filter(|_| follow_updates);
                break TM_Ok;
            }
            MarksSay::Free {
                held: false,
                key_sharers,
                follow,
            } => {
                let before_mark = before_mark.take().expect("the mark is placed once");
                match before_mark() {
                    Ok(successor) => {
                        marks::insert(storage_id, row, mode, successor, cid);
                        if let (Mode::NoKeyDelete, Some(Successor::Row(new_row))) =
                            (mode, successor)
                        {
                            locks_kept |= !key_sharers.is_empty();
                            for locker in key_sharers {
                                marks::insert_carried(storage_id, new_row, locker, cid);
                            }
                        }
                        if mode.deletes() {
                            // once the mark is there for others' reads to find (`super::ssi`)
                            super::ssi::check_change(rel, &row_tid);
                        }
                    }
                    Err(result) => {
                        break fail(
                            result,
                            row_tid,
                            pg_sys::InvalidTransactionId,
                            pg_sys::InvalidCommandId,
                        )
                    }
                }
                then_follow = follow.filter(|_| follow_updates);
                break TM_Ok;
            }
        }
    };
    if queued {
        // SAFETY: the tuple lock taken above in `lockmode`, released once
        unsafe { pg_sys::UnlockTuple(rel, &mut queue_tid, lockmode) };
    }
    match then_follow {
        // SAFETY: `rel` and `tmfd` as this function was given them (its contract)
        Some(next) => done(unsafe { lock_updated(rel, &next, cid, wait, tmfd) }),
        None => Marked {
            result,
            locks_kept: locks_kept && result == TM_Ok,
        },
    }
}

/// Locks `FOR KEY SHARE` the new version at `next` of a row this transaction has just locked
/// so, and the versions after it (heap's `heap_lock_updated_tuple`): a deletion of one of
/// them, or an UPDATE of its key, waits for this transaction. Fails as heap's does when one
/// of them is gone (`TM_Updated` naming the next version, or `TM_Deleted`), for the caller to
/// follow or report.
///
/// # Safety
///
/// As [`mark_row`]: `rel` open and locked, in a transaction; `tmfd` valid to write.
unsafe fn lock_updated(
    rel: pg_sys::Relation,
    next: &pg_sys::ItemPointerData,
    cid: pg_sys::CommandId,
    wait: Wait,
    tmfd: *mut pg_sys::TM_FailureData,
) -> pg_sys::TM_Result::Type {
    if tid::is_moved_partitions(next) {
        return pg_sys::TM_Result::TM_Ok;
    }
    let req = Request {
        mode: Mode::KeyShare,
        cid,
        wait,
        doing: Doing::Lock,
        follow_updates: true,
    };
    // SAFETY: `rel` and `tmfd` as this function was given them (its contract, `mark_row`'s)
    match unsafe { mark_row(rel, next, req, tmfd, || Ok(None)) }.result {
        // (this transaction's own new version, or one it deleted: nothing more to lock)
        pg_sys::TM_Result::TM_SelfModified | pg_sys::TM_Result::TM_Invisible => {
            pg_sys::TM_Result::TM_Ok
        }
        result => result,
    }
}

/// Fills `tmfd` for a change that did not happen and returns `result`: `ctid` is the row
/// itself, or the new version of an updated one; `xmax` and `cmax` who changed it.
///
/// # Safety
///
/// `tmfd` is valid to write.
unsafe fn failed(
    tmfd: *mut pg_sys::TM_FailureData,
    result: pg_sys::TM_Result::Type,
    ctid: pg_sys::ItemPointerData,
    xmax: pg_sys::TransactionId,
    cmax: pg_sys::CommandId,
) -> pg_sys::TM_Result::Type {
    // SAFETY: `tmfd` is valid to write (this function's contract)
    unsafe {
        (*tmfd).ctid = ctid;
        (*tmfd).xmax = xmax;
        (*tmfd).cmax = cmax;
        (*tmfd).traversed = false;
    }
    result
}

/// What a foreign-key check under REPEATABLE READ or SERIALIZABLE (`crosscheck`) must find
/// of the row at `tid` before changing it: a row that snapshot does not see counts as changed
/// concurrently, as heap has it.
fn crosschecked(
    rel: pg_sys::Relation,
    tid: &pg_sys::ItemPointerData,
    crosscheck: pg_sys::Snapshot,
) -> Result<(), pg_sys::TM_Result::Type> {
    if crosscheck.is_null() || fetch::row_visible(rel, tid, crosscheck) {
        Ok(())
    } else {
        Err(pg_sys::TM_Result::TM_Updated)
    }
}

/// `tuple_delete`. `changing_part`: the row moves to another partition (an UPDATE of the
/// partition key), which its mark says, as heap's `t_ctid` does: a writer that waited for the
/// move fails as heap's does instead of finding the row deleted. `logged`: the deletion is
/// logged for logical decoding (19's callers can say not to).
///
/// # Safety
///
/// As `tuple_delete` is called: `rel` an open pg_columnar relation locked for writing, `tid`
/// a valid TID, `crosscheck` null or a valid snapshot, `tmfd` valid to write.
pub(super) unsafe fn delete(
    rel: pg_sys::Relation,
    tid: pg_sys::ItemPointer,
    cid: pg_sys::CommandId,
    crosscheck: pg_sys::Snapshot,
    wait: bool,
    tmfd: *mut pg_sys::TM_FailureData,
    changing_part: bool,
    logged: bool,
) -> pg_sys::TM_Result::Type {
    publication::check_write(rel, Change::Delete);
    let wait = if wait { Wait::Block } else { Wait::Skip };
    let moved = changing_part.then_some(Successor::OtherPartition);
    let req = Request {
        mode: Mode::Delete,
        cid,
        wait,
        doing: Doing::Delete,
        follow_updates: false,
    };
    // SAFETY: `rel`, `tid`, `crosscheck` and `tmfd` are as `mark_row` wants them (this
    // function's contract); the closure runs within this call, while `tid` is valid
    let result = unsafe {
        mark_row(rel, &*tid, req, tmfd, || {
            crosschecked(rel, &*tid, crosscheck).map(|()| moved)
        })
    }
    .result;
    if result == pg_sys::TM_Result::TM_Ok {
        // counted as heap's deletes are: autovacuum visits the table after enough of them
        // SAFETY: `rel` is open and `tid` a row of it (this function's contract)
        unsafe {
            pg_sys::pgstat_count_heap_delete(rel);
            if logged {
                super::logical::log_delete(rel, tid);
            }
        }
    }
    result
}

/// Whether the new version in `slot` of the row at `otid` changes a column of `keys` (a
/// relation's key-column bitmap: attribute numbers offset by
/// `FirstLowInvalidHeapAttributeNumber`). Values are compared by their bytes, as heap does; a
/// row that cannot be read, or a system column among the keys, counts as changed.
///
/// # Safety
///
/// `rel` is an open pg_columnar relation, `otid` a valid TID, `slot` a slot of `rel`'s
/// descriptor holding a row, and `keys` a bitmap of `rel`'s attributes as described.
unsafe fn changes_key(
    rel: pg_sys::Relation,
    otid: pg_sys::ItemPointer,
    slot: *mut pg_sys::TupleTableSlot,
    keys: *mut pg_sys::Bitmapset,
) -> bool {
    // SAFETY: `rel` is open and `keys` a valid bitmap (this function's contract)
    let Ok(compared) = (unsafe { super::slot::columns_of(keys, (*(*rel).rd_att).natts as usize) })
    else {
        return true;
    };
    // SAFETY: `rel` is open (this function's contract); the slot is dropped below
    let old = unsafe { pg_sys::table_slot_create(rel, std::ptr::null_mut()) };
    let any = std::ptr::addr_of_mut!(pg_sys::SnapshotAnyData);
    // SAFETY: `rel` and `otid` are valid (this function's contract), `old` a slot of `rel`,
    // and `any` PostgreSQL's static SnapshotAny; both slots are of `rel`'s descriptor
    let changed = unsafe {
        !fetch::fetch_row_version(rel, otid, any, old)
            || !super::slot::same_values(rel, old, slot, &compared)
    };
    // SAFETY: made above, not used after
    unsafe { pg_sys::ExecDropSingleTupleTableSlot(old) };
    changed
}

/// `tuple_update`: the row at `otid` is deleted and its new version, in `slot`, inserted as a
/// new row (buffered like any insert; `slot` gets its TID), which the delete mark names. Every
/// index needs an entry for the new row. Returns the row lock the update took in `lockmode`,
/// as heap's: `FOR UPDATE`'s if it changes a key column (one of a unique index a foreign key
/// could reference), else `FOR NO KEY UPDATE`'s, which does not keep out `FOR KEY SHARE`
/// (a foreign-key check). `logged`: the update is logged for logical decoding (19's callers
/// can say not to).
///
/// # Safety
///
/// As `tuple_update` is called: `rel` an open pg_columnar relation locked for writing, `otid`
/// a valid TID, `slot` a slot of `rel`'s descriptor holding the new version, `crosscheck` null
/// or a valid snapshot, `tmfd` and `lockmode` valid to write.
#[allow(clippy::too_many_arguments)]
pub unsafe fn update(
    rel: pg_sys::Relation,
    otid: pg_sys::ItemPointer,
    slot: *mut pg_sys::TupleTableSlot,
    cid: pg_sys::CommandId,
    crosscheck: pg_sys::Snapshot,
    wait: bool,
    tmfd: *mut pg_sys::TM_FailureData,
    lockmode: *mut pg_sys::LockTupleMode::Type,
    logged: bool,
) -> pg_sys::TM_Result::Type {
    publication::check_write(rel, Change::Update);
    // SAFETY: `rel`, `otid` and `slot` are valid (this function's contract); `keys` is a copy
    // made for this call, freed here once
    let key_changed = unsafe {
        let keys = pg_sys::RelationGetIndexAttrBitmap(
            rel,
            pg_sys::IndexAttrBitmapKind::INDEX_ATTR_BITMAP_KEY,
        );
        let key_changed = !keys.is_null() && changes_key(rel, otid, slot, keys);
        pg_sys::bms_free(keys);
        key_changed
    };
    let (mode, lock) = if key_changed {
        (Mode::Delete, pg_sys::LockTupleMode::LockTupleExclusive)
    } else {
        (
            Mode::NoKeyDelete,
            pg_sys::LockTupleMode::LockTupleNoKeyExclusive,
        )
    };
    // SAFETY: `lockmode` is valid to write (this function's contract)
    unsafe { *lockmode = lock };
    let wait = if wait { Wait::Block } else { Wait::Skip };
    let req = Request {
        mode,
        cid,
        wait,
        doing: Doing::Update,
        follow_updates: false,
    };
    // SAFETY: `rel`, `otid`, `crosscheck`, `slot` and `tmfd` are as `mark_row` and the
    // closure want them (this function's contract); the closure runs within this call
    let marked = unsafe {
        mark_row(rel, &*otid, req, tmfd, || {
            crosschecked(rel, &*otid, crosscheck)?;
            write::insert(rel, &[slot], cid);
            Ok(tid::from_tid(&(*slot).tts_tid).map(Successor::Row))
        })
    };
    if marked.result == pg_sys::TM_Result::TM_Ok {
        // SAFETY: `rel` is open, `otid` a row of it and `slot` its new version (this
        // function's contract)
        unsafe {
            crate::compat::count_update(rel);
            if logged {
                super::logical::log_update(rel, otid, slot);
            }
        }
        if marked.locks_kept {
            // as heap's new tuple, whose xmax keeps the lockers (`RETURNING (xmax = 0)`, an
            // upsert's "inserted or updated", tells the updated row by it)
            // SAFETY: in the updating transaction, which has an id (it just marked a row)
            super::slot::set_xmax(slot, unsafe { pg_sys::GetCurrentTransactionId() });
        }
    }
    marked.result
}

/// `tuple_lock`: the row at `tid` into `slot`, locked in `mode`. The row's latest state
/// decides, not the snapshot, as in heap (see [`fetch::fetch_for_change`]). With
/// `TUPLE_LOCK_FLAG_FIND_LAST_VERSION`, a row updated by a committed transaction is followed
/// to its newest version (`tmfd.traversed`, and `tid` set to it), which is locked and
/// returned instead: READ COMMITTED then rechecks the query's quals on it.
///
/// # Safety
///
/// As `tuple_lock` is called: `rel` an open pg_columnar relation, `tid` a valid TID (written
/// back), `slot` a slot of `rel`'s descriptor, `tmfd` valid to write.
#[allow(clippy::too_many_arguments)]
pub unsafe fn lock(
    rel: pg_sys::Relation,
    tid: pg_sys::ItemPointer,
    slot: *mut pg_sys::TupleTableSlot,
    cid: pg_sys::CommandId,
    mode: pg_sys::LockTupleMode::Type,
    wait_policy: pg_sys::LockWaitPolicy::Type,
    flags: u8,
    tmfd: *mut pg_sys::TM_FailureData,
) -> pg_sys::TM_Result::Type {
    use pg_sys::LockTupleMode as M;
    let mode = match mode {
        M::LockTupleKeyShare => Mode::KeyShare,
        M::LockTupleShare => Mode::Share,
        M::LockTupleNoKeyExclusive => Mode::NoKeyUpdate,
        _ => Mode::Update,
    };
    let follow = flags as u32 & pg_sys::TUPLE_LOCK_FLAG_FIND_LAST_VERSION != 0;
    let req = Request {
        mode,
        cid,
        wait: Wait::of_policy(wait_policy),
        doing: Doing::Lock,
        follow_updates: flags as u32 & pg_sys::TUPLE_LOCK_FLAG_LOCK_UPDATE_IN_PROGRESS != 0,
    };
    let mut traversed = false;
    loop {
        // SAFETY: `rel`, `tid`, `slot` and `tmfd` are valid (this function's contract), as
        // `fetch_for_change`, `mark_row` and `failed` want them
        let result = unsafe {
            match fetch::fetch_for_change(rel, &*tid, cid, slot) {
                fetch::ForChange::Found => mark_row(rel, &*tid, req, tmfd, || Ok(None)).result,
                fetch::ForChange::Invisible | fetch::ForChange::Missing => failed(
                    tmfd,
                    pg_sys::TM_Result::TM_Invisible,
                    *tid,
                    pg_sys::InvalidTransactionId,
                    pg_sys::InvalidCommandId,
                ),
            }
        };
        // SAFETY: `tmfd` is valid to write (this function's contract)
        unsafe { (*tmfd).traversed = traversed };
        if result != pg_sys::TM_Result::TM_Updated || !follow {
            return result;
        }
        // SAFETY: `tmfd` is valid (this function's contract); `mark_row` filled it on TM_Updated
        if tid::is_moved_partitions(unsafe { &(*tmfd).ctid }) {
            // heap's error, word for word
            pgrx::ereport!(
                ERROR,
                pgrx::PgSqlErrorCode::ERRCODE_T_R_SERIALIZATION_FAILURE,
                "tuple to be locked was already moved to another partition due to concurrent update"
            );
        }
        // SAFETY: `tid` and `tmfd` are valid (this function's contract)
        unsafe { *tid = (*tmfd).ctid };
        traversed = true;
    }
}

/// The newest version of the row at `tid` that `snapshot` sees, written back into `tid`
/// (left as it is if it sees none): follows the new versions named by the UPDATE marks of
/// every transaction that has not aborted, as heap's `heap_get_latest_tid` follows `t_ctid`,
/// and keeps the last one the snapshot sees. A REPEATABLE READ `WHERE CURRENT OF` so meets
/// the version its snapshot has, which a concurrent UPDATE changed: a serialization failure,
/// not a row the snapshot cannot see.
///
/// # Safety
///
/// `rel` is an open pg_columnar relation and `snapshot` a valid snapshot.
pub(super) unsafe fn latest_version(
    rel: pg_sys::Relation,
    tid: &mut pg_sys::ItemPointerData,
    snapshot: pg_sys::Snapshot,
) {
    let Some(storage_id) = meta::storage_id(rel) else {
        return;
    };
    let mut at = *tid;
    // (row numbers only grow along a chain: a damaged catalog cannot make it a loop)
    loop {
        let Some(row) = tid::from_tid(&at) else {
            return;
        };
        if fetch::row_visible(rel, &at, snapshot) {
            *tid = at;
        }
        let next = marks::of_row(storage_id, row).into_iter().find_map(|m| {
            if m.mode.deletes() {
                m.successor
            } else {
                None
            }
        });
        match next {
            Some(Successor::Row(successor)) if successor > row => at = tid::to_tid(successor),
            // (the newest version in this table, as heap stops there too)
            _ => return,
        }
    }
}

/// `tuple_complete_speculative`: the row an `INSERT ... ON CONFLICT` inserted stays if its
/// index entries met no conflict; if they met one, the executor looks for the conflicting row
/// again and the row is taken back, for every snapshot at once (a [`Mode::Killed`] mark, heap's
/// super-deletion). No tuple lock: no one else can have found the row yet. The speculative
/// token is not kept, so another session whose unique check meets the row before it is
/// taken back waits for this transaction, where heap would let it go once the row is: the
/// same outcome, possibly later.
///
/// # Safety
///
/// As `tuple_complete_speculative` is called: `rel` an open pg_columnar relation, `slot` the
/// slot the row was inserted from, still holding it.
pub(super) unsafe fn complete_speculative(
    rel: pg_sys::Relation,
    slot: *mut pg_sys::TupleTableSlot,
    succeeded: bool,
) {
    if succeeded {
        // SAFETY: `rel` is open and `slot` holds the row (this function's contract)
        unsafe { super::logical::log_inserts(rel, &[slot]) };
        return;
    }
    // SAFETY: `slot` is valid (this function's contract)
    let row = tid::from_tid(unsafe { &(*slot).tts_tid });
    let (Some(row), Some(storage_id)) = (row, meta::storage_id(rel)) else {
        pgrx::error!(
            "pg_columnar: an INSERT ... ON CONFLICT into \"{}\" took back a row it did not insert",
            crate::storage::relation_name(rel)
        )
    };
    // SAFETY: in the inserting transaction, which can use its command id
    let cid = unsafe { pg_sys::GetCurrentCommandId(true) };
    marks::insert(storage_id, row, Mode::Killed, None, cid);
}

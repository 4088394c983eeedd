//! DELETE, UPDATE and row locks: marks on single rows in `pgcol.row_mark`
//! (`storage::marks`). An UPDATE deletes the row and inserts its new version as a new row;
//! its mark names the new version, as heap's `t_ctid` does.
//!
//! A writer of a row (a DELETE, a row lock) does what heap does with a tuple's xmax, with
//! marks in its place:
//!
//! 1. It takes the row's heavyweight tuple lock (`LockTuple` on the row's TID), so that
//!    writers of one row look at its marks and add theirs one at a time. The lock is held
//!    while waiting, so waiters queue in order, and given back once the mark is written.
//! 2. It reads the row's marks with a dirty snapshot. A committed delete mark: the row is
//!    gone (`TM_Deleted`). A running transaction's mark in a conflicting mode: wait for that
//!    transaction (or give up, by the wait policy), then look again. Its own marks: a row
//!    this transaction deleted is gone for it (`TM_SelfModified` in the same or a later
//!    command, `TM_Invisible` in an earlier one). A row this transaction holds locked at
//!    least as strongly and has not deleted (`marks::held_by_me`: an upsert's row, locked
//!    before it is updated) is not read: no other transaction's mark can be in the way.
//! 3. It inserts its mark, with the command id it was given (an UPDATE first inserts the new
//!    version, whose row number the mark names). A committed UPDATE's mark sends a later
//!    writer to the new version (`TM_Updated`), which READ COMMITTED locks and rechecks; one
//!    that moved the row to another partition says so instead (heap's "moved partitions"
//!    TID), and the writer fails with heap's error.
//!
//! Writers of different rows take different tuple locks and never wait for each other.
//! Whether a reader sees a deleted row is the reader's snapshot's business: it sees the
//! delete mark or not (`marks::deleted_rows`).

use pgrx::pg_sys;

use super::publication::{self, Change};
use super::{fetch, tid, write};
use crate::storage::marks::{self, Holder, Mode, Successor};
use crate::storage::meta;

/// How to wait for a conflicting transaction.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    Block,
    /// Give up with `TM_WouldBlock` (SKIP LOCKED; a DELETE called not to wait).
    Skip,
    /// Raise "could not obtain lock on row" (NOWAIT).
    Error,
}

impl Wait {
    pub fn of_policy(policy: pg_sys::LockWaitPolicy::Type) -> Wait {
        match policy {
            pg_sys::LockWaitPolicy::LockWaitSkip => Wait::Skip,
            pg_sys::LockWaitPolicy::LockWaitError => Wait::Error,
            _ => Wait::Block,
        }
    }
}

/// The tuple lock's mode: one lock mode for every writer, since it only makes looking at a
/// row's marks and adding one a single step.
const TUPLE_LOCK: pg_sys::LOCKMODE = pg_sys::ExclusiveLock as pg_sys::LOCKMODE;

/// Heap's NOWAIT error, word for word.
fn lock_not_available(rel: pg_sys::Relation) -> ! {
    let name = unsafe { std::ffi::CStr::from_ptr((*(*rel).rd_rel).relname.data.as_ptr()) };
    pgrx::ereport!(
        ERROR,
        pgrx::PgSqlErrorCode::ERRCODE_LOCK_NOT_AVAILABLE,
        format!("could not obtain lock on row in relation \"{}\"", name.to_string_lossy())
    );
}

/// Takes the tuple lock of `tid`; false if `wait` says not to wait and it is taken.
unsafe fn lock_tuple(rel: pg_sys::Relation, tid: &mut pg_sys::ItemPointerData, wait: Wait) -> bool {
    match wait {
        Wait::Block => {
            pg_sys::LockTuple(rel, tid, TUPLE_LOCK);
            true
        }
        Wait::Skip => crate::compat::conditional_lock_tuple(rel, tid, TUPLE_LOCK),
        Wait::Error => crate::compat::conditional_lock_tuple(rel, tid, TUPLE_LOCK) || lock_not_available(rel),
    }
}

/// What a row's marks say to a writer of `mode` as command `cid` (step 2 of the module
/// documentation).
enum MarksSay {
    /// The row is gone: the failure to report (result, ctid, xmax, cmax).
    Gone(pg_sys::TM_Result::Type, pg_sys::ItemPointerData, pg_sys::TransactionId, pg_sys::CommandId),
    /// A running transaction's mark conflicts: wait for it, then look again.
    Wait(pg_sys::TransactionId),
    /// This transaction holds a lock at least as strong already.
    Held,
    /// Nothing stands in the way of the mark.
    Free,
}

/// Reads the marks of row `row` (TID `row_tid`) of `storage_id` with a dirty snapshot and
/// says what they mean for a mark of `mode` as command `cid`; deletes the marks of finished
/// transactions' locks it meets when nothing stands in the way.
fn read_marks(storage_id: u64, row: u64, row_tid: pg_sys::ItemPointerData, mode: Mode, cid: pg_sys::CommandId) -> MarksSay {
    use pg_sys::TM_Result::*;
    let mut gone = None;
    let mut held = false;
    let mut blocker = None;
    let mut finished_locks = Vec::new();
    for m in marks::of_row(storage_id, row) {
        let successor_tid = match m.successor {
            None => row_tid,
            Some(Successor::Row(row)) => tid::to_tid(row),
            Some(Successor::OtherPartition) => tid::moved_partitions(),
        };
        match m.holder {
            Holder::Mine { cmin } if m.mode.deletes() => {
                let result = if cmin >= cid { TM_SelfModified } else { TM_Invisible };
                gone = Some(MarksSay::Gone(result, successor_tid, unsafe { pg_sys::GetCurrentTransactionIdIfAny() }, cmin));
            }
            Holder::Mine { .. } => held |= !mode.deletes() && m.mode >= mode,
            Holder::Committed(xid) if m.mode.deletes() => {
                let result = if m.successor.is_some() { TM_Updated } else { TM_Deleted };
                gone = Some(MarksSay::Gone(result, successor_tid, xid, pg_sys::InvalidCommandId));
            }
            // the lock of a finished transaction holds nothing: not kept
            Holder::Committed(_) if !m.being_forgotten => finished_locks.push(m.tid),
            Holder::Committed(_) => {}
            // an ON CONFLICT's row taken back never existed, whoever took it back
            Holder::Running(xid) if m.mode == Mode::Killed => {
                gone = Some(MarksSay::Gone(TM_Deleted, row_tid, xid, pg_sys::InvalidCommandId));
            }
            Holder::Running(xid) => {
                if m.mode.conflicts(mode) {
                    blocker.get_or_insert(xid);
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
    if held { MarksSay::Held } else { MarksSay::Free }
}

/// Places a mark of `mode` on the row at `tid` as command `cid`, by the steps of the module
/// documentation; fills `tmfd` when it does not. `before_mark` runs once the row is the
/// caller's to change, still under the tuple lock: it gives the successor to name in the mark
/// (an UPDATE inserts the new version there), or a result to return without a mark.
pub unsafe fn mark_row(
    rel: pg_sys::Relation,
    tid: &pg_sys::ItemPointerData,
    mode: Mode,
    cid: pg_sys::CommandId,
    wait: Wait,
    tmfd: *mut pg_sys::TM_FailureData,
    before_mark: impl FnOnce() -> Result<Option<Successor>, pg_sys::TM_Result::Type>,
) -> pg_sys::TM_Result::Type {
    use pg_sys::TM_Result::*;
    let Some(row) = tid::from_tid(tid) else { pgrx::error!("pg_columnar: invalid TID of a row to change") };
    let Some(storage_id) = meta::storage_id(rel) else {
        pgrx::error!("pg_columnar: relation \"{}\" has no rows to change", crate::storage::relation_name(rel))
    };
    let row_tid = *tid;
    let mut tid = row_tid;
    let fail = |result, ctid, xmax, cmax| failed(tmfd, result, ctid, xmax, cmax);
    if !lock_tuple(rel, &mut tid, wait) {
        return fail(TM_WouldBlock, row_tid, pg_sys::InvalidTransactionId, pg_sys::InvalidCommandId);
    }
    let oper = if mode.deletes() { pg_sys::XLTW_Oper::XLTW_Delete } else { pg_sys::XLTW_Oper::XLTW_Lock };
    // a row this transaction holds locked at least as strongly and has not deleted (an
    // upsert's row, locked before its update): no other transaction's mark can be in the
    // way, and the marks need not be read
    let known_held = marks::held_by_me(storage_id, row, mode.strength());
    let result = loop {
        let says = match (known_held, mode.deletes()) {
            (true, true) => MarksSay::Free,
            (true, false) => MarksSay::Held,
            (false, _) => read_marks(storage_id, row, row_tid, mode, cid),
        };
        match says {
            MarksSay::Gone(result, ctid, xmax, cmax) => break fail(result, ctid, xmax, cmax),
            MarksSay::Wait(xid) => {
                if wait == Wait::Block {
                    pg_sys::XactLockTableWait(xid, rel, &mut tid, oper);
                } else if !crate::compat::conditional_xact_lock_table_wait(xid) {
                    pg_sys::UnlockTuple(rel, &mut tid, TUPLE_LOCK);
                    if wait == Wait::Error {
                        lock_not_available(rel);
                    }
                    return fail(TM_WouldBlock, row_tid, xid, pg_sys::InvalidCommandId);
                }
                continue;
            }
            MarksSay::Held => break TM_Ok,
            MarksSay::Free => {}
        }
        match before_mark() {
            Ok(successor) => {
                marks::insert(storage_id, row, mode, successor, cid);
                if mode.deletes() {
                    // once the mark is there for others' reads to find (`super::ssi`)
                    super::ssi::check_change(rel, &row_tid);
                }
            }
            Err(result) => break fail(result, row_tid, pg_sys::InvalidTransactionId, pg_sys::InvalidCommandId),
        }
        break TM_Ok;
    };
    pg_sys::UnlockTuple(rel, &mut tid, TUPLE_LOCK);
    result
}

/// Fills `tmfd` for a change that did not happen and returns `result`: `ctid` is the row
/// itself, or the new version of an updated one; `xmax` and `cmax` who changed it.
unsafe fn failed(
    tmfd: *mut pg_sys::TM_FailureData,
    result: pg_sys::TM_Result::Type,
    ctid: pg_sys::ItemPointerData,
    xmax: pg_sys::TransactionId,
    cmax: pg_sys::CommandId,
) -> pg_sys::TM_Result::Type {
    (*tmfd).ctid = ctid;
    (*tmfd).xmax = xmax;
    (*tmfd).cmax = cmax;
    (*tmfd).traversed = false;
    result
}

/// What a foreign-key check under REPEATABLE READ or SERIALIZABLE (`crosscheck`) must find
/// of the row at `tid` before changing it: a row that snapshot does not see counts as changed
/// concurrently, as heap has it.
fn crosschecked(rel: pg_sys::Relation, tid: &pg_sys::ItemPointerData, crosscheck: pg_sys::Snapshot) -> Result<(), pg_sys::TM_Result::Type> {
    if crosscheck.is_null() || fetch::row_visible(rel, tid, crosscheck) {
        Ok(())
    } else {
        Err(pg_sys::TM_Result::TM_Updated)
    }
}

/// `tuple_delete`. `changing_part`: the row moves to another partition (an UPDATE of the
/// partition key), which its mark says, as heap's `t_ctid` does: a writer that waited for the
/// move fails as heap's does instead of finding the row deleted.
pub unsafe fn delete(
    rel: pg_sys::Relation,
    tid: pg_sys::ItemPointer,
    cid: pg_sys::CommandId,
    crosscheck: pg_sys::Snapshot,
    wait: bool,
    tmfd: *mut pg_sys::TM_FailureData,
    changing_part: bool,
) -> pg_sys::TM_Result::Type {
    publication::check_write(rel, Change::Delete);
    let wait = if wait { Wait::Block } else { Wait::Skip };
    let moved = changing_part.then_some(Successor::OtherPartition);
    let result = mark_row(rel, &*tid, Mode::Delete, cid, wait, tmfd, || crosschecked(rel, &*tid, crosscheck).map(|()| moved));
    if result == pg_sys::TM_Result::TM_Ok {
        // counted as heap's deletes are: autovacuum visits the table after enough of them
        pg_sys::pgstat_count_heap_delete(rel);
    }
    result
}

/// Whether the new version in `slot` of the row at `otid` changes a column of `keys` (a
/// relation's key-column bitmap: attribute numbers offset by
/// `FirstLowInvalidHeapAttributeNumber`). Values are compared by their bytes, as heap does; a
/// row that cannot be read counts as changed.
unsafe fn changes_key(rel: pg_sys::Relation, otid: pg_sys::ItemPointer, slot: *mut pg_sys::TupleTableSlot, keys: *mut pg_sys::Bitmapset) -> bool {
    let old = pg_sys::table_slot_create(rel, std::ptr::null_mut());
    let any = std::ptr::addr_of_mut!(pg_sys::SnapshotAnyData);
    let mut changed = !fetch::fetch_row_version(rel, otid, any, old);
    if !changed {
        pg_sys::slot_getallattrs(old);
        pg_sys::slot_getallattrs(slot);
        let mut member = -1;
        loop {
            member = pg_sys::bms_next_member(keys, member);
            if member < 0 {
                break;
            }
            let attno = member + pg_sys::FirstLowInvalidHeapAttributeNumber;
            if attno <= 0 {
                changed = true;
                break;
            }
            let i = attno as usize - 1;
            let (a_null, b_null) = (*(*old).tts_isnull.add(i), *(*slot).tts_isnull.add(i));
            let attr = &*crate::compat::tuple_desc_attr((*rel).rd_att, i);
            let same = match (a_null, b_null) {
                (true, true) => true,
                (false, false) => pg_sys::datumIsEqual(*(*old).tts_values.add(i), *(*slot).tts_values.add(i), attr.attbyval, attr.attlen.into()),
                _ => false,
            };
            if !same {
                changed = true;
                break;
            }
        }
    }
    pg_sys::ExecDropSingleTupleTableSlot(old);
    changed
}

/// `tuple_update`: the row at `otid` is deleted and its new version, in `slot`, inserted as a
/// new row (buffered like any insert; `slot` gets its TID), which the delete mark names. Every
/// index needs an entry for the new row. Returns the row lock the update took in `lockmode`,
/// as heap's: `FOR UPDATE`'s if it changes a key column (one of a unique index a foreign key
/// could reference), else `FOR NO KEY UPDATE`'s, which does not keep out `FOR KEY SHARE`
/// (a foreign-key check).
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
) -> pg_sys::TM_Result::Type {
    publication::check_write(rel, Change::Update);
    let keys = pg_sys::RelationGetIndexAttrBitmap(rel, pg_sys::IndexAttrBitmapKind::INDEX_ATTR_BITMAP_KEY);
    let key_changed = !keys.is_null() && changes_key(rel, otid, slot, keys);
    pg_sys::bms_free(keys);
    let (mode, lock) = if key_changed {
        (Mode::Delete, pg_sys::LockTupleMode::LockTupleExclusive)
    } else {
        (Mode::NoKeyDelete, pg_sys::LockTupleMode::LockTupleNoKeyExclusive)
    };
    *lockmode = lock;
    let wait = if wait { Wait::Block } else { Wait::Skip };
    let result = mark_row(rel, &*otid, mode, cid, wait, tmfd, || {
        crosschecked(rel, &*otid, crosscheck)?;
        write::insert(rel, &[slot], cid);
        Ok(tid::from_tid(&(*slot).tts_tid).map(Successor::Row))
    });
    if result == pg_sys::TM_Result::TM_Ok {
        crate::compat::count_update(rel);
    }
    result
}

/// `tuple_lock`: the row at `tid` into `slot`, locked in `mode`. The row's latest state
/// decides, not the snapshot, as in heap (see [`fetch::fetch_for_change`]). With
/// `TUPLE_LOCK_FLAG_FIND_LAST_VERSION`, a row updated by a committed transaction is followed
/// to its newest version (`tmfd.traversed`, and `tid` set to it), which is locked and
/// returned instead: READ COMMITTED then rechecks the query's quals on it.
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
    let mut traversed = false;
    loop {
        let result = match fetch::fetch_for_change(rel, &*tid, cid, slot) {
            fetch::ForChange::Found => mark_row(rel, &*tid, mode, cid, Wait::of_policy(wait_policy), tmfd, || Ok(None)),
            fetch::ForChange::Invisible | fetch::ForChange::Missing => {
                failed(tmfd, pg_sys::TM_Result::TM_Invisible, *tid, pg_sys::InvalidTransactionId, pg_sys::InvalidCommandId)
            }
        };
        (*tmfd).traversed = traversed;
        if result != pg_sys::TM_Result::TM_Updated || !follow {
            return result;
        }
        if tid::is_moved_partitions(&(*tmfd).ctid) {
            // heap's error, word for word
            pgrx::ereport!(
                ERROR,
                pgrx::PgSqlErrorCode::ERRCODE_T_R_SERIALIZATION_FAILURE,
                "tuple to be locked was already moved to another partition due to concurrent update"
            );
        }
        *tid = (*tmfd).ctid;
        traversed = true;
    }
}

/// The newest version of the row at `tid`, written back into `tid`: follows the new versions
/// named by the UPDATE marks of committed transactions and of this one.
pub unsafe fn latest_version(rel: pg_sys::Relation, tid: &mut pg_sys::ItemPointerData) {
    let Some(storage_id) = meta::storage_id(rel) else { return };
    while let Some(row) = tid::from_tid(tid) {
        let next = marks::of_row(storage_id, row).into_iter().find_map(|m| match m.holder {
            Holder::Committed(_) | Holder::Mine { .. } if m.mode.deletes() => m.successor,
            _ => None,
        });
        match next {
            Some(Successor::Row(successor)) => *tid = tid::to_tid(successor),
            // (the newest version in this table, as heap stops there too)
            Some(Successor::OtherPartition) | None => return,
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
pub unsafe fn complete_speculative(rel: pg_sys::Relation, slot: *mut pg_sys::TupleTableSlot, succeeded: bool) {
    if succeeded {
        return;
    }
    let (Some(row), Some(storage_id)) = (tid::from_tid(&(*slot).tts_tid), meta::storage_id(rel)) else {
        pgrx::error!("pg_columnar: an INSERT ... ON CONFLICT into \"{}\" took back a row it did not insert", crate::storage::relation_name(rel))
    };
    marks::insert(storage_id, row, Mode::Killed, None, pg_sys::GetCurrentCommandId(true));
}

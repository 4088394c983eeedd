//! `pgcol.row_reservation`: the ranges of row numbers that running transactions have taken
//! for rows they have not written as stripes yet, kept for tables with a unique index.
//!
//! A row is buffered in its backend's memory until its stripe is written, but its index
//! entries are inserted at once, so another session's unique check can meet the entry of a
//! row no catalog row describes yet. Heap's check finds such a row's tuple with a running
//! inserter and waits for it; here the check finds the range that holds the row number, whose
//! catalog row a dirty snapshot sees as the running transaction's, and waits for that
//! transaction (`am::fetch`). Ranges are plain heap tuples, like the other catalogs' rows, so
//! a rolled-back (sub)transaction takes its ranges with it, and a transaction deletes its own
//! at commit ([`forget_mine`]): by then its stripes cover every row it kept, and a committed
//! range would only be clutter.

use pgrx::pg_sys;

use super::required_pgcol_relation;

const NATTS: usize = 3;

fn table() -> pg_sys::Oid {
    required_pgcol_relation(c"row_reservation")
}

fn index() -> pg_sys::Oid {
    required_pgcol_relation(c"row_reservation_storage_first_row")
}

thread_local! {
    /// Storage ids this transaction has reserved row numbers of (forgotten at its end).
    static RESERVED_IN: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Records that this transaction took rows `first_row..first_row + row_count` of
/// `storage_id`, as command `cid`.
pub fn insert(storage_id: u64, first_row: u64, row_count: u64, cid: pg_sys::CommandId) {
    let mut values = [
        pg_sys::Datum::from(storage_id as i64),
        pg_sys::Datum::from(first_row as i64),
        pg_sys::Datum::from(row_count as i64),
    ];
    let mut nulls = [false; NATTS];
    super::insert_catalog_row(table(), index(), &mut values, &mut nulls, cid);
    RESERVED_IN.with(|r| {
        let mut r = r.borrow_mut();
        if !r.contains(&storage_id) {
            r.push(storage_id);
        }
    });
}

/// The running transaction (not this one) that holds row `row` of `storage_id` in a range it
/// reserved, if any.
pub fn running_holder(storage_id: u64, row: u64) -> Option<pg_sys::TransactionId> {
    // ranges never overlap: the one starting last at or before `row` is the only one that
    // can hold it
    super::last_row_at_or_before(
        table(),
        index(),
        storage_id,
        row,
        // SAFETY: `last_row_at_or_before` passes its open catalog, a tuple its scan holds and
        // its dirty snapshot, filled by the check of that tuple, all valid during the call.
        |rel, tuple, dirty| unsafe {
            let (first, count) = range_of(rel, tuple, storage_id);
            // the dirty snapshot's check of this tuple left a running inserter in it
            (row < first.saturating_add(count) && (*dirty).xmin != pg_sys::InvalidTransactionId)
                .then_some((*dirty).xmin)
        },
    )
    .flatten()
}

/// The ranges of `storage_id` that transactions reserved and then rolled back (their rows
/// stay in the catalog, dead, until VACUUM removes them), ascending: rows numbered there are
/// dead for every transaction, now and later, whether their stripe was written before the
/// rollback or not. A number is handed out once, to the (sub)transaction that reserved it
/// (a subtransaction's range passes to its parent when it commits, and is rolled back with
/// it). A range missing here (removed already, or its index entry found dead and skipped)
/// only goes unanswered.
pub fn aborted_ranges(storage_id: u64) -> Vec<(u64, u64)> {
    let mut ranges = Vec::new();
    // SAFETY: the catalog is opened here and closed after the scan; `key` is initialized
    // before the scan, and each tuple `scan_catalog` passes is valid during the call.
    unsafe {
        let rel = super::open_catalog(table(), index(), pg_sys::AccessShareLock);
        let mut key: pg_sys::ScanKeyData = std::mem::zeroed();
        pg_sys::ScanKeyInit(
            &mut key,
            1,
            pg_sys::BTEqualStrategyNumber as u16,
            pg_sys::F_INT8EQ.into(),
            pg_sys::Datum::from(storage_id as i64),
        );
        let any = std::ptr::addr_of_mut!(pg_sys::SnapshotAnyData);
        super::scan_catalog(
            rel,
            index(),
            any,
            std::ptr::null_mut(),
            std::slice::from_mut(&mut key),
            None,
            |_| false,
            |tuple| {
                if super::inserter_aborted(tuple) {
                    let (first, count) = range_of(rel, tuple, storage_id);
                    ranges.push((first, first.saturating_add(count)));
                }
            },
        );
        pg_sys::table_close(rel, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
    }
    ranges.sort_unstable();
    ranges
}

/// The range (first row, row count) catalog tuple `tuple` of `rel` holds.
///
/// # Safety
///
/// `rel` must be the open catalog `pgcol.row_reservation`, and `tuple` a valid tuple of it.
unsafe fn range_of(rel: pg_sys::Relation, tuple: pg_sys::HeapTuple, storage_id: u64) -> (u64, u64) {
    // SAFETY: `rel` is the open catalog and `tuple` a valid tuple of it (the contract)
    let (values, nulls) = unsafe { super::deform_catalog_row::<NATTS>(rel, tuple) };
    if nulls.iter().any(|&n| n) {
        pgrx::error!(
            "pg_columnar: catalog pgcol.row_reservation has a NULL field for storage {storage_id}"
        );
    }
    (
        values[1].value() as i64 as u64,
        values[2].value() as i64 as u64,
    )
}

/// Deletes the ranges of `storage_id` that `keep` rejects, among those SnapshotSelf sees
/// (transactionally).
fn delete_where(storage_id: u64, keep: impl Fn(pg_sys::HeapTuple) -> bool) {
    // SAFETY: the catalog is opened here and closed at the end; `key` is initialized before
    // the scan, which is ended before the deletions by TID it collected.
    unsafe {
        let rel = pg_sys::table_open(table(), pg_sys::RowExclusiveLock as pg_sys::LOCKMODE);
        let mut key: pg_sys::ScanKeyData = std::mem::zeroed();
        pg_sys::ScanKeyInit(
            &mut key,
            1,
            pg_sys::BTEqualStrategyNumber as u16,
            pg_sys::F_INT8EQ.into(),
            pg_sys::Datum::from(storage_id as i64),
        );
        let snapshot = std::ptr::addr_of_mut!(pg_sys::SnapshotSelfData);
        let scan = pg_sys::systable_beginscan(rel, index(), true, snapshot, 1, &mut key);
        let mut tids = Vec::new();
        loop {
            let tuple = pg_sys::systable_getnext(scan);
            if tuple.is_null() {
                break;
            }
            if !keep(tuple) {
                tids.push((*tuple).t_self);
            }
        }
        pg_sys::systable_endscan(scan);
        for mut tid in tids {
            pg_sys::simple_heap_delete(rel, &mut tid);
        }
        pg_sys::table_close(rel, pg_sys::RowExclusiveLock as pg_sys::LOCKMODE);
    }
}

/// Deletes this transaction's ranges (before it commits or prepares, once its stripes are
/// written: they cover the rows now).
pub fn forget_mine() {
    let ids = RESERVED_IN.with(|r| std::mem::take(&mut *r.borrow_mut()));
    if ids.is_empty() || super::pgcol_relation(c"row_reservation").is_none() {
        return;
    }
    // the last command's own ranges are deletable only by a later command
    // SAFETY: called in a transaction (before its commit or prepare), where commands count.
    unsafe { pg_sys::CommandCounterIncrement() };
    for id in ids {
        // SAFETY: `delete_where` passes a tuple its scan holds, with its header.
        delete_where(id, |tuple| unsafe {
            !pg_sys::TransactionIdIsCurrentTransactionId((*(*tuple).t_data).t_choice.t_heap.t_xmin)
        });
    }
}

/// Forgets which storages this transaction reserved rows of (its end).
pub fn forget_reserved() {
    RESERVED_IN.with(|r| r.borrow_mut().clear());
}

/// Deletes every range of `storage_id` (transactionally), when the storage is dropped or
/// truncated under a lock that excludes its writers. Nothing to do while DROP EXTENSION
/// removes the catalog.
pub fn delete_storage(storage_id: u64) {
    if super::pgcol_relation(c"row_reservation").is_some() {
        delete_where(storage_id, |_| false);
    }
}

//! The storage layer: how a pg_columnar relation's bytes live in PostgreSQL.
//!
//! * [`meta`]: block 0 of the main fork, the metapage (format version, storage id, row
//!   numbers handed out so far).
//! * [`pages`]: stripes cut into data pages with standard page headers, written with generic
//!   WAL, and read back as byte ranges.
//! * [`catalog`]: one row per stripe in `pgcol.stripe`, so PostgreSQL's MVCC decides which
//!   stripes a snapshot sees.
//! * [`marks`]: one row per deleted or locked row in `pgcol.row_mark`, so MVCC also decides
//!   which deletions a snapshot sees.
//! * [`reservations`]: the row numbers running transactions hold in memory, in
//!   `pgcol.row_reservation`, so other sessions' unique checks can wait for them.
//!
//! The byte layout of a stripe is the codec's (`pg_columnar_codec::stripe`); the layout of
//! pages and metapage is specified in docs/FORMAT.md.

pub mod catalog;
pub mod marks;
pub mod meta;
pub mod pages;
pub mod reservations;
pub mod tid;

use pgrx::pg_sys;

/// The OID of the extension's relation `pgcol.<name>` (catalog, index, sequence), or `None`
/// if it does not exist (as while DROP EXTENSION removes it). Found OIDs are kept for the
/// backend (a DELETE, an UPDATE and a unique check ask per row), each forgotten on a relcache
/// invalidation of its relation or of all relations: DROP EXTENSION drops them, and CREATE
/// EXTENSION makes new ones, which are looked up afresh as none is kept while they are
/// missing.
pub fn pgcol_relation(name: &'static std::ffi::CStr) -> Option<pg_sys::Oid> {
    if let Some(oid) = PGCOL_RELATIONS
        .with_borrow(|kept| kept.iter().find(|(n, _)| *n == name).map(|&(_, oid)| oid))
    {
        return Some(oid);
    }
    // SAFETY: catalog lookups inside a transaction (every caller's); the names are
    // NUL-terminated `CStr`s that outlive the calls.
    let oid = unsafe {
        let nsp = pg_sys::get_namespace_oid(c"pgcol".as_ptr(), true);
        if nsp == pg_sys::InvalidOid {
            return None;
        }
        let oid = pg_sys::get_relname_relid(name.as_ptr(), nsp);
        (oid != pg_sys::InvalidOid).then_some(oid)?
    };
    static REGISTERED: std::sync::Once = std::sync::Once::new();
    // SAFETY: the callback is a `pg_guard`ed fn with a static lifetime, registered once per
    // backend (the `Once`), from inside a transaction.
    REGISTERED.call_once(|| unsafe {
        pg_sys::CacheRegisterRelcacheCallback(Some(forget_pgcol_relation), pg_sys::Datum::from(0))
    });
    PGCOL_RELATIONS.with_borrow_mut(|kept| kept.push((name, oid)));
    Some(oid)
}

thread_local! {
    /// What [`pgcol_relation`] found, by name.
    static PGCOL_RELATIONS: std::cell::RefCell<Vec<(&'static std::ffi::CStr, pg_sys::Oid)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The relcache invalidation callback [`pgcol_relation`] registers.
///
/// # Safety
///
/// Called by PostgreSQL's invalidation processing only; it dereferences nothing.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn forget_pgcol_relation(_arg: pg_sys::Datum, relid: pg_sys::Oid) {
    PGCOL_RELATIONS.with_borrow_mut(|kept| {
        kept.retain(|&(_, oid)| relid != pg_sys::InvalidOid && relid != oid)
    });
}

/// [`pgcol_relation`], raising an ERROR when it is missing.
pub fn required_pgcol_relation(name: &'static std::ffi::CStr) -> pg_sys::Oid {
    pgcol_relation(name).unwrap_or_else(|| {
        pgrx::error!(
            "pg_columnar: pgcol.{} is missing; reinstall the extension",
            name.to_string_lossy()
        )
    })
}

/// Opens the extension's catalog `table` with `lockmode`, having made sure first that this
/// transaction holds `lockmode` on it and on its `index` until its end. A DELETE, an UPDATE
/// and a unique check open and close these catalogs for every row (and the index through
/// `systable_beginscan`); with the lock held, each open and close finds it in this backend's
/// own lock table instead of taking and giving back the shared lock (8% of an upsert's
/// samples were those). Catalog locks held to the transaction's end are also what
/// PostgreSQL's own catalog writers do.
pub fn open_catalog(table: pg_sys::Oid, index: pg_sys::Oid, lockmode: u32) -> pg_sys::Relation {
    let mode = lockmode as pg_sys::LOCKMODE;
    for oid in [table, index] {
        if !HELD_LOCKS.with_borrow(|held| held.contains(&(oid, mode))) {
            // SAFETY: inside a transaction (every caller's), so its resource owner exists; the
            // current owner is put back at once (an ERROR in between: the abort resets it).
            unsafe {
                // owned by the transaction, so that no subtransaction's or portal's end lets
                // it go before the transaction does
                let owner = pg_sys::CurrentResourceOwner;
                pg_sys::CurrentResourceOwner = pg_sys::TopTransactionResourceOwner;
                pg_sys::LockRelationOid(oid, mode);
                pg_sys::CurrentResourceOwner = owner;
            }
            HELD_LOCKS.with_borrow_mut(|held| held.push((oid, mode)));
        }
    }
    // SAFETY: inside a transaction, `table` locked in `mode` above (or earlier in it).
    unsafe { pg_sys::table_open(table, mode) }
}

thread_local! {
    /// The catalog relations and lock modes [`open_catalog`] holds for the transaction.
    static HELD_LOCKS: std::cell::RefCell<Vec<(pg_sys::Oid, pg_sys::LOCKMODE)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Forgets what [`open_catalog`] holds: the transaction has ended, and its locks with it.
pub fn forget_held_locks() {
    HELD_LOCKS.with_borrow_mut(Vec::clear);
}

/// Whether the transaction is SERIALIZABLE: its reads of the catalogs are also its checks of
/// conflicts with concurrent writers ([`scan_catalog`]).
pub fn serializable_transaction() -> bool {
    // SAFETY: `XactIsoLevel` is a global of this backend, read in its one thread.
    unsafe { pg_sys::XactIsoLevel == pg_sys::XACT_SERIALIZABLE as i32 }
}

/// Scans the extension's catalog `rel` through `index` with `keys` (`systable_beginscan`),
/// calling `f` with each tuple `snapshot` sees. Under an MVCC snapshot the catalog is read
/// with SnapshotAny and each tuple judged here as heap's own read would judge it. A read for
/// a serializable transaction's read of the pg_columnar table `table` (null: no such read,
/// as the planner's) also makes heap's check of its conflicts with the concurrent writers of
/// the tuples it passes over (`HeapCheckForSerializableConflictOut`: a stripe inserted, a
/// row deleted by a transaction the snapshot does not see), for the tuples that stand for a
/// change of the table's rows (`changes_rows`: not a row lock's mark, as heap's conflicts
/// are with writers, not lockers), as a conflict on `table`: the catalogs are materialized
/// views, which PostgreSQL leaves out of serializable checks. Reading them with SnapshotAny
/// also keeps the predicate locks an MVCC scan leaves on their indexes' pages out: those
/// made every serializable reader of any pg_columnar table depend on every writer of any
/// other. A serializable transaction's predicate locks are taken on the table it reads
/// (`am::ssi`).
///
/// # Safety
///
/// `rel` must be an open catalog of the extension and `index` its index, on the columns
/// `keys` (initialized) compare; `snapshot` must be valid for the call, and `table` null or
/// the open pg_columnar table read. Tuples given to `f` and `changes_rows` are valid only
/// during the call.
///
/// `original_xid` is the catalog's column (0-based) of a rewrite's copies' original
/// transaction (`catalog::StripeRow::original_xid`; NULL on other rows), if it has one. An
/// MVCC snapshot that does not see the committed transaction that inserted such a copy (the
/// rewrite: the snapshot is older) judges it by the original transaction instead, so that a
/// transaction that read the table before a VACUUM FULL or CLUSTER reads the same rows after
/// it, as heap's rewrite gives it by keeping each tuple's `xmin` and `xmax`. (Such a snapshot
/// sees no later deletion of the copy either: its deleter committed after the rewrite.)
#[allow(clippy::too_many_arguments)]
pub unsafe fn scan_catalog(
    rel: pg_sys::Relation,
    index: pg_sys::Oid,
    snapshot: pg_sys::Snapshot,
    table: pg_sys::Relation,
    keys: &mut [pg_sys::ScanKeyData],
    original_xid: Option<usize>,
    changes_rows: impl Fn(pg_sys::HeapTuple) -> bool,
    mut f: impl FnMut(pg_sys::HeapTuple),
) {
    // SAFETY: `snapshot` is valid (the contract).
    let mvcc = unsafe { (*snapshot).snapshot_type } == pg_sys::SnapshotType::SNAPSHOT_MVCC;
    let serializable = mvcc && !table.is_null() && serializable_transaction();
    let read_with = if mvcc {
        std::ptr::addr_of_mut!(pg_sys::SnapshotAnyData)
    } else {
        snapshot
    };
    // SAFETY: `rel` is open with its index `index`, and `keys` live and initialized across
    // the scan (the contract); the scan is ended below.
    let scan = unsafe {
        pg_sys::systable_beginscan(
            rel,
            index,
            true,
            read_with,
            keys.len() as i32,
            keys.as_mut_ptr(),
        )
    };
    loop {
        // SAFETY: `scan` is the scan begun above, not yet ended.
        let tuple = unsafe { pg_sys::systable_getnext(scan) };
        if tuple.is_null() {
            break;
        }
        if mvcc {
            // SAFETY: the scan's slot (a heap catalog's: a buffer heap slot) holds the tuple's
            // buffer pinned; judging it takes the content lock, held until the unlock below.
            let visible = unsafe {
                let buffer = (*((*scan).slot as *mut pg_sys::BufferHeapTupleTableSlot)).buffer;
                crate::compat::lock_buffer(buffer, false);
                let (visible, original) =
                    mvcc_judgement(rel, tuple, buffer, snapshot, original_xid);
                if serializable && changes_rows(tuple) {
                    match original {
                        // the conflict is with the original writer, which this snapshot does not
                        // see
                        Some(original) if !visible => {
                            pg_sys::CheckForSerializableConflictOut(table, original, snapshot)
                        }
                        Some(_) => {}
                        None => pg_sys::HeapCheckForSerializableConflictOut(
                            visible, table, tuple, buffer, snapshot,
                        ),
                    }
                }
                crate::compat::unlock_buffer(buffer);
                visible
            };
            if !visible {
                continue;
            }
        }
        f(tuple);
    }
    // SAFETY: `scan` was begun above and is ended once.
    unsafe { pg_sys::systable_endscan(scan) };
}

/// Whether MVCC snapshot `snapshot` sees catalog tuple `tuple` of `rel` (in `buffer`, whose
/// content lock the caller holds), as [`scan_catalog`] judges it, and the original
/// transaction it went by ([`original_for`]).
///
/// # Safety
///
/// `rel` must be an open catalog, `tuple` one of its tuples in `buffer`, which the caller
/// holds pinned and content-locked, and `snapshot` a valid MVCC snapshot; `original_xid`, if
/// given, a column of `rel` holding a transaction id.
unsafe fn mvcc_judgement(
    rel: pg_sys::Relation,
    tuple: pg_sys::HeapTuple,
    buffer: pg_sys::Buffer,
    snapshot: pg_sys::Snapshot,
    original_xid: Option<usize>,
) -> (bool, Option<pg_sys::TransactionId>) {
    // SAFETY: `tuple` lies in `buffer`, pinned and content-locked, and `snapshot` is valid
    // (the contract), as `HeapTupleSatisfiesVisibility` requires (it may set hint bits).
    let visible = unsafe { pg_sys::HeapTupleSatisfiesVisibility(tuple, snapshot, buffer) };
    let original = match original_xid {
        // SAFETY: this function's contract is `original_for`'s.
        Some(attno) if !visible => unsafe { original_for(rel, tuple, attno, snapshot) },
        _ => None,
    };
    match original {
        // SAFETY: `snapshot` is a valid MVCC snapshot (the contract).
        Some(original) => unsafe {
            (
                original == pg_sys::FrozenTransactionId
                    || !pg_sys::XidInMVCCSnapshot(original, snapshot),
                Some(original),
            )
        },
        None => (visible, None),
    }
}

/// The original transaction of catalog tuple `tuple` (column `attno` of `rel`) that MVCC
/// snapshot `snapshot`, which does not see the tuple, goes by: `None` unless the tuple is a
/// rewrite's copy whose inserter committed and is one the snapshot does not see (not this
/// transaction, whose snapshots see what it wrote as heap decides).
///
/// # Safety
///
/// `rel` must be an open catalog with a transaction id column `attno`, `tuple` a valid tuple
/// of it (its buffer pinned), and `snapshot` a valid MVCC snapshot.
unsafe fn original_for(
    rel: pg_sys::Relation,
    tuple: pg_sys::HeapTuple,
    attno: usize,
    snapshot: pg_sys::Snapshot,
) -> Option<pg_sys::TransactionId> {
    let mut isnull = false;
    // SAFETY: `tuple` is a valid tuple of the open `rel`, with a column `attno` (the contract).
    let datum =
        unsafe { pg_sys::heap_getattr(tuple, (attno + 1) as i32, (*rel).rd_att, &mut isnull) };
    if isnull {
        return None;
    }
    // SAFETY: `tuple`'s header and `snapshot` are valid (the contract); the rest are lookups
    // of transaction status by id.
    unsafe {
        let xmin = (*(*tuple).t_data).t_choice.t_heap.t_xmin;
        let seen = inserter(tuple).is_none()
            || pg_sys::TransactionIdIsCurrentTransactionId(xmin)
            || !pg_sys::TransactionIdDidCommit(xmin)
            || !pg_sys::XidInMVCCSnapshot(xmin, snapshot);
        (!seen).then(|| pg_sys::TransactionId::from(datum.value() as u32))
    }
}

/// Calls `f` with the last row of the extension's catalog `table`, in the order of its
/// `index` on (storage id, row number), of storage `storage_id` whose row number is at most
/// `row`, among those a dirty snapshot sees (rows no aborted transaction inserted), with that
/// snapshot as its check of the row left it (the running inserter in `xmin`, a running
/// deleter in `xmax`); `None` if there is none. The catalogs of ranges of rows (stripes,
/// reservations) find the one range that can hold a row this way.
pub fn last_row_at_or_before<R>(
    table: pg_sys::Oid,
    index: pg_sys::Oid,
    storage_id: u64,
    row: u64,
    f: impl FnOnce(pg_sys::Relation, pg_sys::HeapTuple, pg_sys::Snapshot) -> R,
) -> Option<R> {
    // SAFETY: a zeroed SnapshotData of type dirty is what InitDirtySnapshot makes; it lives
    // until the scan that fills it has ended
    let mut dirty: pg_sys::SnapshotData = unsafe { std::mem::zeroed() };
    dirty.snapshot_type = pg_sys::SnapshotType::SNAPSHOT_DIRTY;
    let dirty_ptr: pg_sys::Snapshot = &mut dirty;
    last_seen_at_or_before(
        table,
        index,
        storage_id,
        row,
        dirty_ptr,
        None,
        |rel, tuple| f(rel, tuple, dirty_ptr),
    )
}

/// Calls `f` with the last row of the extension's catalog `table`, in the order of its
/// `index` on (storage id, row number), of storage `storage_id` whose row number is at most
/// `row` and that `snapshot` sees, as [`scan_catalog`] judges it (`original_xid` as there);
/// `None` if there is none. Not for a serializable transaction's read of a table, whose
/// reads of the catalog are also its checks of conflicts with every writer passed over.
/// Rows an MVCC snapshot sees never overlap in range (a VACUUM's old and new rows for the
/// same rows are seen one or the other), so the catalogs of ranges find the one range that
/// can hold a row this way.
pub fn last_seen_at_or_before<R>(
    table: pg_sys::Oid,
    index: pg_sys::Oid,
    storage_id: u64,
    row: u64,
    snapshot: pg_sys::Snapshot,
    original_xid: Option<usize>,
    f: impl FnOnce(pg_sys::Relation, pg_sys::HeapTuple) -> R,
) -> Option<R> {
    // SAFETY: callers pass a valid `snapshot`; the catalog and its index are opened and closed
    // here, and the tuple given to `f` stays pinned by the scan until it ends, after `f` returns
    unsafe {
        let rel = open_catalog(table, index, pg_sys::AccessShareLock);
        let idx = pg_sys::index_open(index, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        let mut keys: [pg_sys::ScanKeyData; 2] = std::mem::zeroed();
        let bounds = [
            (pg_sys::BTEqualStrategyNumber, pg_sys::F_INT8EQ, storage_id),
            (pg_sys::BTLessEqualStrategyNumber, pg_sys::F_INT8LE, row),
        ];
        for (k, (strategy, proc_, value)) in bounds.into_iter().enumerate() {
            pg_sys::ScanKeyInit(
                &mut keys[k],
                (k + 1) as pg_sys::AttrNumber,
                strategy as u16,
                proc_.into(),
                pg_sys::Datum::from(value as i64),
            );
        }
        let mvcc = (*snapshot).snapshot_type == pg_sys::SnapshotType::SNAPSHOT_MVCC;
        let read_with = if mvcc {
            std::ptr::addr_of_mut!(pg_sys::SnapshotAnyData)
        } else {
            snapshot
        };
        let scan = pg_sys::systable_beginscan_ordered(rel, idx, read_with, 2, keys.as_mut_ptr());
        let mut found = None;
        loop {
            let tuple = pg_sys::systable_getnext_ordered(
                scan,
                pg_sys::ScanDirection::BackwardScanDirection,
            );
            if tuple.is_null() {
                break;
            }
            if mvcc {
                let buffer = (*((*scan).slot as *mut pg_sys::BufferHeapTupleTableSlot)).buffer;
                crate::compat::lock_buffer(buffer, false);
                let (visible, _) = mvcc_judgement(rel, tuple, buffer, snapshot, original_xid);
                crate::compat::unlock_buffer(buffer);
                if !visible {
                    continue;
                }
            }
            found = Some(f(rel, tuple));
            break;
        }
        pg_sys::systable_endscan_ordered(scan);
        pg_sys::index_close(idx, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        pg_sys::table_close(rel, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        found
    }
}

/// The `N` values and NULL flags of catalog row `tuple` of `rel`, after
/// [`check_catalog_width`]: `heap_deform_tuple` writes one value per column of the
/// descriptor, so a catalog of another width (made by another build) would be written past
/// the arrays.
///
/// # Safety
/// `rel` is one of the extension's catalogs, open, and `tuple` a valid tuple of it.
pub unsafe fn deform_catalog_row<const N: usize>(
    rel: pg_sys::Relation,
    tuple: pg_sys::HeapTuple,
) -> ([pg_sys::Datum; N], [bool; N]) {
    check_catalog_width(rel, N);
    let mut values = [pg_sys::Datum::from(0); N];
    let mut nulls = [false; N];
    // SAFETY: `tuple` is a valid tuple of the open `rel` (the contract), whose descriptor has
    // `N` columns (checked above), the length of both output arrays.
    unsafe {
        pg_sys::heap_deform_tuple(
            tuple,
            (*rel).rd_att,
            values.as_mut_ptr(),
            nulls.as_mut_ptr(),
        )
    };
    (values, nulls)
}

/// Raises an ERROR unless the extension's catalog `rel` has `natts` columns: one made by
/// another build of the extension (before a catalog gained a column) is not read.
pub fn check_catalog_width(rel: pg_sys::Relation, natts: usize) {
    // SAFETY: callers pass a catalog they hold open.
    let found = unsafe { (*(*rel).rd_att).natts as usize };
    if found != natts {
        let name = relation_name(rel);
        pgrx::error!("pg_columnar: catalog {name} has {found} columns, this build of the extension reads {natts}; reinstall the extension (DROP EXTENSION, CREATE EXTENSION)");
    }
}

/// Inserts a row of `values` and `nulls` into the extension's catalog `table` as command
/// `cid`, and its entry into `index`, whose key is the row's first two columns (storage id
/// and a row number; never NULL). Not logically decoded: the catalogs are this node's own
/// (their storage ids mean nothing to a subscriber); what a subscriber gets of a table itself
/// is the table's business.
pub fn insert_catalog_row(
    table: pg_sys::Oid,
    index: pg_sys::Oid,
    values: &mut [pg_sys::Datum],
    nulls: &mut [bool],
    cid: pg_sys::CommandId,
) {
    // SAFETY: the catalog and its index are opened and closed here; both arrays have the
    // descriptor's width (checked), and the tuple is freed once its index entry is made.
    unsafe {
        let rel = open_catalog(table, index, pg_sys::RowExclusiveLock);
        check_catalog_width(rel, values.len());
        assert_eq!(
            values.len(),
            nulls.len(),
            "pg_columnar: catalog row of the wrong width"
        );
        let tuple = pg_sys::heap_form_tuple((*rel).rd_att, values.as_mut_ptr(), nulls.as_mut_ptr());
        pg_sys::heap_insert(
            rel,
            tuple,
            cid,
            (pg_sys::HEAP_INSERT_NO_LOGICAL as u8).into(),
            std::ptr::null_mut(),
        );
        let index = pg_sys::index_open(index, pg_sys::RowExclusiveLock as pg_sys::LOCKMODE);
        let info = pg_sys::BuildIndexInfo(index);
        let mut key = [values[0], values[1]];
        let mut key_nulls = [false; 2];
        pg_sys::index_insert(
            index,
            key.as_mut_ptr(),
            key_nulls.as_mut_ptr(),
            &mut (*tuple).t_self,
            rel,
            pg_sys::IndexUniqueCheck::UNIQUE_CHECK_NO,
            false,
            info,
        );
        pg_sys::index_close(index, pg_sys::RowExclusiveLock as pg_sys::LOCKMODE);
        pg_sys::heap_freetuple(tuple);
        pg_sys::table_close(rel, pg_sys::RowExclusiveLock as pg_sys::LOCKMODE);
    }
}

/// Whether every snapshot, now and later, sees catalog tuple `tuple` as inserted: its
/// inserter committed (the caller read it with an MVCC snapshot of another transaction's
/// view, or it is frozen) before any running transaction's snapshot was taken (`vistest`, of
/// the tuple's catalog).
pub fn inserter_settled(tuple: pg_sys::HeapTuple, vistest: *mut pg_sys::GlobalVisState) -> bool {
    let Some(xmin) = inserter(tuple) else {
        return true;
    };
    // SAFETY: transaction status lookups by id; callers pass `vistest` of the tuple's catalog,
    // from `GlobalVisTestFor` in this transaction.
    unsafe {
        !pg_sys::TransactionIdIsCurrentTransactionId(xmin)
            && pg_sys::TransactionIdDidCommit(xmin)
            && crate::compat::xid_removable(vistest, xmin)
    }
}

/// The transaction that deleted catalog tuple `tuple` if every snapshot, now and later, sees
/// the deletion (it committed before any running transaction's snapshot was taken:
/// `vistest`, of the tuple's catalog) and some snapshot could have seen the tuple (its
/// inserter committed, and is not the deleter).
pub fn settled_deleter(
    tuple: pg_sys::HeapTuple,
    vistest: *mut pg_sys::GlobalVisState,
) -> Option<pg_sys::TransactionId> {
    // SAFETY: callers pass a catalog tuple they hold (its buffer pinned) and `vistest` of its
    // catalog, from `GlobalVisTestFor` in this transaction.
    unsafe {
        let header = (*tuple).t_data;
        let infomask = (*header).t_infomask;
        if infomask & pg_sys::HEAP_XMAX_INVALID as u16 != 0
            || infomask & pg_sys::HEAP_XMAX_LOCK_ONLY as u16 != 0
        {
            return None;
        }
        let xmax = if infomask & pg_sys::HEAP_XMAX_IS_MULTI as u16 != 0 {
            pg_sys::HeapTupleGetUpdateXid(header)
        } else {
            (*header).t_choice.t_heap.t_xmax
        };
        let inserted = match inserter(tuple) {
            None => true,
            Some(xmin) => xmin != xmax && pg_sys::TransactionIdDidCommit(xmin),
        };
        (inserted
            && xmax.into_inner() >= pg_sys::FirstNormalTransactionId.into_inner()
            && pg_sys::TransactionIdDidCommit(xmax)
            && crate::compat::xid_removable(vistest, xmax))
        .then_some(xmax)
    }
}

/// The later of `a` (if any) and `b` in transaction order.
pub fn newer_xid(
    a: Option<pg_sys::TransactionId>,
    b: pg_sys::TransactionId,
) -> pg_sys::TransactionId {
    match a {
        // SAFETY: compares two transaction ids by value.
        Some(a) if unsafe { pg_sys::TransactionIdFollows(a, b) } => a,
        _ => b,
    }
}

/// The transaction that inserted catalog tuple `tuple`; `None` once the tuple is frozen
/// (every snapshot sees it inserted, however old the transaction).
pub fn inserter(tuple: pg_sys::HeapTuple) -> Option<pg_sys::TransactionId> {
    // SAFETY: callers pass a catalog tuple they hold (its buffer pinned); its header is read.
    unsafe {
        let header = (*tuple).t_data;
        let frozen = pg_sys::HEAP_XMIN_FROZEN as u16;
        ((*header).t_infomask & frozen != frozen).then(|| (*header).t_choice.t_heap.t_xmin)
    }
}

/// Whether catalog tuple `tuple`'s inserting transaction aborted (or crashed): it will never
/// commit, so no transaction, now or later, sees what the tuple says. Decided as heap decides
/// an inserter's fate: its hint bits if set, else this transaction, the running ones and the
/// commit log, in that order (a running transaction's committed subtransaction is not yet
/// committed in the log).
pub fn inserter_aborted(tuple: pg_sys::HeapTuple) -> bool {
    let Some(xmin) = inserter(tuple) else {
        return false;
    };
    // SAFETY: callers pass a catalog tuple they hold (its buffer pinned); the rest are
    // transaction status lookups by id.
    unsafe {
        let mask = (*(*tuple).t_data).t_infomask;
        if mask & pg_sys::HEAP_XMIN_COMMITTED as u16 != 0 {
            return false;
        }
        if mask & pg_sys::HEAP_XMIN_INVALID as u16 != 0 {
            return true;
        }
        !pg_sys::TransactionIdIsCurrentTransactionId(xmin)
            && !pg_sys::TransactionIdIsInProgress(xmin)
            && !pg_sys::TransactionIdDidCommit(xmin)
    }
}

/// Deletes the rows `tids` of the extension's catalog `table` (transactionally). The caller
/// holds what keeps every other deleter of them out.
pub fn delete_catalog_rows(table: pg_sys::Oid, tids: &[pg_sys::ItemPointerData]) {
    if tids.is_empty() {
        return;
    }
    // SAFETY: the catalog is opened here and closed at the end; each TID is a copy, passed by
    // pointer to a live local.
    unsafe {
        let rel = pg_sys::table_open(table, pg_sys::RowExclusiveLock as pg_sys::LOCKMODE);
        for tid in tids {
            let mut tid = *tid;
            pg_sys::simple_heap_delete(rel, &mut tid);
        }
        pg_sys::table_close(rel, pg_sys::RowExclusiveLock as pg_sys::LOCKMODE);
    }
}

/// Name of a relation for error messages: `schema.name`.
pub fn relation_name(rel: pg_sys::Relation) -> String {
    // SAFETY: callers pass an open relation, whose `relname` is NUL-terminated; the namespace
    // name is a palloc'd C string or null (checked).
    unsafe {
        let rd = &*(*rel).rd_rel;
        let name = std::ffi::CStr::from_ptr(rd.relname.data.as_ptr()).to_string_lossy();
        let nsp = pg_sys::get_namespace_name(rd.relnamespace);
        if nsp.is_null() {
            name.into_owned()
        } else {
            format!(
                "{}.{}",
                std::ffi::CStr::from_ptr(nsp).to_string_lossy(),
                name
            )
        }
    }
}

/// Raises PostgreSQL's "out of memory" ERROR for a Rust allocation of `bytes` that failed
/// (asked for with `try_reserve`): a failed allocation would otherwise abort the process, and
/// the postmaster then restarts every session.
pub fn out_of_memory(bytes: usize, what: &str) -> ! {
    pgrx::ereport!(
        ERROR,
        pgrx::PgSqlErrorCode::ERRCODE_OUT_OF_MEMORY,
        "out of memory",
        format!("pg_columnar failed to allocate {bytes} bytes {what}.")
    );
}

/// Reports stored bytes that fail a check: an ERROR naming the relation, never a panic.
pub fn corrupt(rel: pg_sys::Relation, detail: impl std::fmt::Display) -> ! {
    pgrx::ereport!(
        ERROR,
        pgrx::PgSqlErrorCode::ERRCODE_DATA_CORRUPTED,
        format!(
            "pg_columnar relation \"{}\" is corrupt: {detail}",
            relation_name(rel)
        )
    );
}

/// What decides which rows an MVCC snapshot sees, and the transaction it is used in: two
/// snapshots of equal content see the same transactions as committed (their bounds, the
/// transactions in progress, sorted, and subtransactions) and the same commands of the
/// current transaction (its id and command id). Caches of catalog reads are keyed by it; they
/// are emptied when this backend changes the catalog read or a subtransaction ends, the only
/// ways what a snapshot of given content sees can change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotContent {
    transaction: u32,
    xmin: u32,
    xmax: u32,
    curcid: u32,
    xip: Vec<u32>,
    subxip: Vec<u32>,
    suboverflowed: bool,
    taken_during_recovery: bool,
}

impl SnapshotContent {
    /// `None` unless `snapshot` is an MVCC snapshot (the others see what is committed when they
    /// look, not at a moment).
    pub fn of(snapshot: pg_sys::Snapshot) -> Option<SnapshotContent> {
        // SAFETY: callers pass a valid snapshot, whose `xip` and `subxip` arrays hold `xcnt`
        // and `subxcnt` ids (null or empty taken as none).
        unsafe {
            let s = &*snapshot;
            if s.snapshot_type != pg_sys::SnapshotType::SNAPSHOT_MVCC {
                return None;
            }
            let sorted = |xids: *const pg_sys::TransactionId, count: usize| {
                let mut v: Vec<u32> = if count == 0 || xids.is_null() {
                    Vec::new()
                } else {
                    std::slice::from_raw_parts(xids, count)
                        .iter()
                        .map(|x| x.into_inner())
                        .collect()
                };
                v.sort_unstable();
                v
            };
            Some(SnapshotContent {
                transaction: pg_sys::GetTopTransactionIdIfAny().into_inner(),
                xmin: s.xmin.into_inner(),
                xmax: s.xmax.into_inner(),
                curcid: s.curcid,
                xip: sorted(s.xip, s.xcnt as usize),
                subxip: sorted(s.subxip, s.subxcnt.max(0) as usize),
                suboverflowed: s.suboverflowed,
                taken_during_recovery: s.takenDuringRecovery,
            })
        }
    }
}

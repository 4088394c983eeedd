//! Every difference between the PostgreSQL majors (15 to 19) that the extension meets, named
//! once, as shims over PostgreSQL's API: this module names nothing of the crate. docs/COMPAT.md
//! lists the table access method's differences and where they come from. Callbacks whose
//! signatures differ, and which call into the crate, are where their tables are built
//! (`am::versioned`, `am::slot`, `hooks`), each one `cfg` choice over code here or there.

#![allow(clippy::too_many_arguments)]

use pgrx::pg_sys;

/// Attribute `i` (0-based) of a tuple descriptor. From 18 the attributes follow an array of
/// compact attributes.
///
/// # Safety
///
/// `desc` must point to a valid tuple descriptor and `i` be less than its `natts`.
pub unsafe fn tuple_desc_attr(
    desc: pg_sys::TupleDesc,
    i: usize,
) -> *const pg_sys::FormData_pg_attribute {
    #[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
    // SAFETY: `desc` is a valid descriptor and `i < natts` (the contract), so attribute `i`
    // lies inside its `attrs` array.
    unsafe {
        (*desc).attrs.as_ptr().add(i)
    }
    #[cfg(any(feature = "pg18", feature = "pg19"))]
    // SAFETY: `desc` is a valid descriptor and `i < natts` (the contract); from 18 its `natts`
    // compact attributes are followed by the `natts` full ones, so both offsets stay inside it.
    unsafe {
        let first = (*desc).compact_attrs.as_ptr().add((*desc).natts as usize)
            as *const pg_sys::FormData_pg_attribute;
        first.add(i)
    }
}

/// Whether column `i` (0-based) of relation `rel` holds no NULL: a NOT NULL constraint, and
/// from 18, a validated one (a `NOT VALID` one leaves older rows unchecked; an unknown
/// validity counts as not known).
///
/// # Safety
///
/// `rel` must be an open relation and `i` less than its descriptor's `natts`.
pub unsafe fn attribute_never_null(rel: pg_sys::Relation, i: usize) -> bool {
    #[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
    // SAFETY: an open relation's descriptor and `i < natts` (the contract)
    unsafe {
        (*tuple_desc_attr((*rel).rd_att, i)).attnotnull
    }
    #[cfg(any(feature = "pg18", feature = "pg19"))]
    // SAFETY: as above; from 18 the descriptor's compact attributes come first, one per column
    unsafe {
        let compact = (*(*rel).rd_att).compact_attrs.as_ptr().add(i);
        (*tuple_desc_attr((*rel).rd_att, i)).attnotnull
            && (*compact).attnullability as u8 == pg_sys::ATTNULLABLE_VALID
    }
}

/// Sets a slot type's `is_current_xact_tuple` (a callback from 17; before, nothing asks).
pub fn set_is_current_xact_tuple(
    ops: &mut pg_sys::TupleTableSlotOps,
    f: unsafe extern "C-unwind" fn(*mut pg_sys::TupleTableSlot) -> bool,
) {
    #[cfg(any(feature = "pg15", feature = "pg16"))]
    let _ = (ops, f);
    #[cfg(not(any(feature = "pg15", feature = "pg16")))]
    {
        ops.is_current_xact_tuple = Some(f);
    }
}

/// `ConditionalLockTuple` (from 18 it takes whether to log a failure: no).
///
/// # Safety
///
/// `rel` must be an open relation; called in a transaction.
pub unsafe fn conditional_lock_tuple(
    rel: pg_sys::Relation,
    tid: &mut pg_sys::ItemPointerData,
    mode: pg_sys::LOCKMODE,
) -> bool {
    #[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
    // SAFETY: `rel` is open (the contract) and `tid` a live reference.
    unsafe {
        pg_sys::ConditionalLockTuple(rel, tid, mode)
    }
    #[cfg(any(feature = "pg18", feature = "pg19"))]
    // SAFETY: `rel` is open (the contract) and `tid` a live reference.
    unsafe {
        pg_sys::ConditionalLockTuple(rel, tid, mode, false)
    }
}

/// `ConditionalXactLockTableWait` (from 18 it takes whether to log a failure: no).
///
/// # Safety
///
/// Called in a backend, inside a transaction (the lock manager must be usable).
pub unsafe fn conditional_xact_lock_table_wait(xid: pg_sys::TransactionId) -> bool {
    #[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
    // SAFETY: called inside a transaction (the contract); `xid` is passed by value.
    unsafe {
        pg_sys::ConditionalXactLockTableWait(xid)
    }
    #[cfg(any(feature = "pg18", feature = "pg19"))]
    // SAFETY: called inside a transaction (the contract); `xid` is passed by value.
    unsafe {
        pg_sys::ConditionalXactLockTableWait(xid, false)
    }
}

/// Logs a record whose replay on a hot standby cancels, after `max_standby_streaming_delay`,
/// the queries of `rel`'s database whose snapshots may not see transaction `horizon` (with
/// its epoch) as committed, and changes nothing: btree's "page reuse" record, which exists
/// for that alone (its redo only resolves the conflict; it registers no page), the same
/// in 15 to 19 but for its layout (16 names the file by locator and adds whether the
/// relation is a catalog one for logical decoding: no). Logical decoding passes it over.
///
/// # Safety
///
/// `rel` must be an open relation, and the caller in a transaction that may write WAL.
pub unsafe fn log_snapshot_conflict(rel: pg_sys::Relation, horizon: u64) {
    #[repr(C)]
    struct ReusePage {
        tablespace: pg_sys::Oid,
        database: pg_sys::Oid,
        file: u32,
        block: u32,
        horizon: u64,
        #[cfg(not(feature = "pg15"))]
        is_catalog_rel: bool,
    }
    #[cfg(feature = "pg15")]
    // SAFETY: `rel` points to an open relation (the contract).
    let (tablespace, database, size) = unsafe {
        (
            (*rel).rd_node.spcNode,
            (*rel).rd_node.dbNode,
            std::mem::size_of::<ReusePage>(),
        )
    };
    #[cfg(not(feature = "pg15"))]
    // SAFETY: `rel` points to an open relation (the contract).
    let (tablespace, database, size) = unsafe {
        (
            (*rel).rd_locator.spcOid,
            (*rel).rd_locator.dbOid,
            std::mem::offset_of!(ReusePage, is_catalog_rel) + 1,
        )
    };
    let record = ReusePage {
        tablespace,
        database,
        file: relfile_number(rel),
        block: 0,
        horizon,
        #[cfg(not(feature = "pg15"))]
        is_catalog_rel: false,
    };
    const RM_BTREE_ID: u8 = 11;
    const XLOG_BTREE_REUSE_PAGE: u8 = 0xD0;
    // SAFETY: the caller may write WAL (the contract); `record` is a live local of `size`
    // bytes (at most its size) that stays in place until `XLogInsert` has copied it.
    unsafe {
        pg_sys::XLogBeginInsert();
        // (not written through: 18 says so in its signature)
        #[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
        pg_sys::XLogRegisterData(std::ptr::addr_of!(record).cast_mut().cast(), size as _);
        #[cfg(any(feature = "pg18", feature = "pg19"))]
        pg_sys::XLogRegisterData(std::ptr::addr_of!(record).cast(), size as _);
        pg_sys::XLogInsert(RM_BTREE_ID, XLOG_BTREE_REUSE_PAGE);
    }
}

/// The relation's file number (15: `rd_node.relNode`; 16: `rd_locator.relNumber`).
pub fn relfile_number(rel: pg_sys::Relation) -> u32 {
    relation_locator(rel)[2]
}

/// The GROUP BY clauses the planner groups by (from 16 without the redundant ones, in
/// `processed_groupClause`).
///
/// # Safety
///
/// `root` must point to the planner's valid `PlannerInfo` (with its `parse`).
pub unsafe fn group_clause(root: *mut pg_sys::PlannerInfo) -> *mut pg_sys::List {
    #[cfg(feature = "pg15")]
    // SAFETY: `root` and its `parse` are valid (the contract).
    unsafe {
        (*(*root).parse).groupClause
    }
    #[cfg(not(feature = "pg15"))]
    // SAFETY: `root` is valid (the contract).
    unsafe {
        (*root).processed_groupClause
    }
}

/// A serial, unordered Append path of `rel` over `subpaths` (19 passes the subpaths in an
/// `AppendPathInput`, with the sets of Appends flattened into it: none here).
///
/// # Safety
///
/// `root` and `rel` must be the planner's valid structures and `subpaths` a List of valid
/// paths of `rel`'s children, while planning.
pub unsafe fn create_append_path(
    root: *mut pg_sys::PlannerInfo,
    rel: *mut pg_sys::RelOptInfo,
    subpaths: *mut pg_sys::List,
) -> *mut pg_sys::AppendPath {
    use std::ptr::null_mut as none;
    #[cfg(not(feature = "pg19"))]
    // SAFETY: the planner's structures, while planning (the contract)
    unsafe {
        pg_sys::create_append_path(root, rel, subpaths, none(), none(), none(), 0, false, -1.0)
    }
    #[cfg(feature = "pg19")]
    // SAFETY: the planner's structures, while planning (the contract)
    unsafe {
        let input = pg_sys::AppendPathInput {
            subpaths,
            partial_subpaths: none(),
            child_append_relid_sets: none(),
        };
        pg_sys::create_append_path(root, rel, input, none(), none(), 0, false, -1.0)
    }
}

/// A Unique step over `subpath`, sorted on its first `ncols` pathkeys (PostgreSQL's own
/// DISTINCT plan; 19 renamed its path).
///
/// # Safety
///
/// `root` and `rel` must be the planner's valid structures and `subpath` a valid path sorted
/// so, while planning.
pub unsafe fn create_unique_path(
    root: *mut pg_sys::PlannerInfo,
    rel: *mut pg_sys::RelOptInfo,
    subpath: *mut pg_sys::Path,
    ncols: i32,
    groups: f64,
) -> *mut pg_sys::Path {
    // SAFETY: the planner's structures, while planning (the contract)
    unsafe {
        #[cfg(not(feature = "pg19"))]
        let path = pg_sys::create_upper_unique_path(root, rel, subpath, ncols, groups);
        #[cfg(feature = "pg19")]
        let path = pg_sys::create_unique_path(root, rel, subpath, ncols, groups);
        path as *mut pg_sys::Path
    }
}

/// InvalidMultiXactId (a C macro).
pub const INVALID_MULTIXACT_ID: pg_sys::MultiXactId = pg_sys::InvalidTransactionId;

/// A plan node's instrumentation (`PlanState.instrument`): 19 gave nodes a type of their own.
#[cfg(not(feature = "pg19"))]
pub type NodeInstrumentation = pg_sys::Instrumentation;
#[cfg(feature = "pg19")]
pub type NodeInstrumentation = pg_sys::NodeInstrumentation;

#[cfg(feature = "pg15")]
pub type Locator = pg_sys::RelFileNode;
#[cfg(not(feature = "pg15"))]
pub type Locator = pg_sys::RelFileLocator;

pub fn locator_number(l: &Locator) -> u32 {
    #[cfg(feature = "pg15")]
    {
        u32::from(l.relNode)
    }
    #[cfg(not(feature = "pg15"))]
    {
        u32::from(l.relNumber)
    }
}

/// Takes a buffer's content lock in share or exclusive mode (the mode is an enum from 19).
///
/// # Safety
///
/// `buffer` must be a valid buffer this backend has pinned and whose content lock it does
/// not hold.
pub unsafe fn lock_buffer(buffer: pg_sys::Buffer, exclusive: bool) {
    let mode = if exclusive {
        pg_sys::BUFFER_LOCK_EXCLUSIVE
    } else {
        pg_sys::BUFFER_LOCK_SHARE
    };
    // SAFETY: `buffer` is pinned by this backend and not yet locked by it (the contract).
    unsafe {
        #[cfg(not(feature = "pg19"))]
        pg_sys::LockBuffer(buffer, mode as i32);
        #[cfg(feature = "pg19")]
        pg_sys::LockBuffer(buffer, mode as u32);
    }
}

/// Gives back a buffer's content lock taken with [`lock_buffer`], keeping the pin (19 made
/// `LockBuffer` inline, with `UnlockBuffer` for this).
///
/// # Safety
///
/// `buffer` must be pinned by this backend, with its content lock held by it.
pub unsafe fn unlock_buffer(buffer: pg_sys::Buffer) {
    // SAFETY: this backend holds `buffer`'s pin and content lock (the contract).
    unsafe {
        #[cfg(not(feature = "pg19"))]
        pg_sys::LockBuffer(buffer, pg_sys::BUFFER_LOCK_UNLOCK as i32);
        #[cfg(feature = "pg19")]
        pg_sys::UnlockBuffer(buffer);
    }
}

/// Names the relation in a parallel scan's shared state (up to 17 by OID, from 18 by file).
///
/// # Safety
///
/// `pscan` must point to a writable parallel scan descriptor and `rel` to an open relation.
pub unsafe fn set_parallel_scan_relation(
    pscan: pg_sys::ParallelTableScanDesc,
    rel: pg_sys::Relation,
) {
    #[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
    // SAFETY: `pscan` is writable and `rel` open (the contract).
    unsafe {
        (*pscan).phs_relid = (*rel).rd_id;
    }
    #[cfg(any(feature = "pg18", feature = "pg19"))]
    // SAFETY: `pscan` is writable and `rel` open (the contract).
    unsafe {
        (*pscan).phs_locator = (*rel).rd_locator;
    }
}

/// WAL-logs the creation of an (empty) init fork, as heap does for unlogged tables.
///
/// # Safety
///
/// `srel` must be an open storage manager relation, and the caller in a transaction that may
/// write WAL.
pub unsafe fn log_init_fork_created(srel: pg_sys::SMgrRelation) {
    // SAFETY: `srel` is open and WAL may be written (the contract); the locator is borrowed
    // only for the call.
    unsafe {
        #[cfg(feature = "pg15")]
        pg_sys::log_smgrcreate(&(*srel).smgr_rnode.node, pg_sys::ForkNumber::INIT_FORKNUM);
        #[cfg(not(feature = "pg15"))]
        pg_sys::log_smgrcreate(
            &(*srel).smgr_rlocator.locator,
            pg_sys::ForkNumber::INIT_FORKNUM,
        );
    }
}

/// Sets pg_class.relpages/reltuples after VACUUM (18 adds the all-frozen page count). The
/// table holds no transaction ids, so relfrozenxid and relminmxid stay invalid.
///
/// # Safety
///
/// `rel` must be an open relation, locked as VACUUM locks it, in a transaction.
pub unsafe fn update_relstats(rel: pg_sys::Relation, pages: pg_sys::BlockNumber, tuples: f64) {
    // SAFETY: `rel` is open (the contract), so its `rd_rel` is its valid pg_class row.
    let hasindex = unsafe { (*(*rel).rd_rel).relhasindex };
    // SAFETY: `rel` is open and locked, in a transaction (the contract); the null pointers are
    // the outputs `vac_update_relstats` is told are not wanted.
    unsafe {
        #[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
        pg_sys::vac_update_relstats(
            rel,
            pages,
            tuples,
            0,
            hasindex,
            pg_sys::InvalidTransactionId,
            INVALID_MULTIXACT_ID,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            false,
        );
        #[cfg(any(feature = "pg18", feature = "pg19"))]
        pg_sys::vac_update_relstats(
            rel,
            pages,
            tuples,
            0,
            0,
            hasindex,
            pg_sys::InvalidTransactionId,
            INVALID_MULTIXACT_ID,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            false,
        );
    }
}

/// Reports a VACUUM's end to the cumulative statistics, as heap's VACUUM does (the table's
/// vacuum count and time, its live and dead rows, its inserts since a VACUUM reset), so
/// that autovacuum does not come back for counts already dealt with. 18 adds the VACUUM's
/// start time; 19 takes the relation.
///
/// # Safety
///
/// `rel` must be an open relation, locked as VACUUM locks it, in a transaction.
pub unsafe fn report_vacuum(
    rel: pg_sys::Relation,
    live: i64,
    dead: i64,
    start: pg_sys::TimestampTz,
) {
    // SAFETY: `rel` is open (the contract), so its `rd_rel` is its valid pg_class row; in a
    // transaction (the contract)
    unsafe {
        #[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
        {
            let _ = start; // (not reported before 18)
            pg_sys::pgstat_report_vacuum((*rel).rd_id, (*(*rel).rd_rel).relisshared, live, dead);
        }
        #[cfg(feature = "pg18")]
        pg_sys::pgstat_report_vacuum(
            (*rel).rd_id,
            (*(*rel).rd_rel).relisshared,
            live,
            dead,
            start,
        );
        #[cfg(feature = "pg19")]
        pg_sys::pgstat_report_vacuum(rel, live, dead, start);
    }
}

/// The next value of a datum sort (`tuplesort_getdatum`, forward, not copied), `None` at its
/// end or for a NULL. (16 added `copy`.)
///
/// # Safety
///
/// `sort` must be a datum sort begun with `tuplesort_begin_datum` and already performed; the
/// value returned (by reference for such types) lives only until the sort's next call or end.
pub unsafe fn tuplesort_next_datum(sort: *mut pg_sys::Tuplesortstate) -> Option<pg_sys::Datum> {
    let mut value = pg_sys::Datum::from(0);
    let mut isnull = false;
    #[cfg(feature = "pg15")]
    // SAFETY: `sort` is a performed datum sort (the contract); the outputs are live locals,
    // and no abbreviated key is asked for (null).
    let found = unsafe {
        pg_sys::tuplesort_getdatum(sort, true, &mut value, &mut isnull, std::ptr::null_mut())
    };
    #[cfg(not(feature = "pg15"))]
    // SAFETY: `sort` is a performed datum sort (the contract); the outputs are live locals,
    // and no abbreviated key is asked for (null).
    let found = unsafe {
        pg_sys::tuplesort_getdatum(
            sort,
            true,
            false,
            &mut value,
            &mut isnull,
            std::ptr::null_mut(),
        )
    };
    (found && !isnull).then_some(value)
}

/// `index_beginscan` for `nkeys` scan keys (given at each `index_rescan`), without ordering
/// operators or instrumentation.
///
/// # Safety
///
/// `heap` and its index `index` must be open and locked, and `snapshot` registered or active,
/// for as long as the scan returned lives; the caller ends it with `index_endscan`.
pub unsafe fn index_beginscan(
    heap: pg_sys::Relation,
    index: pg_sys::Relation,
    snapshot: pg_sys::Snapshot,
    nkeys: i32,
) -> pg_sys::IndexScanDesc {
    // SAFETY: the relations are open and locked and the snapshot valid (the contract); the
    // null pointer is the instrumentation `index_beginscan` is told there is none of.
    unsafe {
        #[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
        return pg_sys::index_beginscan(heap, index, snapshot, nkeys, 0);
        #[cfg(feature = "pg18")]
        return pg_sys::index_beginscan(heap, index, snapshot, std::ptr::null_mut(), nkeys, 0);
        #[cfg(feature = "pg19")]
        return pg_sys::index_beginscan(
            heap,
            index,
            snapshot,
            std::ptr::null_mut(),
            nkeys,
            0,
            pg_sys::ScanOptions::SO_NONE,
        );
    }
}

/// Whether `xid` is older than every snapshot that may still be taken into account (19 asks
/// whether the horizon may be computed again to tell; it may).
///
/// # Safety
///
/// `vistest` must be a state from `GlobalVisTestFor`, in the transaction that got it.
pub unsafe fn xid_removable(
    vistest: *mut pg_sys::GlobalVisState,
    xid: pg_sys::TransactionId,
) -> bool {
    // SAFETY: `vistest` came from `GlobalVisTestFor` in this transaction (the contract).
    unsafe {
        #[cfg(not(feature = "pg19"))]
        return pg_sys::GlobalVisTestIsRemovableXid(vistest, xid);
        #[cfg(feature = "pg19")]
        return pg_sys::GlobalVisTestIsRemovableXid(vistest, xid, true);
    }
}

/// Counts an UPDATE of one row in the table's statistics, as heap's (never a HOT update; 16
/// adds whether the new version went to another page), so that autovacuum visits the table.
///
/// # Safety
///
/// `rel` must be an open relation, in a transaction.
pub unsafe fn count_update(rel: pg_sys::Relation) {
    // SAFETY: `rel` is open, in a transaction (the contract).
    unsafe {
        #[cfg(feature = "pg15")]
        pg_sys::pgstat_count_heap_update(rel, false);
        #[cfg(not(feature = "pg15"))]
        pg_sys::pgstat_count_heap_update(rel, false, true);
    }
}

/// What an index's bulk deletion and cleanup are told (16 adds the table).
///
/// # Safety
///
/// Nothing is dereferenced here; the info returned holds `index`, `table` and `strategy`,
/// which must be open (and valid) for as long as an index AM is handed it.
pub unsafe fn index_vacuum_info(
    index: pg_sys::Relation,
    table: pg_sys::Relation,
    strategy: pg_sys::BufferAccessStrategy,
    rows: f64,
) -> pg_sys::IndexVacuumInfo {
    // SAFETY: `IndexVacuumInfo` holds only pointers, numbers and bools (15 to 19), for which
    // all-zero bytes are valid values (null, 0, false).
    let mut info: pg_sys::IndexVacuumInfo = unsafe { std::mem::zeroed() };
    info.index = index;
    #[cfg(not(feature = "pg15"))]
    {
        info.heaprel = table;
    }
    #[cfg(feature = "pg15")]
    let _ = table;
    info.analyze_only = false;
    info.estimated_count = true;
    info.message_level = pg_sys::DEBUG2 as i32;
    info.num_heap_tuples = rows;
    info.strategy = strategy;
    info
}

/// Makes this backend's lazy VACUUM an ordinary transaction for other backends' snapshots.
/// A lazy VACUUM's transaction is left out of their snapshots (`PROC_IN_VACUUM`): one that
/// took a transaction ID would have its writes read as already committed, or as aborted,
/// while it runs. pg_columnar's VACUUM writes catalog rows, so it clears the flag first, as
/// VACUUM FULL never sets it; its snapshot then holds back other VACUUMs' horizons, as any
/// transaction's does. Nothing if this backend is not in a lazy VACUUM (any more). The same in
/// 15 to 19.
///
/// # Safety
///
/// Called in a regular backend (with `MyProc`), inside a transaction, holding no LWLock that
/// ranks after `ProcArrayLock`.
pub unsafe fn leave_lazy_vacuum_mode() {
    // SAFETY: `MyProc` is set once at backend start and read in its one thread (the contract:
    // a regular backend has one).
    let proc = unsafe { pg_sys::MyProc };
    // SAFETY: `proc` is this backend's live PGPROC; it reads its own flags unlocked, as
    // PostgreSQL's code does.
    if unsafe { (*proc).statusFlags } & pg_sys::PROC_IN_VACUUM as u8 == 0 {
        return;
    }
    // SAFETY: `MainLWLockArray[4]` is `ProcArrayLock` in 15 to 19 (lwlocknames.h,
    // lwlocklist.h); both copies of the flags are written under it held exclusive, as
    // PostgreSQL's own writers of `statusFlags` do, and `pgxactoff` indexes this backend's slot.
    unsafe {
        let proc_array_lock = std::ptr::addr_of_mut!((*pg_sys::MainLWLockArray.add(4)).lock);
        pg_sys::LWLockAcquire(proc_array_lock, pg_sys::LWLockMode::LW_EXCLUSIVE);
        (*proc).statusFlags &= !(pg_sys::PROC_IN_VACUUM as u8);
        *(*pg_sys::ProcGlobal)
            .statusFlags
            .add((*proc).pgxactoff as usize) = (*proc).statusFlags;
        pg_sys::LWLockRelease(proc_array_lock);
    }
}

/// The slot type of a custom scan's scan tuple: from 16 the node says which slot operations
/// `ExecInitCustomScan` should use; 15 always makes a plain virtual slot, which
/// [`replace_custom_scan_slot`] then replaces.
///
/// # Safety
///
/// `ops` must be a slot type that lives as long as the node (a `static`); from 16 the node's
/// `ExecInitCustomScan` makes its scan slot with it.
pub unsafe fn set_custom_scan_slot_ops(
    css: &mut pg_sys::CustomScanState,
    ops: *const pg_sys::TupleTableSlotOps,
) {
    #[cfg(feature = "pg15")]
    let _ = (css, ops);
    #[cfg(not(feature = "pg15"))]
    {
        css.slotOps = ops;
    }
}

/// 15 only (see [`set_custom_scan_slot_ops`]): gives a custom scan a scan slot with `ops`,
/// from `BeginCustomScan`. The node's expressions were compiled for a virtual slot, which
/// ours is (with system columns added).
///
/// # Safety
///
/// `node` must be the custom scan state being begun, with its scan slot made, `estate` its
/// executor state, and `ops` a slot type that outlives the node.
pub unsafe fn replace_custom_scan_slot(
    node: *mut pg_sys::CustomScanState,
    estate: *mut pg_sys::EState,
    ops: *const pg_sys::TupleTableSlotOps,
) {
    #[cfg(feature = "pg15")]
    // SAFETY: `node` has its scan slot and `estate` is its executor state (the contract); the
    // new slot is allocated in the estate's tuple table, which the executor frees at its end.
    unsafe {
        let desc = (*(*node).ss.ss_ScanTupleSlot).tts_tupleDescriptor;
        (*node).ss.ss_ScanTupleSlot =
            pg_sys::ExecAllocTableSlot(&mut (*estate).es_tupleTable, desc, ops);
    }
    #[cfg(not(feature = "pg15"))]
    let _ = (node, estate, ops);
}

/// Marks a path disabled (`enable_seqscan = off` for a scan that replaces the sequential
/// one): up to 17 by adding `disable_cost`, from 18 by counting a disabled node.
///
/// # Safety
///
/// Called in a backend while planning (up to 17 it reads the global `disable_cost`).
pub unsafe fn disable_path(path: &mut pg_sys::Path) {
    #[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
    // SAFETY: `disable_cost` is a PostgreSQL global, written only while loading settings, read
    // here in the backend's one thread.
    unsafe {
        path.startup_cost += pg_sys::disable_cost;
        path.total_cost += pg_sys::disable_cost;
    }
    #[cfg(any(feature = "pg18", feature = "pg19"))]
    {
        path.disabled_nodes += 1;
    }
}

/// Whether `collation` orders text bytewise (C, POSIX, or the database's default when that
/// is C): what comparing bytes may stand in for. PostgreSQL 18 replaced `lc_collate_is_c`
/// by the locale's `collate_is_c`.
pub fn collation_orders_bytewise(collation: pg_sys::Oid) -> bool {
    if collation == pg_sys::InvalidOid {
        return false;
    }
    #[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
    // SAFETY: only an oid is passed (`InvalidOid` returned above); an unknown one raises an
    // ERROR, which pgrx's guard turns into a Rust panic rather than a longjmp over Rust frames.
    unsafe {
        pg_sys::lc_collate_is_c(collation)
    }
    #[cfg(any(feature = "pg18", feature = "pg19"))]
    // SAFETY: `pg_newlocale_from_collation` returns a valid locale for an existing collation
    // (one field read at once) and raises an ERROR, a panic through pgrx, for an unknown one.
    unsafe {
        (*pg_sys::pg_newlocale_from_collation(collation)).collate_is_c
    }
}

/// SQL over a `pg_publication_rel` row `r`: whether it puts its table into the publication.
/// From 19 a row can instead leave a table out of a publication of all tables
/// (`FOR ALL TABLES EXCEPT (TABLE ...)`, `prexcept`).
#[cfg(not(feature = "pg19"))]
pub const PUBLICATION_REL_MEMBER: &str = "true";
#[cfg(feature = "pg19")]
pub const PUBLICATION_REL_MEMBER: &str = "NOT r.prexcept";

/// SQL over a publication `p` of all tables: whether it covers the table whose own oid and
/// ancestors' the subquery `lineage` lists (from 19 it may leave it out with EXCEPT).
pub fn all_tables_cover(lineage: &str) -> String {
    #[cfg(not(feature = "pg19"))]
    {
        let _ = lineage;
        "p.puballtables".to_string()
    }
    #[cfg(feature = "pg19")]
    {
        format!(
            "(p.puballtables AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_publication_rel x \
              WHERE x.prpubid = p.oid AND x.prexcept AND x.prrelid IN {lineage}))"
        )
    }
}

/// Whether the current user owns relation `relid` (or is a superuser), as PostgreSQL's "must
/// be owner" check asks it (16 made the check generic over catalogs).
///
/// # Safety
///
/// Called in a backend, inside a transaction (it reads the catalog cache).
pub unsafe fn owns_relation(relid: pg_sys::Oid) -> bool {
    // SAFETY: inside a transaction (the contract); only oids are passed.
    unsafe {
        #[cfg(feature = "pg15")]
        return pg_sys::pg_class_ownercheck(relid, pg_sys::GetUserId());
        #[cfg(not(feature = "pg15"))]
        return pg_sys::object_ownercheck(pg_sys::RelationRelationId, relid, pg_sys::GetUserId());
    }
}

/// A relation's file locator as (tablespace, database, relation file number): what logical
/// decoding maps back to the relation (15: `rd_node`; from 16: `rd_locator`).
pub fn relation_locator(rel: pg_sys::Relation) -> [u32; 3] {
    // SAFETY: not guaranteed by this safe fn's signature: every caller passes a relation it
    // has open.
    unsafe {
        #[cfg(feature = "pg15")]
        {
            let l = (*rel).rd_node;
            [
                u32::from(l.spcNode),
                u32::from(l.dbNode),
                u32::from(l.relNode),
            ]
        }
        #[cfg(not(feature = "pg15"))]
        {
            let l = (*rel).rd_locator;
            [
                u32::from(l.spcOid),
                u32::from(l.dbOid),
                u32::from(l.relNumber),
            ]
        }
    }
}

/// Whether this backend writes the WAL that logical decoding needs (`XLogLogicalInfoActive()`:
/// `wal_level = logical`; 19 also while a logical replication slot exists, which the backend
/// learns of by the time its transaction has an id).
pub fn logical_info_active() -> bool {
    // SAFETY: reads of the server's settings, fixed while a transaction has an id
    unsafe {
        #[cfg(not(feature = "pg19"))]
        {
            pg_sys::wal_level >= pg_sys::WalLevel::WAL_LEVEL_LOGICAL as i32
        }
        #[cfg(feature = "pg19")]
        {
            pg_sys::wal_level >= pg_sys::WalLevel::WAL_LEVEL_LOGICAL as i32
                || pg_sys::XLogLogicalInfo
        }
    }
}

/// Whether logical decoding can run on this server: 15–18 need `wal_level = logical`; 19
/// turns logical WAL on by itself while a logical slot exists, from `wal_level = replica`.
pub fn logical_decoding_possible() -> bool {
    // SAFETY: a read of a setting fixed while the server runs
    let level = unsafe { pg_sys::wal_level };
    #[cfg(not(feature = "pg19"))]
    {
        level >= pg_sys::WalLevel::WAL_LEVEL_LOGICAL as i32
    }
    #[cfg(feature = "pg19")]
    {
        level >= pg_sys::WalLevel::WAL_LEVEL_REPLICA as i32
    }
}

/// `XLogRegisterData` of `data` (16 made the length unsigned, 18 the pointer `const void *`).
///
/// # Safety
///
/// Between `XLogBeginInsert` and `XLogInsert`; `data` stays valid and unchanged until the
/// `XLogInsert`, and is shorter than 2^31 bytes.
pub unsafe fn xlog_register_data(data: &[u8]) {
    // SAFETY: as the contract says; the pointer is only read
    unsafe {
        #[cfg(feature = "pg15")]
        pg_sys::XLogRegisterData(data.as_ptr() as *mut std::ffi::c_char, data.len() as i32);
        #[cfg(any(feature = "pg16", feature = "pg17"))]
        pg_sys::XLogRegisterData(data.as_ptr() as *mut std::ffi::c_char, data.len() as u32);
        #[cfg(any(feature = "pg18", feature = "pg19"))]
        pg_sys::XLogRegisterData(data.as_ptr().cast(), data.len() as u32);
    }
}

/// A decoded change's tuple as the reorder buffer holds it (a `ReorderBufferTupleBuf` up to
/// 16, a `HeapTuple` from 17).
#[cfg(any(feature = "pg15", feature = "pg16"))]
pub type ReorderTuple = *mut pg_sys::ReorderBufferTupleBuf;
#[cfg(not(any(feature = "pg15", feature = "pg16")))]
pub type ReorderTuple = pg_sys::HeapTuple;

/// A new change of the reorder buffer `rb` (18 renamed `ReorderBufferGetChange`).
///
/// # Safety
///
/// `rb` is the decoding context's reorder buffer, during decoding.
pub unsafe fn reorder_change(rb: *mut pg_sys::ReorderBuffer) -> *mut pg_sys::ReorderBufferChange {
    // SAFETY: `rb` is valid (the contract)
    unsafe {
        #[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
        return pg_sys::ReorderBufferGetChange(rb);
        #[cfg(any(feature = "pg18", feature = "pg19"))]
        return pg_sys::ReorderBufferAllocChange(rb);
    }
}

/// A tuple of the reorder buffer `rb` with room for `data_len` bytes after its header: the
/// value a change holds, and the `HeapTuple` in it (its `t_data` set to that room).
///
/// # Safety
///
/// `rb` is the decoding context's reorder buffer, during decoding.
pub unsafe fn reorder_tuple(
    rb: *mut pg_sys::ReorderBuffer,
    data_len: usize,
) -> (ReorderTuple, pg_sys::HeapTuple) {
    // SAFETY: `rb` is valid (the contract); the buffer returned is PostgreSQL's, alive
    // until the change is freed
    unsafe {
        #[cfg(any(feature = "pg15", feature = "pg16"))]
        {
            let t = pg_sys::ReorderBufferGetTupleBuf(rb, data_len);
            (t, std::ptr::addr_of_mut!((*t).tuple))
        }
        #[cfg(feature = "pg17")]
        {
            let t = pg_sys::ReorderBufferGetTupleBuf(rb, data_len);
            (t, t)
        }
        #[cfg(any(feature = "pg18", feature = "pg19"))]
        {
            let t = pg_sys::ReorderBufferAllocTupleBuf(rb, data_len);
            (t, t)
        }
    }
}

/// Sets the relation a decoded change is of, from [`relation_locator`]'s three numbers.
///
/// # Safety
///
/// `change` is a change of the reorder buffer whose `data.tp` is the one in use.
pub unsafe fn set_change_locator(change: *mut pg_sys::ReorderBufferChange, l: [u32; 3]) {
    // SAFETY: `change` is valid and a tuple change (the contract)
    unsafe {
        #[cfg(feature = "pg15")]
        {
            (*change).data.tp.relnode = pg_sys::RelFileNode {
                spcNode: l[0].into(),
                dbNode: l[1].into(),
                relNode: l[2].into(),
            };
        }
        #[cfg(not(feature = "pg15"))]
        {
            (*change).data.tp.rlocator = pg_sys::RelFileLocator {
                spcOid: l[0].into(),
                dbOid: l[1].into(),
                relNumber: l[2].into(),
            };
        }
    }
}

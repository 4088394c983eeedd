//! Every difference between the PostgreSQL majors (15 to 19) that the extension meets, named
//! once, as shims over PostgreSQL's API: this module names nothing of the crate. docs/COMPAT.md
//! lists the table access method's differences and where they come from. Callbacks whose
//! signatures differ, and which call into the crate, are where their tables are built
//! (`am::versioned`, `am::slot`, `hooks`), each one `cfg` choice over code here or there.

#![allow(clippy::too_many_arguments)]

use pgrx::pg_sys;

/// Attribute `i` (0-based) of a tuple descriptor. From 18 the attributes follow an array of
/// compact attributes.
pub unsafe fn tuple_desc_attr(
    desc: pg_sys::TupleDesc,
    i: usize,
) -> *const pg_sys::FormData_pg_attribute {
    #[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
    {
        (*desc).attrs.as_ptr().add(i)
    }
    #[cfg(any(feature = "pg18", feature = "pg19"))]
    {
        let first = (*desc).compact_attrs.as_ptr().add((*desc).natts as usize)
            as *const pg_sys::FormData_pg_attribute;
        first.add(i)
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
pub unsafe fn conditional_lock_tuple(
    rel: pg_sys::Relation,
    tid: &mut pg_sys::ItemPointerData,
    mode: pg_sys::LOCKMODE,
) -> bool {
    #[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
    {
        pg_sys::ConditionalLockTuple(rel, tid, mode)
    }
    #[cfg(any(feature = "pg18", feature = "pg19"))]
    {
        pg_sys::ConditionalLockTuple(rel, tid, mode, false)
    }
}

/// `ConditionalXactLockTableWait` (from 18 it takes whether to log a failure: no).
pub unsafe fn conditional_xact_lock_table_wait(xid: pg_sys::TransactionId) -> bool {
    #[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
    {
        pg_sys::ConditionalXactLockTableWait(xid)
    }
    #[cfg(any(feature = "pg18", feature = "pg19"))]
    {
        pg_sys::ConditionalXactLockTableWait(xid, false)
    }
}

/// Logs a record whose replay on a hot standby cancels, after `max_standby_streaming_delay`,
/// the queries of `rel`'s database whose snapshots may not see transaction `horizon` (with
/// its epoch) as committed, and changes nothing: btree's "page reuse" record, which exists
/// for that alone (its redo only resolves the conflict; it registers no page), the same
/// in 15 to 19 but for its layout (16 names the file by locator and adds whether the
/// relation is a catalog one for logical decoding: no). Logical decoding passes it over.
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
    let (tablespace, database, size) = (
        (*rel).rd_node.spcNode,
        (*rel).rd_node.dbNode,
        std::mem::size_of::<ReusePage>(),
    );
    #[cfg(not(feature = "pg15"))]
    let (tablespace, database, size) = (
        (*rel).rd_locator.spcOid,
        (*rel).rd_locator.dbOid,
        std::mem::offset_of!(ReusePage, is_catalog_rel) + 1,
    );
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
    pg_sys::XLogBeginInsert();
    // (not written through: 18 says so in its signature)
    #[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
    pg_sys::XLogRegisterData(std::ptr::addr_of!(record).cast_mut().cast(), size as _);
    #[cfg(any(feature = "pg18", feature = "pg19"))]
    pg_sys::XLogRegisterData(std::ptr::addr_of!(record).cast(), size as _);
    pg_sys::XLogInsert(RM_BTREE_ID, XLOG_BTREE_REUSE_PAGE);
}

/// The relation's file number (15: `rd_node.relNode`; 16: `rd_locator.relNumber`).
pub fn relfile_number(rel: pg_sys::Relation) -> u32 {
    unsafe {
        #[cfg(feature = "pg15")]
        {
            u32::from((*rel).rd_node.relNode)
        }
        #[cfg(not(feature = "pg15"))]
        {
            u32::from((*rel).rd_locator.relNumber)
        }
    }
}

/// The GROUP BY clauses the planner groups by (from 16 without the redundant ones, in
/// `processed_groupClause`).
pub unsafe fn group_clause(root: *mut pg_sys::PlannerInfo) -> *mut pg_sys::List {
    #[cfg(feature = "pg15")]
    {
        (*(*root).parse).groupClause
    }
    #[cfg(not(feature = "pg15"))]
    {
        (*root).processed_groupClause
    }
}

/// InvalidMultiXactId (a C macro).
pub const INVALID_MULTIXACT_ID: pg_sys::MultiXactId = pg_sys::InvalidTransactionId;

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
pub unsafe fn lock_buffer(buffer: pg_sys::Buffer, exclusive: bool) {
    let mode = if exclusive {
        pg_sys::BUFFER_LOCK_EXCLUSIVE
    } else {
        pg_sys::BUFFER_LOCK_SHARE
    };
    #[cfg(not(feature = "pg19"))]
    pg_sys::LockBuffer(buffer, mode as i32);
    #[cfg(feature = "pg19")]
    pg_sys::LockBuffer(buffer, mode as u32);
}

/// Gives back a buffer's content lock taken with [`lock_buffer`], keeping the pin (19 made
/// `LockBuffer` inline, with `UnlockBuffer` for this).
pub unsafe fn unlock_buffer(buffer: pg_sys::Buffer) {
    #[cfg(not(feature = "pg19"))]
    pg_sys::LockBuffer(buffer, pg_sys::BUFFER_LOCK_UNLOCK as i32);
    #[cfg(feature = "pg19")]
    pg_sys::UnlockBuffer(buffer);
}

/// Names the relation in a parallel scan's shared state (up to 17 by OID, from 18 by file).
pub unsafe fn set_parallel_scan_relation(
    pscan: pg_sys::ParallelTableScanDesc,
    rel: pg_sys::Relation,
) {
    #[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
    {
        (*pscan).phs_relid = (*rel).rd_id;
    }
    #[cfg(any(feature = "pg18", feature = "pg19"))]
    {
        (*pscan).phs_locator = (*rel).rd_locator;
    }
}

/// WAL-logs the creation of an (empty) init fork, as heap does for unlogged tables.
pub unsafe fn log_init_fork_created(srel: pg_sys::SMgrRelation) {
    #[cfg(feature = "pg15")]
    pg_sys::log_smgrcreate(&(*srel).smgr_rnode.node, pg_sys::ForkNumber::INIT_FORKNUM);
    #[cfg(not(feature = "pg15"))]
    pg_sys::log_smgrcreate(
        &(*srel).smgr_rlocator.locator,
        pg_sys::ForkNumber::INIT_FORKNUM,
    );
}

/// Sets pg_class.relpages/reltuples after VACUUM (18 adds the all-frozen page count). The
/// table holds no transaction ids, so relfrozenxid and relminmxid stay invalid.
pub unsafe fn update_relstats(rel: pg_sys::Relation, pages: pg_sys::BlockNumber, tuples: f64) {
    let hasindex = (*(*rel).rd_rel).relhasindex;
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

/// The next value of a datum sort (`tuplesort_getdatum`, forward, not copied), `None` at its
/// end or for a NULL. (16 added `copy`.)
pub unsafe fn tuplesort_next_datum(sort: *mut pg_sys::Tuplesortstate) -> Option<pg_sys::Datum> {
    let mut value = pg_sys::Datum::from(0);
    let mut isnull = false;
    #[cfg(feature = "pg15")]
    let found =
        pg_sys::tuplesort_getdatum(sort, true, &mut value, &mut isnull, std::ptr::null_mut());
    #[cfg(not(feature = "pg15"))]
    let found = pg_sys::tuplesort_getdatum(
        sort,
        true,
        false,
        &mut value,
        &mut isnull,
        std::ptr::null_mut(),
    );
    (found && !isnull).then_some(value)
}

/// `index_beginscan` without scan keys (given at `index_rescan`) or instrumentation.
pub unsafe fn index_beginscan(
    heap: pg_sys::Relation,
    index: pg_sys::Relation,
    snapshot: pg_sys::Snapshot,
) -> pg_sys::IndexScanDesc {
    #[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
    return pg_sys::index_beginscan(heap, index, snapshot, 0, 0);
    #[cfg(feature = "pg18")]
    return pg_sys::index_beginscan(heap, index, snapshot, std::ptr::null_mut(), 0, 0);
    #[cfg(feature = "pg19")]
    return pg_sys::index_beginscan(
        heap,
        index,
        snapshot,
        std::ptr::null_mut(),
        0,
        0,
        pg_sys::ScanOptions::SO_NONE,
    );
}

/// Whether `xid` is older than every snapshot that may still be taken into account (19 asks
/// whether the horizon may be computed again to tell; it may).
pub unsafe fn xid_removable(
    vistest: *mut pg_sys::GlobalVisState,
    xid: pg_sys::TransactionId,
) -> bool {
    #[cfg(not(feature = "pg19"))]
    return pg_sys::GlobalVisTestIsRemovableXid(vistest, xid);
    #[cfg(feature = "pg19")]
    return pg_sys::GlobalVisTestIsRemovableXid(vistest, xid, true);
}

/// Counts an UPDATE of one row in the table's statistics, as heap's (never a HOT update; 16
/// adds whether the new version went to another page), so that autovacuum visits the table.
pub unsafe fn count_update(rel: pg_sys::Relation) {
    #[cfg(feature = "pg15")]
    pg_sys::pgstat_count_heap_update(rel, false);
    #[cfg(not(feature = "pg15"))]
    pg_sys::pgstat_count_heap_update(rel, false, true);
}

/// What an index's bulk deletion and cleanup are told (16 adds the table).
pub unsafe fn index_vacuum_info(
    index: pg_sys::Relation,
    table: pg_sys::Relation,
    strategy: pg_sys::BufferAccessStrategy,
    rows: f64,
) -> pg_sys::IndexVacuumInfo {
    let mut info: pg_sys::IndexVacuumInfo = std::mem::zeroed();
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
pub unsafe fn leave_lazy_vacuum_mode() {
    let proc = pg_sys::MyProc;
    if (*proc).statusFlags & pg_sys::PROC_IN_VACUUM as u8 == 0 {
        return;
    }
    let proc_array_lock = std::ptr::addr_of_mut!((*pg_sys::MainLWLockArray.add(4)).lock);
    pg_sys::LWLockAcquire(proc_array_lock, pg_sys::LWLockMode::LW_EXCLUSIVE);
    (*proc).statusFlags &= !(pg_sys::PROC_IN_VACUUM as u8);
    *(*pg_sys::ProcGlobal)
        .statusFlags
        .add((*proc).pgxactoff as usize) = (*proc).statusFlags;
    pg_sys::LWLockRelease(proc_array_lock);
}

/// The slot type of a custom scan's scan tuple: from 16 the node says which slot operations
/// `ExecInitCustomScan` should use; 15 always makes a plain virtual slot, which
/// [`replace_custom_scan_slot`] then replaces.
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
pub unsafe fn replace_custom_scan_slot(
    node: *mut pg_sys::CustomScanState,
    estate: *mut pg_sys::EState,
    ops: *const pg_sys::TupleTableSlotOps,
) {
    #[cfg(feature = "pg15")]
    {
        let desc = (*(*node).ss.ss_ScanTupleSlot).tts_tupleDescriptor;
        (*node).ss.ss_ScanTupleSlot =
            pg_sys::ExecAllocTableSlot(&mut (*estate).es_tupleTable, desc, ops);
    }
    #[cfg(not(feature = "pg15"))]
    let _ = (node, estate, ops);
}

/// Marks a path disabled (`enable_seqscan = off` for a scan that replaces the sequential
/// one): up to 17 by adding `disable_cost`, from 18 by counting a disabled node.
pub unsafe fn disable_path(path: &mut pg_sys::Path) {
    #[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
    {
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
    unsafe {
        pg_sys::lc_collate_is_c(collation)
    }
    #[cfg(any(feature = "pg18", feature = "pg19"))]
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
pub unsafe fn owns_relation(relid: pg_sys::Oid) -> bool {
    #[cfg(feature = "pg15")]
    return pg_sys::pg_class_ownercheck(relid, pg_sys::GetUserId());
    #[cfg(not(feature = "pg15"))]
    return pg_sys::object_ownercheck(pg_sys::RelationRelationId, relid, pg_sys::GetUserId());
}

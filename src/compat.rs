//! Every difference between the PostgreSQL majors (15 to 19) that the extension meets, named
//! once. docs/COMPAT.md lists the table access method's differences and where they come
//! from; each appears here as one `cfg` choice, forwarding to version-independent code.

#![allow(clippy::too_many_arguments)]

use pgrx::pg_sys;

use crate::am::{life, routine};

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

/// Sets a slot type's `copy_minimal_tuple` to the virtual slot's after the slot's deferred
/// values are read (`am::slot::read_all`); from 18 it takes the bytes to leave free before
/// the tuple.
pub fn set_copy_minimal_tuple(ops: &mut pg_sys::TupleTableSlotOps) {
    ops.copy_minimal_tuple = Some(copy_minimal_tuple);
}

#[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn copy_minimal_tuple(
    slot: *mut pg_sys::TupleTableSlot,
) -> pg_sys::MinimalTuple {
    crate::am::slot::read_all(slot);
    (pg_sys::TTSOpsVirtual
        .copy_minimal_tuple
        .expect("virtual slots copy minimal tuples"))(slot)
}

#[cfg(any(feature = "pg18", feature = "pg19"))]
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn copy_minimal_tuple(
    slot: *mut pg_sys::TupleTableSlot,
    extra: pg_sys::Size,
) -> pg_sys::MinimalTuple {
    crate::am::slot::read_all(slot);
    (pg_sys::TTSOpsVirtual
        .copy_minimal_tuple
        .expect("virtual slots copy minimal tuples"))(slot, extra)
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
const INVALID_MULTIXACT_ID: pg_sys::MultiXactId = pg_sys::InvalidTransactionId;

#[cfg(feature = "pg15")]
type Locator = pg_sys::RelFileNode;
#[cfg(not(feature = "pg15"))]
type Locator = pg_sys::RelFileLocator;

fn locator_number(l: &Locator) -> u32 {
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

/// Installs the planner hook that sees a base relation's RelOptInfo once its size is known:
/// `get_relation_info_hook` up to 18, `build_simple_rel_hook` from 19 (which replaced it).
pub unsafe fn install_relation_info_hook() {
    #[cfg(not(feature = "pg19"))]
    {
        PREV_RELATION_INFO = pg_sys::get_relation_info_hook;
        pg_sys::get_relation_info_hook = Some(relation_info);
    }
    #[cfg(feature = "pg19")]
    {
        PREV_RELATION_INFO = pg_sys::build_simple_rel_hook;
        pg_sys::build_simple_rel_hook = Some(relation_info);
    }
}

#[cfg(not(feature = "pg19"))]
static mut PREV_RELATION_INFO: pg_sys::get_relation_info_hook_type = None;
#[cfg(feature = "pg19")]
static mut PREV_RELATION_INFO: pg_sys::build_simple_rel_hook_type = None;

#[cfg(not(feature = "pg19"))]
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn relation_info(
    root: *mut pg_sys::PlannerInfo,
    relid: pg_sys::Oid,
    inhparent: bool,
    rel: *mut pg_sys::RelOptInfo,
) {
    if let Some(prev) = PREV_RELATION_INFO {
        prev(root, relid, inhparent, rel);
    }
    crate::hooks::plan_parallel_workers(relid, rel, inhparent);
}
#[cfg(feature = "pg19")]
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn relation_info(
    root: *mut pg_sys::PlannerInfo,
    rel: *mut pg_sys::RelOptInfo,
    rte: *mut pg_sys::RangeTblEntry,
) {
    if let Some(prev) = PREV_RELATION_INFO {
        prev(root, rel, rte);
    }
    if (*rte).rtekind == pg_sys::RTEKind::RTE_RELATION {
        crate::hooks::plan_parallel_workers((*rte).relid, rel, (*rte).inh);
    }
}

/// Installs, up to 17, an executor-start hook that turns off bitmap heap scans' prefetching
/// for pg_columnar tables. Up to 17 the executor prefetches the TID bitmap's block numbers
/// itself, through the buffer manager, as if they were the table's pages; ours are virtual
/// (`am::tid`) and lie past the file's end, which is harmless within its first 1 GB segment
/// and an ERROR beyond it (from about 38 million rows: "could not open file ..."). From 18
/// the access method walks the bitmap itself and nothing is prefetched.
pub unsafe fn install_executor_start_hook() {
    #[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
    {
        PREV_EXECUTOR_START = pg_sys::ExecutorStart_hook;
        pg_sys::ExecutorStart_hook = Some(executor_start);
    }
}

#[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
static mut PREV_EXECUTOR_START: pg_sys::ExecutorStart_hook_type = None;

#[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn executor_start(query: *mut pg_sys::QueryDesc, eflags: std::ffi::c_int) {
    match PREV_EXECUTOR_START {
        Some(prev) => prev(query, eflags),
        None => pg_sys::standard_ExecutorStart(query, eflags),
    }
    if !(*query).planstate.is_null() {
        no_bitmap_prefetch((*query).planstate, std::ptr::null_mut());
    }
}

/// Sets `prefetch_maximum` to 0 in every bitmap heap scan of a pg_columnar table in the tree
/// (subplans included). The prefetch iterator is made at the scan's first row, after this.
#[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
unsafe extern "C-unwind" fn no_bitmap_prefetch(
    ps: *mut pg_sys::PlanState,
    context: *mut std::ffi::c_void,
) -> bool {
    if (*ps).type_ == pg_sys::NodeTag::T_BitmapHeapScanState {
        let node = ps as *mut pg_sys::BitmapHeapScanState;
        if routine::is_columnar((*node).ss.ss_currentRelation) {
            (*node).prefetch_maximum = 0;
        }
    }
    pg_sys::planstate_tree_walker(ps, Some(no_bitmap_prefetch), context)
}

/// Installs the callbacks whose signatures differ between majors.
pub fn install(r: &mut pg_sys::TableAmRoutine) {
    #[cfg(feature = "pg15")]
    {
        r.relation_set_new_filenode = Some(set_new_file);
    }
    #[cfg(not(feature = "pg15"))]
    {
        r.relation_set_new_filelocator = Some(set_new_file);
    }
    r.relation_copy_data = Some(copy_data);
    r.index_fetch_begin = Some(index_fetch_begin);
    r.tuple_insert = Some(tuple_insert);
    r.tuple_insert_speculative = Some(tuple_insert_speculative);
    r.multi_insert = Some(multi_insert);
    r.finish_bulk_insert = Some(finish_bulk_insert);
    r.tuple_delete = Some(tuple_delete);
    r.tuple_update = Some(tuple_update);
    r.relation_copy_for_cluster = Some(copy_for_cluster);
    r.relation_vacuum = Some(vacuum);
    r.scan_analyze_next_block = Some(analyze_next_block);
    r.scan_analyze_next_tuple = Some(analyze_next_tuple);
    #[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
    {
        r.scan_bitmap_next_block = Some(bitmap_next_block);
    }
    r.scan_bitmap_next_tuple = Some(bitmap_next_tuple);
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn set_new_file(
    rel: pg_sys::Relation,
    newlocator: *const Locator,
    persistence: std::ffi::c_char,
    freeze_xid: *mut pg_sys::TransactionId,
    minmulti: *mut pg_sys::MultiXactId,
) {
    // no transaction ids are stored in the table: nothing to freeze, ever
    *freeze_xid = pg_sys::InvalidTransactionId;
    *minmulti = INVALID_MULTIXACT_ID;
    life::new_storage(
        rel,
        locator_number(&*newlocator),
        || pg_sys::RelationCreateStorage(*newlocator, persistence, true),
        persistence,
    );
}

/// ALTER TABLE ... SET TABLESPACE: copies the files block by block, as heap does.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn copy_data(rel: pg_sys::Relation, newlocator: *const Locator) {
    crate::am::write::flush_relation(rel);
    pg_sys::FlushRelationBuffers(rel);
    let persistence = (*(*rel).rd_rel).relpersistence;
    let dst = pg_sys::RelationCreateStorage(*newlocator, persistence, true);
    let src = pg_sys::RelationGetSmgr(rel);
    pg_sys::RelationCopyStorage(src, dst, pg_sys::ForkNumber::MAIN_FORKNUM, persistence);
    if pg_sys::smgrexists(src, pg_sys::ForkNumber::INIT_FORKNUM) {
        pg_sys::smgrcreate(dst, pg_sys::ForkNumber::INIT_FORKNUM, false);
        log_init_fork_created(dst);
        pg_sys::RelationCopyStorage(src, dst, pg_sys::ForkNumber::INIT_FORKNUM, persistence);
    }
    pg_sys::RelationDropStorage(rel);
    pg_sys::smgrclose(dst);
}

#[cfg(not(feature = "pg19"))]
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn index_fetch_begin(
    rel: pg_sys::Relation,
) -> *mut pg_sys::IndexFetchTableData {
    routine::index_fetch_begin(rel)
}
#[cfg(feature = "pg19")]
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn index_fetch_begin(
    rel: pg_sys::Relation,
    flags: u32,
) -> *mut pg_sys::IndexFetchTableData {
    let data = routine::index_fetch_begin(rel);
    (*data).flags = flags;
    data
}

/// `options` of the insert callbacks: `c_int` up to 18, `u32` from 19.
#[cfg(not(feature = "pg19"))]
type InsertOptions = std::ffi::c_int;
#[cfg(feature = "pg19")]
type InsertOptions = u32;

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn tuple_insert(
    rel: pg_sys::Relation,
    slot: *mut pg_sys::TupleTableSlot,
    cid: pg_sys::CommandId,
    _options: InsertOptions,
    _bistate: *mut pg_sys::BulkInsertStateData,
) {
    routine::tuple_insert(rel, slot, cid)
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn tuple_insert_speculative(
    rel: pg_sys::Relation,
    slot: *mut pg_sys::TupleTableSlot,
    cid: pg_sys::CommandId,
    _options: InsertOptions,
    _bistate: *mut pg_sys::BulkInsertStateData,
    _token: u32,
) {
    // inserted as any row; the token is not kept (see `am::modify::complete_speculative`)
    routine::tuple_insert(rel, slot, cid)
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn multi_insert(
    rel: pg_sys::Relation,
    slots: *mut *mut pg_sys::TupleTableSlot,
    nslots: std::ffi::c_int,
    cid: pg_sys::CommandId,
    _options: InsertOptions,
    _bistate: *mut pg_sys::BulkInsertStateData,
) {
    routine::multi_insert(rel, slots, nslots, cid)
}

/// End of a bulk insert (COPY, CREATE TABLE AS, a table rewrite): write the buffered rows
/// now, since a rewrite drops its transient relation before the statement ends. Not for a
/// partition: COPY into a partitioned table ends the bulk insert of a partition whenever it
/// sets aside that partition's batch for others (past 32 partitions at once), which would
/// write a stripe of a few dozen rows each time; the statement's end writes them.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn finish_bulk_insert(rel: pg_sys::Relation, _options: InsertOptions) {
    if !(*(*rel).rd_rel).relispartition {
        crate::am::write::flush_relation(rel)
    }
}

#[cfg(not(feature = "pg19"))]
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn tuple_delete(
    rel: pg_sys::Relation,
    tid: pg_sys::ItemPointer,
    cid: pg_sys::CommandId,
    _snapshot: pg_sys::Snapshot,
    crosscheck: pg_sys::Snapshot,
    wait: bool,
    tmfd: *mut pg_sys::TM_FailureData,
    changing_part: bool,
) -> pg_sys::TM_Result::Type {
    crate::am::modify::delete(rel, tid, cid, crosscheck, wait, tmfd, changing_part)
}
#[cfg(feature = "pg19")]
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn tuple_delete(
    rel: pg_sys::Relation,
    tid: pg_sys::ItemPointer,
    cid: pg_sys::CommandId,
    options: u32,
    _snapshot: pg_sys::Snapshot,
    crosscheck: pg_sys::Snapshot,
    wait: bool,
    tmfd: *mut pg_sys::TM_FailureData,
) -> pg_sys::TM_Result::Type {
    let changing_part = options & pg_sys::TABLE_DELETE_CHANGING_PARTITION != 0;
    crate::am::modify::delete(rel, tid, cid, crosscheck, wait, tmfd, changing_part)
}

/// What `tuple_update` says of the indexes (15: whether to insert into them; from 16: which):
/// the new version is a new row, so every index needs an entry for it.
#[cfg(feature = "pg15")]
type UpdateIndexes = bool;
#[cfg(feature = "pg15")]
const EVERY_INDEX: UpdateIndexes = true;
#[cfg(not(feature = "pg15"))]
type UpdateIndexes = pg_sys::TU_UpdateIndexes::Type;
#[cfg(not(feature = "pg15"))]
const EVERY_INDEX: UpdateIndexes = pg_sys::TU_UpdateIndexes::TU_All;

#[cfg(not(feature = "pg19"))]
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn tuple_update(
    rel: pg_sys::Relation,
    otid: pg_sys::ItemPointer,
    slot: *mut pg_sys::TupleTableSlot,
    cid: pg_sys::CommandId,
    _snapshot: pg_sys::Snapshot,
    crosscheck: pg_sys::Snapshot,
    wait: bool,
    tmfd: *mut pg_sys::TM_FailureData,
    lockmode: *mut pg_sys::LockTupleMode::Type,
    update_indexes: *mut UpdateIndexes,
) -> pg_sys::TM_Result::Type {
    *update_indexes = EVERY_INDEX;
    crate::am::modify::update(rel, otid, slot, cid, crosscheck, wait, tmfd, lockmode)
}
#[cfg(feature = "pg19")]
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn tuple_update(
    rel: pg_sys::Relation,
    otid: pg_sys::ItemPointer,
    slot: *mut pg_sys::TupleTableSlot,
    cid: pg_sys::CommandId,
    _options: u32,
    _snapshot: pg_sys::Snapshot,
    crosscheck: pg_sys::Snapshot,
    wait: bool,
    tmfd: *mut pg_sys::TM_FailureData,
    lockmode: *mut pg_sys::LockTupleMode::Type,
    update_indexes: *mut UpdateIndexes,
) -> pg_sys::TM_Result::Type {
    *update_indexes = EVERY_INDEX;
    crate::am::modify::update(rel, otid, slot, cid, crosscheck, wait, tmfd, lockmode)
}

#[allow(clippy::too_many_arguments)]
unsafe fn copy_for_cluster_common(
    old: pg_sys::Relation,
    new: pg_sys::Relation,
    old_index: pg_sys::Relation,
    use_sort: bool,
    oldest_xmin: pg_sys::TransactionId,
    xid_cutoff: *mut pg_sys::TransactionId,
    multi_cutoff: *mut pg_sys::MultiXactId,
    num_tuples: *mut f64,
    tups_vacuumed: *mut f64,
    tups_recently_dead: *mut f64,
) {
    // (no tuple of the new table holds a transaction id the way heap's do: the stripe and
    // mark catalogs are vacuumed and frozen as the tables they are)
    *xid_cutoff = pg_sys::InvalidTransactionId;
    *multi_cutoff = INVALID_MULTIXACT_ID;
    let counts = crate::am::rewrite::copy_for_cluster(old, new, old_index, use_sort, oldest_xmin);
    *num_tuples = counts.written;
    *tups_vacuumed = counts.removed;
    *tups_recently_dead = counts.recently_dead;
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

#[cfg(not(feature = "pg19"))]
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn copy_for_cluster(
    old: pg_sys::Relation,
    new: pg_sys::Relation,
    old_index: pg_sys::Relation,
    use_sort: bool,
    oldest_xmin: pg_sys::TransactionId,
    xid_cutoff: *mut pg_sys::TransactionId,
    multi_cutoff: *mut pg_sys::MultiXactId,
    num_tuples: *mut f64,
    tups_vacuumed: *mut f64,
    tups_recently_dead: *mut f64,
) {
    copy_for_cluster_common(
        old,
        new,
        old_index,
        use_sort,
        oldest_xmin,
        xid_cutoff,
        multi_cutoff,
        num_tuples,
        tups_vacuumed,
        tups_recently_dead,
    )
}
#[cfg(feature = "pg19")]
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn copy_for_cluster(
    old: pg_sys::Relation,
    new: pg_sys::Relation,
    old_index: pg_sys::Relation,
    use_sort: bool,
    oldest_xmin: pg_sys::TransactionId,
    _snapshot: pg_sys::Snapshot,
    xid_cutoff: *mut pg_sys::TransactionId,
    multi_cutoff: *mut pg_sys::MultiXactId,
    num_tuples: *mut f64,
    tups_vacuumed: *mut f64,
    tups_recently_dead: *mut f64,
) {
    copy_for_cluster_common(
        old,
        new,
        old_index,
        use_sort,
        oldest_xmin,
        xid_cutoff,
        multi_cutoff,
        num_tuples,
        tups_vacuumed,
        tups_recently_dead,
    )
}

#[cfg(not(feature = "pg19"))]
type VacuumParamsPtr = *mut pg_sys::VacuumParams;
#[cfg(feature = "pg19")]
type VacuumParamsPtr = *const pg_sys::VacuumParams;

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn vacuum(
    rel: pg_sys::Relation,
    params: VacuumParamsPtr,
    strategy: pg_sys::BufferAccessStrategy,
) {
    use pg_sys::VacOptValue::VACOPTVALUE_DISABLED;
    let options = super::am::vacuum::Options {
        index_cleanup: (*params).index_cleanup != VACOPTVALUE_DISABLED,
        truncate: (*params).truncate != VACOPTVALUE_DISABLED,
    };
    super::am::vacuum::vacuum(rel, options, strategy)
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

#[cfg(any(feature = "pg15", feature = "pg16"))]
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn analyze_next_block(
    scan: pg_sys::TableScanDesc,
    blockno: pg_sys::BlockNumber,
    _strategy: pg_sys::BufferAccessStrategy,
) -> bool {
    routine::analyze_block(scan, blockno);
    true
}
/// From 17 ANALYZE hands a read stream of the sampled blocks; the block number is all we use.
#[cfg(not(any(feature = "pg15", feature = "pg16")))]
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn analyze_next_block(
    scan: pg_sys::TableScanDesc,
    stream: *mut pg_sys::ReadStream,
) -> bool {
    let buffer = pg_sys::read_stream_next_buffer(stream, std::ptr::null_mut());
    if buffer == pg_sys::InvalidBuffer as pg_sys::Buffer {
        return false;
    }
    let block = pg_sys::BufferGetBlockNumber(buffer);
    pg_sys::ReleaseBuffer(buffer);
    routine::analyze_block(scan, block);
    true
}

#[cfg(not(feature = "pg19"))]
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn analyze_next_tuple(
    scan: pg_sys::TableScanDesc,
    _oldest_xmin: pg_sys::TransactionId,
    liverows: *mut f64,
    deadrows: *mut f64,
    slot: *mut pg_sys::TupleTableSlot,
) -> bool {
    routine::analyze_next_tuple(scan, liverows, deadrows, slot)
}
#[cfg(feature = "pg19")]
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn analyze_next_tuple(
    scan: pg_sys::TableScanDesc,
    liverows: *mut f64,
    deadrows: *mut f64,
    slot: *mut pg_sys::TupleTableSlot,
) -> bool {
    routine::analyze_next_tuple(scan, liverows, deadrows, slot)
}

/// Bitmap heap scans, up to 17: the executor hands each TID-bitmap block, then asks for its
/// rows.
#[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn bitmap_next_block(
    scan: pg_sys::TableScanDesc,
    tbmres: *mut pg_sys::TBMIterateResult,
) -> bool {
    let st = crate::am::scan::state(scan);
    if (*tbmres).ntuples >= 0 {
        let offsets = (*tbmres).offsets.as_slice((*tbmres).ntuples as usize);
        st.bitmap_block((*tbmres).blockno, Some(offsets), (*scan).rs_snapshot)
    } else {
        (*tbmres).recheck = true;
        st.bitmap_block((*tbmres).blockno, None, (*scan).rs_snapshot)
    }
}
#[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn bitmap_next_tuple(
    scan: pg_sys::TableScanDesc,
    _tbmres: *mut pg_sys::TBMIterateResult,
    slot: *mut pg_sys::TupleTableSlot,
) -> bool {
    crate::am::scan::state(scan).bitmap_next(slot)
}
/// Bitmap heap scans, from 18: the access method walks the TID bitmap's iterator itself.
#[cfg(any(feature = "pg18", feature = "pg19"))]
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn bitmap_next_tuple(
    scan: pg_sys::TableScanDesc,
    slot: *mut pg_sys::TupleTableSlot,
    recheck: *mut bool,
    lossy_pages: *mut u64,
    exact_pages: *mut u64,
) -> bool {
    let st = crate::am::scan::state(scan);
    loop {
        if st.bitmap_next(slot) {
            return true;
        }
        let mut tbmres: pg_sys::TBMIterateResult = std::mem::zeroed();
        if !pg_sys::tbm_iterate(&mut (*scan).st.rs_tbmiterator, &mut tbmres) {
            pg_sys::ExecClearTuple(slot);
            return false;
        }
        if tbmres.lossy {
            *lossy_pages += 1;
            *recheck = true;
            st.bitmap_block(tbmres.blockno, None, (*scan).rs_snapshot);
        } else {
            *exact_pages += 1;
            *recheck = tbmres.recheck;
            let mut offsets = [0 as pg_sys::OffsetNumber; crate::am::tid::ROWS_PER_BLOCK as usize];
            let n = pg_sys::tbm_extract_page_tuple(
                &mut tbmres,
                offsets.as_mut_ptr(),
                offsets.len() as u32,
            );
            st.bitmap_block(
                tbmres.blockno,
                Some(&offsets[..n.max(0) as usize]),
                (*scan).rs_snapshot,
            );
        }
    }
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

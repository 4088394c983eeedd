//! The access method's callbacks whose signatures differ between the PostgreSQL majors (15
//! to 19), installed into the callback table `routine` builds: each is one `cfg` choice
//! forwarding to version-independent code. Differences that call nothing of the crate are
//! `crate::compat`'s.

use pgrx::pg_sys;

use super::publication::{self, Change};
use super::{fetch, life, scan, write};
use crate::compat::{locator_number, Locator, INVALID_MULTIXACT_ID};

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

/// The `relation_set_new_filelocator` callback (`relation_set_new_filenode` in 15).
///
/// # Safety
///
/// Only PostgreSQL calls it, as that callback of the routine, with its arguments.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn set_new_file(
    rel: pg_sys::Relation,
    newlocator: *const Locator,
    persistence: std::ffi::c_char,
    freeze_xid: *mut pg_sys::TransactionId,
    minmulti: *mut pg_sys::MultiXactId,
) {
    // no transaction ids are stored in the table: nothing to freeze, ever
    // SAFETY: PostgreSQL's arguments (this function's contract): the outputs valid to write,
    // `newlocator` valid, `rel` open and locked exclusively, as `life::new_storage` wants;
    // the closure makes the new file's storage, whose SMgrRelation it returns
    unsafe {
        *freeze_xid = pg_sys::InvalidTransactionId;
        *minmulti = INVALID_MULTIXACT_ID;
        life::new_storage(
            rel,
            locator_number(&*newlocator),
            || pg_sys::RelationCreateStorage(*newlocator, persistence, true),
            persistence,
        );
    }
}

/// ALTER TABLE ... SET TABLESPACE: copies the files block by block, as heap does.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `relation_copy_data`, with that callback's
/// arguments.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn copy_data(rel: pg_sys::Relation, newlocator: *const Locator) {
    super::write::flush_relation(rel);
    // SAFETY: PostgreSQL's arguments (this function's contract): `rel` open and locked
    // exclusively, `newlocator` its new file's; the new storage is closed here once, the old
    // one dropped at commit, as heap's copy does
    unsafe {
        pg_sys::FlushRelationBuffers(rel);
        let persistence = (*(*rel).rd_rel).relpersistence;
        let dst = pg_sys::RelationCreateStorage(*newlocator, persistence, true);
        let src = pg_sys::RelationGetSmgr(rel);
        pg_sys::RelationCopyStorage(src, dst, pg_sys::ForkNumber::MAIN_FORKNUM, persistence);
        if pg_sys::smgrexists(src, pg_sys::ForkNumber::INIT_FORKNUM) {
            pg_sys::smgrcreate(dst, pg_sys::ForkNumber::INIT_FORKNUM, false);
            crate::compat::log_init_fork_created(dst);
            pg_sys::RelationCopyStorage(src, dst, pg_sys::ForkNumber::INIT_FORKNUM, persistence);
        }
        pg_sys::RelationDropStorage(rel);
        pg_sys::smgrclose(dst);
    }
}

/// The `index_fetch_begin` callback.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `index_fetch_begin`, with that callback's
/// arguments.
#[cfg(not(feature = "pg19"))]
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn index_fetch_begin(
    rel: pg_sys::Relation,
) -> *mut pg_sys::IndexFetchTableData {
    // SAFETY: PostgreSQL's arguments of `index_fetch_begin` (this function's contract), as
    // `fetch::begin` takes them
    unsafe { fetch::begin(rel) }
}
/// The `index_fetch_begin` callback.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `index_fetch_begin`, with that callback's
/// arguments.
#[cfg(feature = "pg19")]
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn index_fetch_begin(
    rel: pg_sys::Relation,
    flags: u32,
) -> *mut pg_sys::IndexFetchTableData {
    // SAFETY: `rel` is PostgreSQL's open relation (this function's contract); `data` is the
    // fetch state `fetch::begin` just made
    unsafe {
        let data = fetch::begin(rel);
        (*data).flags = flags;
        data
    }
}

/// `options` of the insert callbacks: `c_int` up to 18, `u32` from 19.
#[cfg(not(feature = "pg19"))]
type InsertOptions = std::ffi::c_int;
#[cfg(feature = "pg19")]
type InsertOptions = u32;

/// Whether an insert with `options` is logged for logical decoding (not if the caller says
/// `TABLE_INSERT_NO_LOGICAL`, as heap's).
fn logged_insert(options: InsertOptions) -> bool {
    options as u32 & pg_sys::TABLE_INSERT_NO_LOGICAL == 0
}

/// The `tuple_insert` callback.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `tuple_insert`, with that callback's
/// arguments.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn tuple_insert(
    rel: pg_sys::Relation,
    slot: *mut pg_sys::TupleTableSlot,
    cid: pg_sys::CommandId,
    options: InsertOptions,
    _bistate: *mut pg_sys::BulkInsertStateData,
) {
    // SAFETY: PostgreSQL's arguments of `tuple_insert` (this function's contract), as
    // `insert_one` takes them
    unsafe { insert_one(rel, slot, cid, logged_insert(options)) }
}

/// The `tuple_insert_speculative` callback.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `tuple_insert_speculative`, with that
/// callback's arguments.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn tuple_insert_speculative(
    rel: pg_sys::Relation,
    slot: *mut pg_sys::TupleTableSlot,
    cid: pg_sys::CommandId,
    _options: InsertOptions,
    _bistate: *mut pg_sys::BulkInsertStateData,
    _token: u32,
) {
    // inserted as any row; the token is not kept, and the row is logged for decoding once it
    // is kept (see `am::modify::complete_speculative`)
    // SAFETY: PostgreSQL's arguments of `tuple_insert_speculative` (this function's
    // contract), as `insert_one` takes them
    unsafe { insert_one(rel, slot, cid, false) }
}

/// The `multi_insert` callback.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `multi_insert`, with that callback's
/// arguments.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn multi_insert(
    rel: pg_sys::Relation,
    slots: *mut *mut pg_sys::TupleTableSlot,
    nslots: std::ffi::c_int,
    cid: pg_sys::CommandId,
    options: InsertOptions,
    _bistate: *mut pg_sys::BulkInsertStateData,
) {
    // SAFETY: PostgreSQL's arguments of `multi_insert` (this function's contract), as
    // `insert_many` takes them
    unsafe { insert_many(rel, slots, nslots, cid, logged_insert(options)) }
}

/// End of a bulk insert (COPY, CREATE TABLE AS, a table rewrite): write the buffered rows
/// now, since a rewrite drops its transient relation before the statement ends. Not for a
/// partition: COPY into a partitioned table ends the bulk insert of a partition whenever it
/// sets aside that partition's batch for others (past 32 partitions at once), which would
/// write a stripe of a few dozen rows each time; the statement's end writes them.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `finish_bulk_insert`, with that callback's
/// arguments.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn finish_bulk_insert(rel: pg_sys::Relation, _options: InsertOptions) {
    // SAFETY: `rel` is PostgreSQL's open relation (this function's contract)
    if !unsafe { (*(*rel).rd_rel).relispartition } {
        super::write::flush_relation(rel)
    }
}

/// The `tuple_delete` callback.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `tuple_delete`, with that callback's
/// arguments.
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
    // SAFETY: PostgreSQL's arguments of `tuple_delete` (this function's contract), as
    // `super::modify::delete` takes them
    unsafe { super::modify::delete(rel, tid, cid, crosscheck, wait, tmfd, changing_part, true) }
}
/// The `tuple_delete` callback.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `tuple_delete`, with that callback's
/// arguments.
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
    let logged = options & pg_sys::TABLE_DELETE_NO_LOGICAL == 0;
    // SAFETY: PostgreSQL's arguments of `tuple_delete` (this function's contract), as
    // `modify::delete` takes them
    unsafe { super::modify::delete(rel, tid, cid, crosscheck, wait, tmfd, changing_part, logged) }
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

/// The `tuple_update` callback.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `tuple_update`, with that callback's
/// arguments.
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
    // SAFETY: PostgreSQL's arguments of `tuple_update` (this function's contract): the
    // outputs valid to write, the rest as `modify::update` takes them
    unsafe {
        *update_indexes = EVERY_INDEX;
        super::modify::update(rel, otid, slot, cid, crosscheck, wait, tmfd, lockmode, true)
    }
}
/// The `tuple_update` callback.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `tuple_update`, with that callback's
/// arguments.
#[cfg(feature = "pg19")]
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn tuple_update(
    rel: pg_sys::Relation,
    otid: pg_sys::ItemPointer,
    slot: *mut pg_sys::TupleTableSlot,
    cid: pg_sys::CommandId,
    options: u32,
    _snapshot: pg_sys::Snapshot,
    crosscheck: pg_sys::Snapshot,
    wait: bool,
    tmfd: *mut pg_sys::TM_FailureData,
    lockmode: *mut pg_sys::LockTupleMode::Type,
    update_indexes: *mut UpdateIndexes,
) -> pg_sys::TM_Result::Type {
    // SAFETY: PostgreSQL's arguments of `tuple_update` (this function's contract): the
    // outputs valid to write, the rest as `modify::update` takes them
    unsafe {
        *update_indexes = EVERY_INDEX;
        super::modify::update(
            rel,
            otid,
            slot,
            cid,
            crosscheck,
            wait,
            tmfd,
            lockmode,
            options & pg_sys::TABLE_UPDATE_NO_LOGICAL == 0,
        )
    }
}

/// `relation_copy_for_cluster`, the same in every major but for its arguments.
///
/// # Safety
///
/// PostgreSQL's arguments of `relation_copy_for_cluster`: `old` and `new` open pg_columnar
/// relations of one row type, locked exclusively, `old_index` null or an index of `old`, the
/// outputs valid to write.
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
    // SAFETY: the outputs are valid to write and the relations as `rewrite::copy_for_cluster`
    // wants them (this function's contract)
    unsafe {
        *xid_cutoff = pg_sys::InvalidTransactionId;
        *multi_cutoff = INVALID_MULTIXACT_ID;
        let counts = super::rewrite::copy_for_cluster(old, new, old_index, use_sort, oldest_xmin);
        *num_tuples = counts.written;
        *tups_vacuumed = counts.removed;
        *tups_recently_dead = counts.recently_dead;
    }
}

/// The `relation_copy_for_cluster` callback.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `relation_copy_for_cluster`, with that
/// callback's arguments.
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
    // SAFETY: PostgreSQL's arguments of `relation_copy_for_cluster` (this function's
    // contract), as `copy_for_cluster_common` takes them
    unsafe {
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
}
/// The `relation_copy_for_cluster` callback.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `relation_copy_for_cluster`, with that
/// callback's arguments.
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
    // SAFETY: PostgreSQL's arguments of `relation_copy_for_cluster` (this function's
    // contract), as `copy_for_cluster_common` takes them
    unsafe {
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
}

#[cfg(not(feature = "pg19"))]
type VacuumParamsPtr = *mut pg_sys::VacuumParams;
#[cfg(feature = "pg19")]
type VacuumParamsPtr = *const pg_sys::VacuumParams;

/// The `relation_vacuum` callback.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `relation_vacuum`, with that callback's
/// arguments.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn vacuum(
    rel: pg_sys::Relation,
    params: VacuumParamsPtr,
    strategy: pg_sys::BufferAccessStrategy,
) {
    use pg_sys::VacOptValue::VACOPTVALUE_DISABLED;
    // SAFETY: `params` is VACUUM's, valid for the call (this function's contract)
    let options = unsafe {
        super::vacuum::Options {
            index_cleanup: (*params).index_cleanup != VACOPTVALUE_DISABLED,
            truncate: (*params).truncate != VACOPTVALUE_DISABLED,
        }
    };
    // SAFETY: PostgreSQL's arguments of `relation_vacuum` (this function's contract), as
    // `vacuum::vacuum` takes them
    unsafe { super::vacuum::vacuum(rel, options, strategy) }
}

/// The `scan_analyze_next_block` callback.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `scan_analyze_next_block`, with that
/// callback's arguments.
#[cfg(any(feature = "pg15", feature = "pg16"))]
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn analyze_next_block(
    scan: pg_sys::TableScanDesc,
    blockno: pg_sys::BlockNumber,
    _strategy: pg_sys::BufferAccessStrategy,
) -> bool {
    // SAFETY: `scan` is ANALYZE's scan of this access method (this function's contract)
    unsafe { analyze_block(scan, blockno) };
    true
}
/// From 17 ANALYZE hands a read stream of the sampled blocks; the block number is all we use.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `scan_analyze_next_block`, with that
/// callback's arguments.
#[cfg(not(any(feature = "pg15", feature = "pg16")))]
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn analyze_next_block(
    scan: pg_sys::TableScanDesc,
    stream: *mut pg_sys::ReadStream,
) -> bool {
    // SAFETY: `stream` is ANALYZE's read stream (this function's contract); the buffer it
    // gives is pinned, and released here once, after its block number is read
    let block = unsafe {
        let buffer = pg_sys::read_stream_next_buffer(stream, std::ptr::null_mut());
        if buffer == pg_sys::InvalidBuffer as pg_sys::Buffer {
            return false;
        }
        let block = pg_sys::BufferGetBlockNumber(buffer);
        pg_sys::ReleaseBuffer(buffer);
        block
    };
    // SAFETY: `scan` is ANALYZE's scan of this access method (this function's contract)
    unsafe { analyze_block(scan, block) };
    true
}

/// The `scan_analyze_next_tuple` callback.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `scan_analyze_next_tuple`, with that
/// callback's arguments.
#[cfg(not(feature = "pg19"))]
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn analyze_next_tuple(
    scan: pg_sys::TableScanDesc,
    _oldest_xmin: pg_sys::TransactionId,
    liverows: *mut f64,
    deadrows: *mut f64,
    slot: *mut pg_sys::TupleTableSlot,
) -> bool {
    // SAFETY: PostgreSQL's arguments of `scan_analyze_next_tuple` (this function's
    // contract), as `analyze_next_row` takes them
    unsafe { analyze_next_row(scan, liverows, deadrows, slot) }
}
/// The `scan_analyze_next_tuple` callback.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `scan_analyze_next_tuple`, with that
/// callback's arguments.
#[cfg(feature = "pg19")]
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn analyze_next_tuple(
    scan: pg_sys::TableScanDesc,
    liverows: *mut f64,
    deadrows: *mut f64,
    slot: *mut pg_sys::TupleTableSlot,
) -> bool {
    // SAFETY: PostgreSQL's arguments of `scan_analyze_next_tuple` (this function's
    // contract), as `analyze_next_row` takes them
    unsafe { analyze_next_row(scan, liverows, deadrows, slot) }
}

/// Bitmap heap scans, up to 17: the executor hands each TID-bitmap block, then asks for its
/// rows.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `scan_bitmap_next_block`, with that
/// callback's arguments.
#[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn bitmap_next_block(
    scan: pg_sys::TableScanDesc,
    tbmres: *mut pg_sys::TBMIterateResult,
) -> bool {
    // SAFETY: PostgreSQL's arguments (this function's contract): `scan` a scan of this access
    // method, `tbmres` the bitmap's page, whose `offsets` hold `ntuples` entries when exact
    unsafe {
        let st = super::scan::state(scan).bitmap();
        if (*tbmres).ntuples >= 0 {
            let offsets = (*tbmres).offsets.as_slice((*tbmres).ntuples as usize);
            st.block((*tbmres).blockno, Some(offsets), (*scan).rs_snapshot)
        } else {
            (*tbmres).recheck = true;
            st.block((*tbmres).blockno, None, (*scan).rs_snapshot)
        }
    }
}
/// The `scan_bitmap_next_tuple` callback.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `scan_bitmap_next_tuple`, with that
/// callback's arguments.
#[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn bitmap_next_tuple(
    scan: pg_sys::TableScanDesc,
    _tbmres: *mut pg_sys::TBMIterateResult,
    slot: *mut pg_sys::TupleTableSlot,
) -> bool {
    // SAFETY: PostgreSQL's arguments of `scan_bitmap_next_tuple` (this function's
    // contract), as `super::scan::state` takes them
    unsafe { super::scan::state(scan).bitmap().next(slot) }
}
/// Bitmap heap scans, from 18: the access method walks the TID bitmap's iterator itself.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the routine's `scan_bitmap_next_tuple`, with that
/// callback's arguments.
#[cfg(any(feature = "pg18", feature = "pg19"))]
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn bitmap_next_tuple(
    scan: pg_sys::TableScanDesc,
    slot: *mut pg_sys::TupleTableSlot,
    recheck: *mut bool,
    lossy_pages: *mut u64,
    exact_pages: *mut u64,
) -> bool {
    // SAFETY: PostgreSQL's arguments (this function's contract): `scan` a bitmap scan of this
    // access method with its TID bitmap iterator, `slot` a slot of its relation, the three
    // outputs valid to write; `tbmres` is plain data the iterator fills, and the page's
    // offsets are extracted into an array of `ROWS_PER_BLOCK` entries, its length given
    unsafe {
        let st = super::scan::state(scan).bitmap();
        loop {
            if st.next(slot) {
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
                st.block(tbmres.blockno, None, (*scan).rs_snapshot);
            } else {
                *exact_pages += 1;
                *recheck = tbmres.recheck;
                let mut offsets =
                    [0 as pg_sys::OffsetNumber; crate::storage::tid::ROWS_PER_BLOCK as usize];
                let n = pg_sys::tbm_extract_page_tuple(
                    &mut tbmres,
                    offsets.as_mut_ptr(),
                    offsets.len() as u32,
                );
                st.block(
                    tbmres.blockno,
                    Some(&offsets[..n.max(0) as usize]),
                    (*scan).rs_snapshot,
                );
            }
        }
    }
}

/// Inserts count in the table's statistics as heap's do (autovacuum visits a table after
/// enough of them, and VACUUM merges small stripes: `am::vacuum`). `log`: the row is logged
/// for logical decoding now (a speculative insert's is logged once it is kept).
///
/// # Safety
///
/// As `tuple_insert` is called: `rel` an open pg_columnar relation locked for writing, `slot`
/// a slot of its descriptor holding the row.
unsafe fn insert_one(
    rel: pg_sys::Relation,
    slot: *mut pg_sys::TupleTableSlot,
    cid: pg_sys::CommandId,
    log: bool,
) {
    publication::check_write(rel, Change::Insert);
    write::insert(rel, &[slot], cid);
    if log {
        // SAFETY: `rel` and `slot` are as this function's contract says
        unsafe { super::logical::log_inserts(rel, &[slot]) };
    }
    // SAFETY: `rel` is open (this function's contract)
    unsafe { pg_sys::pgstat_count_heap_insert(rel, 1) };
}

/// [`insert_one`] for the `nslots` rows of `slots`; `log`: the rows are logged for logical
/// decoding.
///
/// # Safety
///
/// As `multi_insert` is called: `rel` an open pg_columnar relation locked for writing,
/// `slots` an array of `nslots` slots of its descriptor, each holding a row.
unsafe fn insert_many(
    rel: pg_sys::Relation,
    slots: *mut *mut pg_sys::TupleTableSlot,
    nslots: i32,
    cid: pg_sys::CommandId,
    log: bool,
) {
    publication::check_write(rel, Change::Insert);
    // SAFETY: `slots` holds `nslots` slots (this function's contract)
    let slots = unsafe { std::slice::from_raw_parts(slots, nslots.max(0) as usize) };
    write::insert(rel, slots, cid);
    if log {
        // SAFETY: `rel` and `slots` are as this function's contract says
        unsafe { super::logical::log_inserts(rel, slots) };
    }
    // SAFETY: `rel` is open (this function's contract)
    unsafe { pg_sys::pgstat_count_heap_insert(rel, nslots.max(0) as i64) };
}

/// The next row of ANALYZE's sample, counting it live or dead.
///
/// # Safety
///
/// As `scan_analyze_next_tuple` is called: `s` ANALYZE's scan of this access method, the
/// counts valid to write, `slot` a slot of the relation.
unsafe fn analyze_next_row(
    s: pg_sys::TableScanDesc,
    liverows: *mut f64,
    deadrows: *mut f64,
    slot: *mut pg_sys::TupleTableSlot,
) -> bool {
    // SAFETY: `s` is a scan of this access method and the counts are valid to write (this
    // function's contract)
    unsafe {
        if scan::state(s).analyze().next(slot, &mut *deadrows) {
            *liverows += 1.0;
            true
        } else {
            false
        }
    }
}

/// Starts ANALYZE's sample of `block`.
///
/// # Safety
///
/// `s` is ANALYZE's scan of this access method, of an open relation.
unsafe fn analyze_block(s: pg_sys::TableScanDesc, block: pg_sys::BlockNumber) {
    // SAFETY: `s` is a scan of this access method, of an open relation (this function's
    // contract)
    unsafe {
        let nblocks =
            pg_sys::RelationGetNumberOfBlocksInFork((*s).rs_rd, pg_sys::ForkNumber::MAIN_FORKNUM);
        scan::state(s).analyze().set_block(block, nblocks);
    }
}

//! The PostgreSQL hooks the extension installs at load time, each chaining to the previous
//! one:
//!
//! * executor end and utility end: buffered rows are written at the end of the statement that
//!   inserted them (see `am::write`);
//! * utility start: commands a pg_columnar table refuses are refused before they create
//!   anything (see `am::ddl`); our table options are taken out of the statement and stored
//!   around it (see `am::options`);
//! * object access: a dropped pg_columnar table's catalog rows are deleted with it;
//! * once the planner knows a base relation's size (`install_relation_info_hook`):
//!   the number of parallel workers for a pg_columnar table follows its stripes, not its
//!   (compressed, hence small) size in pages.
//!
//! The extension script installs an event trigger at `ddl_command_start` whose only job is to
//! load this library, so that the object-access hook is in place when a backend that has not
//! touched a pg_columnar table yet drops one.

use pgrx::pg_sys;

use crate::am::{life, options, write};

static mut PREV_EXECUTOR_END: pg_sys::ExecutorEnd_hook_type = None;
static mut PREV_PROCESS_UTILITY: pg_sys::ProcessUtility_hook_type = None;
static mut PREV_OBJECT_ACCESS: pg_sys::object_access_hook_type = None;

/// Installs the hooks and the transaction callbacks (from `_PG_init`).
///
/// # Safety
///
/// Called once per backend, from `_PG_init`, in the backend's one thread, before any of the
/// hooks can run.
pub unsafe fn install() {
    // SAFETY: `_PG_init` runs once, in the backend's one thread (the contract): the hook
    // variables are not read meanwhile, and what is installed are fns of static lifetime.
    unsafe {
        PREV_EXECUTOR_END = pg_sys::ExecutorEnd_hook;
        pg_sys::ExecutorEnd_hook = Some(executor_end);
        PREV_PROCESS_UTILITY = pg_sys::ProcessUtility_hook;
        pg_sys::ProcessUtility_hook = Some(process_utility);
        PREV_OBJECT_ACCESS = pg_sys::object_access_hook;
        pg_sys::object_access_hook = Some(object_access);
        install_relation_info_hook();
        install_executor_start_hook();
    }
    crate::am::slot::set_deferred_reader(crate::am::fetch::read_deferred);
    // SAFETY: registering callbacks of static lifetime, once per backend (the contract).
    unsafe {
        pg_sys::RegisterXactCallback(Some(crate::am::xact::xact_callback), std::ptr::null_mut());
        pg_sys::RegisterSubXactCallback(
            Some(crate::am::xact::subxact_callback),
            std::ptr::null_mut(),
        );
    }
}

/// A query that can insert (anything but a plain SELECT; a SELECT's functions insert through
/// queries of their own) writes, when it ends, the rows it buffered: those of its command and
/// later ones at its transaction level or deeper. The estate goes away in ExecutorEnd, so its
/// output command is read first.
///
/// # Safety
///
/// Called by PostgreSQL only, as `ExecutorEnd_hook`, with a valid query descriptor.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn executor_end(query: *mut pg_sys::QueryDesc) {
    // SAFETY: PostgreSQL passes a valid `QueryDesc` with its planned statement (the contract).
    let plain_select = unsafe {
        (*query).operation == pg_sys::CmdType::CMD_SELECT
            && !(*(*query).plannedstmt).hasModifyingCTE
    };
    // SAFETY: `query` is valid (the contract); its estate is read only if it has one.
    let output_cid = unsafe {
        if (*query).estate.is_null() {
            0
        } else {
            (*(*query).estate).es_output_cid
        }
    };
    // SAFETY: `PREV_EXECUTOR_END` is written only in `install` (from `_PG_init`) and read in the
    // backend's one thread; the next hook gets `query` as PostgreSQL gave it.
    unsafe {
        match PREV_EXECUTOR_END {
            Some(prev) => prev(query),
            None => pg_sys::standard_ExecutorEnd(query),
        }
    }
    if !plain_select && write::any_pending() {
        write::flush_statement(output_cid);
    }
}

/// # Safety
///
/// Called by PostgreSQL only, as `ProcessUtility_hook`, with its arguments valid.
#[pgrx::pg_guard]
#[allow(clippy::too_many_arguments)]
unsafe extern "C-unwind" fn process_utility(
    pstmt: *mut pg_sys::PlannedStmt,
    query: *const std::ffi::c_char,
    read_only_tree: bool,
    context: pg_sys::ProcessUtilityContext::Type,
    params: pg_sys::ParamListInfo,
    env: *mut pg_sys::QueryEnvironment,
    dest: *mut pg_sys::DestReceiver,
    qc: *mut pg_sys::QueryCompletion,
) {
    // SAFETY: PostgreSQL passes a valid planned utility statement (the contract).
    unsafe { crate::am::ddl::check_utility(pstmt) };
    // SAFETY: reads of this backend's transaction state.
    let first_cid = unsafe {
        if pg_sys::IsTransactionState() {
            pg_sys::GetCurrentCommandId(false)
        } else {
            0
        }
    };
    // our table options, which PostgreSQL would refuse, are taken out of the statement
    // SAFETY: `pstmt` is valid (the contract), and `before` runs only inside a transaction.
    let (options, run) = unsafe {
        if pg_sys::IsTransactionState() {
            options::before(pstmt, read_only_tree)
        } else {
            (None, pstmt)
        }
    };
    // (a copy is the hook's own to run)
    let read_only_tree = read_only_tree && run == pstmt;
    let pstmt = run;
    {
        let _active = options::HookActive::enter();
        // SAFETY: `PREV_PROCESS_UTILITY` is written only from `_PG_init`, read in the backend's
        // one thread; the next hook gets PostgreSQL's arguments (`pstmt`: `before`'s to run).
        unsafe {
            match PREV_PROCESS_UTILITY {
                Some(prev) => prev(pstmt, query, read_only_tree, context, params, env, dest, qc),
                None => pg_sys::standard_ProcessUtility(
                    pstmt,
                    query,
                    read_only_tree,
                    context,
                    params,
                    env,
                    dest,
                    qc,
                ),
            }
        }
    }
    if let Some(p) = options {
        // SAFETY: `p` is what `before` prepared for the statement just run.
        unsafe { options::after(p) };
    }
    // COPY FROM and other utility commands insert without an executor end; a transaction
    // that just ended (COMMIT) has nothing buffered any more
    // SAFETY: a read of this backend's transaction state.
    if write::any_pending() && unsafe { pg_sys::IsTransactionState() } {
        write::flush_statement(first_cid);
    }
}

/// # Safety
///
/// Called by PostgreSQL only, as `object_access_hook`, inside a transaction.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn object_access(
    access: pg_sys::ObjectAccessType::Type,
    class_id: pg_sys::Oid,
    object_id: pg_sys::Oid,
    sub_id: std::ffi::c_int,
    arg: *mut std::ffi::c_void,
) {
    // SAFETY: `PREV_OBJECT_ACCESS` is written only in `install` (from `_PG_init`) and read in
    // the backend's one thread; the next hook gets PostgreSQL's own arguments.
    unsafe {
        if let Some(prev) = PREV_OBJECT_ACCESS {
            prev(access, class_id, object_id, sub_id, arg);
        }
    }
    if access == pg_sys::ObjectAccessType::OAT_DROP
        && class_id == pg_sys::RelationRelationId
        && sub_id == 0
    {
        // SAFETY: PostgreSQL is dropping relation `object_id`, inside a transaction.
        unsafe { life::on_drop(object_id) };
    }
}

/// PostgreSQL picks parallel workers from a table's size in pages (one from 8 MB, then one
/// more each time it triples). A pg_columnar table is some 25 times smaller than the same rows
/// in heap while decoding them costs about what reading heap does, so by pages it would get
/// none where heap gets two. Parallel scans share out whole stripes, so instead: one worker per
/// stripe beyond the first (the planner still caps it by max_parallel_workers_per_gather and
/// compares the parallel plan's cost with the serial one). A `parallel_workers` storage
/// parameter set on the table is left as it is.
///
/// `inherited`: the relation stands for itself and its inheritance children, and the planner
/// has not estimated its size. The one such relation whose workers are read is the one
/// `plan_create_index_workers` builds for CREATE INDEX; there a number set here is taken as
/// is, past the `maintenance_work_mem` cap PostgreSQL applies to the number it computes
/// itself, so the same cap (32 MB per process) is applied here.
///
/// # Safety
///
/// `rel` must be the planner's valid `RelOptInfo` of relation `relid`, while planning in a
/// transaction.
pub unsafe fn plan_parallel_workers(
    relid: pg_sys::Oid,
    rel: *mut pg_sys::RelOptInfo,
    inherited: bool,
) {
    // SAFETY: `rel` is valid (the contract).
    if unsafe { (*rel).rel_parallel_workers } != -1 {
        return;
    }
    // SAFETY: in a transaction (the contract); a relation opened is closed at the end.
    let relation = unsafe { pg_sys::RelationIdGetRelation(relid) };
    if relation.is_null() {
        return;
    }
    if crate::am::relation::is_columnar(relation) {
        let tuples = if inherited {
            // SAFETY: `relation` is open (above), in a transaction.
            unsafe { life::estimate_size(relation) }.1
        } else {
            // SAFETY: `rel` is valid (the contract).
            unsafe { (*rel).tuples }
        };
        let stripe_rows = crate::am::write::stripe_row_limit() as f64;
        let stripes = (tuples / stripe_rows).ceil();
        let mut workers = (stripes - 1.0).clamp(0.0, 64.0) as i32;
        if inherited {
            // SAFETY: `maintenance_work_mem` is a setting, a global read in the backend's thread.
            while workers > 0 && unsafe { pg_sys::maintenance_work_mem } / (workers + 1) < 32768 {
                workers -= 1;
            }
        }
        // SAFETY: `rel` is valid and the planner's to change here (the contract).
        unsafe { (*rel).rel_parallel_workers = workers };
    }
    // SAFETY: `relation` was opened above and is closed once.
    unsafe { pg_sys::RelationClose(relation) };
}

/// Installs the planner hook that sees a base relation's RelOptInfo once its size is known:
/// `get_relation_info_hook` up to 18, `build_simple_rel_hook` from 19 (which replaced it).
///
/// # Safety
///
/// Called only from [`install`] (once, from `_PG_init`).
unsafe fn install_relation_info_hook() {
    #[cfg(not(feature = "pg19"))]
    // SAFETY: `_PG_init` runs once, in the backend's one thread (via `install`).
    unsafe {
        PREV_RELATION_INFO = pg_sys::get_relation_info_hook;
        pg_sys::get_relation_info_hook = Some(relation_info);
    }
    #[cfg(feature = "pg19")]
    // SAFETY: `_PG_init` runs once, in the backend's one thread (via `install`).
    unsafe {
        PREV_RELATION_INFO = pg_sys::build_simple_rel_hook;
        pg_sys::build_simple_rel_hook = Some(relation_info);
    }
}

#[cfg(not(feature = "pg19"))]
static mut PREV_RELATION_INFO: pg_sys::get_relation_info_hook_type = None;
#[cfg(feature = "pg19")]
static mut PREV_RELATION_INFO: pg_sys::build_simple_rel_hook_type = None;

/// # Safety
///
/// Called by PostgreSQL only, as `get_relation_info_hook`, with valid planner structures.
#[cfg(not(feature = "pg19"))]
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn relation_info(
    root: *mut pg_sys::PlannerInfo,
    relid: pg_sys::Oid,
    inhparent: bool,
    rel: *mut pg_sys::RelOptInfo,
) {
    // SAFETY: `PREV_RELATION_INFO` is written only from `_PG_init` and read in the backend's
    // one thread; PostgreSQL's `rel` of `relid` is valid while planning (the contract).
    unsafe {
        if let Some(prev) = PREV_RELATION_INFO {
            prev(root, relid, inhparent, rel);
        }
        plan_parallel_workers(relid, rel, inhparent);
    }
}
/// # Safety
///
/// Called by PostgreSQL only, as `build_simple_rel_hook`, with valid planner structures.
#[cfg(feature = "pg19")]
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn relation_info(
    root: *mut pg_sys::PlannerInfo,
    rel: *mut pg_sys::RelOptInfo,
    rte: *mut pg_sys::RangeTblEntry,
) {
    // SAFETY: `PREV_RELATION_INFO` is written only from `_PG_init` and read in the backend's
    // one thread; PostgreSQL's `rel` and `rte` are valid while planning (the contract).
    unsafe {
        if let Some(prev) = PREV_RELATION_INFO {
            prev(root, rel, rte);
        }
        if (*rte).rtekind == pg_sys::RTEKind::RTE_RELATION {
            plan_parallel_workers((*rte).relid, rel, (*rte).inh);
        }
    }
}

/// Installs, up to 17, an executor-start hook that turns off bitmap heap scans' prefetching
/// for pg_columnar tables. Up to 17 the executor prefetches the TID bitmap's block numbers
/// itself, through the buffer manager, as if they were the table's pages; ours are virtual
/// (`am::tid`) and lie past the file's end, which is harmless within its first 1 GB segment
/// and an ERROR beyond it (from about 38 million rows: "could not open file ..."). From 18
/// the access method walks the bitmap itself and nothing is prefetched.
///
/// # Safety
///
/// Called only from [`install`] (once, from `_PG_init`).
unsafe fn install_executor_start_hook() {
    #[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
    // SAFETY: `_PG_init` runs once, in the backend's one thread (via `install`).
    unsafe {
        PREV_EXECUTOR_START = pg_sys::ExecutorStart_hook;
        pg_sys::ExecutorStart_hook = Some(executor_start);
    }
}

#[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
static mut PREV_EXECUTOR_START: pg_sys::ExecutorStart_hook_type = None;

/// # Safety
///
/// Called by PostgreSQL only, as `ExecutorStart_hook`, with a valid query descriptor.
#[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn executor_start(query: *mut pg_sys::QueryDesc, eflags: std::ffi::c_int) {
    // SAFETY: `PREV_EXECUTOR_START` is written only from `_PG_init` and read in the backend's
    // one thread; `query` is valid (the contract), and its plan state tree, once made, too.
    unsafe {
        match PREV_EXECUTOR_START {
            Some(prev) => prev(query, eflags),
            None => pg_sys::standard_ExecutorStart(query, eflags),
        }
        if !(*query).planstate.is_null() {
            no_bitmap_prefetch((*query).planstate, std::ptr::null_mut());
        }
    }
}

/// Sets `prefetch_maximum` to 0 in every bitmap heap scan of a pg_columnar table in the tree
/// (subplans included). The prefetch iterator is made at the scan's first row, after this.
///
/// Not `#[pg_guard]`: it is called from Rust (`executor_start`) as well as by
/// `planstate_tree_walker`, and a guard's ERROR would `longjmp` over `executor_start`'s Rust
/// frames; a panic here unwinds instead (`C-unwind`) through the walker's C frames, which
/// hold nothing to release, to `executor_start`'s guard.
///
/// # Safety
///
/// `ps` must be a valid plan state tree made by `ExecutorStart` (`context` is passed on).
#[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
unsafe extern "C-unwind" fn no_bitmap_prefetch(
    ps: *mut pg_sys::PlanState,
    context: *mut std::ffi::c_void,
) -> bool {
    // SAFETY: `ps` is a valid plan state (the contract), a `BitmapHeapScanState` when its tag
    // says so, whose scan relation `ExecInitBitmapHeapScan` opened.
    unsafe {
        if (*ps).type_ == pg_sys::NodeTag::T_BitmapHeapScanState {
            let node = ps as *mut pg_sys::BitmapHeapScanState;
            if crate::am::relation::is_columnar((*node).ss.ss_currentRelation) {
                (*node).prefetch_maximum = 0;
            }
        }
    }
    // SAFETY: `ps` is a valid tree (the contract); the walker calls this fn on each child,
    // which is valid alike.
    unsafe { pg_sys::planstate_tree_walker(ps, Some(no_bitmap_prefetch), context) }
}

//! The executor node of `PgcolScan`.
//!
//! Rows come from `am::scan::VectorScan` told to decode only the columns read, to skip the
//! stripes and vectors the skip expression rules out, and to return only the rows the
//! vectorized filter selects; `ExecScan` then evaluates the plan's remaining quals and the
//! projection as for any scan. The comparison values are evaluated when the scan starts and
//! again on every rescan (parameters of a nested loop, of a generic plan, initplans).
//!
//! Parallel: the dynamic shared memory holds the stripe counter the processes share and the
//! counters EXPLAIN ANALYZE shows. A worker adds its counters there when its scan ends (or the
//! node shuts down); the leader reads them when its node shuts down, before the Gather frees
//! the memory. A worker still scanning then (the query stopped early, e.g. under a LIMIT)
//! is not counted.
//!
//! Not supported: backward scans and mark/restore (the path does not claim them, so the
//! planner puts a Material node above where a cursor needs one).

use std::sync::atomic::{AtomicU64, Ordering};

use pgrx::pg_sys;

use super::filter::RuntimeFilter;
use super::frame::{CustomNode, Frame, Parallel};
use super::list;
use super::skip::{RuntimeSkip, Value};
use super::spec::{wanted_columns, ScanSpec};
use crate::am::scan::{ScanCounters, StripeReader, VectorScan};

/// PgcolScan's method tables and their registration (`super::frame`).
pub(super) static FRAME: Frame<Exec> = Frame::new().with_parallel();

/// What a process did, summed for EXPLAIN ANALYZE.
#[derive(Debug, Default, Clone)]
struct Totals {
    counters: ScanCounters,
    decoded: Vec<u64>,
    bytes: u64,
}

impl Totals {
    fn add(&mut self, o: &Totals) {
        let (a, b) = (&mut self.counters, &o.counters);
        a.stripes += b.stripes;
        a.stripes_skipped += b.stripes_skipped;
        a.stripes_unread += b.stripes_unread;
        a.vectors += b.vectors;
        a.vectors_skipped += b.vectors_skipped;
        a.vectors_filtered += b.vectors_filtered;
        a.vectors_covered += b.vectors_covered;
        a.rows_filtered += b.rows_filtered;
        self.bytes += o.bytes;
        if self.decoded.len() < o.decoded.len() {
            self.decoded.resize(o.decoded.len(), 0);
        }
        for (x, y) in self.decoded.iter_mut().zip(&o.decoded) {
            *x += y;
        }
    }
}

/// The node's dynamic shared memory: the stripe counter, then the workers' counters
/// (`natts` per-column decode counts follow the struct).
#[repr(C)]
struct Shared {
    next_stripe: AtomicU64,
    stripes: AtomicU64,
    stripes_skipped: AtomicU64,
    stripes_unread: AtomicU64,
    vectors: AtomicU64,
    vectors_skipped: AtomicU64,
    vectors_filtered: AtomicU64,
    vectors_covered: AtomicU64,
    rows_filtered: AtomicU64,
    bytes: AtomicU64,
    natts: u64,
}

impl Shared {
    /// The per-column decode counts that follow the struct.
    ///
    /// # Safety
    /// `this` points to the node's shared memory, initialized by `initialize_dsm` (its `natts`
    /// set, as many counters after the struct), and mapped while the slice is used.
    unsafe fn decoded(this: *mut Shared) -> &'static [AtomicU64] {
        // SAFETY: `natts` counters follow the initialized struct, in the mapped shared memory
        // (this function's contract); they are atomics, shared only through `&`
        unsafe {
            std::slice::from_raw_parts(this.add(1) as *const AtomicU64, (*this).natts as usize)
        }
    }

    /// Adds a process's counters to the shared ones.
    ///
    /// # Safety
    /// As [`Shared::decoded`].
    unsafe fn add(this: *mut Shared, t: &Totals) {
        // SAFETY: `this` is the initialized, mapped shared memory (this function's contract),
        // whose fields other processes change only atomically
        let s = unsafe { &*this };
        s.stripes.fetch_add(t.counters.stripes, Ordering::SeqCst);
        s.stripes_skipped
            .fetch_add(t.counters.stripes_skipped, Ordering::SeqCst);
        s.stripes_unread
            .fetch_add(t.counters.stripes_unread, Ordering::SeqCst);
        s.vectors.fetch_add(t.counters.vectors, Ordering::SeqCst);
        s.vectors_skipped
            .fetch_add(t.counters.vectors_skipped, Ordering::SeqCst);
        s.vectors_filtered
            .fetch_add(t.counters.vectors_filtered, Ordering::SeqCst);
        s.vectors_covered
            .fetch_add(t.counters.vectors_covered, Ordering::SeqCst);
        s.rows_filtered
            .fetch_add(t.counters.rows_filtered, Ordering::SeqCst);
        s.bytes.fetch_add(t.bytes, Ordering::SeqCst);
        // SAFETY: this function's contract is `decoded`'s
        for (a, v) in unsafe { Shared::decoded(this) }.iter().zip(&t.decoded) {
            a.fetch_add(*v, Ordering::SeqCst);
        }
    }

    /// The counters the workers added.
    ///
    /// # Safety
    /// As [`Shared::decoded`].
    unsafe fn totals(this: *mut Shared) -> Totals {
        // SAFETY: `this` is the initialized, mapped shared memory (this function's contract),
        // whose fields other processes change only atomically
        let s = unsafe { &*this };
        Totals {
            counters: ScanCounters {
                stripes: s.stripes.load(Ordering::SeqCst),
                stripes_skipped: s.stripes_skipped.load(Ordering::SeqCst),
                stripes_unread: s.stripes_unread.load(Ordering::SeqCst),
                vectors: s.vectors.load(Ordering::SeqCst),
                vectors_skipped: s.vectors_skipped.load(Ordering::SeqCst),
                vectors_filtered: s.vectors_filtered.load(Ordering::SeqCst),
                vectors_covered: s.vectors_covered.load(Ordering::SeqCst),
                rows_filtered: s.rows_filtered.load(Ordering::SeqCst),
                // metadata answers are taken by a serial PgcolAgg only
                ..Default::default()
            },
            // SAFETY: this function's contract is `decoded`'s
            decoded: unsafe { Shared::decoded(this) }
                .iter()
                .map(|a| a.load(Ordering::SeqCst))
                .collect(),
            bytes: s.bytes.load(Ordering::SeqCst),
        }
    }
}

/// PgcolScan's Rust state.
pub(super) struct Exec {
    spec: ScanSpec,
    /// The columns to decode (0-based), from the plan's target list and quals.
    columns: Vec<u16>,
    /// The comparison values' expression states, in the order of the spec's values.
    values: Vec<*mut pg_sys::ExprState>,
    /// The vectorized quals as the executor would evaluate them (EvalPlanQual rechecks).
    filter_qual: *mut pg_sys::ExprState,
    /// When the plan's target list is plain columns of the scanned table: for each result
    /// column, the scan slot's column (0-based) it copies. The node then projects by copying
    /// Datums instead of through `ExecProject`.
    direct: Option<Vec<usize>>,
    /// Holds the evaluated values; reset at every (re)start.
    values_cxt: pg_sys::MemoryContext,
    scan: Option<VectorScan>,
    start_pending: bool,
    shared: *mut Shared,
    /// A worker's counters were added to `shared`.
    published: bool,
    /// The leader: the workers' counters, read at shutdown.
    workers: Option<Totals>,
    /// Read the stripes' catalog summaries even without quals (a parent aggregate takes
    /// whole stripes from them).
    summaries: bool,
}

impl Exec {
    fn local_totals(&self) -> Totals {
        match &self.scan {
            Some(s) => Totals {
                counters: s.counters.clone(),
                decoded: s.reader.decoded_per_column().to_vec(),
                bytes: s.reader.bytes_read(),
            },
            None => Totals::default(),
        }
    }

    /// A worker adds what it did to the shared counters, once.
    ///
    /// # Safety
    /// `self.shared` is null or the node's shared memory, initialized and still mapped.
    unsafe fn publish(&mut self) {
        // SAFETY: `ParallelWorkerNumber` is set when the process starts, and read here in its
        // one thread
        let worker = unsafe { pg_sys::ParallelWorkerNumber } >= 0;
        if worker && !self.shared.is_null() && !self.published {
            // SAFETY: a non-null `shared` is the initialized, mapped shared memory (this
            // function's contract)
            unsafe { Shared::add(self.shared, &self.local_totals()) };
            self.published = true;
        }
    }
}

impl CustomNode for Exec {
    const NAME: &'static std::ffi::CStr = c"PgcolScan";
    const TABLE_ROWS: bool = true;
    const ABOVE_SCAN: bool = false;
    type Spec = ScanSpec;

    fn frame() -> &'static Frame<Exec> {
        &FRAME
    }

    /// # Safety
    /// As [`CustomNode::create`] (nothing is read of the plan here).
    unsafe fn create(_cscan: *mut pg_sys::CustomScan, spec: ScanSpec) -> Exec {
        Exec {
            spec,
            columns: Vec::new(),
            values: Vec::new(),
            filter_qual: std::ptr::null_mut(),
            direct: None,
            values_cxt: std::ptr::null_mut(),
            scan: None,
            start_pending: true,
            shared: std::ptr::null_mut(),
            published: false,
            workers: None,
            summaries: false,
        }
    }

    /// # Safety
    /// As [`CustomNode::begin`].
    unsafe fn begin(
        &mut self,
        node: *mut pg_sys::CustomScanState,
        _estate: *mut pg_sys::EState,
        _eflags: i32,
    ) {
        // SAFETY: `node` is being begun (this method's contract): its plan is a PgcolScan
        // CustomScan, its relation open with its descriptor
        let (cscan, natts, plan) = unsafe {
            let cscan = (*node).ss.ps.plan as *mut pg_sys::CustomScan;
            let natts = (*(*(*node).ss.ss_currentRelation).rd_att).natts as usize;
            (cscan, natts, &(*cscan).scan.plan)
        };
        // SAFETY: the plan lives as long as the node (as above)
        let scanrelid = unsafe { (*cscan).scan.scanrelid };
        let read = [
            plan.targetlist as *mut pg_sys::Node,
            plan.qual as *mut pg_sys::Node,
        ];
        // SAFETY: the plan's target list and quals are null or valid expression trees; in the
        // query's memory context (this method's contract)
        self.columns = unsafe { wanted_columns(&read, scanrelid, natts) }
            .iter()
            .enumerate()
            .filter(|(_, &w)| w)
            .map(|(i, _)| i as u16)
            .collect();
        // SAFETY: the plan's target list is a valid List of TargetEntries
        self.direct = unsafe { direct_projection(plan.targetlist, scanrelid, natts) };
        // SAFETY: `custom_exprs` holds the plan's values then its skip and filter clauses
        // (`spec::ScanSpec`), expressions compiled here for the node being begun, in the
        // query's memory context (this method's contract), where the memory context is made
        unsafe {
            self.values = list::nodes((*cscan).custom_exprs)
                .take(self.spec.value_count as usize)
                .map(|e| pg_sys::ExecInitExpr(e as *mut pg_sys::Expr, &mut (*node).ss.ps))
                .collect();
            let filter_clauses = list::from_nodes(filter_clauses(cscan, &self.spec));
            self.filter_qual = pg_sys::ExecInitQual(filter_clauses, &mut (*node).ss.ps);
            self.values_cxt = pg_sys::AllocSetContextCreateExtended(
                pg_sys::CurrentMemoryContext,
                c"PgcolScan values".as_ptr(),
                pg_sys::ALLOCSET_SMALL_MINSIZE as usize,
                pg_sys::ALLOCSET_SMALL_INITSIZE as usize,
                pg_sys::ALLOCSET_SMALL_MAXSIZE as usize,
            );
        }
    }

    /// # Safety
    /// As [`CustomNode::next`].
    unsafe fn next(&mut self, node: *mut pg_sys::CustomScanState) -> *mut pg_sys::TupleTableSlot {
        if self.start_pending {
            // SAFETY: `node` is begun, not ended (this method's contract), and `self` its value
            unsafe { start(node, self) };
            self.start_pending = false;
        }
        // SAFETY: `node` is begun (this method's contract), with its scan slot
        let slot = unsafe { (*node).ss.ss_ScanTupleSlot };
        if !self.scan.as_mut().unwrap().next_selected(slot) {
            // SAFETY: `shared` is null or the node's shared memory, still mapped: the leader
            // nulls it at shutdown, before the Gather frees it; a worker's stays until it exits
            unsafe { self.publish() };
        }
        slot
    }

    /// An EvalPlanQual test tuple did not come through the vectorized filter: its quals are
    /// checked here (the executor checks the plan's own).
    ///
    /// # Safety
    /// As [`CustomNode::recheck`].
    unsafe fn recheck(
        &mut self,
        node: *mut pg_sys::CustomScanState,
        slot: *mut pg_sys::TupleTableSlot,
    ) -> bool {
        // SAFETY: `filter_qual` was compiled by `begin` for this begun node, whose expression
        // context this is; `slot` holds the test tuple of the scan's descriptor (this method's
        // contract)
        unsafe { super::filter::recheck(self.filter_qual, (*node).ss.ps.ps_ExprContext, slot) }
    }

    /// # Safety
    /// As [`CustomNode::exec`].
    unsafe fn exec(node: *mut pg_sys::CustomScanState) -> *mut pg_sys::TupleTableSlot {
        // SAFETY: `node` is a begun PgcolScan node (this method's contract); nothing writes its
        // plan state while this method runs
        let ps = unsafe { &(*node).ss.ps };
        let projects = !ps.ps_ProjInfo.is_null();
        // SAFETY: `node` is a PgcolScan node whose value is not borrowed (this method's
        // contract)
        let exec = unsafe { state_of(node) };
        if !ps.qual.is_null()
            // SAFETY: `ps.state` is the node's executor state, valid while it runs
            || unsafe { !(*ps.state).es_epq_active.is_null() }
            || (projects && exec.direct.is_none())
        {
            // SAFETY: a begun PgcolScan node; `exec` is not used again, so its value is free
            return unsafe { super::frame::exec_scan::<Exec>(node) };
        }
        // what ExecScan does without quals or EvalPlanQual, without the calls: reset the
        // per-tuple memory (when anything used it), take the next row, and project it
        // SAFETY: the node's expression context and its per-tuple memory context are valid
        // while it runs
        unsafe {
            let memory = (*ps.ps_ExprContext).ecxt_per_tuple_memory;
            if !(*memory).isReset || !(*memory).firstchild.is_null() {
                pg_sys::MemoryContextReset(memory);
            }
        }
        // SAFETY: `node` is begun, not ended (this method's contract), and `exec` its value
        let row = unsafe { exec.next(node) };
        let Some(direct) = exec.direct.as_deref().filter(|_| projects) else {
            return row;
        };
        // SAFETY: a node that projects has its projection, whose result slot is valid; `row` is
        // the scan slot `next` returned
        let result = unsafe {
            let result = (*ps.ps_ProjInfo).pi_state.resultslot;
            crate::am::slot::clear_for_row(result);
            if (*row).tts_flags as u32 & pg_sys::TTS_FLAG_EMPTY != 0 {
                return result;
            }
            result
        };
        // the scan slot's values are all valid (a virtual tuple), so plain Datum copies
        let natts = direct.len();
        // SAFETY: the result slot holds the target list's `natts` columns, of which `direct`
        // maps each to a scan slot column below the relation's count (`direct_projection`),
        // all of them stored by `next`; the result slot, cleared above, gets every value
        unsafe {
            let (from_values, from_nulls) = ((*row).tts_values, (*row).tts_isnull);
            let values = std::slice::from_raw_parts_mut((*result).tts_values, natts);
            let nulls = std::slice::from_raw_parts_mut((*result).tts_isnull, natts);
            for (i, &c) in direct.iter().enumerate() {
                values[i] = *from_values.add(c);
                nulls[i] = *from_nulls.add(c);
            }
            crate::am::slot::store_virtual(result);
        }
        result
    }

    fn rescan(&mut self) {
        self.start_pending = true;
    }

    /// # Safety
    /// As [`CustomNode::end`].
    unsafe fn end(&mut self, _node: *mut pg_sys::CustomScanState) {
        // SAFETY: `shared` is null or the node's shared memory, still mapped: the leader nulls
        // it at shutdown, before the Gather frees it; a worker's stays until it exits
        unsafe { self.publish() };
    }

    /// # Safety
    /// As [`CustomNode::explain`].
    unsafe fn explain(
        &self,
        node: *mut pg_sys::CustomScanState,
        ancestors: *mut pg_sys::List,
        es: *mut pg_sys::ExplainState,
    ) {
        // SAFETY: `node` is a begun PgcolScan node and `es` EXPLAIN's state (this method's
        // contract): its plan is its CustomScan, its relation open
        let (cscan, relid, analyze, verbose) = unsafe {
            (
                (*node).ss.ps.plan as *mut pg_sys::CustomScan,
                (*(*node).ss.ss_currentRelation).rd_id,
                (*es).analyze,
                (*es).verbose,
            )
        };
        // SAFETY: EXPLAIN runs in a transaction, as the syscache lookup asks
        let name = |c: u16| unsafe { attribute_name(relid, c) };
        // SAFETY: `es` is EXPLAIN's state (this method's contract)
        let text = |label: &std::ffi::CStr, value: &str| unsafe { explain_text(label, value, es) };
        // SAFETY: `es` is EXPLAIN's state (this method's contract); the label is NUL-terminated
        let integer = |label: &std::ffi::CStr, value: i64| unsafe {
            pg_sys::ExplainPropertyInteger(label.as_ptr(), std::ptr::null(), value, es)
        };
        // what is read: the columns the executor gets, and those only the vectorized filter
        // reads
        let mut read = self.columns.clone();
        if let Some(f) = &self.spec.filter {
            f.columns(&mut read);
        }
        read.sort_unstable();
        let columns: Vec<String> = read.iter().map(|&c| name(c)).collect();
        text(
            c"Columns Read",
            &if columns.is_empty() {
                "none".to_string()
            } else {
                columns.join(", ")
            },
        );
        // SAFETY: `custom_exprs` holds the plan's values, then its skip clauses, then its
        // filter clauses (`spec::ScanSpec`), which `filter_clauses` takes; the plan is valid
        // while the node is
        let (skip, filter) = unsafe {
            let skip: Vec<*mut pg_sys::Node> = list::nodes((*cscan).custom_exprs)
                .skip(self.spec.value_count as usize)
                .take(self.spec.skip_clauses as usize)
                .collect();
            (skip, filter_clauses(cscan, &self.spec))
        };
        // SAFETY: `es` is EXPLAIN's state, which set up its deparse context, and `ancestors`
        // its list of the node's ancestors (this method's contract)
        let context = unsafe {
            pg_sys::set_deparse_context_plan(
                (*es).deparse_cxt,
                cscan as *mut pg_sys::Plan,
                ancestors,
            )
        };
        for (label, clauses) in [(c"Vectorized Filter", filter), (c"Skip Filter", skip)] {
            if clauses.is_empty() {
                continue;
            }
            // SAFETY: the clauses are the plan's expressions, deparsed in the context made for
            // the plan above
            let deparsed = unsafe { deparse_clauses(&clauses, context, verbose) };
            text(label, &deparsed);
        }
        if analyze {
            let mut t = self.local_totals();
            if let Some(w) = &self.workers {
                t.add(w);
            }
            let c = &t.counters;
            text(
                c"Stripes",
                &format!(
                    "{} total, {} skipped ({} by their catalog summary)",
                    c.stripes, c.stripes_skipped, c.stripes_unread
                ),
            );
            text(
                c"Vectors",
                &format!(
                    "{} total, {} skipped, {} without a selected row",
                    c.vectors, c.vectors_skipped, c.vectors_filtered
                ),
            );
            if self.spec.filter.is_some() {
                integer(c"Rows Removed by Vectorized Filter", c.rows_filtered as i64);
                integer(
                    c"Vectors Selected Whole by Zone Maps",
                    c.vectors_covered as i64,
                );
            }
            let decoded: Vec<String> = read
                .iter()
                .map(|&col| {
                    format!(
                        "{} {}",
                        name(col),
                        t.decoded.get(col as usize).copied().unwrap_or(0)
                    )
                })
                .collect();
            if !decoded.is_empty() {
                text(c"Vectors Decoded", &decoded.join(", "));
            }
            integer(c"Bytes Read", t.bytes as i64);
        }
    }
}

impl Parallel for Exec {
    /// # Safety
    /// As [`Parallel::estimate_dsm`].
    unsafe fn estimate_dsm(
        node: *mut pg_sys::CustomScanState,
        _pcxt: *mut pg_sys::ParallelContext,
    ) -> pg_sys::Size {
        // SAFETY: `node` is a begun PgcolScan node (this method's contract)
        unsafe { dsm_size(node) }
    }

    /// # Safety
    /// As [`Parallel::initialize_dsm`].
    unsafe fn initialize_dsm(
        &mut self,
        node: *mut pg_sys::CustomScanState,
        _pcxt: *mut pg_sys::ParallelContext,
        coordinate: *mut std::ffi::c_void,
    ) {
        // SAFETY: `node` is a begun PgcolScan node, its relation open (this method's contract)
        let rel = unsafe { (*node).ss.ss_currentRelation };
        // rows this backend buffered must be written before the workers list the stripes
        crate::am::write::flush_relation(rel);
        // SAFETY: `coordinate` points to `estimate_dsm`'s bytes, `dsm_size(node)` (this
        // method's contract), which zeroed are a `Shared` and its counters; `natts` is set to
        // the relation's count that `dsm_size` made room for
        unsafe {
            std::ptr::write_bytes(coordinate as *mut u8, 0, dsm_size(node));
            let shared = coordinate as *mut Shared;
            (*shared).natts = (*(*rel).rd_att).natts as u64;
            self.shared = shared;
        }
    }

    /// # Safety
    /// As [`Parallel::reinitialize_dsm`].
    unsafe fn reinitialize_dsm(
        _node: *mut pg_sys::CustomScanState,
        _pcxt: *mut pg_sys::ParallelContext,
        coordinate: *mut std::ffi::c_void,
    ) {
        // SAFETY: `coordinate` is the node's shared memory, a `Shared` `initialize_dsm` set up
        // (this method's contract); the counter is atomic
        unsafe { &(*(coordinate as *mut Shared)).next_stripe }.store(0, Ordering::SeqCst);
    }

    /// # Safety
    /// As [`Parallel::initialize_worker`].
    unsafe fn initialize_worker(
        &mut self,
        _node: *mut pg_sys::CustomScanState,
        _toc: *mut pg_sys::shm_toc,
        coordinate: *mut std::ffi::c_void,
    ) {
        self.shared = coordinate as *mut Shared;
    }

    /// # Safety
    /// As [`Parallel::shutdown`].
    unsafe fn shutdown(&mut self, _node: *mut pg_sys::CustomScanState) {
        // SAFETY: `ParallelWorkerNumber` is set when the process starts, and read here in its
        // one thread
        if unsafe { pg_sys::ParallelWorkerNumber } >= 0 {
            // SAFETY: a worker's `shared` is null or the leader's shared memory, mapped until
            // the worker exits
            unsafe { self.publish() };
        } else if !self.shared.is_null() {
            // SAFETY: the leader's non-null `shared` is its `initialize_dsm`'s, still mapped
            // (this method's contract): the Gather frees it after this
            self.workers = Some(unsafe { Shared::totals(self.shared) });
            // the Gather frees the shared memory after this
            self.shared = std::ptr::null_mut();
            if let Some(scan) = self.scan.as_mut() {
                scan.set_parallel(std::ptr::null());
            }
        }
    }
}

/// The Rust state of `node`, a PgcolScan node.
///
/// # Safety
/// `node` is a live executor node; its value is not otherwise borrowed while the reference
/// is used.
unsafe fn state_of<'a>(node: *mut pg_sys::CustomScanState) -> &'a mut Exec {
    // SAFETY: this function's contract is `Frame::state_of`'s
    unsafe { FRAME.state_of(node as *mut pg_sys::PlanState) }.expect("a PgcolScan node")
}

/// The scan columns a target list copies, if it is nothing but plain columns of relation
/// `scanrelid` (no system columns, whole rows or expressions).
///
/// # Safety
/// `tlist` is null or a valid List of TargetEntries.
unsafe fn direct_projection(
    tlist: *mut pg_sys::List,
    scanrelid: pg_sys::Index,
    natts: usize,
) -> Option<Vec<usize>> {
    // SAFETY: `tlist` is a valid List of TargetEntries (this function's contract), whose
    // `expr` is a valid node, read as a Var only once its tag says so
    unsafe {
        list::nodes(tlist)
            .map(|n| {
                let te = n as *mut pg_sys::TargetEntry;
                let var = (*te).expr as *mut pg_sys::Var;
                let plain = !var.is_null()
                    && (*var).xpr.type_ == pg_sys::NodeTag::T_Var
                    && (*var).varno as pg_sys::Index == scanrelid
                    && (*var).varlevelsup == 0
                    && (*var).varattno >= 1
                    && (*var).varattno as usize <= natts;
                plain.then(|| (*var).varattno as usize - 1)
            })
            .collect()
    }
}

/// Evaluates the comparison values (in `values_cxt`, so they live until the next start).
///
/// # Safety
/// `node` is a begun PgcolScan node and `exec` its value (`values` and `values_cxt` made by
/// `begin`).
unsafe fn evaluate_values(node: *mut pg_sys::CustomScanState, exec: &mut Exec) -> Vec<Value> {
    // SAFETY: `values_cxt` is the node's memory context and `values` were compiled for its
    // expression context, valid while it runs (this function's contract); the current
    // context is switched back after
    unsafe {
        pg_sys::MemoryContextReset(exec.values_cxt);
        let econtext = (*node).ss.ps.ps_ExprContext;
        let old = pg_sys::MemoryContextSwitchTo(exec.values_cxt);
        let values = super::skip::evaluate(&exec.values, econtext);
        pg_sys::MemoryContextSwitchTo(old);
        values
    }
}

/// Starts (or restarts) the scan: the stripes are listed at the first start; the values
/// are evaluated at every one.
///
/// # Safety
/// `node` is a begun PgcolScan node, not ended, and `exec` its value; `exec.shared` is null or
/// the node's shared memory, still mapped.
unsafe fn start(node: *mut pg_sys::CustomScanState, exec: &mut Exec) {
    // SAFETY: `node` is begun (this function's contract): its relation is open
    let rel = unsafe { (*node).ss.ss_currentRelation };
    let shared = if exec.shared.is_null() {
        std::ptr::null()
    } else {
        // SAFETY: a non-null `shared` is the mapped shared memory (this function's contract)
        unsafe { &(*exec.shared).next_stripe as *const AtomicU64 }
    };
    match exec.scan.as_mut() {
        Some(scan) => {
            scan.restart();
            scan.set_parallel(shared);
        }
        None => {
            // SAFETY: `node` is begun (this function's contract): its executor state is valid
            let snapshot = unsafe { (*(*node).ss.ps.state).es_snapshot };
            // a read of every row, before the stripes are listed (`am::ssi`)
            crate::am::ssi::lock_relation(rel, snapshot);
            let reader = if exec.spec.skip.is_some() || exec.summaries {
                StripeReader::visible_with_summaries(rel, snapshot, true)
            } else {
                StripeReader::visible(rel, snapshot, true)
            };
            let mut scan = VectorScan::new(reader, shared);
            // a query run again (a dashboard's) finds the few stripes it read kept
            scan.reader.keep_first_stripes();
            let natts = scan.reader.types.len();
            let mut wanted = vec![false; natts];
            for &c in &exec.columns {
                if let Some(w) = wanted.get_mut(c as usize) {
                    *w = true;
                }
            }
            scan.reader.set_projection(wanted);
            exec.scan = Some(scan);
        }
    }
    // every vectorized qual is also a skip qual: without a skip expression there is no filter
    if let Some(expr) = exec.spec.skip.clone() {
        // SAFETY: `node` is begun and `exec` its value (this function's contract)
        let values = unsafe { evaluate_values(node, exec) };
        let scan = exec.scan.as_mut().unwrap();
        if let Some(filter) = &exec.spec.filter {
            scan.set_filter(Box::new(RuntimeFilter::new(filter, &values)));
        }
        let types = scan.reader.types.clone();
        scan.set_skip(Box::new(RuntimeSkip::new(expr, types, values)));
    } else if let Some(scan) = exec.scan.as_mut() {
        // (a rescan: what an aggregation above added for its last computation goes)
        scan.clear_skip();
    }
}

/// The reader of a PgcolScan node, started, for a parent that takes its vectors
/// instead of its rows (PgcolAgg), and the node's scan slot (which gives the defaults of
/// columns added since a stripe was written); `None` if `child` is another node.
///
/// # Safety
/// `child` is a live executor node, begun and not ended, whose value (if a PgcolScan's) is
/// not otherwise borrowed while the reader is used, nor used after the node ends.
pub(super) unsafe fn batch_source<'a>(
    child: *mut pg_sys::PlanState,
) -> Option<(&'a mut VectorScan, *mut pg_sys::TupleTableSlot)> {
    let node = child as *mut pg_sys::CustomScanState;
    // SAFETY: this function's contract is `Frame::state_of`'s
    let exec = unsafe { FRAME.state_of(child) }?;
    // SAFETY: `child` is a live executor node (this function's contract)
    if !unsafe { (*child).qual }.is_null() {
        pgrx::error!("pg_columnar: PgcolAgg over a scan with quals left for the executor");
    }
    if exec.start_pending {
        exec.summaries = true;
        // SAFETY: `node` is a begun PgcolScan node (this function's contract) and `exec` its
        // value; its `shared` is null or mapped while the node runs
        unsafe { start(node, exec) };
        exec.start_pending = false;
    }
    // SAFETY: a begun PgcolScan node has its scan slot
    Some((exec.scan.as_mut().unwrap(), unsafe {
        (*node).ss.ss_ScanTupleSlot
    }))
}

/// For a parent that reads its PgcolScan child's vectors itself (PgcolAgg, PgcolTopN): starts
/// the child's instrumentation, and gives its reader and scan slot ([`batch_source`]) and the
/// instrumentation to stop when the parent is done (null if none). An ERROR naming `parent`
/// if the child is another node.
///
/// # Safety
/// `css` is a begun parent node, whose child is under [`batch_source`]'s contract.
pub(super) unsafe fn start_child_batches<'a>(
    css: &mut pg_sys::CustomScanState,
    parent: &str,
) -> (
    &'a mut VectorScan,
    *mut pg_sys::TupleTableSlot,
    *mut crate::compat::NodeInstrumentation,
) {
    // SAFETY: a begun parent has its child, whose instrumentation is null or valid
    let (child, instr) = unsafe {
        let child = super::frame::child_of(css);
        let instr = (*child).instrument;
        if !instr.is_null() {
            pg_sys::InstrStartNode(instr);
        }
        (child, instr)
    };
    // SAFETY: the child is under `batch_source`'s contract (this function's)
    let Some((scan, slot)) = (unsafe { batch_source(child) }) else {
        pgrx::error!("pg_columnar: {parent} over a node that is not a PgcolScan");
    };
    (scan, slot, instr)
}

/// The plan's vectorized quals (the tail of its `custom_exprs`, see `spec::ScanSpec`).
///
/// # Safety
/// `cscan` is a valid PgcolScan plan, and `spec` its spec.
unsafe fn filter_clauses(
    cscan: *const pg_sys::CustomScan,
    spec: &ScanSpec,
) -> Vec<*mut pg_sys::Node> {
    // SAFETY: `cscan` is a valid plan (this function's contract): `custom_exprs` a List of
    // nodes, read at once
    unsafe { list::nodes((*cscan).custom_exprs) }
        .skip(spec.value_count as usize + spec.skip_clauses as usize)
        .collect()
}

/// The bytes of the node's shared memory: the struct, then a counter per column.
///
/// # Safety
/// `node` is a begun PgcolScan node (its relation open).
unsafe fn dsm_size(node: *mut pg_sys::CustomScanState) -> usize {
    // SAFETY: `node`'s relation is open, with its descriptor (this function's contract)
    let natts = unsafe { (*(*(*node).ss.ss_currentRelation).rd_att).natts } as usize;
    std::mem::size_of::<Shared>() + natts * std::mem::size_of::<AtomicU64>()
}

/// The name of column `column` (0-based) of relation `relid`, or `#n` if it has none.
///
/// # Safety
/// In a transaction (a syscache lookup).
pub(super) unsafe fn attribute_name(relid: pg_sys::Oid, column: u16) -> String {
    // SAFETY: in a transaction (this function's contract); a missing attribute gives null
    let name = unsafe { pg_sys::get_attname(relid, column as i16 + 1, true) };
    if name.is_null() {
        format!("#{}", column + 1)
    } else {
        // SAFETY: a non-null `get_attname` result is a NUL-terminated palloc'd copy
        unsafe { std::ffi::CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned()
    }
}

/// `clauses` (non-empty, implicitly ANDed) as EXPLAIN prints a qual: one clause as itself,
/// several joined by AND.
///
/// # Safety
/// The clauses are a plan's expressions and `context` the deparse context made for that
/// plan (`set_deparse_context_plan`), while EXPLAIN runs.
pub(super) unsafe fn deparse_clauses(
    clauses: &[*mut pg_sys::Node],
    context: *mut pg_sys::List,
    verbose: bool,
) -> String {
    // SAFETY: valid expressions and their plan's context (this function's contract);
    // `deparse_expression` returns a NUL-terminated palloc'd string
    unsafe {
        let expr = if clauses.len() == 1 {
            clauses[0]
        } else {
            pg_sys::make_ands_explicit(list::from_nodes(clauses.iter().copied()))
                as *mut pg_sys::Node
        };
        let deparsed = pg_sys::deparse_expression(expr, context, verbose, false);
        std::ffi::CStr::from_ptr(deparsed)
            .to_string_lossy()
            .into_owned()
    }
}

/// An EXPLAIN property of text `value` (NUL characters left out).
///
/// # Safety
/// `es` is EXPLAIN's valid state.
pub(super) unsafe fn explain_text(
    label: &std::ffi::CStr,
    value: &str,
    es: *mut pg_sys::ExplainState,
) {
    let value = std::ffi::CString::new(value.replace('\0', "")).unwrap();
    // SAFETY: `es` is EXPLAIN's state (this function's contract); both strings are
    // NUL-terminated and outlive the call
    unsafe { pg_sys::ExplainPropertyText(label.as_ptr(), value.as_ptr(), es) };
}

#[cfg(test)]
mod tests {
    use pg_columnar_codec::zonemap::Cmp;

    use super::Exec;
    use crate::exec::frame::assert_round_trip;
    use crate::exec::quals::{ArrayMode, Compare, Exact, How, SkipExpr, Test};
    use crate::exec::spec::ScanSpec;

    fn compare(
        column: u16,
        cmp: Cmp,
        array: ArrayMode,
        how: How,
        exact: Option<Exact>,
    ) -> SkipExpr {
        SkipExpr::Leaf {
            column,
            test: Test::Compare(Compare {
                cmp,
                value: column * 3,
                array,
                how,
                exact,
            }),
        }
    }

    /// PgcolScan's plan data: no quals, and skip expressions and filters with every kind of
    /// node, test, comparison, array mode, comparison method and exact type.
    #[test]
    fn plan_data_round_trip() {
        let procs = How::Procs {
            procs: [66, 4_294_967_295],
            collation: 950,
        };
        let cmps = [Cmp::Lt, Cmp::Le, Cmp::Eq, Cmp::Ge, Cmp::Gt, Cmp::Ne];
        let arrays = [ArrayMode::Scalar, ArrayMode::Any, ArrayMode::All];
        let exacts = [
            None,
            Some(Exact::Int16),
            Some(Exact::Int32),
            Some(Exact::Int64),
            Some(Exact::Float32),
            Some(Exact::Float64),
            Some(Exact::Bytes),
        ];
        let mut leaves = vec![
            SkipExpr::Leaf {
                column: 0,
                test: Test::IsNull,
            },
            SkipExpr::Leaf {
                column: u16::MAX,
                test: Test::IsNotNull,
            },
        ];
        for (i, &cmp) in cmps.iter().enumerate() {
            for (j, &array) in arrays.iter().enumerate() {
                let exact = exacts[(i + j) % exacts.len()];
                let how = if (i + j) % 2 == 0 { How::Bytes } else { procs };
                leaves.push(compare((i * 3 + j) as u16, cmp, array, how, exact));
            }
        }
        let nested = SkipExpr::And(vec![
            SkipExpr::Or(leaves[..4].to_vec()),
            SkipExpr::And(vec![]),
            SkipExpr::Or(vec![SkipExpr::And(leaves[4..].to_vec())]),
        ]);
        let mut specs = vec![
            ScanSpec {
                value_count: 0,
                skip_clauses: 0,
                skip: None,
                filter: None,
            },
            ScanSpec {
                value_count: 18,
                skip_clauses: 3,
                skip: Some(nested.clone()),
                filter: Some(SkipExpr::And(leaves[2..5].to_vec())),
            },
        ];
        specs.extend(leaves.into_iter().map(|leaf| ScanSpec {
            value_count: 1,
            skip_clauses: 1,
            skip: Some(leaf.clone()),
            filter: Some(leaf),
        }));
        assert_round_trip::<Exec>(&specs);
    }
}

//! The one frame of the custom nodes (`PgcolScan`, `PgcolAgg`, `PgcolTopN`): what makes a
//! type a node PostgreSQL can run, written once.
//!
//! A node is a type implementing [`CustomNode`]: its name, the spec its plan carries (in
//! the format of `super::plan_data`), and its behaviour (made from the spec, begun, the next
//! row, recheck, rescan, end, EXPLAIN; [`Parallel`] adds the dynamic shared memory methods).
//! Its module holds one `static` [`Frame`] of it: the `CustomPathMethods`,
//! `CustomScanMethods` and `CustomExecMethods` tables PostgreSQL is given, filled with this
//! module's generic callbacks for that type, and whether they were registered
//! (`super::register_node`, which leaves a name another library took alone). The callbacks
//! do what every node does the same way: allocate the `CustomScanState` with the node's
//! Rust value behind it (dropped at the end, or with the query's memory if it fails first),
//! give a node that stores the table's rows the table's slot type, start, rescan and end the
//! `PgcolScan` child of a node above one, and find the Rust value of a node again.
//!
//! Each callback PostgreSQL calls is `#[pg_guard]`: pgrx 0.19's attribute takes generic
//! functions (it wraps the body in an inner generic function called with the same
//! parameters), so each node type gets guarded callbacks of its own.
//!
//! Rust has no generic statics, so the tables cannot be made here per type: a node's module
//! holds its `static FRAME: Frame<Its> = Frame::new()...`, one address for the process, which
//! PostgreSQL keeps (the registry of custom nodes, each plan's and node's `methods`) and
//! [`Frame::state_of`] compares with.

use std::ffi::CStr;
use std::marker::PhantomData;

use pgrx::pg_sys;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::{list, Registration};

/// A custom executor node of pg_columnar. The frame calls these from PostgreSQL's callbacks;
/// `node` is always the node's own `CustomScanState`. The Rust value is reached only through
/// `self` in them: none of them may find it again through `node` (that would alias `self`).
///
/// The unsafe methods' contracts are what PostgreSQL's callbacks are given: each says what
/// the frame passes on; an implementation relies on no more.
pub(super) trait CustomNode: Sized + 'static {
    /// The node's name: in EXPLAIN, and PostgreSQL's key for its methods (`Pgcol...`, unique
    /// to this project).
    const NAME: &'static CStr;
    /// Its scan slot holds rows of the table, stored by the table's reader
    /// (`am::scan::VectorScan`), so it is made with the table's slot type.
    const TABLE_ROWS: bool;
    /// Its plan has one child, a `PgcolScan`, whose vectors it takes (`custom_plans`): the
    /// frame starts it before [`CustomNode::begin`], rescans it after
    /// [`CustomNode::rescan`] and ends it before [`CustomNode::end`].
    const ABOVE_SCAN: bool;
    /// What the plan tells the node beyond its own fields (`custom_private`, written by
    /// [`Frame::private`] or `super::plan_data::to_private`).
    type Spec: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug;

    /// The node type's frame (a `static` of its module).
    fn frame() -> &'static Frame<Self>;

    /// The node's Rust value, made with its node (`CreateCustomScanState`) from the plan and
    /// its spec.
    ///
    /// # Safety
    /// `cscan` is the node's plan, a `CustomScan` of this node type; called in the query's
    /// memory context.
    unsafe fn create(cscan: *mut pg_sys::CustomScan, spec: Self::Spec) -> Self;

    /// `BeginCustomScan`, after the frame set up the slot and the child.
    ///
    /// # Safety
    /// `node` is the node's `CustomScanState` being begun (its plan, relation and slots made
    /// by `ExecInitCustomScan`), `estate` its executor state; in the query's memory context.
    unsafe fn begin(
        &mut self,
        _node: *mut pg_sys::CustomScanState,
        _estate: *mut pg_sys::EState,
        _eflags: i32,
    ) {
    }

    /// The next row, stored into the scan slot, which is returned; the slot cleared at the
    /// end (`ExecScan`'s access method).
    ///
    /// # Safety
    /// `node` is the node's `CustomScanState`, begun and not ended.
    unsafe fn next(&mut self, node: *mut pg_sys::CustomScanState) -> *mut pg_sys::TupleTableSlot;

    /// Whether an EvalPlanQual test tuple passes what the node evaluates itself
    /// (`ExecScan`'s recheck method).
    ///
    /// # Safety
    /// `node` is the node's `CustomScanState`, begun and not ended; `slot` a valid slot of its
    /// scan descriptor holding the test tuple.
    unsafe fn recheck(
        &mut self,
        _node: *mut pg_sys::CustomScanState,
        _slot: *mut pg_sys::TupleTableSlot,
    ) -> bool {
        true
    }

    /// `ExecCustomScan`: by default `ExecScan` over [`CustomNode::next`], which evaluates
    /// the plan's quals and projection.
    ///
    /// # Safety
    /// `node` is a `CustomScanState` of this node type, begun and not ended, whose Rust value
    /// is not borrowed.
    unsafe fn exec(node: *mut pg_sys::CustomScanState) -> *mut pg_sys::TupleTableSlot {
        // SAFETY: `node` is a begun node of type `Self` whose value is not borrowed (this
        // method's contract), as `exec_scan` asks
        unsafe { exec_scan::<Self>(node) }
    }

    /// `ReScanCustomScan`: forgets what the node computed; the frame then rescans the child
    /// (or the node's scan state).
    fn rescan(&mut self);

    /// `EndCustomScan`, after the child ended, before the value is dropped.
    ///
    /// # Safety
    /// `node` is the node's `CustomScanState`, not ended before.
    unsafe fn end(&mut self, _node: *mut pg_sys::CustomScanState) {}

    /// `ExplainCustomScan`.
    ///
    /// # Safety
    /// `node` is the node's `CustomScanState`, begun and not ended; `ancestors` and `es` are
    /// EXPLAIN's list of the node's ancestors and its state.
    unsafe fn explain(
        &self,
        node: *mut pg_sys::CustomScanState,
        ancestors: *mut pg_sys::List,
        es: *mut pg_sys::ExplainState,
    );
}

/// A node that runs in a parallel plan's processes, sharing dynamic shared memory
/// ([`Frame::with_parallel`]).
pub(super) trait Parallel: CustomNode {
    /// `EstimateDSMCustomScan`: the bytes of shared memory the node needs.
    ///
    /// # Safety
    /// `node` is the node's `CustomScanState`, begun, in the leader; `pcxt` the parallel
    /// context being set up.
    unsafe fn estimate_dsm(
        node: *mut pg_sys::CustomScanState,
        pcxt: *mut pg_sys::ParallelContext,
    ) -> pg_sys::Size;
    /// `InitializeDSMCustomScan`, in the leader.
    ///
    /// # Safety
    /// As [`Parallel::estimate_dsm`]; `coordinate` points to the node's shared memory, of the
    /// size `estimate_dsm` gave, not yet initialized.
    unsafe fn initialize_dsm(
        &mut self,
        node: *mut pg_sys::CustomScanState,
        pcxt: *mut pg_sys::ParallelContext,
        coordinate: *mut std::ffi::c_void,
    );
    /// `ReInitializeDSMCustomScan`, in the leader, before the workers are launched again.
    ///
    /// # Safety
    /// As [`Parallel::estimate_dsm`]; `coordinate` points to the node's shared memory, which
    /// [`Parallel::initialize_dsm`] initialized.
    unsafe fn reinitialize_dsm(
        node: *mut pg_sys::CustomScanState,
        pcxt: *mut pg_sys::ParallelContext,
        coordinate: *mut std::ffi::c_void,
    );
    /// `InitializeWorkerCustomScan`, in a worker.
    ///
    /// # Safety
    /// `node` is the worker's `CustomScanState` of the node, begun; `toc` the parallel
    /// query's table of contents; `coordinate` points to the node's shared memory, which the
    /// leader's [`Parallel::initialize_dsm`] initialized.
    unsafe fn initialize_worker(
        &mut self,
        node: *mut pg_sys::CustomScanState,
        toc: *mut pg_sys::shm_toc,
        coordinate: *mut std::ffi::c_void,
    );
    /// `ShutdownCustomScan`; not called once the node's value is dropped.
    ///
    /// # Safety
    /// `node` is the node's `CustomScanState`, begun; the node's shared memory, if it was
    /// given any, is still mapped.
    unsafe fn shutdown(&mut self, node: *mut pg_sys::CustomScanState);
}

/// A node's planning callback (`PlanCustomPath`), which stays with the node's planning.
pub(super) type PlanPath = unsafe extern "C-unwind" fn(
    *mut pg_sys::PlannerInfo,
    *mut pg_sys::RelOptInfo,
    *mut pg_sys::CustomPath,
    *mut pg_sys::List,
    *mut pg_sys::List,
    *mut pg_sys::List,
) -> *mut pg_sys::Plan;

/// The method tables of node type `N` and their registration.
pub(super) struct Frame<N> {
    /// `None` for a node whose paths are made elsewhere (`PgcolScan`'s, by `super::plan`).
    path: Option<pg_sys::CustomPathMethods>,
    scan: pg_sys::CustomScanMethods,
    exec: pg_sys::CustomExecMethods,
    registration: Registration,
    node: PhantomData<fn() -> N>,
}

// SAFETY: the tables are not written after they are made (PostgreSQL takes them as pointers
// to const), their pointers are to the static name and to functions, and the registration
// is atomic; so sharing a `Frame` between threads shares nothing that changes but the atomic.
unsafe impl<N> Sync for Frame<N> {}

impl<N: CustomNode> Frame<N> {
    /// The tables of `N`: its name and the frame's callbacks for it, no path methods, no
    /// parallel methods.
    pub const fn new() -> Frame<N> {
        Frame {
            path: None,
            scan: pg_sys::CustomScanMethods {
                CustomName: N::NAME.as_ptr(),
                CreateCustomScanState: Some(create_state::<N>),
            },
            exec: pg_sys::CustomExecMethods {
                CustomName: N::NAME.as_ptr(),
                BeginCustomScan: Some(begin::<N>),
                ExecCustomScan: Some(exec::<N>),
                EndCustomScan: Some(end::<N>),
                ReScanCustomScan: Some(rescan::<N>),
                MarkPosCustomScan: None,
                RestrPosCustomScan: None,
                EstimateDSMCustomScan: None,
                InitializeDSMCustomScan: None,
                ReInitializeDSMCustomScan: None,
                InitializeWorkerCustomScan: None,
                ShutdownCustomScan: None,
                ExplainCustomScan: Some(explain::<N>),
            },
            registration: Registration::new(),
            node: PhantomData,
        }
    }

    /// With path methods: `plan` turns the node's paths into plans.
    pub const fn with_path(mut self, plan: PlanPath) -> Frame<N> {
        self.path = Some(pg_sys::CustomPathMethods {
            CustomName: N::NAME.as_ptr(),
            PlanCustomPath: Some(plan),
            ReparameterizeCustomPathByChild: None,
        });
        self
    }

    /// Registers the node's plan methods under its name (from `_PG_init`), unless another
    /// library's node has the name (`super::register_node`).
    ///
    /// # Safety
    /// In the postmaster or a backend, once.
    pub unsafe fn register(&'static self) {
        // SAFETY: `self.scan` is a static table whose name is `N::NAME`, NUL-terminated;
        // called once, in the postmaster or a backend (this function's contract)
        unsafe { super::register_node(&self.scan, &self.registration) };
    }

    /// Whether [`Frame::register`] registered the node: the planner offers it only then.
    pub fn registered(&self) -> bool {
        self.registration.done()
    }

    pub(super) fn scan_methods(&'static self) -> *const pg_sys::CustomScanMethods {
        &self.scan
    }

    /// A path of the node, with its methods, its kind set and every other field zero.
    ///
    /// # Safety
    /// In a backend, while planning.
    pub(super) unsafe fn new_path(&'static self) -> *mut pg_sys::CustomPath {
        let methods = self
            .path
            .as_ref()
            .expect("a node whose paths are made elsewhere");
        // SAFETY: in a backend (this function's contract); palloc0 returns zeroed memory of a
        // CustomPath's size, or raises an ERROR, and the fields written are that path's
        unsafe {
            let p = pg_sys::palloc0(std::mem::size_of::<pg_sys::CustomPath>())
                as *mut pg_sys::CustomPath;
            (*p).path.type_ = pg_sys::NodeTag::T_CustomPath;
            (*p).path.pathtype = pg_sys::NodeTag::T_CustomScan;
            (*p).methods = methods;
            p
        }
    }

    /// The plan of the node's path `path`, with its methods and the path's flags, every
    /// other field zero.
    ///
    /// # Safety
    /// In a backend, while planning; `path` is a path of the node.
    pub(super) unsafe fn new_plan(
        &'static self,
        path: *const pg_sys::CustomPath,
    ) -> *mut pg_sys::CustomScan {
        // SAFETY: in a backend, and `path` a valid path of the node (this function's contract);
        // palloc0 returns zeroed memory of a CustomScan's size, or raises an ERROR
        unsafe {
            let cscan = pg_sys::palloc0(std::mem::size_of::<pg_sys::CustomScan>())
                as *mut pg_sys::CustomScan;
            (*cscan).scan.plan.type_ = pg_sys::NodeTag::T_CustomScan;
            (*cscan).flags = (*path).flags;
            (*cscan).methods = &self.scan;
            cscan
        }
    }

    /// `spec` as the `custom_private` of a path or plan of the node (`super::plan_data`).
    ///
    /// # Safety
    /// In a backend, in the memory context the plan is made in.
    pub(super) unsafe fn private(&'static self, spec: &N::Spec) -> *mut pg_sys::List {
        // SAFETY: in a backend, in the plan's memory context (this function's contract), what
        // `to_private` asks
        unsafe { super::plan_data::to_private(spec) }
    }

    /// The Rust value of `ps` if it is a node of this type; `None` for any other node.
    ///
    /// # Safety
    /// `ps` is a live executor node; the value is not otherwise borrowed.
    pub(super) unsafe fn state_of<'a>(
        &'static self,
        ps: *mut pg_sys::PlanState,
    ) -> Option<&'a mut N> {
        let node = ps as *mut pg_sys::CustomScanState;
        // SAFETY: `ps` is a live executor node (this function's contract), whose tag can be
        // read; its `methods` are read only once the tag says it is a CustomScanState
        let ours = unsafe {
            (*ps).type_ == pg_sys::NodeTag::T_CustomScanState
                && std::ptr::eq((*node).methods, &self.exec)
        };
        if !ours {
            return None;
        }
        // SAFETY: only `create_state::<N>` gives a node this frame's exec methods, so `node` is
        // a `NodeState<N>`; its value is not otherwise borrowed (this function's contract)
        Some(unsafe { state_of::<N>(node) })
    }
}

impl<N: Parallel> Frame<N> {
    /// With the parallel methods of [`Parallel`].
    pub const fn with_parallel(mut self) -> Frame<N> {
        self.exec.EstimateDSMCustomScan = Some(estimate_dsm::<N>);
        self.exec.InitializeDSMCustomScan = Some(initialize_dsm::<N>);
        self.exec.ReInitializeDSMCustomScan = Some(reinitialize_dsm::<N>);
        self.exec.InitializeWorkerCustomScan = Some(initialize_worker::<N>);
        self.exec.ShutdownCustomScan = Some(shutdown::<N>);
        self
    }
}

/// A node of type `N`: PostgreSQL's part, then the Rust value, placed there by [`own`] and
/// dropped by [`release`] (the node's end) or, if the query fails first, when the memory
/// context current at [`own`] is reset.
#[repr(C)]
struct NodeState<N> {
    css: pg_sys::CustomScanState,
    state: *mut N,
}

/// The memory-context reset callback [`own`] registers: drops the value behind `arg` if the
/// node did not end first. Not `#[pg_guard]`, like the access method's reset callbacks
/// (`am::scan::table`): it raises no ERROR itself, and dropping a node's value calls no
/// function that raises one (a reader hands its stripe to `read::keep`; a page reader frees
/// its buffer access strategy).
///
/// # Safety
/// `arg` is the field [`own`] was given, in memory the reset has not freed yet.
unsafe extern "C-unwind" fn drop_at<T>(arg: *mut std::ffi::c_void) {
    // SAFETY: `arg` is `own`'s field, still allocated (this function's contract): null, or
    // the Box `own` leaked
    unsafe { release(arg as *mut *mut T) };
}

/// Puts `value` behind `*field` (a field of a palloc'd node, so it lives as long as the
/// callback that may drop it).
///
/// # Safety
/// `field` is a writable field, with no value behind it yet, of memory allocated in the current
/// memory context (freed only after the context's reset callbacks ran).
unsafe fn own<T>(field: *mut *mut T, value: T) {
    // SAFETY: `field` is writable and in the current memory context (this function's
    // contract), which calls the callback, with `field`, before it frees that memory;
    // palloc0 returns zeroed memory of the callback's size, or raises an ERROR
    unsafe {
        *field = Box::into_raw(Box::new(value));
        let cb = pg_sys::palloc0(std::mem::size_of::<pg_sys::MemoryContextCallback>())
            as *mut pg_sys::MemoryContextCallback;
        (*cb).func = Some(drop_at::<T>);
        (*cb).arg = field as *mut std::ffi::c_void;
        pg_sys::MemoryContextRegisterResetCallback(pg_sys::CurrentMemoryContext, cb);
    }
}

/// Drops the value behind `*field`, if it is still there.
///
/// # Safety
/// `field` is a field [`own`] was given, still allocated; no reference to its value is live.
unsafe fn release<T>(field: *mut *mut T) {
    // SAFETY: `*field` is null or the Box `own` leaked, unborrowed (this function's
    // contract); it is nulled here, so the value is dropped once
    unsafe {
        if !(*field).is_null() {
            drop(Box::from_raw(*field));
            *field = std::ptr::null_mut();
        }
    }
}

/// The Rust value of `node`, a node of type `N`; an ERROR once it is dropped.
///
/// # Safety
/// `node` is a `NodeState<N>` made by [`create_state`], still allocated; the value is not
/// otherwise borrowed while the reference is used.
unsafe fn state_of<'a, N: CustomNode>(node: *mut pg_sys::CustomScanState) -> &'a mut N {
    // SAFETY: `node` is a live `NodeState<N>` (this function's contract)
    let state = unsafe { (*(node as *mut NodeState<N>)).state };
    if state.is_null() {
        pgrx::error!(
            "pg_columnar: {} used after it ended",
            N::NAME.to_string_lossy()
        );
    }
    // SAFETY: a non-null `state` is the Box `own` leaked, not yet released, and borrowed
    // nowhere else (this function's contract)
    unsafe { &mut *state }
}

/// The Rust value of `node` while it is there.
///
/// # Safety
/// As [`state_of`].
unsafe fn state_if_any<'a, N: CustomNode>(node: *mut pg_sys::CustomScanState) -> Option<&'a mut N> {
    // SAFETY: `node` is a live `NodeState<N>`, whose non-null `state` is `own`'s unreleased,
    // unborrowed Box (this function's contract)
    unsafe { (*(node as *mut NodeState<N>)).state.as_mut() }
}

/// `ExecScan` over the node's [`CustomNode::next`] and [`CustomNode::recheck`] (what
/// [`CustomNode::exec`] does unless the node says otherwise).
///
/// # Safety
/// `node` is a node of type `N`; the node's value is not borrowed.
pub(super) unsafe fn exec_scan<N: CustomNode>(
    node: *mut pg_sys::CustomScanState,
) -> *mut pg_sys::TupleTableSlot {
    // SAFETY: `node` is a node of type `N` (this function's contract), so the access and
    // recheck methods, which find its value, are given a `NodeState<N>` whose value is free
    unsafe { pg_sys::ExecScan(&mut (*node).ss, Some(next::<N>), Some(recheck::<N>)) }
}

/// The node's `PgcolScan` child (of a node [`CustomNode::ABOVE_SCAN`]).
///
/// # Safety
/// `node` is a begun node whose plan has a child.
pub(super) unsafe fn child_of(node: *mut pg_sys::CustomScanState) -> *mut pg_sys::PlanState {
    // SAFETY: `node` is a begun node (this function's contract), whose `custom_ps` is the list
    // `begin` made of its child's state, read at once
    unsafe { list::ptrs::<pg_sys::PlanState>((*node).custom_ps).next() }
        .expect("a node above a scan without its scan")
}

/// `CreateCustomScanState`: the node, with its Rust value behind it.
///
/// # Safety
/// PostgreSQL's contract: `cscan` is a plan of node `N` (its `methods` this frame's), in the
/// memory context of the query being started.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn create_state<N: CustomNode>(
    cscan: *mut pg_sys::CustomScan,
) -> *mut pg_sys::Node {
    // SAFETY: palloc0 returns zeroed memory of a `NodeState<N>`'s size, or raises an ERROR;
    // `cscan` is a valid plan (this function's contract)
    let (node, flags, private) = unsafe {
        let node = pg_sys::palloc0(std::mem::size_of::<NodeState<N>>()) as *mut NodeState<N>;
        (node, (*cscan).flags, (*cscan).custom_private)
    };
    // SAFETY: `node` was just allocated above, and nothing else refers to it yet
    let css = unsafe { &mut (*node).css };
    css.ss.ps.type_ = pg_sys::NodeTag::T_CustomScanState;
    css.flags = flags;
    css.methods = &N::frame().exec;
    if N::TABLE_ROWS {
        // rows are stored into the scan slot by the table's reader, which needs its slot type
        // SAFETY: the slot type is the table's static one, which outlives the node
        unsafe { crate::compat::set_custom_scan_slot_ops(css, crate::am::slot::ops()) };
    }
    // SAFETY: `private` is the `custom_private` of a plan of node `N` (this function's
    // contract), written by `Frame::private` or `plan_data::to_private`
    let spec =
        unsafe { super::plan_data::from_private::<N::Spec>(private, &N::NAME.to_string_lossy()) };
    // SAFETY: `cscan` is a plan of node `N`, and this the query's memory context (this
    // function's contract)
    let state = unsafe { N::create(cscan, spec) };
    // freed by `end`, or with the query's memory if the query fails
    // SAFETY: `node` was allocated in the current memory context, its `state` field zeroed
    unsafe { own(&raw mut (*node).state, state) };
    node as *mut pg_sys::Node
}

/// `BeginCustomScan`: the scan slot of a node of the table's rows, the child of a node above
/// a scan, then [`CustomNode::begin`].
///
/// # Safety
/// PostgreSQL's contract: `node` is a node `create_state::<N>` made, being begun by
/// `ExecInitCustomScan`, `estate` its executor state, `eflags` the executor's flags.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn begin<N: CustomNode>(
    node: *mut pg_sys::CustomScanState,
    estate: *mut pg_sys::EState,
    eflags: i32,
) {
    if N::TABLE_ROWS {
        // SAFETY: `node` is being begun, its scan slot made, and `estate` is its executor state
        // (this function's contract); the slot type is the table's static one
        unsafe { crate::compat::replace_custom_scan_slot(node, estate, crate::am::slot::ops()) };
    }
    if N::ABOVE_SCAN {
        // the plan's one custom child, its scan
        // SAFETY: `node`'s plan is a CustomScan of node `N` (this function's contract), whose
        // `custom_plans` holds the child's plan; the child is initialized in `estate`
        unsafe {
            let cscan = (*node).ss.ps.plan as *mut pg_sys::CustomScan;
            let plan = list::ptrs::<pg_sys::Plan>((*cscan).custom_plans)
                .next()
                .expect("a node above a scan without its scan");
            let child = pg_sys::ExecInitNode(plan, estate, eflags);
            (*node).custom_ps = list::from_nodes([child as *mut pg_sys::Node]);
        }
    }
    // SAFETY: `node` is a `NodeState<N>` (this function's contract) whose value nothing
    // borrows now; it is being begun, as `CustomNode::begin` asks
    unsafe { state_of::<N>(node).begin(node, estate, eflags) };
}

/// `ExecScan`'s access method: [`CustomNode::next`].
///
/// # Safety
/// `ss` is a begun node of type `N` whose value is not borrowed ([`exec_scan`] passes it).
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn next<N: CustomNode>(
    ss: *mut pg_sys::ScanState,
) -> *mut pg_sys::TupleTableSlot {
    let node = ss as *mut pg_sys::CustomScanState;
    // SAFETY: `node` is a begun `NodeState<N>` whose value is not borrowed (this function's
    // contract)
    unsafe { state_of::<N>(node).next(node) }
}

/// `ExecScan`'s recheck method: [`CustomNode::recheck`].
///
/// # Safety
/// As [`next`]; `slot` is a valid slot holding the EvalPlanQual test tuple (`ExecScan`'s).
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn recheck<N: CustomNode>(
    ss: *mut pg_sys::ScanState,
    slot: *mut pg_sys::TupleTableSlot,
) -> bool {
    let node = ss as *mut pg_sys::CustomScanState;
    // SAFETY: `node` is a begun `NodeState<N>` whose value is not borrowed, `slot` the test
    // tuple's (this function's contract)
    unsafe { state_of::<N>(node).recheck(node, slot) }
}

/// `ExecCustomScan`: [`CustomNode::exec`].
///
/// # Safety
/// PostgreSQL's contract: `node` is a node `create_state::<N>` made, begun, not ended.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn exec<N: CustomNode>(
    node: *mut pg_sys::CustomScanState,
) -> *mut pg_sys::TupleTableSlot {
    // SAFETY: `node` is a begun node of type `N` (this function's contract); no callback of it
    // runs now, so its value is not borrowed
    unsafe { N::exec(node) }
}

/// `EndCustomScan`: ends the child, then [`CustomNode::end`], then drops the value.
///
/// # Safety
/// PostgreSQL's contract: `node` is a node `create_state::<N>` made, begun, ended once.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn end<N: CustomNode>(node: *mut pg_sys::CustomScanState) {
    if N::ABOVE_SCAN {
        // SAFETY: `node` is begun (this function's contract), so it has its child, ended once
        unsafe { pg_sys::ExecEndNode(child_of(node)) };
    }
    // SAFETY: `node` is a `NodeState<N>` whose value, if not dropped, nothing borrows now
    // (this function's contract)
    if let Some(state) = unsafe { state_if_any::<N>(node) } {
        // SAFETY: as above; the node is ended once
        unsafe { state.end(node) };
    }
    // SAFETY: the `state` field is `own`'s, and the reference above is no longer used
    unsafe { release(&raw mut (*(node as *mut NodeState<N>)).state) };
}

/// `ReScanCustomScan`: [`CustomNode::rescan`], then the child's rescan and the scan's.
///
/// # Safety
/// PostgreSQL's contract: `node` is a node `create_state::<N>` made, begun, not ended.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn rescan<N: CustomNode>(node: *mut pg_sys::CustomScanState) {
    // SAFETY: `node` is a begun `NodeState<N>` whose value nothing borrows now (this
    // function's contract)
    unsafe { state_of::<N>(node).rescan() };
    if N::ABOVE_SCAN {
        // the child is never run through ExecProcNode, which would rescan it for changed
        // parameters: it is told about them here
        // SAFETY: `node` is begun (this function's contract): it has its child, and its
        // `chgParam` is null or a valid set
        unsafe {
            let child = child_of(node);
            if !(*node).ss.ps.chgParam.is_null() {
                pg_sys::UpdateChangedParamSet(child, (*node).ss.ps.chgParam);
            }
            pg_sys::ExecReScan(child);
        }
    }
    // SAFETY: `node` is a begun scan node (this function's contract)
    unsafe { pg_sys::ExecScanReScan(&mut (*node).ss) };
}

/// `ExplainCustomScan`: [`CustomNode::explain`].
///
/// # Safety
/// PostgreSQL's contract: `node` is a node `create_state::<N>` made, begun; `ancestors` and
/// `es` are EXPLAIN's.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn explain<N: CustomNode>(
    node: *mut pg_sys::CustomScanState,
    ancestors: *mut pg_sys::List,
    es: *mut pg_sys::ExplainState,
) {
    // SAFETY: `node` is a begun `NodeState<N>` whose value nothing borrows now, with
    // EXPLAIN's `ancestors` and `es` (this function's contract)
    unsafe { state_of::<N>(node).explain(node, ancestors, es) };
}

/// `EstimateDSMCustomScan`: [`Parallel::estimate_dsm`].
///
/// # Safety
/// PostgreSQL's contract: `node` is a begun node of type `N`, in the leader; `pcxt` the
/// parallel context being set up.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn estimate_dsm<N: Parallel>(
    node: *mut pg_sys::CustomScanState,
    pcxt: *mut pg_sys::ParallelContext,
) -> pg_sys::Size {
    // SAFETY: what `Parallel::estimate_dsm` asks is this function's contract
    unsafe { N::estimate_dsm(node, pcxt) }
}

/// `InitializeDSMCustomScan`: [`Parallel::initialize_dsm`].
///
/// # Safety
/// As [`estimate_dsm`]; `coordinate` points to the node's shared memory, of the size it
/// estimated.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn initialize_dsm<N: Parallel>(
    node: *mut pg_sys::CustomScanState,
    pcxt: *mut pg_sys::ParallelContext,
    coordinate: *mut std::ffi::c_void,
) {
    // SAFETY: `node` is a begun `NodeState<N>` whose value nothing borrows now; the rest of
    // `Parallel::initialize_dsm`'s contract is this function's
    unsafe { state_of::<N>(node).initialize_dsm(node, pcxt, coordinate) };
}

/// `ReInitializeDSMCustomScan`: [`Parallel::reinitialize_dsm`].
///
/// # Safety
/// As [`estimate_dsm`]; `coordinate` points to the node's shared memory, initialized by
/// [`initialize_dsm`].
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn reinitialize_dsm<N: Parallel>(
    node: *mut pg_sys::CustomScanState,
    pcxt: *mut pg_sys::ParallelContext,
    coordinate: *mut std::ffi::c_void,
) {
    // SAFETY: what `Parallel::reinitialize_dsm` asks is this function's contract
    unsafe { N::reinitialize_dsm(node, pcxt, coordinate) };
}

/// `InitializeWorkerCustomScan`: [`Parallel::initialize_worker`].
///
/// # Safety
/// PostgreSQL's contract: `node` is a begun node of type `N`, in a worker; `toc` the parallel
/// query's table of contents; `coordinate` the node's shared memory, which the leader
/// initialized.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn initialize_worker<N: Parallel>(
    node: *mut pg_sys::CustomScanState,
    toc: *mut pg_sys::shm_toc,
    coordinate: *mut std::ffi::c_void,
) {
    // SAFETY: `node` is a begun `NodeState<N>` whose value nothing borrows now; the rest of
    // `Parallel::initialize_worker`'s contract is this function's
    unsafe { state_of::<N>(node).initialize_worker(node, toc, coordinate) };
}

/// `ShutdownCustomScan`: [`Parallel::shutdown`], unless the value was dropped.
///
/// # Safety
/// PostgreSQL's contract: `node` is a begun node of type `N`, its shared memory (if any)
/// still mapped.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn shutdown<N: Parallel>(node: *mut pg_sys::CustomScanState) {
    // SAFETY: `node` is a `NodeState<N>` whose value, if not dropped, nothing borrows now, and
    // its shared memory is still mapped (this function's contract)
    if let Some(state) = unsafe { state_if_any::<N>(node) } {
        // SAFETY: as above
        unsafe { state.shutdown(node) };
    }
}

/// Asserts that each of `specs`, plan data of node `N`, reads back equal from the bytes
/// `super::plan_data` writes for it (each node's tests give specs of every shape). Plain
/// unit tests: `cargo test --lib` of this crate runs them without a server, given what
/// cargo needs for any build of it (`gate/lib.sh`: `PGRX_HOME`, `--ignore-rust-version` on
/// rustc 1.95, `--no-default-features --features pgNN`).
#[cfg(test)]
pub(super) fn assert_round_trip<N: CustomNode>(specs: &[N::Spec]) {
    let name = N::NAME.to_string_lossy();
    for spec in specs {
        let bytes = super::plan_data::encode(spec)
            .unwrap_or_else(|e| panic!("{name} plan data does not serialize ({e}): {spec:?}"));
        let back: N::Spec = super::plan_data::decode(&bytes).unwrap_or_else(|e| {
            panic!(
                "{name} plan data does not read back ({e}): {}",
                String::from_utf8_lossy(&bytes)
            )
        });
        assert_eq!(
            &back,
            spec,
            "{name} plan data read back otherwise: {}",
            String::from_utf8_lossy(&bytes)
        );
    }
}

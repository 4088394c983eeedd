//! `PgColumnarAgg`: aggregates without GROUP BY over a pg_columnar table, computed from whole
//! vectors instead of rows.
//!
//! Planned through `create_upper_paths_hook` for the grouping stage, beside PostgreSQL's own
//! Agg paths, when:
//! * the query aggregates one pg_columnar table (no join, no inheritance) read by
//!   `PgColumnarScan`, and the scan evaluates every qual itself (none left for the executor);
//! * there is no GROUP BY, grouping set, HAVING, window function, set-returning function,
//!   row lock, nor the min/max-by-index rewrite;
//! * every aggregate is `count(*)`, `count(col)`, or `sum`/`avg`/`min`/`max` of an int2, int4,
//!   int8, float4 or float8 column, as a plain column reference, without DISTINCT, ORDER BY
//!   or FILTER.
//!
//! The plan is a `CustomScan` whose child is the `PgColumnarScan` plan. The node never takes
//! rows from its child: it asks the child's reader for the selection of each vector and the
//! unpacked vectors of the aggregated columns (`ScanState::next_batch`), and adds them to the
//! codec's aggregate states (`codec::aggregate`), which follow PostgreSQL's transition
//! functions. Its scan tuple is the aggregates (`custom_scan_tlist`); the target list
//! (expressions over them) is projected by `ExecScan`. Serial only: no partial path yet.
//! `pg_columnar.enable_vectorized_agg = off` leaves aggregation to PostgreSQL.

use pg_columnar_codec::aggregate::{FloatOverflow, Function, Output, State};
use pg_columnar_codec::Kind;
use pgrx::pg_sys;

use super::list;

static mut PREV_UPPER_PATHS: pg_sys::create_upper_paths_hook_type = None;

static mut PATH_METHODS: pg_sys::CustomPathMethods = pg_sys::CustomPathMethods {
    CustomName: c"PgColumnarAgg".as_ptr(),
    PlanCustomPath: Some(plan_custom_path),
    ReparameterizeCustomPathByChild: None,
};

static mut SCAN_METHODS: pg_sys::CustomScanMethods =
    pg_sys::CustomScanMethods { CustomName: c"PgColumnarAgg".as_ptr(), CreateCustomScanState: Some(create_state) };

static mut EXEC_METHODS: pg_sys::CustomExecMethods = pg_sys::CustomExecMethods {
    CustomName: c"PgColumnarAgg".as_ptr(),
    BeginCustomScan: Some(begin),
    ExecCustomScan: Some(exec),
    EndCustomScan: Some(end),
    ReScanCustomScan: Some(rescan),
    MarkPosCustomScan: None,
    RestrPosCustomScan: None,
    EstimateDSMCustomScan: None,
    InitializeDSMCustomScan: None,
    ReInitializeDSMCustomScan: None,
    InitializeWorkerCustomScan: None,
    ShutdownCustomScan: None,
    ExplainCustomScan: Some(explain),
};

/// The vectorized aggregation's share of its input scan's cost: it takes no row from the
/// scan, so of the scan's cost only the reading and decoding remain (the per-row slot and
/// executor work go). Set from measurement: `sum(usage_user)` over 10 M TSBS rows took
/// 1.2–1.4 s through PostgreSQL's Agg and under a tenth of that here (docs/BENCHMARKS.md).
const SHARE_OF_SCAN_COST: f64 = 0.2;

pub unsafe fn install() {
    pg_sys::RegisterCustomScanMethods(&raw const SCAN_METHODS);
    PREV_UPPER_PATHS = pg_sys::create_upper_paths_hook;
    pg_sys::create_upper_paths_hook = Some(upper_paths);
}

/// One aggregate of the node: the function, the column it reads (0-based; none for
/// `count(*)`) and the column's codec kind.
#[derive(Debug, Clone, Copy, PartialEq)]
struct AggSpec {
    function: Function,
    column: Option<u16>,
    kind: Kind,
}

fn function_tag(f: Function) -> u8 {
    match f {
        Function::CountStar => 0,
        Function::Count => 1,
        Function::Sum => 2,
        Function::Avg => 3,
        Function::Min => 4,
        Function::Max => 5,
    }
}

fn function_of_tag(t: u8) -> Function {
    [Function::CountStar, Function::Count, Function::Sum, Function::Avg, Function::Min, Function::Max][t as usize]
}

fn specs_to_bytes(specs: &[AggSpec]) -> Vec<u8> {
    let mut out = Vec::new();
    for s in specs {
        out.push(function_tag(s.function));
        out.extend_from_slice(&s.column.map_or(-1i32, |c| c as i32).to_le_bytes());
        out.push(s.kind as u8);
    }
    out
}

fn specs_from_bytes(b: &[u8]) -> Vec<AggSpec> {
    b.chunks_exact(6)
        .map(|c| AggSpec {
            function: function_of_tag(c[0]),
            column: u16::try_from(i32::from_le_bytes(c[1..5].try_into().unwrap())).ok(),
            kind: Kind::from_tag(c[5]).expect("a kind written by the planner"),
        })
        .collect()
}

/// The built-in aggregate `aggfnoid` as computed here: the function and the argument type
/// (none: `count(*)`, or `count(any)`, which reads NULLs only). OIDs from pg_proc, the same
/// on every supported major version.
fn builtin(aggfnoid: u32) -> Option<(Function, Option<(pg_sys::Oid, Kind)>)> {
    use pg_sys::{FLOAT4OID, FLOAT8OID, INT2OID, INT4OID, INT8OID};
    let (f, ty) = match aggfnoid {
        2803 => return Some((Function::CountStar, None)),
        2147 => return Some((Function::Count, None)),
        2100 => (Function::Avg, INT8OID),
        2101 => (Function::Avg, INT4OID),
        2102 => (Function::Avg, INT2OID),
        2104 => (Function::Avg, FLOAT4OID),
        2105 => (Function::Avg, FLOAT8OID),
        2107 => (Function::Sum, INT8OID),
        2108 => (Function::Sum, INT4OID),
        2109 => (Function::Sum, INT2OID),
        2110 => (Function::Sum, FLOAT4OID),
        2111 => (Function::Sum, FLOAT8OID),
        2115 => (Function::Max, INT8OID),
        2116 => (Function::Max, INT4OID),
        2117 => (Function::Max, INT2OID),
        2119 => (Function::Max, FLOAT4OID),
        2120 => (Function::Max, FLOAT8OID),
        2131 => (Function::Min, INT8OID),
        2132 => (Function::Min, INT4OID),
        2133 => (Function::Min, INT2OID),
        2135 => (Function::Min, FLOAT4OID),
        2136 => (Function::Min, FLOAT8OID),
        _ => return None,
    };
    let kind = match ty {
        INT2OID => Kind::Int16,
        INT4OID => Kind::Int32,
        INT8OID => Kind::Int64,
        FLOAT4OID => Kind::Float32,
        _ => Kind::Float64,
    };
    Some((f, Some((ty, kind))))
}

/// The spec of `aggref` over relation `relid` (range table index), if computed here.
unsafe fn spec_of_aggref(aggref: *mut pg_sys::Aggref, relid: pg_sys::Index, natts: usize) -> Option<AggSpec> {
    let a = &*aggref;
    if a.agglevelsup != 0
        || a.aggkind != pg_sys::AGGKIND_NORMAL as std::ffi::c_char
        || !a.aggdistinct.is_null()
        || !a.aggorder.is_null()
        || !a.aggfilter.is_null()
        || a.aggsplit != pg_sys::AggSplit::AGGSPLIT_SIMPLE
    {
        return None;
    }
    let (function, arg) = builtin(a.aggfnoid.into())?;
    if function == Function::CountStar {
        return (a.aggstar && list::len(a.args) == 0).then_some(AggSpec { function, column: None, kind: Kind::Int64 });
    }
    if a.aggstar || list::len(a.args) != 1 {
        return None;
    }
    let te = list::ptrs::<pg_sys::TargetEntry>(a.args).next()?;
    let var = (*te).expr as *mut pg_sys::Var;
    if var.is_null()
        || (*var).xpr.type_ != pg_sys::NodeTag::T_Var
        || (*var).varno as pg_sys::Index != relid
        || (*var).varlevelsup != 0
        || (*var).varattno < 1
        || (*var).varattno as usize > natts
    {
        return None;
    }
    let column = Some((*var).varattno as u16 - 1);
    match arg {
        // count(col) reads the NULLs only: any column will do
        None => Some(AggSpec { function, column, kind: Kind::Int64 }),
        Some((ty, kind)) => ((*var).vartype == ty).then_some(AggSpec { function, column, kind }),
    }
}

unsafe fn is_custom_path_of(p: *mut pg_sys::Path, methods: *const pg_sys::CustomPathMethods) -> bool {
    (*p).type_ == pg_sys::NodeTag::T_CustomPath && std::ptr::eq((*(p as *mut pg_sys::CustomPath)).methods, methods)
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn upper_paths(
    root: *mut pg_sys::PlannerInfo,
    stage: pg_sys::UpperRelationKind::Type,
    input_rel: *mut pg_sys::RelOptInfo,
    output_rel: *mut pg_sys::RelOptInfo,
    extra: *mut std::ffi::c_void,
) {
    if let Some(prev) = PREV_UPPER_PATHS {
        prev(root, stage, input_rel, output_rel, extra);
    }
    if stage != pg_sys::UpperRelationKind::UPPERREL_GROUP_AGG || !super::ENABLE_VECTORIZED_AGG.get() || !super::ENABLE_CUSTOM_SCAN.get() {
        return;
    }
    if let Some(path) = agg_path(root, input_rel, output_rel) {
        pg_sys::add_path(output_rel, path as *mut pg_sys::Path);
    }
}

/// The path, if the query is one this node computes (see the module's comment).
unsafe fn agg_path(root: *mut pg_sys::PlannerInfo, input: *mut pg_sys::RelOptInfo, output: *mut pg_sys::RelOptInfo) -> Option<*mut pg_sys::CustomPath> {
    let parse = (*root).parse;
    if (*input).reloptkind != pg_sys::RelOptKind::RELOPT_BASEREL
        || !(*parse).groupClause.is_null()
        || !(*parse).groupingSets.is_null()
        || !(*parse).havingQual.is_null()
        || (*parse).hasWindowFuncs
        || (*parse).hasTargetSRFs
        || !(*parse).rowMarks.is_null()
        || !(*root).minmax_aggs.is_null()
    {
        return None;
    }
    let relid = (*input).relid;
    let rte = *(*root).simple_rte_array.add(relid as usize);
    if (*rte).rtekind != pg_sys::RTEKind::RTE_RELATION || (*rte).inh {
        return None;
    }
    let scan = list::ptrs::<pg_sys::Path>((*input).pathlist).find(|&p| is_custom_path_of(p, super::plan::path_methods()) && (*p).param_info.is_null())?;
    if !super::plan::every_qual_vectorized(input) {
        return None;
    }
    let natts = {
        let relation = pg_sys::RelationIdGetRelation((*rte).relid);
        if relation.is_null() {
            return None;
        }
        let n = (*(*relation).rd_att).natts as usize;
        pg_sys::RelationClose(relation);
        n
    };
    // every aggregate of the target is one of ours, and nothing else reads the rows
    let target = (*output).reltarget;
    for e in list::nodes((*target).exprs) {
        let found = pg_sys::pull_var_clause(e, (pg_sys::PVC_INCLUDE_AGGREGATES | pg_sys::PVC_INCLUDE_PLACEHOLDERS) as i32);
        for n in list::nodes(found) {
            if (*n).type_ != pg_sys::NodeTag::T_Aggref || spec_of_aggref(n as *mut pg_sys::Aggref, relid, natts).is_none() {
                return None;
            }
        }
    }
    let p = pg_sys::palloc0(std::mem::size_of::<pg_sys::CustomPath>()) as *mut pg_sys::CustomPath;
    let path = &mut (*p).path;
    path.type_ = pg_sys::NodeTag::T_CustomPath;
    path.pathtype = pg_sys::NodeTag::T_CustomScan;
    path.parent = output;
    path.pathtarget = target;
    path.parallel_safe = false;
    path.rows = 1.0;
    path.startup_cost = (*scan).startup_cost + ((*scan).total_cost - (*scan).startup_cost) * SHARE_OF_SCAN_COST;
    path.total_cost = path.startup_cost;
    (*p).custom_paths = list::from_nodes([scan as *mut pg_sys::Node]);
    (*p).methods = &raw const PATH_METHODS;
    Some(p)
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn plan_custom_path(
    _root: *mut pg_sys::PlannerInfo,
    _rel: *mut pg_sys::RelOptInfo,
    best_path: *mut pg_sys::CustomPath,
    tlist: *mut pg_sys::List,
    _clauses: *mut pg_sys::List,
    custom_plans: *mut pg_sys::List,
) -> *mut pg_sys::Plan {
    let child = list::ptrs::<pg_sys::CustomScan>(custom_plans).next().expect("PgColumnarAgg without its scan");
    let relid = (*child).scan.scanrelid;
    let scan_path = list::ptrs::<pg_sys::Path>((*best_path).custom_paths).next().unwrap();
    let natts = (*(*scan_path).parent).max_attr as usize;
    // the aggregates, each once: the node's scan tuple, which the target list's Aggrefs are
    // turned into references to (setrefs matches them by equality)
    let mut aggrefs: Vec<*mut pg_sys::Node> = Vec::new();
    for te in list::ptrs::<pg_sys::TargetEntry>(tlist) {
        let found = pg_sys::pull_var_clause((*te).expr as *mut pg_sys::Node, (pg_sys::PVC_INCLUDE_AGGREGATES | pg_sys::PVC_INCLUDE_PLACEHOLDERS) as i32);
        for n in list::nodes(found) {
            if !aggrefs.iter().any(|&a| pg_sys::equal(a as *const std::ffi::c_void, n as *const std::ffi::c_void)) {
                aggrefs.push(n);
            }
        }
    }
    let specs: Vec<AggSpec> = aggrefs
        .iter()
        .map(|&a| spec_of_aggref(a as *mut pg_sys::Aggref, relid, natts).expect("the path checked every aggregate"))
        .collect();
    let scan_tlist = list::from_nodes(aggrefs.iter().enumerate().map(|(i, &a)| {
        let copy = pg_sys::copyObjectImpl(a as *const std::ffi::c_void) as *mut pg_sys::Expr;
        pg_sys::makeTargetEntry(copy, (i + 1) as pg_sys::AttrNumber, std::ptr::null_mut(), false) as *mut pg_sys::Node
    }));
    let cscan = pg_sys::palloc0(std::mem::size_of::<pg_sys::CustomScan>()) as *mut pg_sys::CustomScan;
    (*cscan).scan.plan.type_ = pg_sys::NodeTag::T_CustomScan;
    (*cscan).scan.plan.targetlist = tlist;
    (*cscan).scan.scanrelid = 0;
    (*cscan).custom_plans = custom_plans;
    (*cscan).custom_scan_tlist = scan_tlist;
    (*cscan).flags = (*best_path).flags;
    (*cscan).methods = &raw const SCAN_METHODS;
    let bytes = pgrx::rust_byte_slice_to_bytea(&specs_to_bytes(&specs)).into_pg();
    let konst = pg_sys::makeConst(pg_sys::BYTEAOID, -1, pg_sys::InvalidOid, -1, pg_sys::Datum::from(bytes), false, false);
    (*cscan).custom_private = list::from_nodes([konst as *mut pg_sys::Node]);
    cscan as *mut pg_sys::Plan
}

unsafe fn specs_of(cscan: *const pg_sys::CustomScan) -> Vec<AggSpec> {
    let konst = list::nodes((*cscan).custom_private).next().expect("PgColumnarAgg plan without its spec") as *mut pg_sys::Const;
    specs_from_bytes(pgrx::varlena::varlena_to_byte_slice((*konst).constvalue.cast_mut_ptr()))
}

#[repr(C)]
struct NodeState {
    css: pg_sys::CustomScanState,
    /// The aggregates were computed and their row returned (until a rescan).
    done: bool,
    vectors: u64,
    rows: u64,
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn create_state(cscan: *mut pg_sys::CustomScan) -> *mut pg_sys::Node {
    let node = pg_sys::palloc0(std::mem::size_of::<NodeState>()) as *mut NodeState;
    (*node).css.ss.ps.type_ = pg_sys::NodeTag::T_CustomScanState;
    (*node).css.flags = (*cscan).flags;
    (*node).css.methods = &raw const EXEC_METHODS;
    node as *mut pg_sys::Node
}

unsafe fn child_of(node: *mut pg_sys::CustomScanState) -> *mut pg_sys::PlanState {
    list::ptrs::<pg_sys::PlanState>((*node).custom_ps).next().expect("PgColumnarAgg without its scan")
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn begin(node: *mut pg_sys::CustomScanState, estate: *mut pg_sys::EState, eflags: i32) {
    let cscan = (*node).ss.ps.plan as *mut pg_sys::CustomScan;
    let child_plan = list::ptrs::<pg_sys::Plan>((*cscan).custom_plans).next().expect("PgColumnarAgg without its scan");
    let child = pg_sys::ExecInitNode(child_plan, estate, eflags);
    (*node).custom_ps = list::from_nodes([child as *mut pg_sys::Node]);
}

fn overflow() -> ! {
    pgrx::ereport!(ERROR, pgrx::PgSqlErrorCode::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE, "value out of range: overflow");
}

/// A numeric Datum of an exact integer.
unsafe fn numeric_of(v: i128) -> pg_sys::Datum {
    let text = std::ffi::CString::new(v.to_string()).unwrap();
    let args = [Some(pg_sys::Datum::from(text.as_ptr())), Some(pg_sys::Datum::from(pg_sys::InvalidOid)), Some(pg_sys::Datum::from(-1i32))];
    pgrx::fcinfo::direct_function_call_as_datum(pg_sys::numeric_in, &args).expect("numeric_in returns a value")
}

unsafe fn datum_of(o: Output) -> (pg_sys::Datum, bool) {
    let d = match o {
        Output::Null => return (pg_sys::Datum::from(0), true),
        Output::Int8(v) => pg_sys::Datum::from(v),
        Output::Int4(v) => pg_sys::Datum::from(v),
        Output::Int2(v) => pg_sys::Datum::from(v),
        Output::Float8(v) => pg_sys::Datum::from(v.to_bits()),
        Output::Float4(v) => pg_sys::Datum::from(v.to_bits()),
        Output::Numeric(v) => numeric_of(v),
        // what int8_avg and numeric_avg return: numeric_div of the sum by the count
        Output::NumericRatio(sum, n) => {
            let args = [Some(numeric_of(sum)), Some(numeric_of(n as i128))];
            pgrx::fcinfo::direct_function_call_as_datum(pg_sys::numeric_div, &args).expect("numeric_div returns a value")
        }
    };
    (d, false)
}

/// Computes the aggregates from the child's vectors into the scan slot.
unsafe fn compute(node: *mut NodeState) -> *mut pg_sys::TupleTableSlot {
    let css = &mut (*node).css;
    let cscan = css.ss.ps.plan as *mut pg_sys::CustomScan;
    let specs = specs_of(cscan);
    let child = child_of(css);
    let instr = (*child).instrument;
    if !instr.is_null() {
        pg_sys::InstrStartNode(instr);
    }
    let (scan, child_slot) = super::node::batch_source(child).expect("PgColumnarAgg over a PgColumnarScan");
    let mut states: Vec<State> = specs.iter().map(|s| State::new(s.function, s.kind).expect("the planner checked the aggregate")).collect();
    let mut columns: Vec<usize> = specs.iter().filter_map(|s| s.column.map(|c| c as usize)).collect();
    columns.sort_unstable();
    columns.dedup();
    let (mut vectors, mut rows) = (0u64, 0u64);
    let rel = scan.rel;
    while scan.next_batch(child_slot, &columns, &mut |selection, lookup| {
        vectors += 1;
        rows += selection.count() as u64;
        for (spec, state) in specs.iter().zip(states.iter_mut()) {
            let Some(c) = spec.column else {
                state.add_rows(selection.count());
                continue;
            };
            let Some((u, ctx)) = lookup(c as usize) else {
                // a dropped column cannot be aggregated; this is a column of the relation
                crate::storage::corrupt(rel, format!("column {} has no vector to aggregate", c + 1));
            };
            match state.add(u, &ctx, selection) {
                Some(Ok(())) => {}
                Some(Err(FloatOverflow)) => overflow(),
                None if spec.function == Function::Count => unreachable!("count reads NULLs only"),
                None => crate::storage::corrupt(rel, format!("column {} holds values that are not numbers", c + 1)),
            }
        }
    }) {}
    if !instr.is_null() {
        pg_sys::InstrStopNode(instr, rows as f64);
    }
    (*node).vectors += vectors;
    (*node).rows += rows;
    let slot = css.ss.ss_ScanTupleSlot;
    pg_sys::ExecClearTuple(slot);
    let values = std::slice::from_raw_parts_mut((*slot).tts_values, specs.len());
    let nulls = std::slice::from_raw_parts_mut((*slot).tts_isnull, specs.len());
    for (i, (spec, state)) in specs.iter().zip(&states).enumerate() {
        (values[i], nulls[i]) = datum_of(state.finish(spec.function, spec.kind));
    }
    pg_sys::ExecStoreVirtualTuple(slot);
    slot
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn next(ss: *mut pg_sys::ScanState) -> *mut pg_sys::TupleTableSlot {
    let node = ss as *mut NodeState;
    if (*node).done {
        return pg_sys::ExecClearTuple((*ss).ss_ScanTupleSlot);
    }
    (*node).done = true;
    compute(node)
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn recheck(_ss: *mut pg_sys::ScanState, _slot: *mut pg_sys::TupleTableSlot) -> bool {
    true
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn exec(node: *mut pg_sys::CustomScanState) -> *mut pg_sys::TupleTableSlot {
    pg_sys::ExecScan(&mut (*node).ss, Some(next), Some(recheck))
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn end(node: *mut pg_sys::CustomScanState) {
    pg_sys::ExecEndNode(child_of(node));
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn rescan(node: *mut pg_sys::CustomScanState) {
    (*(node as *mut NodeState)).done = false;
    let child = child_of(node);
    // the child is never run through ExecProcNode, which would rescan it for changed
    // parameters: tell it about them and rescan it here
    if !(*node).ss.ps.chgParam.is_null() {
        pg_sys::UpdateChangedParamSet(child, (*node).ss.ps.chgParam);
    }
    pg_sys::ExecReScan(child);
    pg_sys::ExecScanReScan(&mut (*node).ss);
}

fn function_name(f: Function) -> &'static str {
    match f {
        Function::CountStar | Function::Count => "count",
        Function::Sum => "sum",
        Function::Avg => "avg",
        Function::Min => "min",
        Function::Max => "max",
    }
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn explain(node: *mut pg_sys::CustomScanState, _ancestors: *mut pg_sys::List, es: *mut pg_sys::ExplainState) {
    let cscan = (*node).ss.ps.plan as *mut pg_sys::CustomScan;
    let child = list::ptrs::<pg_sys::CustomScan>((*cscan).custom_plans).next().unwrap();
    let rte = list::ptrs::<pg_sys::RangeTblEntry>((*(*es).pstmt).rtable).nth((*child).scan.scanrelid as usize - 1).unwrap();
    let reloid = (*rte).relid;
    let names: Vec<String> = specs_of(cscan)
        .iter()
        .map(|s| match s.column {
            None => "count(*)".to_string(),
            Some(c) => {
                let name = pg_sys::get_attname(reloid, c as pg_sys::AttrNumber + 1, false);
                format!("{}({})", function_name(s.function), std::ffi::CStr::from_ptr(name).to_string_lossy())
            }
        })
        .collect();
    let text = std::ffi::CString::new(names.join(", ")).unwrap();
    pg_sys::ExplainPropertyText(c"Vectorized Aggregates".as_ptr(), text.as_ptr(), es);
    if (*es).analyze {
        let n = node as *mut NodeState;
        let text = std::ffi::CString::new(format!("{} vectors, {} rows", (*n).vectors, (*n).rows)).unwrap();
        pg_sys::ExplainPropertyText(c"Aggregated".as_ptr(), text.as_ptr(), es);
    }
}

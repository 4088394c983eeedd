//! `PgcolAgg`: aggregates over a pg_columnar table, with or without GROUP BY, computed
//! from whole vectors instead of rows.
//!
//! Planned through `create_upper_paths_hook` for the grouping stage, beside PostgreSQL's own
//! Agg paths, when:
//! * the query aggregates one pg_columnar table (no join, no inheritance) read by
//!   `PgcolScan`, and the scan evaluates every qual itself (none left for the executor);
//! * there is no grouping set, window function, set-returning function, row lock, nor the
//!   min/max-by-index rewrite; HAVING has no subquery;
//! * every GROUP BY expression is a key `group::key_spec` computes (at most
//!   `codec::group::MAX_KEYS` of them), and the groups expected fit in the memory the node
//!   may use (`group_memory_limit`);
//! * every aggregate, in the target list and in HAVING, is `count(*)`, `count(col)`, or
//!   `sum`/`avg`/`min`/`max` of an int2, int4, int8, float4 or float8 column, or `min`/`max`
//!   of a date, timestamp or timestamptz column, as a plain column reference, without
//!   DISTINCT or ORDER BY, with a FILTER (WHERE ...) only if it is a qual the scan could
//!   evaluate itself (its kernels then select the aggregate's rows within each vector).
//!
//! The plan is a `CustomScan` whose child is the `PgcolScan` plan. The node never takes
//! rows from its child: it asks the child's reader for the selection of each vector and the
//! unpacked vectors of the key and aggregated columns (`VectorScan::next_batch`), numbers
//! each selected row's group (`codec::group::GroupTable`) and adds the rows to their groups'
//! aggregate states (`codec::aggregate`), which follow PostgreSQL's transition functions.
//! Its scan tuple is the keys then the aggregates (`custom_scan_tlist`); HAVING is its qual
//! and the target list (expressions over keys and aggregates) its projection, both evaluated
//! by `ExecScan`. Groups come out in the order they were first met; ORDER BY sorts above.
//!
//! Beside that:
//! * without GROUP BY or FILTER, stripes and vectors the quals select entirely are answered
//!   from their metadata where every aggregate can be (`MetadataStates`);
//! * with one monotone key and `ORDER BY key DESC LIMIT n`, only the stripes that can hold
//!   the first `n` groups are read (`top_stripes`);
//! * in a parallel plan the node is the partial aggregation under PostgreSQL's Gather and
//!   Finalize (`parallel_path`): each process aggregates the stripes its scan takes and
//!   returns transition states (`partial_datum_of`), which PostgreSQL's combine functions
//!   join; int8 sum and avg, whose states are PostgreSQL-internal, stay serial;
//! * over a partitioned table the node is each pg_columnar partition's partial aggregation
//!   under an Append and PostgreSQL's Finalize (`partitions_path`), or, for `count(DISTINCT
//!   col)` without GROUP BY, each partition's distinct values of the column under
//!   PostgreSQL's Aggregate (`distinct_partitions_path`).
//!
//! `pg_columnar.enable_vectorized_agg = off` leaves aggregation to PostgreSQL.

use pg_columnar_codec::aggregate::{
    answer_from_metadata, ColumnFacts, FloatOverflow, Function, GroupRuns, GroupStates, MetaAnswer,
    Output, State,
};
use pg_columnar_codec::filter::Selection;
use pg_columnar_codec::group::{GroupTable, KeyColumn};
use pg_columnar_codec::stripe::{StoredZone, StripeDirectory, StripeSummary};
use pg_columnar_codec::Kind;
use pgrx::pg_sys;

use super::filter::RuntimeFilter;
use super::frame::{CustomNode, Frame};
use super::group::{KeyReader, KeySpec};
use super::list;
use super::quals::{SkipExpr, Translator};
use crate::am::scan::{ColumnLookup, MetadataAnswer, VectorFilter, VectorScan, VectorSkip};

static mut PREV_UPPER_PATHS: pg_sys::create_upper_paths_hook_type = None;

/// PgcolAgg's method tables and their registration (`super::frame`).
static FRAME: Frame<Exec> = Frame::new().with_path(plan_custom_path);

/// The vectorized aggregation's share of its input scan's cost: it takes no row from the
/// scan, so of the scan's cost only the reading and decoding remain (the per-row slot and
/// executor work go). Set from measurement: `sum(usage_user)` over 10 M TSBS rows took
/// 1.2–1.4 s through PostgreSQL's Agg and under a tenth of that here (docs/BENCHMARKS.md).
const SHARE_OF_SCAN_COST: f64 = 0.2;

/// Of the scan's cost, what remains when every row is answered from metadata (`count(*)` over
/// 10 M rows reads 77 catalog rows and no stripe: 3.5 ms against 1.1 s for heap).
const METADATA_SHARE_OF_SCAN_COST: f64 = 0.005;

/// Registers PgcolAgg's plan methods and installs its `create_upper_paths_hook`.
///
/// # Safety
/// Called once per backend, from `_PG_init` (through `exec::install`).
pub unsafe fn install() {
    // SAFETY: once per backend, from `_PG_init`, in the backend's one thread (this function's
    // contract): no hook runs meanwhile to read PREV_UPPER_PATHS or the hook variable
    unsafe {
        FRAME.register();
        PREV_UPPER_PATHS = pg_sys::create_upper_paths_hook;
        pg_sys::create_upper_paths_hook = Some(upper_paths);
    }
}

/// One aggregate of the node: the function, the column it reads (0-based; none for
/// `count(*)`), the column's codec kind, and its FILTER (WHERE ...) as a vectorized filter
/// over the scan's columns (its values the plan's `custom_exprs`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct AggSpec {
    function: Function,
    column: Option<u16>,
    kind: Kind,
    filter: Option<SkipExpr>,
}

/// The built-in aggregate `aggfnoid` as computed here: the function and the argument type
/// (none: `count(*)`, or `count(any)`, which reads NULLs only). OIDs from pg_proc, the same
/// on every supported major version.
fn builtin(aggfnoid: u32) -> Option<(Function, Option<(pg_sys::Oid, Kind)>)> {
    use pg_sys::{
        DATEOID, FLOAT4OID, FLOAT8OID, INT2OID, INT4OID, INT8OID, TIMESTAMPOID, TIMESTAMPTZOID,
    };
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
        2122 => (Function::Max, DATEOID),
        2126 => (Function::Max, TIMESTAMPOID),
        2127 => (Function::Max, TIMESTAMPTZOID),
        2138 => (Function::Min, DATEOID),
        2142 => (Function::Min, TIMESTAMPOID),
        2143 => (Function::Min, TIMESTAMPTZOID),
        2129 => (Function::Max, pg_sys::TEXTOID),
        2145 => (Function::Min, pg_sys::TEXTOID),
        _ => return None,
    };
    Some((f, Some((ty, kind_of(ty)?))))
}

/// The kind whose values a column of type `ty` is read as: dates and timestamps are
/// integers that order as their values (infinities at the ends), text and varchar bytes.
fn kind_of(ty: pg_sys::Oid) -> Option<Kind> {
    use pg_sys::{
        DATEOID, FLOAT4OID, FLOAT8OID, INT2OID, INT4OID, INT8OID, TEXTOID, TIMESTAMPOID,
        TIMESTAMPTZOID, VARCHAROID,
    };
    Some(match ty {
        INT2OID => Kind::Int16,
        INT4OID | DATEOID => Kind::Int32,
        INT8OID | TIMESTAMPOID | TIMESTAMPTZOID => Kind::Int64,
        FLOAT4OID => Kind::Float32,
        FLOAT8OID => Kind::Float64,
        TEXTOID | VARCHAROID => Kind::Bytes,
        _ => return None,
    })
}

/// The kind whose values `count(DISTINCT col)` of a column of `vartype` compares, if it is
/// computed here: integers, dates and timestamps by value, floats by float equality, text and
/// varchar bytewise, which is the equality of a deterministic `collation`.
///
/// # Safety
/// In a transaction (a collation lookup).
unsafe fn distinct_kind(vartype: pg_sys::Oid, collation: pg_sys::Oid) -> Option<Kind> {
    let kind = kind_of(vartype)?;
    let bytewise = || {
        // SAFETY: a syscache lookup of a valid collation (checked first), in a transaction
        // (the contract)
        collation != pg_sys::InvalidOid
            && unsafe { pg_sys::get_collation_isdeterministic(collation) }
    };
    (kind != Kind::Bytes || bytewise()).then_some(kind)
}

/// The spec of `aggref` over relation `relid` (range table index), if computed here.
/// A FILTER clause's vectorized filter: it must translate exactly, every leaf with a kernel.
/// Kernels call no function, so being above a security barrier does not matter.
///
/// # Safety
/// `filter` is null or a valid expression of the query being planned, in a transaction, in
/// the planner's memory context (what [`Translator::translate`] asks).
unsafe fn filter_of(
    filter: *mut pg_sys::Expr,
    translator: &mut Translator,
) -> Option<Option<SkipExpr>> {
    if filter.is_null() {
        return Some(None);
    }
    // SAFETY: `filter` is a valid expression of the query being planned (this function's
    // contract), what `translate_qual` asks
    match unsafe { translator.translate_qual(filter as *mut pg_sys::Node, false) } {
        Some((e, true)) if super::ENABLE_VECTORIZED_FILTER.get() => Some(Some(e)),
        _ => None,
    }
}

/// The spec of `aggref` over relation `relid` (range table index), if computed here; its
/// FILTER's values go to `translator`.
///
/// # Safety
/// `aggref` is a valid Aggref of the query being planned, in a transaction, in the planner's
/// memory context.
unsafe fn spec_of_aggref(
    aggref: *mut pg_sys::Aggref,
    relid: pg_sys::Index,
    natts: usize,
    translator: &mut Translator,
) -> Option<AggSpec> {
    // SAFETY: `aggref` is a valid Aggref (this function's contract), not changed while planning
    let a = unsafe { &*aggref };
    let distinct = !a.aggdistinct.is_null();
    if a.agglevelsup != 0
        || a.aggkind != pg_sys::AGGKIND_NORMAL as std::ffi::c_char
        || !a.aggorder.is_null()
        || !matches!(
            a.aggsplit,
            pg_sys::AggSplit::AGGSPLIT_SIMPLE | pg_sys::AggSplit::AGGSPLIT_INITIAL_SERIAL
        )
        // a DISTINCT aggregate has no partial form
        || (distinct && a.aggsplit != pg_sys::AggSplit::AGGSPLIT_SIMPLE)
    {
        return None;
    }
    let (function, arg) = match builtin(a.aggfnoid.into())? {
        // count(DISTINCT col): the kind comes from the column (below)
        (Function::Count, None) if distinct => (Function::CountDistinct, None),
        _ if distinct => return None,
        f => f,
    };
    // a partial aggregate returns its transition state: those of int8 sum and avg are
    // PostgreSQL's internal ones, not made here
    if a.aggsplit != pg_sys::AggSplit::AGGSPLIT_SIMPLE
        && matches!(
            (function, arg),
            (Function::Sum | Function::Avg, Some((pg_sys::INT8OID, _)))
        )
    {
        return None;
    }
    if function == Function::CountStar {
        // SAFETY: `a.args` is the Aggref's List of arguments (this function's contract)
        if !a.aggstar || unsafe { list::len(a.args) } != 0 {
            return None;
        }
        return Some(AggSpec {
            function,
            column: None,
            kind: Kind::Int64,
            // SAFETY: the FILTER is null or a valid expression of the query being planned, as
            // `aggref` is (this function's contract)
            filter: unsafe { filter_of(a.aggfilter, translator) }?,
        });
    }
    // SAFETY: `a.args` is the Aggref's List of arguments (this function's contract)
    if a.aggstar || unsafe { list::len(a.args) } != 1 {
        return None;
    }
    // SAFETY: `a.args` is the Aggref's List of one TargetEntry, whose `expr` is a valid node
    let mut var = unsafe {
        let te = list::ptrs::<pg_sys::TargetEntry>(a.args).next()?;
        (*te).expr as *mut pg_sys::Var
    };
    // text min/max compare bytewise: only under a collation that orders so; a varchar
    // column, or one given a COLLATE, comes relabelled as text
    if matches!(arg, Some((pg_sys::TEXTOID, _))) {
        if !crate::compat::collation_orders_bytewise(a.inputcollid) {
            return None;
        }
        let node = var as *mut pg_sys::Node;
        // SAFETY: `node` is null or the argument's valid expression, read as a RelabelType,
        // and its `arg` as a Var, only once their tags say so
        unsafe {
            if !node.is_null() && (*node).type_ == pg_sys::NodeTag::T_RelabelType {
                let inner = (*(node as *mut pg_sys::RelabelType)).arg as *mut pg_sys::Var;
                if !inner.is_null()
                    && (*inner).xpr.type_ == pg_sys::NodeTag::T_Var
                    && [pg_sys::TEXTOID, pg_sys::VARCHAROID].contains(&(*inner).vartype)
                {
                    var = inner;
                }
            }
        }
    }
    // SAFETY: `var` is null or a valid expression node of the argument, read as a Var only
    // once its tag says so
    let (column, vartype) = unsafe {
        if var.is_null()
            || (*var).xpr.type_ != pg_sys::NodeTag::T_Var
            || (*var).varno as pg_sys::Index != relid
            || (*var).varlevelsup != 0
            || (*var).varattno < 1
            || (*var).varattno as usize > natts
        {
            return None;
        }
        (Some((*var).varattno as u16 - 1), (*var).vartype)
    };
    let kind = match arg {
        None if function == Function::CountDistinct => {
            // SAFETY: a collation lookup, in a transaction (this function's contract)
            unsafe { distinct_kind(vartype, a.inputcollid) }?
        }
        // count(col) reads the NULLs only: any column will do
        None => Kind::Int64,
        Some((pg_sys::TEXTOID, kind))
            if [pg_sys::TEXTOID, pg_sys::VARCHAROID].contains(&vartype) =>
        {
            kind
        }
        Some((ty, kind)) if vartype == ty => kind,
        Some(_) => return None,
    };
    Some(AggSpec {
        function,
        column,
        kind,
        // SAFETY: the FILTER is null or a valid expression of the query being planned, as
        // `aggref` is (this function's contract)
        filter: unsafe { filter_of(a.aggfilter, translator) }?,
    })
}

/// The `create_upper_paths_hook`: PgcolAgg's paths for the grouping stage.
///
/// # Safety
/// PostgreSQL's contract: the arguments are the planner's, valid while planning; for the
/// grouping stage `extra` is its `GroupPathExtraData` (or null).
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn upper_paths(
    root: *mut pg_sys::PlannerInfo,
    stage: pg_sys::UpperRelationKind::Type,
    input_rel: *mut pg_sys::RelOptInfo,
    output_rel: *mut pg_sys::RelOptInfo,
    extra: *mut std::ffi::c_void,
) {
    // SAFETY: PREV_UPPER_PATHS is written only from `_PG_init` and read in the backend's one
    // thread; the previous hook gets PostgreSQL's own arguments
    unsafe {
        if let Some(prev) = PREV_UPPER_PATHS {
            prev(root, stage, input_rel, output_rel, extra);
        }
    }
    if stage != pg_sys::UpperRelationKind::UPPERREL_GROUP_AGG
        || !super::ENABLE_VECTORIZED_AGG.get()
        || !super::ENABLE_CUSTOM_SCAN.get()
        || !FRAME.registered()
        || !super::node::FRAME.registered()
    {
        return;
    }
    // a partition's grouping (PostgreSQL's partitionwise aggregation) has HAVING and the
    // query's expressions in the partition's columns only in `extra`: the partitions' plan
    // is `partitions_path`'s, made at the partitioned table's grouping
    // SAFETY: `input_rel` is the planner's, while planning (this function's contract)
    if unsafe { (*input_rel).reloptkind } != pg_sys::RelOptKind::RELOPT_BASEREL {
        return;
    }
    let extra = extra as *mut pg_sys::GroupPathExtraData;
    // SAFETY: `output_rel` is the grouping relation, with its target, `input_rel` its input
    // and `root` the planner's, while planning; at the grouping stage `extra` is null or its
    // `GroupPathExtraData` (this function's contract)
    let paths = unsafe {
        [
            agg_path(
                root,
                input_rel,
                output_rel,
                (*output_rel).reltarget,
                false,
                false,
            )
            .map(|p| p as *mut pg_sys::Path),
            parallel_path(root, input_rel, output_rel, extra),
            partitions_path(root, input_rel, output_rel, extra),
            distinct_partitions_path(root, input_rel, output_rel),
        ]
    };
    for path in paths.into_iter().flatten() {
        // SAFETY: as above; `path` is a path of `output_rel`, just made
        unsafe { pg_sys::add_path(output_rel, path) };
    }
}

/// The plan of a partitioned table's grouping, partition by partition: each partition's
/// partial aggregation (this node over a pg_columnar partition's scan, PostgreSQL's
/// partial HashAggregate over another's cheapest path), an Append of them, and PostgreSQL's
/// Finalize Aggregate above, which combines the partitions' states (and evaluates HAVING).
/// It is the plan PostgreSQL's partial partitionwise aggregation makes, which reaches no
/// hook of ours (PostgreSQL asks extensions for no partial grouping paths), so it is made
/// here, with the partial target PostgreSQL made for its own partial paths, translated to
/// each partition's columns. `None` unless the input is a partitioned table whose live
/// partitions are all leaves and at least one is planned with this node.
///
/// # Safety
/// As [`parallel_path`].
unsafe fn partitions_path(
    root: *mut pg_sys::PlannerInfo,
    input: *mut pg_sys::RelOptInfo,
    output: *mut pg_sys::RelOptInfo,
    extra: *mut pg_sys::GroupPathExtraData,
) -> Option<*mut pg_sys::Path> {
    // SAFETY: `input` and `output` are valid relations, and `extra`, read only when not null,
    // the grouping's data (this function's contract)
    if unsafe { extra.is_null() || (*extra).flags & pg_sys::GROUPING_CAN_PARTIAL_AGG as i32 == 0 } {
        return None;
    }
    // SAFETY: `input` is the planner's, at the grouping stage (this function's contract)
    let children = unsafe { super::plan::leaf_partitions(input) }?;
    // SAFETY: `root` is the planner's, with its query (this function's contract)
    let grouped = unsafe { !(*(*root).parse).groupClause.is_null() };
    // SAFETY: as above
    if grouped && unsafe { (*extra).flags } & pg_sys::GROUPING_CAN_USE_HASH as i32 == 0 {
        return None;
    }
    // SAFETY: while planning (this function's contract); the partially grouped relation of
    // `output`'s relids, with the target and the costs PostgreSQL made if it planned partial
    // aggregation itself (for a parallel plan), else made here as PostgreSQL makes them
    let (target, partial_costs, final_costs) = unsafe {
        let partial_rel = pg_sys::fetch_upper_rel(
            root,
            pg_sys::UpperRelationKind::UPPERREL_PARTIAL_GROUP_AGG,
            (*output).relids,
        );
        if (*extra).partial_costs_set
            && !(*partial_rel).reltarget.is_null()
            && !(*(*partial_rel).reltarget).exprs.is_null()
        {
            (
                (*partial_rel).reltarget,
                (*extra).agg_partial_costs,
                (*extra).agg_final_costs,
            )
        } else {
            let target = partial_grouping_target(root, (*output).reltarget, (*extra).havingQual);
            (*partial_rel).reltarget = target;
            let mut partial_costs = pg_sys::AggClauseCosts::default();
            let mut final_costs = pg_sys::AggClauseCosts::default();
            pg_sys::get_agg_clause_costs(
                root,
                pg_sys::AggSplit::AGGSPLIT_INITIAL_SERIAL,
                &mut partial_costs,
            );
            pg_sys::get_agg_clause_costs(
                root,
                pg_sys::AggSplit::AGGSPLIT_FINAL_DESERIAL,
                &mut final_costs,
            );
            (target, partial_costs, final_costs)
        }
    };
    let strategy = if grouped {
        pg_sys::AggStrategy::AGG_HASHED
    } else {
        pg_sys::AggStrategy::AGG_PLAIN
    };
    let group_clause = if grouped {
        // SAFETY: `root` is the planner's (this function's contract)
        unsafe { crate::compat::group_clause(root) }
    } else {
        std::ptr::null_mut()
    };
    // SAFETY: `output` is valid (this function's contract)
    let total_groups = unsafe { (*output).rows }.max(1.0);
    // SAFETY: the children are `input`'s live partitions, valid while planning, their paths
    // set (the grouping stage follows the scans); each path returns `target` translated to
    // its partition
    let append = unsafe {
        super::plan::partitions_append(root, input, children, Some(target), |child| {
            // the partial target with the partition's columns, as PostgreSQL translates a
            // child's target for partitionwise aggregation
            // (the relation PostgreSQL's partitionwise aggregation uses for the partition, if
            // it planned one, keeps the target it made: the same translation)
            let child_rel = pg_sys::fetch_upper_rel(
                root,
                pg_sys::UpperRelationKind::UPPERREL_PARTIAL_GROUP_AGG,
                (*child).relids,
            );
            let child_target = if (*(*child_rel).reltarget).exprs.is_null() {
                let t = pg_sys::copy_pathtarget(target);
                (*t).exprs =
                    super::plan::over_partition(root, child, (*target).exprs as *mut pg_sys::Node)
                        as *mut pg_sys::List;
                (*child_rel).reltarget = t;
                t
            } else {
                (*child_rel).reltarget
            };
            // the partition's own relation as the paths' parent (`partitions_append`)
            match agg_path(root, child, child, child_target, true, false) {
                Some(p) => (p as *mut pg_sys::Path, true),
                None => (
                    pg_sys::create_agg_path(
                        root,
                        child,
                        (*child).cheapest_total_path,
                        child_target,
                        strategy,
                        pg_sys::AggSplit::AGGSPLIT_INITIAL_SERIAL,
                        group_clause,
                        std::ptr::null_mut(),
                        &partial_costs,
                        if grouped {
                            total_groups.min((*child).rows.max(1.0))
                        } else {
                            1.0
                        },
                    ) as *mut pg_sys::Path,
                    false,
                ),
            }
        })
    }?;
    // SAFETY: while planning: the Append's subpaths are partial aggregations of `input`'s
    // partitions, returning `target` (the partially grouped relation's); `output` is the
    // grouping relation with its target, `root` with its query, and `extra` the grouping data
    // with the final costs PostgreSQL computed (checked above)
    unsafe {
        Some(finalize_path(
            root,
            output,
            append as *mut pg_sys::Path,
            &final_costs,
            total_groups,
        ))
    }
}

/// `count(DISTINCT x)` over a partitioned table without GROUP BY (every aggregate of the
/// query one, of the same column `x`, without FILTER): each partition's distinct values of
/// `x` (this node grouping a pg_columnar partition by `x`, PostgreSQL's HashAggregate
/// another partition's rows), an Append of them, and PostgreSQL's Aggregate above, which
/// counts the distinct values among them: the same set of values, so the same count. The
/// aggregate has no partial state, so partitionwise aggregation does not apply, and
/// PostgreSQL's own plan sorts every row of the partitions. `None` unless the input is a
/// partitioned table whose live partitions are all leaves and at least one is grouped by
/// this node.
///
/// # Safety
/// `root`, `input` and `output` are the planner's, valid while planning (`output` the
/// grouping relation of `input`); in a transaction, in the planner's memory context.
unsafe fn distinct_partitions_path(
    root: *mut pg_sys::PlannerInfo,
    input: *mut pg_sys::RelOptInfo,
    output: *mut pg_sys::RelOptInfo,
) -> Option<*mut pg_sys::Path> {
    // SAFETY: `root` is the planner's, with its query (this function's contract)
    let parse = unsafe { (*root).parse };
    // SAFETY: `parse` is the query being planned
    if unsafe {
        !(*parse).groupClause.is_null()
            || !(*parse).groupingSets.is_null()
            || (*parse).hasWindowFuncs
            || (*parse).hasTargetSRFs
            || !(*parse).rowMarks.is_null()
            || pg_sys::contain_subplans((*parse).havingQual)
    } {
        return None;
    }
    // SAFETY: `input` is the planner's, at the grouping stage (this function's contract)
    let children = unsafe { super::plan::leaf_partitions(input) }?;
    let mut aggrefs = Vec::new();
    // SAFETY: `output`'s target and the query's HAVING are valid expressions of the query
    unsafe {
        aggrefs_of(
            list::nodes((*(*output).reltarget).exprs)
                .chain(list::nodes((*parse).havingQual as *mut pg_sys::List)),
            &mut aggrefs,
        )
    };
    let mut column: Option<*mut pg_sys::Node> = None;
    for &a in &aggrefs {
        // SAFETY: `a` is an Aggref of the query (`aggrefs_of` found it); its one argument's
        // expression is read only once the List's length is checked
        let arg = unsafe {
            let a = &*(a as *mut pg_sys::Aggref);
            if a.aggfnoid != pg_sys::Oid::from(2147) // count(any)
                || a.aggdistinct.is_null()
                || !a.aggorder.is_null()
                || !a.aggfilter.is_null()
                || a.agglevelsup != 0
                || a.aggkind != pg_sys::AGGKIND_NORMAL as std::ffi::c_char
                || list::len(a.args) != 1
            {
                return None;
            }
            let te = list::ptrs::<pg_sys::TargetEntry>(a.args).next()?;
            (*te).expr as *mut pg_sys::Node
        };
        // SAFETY: `arg` is a valid expression, read as a Var once its tag says so
        let is_column = unsafe {
            (*arg).type_ == pg_sys::NodeTag::T_Var && {
                let v = &*(arg as *mut pg_sys::Var);
                v.varno as u32 == (*input).relid && v.varlevelsup == 0 && v.varattno > 0
            }
        };
        // SAFETY: both are valid expressions
        if !is_column
            || column.is_some_and(|c| unsafe {
                !pg_sys::equal(c as *const std::ffi::c_void, arg as *const std::ffi::c_void)
            })
        {
            return None;
        }
        column = Some(arg);
    }
    let column = column?;
    // how PostgreSQL groups a column of its type (a partition's HashAggregate)
    let (mut sortop, mut eqop, mut hashable) = (pg_sys::InvalidOid, pg_sys::InvalidOid, false);
    // SAFETY: `column` is a valid expression; the operator lookup is a catalog read in a
    // transaction, its outputs the locals given
    unsafe {
        pg_sys::get_sort_group_operators(
            pg_sys::exprType(column),
            false,
            true,
            false,
            &mut sortop,
            &mut eqop,
            std::ptr::null_mut(),
            &mut hashable,
        )
    };
    if eqop == pg_sys::InvalidOid || !hashable {
        return None;
    }
    // the one grouping clause of a partition's HashAggregate, by this reference
    const REF: pg_sys::Index = 1;
    // SAFETY: made in the planner's memory context, every field set
    let clause = unsafe {
        let c = pg_sys::palloc0(std::mem::size_of::<pg_sys::SortGroupClause>())
            as *mut pg_sys::SortGroupClause;
        (*c).type_ = pg_sys::NodeTag::T_SortGroupClause;
        (*c).tleSortGroupRef = REF;
        (*c).eqop = eqop;
        (*c).sortop = sortop;
        (*c).nulls_first = false;
        (*c).hashable = true;
        list::from_nodes([c as *mut pg_sys::Node])
    };
    let no_costs = pg_sys::AggClauseCosts::default();
    // SAFETY: the Append's one column, made in the planner's memory context
    let values = unsafe {
        let values = pg_sys::create_empty_pathtarget();
        pg_sys::add_column_to_pathtarget(values, column as *mut pg_sys::Expr, 0);
        pg_sys::set_pathtarget_cost_width(root, values)
    };
    // SAFETY: the children are `input`'s live partitions, valid while planning, their paths
    // set (the grouping stage follows the scans); each path (made in the planner's memory
    // context, its parent the partition's relation) returns the partition's `column`
    let append = unsafe {
        super::plan::partitions_append(root, input, children, Some(values), |child| {
            let x = super::plan::over_partition(root, child, column);
            let target = pg_sys::create_empty_pathtarget();
            pg_sys::add_column_to_pathtarget(target, x as *mut pg_sys::Expr, REF);
            pg_sys::set_pathtarget_cost_width(root, target);
            if let Some(p) = agg_path_by(root, child, child, target, vec![x], true, false) {
                return (p as *mut pg_sys::Path, true);
            }
            let rows = (*(*child).cheapest_total_path).rows;
            let groups = pg_sys::estimate_num_groups(
                root,
                list::from_nodes([x]),
                rows,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            );
            let projection =
                pg_sys::create_projection_path(root, child, (*child).cheapest_total_path, target);
            let agg = pg_sys::create_agg_path(
                root,
                child,
                projection as *mut pg_sys::Path,
                target,
                pg_sys::AggStrategy::AGG_HASHED,
                pg_sys::AggSplit::AGGSPLIT_SIMPLE,
                clause,
                std::ptr::null_mut(),
                &no_costs,
                groups.max(1.0),
            );
            (agg as *mut pg_sys::Path, false)
        })
    }?;
    // SAFETY: while planning: the Append's subpaths are `input`'s partitions' distinct values
    // of `column`, and it returns the column (over `input`'s); the Aggregate above returns
    // the query's grouping target with its HAVING, with the aggregates' costs PostgreSQL
    // computes
    unsafe {
        // From 16 the planner orders a DISTINCT aggregate's input in the grouping's pathkeys
        // and marks the aggregate presorted: the Aggregate then drops only a value equal to
        // the one before it, so the partitions' values come sorted (15: no pathkeys, the
        // Aggregate sorts them itself)
        let mut input_path = append as *mut pg_sys::Path;
        if !(*root).group_pathkeys.is_null() {
            input_path =
                pg_sys::create_sort_path(root, input, input_path, (*root).group_pathkeys, -1.0)
                    as *mut pg_sys::Path;
        }
        let mut costs = pg_sys::AggClauseCosts::default();
        pg_sys::get_agg_clause_costs(root, pg_sys::AggSplit::AGGSPLIT_SIMPLE, &mut costs);
        let agg = pg_sys::create_agg_path(
            root,
            output,
            input_path,
            (*output).reltarget,
            pg_sys::AggStrategy::AGG_PLAIN,
            pg_sys::AggSplit::AGGSPLIT_SIMPLE,
            std::ptr::null_mut(),
            (*parse).havingQual as *mut pg_sys::List,
            &costs,
            1.0,
        );
        Some(agg as *mut pg_sys::Path)
    }
}

/// The parallel plan: this node as the partial aggregation over the scan's partial path,
/// under a Gather and PostgreSQL's Finalize Aggregate, which combines the workers' states
/// (and evaluates HAVING). PostgreSQL calls no hook for partial grouping paths, so the
/// chain is made here, with the partial target PostgreSQL made for its own partial paths.
///
/// # Safety
/// `root`, `input` and `output` are the planner's, valid while planning (`output` the
/// grouping relation of `input`); `extra` is null or the grouping's `GroupPathExtraData`.
unsafe fn parallel_path(
    root: *mut pg_sys::PlannerInfo,
    input: *mut pg_sys::RelOptInfo,
    output: *mut pg_sys::RelOptInfo,
    extra: *mut pg_sys::GroupPathExtraData,
) -> Option<*mut pg_sys::Path> {
    // SAFETY: `output` and `input` are valid relations, and `extra`, read only when not null,
    // the grouping's data (this function's contract)
    if unsafe {
        extra.is_null()
            || (*extra).flags & pg_sys::GROUPING_CAN_PARTIAL_AGG as i32 == 0
            || !(*extra).partial_costs_set
            || !(*output).consider_parallel
            || (*input).partial_pathlist.is_null()
    } {
        return None;
    }
    // SAFETY: while planning (this function's contract); `fetch_upper_rel` returns the
    // partially grouped relation of `output`'s relids, made if need be
    let (partial_rel, target) = unsafe {
        let partial_rel = pg_sys::fetch_upper_rel(
            root,
            pg_sys::UpperRelationKind::UPPERREL_PARTIAL_GROUP_AGG,
            (*output).relids,
        );
        (partial_rel, (*partial_rel).reltarget)
    };
    if target.is_null() {
        return None;
    }
    // SAFETY: `partial_rel` is the planner's relation and `target` its target, with `root` and
    // `input` this function's (valid while planning, its contract)
    let partial = unsafe { agg_path(root, input, partial_rel, target, true, true) }?;
    // SAFETY: `partial` is the path `agg_path` just made
    let (workers, partial_rows) =
        unsafe { ((*partial).path.parallel_workers, (*partial).path.rows) };
    if workers < 1 {
        return None;
    }
    let mut rows = partial_rows * workers as f64;
    // SAFETY: while planning: `partial` is a partial path of `partial_rel`, `target` its target
    let gather = unsafe {
        pg_sys::create_gather_path(
            root,
            partial_rel,
            partial as *mut pg_sys::Path,
            target,
            std::ptr::null_mut(),
            &mut rows,
        )
    };
    // SAFETY: while planning: `gather` is a path of the partially grouped relation, `output`
    // the grouping relation with its target, `root` with its query, and `extra` not null
    // (checked above) with the final costs PostgreSQL computed
    Some(unsafe {
        finalize_path(
            root,
            output,
            gather as *mut pg_sys::Path,
            &(*extra).agg_final_costs,
            partial_rows,
        )
    })
}

/// PostgreSQL's Finalize Aggregate over `partial` (partial aggregation's states), into the
/// grouping relation `output`: hashed by the GROUP BY clause (or plain without one), HAVING
/// as its qual; `groups` the groups expected when grouped.
///
/// # Safety
/// While planning: `root` the planner's with its query, `output` the grouping relation with
/// its target, `partial` a path of its partially grouped relation, `final_costs` the
/// aggregates' final costs.
unsafe fn finalize_path(
    root: *mut pg_sys::PlannerInfo,
    output: *mut pg_sys::RelOptInfo,
    partial: *mut pg_sys::Path,
    final_costs: &pg_sys::AggClauseCosts,
    groups: f64,
) -> *mut pg_sys::Path {
    // SAFETY: as this function's contract says
    unsafe {
        let grouped = !(*(*root).parse).groupClause.is_null();
        pg_sys::create_agg_path(
            root,
            output,
            partial,
            (*output).reltarget,
            if grouped {
                pg_sys::AggStrategy::AGG_HASHED
            } else {
                pg_sys::AggStrategy::AGG_PLAIN
            },
            pg_sys::AggSplit::AGGSPLIT_FINAL_DESERIAL,
            if grouped {
                crate::compat::group_clause(root)
            } else {
                std::ptr::null_mut()
            },
            (*(*root).parse).havingQual as *mut pg_sys::List,
            final_costs,
            if grouped { groups } else { 1.0 },
        ) as *mut pg_sys::Path
    }
}

/// The target of partial aggregation below `grouping` (the grouping relation's target),
/// made as PostgreSQL's own `make_partial_grouping_target` makes it (which is not exported):
/// the GROUP BY expressions as they are; the aggregates of the other expressions and of
/// `having`, each in partial mode (`AGGSPLIT_INITIAL_SERIAL`, typed as its serialized
/// state); the Vars and PlaceHolderVars outside aggregates.
///
/// # Safety
/// `root` is the planner's with its query, `grouping` a valid PathTarget of it and `having`
/// null or its HAVING expression; while planning, in the planner's memory context.
unsafe fn partial_grouping_target(
    root: *mut pg_sys::PlannerInfo,
    grouping: *mut pg_sys::PathTarget,
    having: *mut pg_sys::Node,
) -> *mut pg_sys::PathTarget {
    // SAFETY: as this function's contract says; every List and node made here is the
    // planner's, in its memory context
    unsafe {
        let group_clause = crate::compat::group_clause(root);
        let partial = pg_sys::create_empty_pathtarget();
        let refs = (*grouping).sortgrouprefs;
        let mut others: *mut pg_sys::List = std::ptr::null_mut();
        for (i, e) in list::nodes((*grouping).exprs).enumerate() {
            let r = if refs.is_null() { 0 } else { *refs.add(i) };
            if r != 0
                && !group_clause.is_null()
                && !pg_sys::get_sortgroupref_clause_noerr(r, group_clause).is_null()
            {
                pg_sys::add_column_to_pathtarget(partial, e as *mut pg_sys::Expr, r);
            } else {
                others = pg_sys::lappend(others, e as *mut std::ffi::c_void);
            }
        }
        if !having.is_null() {
            others = pg_sys::lappend(others, having as *mut std::ffi::c_void);
        }
        let pulled = pg_sys::pull_var_clause(
            others as *mut pg_sys::Node,
            (pg_sys::PVC_INCLUDE_AGGREGATES
                | pg_sys::PVC_RECURSE_WINDOWFUNCS
                | pg_sys::PVC_INCLUDE_PLACEHOLDERS) as i32,
        );
        pg_sys::add_new_columns_to_pathtarget(partial, pulled);
        let exprs: Vec<*mut pg_sys::Node> = list::nodes((*partial).exprs).collect();
        let mut partial_exprs: *mut pg_sys::List = std::ptr::null_mut();
        for e in exprs {
            let e = if (*e).type_ == pg_sys::NodeTag::T_Aggref {
                let a = pg_sys::copyObjectImpl(e as *const std::ffi::c_void) as *mut pg_sys::Aggref;
                pg_sys::mark_partial_aggref(a, pg_sys::AggSplit::AGGSPLIT_INITIAL_SERIAL);
                a as *mut pg_sys::Node
            } else {
                e
            };
            partial_exprs = pg_sys::lappend(partial_exprs, e as *mut std::ffi::c_void);
        }
        (*partial).exprs = partial_exprs;
        pg_sys::set_pathtarget_cost_width(root, partial)
    }
}

/// The aggregates in `exprs` (each once, in order of appearance).
///
/// # Safety
/// Each of `exprs` and `into` is a valid expression tree of the query being planned; in the
/// planner's memory context.
unsafe fn aggrefs_of(
    exprs: impl Iterator<Item = *mut pg_sys::Node>,
    into: &mut Vec<*mut pg_sys::Node>,
) {
    for e in exprs {
        // SAFETY: `e`, and the aggregates in `into`, are valid expression trees (this
        // function's contract); `pull_var_clause` returns a new List of nodes of `e`
        unsafe {
            let found = pg_sys::pull_var_clause(
                e,
                (pg_sys::PVC_INCLUDE_AGGREGATES | pg_sys::PVC_INCLUDE_PLACEHOLDERS) as i32,
            );
            for n in list::nodes(found) {
                if (*n).type_ == pg_sys::NodeTag::T_Aggref
                    && !into.iter().any(|&a| {
                        pg_sys::equal(a as *const std::ffi::c_void, n as *const std::ffi::c_void)
                    })
                {
                    into.push(n);
                }
            }
        }
    }
}

/// The GROUP BY expressions of the query, as they appear in `target` (the grouping
/// target, whose entries carry the clauses' references); `None` if one is missing.
///
/// # Safety
/// `parse` is the query being planned and `target` a valid PathTarget of it (its
/// `sortgrouprefs` null or one per expression).
unsafe fn group_exprs(
    parse: *mut pg_sys::Query,
    target: *mut pg_sys::PathTarget,
) -> Option<Vec<*mut pg_sys::Node>> {
    // SAFETY: `target` is a valid PathTarget, whose non-null `sortgrouprefs` has an entry per
    // expression, and `parse`'s GROUP BY a List of SortGroupClauses (this function's contract)
    unsafe {
        let exprs: Vec<*mut pg_sys::Node> = list::nodes((*target).exprs).collect();
        let refs = (*target).sortgrouprefs;
        list::ptrs::<pg_sys::SortGroupClause>((*parse).groupClause)
            .map(|sgc| {
                if refs.is_null() {
                    return None;
                }
                (0..exprs.len())
                    .find(|&i| *refs.add(i) == (*sgc).tleSortGroupRef)
                    .map(|i| exprs[i])
            })
            .collect()
    }
}

/// How many groups the keys make of the scan's rows: PostgreSQL's estimate, except that it
/// takes a time bucket's distinct values for its column's, which for `date_trunc('hour',
/// time)` over a table of 10-second readings is 360 times too many (and keeps a parallel
/// plan from looking worth it). A bucket key with a histogram counts instead the buckets the
/// rows' time range spans (the column's histogram range times the share of rows the scan
/// keeps, at most PostgreSQL's count for the key), times PostgreSQL's estimate for the other
/// keys; at most the rows.
///
/// # Safety
/// `root` is the planner's, `input` a base relation of it and `scan` a path of `input`, valid
/// while planning; `keys` are valid expressions of the query; in a transaction.
unsafe fn estimate_groups(
    root: *mut pg_sys::PlannerInfo,
    input: *mut pg_sys::RelOptInfo,
    scan: *mut pg_sys::Path,
    keys: &[*mut pg_sys::Node],
) -> f64 {
    if keys.is_empty() {
        return 1.0;
    }
    // SAFETY: `scan` is a valid path (this function's contract)
    let rows = unsafe { (*scan).rows }.max(1.0);
    // SAFETY: while planning, over valid expressions of the query (this function's contract);
    // the List is made in the planner's memory context
    let estimate = |exprs: &[*mut pg_sys::Node]| unsafe {
        pg_sys::estimate_num_groups(
            root,
            list::from_nodes(exprs.iter().copied()),
            rows,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    };
    // SAFETY: `input` is a base relation of `root` (this function's contract), so its `relid`
    // indexes `root`'s range table array
    let (relid, natts, rte_relid, tuples) = unsafe {
        let relid = (*input).relid;
        let rte = *(*root).simple_rte_array.add(relid as usize);
        (
            relid,
            (*input).max_attr.max(0) as usize,
            (*rte).relid,
            (*input).tuples,
        )
    };
    let share = if tuples > 0.0 {
        (rows / tuples).min(1.0)
    } else {
        1.0
    };
    let mut buckets = 1.0;
    let mut others = Vec::new();
    for &k in keys {
        // SAFETY: `k` is a valid expression of the query being planned, in a transaction (this
        // function's contract)
        let bucket = match unsafe { super::group::key_spec(k, relid, natts) } {
            Some(KeySpec::Trunc { column, unit, .. }) => Some((column, unit.typical_width())),
            Some(KeySpec::Bin { column, stride, .. }) => Some((column, stride)),
            _ => None,
        };
        let range = bucket.and_then(|(column, width)| {
            Some((
                // SAFETY: in a transaction (this function's contract)
                unsafe { super::plan::histogram_range(rte_relid, column as i32 + 1) }?,
                width,
            ))
        });
        match range {
            Some(((lo, hi), width)) if hi > lo => {
                buckets *= ((hi - lo) as f64 * share / width as f64 + 1.0).min(estimate(&[k]))
            }
            _ => others.push(k),
        }
    }
    if others.len() == keys.len() {
        return estimate(keys);
    }
    let rest = if others.is_empty() {
        1.0
    } else {
        estimate(&others)
    };
    (buckets * rest).clamp(1.0, rows)
}

/// Bytes a group holds: its key (in the group list and the hash table, with the table's
/// share) and at most 24 bytes of state per aggregate (`GroupStates`).
fn bytes_per_group(aggregates: usize) -> usize {
    std::mem::size_of::<pg_columnar_codec::group::Key>() * 2 + 16 + 24 * aggregates
}

/// The path, if the query is one this node computes (see the module's comment).
/// `partial`: the partial aggregation of a parallel plan (in the partially grouped relation,
/// with its target), over the scan's partial path (see `parallel_path`).
///
/// # Safety
/// `root` is the planner's, `input` a relation of it, `output` the (partially) grouped
/// relation of `input` and `target` its target, valid while planning; in a transaction, in
/// the planner's memory context.
unsafe fn agg_path(
    root: *mut pg_sys::PlannerInfo,
    input: *mut pg_sys::RelOptInfo,
    output: *mut pg_sys::RelOptInfo,
    target: *mut pg_sys::PathTarget,
    partial: bool,
    parallel: bool,
) -> Option<*mut pg_sys::CustomPath> {
    // SAFETY: `root` is the planner's, with its query, and `target` a valid PathTarget of
    // it (this function's contract)
    let keys = unsafe { group_exprs((*root).parse, target) }?;
    // SAFETY: as above
    unsafe { agg_path_by(root, input, output, target, keys, partial, parallel) }
}

/// [`agg_path`] grouping by `keys`, expressions of `target` (the query's GROUP BY
/// expressions, or others a plan of its own groups by: `distinct_partitions_path`).
///
/// # Safety
/// As [`agg_path`]'s; `keys` valid expressions over `input`.
unsafe fn agg_path_by(
    root: *mut pg_sys::PlannerInfo,
    input: *mut pg_sys::RelOptInfo,
    output: *mut pg_sys::RelOptInfo,
    target: *mut pg_sys::PathTarget,
    keys: Vec<*mut pg_sys::Node>,
    partial: bool,
    parallel: bool,
) -> Option<*mut pg_sys::CustomPath> {
    // SAFETY: `root` is the planner's, with its valid query (this function's contract)
    let parse = unsafe { (*root).parse };
    // SAFETY: `parse` is the query being planned and `root` the planner's (this function's
    // contract); HAVING is null or a valid expression, GROUP BY a valid List
    if unsafe {
        !(*parse).groupingSets.is_null()
            || (*parse).hasWindowFuncs
            || (*parse).hasTargetSRFs
            || !(*parse).rowMarks.is_null()
            || !(*root).minmax_aggs.is_null()
            || pg_sys::contain_subplans((*parse).havingQual)
    } || keys.len() > pg_columnar_codec::group::MAX_KEYS
    {
        return None;
    }
    // SAFETY: `input` is a valid relation of the planner (this function's contract)
    let relid = unsafe { (*input).relid };
    // SAFETY: `root` and `input` are the planner's, while planning (this function's contract)
    let (scan, natts) = unsafe { super::plan::scan_path_below(root, input, parallel) }?;
    for &k in &keys {
        // SAFETY: `k` is an expression of the query being planned, in a transaction
        unsafe { super::group::key_spec(k, relid, natts) }?;
    }
    // every aggregate of the target and of HAVING is one of ours, and nothing else reads
    // the rows: the other Vars are group keys (the parser saw to that)
    // (HAVING is the finalize step's in a partial plan)
    let having = if partial {
        std::ptr::null_mut()
    } else {
        // SAFETY: `parse` is the query being planned
        unsafe { (*parse).havingQual as *mut pg_sys::List }
    };
    let mut aggrefs = Vec::new();
    // SAFETY: the target's expressions and HAVING are valid expressions of the query being
    // planned (this function's contract)
    unsafe {
        aggrefs_of(
            list::nodes((*target).exprs).chain(list::nodes(having)),
            &mut aggrefs,
        )
    };
    let mut translator = Translator::new(relid);
    let specs: Vec<AggSpec> = aggrefs
        .iter()
        // SAFETY: `a` is an Aggref of the query being planned (`aggrefs_of` found it), in a
        // transaction, in the planner's memory context (this function's contract)
        .map(|&a| unsafe {
            spec_of_aggref(a as *mut pg_sys::Aggref, relid, natts, &mut translator)
        })
        .collect::<Option<_>>()?;
    // SAFETY: `input` is a base relation (`scan_path_below` found it one) and `scan` its path;
    // the keys are the query's, while planning (this function's contract)
    let groups = unsafe { estimate_groups(root, input, scan, &keys) };
    // (the estimate of time buckets is rough: only a count beyond what the node may hold
    // refuses)
    if groups * bytes_per_group(aggrefs.len()) as f64 > group_memory_limit() as f64 {
        return None;
    }
    // SAFETY: in a backend, while planning (this function's contract)
    let p = unsafe { FRAME.new_path() };
    // SAFETY: `p` was just made, and nothing else refers to it
    let path = unsafe { &mut (*p).path };
    // SAFETY: `scan` is a valid path (`scan_path_below`'s)
    let (scan_workers, scan_startup, scan_total) = unsafe {
        (
            (*scan).parallel_workers,
            (*scan).startup_cost,
            (*scan).total_cost,
        )
    };
    path.parent = output;
    path.pathtarget = target;
    path.parallel_safe = parallel;
    path.parallel_workers = if parallel { scan_workers } else { 0 };
    path.rows = groups;
    // a serial plan that keeps only the first groups reads about their share of the rows
    // (see `top_stripes`); a partial one reads every stripe
    // (not in a parallel plan, whose processes each read some of the stripes; a partition's
    // partial aggregation keeps its own first groups, among which are all of the query's
    // that the partition holds)
    let top_share = match (parallel, keys.as_slice()) {
        (false, &[key]) => {
            // SAFETY: `root` is the planner's and `key` a GROUP BY expression of its query, in
            // a transaction (this function's contract)
            unsafe { top_of(root, key) }.map_or(1.0, |n| (n as f64 / groups).min(1.0))
        }
        _ => 1.0,
    };
    // without keys, quals or FILTERs, count/min/max come from the stripes' summaries: what
    // is left is reading the catalog (so no parallel plan looks worth its workers)
    let from_metadata = keys.is_empty()
        // SAFETY: `input` is a valid relation (this function's contract)
        && unsafe { (*input).baserestrictinfo.is_null() }
        && specs.iter().all(|s| {
            s.filter.is_none()
                && matches!(
                    s.function,
                    Function::CountStar | Function::Count | Function::Min | Function::Max
                )
                && s.kind != Kind::Bytes
        });
    let share = if from_metadata {
        METADATA_SHARE_OF_SCAN_COST
    } else {
        SHARE_OF_SCAN_COST * top_share
    };
    path.startup_cost = scan_startup + (scan_total - scan_startup) * share;
    // SAFETY: `cpu_tuple_cost` is a setting of the backend, read in its one thread
    path.total_cost = path.startup_cost + groups * unsafe { pg_sys::cpu_tuple_cost };
    // SAFETY: `p` is the path made above (`path` is not used again); the Const and the Lists
    // are made in the planner's memory context (this function's contract)
    unsafe {
        (*p).custom_paths = list::from_nodes([scan as *mut pg_sys::Node]);
        // the mode, then the keys, which the plan groups by
        (*p).custom_private = list::from_nodes(
            std::iter::once(pg_sys::makeBoolConst(partial, false)).chain(keys.iter().copied()),
        );
    }
    Some(p)
}

/// `PlanCustomPath`: the plan of a PgcolAgg path.
///
/// # Safety
/// PostgreSQL's contract: `root` is the planner's, `best_path` a path [`agg_path`] made (the
/// chosen one), `tlist` its target list and `custom_plans` the plans of its custom paths (the
/// scan's); in a transaction, in the planner's memory context.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn plan_custom_path(
    root: *mut pg_sys::PlannerInfo,
    _rel: *mut pg_sys::RelOptInfo,
    best_path: *mut pg_sys::CustomPath,
    tlist: *mut pg_sys::List,
    _clauses: *mut pg_sys::List,
    custom_plans: *mut pg_sys::List,
) -> *mut pg_sys::Plan {
    // SAFETY: `custom_plans` is the List of the plans of the path's custom paths (this
    // function's contract): one, the scan's CustomScan
    let child = unsafe { list::ptrs::<pg_sys::CustomScan>(custom_plans).next() }
        .expect("PgcolAgg without its scan");
    // SAFETY: `child` is the scan's plan, and `best_path` a path `agg_path` made, whose one
    // custom path is the scan's, of the table's relation; `root` has its query (this
    // function's contract)
    let (relid, natts, parse, partial) = unsafe {
        let scan_path = list::ptrs::<pg_sys::Path>((*best_path).custom_paths)
            .next()
            .unwrap();
        (
            (*child).scan.scanrelid,
            (*(*scan_path).parent).max_attr as usize,
            (*root).parse,
            path_is_partial(best_path),
        )
    };
    let having = if partial {
        std::ptr::null_mut()
    } else {
        // SAFETY: `parse` is the query being planned, whose HAVING is copied in the planner's
        // memory context
        unsafe {
            pg_sys::copyObjectImpl((*parse).havingQual as *const std::ffi::c_void)
                as *mut pg_sys::List
        }
    };
    // the node's scan tuple: the keys, then the aggregates, each once; setrefs turns the
    // target list's and HAVING's occurrences of them into references to it (by equality)
    // SAFETY: `best_path`'s `custom_private` is `agg_path_by`'s: its mode, then its keys
    let keys: Vec<*mut pg_sys::Node> =
        unsafe { list::nodes((*best_path).custom_private).skip(1).collect() };
    let key_specs: Vec<KeySpec> = keys
        .iter()
        .map(|&k| {
            // SAFETY: `k` is a GROUP BY expression of the query being planned, in a transaction
            unsafe { super::group::key_spec(k, relid, natts) }.expect("the path checked every key")
        })
        .collect();
    let mut aggrefs = Vec::new();
    // SAFETY: `tlist` is the plan's List of TargetEntries (this function's contract), and
    // `having` the copy of the query's HAVING: valid expressions of the query
    unsafe {
        aggrefs_of(
            list::ptrs::<pg_sys::TargetEntry>(tlist)
                .map(|te| (*te).expr as *mut pg_sys::Node)
                .chain(list::nodes(having)),
            &mut aggrefs,
        )
    };
    let mut translator = Translator::new(relid);
    let specs: Vec<AggSpec> = aggrefs
        .iter()
        .map(|&a| {
            // SAFETY: `a` is an Aggref of the plan's target list or HAVING, in a transaction,
            // in the planner's memory context (this function's contract)
            unsafe { spec_of_aggref(a as *mut pg_sys::Aggref, relid, natts, &mut translator) }
                .expect("the path checked every aggregate")
        })
        .collect();
    // SAFETY: the keys and aggregates are valid expressions of the query; the copies, the
    // entries and the List are made in the planner's memory context (this function's
    // contract)
    let scan_tlist = unsafe {
        list::from_nodes(keys.iter().chain(&aggrefs).enumerate().map(|(i, &e)| {
            let copy = pg_sys::copyObjectImpl(e as *const std::ffi::c_void) as *mut pg_sys::Expr;
            pg_sys::makeTargetEntry(
                copy,
                (i + 1) as pg_sys::AttrNumber,
                std::ptr::null_mut(),
                false,
            ) as *mut pg_sys::Node
        }))
    };
    // SAFETY: while planning, `best_path` a path of the node (this function's contract)
    let cscan = unsafe { FRAME.new_plan(best_path) };
    // SAFETY: `cscan` is the plan just made, nothing else refers to it; the List is made in
    // the planner's memory context
    unsafe {
        (*cscan).scan.plan.targetlist = tlist;
        (*cscan).scan.plan.qual = having;
        (*cscan).scan.scanrelid = 0;
        (*cscan).custom_plans = custom_plans;
        (*cscan).custom_scan_tlist = scan_tlist;
        // the FILTER clauses' values (set_customscan_references fixes them)
        (*cscan).custom_exprs = list::from_nodes(translator.values);
    }
    // the first groups: not in a parallel plan (see `agg_path_by`), whose partial paths
    // have workers
    // SAFETY: `best_path` is a path `agg_path` made (this function's contract)
    let parallel = unsafe { (*best_path).path.parallel_workers } > 0;
    let top = if !parallel && key_specs.len() == 1 {
        // SAFETY: `root` is the planner's, `keys[0]` its query's one GROUP BY expression (or
        // a partition's translation of it)
        unsafe { top_of(root, keys[0]) }
    } else {
        None
    };
    let plan = AggPlan {
        partial,
        top,
        keys: key_specs,
        specs,
    };
    // SAFETY: `cscan` is the plan just made, in the planner's memory context
    unsafe { (*cscan).custom_private = FRAME.private(&plan) };
    cscan as *mut pg_sys::Plan
}

/// Whether a path of this node is the partial aggregation of a parallel plan.
///
/// # Safety
/// `path` is a path [`agg_path`] made.
unsafe fn path_is_partial(path: *const pg_sys::CustomPath) -> bool {
    // SAFETY: `agg_path` made `path`'s `custom_private` a List of a bool Const, then the
    // keys (this function's contract)
    unsafe {
        let c = list::nodes((*path).custom_private)
            .next()
            .expect("PgcolAgg path without its mode") as *mut pg_sys::Const;
        (*c).constvalue.value() != 0
    }
}

/// What the node is told by its plan (`custom_private`, `super::plan_data`).
#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct AggPlan {
    /// The partial aggregation of a parallel plan.
    partial: bool,
    /// The query keeps only the first `top` groups in descending order of its one key (see
    /// `top_stripes`).
    top: Option<u32>,
    keys: Vec<KeySpec>,
    specs: Vec<AggSpec>,
}

/// How many groups the query keeps if it is `GROUP BY k ... ORDER BY k DESC LIMIT n [OFFSET
/// m]` with one key, constants for LIMIT and OFFSET and no HAVING: the node may then leave
/// out rows that cannot be in the first `n + m` groups (see `top_stripes`).
///
/// # Safety
/// `root` is the planner's, with its query, and `key` a valid expression of it; in a
/// transaction.
unsafe fn top_of(root: *mut pg_sys::PlannerInfo, key: *mut pg_sys::Node) -> Option<u32> {
    // SAFETY: `root` is the planner's, with its query (this function's contract)
    let parse = unsafe { (*root).parse };
    // SAFETY: `parse` is the query being planned: its GROUP BY and ORDER BY are Lists of
    // SortGroupClauses, read at once
    let group = unsafe { list::ptrs::<pg_sys::SortGroupClause>((*parse).groupClause).next() }?;
    // SAFETY: as above
    let sort: Vec<*mut pg_sys::SortGroupClause> =
        unsafe { list::ptrs((*parse).sortClause) }.collect();
    // SAFETY: `parse` is the query, `sort[0]` and `group` its clauses
    if unsafe {
        !(*parse).havingQual.is_null()
            || sort.len() != 1
            || (*sort[0]).tleSortGroupRef != (*group).tleSortGroupRef
    } {
        return None;
    }
    // SAFETY: `key` is a valid expression (this function's contract); the type cache is read
    // in a transaction
    let tc = unsafe {
        pg_sys::lookup_type_cache(pg_sys::exprType(key), pg_sys::TYPECACHE_GT_OPR as i32)
    };
    // SAFETY: a non-null type cache entry is valid; `sort[0]` is the query's clause
    if tc.is_null() || unsafe { (*tc).gt_opr != (*sort[0]).sortop } {
        return None;
    }
    let count = |n: *mut pg_sys::Node| -> Option<i64> {
        if n.is_null() {
            return Some(0);
        }
        let c = n as *mut pg_sys::Const;
        // SAFETY: `n` is the query's LIMIT or OFFSET, a valid node, read as a Const only once
        // its tag says so
        unsafe {
            ((*n).type_ == pg_sys::NodeTag::T_Const
                && (*c).consttype == pg_sys::INT8OID
                && !(*c).constisnull)
                .then(|| (*c).constvalue.value() as i64)
        }
    };
    // SAFETY: `parse` is the query being planned
    let (limit, offset) = unsafe { ((*parse).limitCount, (*parse).limitOffset) };
    if limit.is_null() {
        return None;
    }
    let n = count(limit)?.checked_add(count(offset)?)?;
    (1..=100_000).contains(&n).then_some(n as u32)
}

/// The node's Rust state.
struct Exec {
    /// The partial aggregation of a parallel plan: transition states are returned.
    partial: bool,
    /// See `AggPlan::top`; and how many stripes the last computation read of how many.
    top: Option<u32>,
    top_read: Option<(usize, usize)>,
    /// Vectors of the stripes read that hold no key of the first `top` groups ([`KeyFloor`]).
    top_vectors_skipped: std::rc::Rc<std::cell::Cell<u64>>,
    keys: Vec<KeySpec>,
    specs: Vec<AggSpec>,
    /// Made at the first computation (the key expressions' states need the executor's).
    readers: Vec<KeyReader>,
    /// The states of the FILTER clauses' values (`custom_exprs`), made at `begin`.
    values: Vec<*mut pg_sys::ExprState>,
    /// The groups and their states once computed (until a rescan), and the next to return.
    result: Option<Computed>,
    next_group: usize,
    vectors: u64,
    rows: u64,
    groups: u64,
    /// Stripes and vectors answered from their metadata.
    stripes_answered: u64,
    vectors_answered: u64,
    /// Which aggregates the last computation made as an avg without Sxx (see
    /// `avg_bounded`).
    bounded: Vec<bool>,
}

/// The aggregates computed: without GROUP BY one state per aggregate, with it the groups
/// and the states of each aggregate for every group.
enum Computed {
    Single(Vec<State>),
    Grouped {
        table: GroupTable,
        states: Vec<GroupStates>,
    },
}

impl Computed {
    fn groups(&self) -> usize {
        match self {
            Computed::Single(_) => 1,
            Computed::Grouped { table, .. } => table.len(),
        }
    }

    fn state(&self, aggregate: usize, g: usize) -> State {
        match self {
            Computed::Single(states) => states[aggregate].clone(),
            Computed::Grouped { states, .. } => states[aggregate].state(g),
        }
    }
}

/// The FILTER clauses' vectorized filters, their values evaluated now (in the per-tuple
/// memory, which stays until the computation ends: the filters copy what they keep).
///
/// # Safety
/// `node` is a begun PgcolAgg node, not ended, and `exec` its value.
unsafe fn filters_of(
    exec: &Exec,
    node: *mut pg_sys::CustomScanState,
) -> Vec<Option<RuntimeFilter>> {
    // SAFETY: `node` is begun (this function's contract): its expression context and
    // per-tuple memory are valid, and `begin` compiled `exec.values` for that context
    let (old, values) = unsafe {
        let econtext = (*node).ss.ps.ps_ExprContext;
        let old = pg_sys::MemoryContextSwitchTo((*econtext).ecxt_per_tuple_memory);
        (old, super::skip::evaluate(&exec.values, econtext))
    };
    let filters = exec
        .specs
        .iter()
        .map(|s| s.filter.as_ref().map(|f| RuntimeFilter::new(f, &values)))
        .collect();
    // SAFETY: `old` was the current memory context before the switch above
    unsafe { pg_sys::MemoryContextSwitchTo(old) };
    filters
}

fn overflow() -> ! {
    pgrx::ereport!(
        ERROR,
        pgrx::PgSqlErrorCode::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
        "value out of range: overflow"
    );
}

/// A numeric Datum of an exact integer.
///
/// # Safety
/// In a backend; the numeric is made in the current memory context.
unsafe fn numeric_of(v: i128) -> pg_sys::Datum {
    let text = std::ffi::CString::new(v.to_string()).unwrap();
    let args = [
        Some(pg_sys::Datum::from(text.as_ptr())),
        Some(pg_sys::Datum::from(pg_sys::InvalidOid)),
        Some(pg_sys::Datum::from(-1i32)),
    ];
    // SAFETY: in a backend (this function's contract); numeric_in's arguments are a
    // NUL-terminated string that outlives the call, a type OID and a typmod
    unsafe { pgrx::fcinfo::direct_function_call_as_datum(pg_sys::numeric_in, &args) }
        .expect("numeric_in returns a value")
}

/// The Datum of an aggregate's result, and whether it is NULL.
///
/// # Safety
/// In a backend; a by-reference value is made in the current memory context.
unsafe fn datum_of(o: Output) -> (pg_sys::Datum, bool) {
    let d = match o {
        Output::Null => return (pg_sys::Datum::from(0), true),
        Output::Int8(v) => pg_sys::Datum::from(v),
        Output::Int4(v) => pg_sys::Datum::from(v),
        Output::Int2(v) => pg_sys::Datum::from(v),
        Output::Float8(v) => pg_sys::Datum::from(v.to_bits()),
        Output::Float4(v) => pg_sys::Datum::from(v.to_bits()),
        // SAFETY: in a backend (this function's contract)
        Output::Numeric(v) => unsafe { numeric_of(v) },
        // SAFETY: in a backend (this function's contract); `b` holds `b.len()` bytes, copied
        Output::Bytes(b) => pg_sys::Datum::from(unsafe {
            pg_sys::cstring_to_text_with_len(b.as_ptr() as *const std::ffi::c_char, b.len() as i32)
        }),
        // what int8_avg and numeric_avg return: numeric_div of the sum by the count
        // SAFETY: in a backend (this function's contract); numeric_div is given two numerics
        Output::NumericRatio(sum, n) => unsafe {
            let args = [Some(numeric_of(sum)), Some(numeric_of(n as i128))];
            pgrx::fcinfo::direct_function_call_as_datum(pg_sys::numeric_div, &args)
                .expect("numeric_div returns a value")
        },
    };
    (d, false)
}

/// A partial aggregate's transition state, as PostgreSQL's own transition function would
/// have left it for the finalize step to combine: int8 for count and the sums of int2/int4,
/// int8[] {count, sum} for their avg, float8 or float4 for float sums (NULL before a value),
/// float8[] {N, Sx, Sxx} for float avg, the value for min/max (NULL before a value).
///
/// A float avg computed without Sxx (`State::FloatAvg`: every value within ±`AVG_BOUND`,
/// at most `AVG_MAX_ROWS` of them) hands on {N, Sx, 0}. Finalize combines states with
/// `float8_combine`, whose N and Sx do not read Sxx, and `float8_avg` returns Sx / N: the
/// same result bits. Its overflow check fires when the combined Sxx is infinite and neither
/// input's is: it adds N1·N2·(Sx1/N1 − Sx2/N2)²/N to the inputs' Sxx, all terms at least 0,
/// so with 0 in place of a state's own Sxx the sum is at most what it would be with it
/// (it raises the ERROR only where the full states would), and each combine of bounded
/// states adds at most N·(2·AVG_BOUND)² = 4e200·N, far below f64's 1.8e308 for any count
/// of partial states a plan has.
///
/// # Safety
/// In a backend; a by-reference value is made in the current memory context.
unsafe fn partial_datum_of(state: &State, spec: &AggSpec) -> (pg_sys::Datum, bool) {
    let array = |elems: &[pg_sys::Datum], ty: pg_sys::Oid| {
        let mut elems = elems.to_vec();
        // SAFETY: in a backend (this function's contract); `elems` holds as many Datums as
        // given, of `ty` (int8 or float8: 8 bytes, by value, double-aligned), copied
        let a = unsafe {
            pg_sys::construct_array(
                elems.as_mut_ptr(),
                elems.len() as i32,
                ty,
                8,
                true,
                b'd' as std::ffi::c_char,
            )
        };
        (pg_sys::Datum::from(a), false)
    };
    match (state, spec.function) {
        (State::Count(n), _) => (pg_sys::Datum::from(*n), false),
        (State::IntSum { n, sum }, Function::Avg) => array(
            &[pg_sys::Datum::from(*n), pg_sys::Datum::from(*sum as i64)],
            pg_sys::INT8OID,
        ),
        (
            State::IntSum { n: 0, .. }
            | State::Float8Sum { n: 0, .. }
            | State::Float4Sum { n: 0, .. },
            _,
        ) => (pg_sys::Datum::from(0), true),
        (State::IntSum { sum, .. }, _) => (pg_sys::Datum::from(*sum as i64), false),
        (State::FloatAccum { n, sx, sxx }, _) => array(
            &[n.to_bits(), sx.to_bits(), sxx.to_bits()].map(pg_sys::Datum::from),
            pg_sys::FLOAT8OID,
        ),
        // avg's final function reads N and Sx alone; the Sxx handed on is 0 (above)
        (State::FloatAvg { n, sx }, _) => array(
            &[n.to_bits(), sx.to_bits(), 0f64.to_bits()].map(pg_sys::Datum::from),
            pg_sys::FLOAT8OID,
        ),
        // min/max, float sums: the state is the value
        // SAFETY: in a backend (this function's contract)
        _ => unsafe { datum_of(state.finish(spec.function, spec.kind)) },
    }
}

/// The most bytes the groups may hold: a query whose groups outgrow the estimate that chose
/// this node stops with an error here rather than taking the machine's memory. PostgreSQL's
/// own HashAgg would spill to disk instead; this node does not.
pub(super) fn group_memory_limit() -> usize {
    // SAFETY: reads the backend's `work_mem` and `hash_mem_multiplier` settings, in its one
    // thread (its planner and executor call this)
    unsafe { pg_sys::get_hash_memory_limit() }.saturating_mul(16)
}

/// What a group of PgcolTopN's `DISTINCT ON` holds (its key in the group table, its row in
/// `TopRows`), which [`group_memory_limit`] bounds as it bounds this node's groups (also
/// the rows DISTINCT ON's partitions hand on, `super::seeds`).
pub(super) const BYTES_PER_FIRST_ROW: f64 = 96.0;

/// Runs the child's vectors through the key readers and the aggregate states.
///
/// # Safety
/// `node` is a begun PgcolAgg node, not ended, with its PgcolScan child, and `exec` its value;
/// in the query's memory context.
unsafe fn compute(exec: &mut Exec, node: *mut pg_sys::CustomScanState) -> Computed {
    // SAFETY: `node` is a begun node (this function's contract); no other reference to it is
    // used while this one is
    let css = unsafe { &mut *node };
    // SAFETY: `css` is begun (this function's contract), its child a PgcolScan whose value
    // nothing else borrows while the computation runs (its parent runs it only through here)
    let (scan, child_slot, instr) = unsafe { super::node::start_child_batches(css, "PgcolAgg") };
    if exec.readers.len() != exec.keys.len() {
        let cscan = css.ss.ps.plan as *mut pg_sys::CustomScan;
        // SAFETY: the plan's scan tuple list holds a TargetEntry per key first, `child_slot` is
        // the child's scan slot of the table's descriptor, and `css` the node's plan state, in
        // the query's memory context (this function's contract), as `KeyReader::new` asks
        exec.readers = unsafe {
            let exprs: Vec<*mut pg_sys::TargetEntry> =
                list::ptrs((*cscan).custom_scan_tlist).collect();
            let desc = (*child_slot).tts_tupleDescriptor;
            exec.keys
                .iter()
                .zip(exprs)
                .map(|(&k, te)| KeyReader::new(k, (*te).expr, &mut css.ss.ps, desc))
                .collect()
        };
    }
    // SAFETY: `node` is a begun node and `exec` its value (this function's contract)
    let mut filters = unsafe { filters_of(exec, node) };
    // the n-th greatest key of a top-groups aggregation: rows below it are left out
    let mut floor = None;
    if let Some(n) = exec.top {
        // SAFETY: `child_slot` is the child's scan slot; the reader was made for this query,
        // which runs, and not ended
        let (stripes, nth) =
            unsafe { top_stripes(scan, child_slot, &mut exec.readers[0], n as usize) };
        exec.top_read = Some((
            stripes.as_ref().map_or(scan.reader.stripes.len(), Vec::len),
            scan.reader.stripes.len(),
        ));
        scan.set_order(stripes);
        floor = nth;
        if let Some(floor) = nth {
            let reader = &exec.readers[0];
            let skipped = exec.top_vectors_skipped.clone();
            scan.add_skip(Box::new(KeyFloor {
                column: reader.spec.column() as usize,
                floor,
                key_of: Box::new(reader.key_function()),
                skipped,
            }));
        }
    }
    let specs = &exec.specs;
    let grouped = !exec.keys.is_empty();
    // an avg of floats the zone maps bound goes without Sxx, final or partial (see
    // `partial_datum_of`)
    let bounded: Vec<bool> = specs
        .iter()
        .map(|s| {
            s.function == Function::Avg
                && s.kind.is_float()
                && s.column.is_some_and(|c| avg_bounded(scan, c as usize))
        })
        .collect();
    let out = if !grouped {
        Computed::Single(
            specs
                .iter()
                .zip(&bounded)
                .map(|(s, &b)| {
                    if b {
                        State::bounded_avg()
                    } else {
                        State::new(s.function, s.kind).expect("the planner checked the aggregate")
                    }
                })
                .collect(),
        )
    } else {
        let states = specs
            .iter()
            .zip(&bounded)
            .map(|(s, &b)| {
                if b {
                    GroupStates::bounded_avg()
                } else {
                    GroupStates::new(s.function, s.kind).expect("the planner checked the aggregate")
                }
            })
            .collect();
        Computed::Grouped {
            table: GroupTable::new(exec.keys.len()),
            states,
        }
    };
    let mut columns: Vec<usize> = specs
        .iter()
        .filter_map(|s| s.column.map(|c| c as usize))
        .chain(exec.keys.iter().map(|k| k.column() as usize))
        .chain(filters.iter().flatten().flat_map(|f| f.columns().to_vec()))
        .collect();
    columns.sort_unstable();
    columns.dedup();
    let (mut vectors, mut rows) = (0u64, 0u64);
    let rel = scan.reader.rel;
    let readers = &mut exec.readers;
    let limit = group_memory_limit() / bytes_per_group(specs.len());
    let distinct_limit = group_memory_limit();
    let mut groups: Vec<u32> = Vec::new();
    let mut runs = GroupRuns::default();
    let mut key_columns = Vec::with_capacity(readers.len());
    // the metadata answers and the vectors read add to the same states, one after the other
    let out = std::cell::RefCell::new(out);
    let mut answer = MetadataStates { specs, out: &out };
    let answered_before = (
        scan.counters.stripes_answered,
        scan.counters.vectors_answered,
    );
    while scan.next_batch(
        child_slot,
        &columns,
        &mut |selection, lookup, serial| {
        vectors += 1;
        let mut out = out.borrow_mut();
        let mut above_floor = None;
        if let Computed::Grouped { table, states } = &mut *out {
            key_columns.clear();
            for r in readers.iter_mut() {
                // SAFETY: the readers were made for this query, which runs, and not ended
                key_columns.push(unsafe { read_key(r, rel, lookup, selection, serial) });
            }
            if let Some(floor) = floor {
                above_floor = Some(rows_above(selection, &key_columns[0], floor));
            }
            let selection = above_floor.as_ref().unwrap_or(selection);
            table.assign(&key_columns, selection, &mut groups);
            if table.len() > limit {
                pgrx::ereport!(
                    ERROR,
                    pgrx::PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
                    format!("pg_columnar: the vectorized aggregation has more than {limit} groups, 16 times the hash memory (work_mem × hash_mem_multiplier)"),
                    "SET pg_columnar.enable_vectorized_agg = off lets PostgreSQL's HashAgg, which spills to disk, compute it; or raise work_mem."
                );
            }
            for s in states.iter_mut() {
                s.resize(table.len());
            }
            runs = GroupRuns::of_selected(&groups, selection);
        }
        let selection = above_floor.as_ref().unwrap_or(selection);
        rows += selection.count() as u64;
        for (i, spec) in specs.iter().enumerate() {
            // the rows of this aggregate: the scan's, and its FILTER's (with their own runs)
            let (filtered, filtered_runs);
            let (selection, runs) = match filters[i].as_mut() {
                None => (selection, &runs),
                Some(f) => {
                    let Some(mut s) = f.select(lookup, serial, selection.rows()) else {
                        crate::storage::corrupt(rel, "a vector is not of the form its column's FILTER reads".to_string());
                    };
                    s.and(selection);
                    filtered = s;
                    filtered_runs = if grouped { GroupRuns::of_selected(&groups, &filtered) } else { GroupRuns::default() };
                    (&filtered, &filtered_runs)
                }
            };
            let Some(c) = spec.column else {
                match &mut *out {
                    Computed::Grouped { states, .. } => states[i].count_rows(selection, &groups, runs),
                    Computed::Single(states) => states[i].add_rows(selection.count()),
                }
                continue;
            };
            let Some((u, ctx)) = lookup(c as usize) else { missing(rel, c as usize) };
            let added = match &mut *out {
                Computed::Grouped { states, .. } => states[i].add(u, &ctx, selection, &groups, runs),
                Computed::Single(states) => states[i].add(u, &ctx, selection),
            };
            match added {
                Some(Ok(())) => {}
                Some(Err(FloatOverflow)) => overflow(),
                None if spec.function == Function::Count => unreachable!("count reads NULLs only"),
                None => crate::storage::corrupt(rel, format!("column {} holds values that are not numbers", c + 1)),
            }
            let memory = match &*out {
                Computed::Grouped { states, .. } => states[i].memory(),
                Computed::Single(states) => states[i].memory(),
            };
            if memory > distinct_limit {
                pgrx::ereport!(
                    ERROR,
                    pgrx::PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
                    format!("pg_columnar: the values of count(DISTINCT) in the vectorized aggregation take more than {distinct_limit} bytes, 16 times the hash memory (work_mem × hash_mem_multiplier)"),
                    "SET pg_columnar.enable_vectorized_agg = off lets PostgreSQL's aggregation, which sorts on disk, compute it; or raise work_mem."
                );
            }
        }
        },
        // (a FILTER is not known from metadata)
        (!grouped && specs.iter().all(|s| s.filter.is_none())).then_some(&mut answer as &mut dyn MetadataAnswer),
    ) {}
    if !instr.is_null() {
        // SAFETY: a non-null `instr` is the child's instrumentation, started above
        unsafe { pg_sys::InstrStopNode(instr, rows as f64) };
    }
    let out = out.into_inner();
    exec.vectors += vectors;
    exec.rows += rows;
    exec.groups += out.groups() as u64;
    exec.bounded = bounded;
    exec.stripes_answered += scan.counters.stripes_answered - answered_before.0;
    exec.vectors_answered += scan.counters.vectors_answered - answered_before.1;
    out
}

/// Whether `avg` of float column `c` may be computed without Sxx (`State::FloatAvg`): the
/// scan has at most `AVG_MAX_ROWS` rows and every stripe's summary bounds the column's
/// values within ±`AVG_BOUND` (or it has none but NULLs). A stripe without a summary, or
/// without the column (added since), does not prove it.
fn avg_bounded(scan: &VectorScan, c: usize) -> bool {
    use pg_columnar_codec::aggregate::{AVG_BOUND, AVG_MAX_ROWS};
    scan.reader.total_rows() <= AVG_MAX_ROWS
        && (0..scan.reader.stripes.len()).all(|i| {
            match scan.reader.stripe_facts(i, c).and_then(|f| f.zone) {
                Some(StoredZone::Float { min, max }) => *min >= -AVG_BOUND && *max <= AVG_BOUND,
                Some(StoredZone::Empty) => true,
                _ => false,
            }
        })
}

/// A column of the relation without a vector to aggregate: corrupt (a dropped column is
/// never aggregated).
pub(super) fn missing(rel: pg_sys::Relation, c: usize) -> ! {
    crate::storage::corrupt(rel, format!("column {} has no vector to aggregate", c + 1))
}

/// The key parts of one vector's rows for `reader`, from the vectors `lookup` gives.
///
/// # Safety
/// `reader` was made for the query, which still runs, and not ended.
unsafe fn read_key(
    reader: &mut KeyReader,
    rel: pg_sys::Relation,
    lookup: &ColumnLookup<'_>,
    selection: &Selection,
    serial: u64,
) -> KeyColumn {
    let c = reader.spec.column() as usize;
    let Some((u, ctx)) = lookup(c) else {
        missing(rel, c)
    };
    // SAFETY: the reader's query still runs and `end` was not called (this function's
    // contract)
    let Some(k) = (unsafe { reader.read(u, &ctx, selection, serial) }) else {
        crate::storage::corrupt(
            rel,
            format!("column {} holds values of another type than its key", c + 1),
        );
    };
    // SAFETY: as above: the expression context the reader made still exists
    unsafe { reader.reset_memory() };
    k
}

/// For a query that keeps the first `n` groups in descending order of its one monotone key
/// (`AggPlan::top`): the stripes whose rows can be in those groups, and the n-th greatest
/// key. Stripes are read newest first, by their summaries' greatest key value (a stripe
/// without one first), the key column only; once `n` keys are known, a stripe whose
/// greatest key is below the n-th and after which no stripe holds a NULL key (NULLs sort
/// first in descending order) ends the search: neither it nor any later one holds a row of
/// the first `n` groups. The aggregation then reads the stripes found in storage order, so
/// that each group's rows are added in row order, and in them only the vectors that may
/// hold a key at least the n-th ([`KeyFloor`]). Stripes `None`: every stripe is needed;
/// key `None`: fewer than `n` keys.
///
/// # Safety
/// `slot` is the scan's slot (of the table's descriptor); `reader` was made for the query,
/// which still runs, and not ended.
unsafe fn top_stripes(
    scan: &mut VectorScan,
    slot: *mut pg_sys::TupleTableSlot,
    reader: &mut KeyReader,
    n: usize,
) -> (Option<Vec<usize>>, Option<i64>) {
    if !reader.monotone() {
        return (None, None);
    }
    let c = reader.spec.column() as usize;
    let count = scan.reader.stripes.len();
    // each stripe's greatest key (None: unknown, so first) and whether it holds a NULL key
    let bounds: Vec<(Option<i64>, bool)> = (0..count)
        .map(|i| match scan.reader.stripe_facts(i, c) {
            Some(ColumnFacts {
                nulls,
                zone: Some(StoredZone::Int { max, .. }),
            }) => (reader.key_of(*max), nulls > 0),
            Some(ColumnFacts {
                nulls,
                zone: Some(StoredZone::Empty),
            }) => (Some(i64::MIN), nulls > 0),
            _ => (None, true),
        })
        .collect();
    let mut order: Vec<usize> = (0..count).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(bounds[i].0.unwrap_or(i64::MAX)));
    let mut nulls_after = vec![false; count + 1];
    for p in (0..count).rev() {
        nulls_after[p] = nulls_after[p + 1] || bounds[order[p]].1;
    }
    let position: Vec<usize> = {
        let mut r = vec![0; count];
        for (p, &i) in order.iter().enumerate() {
            r[i] = p;
        }
        r
    };
    scan.set_order(Some(order.clone()));
    let mut table = GroupTable::new(1);
    let mut groups = Vec::new();
    let mut read: Vec<usize> = Vec::new();
    let rel = scan.reader.rel;
    let mut stopped = false;
    loop {
        let mut batch: Option<(KeyColumn, Selection)> = None;
        let more = scan.next_batch(
            slot,
            &[c],
            &mut |selection, lookup, serial| {
                // SAFETY: the reader's query still runs, and it was not ended (this function's
                // contract)
                let key = unsafe { read_key(reader, rel, lookup, selection, serial) };
                batch = Some((key, *selection))
            },
            None,
        );
        if !more {
            break;
        }
        let (k, selection) = batch.expect("a batch for each vector");
        let i = scan.current_stripe().expect("a vector comes from a stripe");
        if read.last() != Some(&i) {
            // a new stripe: is the n-th greatest key known to be above all the rest?
            if let Some(nth) = nth_greatest_key(&table, n) {
                if bounds[i].0.is_some_and(|b| b < nth) && !nulls_after[position[i]] {
                    stopped = true;
                    break;
                }
            }
            read.push(i);
        }
        table.assign(&[k], &selection, &mut groups);
    }
    // the keys of every row that can be in the first `n` groups (all those read, when the
    // search went through every stripe)
    let nth = nth_greatest_key(&table, n);
    if !stopped {
        return (None, nth);
    }
    read.sort_unstable();
    (Some(read), nth)
}

/// The n-th greatest non-NULL key of the one-key `table`, if it has `n`.
fn nth_greatest_key(table: &GroupTable, n: usize) -> Option<i64> {
    let mut keys: Vec<i64> = table
        .keys()
        .iter()
        .filter(|k| k.nulls == 0)
        .map(|k| k.parts[0])
        .collect();
    (keys.len() >= n).then(|| *keys.select_nth_unstable_by(n - 1, |a, b| b.cmp(a)).1)
}

/// The rows of `selection` whose key in `keys` is at least `floor`, or NULL (a NULL group
/// comes first in descending order).
fn rows_above(selection: &Selection, keys: &KeyColumn, floor: i64) -> Selection {
    let mut kept = selection.clone();
    for r in selection.iter() {
        if !keys.is_null(r) && keys.part(r) < floor {
            kept.unset(r);
        }
    }
    kept
}

/// Rules out the vectors (and stripes) of a top-groups aggregation whose rows all have keys
/// below the n-th greatest (`AggPlan::top`): their greatest value's key is below it (the key
/// is monotone) and they hold no NULL key (a NULL group comes first). Counts the vectors it
/// ruled out that the quals let through.
struct KeyFloor {
    column: usize,
    floor: i64,
    key_of: Box<dyn Fn(i64) -> Option<i64>>,
    skipped: std::rc::Rc<std::cell::Cell<u64>>,
}

impl KeyFloor {
    /// Whether rows with this zone and NULL count may have a key at least the floor (`all`:
    /// whether every one has).
    fn reaches(&self, zone: Option<&StoredZone>, nulls: usize, all: bool) -> bool {
        let bound = match (zone, all) {
            (Some(StoredZone::Int { min, .. }), true) => *min,
            (Some(StoredZone::Int { max, .. }), false) => *max,
            // nothing known: may reach, not proven to
            _ => return !all,
        };
        if all {
            nulls == 0 && (self.key_of)(bound).is_some_and(|k| k >= self.floor)
        } else {
            nulls > 0 || (self.key_of)(bound).is_none_or(|k| k >= self.floor)
        }
    }

    fn vector(&self, dir: &StripeDirectory, vector: usize, all: bool) -> bool {
        match dir.stored_vectors(self.column) {
            Some(vectors) => {
                self.reaches(Some(&vectors[vector].zone), vectors[vector].null_count, all)
            }
            None => !all,
        }
    }

    fn stripe(&self, summary: &StripeSummary, all: bool) -> bool {
        match summary.columns.get(self.column) {
            Some(c) => self.reaches(c.zone.as_ref(), c.null_count as usize, all),
            None => !all,
        }
    }
}

impl VectorSkip for KeyFloor {
    fn may_match(&mut self, dir: &StripeDirectory, vector: usize) -> bool {
        let reaches = self.vector(dir, vector, false);
        if !reaches {
            self.skipped.set(self.skipped.get() + 1);
        }
        reaches
    }
    fn may_match_stripe(&mut self, summary: &StripeSummary, _rows: usize) -> bool {
        self.stripe(summary, false)
    }
    fn covers(&mut self, dir: &StripeDirectory, vector: usize) -> bool {
        self.vector(dir, vector, true)
    }
    fn covers_stripe(&mut self, summary: &StripeSummary, _rows: usize) -> bool {
        self.stripe(summary, true)
    }
}

/// Metadata answers for aggregates without GROUP BY: stripes and vectors whose every row is
/// selected are taken when every aggregate can be answered from their metadata
/// (`codec::aggregate::answer_from_metadata`).
struct MetadataStates<'a> {
    specs: &'a [AggSpec],
    out: &'a std::cell::RefCell<Computed>,
}

impl MetadataAnswer for MetadataStates<'_> {
    fn answer<'f>(
        &mut self,
        rows: usize,
        facts: &dyn Fn(usize) -> Option<ColumnFacts<'f>>,
    ) -> bool {
        let mut out = self.out.borrow_mut();
        let Computed::Single(states) = &mut *out else {
            return false;
        };
        let answers: Option<Vec<MetaAnswer>> = self
            .specs
            .iter()
            .map(|s| {
                answer_from_metadata(
                    s.function,
                    s.kind,
                    rows,
                    s.column.and_then(|c| facts(c as usize)),
                )
            })
            .collect();
        let Some(answers) = answers else { return false };
        for (state, a) in states.iter_mut().zip(answers) {
            state.add_answer(a);
        }
        true
    }
}

/// Stores group `g` of `computed` into the scan slot (its keys, then its aggregates), with
/// the Datums made in the per-tuple memory `ExecScan` resets before the next row.
///
/// # Safety
/// `node` is a begun PgcolAgg node, not ended, and `exec` its value; `g` is a group of
/// `computed`.
unsafe fn store_group(
    exec: &Exec,
    node: *mut pg_sys::CustomScanState,
    computed: &Computed,
    g: usize,
) -> *mut pg_sys::TupleTableSlot {
    let n = exec.keys.len() + exec.specs.len();
    // SAFETY: `node` is begun (this function's contract): its expression context, per-tuple
    // memory and scan slot are valid, the slot's descriptor the scan tuple of `n` columns
    // (`custom_scan_tlist`: the keys, then the aggregates)
    let (old, slot, values, nulls) = unsafe {
        let ps = &mut (*node).ss.ps;
        let old = pg_sys::MemoryContextSwitchTo((*ps.ps_ExprContext).ecxt_per_tuple_memory);
        let slot = (*node).ss.ss_ScanTupleSlot;
        pg_sys::ExecClearTuple(slot);
        let values = std::slice::from_raw_parts_mut((*slot).tts_values, n);
        let nulls = std::slice::from_raw_parts_mut((*slot).tts_isnull, n);
        (old, slot, values, nulls)
    };
    if let Computed::Grouped { table, .. } = computed {
        let key = table.keys()[g];
        for (p, reader) in exec.readers.iter().enumerate() {
            let null = key.nulls >> p & 1 == 1;
            nulls[p] = null;
            values[p] = match reader.interner() {
                _ if null => pg_sys::Datum::from(0),
                Some(interner) => {
                    let s = interner.get(key.parts[p] as u32);
                    // SAFETY: in the per-tuple memory switched to above; `s` holds `s.len()`
                    // bytes, copied
                    pg_sys::Datum::from(unsafe {
                        pg_sys::cstring_to_text_with_len(
                            s.as_ptr() as *const std::ffi::c_char,
                            s.len() as i32,
                        )
                    })
                }
                None => pg_sys::Datum::from(key.parts[p]),
            };
        }
    }
    let k = exec.keys.len();
    for (i, spec) in exec.specs.iter().enumerate() {
        let state = computed.state(i, g);
        // SAFETY: in a backend, in the per-tuple memory switched to above
        (values[k + i], nulls[k + i]) = unsafe {
            if exec.partial {
                partial_datum_of(&state, spec)
            } else {
                datum_of(state.finish(spec.function, spec.kind))
            }
        };
    }
    // SAFETY: `old` was the current memory context before the switch above; the slot,
    // cleared above, has every one of its `n` values set
    unsafe {
        pg_sys::MemoryContextSwitchTo(old);
        pg_sys::ExecStoreVirtualTuple(slot);
    }
    slot
}

fn function_name(f: Function) -> &'static str {
    match f {
        Function::CountStar | Function::Count | Function::CountDistinct => "count",
        Function::Sum => "sum",
        Function::Avg => "avg",
        Function::Min => "min",
        Function::Max => "max",
    }
}

impl CustomNode for Exec {
    const NAME: &'static std::ffi::CStr = c"PgcolAgg";
    /// Its scan tuple is the keys then the aggregates (`custom_scan_tlist`).
    const TABLE_ROWS: bool = false;
    const ABOVE_SCAN: bool = true;
    type Spec = AggPlan;

    fn frame() -> &'static Frame<Exec> {
        &FRAME
    }

    /// # Safety
    /// As [`CustomNode::create`] (nothing is read of the plan here).
    unsafe fn create(_cscan: *mut pg_sys::CustomScan, plan: AggPlan) -> Exec {
        let AggPlan {
            partial,
            top,
            keys,
            specs,
        } = plan;
        Exec {
            partial,
            top,
            top_read: None,
            top_vectors_skipped: Default::default(),
            keys,
            specs,
            readers: Vec::new(),
            values: Vec::new(),
            result: None,
            next_group: 0,
            vectors: 0,
            rows: 0,
            groups: 0,
            stripes_answered: 0,
            vectors_answered: 0,
            bounded: Vec::new(),
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
        // SAFETY: `node` is being begun (this method's contract): its plan is its CustomScan,
        // whose `custom_exprs` are the FILTER clauses' values, compiled here for the node in
        // the query's memory context
        unsafe {
            let cscan = (*node).ss.ps.plan as *mut pg_sys::CustomScan;
            self.values = list::ptrs::<pg_sys::Expr>((*cscan).custom_exprs)
                .map(|e| pg_sys::ExecInitExpr(e, &mut (*node).ss.ps))
                .collect();
        }
    }

    /// # Safety
    /// As [`CustomNode::next`].
    unsafe fn next(&mut self, node: *mut pg_sys::CustomScanState) -> *mut pg_sys::TupleTableSlot {
        if self.result.is_none() {
            // SAFETY: `node` is begun, not ended (this method's contract), with its PgcolScan
            // child (the planner put it there), and `self` its value
            let computed = unsafe { compute(self, node) };
            self.result = Some(computed);
            self.next_group = 0;
        }
        let computed = self.result.as_ref().unwrap();
        if self.next_group >= computed.groups() {
            // SAFETY: `node` is begun (this method's contract), with its scan slot
            return unsafe { pg_sys::ExecClearTuple((*node).ss.ss_ScanTupleSlot) };
        }
        let g = self.next_group;
        self.next_group += 1;
        // SAFETY: `node` is begun, not ended, and `self` its value (this method's contract);
        // `g` is below the groups computed
        unsafe { store_group(self, node, computed, g) }
    }

    fn rescan(&mut self) {
        self.result = None;
    }

    /// # Safety
    /// As [`CustomNode::end`].
    unsafe fn end(&mut self, _node: *mut pg_sys::CustomScanState) {
        // the key readers' slots are dropped here only: on a failed query they go with the
        // query's memory, which the reset that drops the Rust state is freeing
        for r in &mut self.readers {
            // SAFETY: the node ends before the query's memory is freed, so the slot its reader
            // made still exists
            unsafe { r.end() };
        }
    }

    /// # Safety
    /// As [`CustomNode::explain`].
    unsafe fn explain(
        &self,
        node: *mut pg_sys::CustomScanState,
        ancestors: *mut pg_sys::List,
        es: *mut pg_sys::ExplainState,
    ) {
        // SAFETY: `node` is a begun PgcolAgg node and `es` EXPLAIN's state (this method's
        // contract): its plan's one custom plan is the scan's, whose relation is in the
        // statement's range table
        let (cscan, child, reloid, analyze) = unsafe {
            let cscan = (*node).ss.ps.plan as *mut pg_sys::CustomScan;
            let child = list::ptrs::<pg_sys::CustomScan>((*cscan).custom_plans)
                .next()
                .unwrap();
            let rte = list::ptrs::<pg_sys::RangeTblEntry>((*(*es).pstmt).rtable)
                .nth((*child).scan.scanrelid as usize - 1)
                .unwrap();
            (cscan, child, (*rte).relid, (*es).analyze)
        };
        let property = |name: &std::ffi::CStr, value: String| {
            let text = std::ffi::CString::new(value).unwrap();
            // SAFETY: `es` is EXPLAIN's state (this method's contract); both strings are
            // NUL-terminated and outlive the call
            unsafe { pg_sys::ExplainPropertyText(name.as_ptr(), text.as_ptr(), es) };
        };
        if !self.keys.is_empty() {
            // the keys as the child's expressions (their Vars are the scan's)
            // SAFETY: `es` is EXPLAIN's state, with its deparse context, and `ancestors` the
            // node's ancestors (this method's contract); the plan's scan tuple list holds the
            // keys first; `deparse_expression` returns a NUL-terminated string
            let keys: Vec<String> = unsafe {
                let context = pg_sys::set_deparse_context_plan(
                    (*es).deparse_cxt,
                    child as *mut pg_sys::Plan,
                    pg_sys::lcons(cscan as *mut std::ffi::c_void, ancestors),
                );
                list::ptrs::<pg_sys::TargetEntry>((*cscan).custom_scan_tlist)
                    .zip(&self.keys)
                    .map(|(te, k)| {
                        let text = pg_sys::deparse_expression(
                            (*te).expr as *mut pg_sys::Node,
                            context,
                            false,
                            false,
                        );
                        format!(
                            "{} ({})",
                            std::ffi::CStr::from_ptr(text).to_string_lossy(),
                            k.strategy()
                        )
                    })
                    .collect()
            };
            property(c"Group Keys", keys.join(", "));
        }
        let names: Vec<String> = self
            .specs
            .iter()
            .map(|s| match s.column {
                None => "count(*)".to_string(),
                Some(c) => {
                    // SAFETY: EXPLAIN runs in a transaction; with `missing_ok` false a column
                    // not found raises an ERROR, so the name is a NUL-terminated string
                    let name = unsafe {
                        std::ffi::CStr::from_ptr(pg_sys::get_attname(reloid, c as pg_sys::AttrNumber + 1, false))
                    };
                    let distinct = if s.function == Function::CountDistinct { "DISTINCT " } else { "" };
                    format!("{}({distinct}{})", function_name(s.function), name.to_string_lossy())
                }
            } + if s.filter.is_some() { " FILTER (vectorized)" } else { "" })
            .collect();
        if !self.specs.is_empty() {
            property(c"Vectorized Aggregates", names.join(", "));
        }
        if self.partial {
            property(
                c"Mode",
                if self.specs.is_empty() {
                    "partial (the keys alone, combined above)"
                } else {
                    "partial (transition states, combined by the Finalize above)"
                }
                .to_string(),
            );
        }
        if analyze {
            property(
                c"Aggregated",
                format!("{} vectors, {} rows", self.vectors, self.rows),
            );
            if self.keys.is_empty() {
                property(
                    c"Answered from Metadata",
                    format!(
                        "{} stripes, {} vectors",
                        self.stripes_answered, self.vectors_answered
                    ),
                );
            } else {
                property(c"Groups", self.groups.to_string());
            }
            let evaluated: u64 = self.readers.iter().map(KeyReader::evaluated).sum();
            if self
                .readers
                .iter()
                .any(|r| !matches!(r.spec, KeySpec::Int { .. } | KeySpec::Text { .. }))
            {
                property(c"Key Values Evaluated", evaluated.to_string());
            }
            let bounded: Vec<&String> = names
                .iter()
                .zip(&self.bounded)
                .filter(|(_, &b)| b)
                .map(|(n, _)| n)
                .collect();
            if !bounded.is_empty() {
                property(
                    c"Averages Without Sxx",
                    bounded
                        .iter()
                        .map(|n| n.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                );
            }
            if let Some((read, total)) = self.top_read {
                let skipped = self.top_vectors_skipped.get();
                property(c"Top Groups", format!("{}, from {read} of {total} stripes, newest first, {skipped} vectors in them below the groups", self.top.unwrap()));
            }
            if let Some(i) = self.readers.iter().find_map(KeyReader::interner) {
                property(c"Strings Interned", format!("{} dictionary entries, {} reused from an equal dictionary before, {} row values", i.entries_interned, i.entries_reused, i.rows_interned));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use pg_columnar_codec::aggregate::Function;
    use pg_columnar_codec::bucket::TruncUnit;
    use pg_columnar_codec::zonemap::Cmp;
    use pg_columnar_codec::Kind;

    use super::{AggPlan, AggSpec, Exec};
    use crate::exec::frame::assert_round_trip;
    use crate::exec::group::KeySpec;
    use crate::exec::quals::{ArrayMode, Compare, Exact, How, SkipExpr, Test};

    /// PgcolAgg's plan data: serial and partial, with and without top groups, every kind of
    /// key and time unit, every function over every kind it reads, with and without FILTER.
    #[test]
    fn plan_data_round_trip() {
        let units = [
            TruncUnit::Microseconds,
            TruncUnit::Milliseconds,
            TruncUnit::Second,
            TruncUnit::Minute,
            TruncUnit::Hour,
            TruncUnit::Day,
            TruncUnit::Week,
            TruncUnit::Month,
            TruncUnit::Quarter,
            TruncUnit::Year,
        ];
        let mut keys = vec![
            KeySpec::Int { column: 0 },
            KeySpec::Text { column: 1 },
            KeySpec::Bin {
                column: 2,
                stride: 600_000_000,
                origin: -946_684_800_000_000,
            },
            KeySpec::Evaluated { column: u16::MAX },
        ];
        keys.extend(units.iter().enumerate().map(|(i, &unit)| KeySpec::Trunc {
            column: 3,
            unit,
            zoned: i % 2 == 0,
        }));
        let filter = SkipExpr::Or(vec![
            SkipExpr::Leaf {
                column: 4,
                test: Test::IsNull,
            },
            SkipExpr::Leaf {
                column: 5,
                test: Test::Compare(Compare {
                    cmp: Cmp::Ge,
                    value: 0,
                    array: ArrayMode::Any,
                    how: How::Bytes,
                    exact: Some(Exact::Bytes),
                }),
            },
        ]);
        let mut specs = vec![AggSpec {
            function: Function::CountStar,
            column: None,
            kind: Kind::Int64,
            filter: None,
        }];
        let functions = [
            Function::Count,
            Function::Sum,
            Function::Avg,
            Function::Min,
            Function::Max,
            Function::CountDistinct,
        ];
        let kinds = [
            Kind::Int16,
            Kind::Int32,
            Kind::Int64,
            Kind::Float32,
            Kind::Float64,
            Kind::Bytes,
        ];
        for (i, &function) in functions.iter().enumerate() {
            for (j, &kind) in kinds.iter().enumerate() {
                specs.push(AggSpec {
                    function,
                    column: Some((i * kinds.len() + j) as u16),
                    kind,
                    filter: ((i + j) % 2 == 1).then(|| filter.clone()),
                });
            }
        }
        let plans = vec![
            AggPlan {
                partial: false,
                top: None,
                keys: vec![],
                specs: specs[..1].to_vec(),
            },
            AggPlan {
                partial: true,
                top: None,
                keys: keys.clone(),
                specs: specs.clone(),
            },
            AggPlan {
                partial: false,
                top: Some(100_000),
                keys: vec![keys[4]],
                specs,
            },
        ];
        assert_round_trip::<Exec>(&plans);
    }
}

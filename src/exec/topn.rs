//! PgcolTopN: the first rows of a pg_columnar table by one integer, date or timestamp
//! column, overall or in each group, reading only the vectors that can hold them.
//!
//! It plans two query shapes over one table whose quals the scan evaluates itself (the
//! DISTINCT ON one also over each pg_columnar partition of a partitioned table:
//! `partitions_path`), with neither aggregates, window functions, row locks nor volatile or
//! set-returning targets:
//! * `... ORDER BY o [ASC | DESC] [NULLS ...] LIMIT n [OFFSET m]`, n + m constants up to
//!   100 000: the first n + m rows, in order, under PostgreSQL's Limit. The LATERAL form of
//!   TSBS lastpoint is this with a parameter in the quals, rescanned for each outer row.
//! * `SELECT DISTINCT ON (g) ... ORDER BY g, o [ASC | DESC] [NULLS ...]` (TSBS lastpoint),
//!   g a column grouped as PgcolAgg groups a column (integers; text with a
//!   deterministic collation through dictionary codes): the first row of each group, in no
//!   order; PostgreSQL's Sort above orders the groups' rows.
//!
//! Stripes are read in order of the best rank their catalog summaries of `o` allow, and the
//! vectors of a stripe in order of their zone maps. A stripe or vector is left out, unread,
//! when no row of it can enter the rows kept: the best rank its zone map allows is below
//! the last row kept of every group it holds (`codec::topn::TopRows::threshold_of`). The
//! groups a stripe holds are known from its shared dictionary of `g`, which holds every
//! value of the stripe's column, and its count of NULLs; a stripe without one, or holding a
//! group not seen yet, is read. So a host that stopped reporting long ago costs the stripes
//! that hold it, not every stripe newer than its last row.
//!
//! Rows tied on `o` within a group come in position order, the later first (PostgreSQL
//! leaves their order unspecified); the result does not depend on the order of reading.

use pg_columnar_codec::filter::Selection;
use pg_columnar_codec::group::{GroupTable, KeyColumn};
use pg_columnar_codec::stripe::StoredZone;
use pg_columnar_codec::topn::{Order, Rank, TopRows};
use pg_columnar_codec::MAX_ROWS;
use pgrx::pg_sys;

use super::frame::{CustomNode, Frame};
use super::group::{key_spec, KeyReader, KeySpec};
use super::list;
use super::seeds;
use crate::am::scan::VectorScan;

static mut PREV_UPPER_PATHS: pg_sys::create_upper_paths_hook_type = None;

/// PgcolTopN's method tables and their registration (`super::frame`).
static FRAME: Frame<Exec> = Frame::new().with_path(plan_custom_path);

/// The most rows `ORDER BY ... LIMIT` may keep here.
const MAX_KEEP: f64 = 100_000.0;

/// Of the scan's cost, what is left when only the vectors that can hold the first rows are
/// read: the share of vectors that the ordering column's correlation with storage order
/// does not rule out, at least this much.
const LEAST_SHARE_OF_SCAN_COST: f64 = 0.01;

/// Registers PgcolTopN's plan methods and installs its `create_upper_paths_hook`.
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

/// What the node computes, decided at plan time.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
struct TopSpec {
    /// The ordering column (0-based).
    column: u16,
    order: Order,
    /// Rows kept: per group, or overall.
    keep: u32,
    /// DISTINCT ON's column.
    group: Option<KeySpec>,
    /// The partitions' set this partition's node takes rows from and records its rows in
    /// (`super::seeds`); 0: none.
    seeds: u32,
}

/// The `create_upper_paths_hook`: PgcolTopN's paths for the DISTINCT and ORDER BY stages.
///
/// # Safety
/// PostgreSQL's contract: the arguments are the planner's, valid while planning.
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
    let shape = stage == pg_sys::UpperRelationKind::UPPERREL_DISTINCT
        || stage == pg_sys::UpperRelationKind::UPPERREL_ORDERED;
    if !shape
        || !super::ENABLE_TOPN.get()
        || !super::ENABLE_CUSTOM_SCAN.get()
        || !FRAME.registered()
        || !super::node::FRAME.registered()
    {
        return;
    }
    // SAFETY: the planner's `root`, `stage`, `input_rel` and `output_rel`, while planning, in
    // its memory context (this function's contract)
    let path = unsafe {
        let Some(shape) = query_shape(root, stage) else {
            return;
        };
        match rel_path(root, &shape, input_rel, output_rel, shape.target, |e| e, 0) {
            Some(p) => Some(p as *mut pg_sys::Path),
            None if shape.group.is_some() => partitions_path(root, &shape, input_rel, output_rel),
            None => None,
        }
    };
    if let Some(path) = path {
        // SAFETY: as above; `path` is a path of `output_rel`, just made
        unsafe { pg_sys::add_path(output_rel, path) };
    }
}

/// The ordering of sort clause `sgc` over `expr` if `expr` is an integer column of relation
/// `relid` sorted by its type's own `<` or `>`: the column and the order.
///
/// # Safety
/// `sgc` is a valid SortGroupClause of the query being planned and `expr` its valid
/// expression; in a transaction.
unsafe fn order_of(
    sgc: *mut pg_sys::SortGroupClause,
    expr: *mut pg_sys::Node,
    relid: pg_sys::Index,
    natts: usize,
) -> Option<(u16, Order)> {
    // SAFETY: `expr` is a valid expression of the query being planned, in a transaction (this
    // function's contract)
    let Some(KeySpec::Int { column }) = (unsafe { key_spec(expr, relid, natts) }) else {
        return None;
    };
    // SAFETY: as above; the type cache is read in a transaction
    let tc = unsafe {
        pg_sys::lookup_type_cache(
            pg_sys::exprType(expr),
            (pg_sys::TYPECACHE_LT_OPR | pg_sys::TYPECACHE_GT_OPR) as i32,
        )
    };
    if tc.is_null() {
        return None;
    }
    // SAFETY: `sgc` is a valid clause (this function's contract), `tc` a valid type cache entry
    let (sortop, gt, lt, nulls_first) = unsafe {
        (
            (*sgc).sortop,
            (*tc).gt_opr,
            (*tc).lt_opr,
            (*sgc).nulls_first,
        )
    };
    let descending = match sortop {
        op if op == gt => true,
        op if op == lt => false,
        _ => return None,
    };
    Some((
        column,
        Order {
            descending,
            nulls_first,
        },
    ))
}

/// The query's shape, when it is one this node computes (see the module's comment), with
/// its expressions over the query's relation.
struct Shape {
    /// DISTINCT ON's expression (the DISTINCT ON shape), or `None` (ORDER BY ... LIMIT).
    group: Option<*mut pg_sys::Node>,
    /// The ordering clause and its expression.
    order: (*mut pg_sys::SortGroupClause, *mut pg_sys::Node),
    /// Rows kept (LIMIT + OFFSET; 1 per group for DISTINCT ON).
    keep: f64,
    /// The order of the rows returned (none for DISTINCT ON: a Sort above orders them).
    pathkeys: *mut pg_sys::List,
    /// The stage's target.
    target: *mut pg_sys::PathTarget,
}

/// The query's shape at `stage` (DISTINCT ON at `UPPERREL_DISTINCT`, ORDER BY ... LIMIT at
/// `UPPERREL_ORDERED`), if it is one this node computes.
///
/// # Safety
/// `root` is the planner's, holding the upper target of `stage`, while planning; in a
/// transaction.
unsafe fn query_shape(
    root: *mut pg_sys::PlannerInfo,
    stage: pg_sys::UpperRelationKind::Type,
) -> Option<Shape> {
    // SAFETY: `root` is the planner's, with its query and an upper target per stage (this
    // function's contract)
    let (parse, target) = unsafe {
        (
            (*root).parse,
            *(*root).upper_targets.as_ptr().add(stage as usize),
        )
    };
    // SAFETY: `parse` is the query being planned; the target's expressions are read only when
    // it is not null
    if target.is_null()
        || unsafe {
            (*parse).hasAggs
                || !(*parse).groupClause.is_null()
                || !(*parse).groupingSets.is_null()
                || !(*parse).havingQual.is_null()
                || (*parse).hasWindowFuncs
                || (*parse).hasTargetSRFs
                || !(*parse).rowMarks.is_null()
                || pg_sys::contain_volatile_functions((*target).exprs as *mut pg_sys::Node)
                || pg_sys::contain_subplans((*target).exprs as *mut pg_sys::Node)
        }
    {
        return None;
    }
    // SAFETY: `parse` is the query being planned: its ORDER BY a List of SortGroupClauses,
    // read at once
    let (sort, tlist): (Vec<*mut pg_sys::SortGroupClause>, _) = unsafe {
        (
            list::ptrs((*parse).sortClause).collect(),
            (*parse).targetList,
        )
    };
    // SAFETY: `sgc` is one of the query's clauses, whose target list `tlist` is
    let expr_of =
        |sgc: *mut pg_sys::SortGroupClause| unsafe { pg_sys::get_sortgroupclause_expr(sgc, tlist) };
    if stage == pg_sys::UpperRelationKind::UPPERREL_DISTINCT {
        // SAFETY: `parse`'s DISTINCT is a List of SortGroupClauses, read at once
        let distinct: Vec<*mut pg_sys::SortGroupClause> =
            unsafe { list::ptrs((*parse).distinctClause) }.collect();
        // SAFETY: `parse` is the query, `sort` and `distinct` its clauses, indexed only once
        // their lengths are checked
        if unsafe {
            !(*parse).hasDistinctOn
                || distinct.len() != 1
                || sort.len() != 2
                || (*sort[0]).tleSortGroupRef != (*distinct[0]).tleSortGroupRef
        } {
            return None;
        }
        let g = expr_of(distinct[0]);
        // DISTINCT ON's equality must be the type's own (for text: bytewise, the collation
        // being deterministic: `key_spec` checks that)
        // SAFETY: `g` is a valid expression; the type cache is read in a transaction
        let tc = unsafe {
            pg_sys::lookup_type_cache(pg_sys::exprType(g), pg_sys::TYPECACHE_EQ_OPR as i32)
        };
        // SAFETY: a non-null type cache entry is valid; `distinct[0]` is the query's clause
        if tc.is_null() || unsafe { (*distinct[0]).eqop != (*tc).eq_opr } {
            return None;
        }
        Some(Shape {
            group: Some(g),
            order: (sort[1], expr_of(sort[1])),
            keep: 1.0,
            pathkeys: std::ptr::null_mut(),
            target,
        })
    } else {
        // SAFETY: `root` is the planner's, `parse` its query (this function's contract)
        let (keep, distinct, pathkeys) = unsafe {
            (
                (*root).limit_tuples,
                (*parse).distinctClause,
                (*root).sort_pathkeys,
            )
        };
        if !distinct.is_null() || sort.len() != 1 || !(1.0..=MAX_KEEP).contains(&keep) {
            return None;
        }
        Some(Shape {
            group: None,
            order: (sort[0], expr_of(sort[0])),
            keep,
            pathkeys,
            target,
        })
    }
}

/// The path computing `shape` over pg_columnar relation `input` (the query's, or one of its
/// partitions), as a path of `parent` returning `target`; `None` if `input` is not a
/// pg_columnar table whose quals its scan evaluates, or the expressions are not ones this
/// node computes. `translate` gives the query's expressions over `input`'s columns.
///
/// # Safety
/// `root` is the planner's; `input` and `parent` relations of it and `target` a target over
/// `input`, valid while planning; `shape` is the query's ([`query_shape`]); in a
/// transaction, in the planner's memory context. `seeds` is the partitions' set of a
/// partition's node (`super::seeds`), 0 for none.
unsafe fn rel_path(
    root: *mut pg_sys::PlannerInfo,
    shape: &Shape,
    input: *mut pg_sys::RelOptInfo,
    parent: *mut pg_sys::RelOptInfo,
    target: *mut pg_sys::PathTarget,
    translate: impl Fn(*mut pg_sys::Node) -> *mut pg_sys::Node,
    seeds: u32,
) -> Option<*mut pg_sys::CustomPath> {
    // SAFETY: `input` is a valid relation of the planner (this function's contract)
    let relid = unsafe { (*input).relid };
    // SAFETY: `root` and `input` are the planner's, while planning (this function's contract)
    let (scan, natts) = unsafe { super::plan::scan_path_below(root, input, false) }?;
    // SAFETY: `scan` is a valid path (`scan_path_below`'s)
    let (scan_rows, scan_startup, scan_total) =
        unsafe { ((*scan).rows, (*scan).startup_cost, (*scan).total_cost) };
    // SAFETY: the ordering clause and its (translated) expression are the query's, in a
    // transaction (this function's contract)
    let (column, order) =
        unsafe { order_of(shape.order.0, translate(shape.order.1), relid, natts) }?;
    let (group, rows) = match shape.group {
        Some(g) => {
            let g = translate(g);
            // SAFETY: `g` is an expression of the query being planned, in a transaction (this
            // function's contract)
            let group = unsafe { key_spec(g, relid, natts) }
                .filter(|k| matches!(k, KeySpec::Int { .. } | KeySpec::Text { .. }))?;
            // SAFETY: while planning (this function's contract); `g` is a valid expression, the
            // List made in the planner's memory context
            let groups = unsafe {
                pg_sys::estimate_num_groups(
                    root,
                    list::from_nodes([g]),
                    scan_rows,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                )
            };
            if groups * BYTES_PER_GROUP > super::agg::group_memory_limit() as f64 {
                return None;
            }
            (Some(group), groups)
        }
        None => (None, shape.keep.min(scan_rows)),
    };
    let spec = TopSpec {
        column,
        order,
        keep: shape.keep as u32,
        group,
        seeds,
    };
    // SAFETY: `input` is a base relation (`scan_path_below` found it one), so its `relid`
    // indexes `root`'s range table array
    let rte_relid = unsafe { (**(*root).simple_rte_array.add(relid as usize)).relid };
    // SAFETY: in a transaction (this function's contract)
    let correlation = unsafe { super::plan::correlation(rte_relid, spec.column as i32 + 1) };
    let share = (1.0 - correlation).max(LEAST_SHARE_OF_SCAN_COST);
    // SAFETY: in a backend, while planning (this function's contract)
    let p = unsafe { FRAME.new_path() };
    // SAFETY: `p` was just made, and nothing else refers to it
    let path = unsafe { &mut (*p).path };
    path.parent = parent;
    path.pathtarget = target;
    path.pathkeys = shape.pathkeys;
    path.rows = rows.max(1.0);
    path.startup_cost = scan_startup + (scan_total - scan_startup) * share;
    // SAFETY: `cpu_tuple_cost` is a setting of the backend, read in its one thread
    path.total_cost = path.startup_cost + path.rows * unsafe { pg_sys::cpu_tuple_cost };
    // SAFETY: `p` is the path made above (`path` is not used again); the List and the plan
    // data are made in the planner's memory context (this function's contract)
    unsafe {
        (*p).custom_paths = list::from_nodes([scan as *mut pg_sys::Node]);
        (*p).custom_private = FRAME.private(&spec);
    }
    Some(p)
}

/// DISTINCT ON over a partitioned table: each pg_columnar partition's first rows per group
/// by this node, the first row per group of each other partition through an index that
/// gives the order (`super::index_skip`) or else all its rows, one Append of them, then
/// PostgreSQL's Sort and Unique as for one table. Correct because a group's first row
/// overall is the first among its partitions' first rows. `None` unless `input` is a
/// partitioned table with at least one pg_columnar partition this node computes, every
/// partition a leaf.
///
/// # Safety
/// As [`query_shape`]'s; `input` the relation of the DISTINCT stage and `output` its
/// upper relation, valid while planning; `shape` the query's DISTINCT ON shape.
unsafe fn partitions_path(
    root: *mut pg_sys::PlannerInfo,
    shape: &Shape,
    input: *mut pg_sys::RelOptInfo,
    output: *mut pg_sys::RelOptInfo,
) -> Option<*mut pg_sys::Path> {
    // SAFETY: `input` is the planner's, at the DISTINCT stage (this function's contract)
    let mut children = unsafe { super::plan::leaf_partitions(input) }?;
    // SAFETY: the planner's pathkey Lists, read only
    let (ncols, nsort) = unsafe {
        (
            list::len((*root).distinct_pathkeys),
            list::len((*root).sort_pathkeys),
        )
    };
    if ncols == 0 || nsort <= ncols {
        return None; // the group or the order redundant (a constant): left to PostgreSQL
    }
    // the partitions hand each other the rows they return (`super::seeds`), so they run in
    // the order's direction: under a descending order, the last partition by bound first (a
    // range partitioning by the ordering column puts the first rows there)
    let seeds = if super::ENABLE_PARTITION_SEEDS.get() {
        // SAFETY: the ordering clause and its expression are the query's, read in a
        // transaction (the type cache entry is valid when not null)
        let descending = unsafe {
            let tc = pg_sys::lookup_type_cache(
                pg_sys::exprType(shape.order.1),
                pg_sys::TYPECACHE_GT_OPR as i32,
            );
            !tc.is_null() && (*shape.order.0).sortop == (*tc).gt_opr
        };
        if descending {
            children.reverse();
        }
        super::seeds::new_set_number()
    } else {
        0
    };
    // SAFETY: the children are `input`'s live partitions, valid while planning, their paths
    // set and their targets translated from the query's (the scan and join target is
    // applied to each partition before the upper stages); each path returns its
    // partition's target, in `input`'s order
    let append = unsafe {
        super::plan::partitions_append(root, input, children, None, |child| {
            let translate = |e| super::plan::over_partition(root, child, e);
            match rel_path(
                root,
                shape,
                child,
                child,
                (*child).reltarget,
                translate,
                seeds,
            ) {
                Some(p) => (p as *mut pg_sys::Path, true),
                None => {
                    let group = translate(shape.group.expect("the DISTINCT ON shape"));
                    let order = translate(shape.order.1);
                    let skip = super::index_skip::path(root, child, group, order, seeds);
                    (skip.unwrap_or((*child).cheapest_total_path), false)
                }
            }
        })
    }?;
    // SAFETY: while planning: the Append's subpaths are paths of `input`'s partitions; the
    // pathkeys are the query's, over `output`'s input; `output` the DISTINCT stage's relation
    unsafe {
        let sort = pg_sys::create_sort_path(
            root,
            output,
            append as *mut pg_sys::Path,
            (*root).sort_pathkeys,
            -1.0,
        );
        let groups = pg_sys::estimate_num_groups(
            root,
            list::from_nodes([shape.group.expect("the DISTINCT ON shape")]),
            (*append).path.rows,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        );
        let unique = crate::compat::create_unique_path(
            root,
            output,
            sort as *mut pg_sys::Path,
            ncols as i32,
            groups.max(1.0),
        );
        Some(unique as *mut pg_sys::Path)
    }
}

/// What a group holds here: its key in the group table, its row in `TopRows`.
const BYTES_PER_GROUP: f64 = super::agg::BYTES_PER_FIRST_ROW;

/// The plan scans the relation itself (its scan tuple is a row of the table, stored by the
/// child's reader), so the target list is the path's, over the relation's columns.
///
/// # Safety
/// PostgreSQL's contract (`PlanCustomPath`): `best_path` is a path [`rel_path`] made (the
/// chosen one), `tlist` its target list and `custom_plans` the plans of its custom paths (the
/// scan's), while planning.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn plan_custom_path(
    _root: *mut pg_sys::PlannerInfo,
    _rel: *mut pg_sys::RelOptInfo,
    best_path: *mut pg_sys::CustomPath,
    tlist: *mut pg_sys::List,
    _clauses: *mut pg_sys::List,
    custom_plans: *mut pg_sys::List,
) -> *mut pg_sys::Plan {
    // SAFETY: `custom_plans` is the List of the plans of the path's custom paths (this
    // function's contract): one, the scan's CustomScan
    let child = unsafe { list::ptrs::<pg_sys::CustomScan>(custom_plans).next() }
        .expect("PgcolTopN without its scan");
    // SAFETY: while planning, `best_path` a path of the node (this function's contract)
    let cscan = unsafe { FRAME.new_plan(best_path) };
    // SAFETY: `cscan` is the plan just made, nothing else refers to it; `child` is the scan's
    // plan and `best_path`'s `custom_private` the plan data `rel_path` wrote
    unsafe {
        (*cscan).scan.plan.targetlist = tlist;
        (*cscan).scan.scanrelid = (*child).scan.scanrelid;
        (*cscan).custom_plans = custom_plans;
        (*cscan).custom_private = (*best_path).custom_private;
    }
    cscan as *mut pg_sys::Plan
}

/// What the last computation did, for EXPLAIN ANALYZE.
#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    stripes: u64,
    stripes_read: u64,
    /// Left out by the order bound (not by the quals).
    stripes_left: u64,
    vectors_read: u64,
    vectors_left: u64,
    rows_offered: u64,
    groups: u64,
    /// Groups whose first row so far came from the partitions before this one.
    groups_seeded: u64,
}

/// The node's Rust state.
struct Exec {
    spec: TopSpec,
    /// Made at the first computation.
    readers: Option<(KeyReader, Option<KeyReader>)>,
    /// The rows to return (stripe index, row in stripe, and `None` if alone in its vector
    /// among them, else the index in `chosen` of its vector's) once computed, and the next
    /// one.
    rows: Option<Vec<(usize, u64, Option<usize>)>>,
    /// For each vector holding several of the rows: the id and the selection of its rows.
    chosen: Vec<(u64, Selection)>,
    next_row: usize,
    /// The partitions' set, under DISTINCT ON over a partitioned table (`super::seeds`).
    seed_set: Option<seeds::SeedSet>,
    counts: Counts,
}

/// What [`take_seeds`] took: how many groups, and the least position it gave a row (rows
/// at it or after are the seeds, not rows of the table).
struct Seeded {
    groups: usize,
    first_position: u64,
}

impl Seeded {
    const NONE: Seeded = Seeded {
        groups: 0,
        first_position: u64::MAX,
    };
}

/// Takes `taken`, a set's rows (`super::seeds`), into `table` and `top` as the groups'
/// first rows so far, at positions past any row of a table (they are never returned); rows
/// of a partition must then beat them to be kept. A reader of strings takes the set's
/// interner (given back by [`give_back`]), and the rows' strings become its ids.
fn take_seeds(
    taken: &mut seeds::Rows,
    reader: &mut KeyReader,
    table: &mut GroupTable,
    top: &mut TopRows,
) -> Seeded {
    if taken.interner.is_some() {
        taken.interner = reader.exchange_interner(taken.interner.take());
    }
    let mut parts = Vec::with_capacity(taken.rows.len());
    let mut values = Vec::with_capacity(taken.rows.len());
    let ints = matches!(reader.spec, KeySpec::Int { .. });
    for seed in &mut taken.rows {
        let part = match &seed.group {
            None => None,
            Some(seeds::GroupKey::Int(v)) if ints => Some(*v),
            Some(seeds::GroupKey::Interned(id)) if !ints => Some(*id as i64),
            Some(seeds::GroupKey::Bytes(b)) if !ints => {
                let id = reader.part_of_string(b).expect("a reader of strings");
                seed.group = Some(seeds::GroupKey::Interned(id as u32));
                Some(id)
            }
            // a key of another kind than this partition's (never: partitions share the
            // parent's column types): not taken, which only costs reading
            Some(_) => continue,
        };
        parts.push(part);
        values.push(seed.value);
    }
    let n = parts.len();
    if n == 0 {
        return Seeded::NONE;
    }
    let all = Selection::all(n);
    let mut groups = Vec::new();
    table.assign(&[KeyColumn::of_rows(&parts)], &all, &mut groups);
    let first_position = u64::MAX - n as u64;
    top.add(
        Some(&groups),
        &KeyColumn::of_rows(&values),
        &all,
        first_position,
    );
    Seeded {
        groups: table.len(),
        first_position,
    }
}

/// Puts the set's rows back (`super::seeds`) as the first row of each group so far: `rows`,
/// from `TopRows::into_rows` after [`take_seeds`] and this partition's rows, is the better of
/// each group's taken row and its own. A reader of strings gives back the set's interner
/// (or its own, the first), whose ids the keys are.
///
/// # Safety
/// The node runs in its query, whose memory context is the set's.
unsafe fn give_back(
    set: &seeds::SeedSet,
    mut taken: seeds::Rows,
    rows: &[(u32, Rank, u64)],
    order: Order,
    reader: &mut KeyReader,
    table: &GroupTable,
) {
    taken.rows = rows
        .iter()
        .map(|&(g, rank, _)| seeds::Seed {
            group: key_of_group(&table.keys()[g as usize], reader),
            value: order.value_of(rank),
        })
        .collect();
    taken.interner = reader.exchange_interner(None);
    // SAFETY: the set's memory context is live (this function's contract)
    unsafe { set.put(taken) };
}

/// The key of a group of `table` (a key of one part) as the members of a set read it.
fn key_of_group(
    key: &pg_columnar_codec::group::Key,
    reader: &KeyReader,
) -> Option<seeds::GroupKey> {
    if key.nulls != 0 {
        return None;
    }
    let part = key.parts[0];
    Some(match reader.interner() {
        Some(_) => seeds::GroupKey::Interned(part as u32),
        None => seeds::GroupKey::Int(part),
    })
}

/// The best rank a set of rows can hold from what its zone map and NULL count say of the
/// ordering column; `Some(Rank::MAX)` (read first, never left out) when nothing is known.
fn best_of(order: Order, zone: Option<&StoredZone>, nulls: usize) -> Option<Rank> {
    match zone {
        Some(StoredZone::Int { min, max }) => order.best_possible(Some((*min, *max)), nulls > 0),
        Some(StoredZone::Empty) => order.best_possible(None, nulls > 0),
        _ => Some(Rank::MAX),
    }
}

/// The groups stripe `i` holds (or more), if every one has been seen: its shared
/// dictionary of the group column holds every value of the stripe's column, and its NULL
/// count says whether the NULL group is among them; without one, an integer key's values
/// lie in the range of the stripe's catalog summary, which answers when every integer of
/// the range is a group seen (a few hosts' ids in a stripe of a table sorted by them).
/// `None` otherwise.
///
/// # Safety
/// None beyond the types': it does no unsafe operation (the `unsafe` is only its
/// declaration's).
unsafe fn stripe_groups(
    scan: &mut VectorScan,
    i: usize,
    reader: &mut KeyReader,
    table: &GroupTable,
) -> Option<Vec<u32>> {
    let c = reader.spec.column() as usize;
    let from_dictionary = scan
        .reader
        .with_stripe_dictionary(i, c, |ctx, nulls, serial| {
            let mut groups = Vec::new();
            if nulls {
                groups.push(table.find_single(None)?);
            }
            for &e in reader.shared_entries(ctx, serial)?.iter() {
                groups.push(table.find_single(Some(e))?);
            }
            Some(groups)
        });
    if from_dictionary.is_some() || !matches!(reader.spec, KeySpec::Int { .. }) {
        return from_dictionary;
    }
    let facts = scan.reader.stripe_facts(i, c)?;
    let mut groups = Vec::new();
    if facts.nulls > 0 {
        groups.push(table.find_single(None)?);
    }
    match facts.zone? {
        StoredZone::Empty => {}
        &StoredZone::Int { min, max } => {
            // more integers than groups: one of them is not a group
            if max.abs_diff(min) >= table.len() as u64 {
                return None;
            }
            for v in min..=max {
                groups.push(table.find_single(Some(v))?);
            }
        }
        _ => return None,
    }
    Some(groups)
}

/// Reads what can hold the first rows (see the module's comment) and returns them, as
/// (stripe index, row within the stripe, `None` if no other of them is of its vector, else
/// the index in `Exec::chosen`, which this sets, of its vector's), in the order to return
/// them.
///
/// # Safety
/// `node` is a begun PgcolTopN node, not ended, with its PgcolScan child, and `exec` its value;
/// in the query's memory context.
unsafe fn compute(
    exec: &mut Exec,
    node: *mut pg_sys::CustomScanState,
) -> Vec<(usize, u64, Option<usize>)> {
    // SAFETY: `node` is a begun node (this function's contract); no other reference to it is
    // used while this one is
    let css = unsafe { &mut *node };
    // SAFETY: `css` is begun (this function's contract), its child a PgcolScan whose value
    // nothing else borrows while the computation runs (its parent runs it only through here)
    let (scan, child_slot, instr) = unsafe { super::node::start_child_batches(css, "PgcolTopN") };
    let spec = exec.spec;
    if exec.readers.is_none() {
        // SAFETY: `child_slot` is the child's valid scan slot
        let desc = unsafe { (*child_slot).tts_tupleDescriptor };
        let ps = &mut css.ss.ps as *mut pg_sys::PlanState;
        // SAFETY: `ps` is the node's plan state and `desc` the table's descriptor, in the
        // query's memory context (this function's contract); an integer or text key (the only
        // ones `rel_path` takes) has no expression to evaluate, so none is given
        let values = unsafe {
            KeyReader::new(
                KeySpec::Int {
                    column: spec.column,
                },
                std::ptr::null_mut(),
                ps,
                desc,
            )
        };
        let group = spec
            .group
            // SAFETY: as above
            .map(|g| unsafe { KeyReader::new(g, std::ptr::null_mut(), ps, desc) });
        exec.readers = Some((values, group));
    }
    let (values, group) = exec.readers.as_mut().unwrap();
    let o = spec.column as usize;
    let mut columns = vec![o];
    columns.extend(group.as_ref().map(|g| g.spec.column() as usize));
    let rel = scan.reader.rel;
    let count = scan.reader.stripes.len();
    let bests: Vec<Option<Rank>> = (0..count)
        .map(|i| match scan.reader.stripe_facts(i, o) {
            Some(f) => best_of(spec.order, f.zone, f.nulls),
            None => Some(Rank::MAX),
        })
        .collect();
    let mut stripe_order: Vec<usize> = (0..count).collect();
    // best first; of equal ones, the later stripe first
    stripe_order.sort_by(|&a, &b| bests[b].cmp(&bests[a]).then(b.cmp(&a)));
    let mut top = TopRows::new(spec.order, spec.keep as usize);
    let mut table = GroupTable::new(1);
    let mut groups: Vec<u32> = Vec::new();
    // the rows the partitions before this one returned, as their groups' rows so far
    let mut taken = match (exec.seed_set, group.as_ref()) {
        (Some(set), Some(_)) => Some(set.take()),
        _ => None,
    };
    let seeded = match (taken.as_mut(), group.as_mut()) {
        (Some(t), Some(g)) => take_seeds(t, g, &mut table, &mut top),
        _ => Seeded::NONE,
    };
    let limit = super::agg::group_memory_limit() / BYTES_PER_GROUP as usize;
    let mut counts = Counts {
        stripes: count as u64,
        ..Counts::default()
    };
    for i in stripe_order {
        if !scan.stripe_may_match(i) {
            continue;
        }
        // the rank a row of this stripe must exceed to enter: over the groups it holds
        // once all are seen (looked for again when groups have been added since)
        let mut holds: Option<(Option<Vec<u32>>, usize)> = None;
        let mut threshold = |scan: &mut VectorScan,
                             table: &GroupTable,
                             group: &mut Option<KeyReader>,
                             top: &TopRows|
         -> Option<Rank> {
            let Some(reader) = group.as_mut() else {
                return top.threshold_of(&[0]);
            };
            if !matches!(&holds, Some((Some(_), _)))
                && holds.as_ref().is_none_or(|(_, n)| *n != table.len())
            {
                // SAFETY: `stripe_groups` has no contract (it does no unsafe operation)
                holds = Some((
                    unsafe { stripe_groups(scan, i, reader, table) },
                    table.len(),
                ));
            }
            top.threshold_of(holds.as_ref()?.0.as_ref()?)
        };
        // no row of a set whose best rank is below the threshold can enter
        let below = |best: Option<Rank>, threshold: Option<Rank>| match (best, threshold) {
            (None, _) => true,
            (Some(b), Some(t)) => b < t,
            (Some(_), None) => false,
        };
        let vectors = scan.reader.stripes[i]
            .row_count
            .div_ceil(pg_columnar_codec::MAX_ROWS as u64);
        if below(bests[i], threshold(scan, &table, group, &top)) {
            scan.skip_unread(vectors);
            counts.stripes_left += 1;
            continue;
        }
        counts.stripes_read += 1;
        let first_row = scan.reader.stripes[i].first_row;
        let dir = scan.reader.directory(i);
        let mut vector_order: Vec<(usize, Option<Rank>)> = (0..dir.vector_count())
            .map(|v| {
                let e = dir.stored_vectors(o).map(|vectors| &vectors[v]);
                (
                    v,
                    e.map_or(Some(Rank::MAX), |e| {
                        best_of(spec.order, Some(&e.zone), e.null_count as usize)
                    }),
                )
            })
            .collect();
        vector_order.sort_by(|a, b| b.1.cmp(&a.1).then(b.0.cmp(&a.0)));
        for (v, best) in vector_order {
            if below(best, threshold(scan, &table, group, &top)) {
                scan.skip_vectors(1);
                counts.vectors_left += 1;
                continue;
            }
            let read = scan.read_vector(i, v, child_slot, &columns, &mut |selection, lookup, serial| {
                let read_key = |reader: &mut KeyReader| {
                    let c = reader.spec.column() as usize;
                    let Some((u, ctx)) = lookup(c) else { super::agg::missing(rel, c) };
                    // SAFETY: the readers were made for this query, which runs, and not ended
                    let Some(k) = (unsafe { reader.read(u, &ctx, selection, serial) }) else {
                        crate::storage::corrupt(rel, format!("column {} holds values of another type than its own", c + 1));
                    };
                    k
                };
                let ordering = read_key(values);
                let row_groups = match group.as_mut() {
                    Some(g) => {
                        let k = read_key(g);
                        table.assign(&[k], selection, &mut groups);
                        // the groups this partition adds (taken rows are at most `seeds::capacity`)
                        if table.len() > limit + seeded.groups {
                            pgrx::ereport!(
                                ERROR,
                                pgrx::PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
                                format!("pg_columnar: DISTINCT ON has more than {limit} groups, 16 times the hash memory (work_mem × hash_mem_multiplier)"),
                                "SET pg_columnar.enable_topn = off lets PostgreSQL's Sort and Unique, which spill to disk, compute it; or raise work_mem."
                            );
                        }
                        Some(groups.as_slice())
                    }
                    None => None,
                };
                counts.rows_offered += selection.count() as u64;
                top.add(row_groups, &ordering, selection, first_row + (v * pg_columnar_codec::MAX_ROWS) as u64);
            });
            counts.vectors_read += read as u64;
        }
    }
    let first_rows = top.into_rows();
    if let (Some(set), Some(t), Some(g)) = (exec.seed_set, taken, group.as_mut()) {
        // SAFETY: the node runs in its query, whose memory context is the set's
        unsafe { give_back(&set, t, &first_rows, spec.order, g, &table) };
    }
    let kept: Vec<(u32, Rank, u64)> = first_rows
        .into_iter()
        .filter(|&(_, _, position)| position < seeded.first_position)
        .collect();
    counts.groups = kept.len() as u64;
    counts.groups_seeded = seeded.groups as u64;
    let grouped = spec.group.is_some();
    let mut rows: Vec<u64> = kept.into_iter().map(|(_, _, position)| position).collect();
    if grouped {
        // one row per group, returned in storage order (each vector decoded once); the Sort
        // above orders them
        rows.sort_unstable();
    }
    let stripes = &scan.reader.stripes;
    let at: Vec<(usize, u64)> = rows
        .into_iter()
        .map(|p| {
            // a stored position, not a row number (they differ in a sorted stripe)
            let i = crate::am::read::stripe_index_of_position(stripes, p)
                .expect("a kept row is in a stripe read");
            (i, p - stripes[i].first_row)
        })
        .collect();
    // a row no other chosen row shares its vector with is decoded alone (one value of each
    // column); the others' vectors are decoded once each, and only their chosen rows laid
    // out as Datums (one selection per vector)
    let mut per_vector: std::collections::HashMap<(usize, u64), (usize, Option<usize>)> =
        std::collections::HashMap::new();
    for &(i, r) in &at {
        per_vector.entry((i, r / MAX_ROWS as u64)).or_default().0 += 1;
    }
    let mut chosen: Vec<(u64, Selection)> = Vec::new();
    let mut out = Vec::with_capacity(at.len());
    for &(i, r) in &at {
        let v = r / MAX_ROWS as u64;
        let (rows_of_vector, selection) = per_vector.get_mut(&(i, v)).unwrap();
        if *rows_of_vector == 1 {
            out.push((i, r, None));
            continue;
        }
        let k = *selection.get_or_insert_with(|| {
            let rows = (scan.reader.stripes[i].row_count - v * MAX_ROWS as u64).min(MAX_ROWS as u64)
                as usize;
            chosen.push((scan.reader.selection_id(), Selection::none(rows)));
            chosen.len() - 1
        });
        chosen[k].1.set((r % MAX_ROWS as u64) as usize);
        out.push((i, r, Some(k)));
    }
    exec.chosen = chosen;
    if !instr.is_null() {
        // SAFETY: a non-null `instr` is the child's instrumentation, started above
        unsafe { pg_sys::InstrStopNode(instr, counts.rows_offered as f64) };
    }
    exec.counts = counts;
    out
}

impl CustomNode for Exec {
    const NAME: &'static std::ffi::CStr = c"PgcolTopN";
    const TABLE_ROWS: bool = true;
    const ABOVE_SCAN: bool = true;
    type Spec = TopSpec;

    fn frame() -> &'static Frame<Exec> {
        &FRAME
    }

    /// # Safety
    /// As [`CustomNode::create`] (nothing is read of the plan here).
    unsafe fn create(_cscan: *mut pg_sys::CustomScan, spec: TopSpec) -> Exec {
        Exec {
            spec,
            readers: None,
            rows: None,
            chosen: Vec::new(),
            next_row: 0,
            seed_set: None,
            counts: Counts::default(),
        }
    }

    /// # Safety
    /// As [`CustomNode::begin`].
    unsafe fn begin(
        &mut self,
        _node: *mut pg_sys::CustomScanState,
        estate: *mut pg_sys::EState,
        _eflags: i32,
    ) {
        // SAFETY: `estate` is the node's executor state (this method's contract)
        self.seed_set = unsafe { seeds::SeedSet::of(estate, self.spec.seeds) };
    }

    /// # Safety
    /// As [`CustomNode::next`].
    unsafe fn next(&mut self, node: *mut pg_sys::CustomScanState) -> *mut pg_sys::TupleTableSlot {
        if self.rows.is_none() {
            // SAFETY: `node` is begun, not ended (this method's contract), with its PgcolScan
            // child (the planner put it there), and `self` its value
            let rows = unsafe { compute(self, node) };
            self.rows = Some(rows);
            self.next_row = 0;
        }
        // SAFETY: `node` is begun (this method's contract), with its scan slot
        let slot = unsafe { (*node).ss.ss_ScanTupleSlot };
        let Some(&(i, r, chosen)) = self.rows.as_ref().unwrap().get(self.next_row) else {
            // SAFETY: `slot` is the node's valid scan slot
            return unsafe { pg_sys::ExecClearTuple(slot) };
        };
        self.next_row += 1;
        // SAFETY: `node` is begun (this method's contract), so it has its child, whose value
        // nothing else borrows while its parent runs
        let (scan, _) = unsafe { super::node::batch_source(super::frame::child_of(node)) }
            .expect("PgcolTopN over a PgcolScan");
        match chosen {
            None => scan.reader.store_alone(i, r, slot),
            Some(k) => {
                let (id, selection) = &self.chosen[k];
                scan.reader.store_chosen(i, r, slot, selection, *id);
            }
        }
        slot
    }

    fn rescan(&mut self) {
        self.rows = None;
        // a new pass: the rows of the last one are not this one's (`super::seeds`)
        if let Some(set) = self.seed_set {
            set.clear();
        }
    }

    /// # Safety
    /// As [`CustomNode::end`].
    unsafe fn end(&mut self, _node: *mut pg_sys::CustomScanState) {
        if let Some((values, group)) = self.readers.as_mut() {
            // SAFETY: the node ends before the query's memory is freed, where the readers made
            // what they free
            unsafe {
                values.end();
                if let Some(g) = group {
                    g.end();
                }
            }
        }
    }

    /// # Safety
    /// As [`CustomNode::explain`].
    unsafe fn explain(
        &self,
        node: *mut pg_sys::CustomScanState,
        _ancestors: *mut pg_sys::List,
        es: *mut pg_sys::ExplainState,
    ) {
        // SAFETY: `node` is a begun PgcolTopN node, its relation open, and `es` EXPLAIN's state
        // (this method's contract)
        let (reloid, analyze) = unsafe { ((*(*node).ss.ss_currentRelation).rd_id, (*es).analyze) };
        let spec = self.spec;
        let property = |name: &std::ffi::CStr, value: String| {
            let text = std::ffi::CString::new(value).unwrap();
            // SAFETY: `es` is EXPLAIN's state (this method's contract); both strings are
            // NUL-terminated and outlive the call
            unsafe { pg_sys::ExplainPropertyText(name.as_ptr(), text.as_ptr(), es) };
        };
        let name = |c: u16| {
            // SAFETY: EXPLAIN runs in a transaction; with `missing_ok` false a column not found
            // raises an ERROR, so the name is a NUL-terminated string
            unsafe {
                std::ffi::CStr::from_ptr(pg_sys::get_attname(
                    reloid,
                    c as pg_sys::AttrNumber + 1,
                    false,
                ))
            }
            .to_string_lossy()
            .into_owned()
        };
        let order = format!(
            "{} {} NULLS {}",
            name(spec.column),
            if spec.order.descending { "DESC" } else { "ASC" },
            if spec.order.nulls_first {
                "FIRST"
            } else {
                "LAST"
            }
        );
        property(c"Order", order);
        match spec.group {
            Some(g) => property(
                c"First Row Per Group",
                format!("{} ({})", name(g.column()), g.strategy()),
            ),
            None => property(c"Rows Kept", spec.keep.to_string()),
        }
        if analyze {
            let c = self.counts;
            property(
                c"Stripes",
                format!(
                    "{} of {} read, {} left out by the order bound",
                    c.stripes_read, c.stripes, c.stripes_left
                ),
            );
            property(
                c"Vectors",
                format!(
                    "{} read, {} left out by the order bound",
                    c.vectors_read, c.vectors_left
                ),
            );
            property(c"Rows Offered", c.rows_offered.to_string());
            if spec.group.is_some() {
                property(c"Groups", c.groups.to_string());
            }
            if spec.seeds != 0 {
                property(
                    c"Groups From Earlier Partitions",
                    c.groups_seeded.to_string(),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use pg_columnar_codec::topn::Order;

    use super::{Exec, TopSpec};
    use crate::exec::frame::assert_round_trip;
    use crate::exec::group::KeySpec;

    /// PgcolTopN's plan data: every order, overall and per group of each kind of key it
    /// groups by.
    #[test]
    fn plan_data_round_trip() {
        let mut specs = Vec::new();
        for descending in [false, true] {
            for nulls_first in [false, true] {
                let order = Order {
                    descending,
                    nulls_first,
                };
                for group in [
                    None,
                    Some(KeySpec::Int { column: 1 }),
                    Some(KeySpec::Text { column: u16::MAX }),
                ] {
                    specs.push(TopSpec {
                        column: 0,
                        order,
                        keep: if group.is_some() { 1 } else { 100_000 },
                        group,
                        seeds: if nulls_first { u32::MAX } else { 0 },
                    });
                }
            }
        }
        assert_round_trip::<Exec>(&specs);
    }
}

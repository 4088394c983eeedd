//! Planning the custom scan: paths for pg_columnar base relations, their costs, and the
//! `CustomScan` plan a chosen path becomes.
//!
//! The hook runs after PostgreSQL has built a relation's paths. For a pg_columnar table it
//! adds a custom scan path, in place of the unparameterized sequential scan path if that is
//! still there (an index path that costs less prunes it), and replaces the partial one if
//! there is one (keeping its number of workers, which `hooks::plan_parallel_workers` chose);
//! index, bitmap and TID paths stay and compete on cost (on a sorted table with what fetching
//! rows by TID decodes added: `add_sorted_fetch_costs`). Costs use only what
//! the planner already has (the relation's size and the qual costs): planning reads no
//! data page and no stripe catalog.

use std::ptr::null_mut;

use pgrx::pg_sys;

use super::list;
use super::quals::{SkipExpr, Translator};
use super::spec::{wanted_columns, ScanSpec};
use crate::am::scan::VectorSkip;

static mut PREV_SET_REL_PATHLIST: pg_sys::set_rel_pathlist_hook_type = None;

/// PgcolScan's path methods: here rather than in its frame (`node::FRAME`, which PgcolAgg's
/// and PgcolTopN's frames hold theirs in), since the node would then name the planner that
/// names it.
static mut PATH_METHODS: pg_sys::CustomPathMethods = pg_sys::CustomPathMethods {
    CustomName: c"PgcolScan".as_ptr(),
    PlanCustomPath: Some(plan_custom_path),
    ReparameterizeCustomPathByChild: None,
};

/// The methods of PgcolScan paths (how another planner hook recognizes them).
pub(super) fn path_methods() -> *const pg_sys::CustomPathMethods {
    &raw const PATH_METHODS
}

/// Whether the custom scan of `rel` would evaluate every qual itself, leaving none for the
/// executor (and no gating qual): what `plan_custom_path` decides, asked at path time.
///
/// # Safety
///
/// `rel` must be the planner's valid `RelOptInfo` of a base relation, while planning.
pub(super) unsafe fn every_qual_vectorized(rel: *mut pg_sys::RelOptInfo) -> bool {
    // SAFETY: `rel` is valid while planning (the contract), and its restriction list holds
    // valid RestrictInfos of it, as `scan_qual` requires.
    unsafe {
        let mut translator = Translator::new((*rel).relid);
        list::ptrs::<pg_sys::RestrictInfo>((*rel).baserestrictinfo).all(|rinfo| {
            !(*rinfo).pseudoconstant
                && matches!(scan_qual(&mut translator, rel, rinfo), Some((_, true)))
        })
    }
}

/// How the scan of `rel` takes the qual `rinfo`: its skip expression, and whether the node
/// evaluates it exactly itself (a vectorized filter; never with
/// `pg_columnar.enable_vectorized_filter` off); `None` if the scan cannot use it. Below a
/// security barrier only leakproof operators count.
///
/// # Safety
///
/// `rel` must be the planner's valid `RelOptInfo` and `rinfo` one of its restriction clauses,
/// while planning.
unsafe fn scan_qual(
    translator: &mut Translator,
    rel: *mut pg_sys::RelOptInfo,
    rinfo: *mut pg_sys::RestrictInfo,
) -> Option<(SkipExpr, bool)> {
    // SAFETY: `rel` and `rinfo` are valid while planning (the contract), and the clause is an
    // expression tree of the query, as `translate_qual` requires.
    unsafe {
        let leakproof_only = (*rinfo).security_level > (*rel).baserestrict_min_security;
        translator.translate_qual((*rinfo).clause as *mut pg_sys::Node, leakproof_only)
    }
    .map(|(e, exact)| (e, exact && super::ENABLE_VECTORIZED_FILTER.get()))
}

/// For a node above the scan of `input` (PgcolAgg, PgcolTopN): the scan's path
/// among the relation's paths (`partial`: its partial paths), under the projection PostgreSQL
/// may have put over it, and the relation's number of attributes; `None` unless `input` is
/// one pg_columnar table (no inheritance; a partition of a partitioned table counts, as the
/// per-partition aggregation of `agg::partitions_path` plans it) whose every qual the scan
/// evaluates itself.
///
/// # Safety
///
/// `root` must be the planner's valid `PlannerInfo` and `input` one of its `RelOptInfo`s,
/// while planning.
pub(super) unsafe fn scan_path_below(
    root: *mut pg_sys::PlannerInfo,
    input: *mut pg_sys::RelOptInfo,
    partial: bool,
) -> Option<(*mut pg_sys::Path, usize)> {
    // SAFETY: `input` is valid (the contract).
    if !matches!(
        // SAFETY: `input` is valid (the contract).
        unsafe { (*input).reloptkind },
        pg_sys::RelOptKind::RELOPT_BASEREL | pg_sys::RelOptKind::RELOPT_OTHER_MEMBER_REL
    ) {
        return None;
    }
    // SAFETY: a base relation's `relid` indexes `root`'s range table array, whose entries are
    // valid (the contract).
    let rte = unsafe { *(*root).simple_rte_array.add((*input).relid as usize) };
    // SAFETY: `rte` is a valid range table entry.
    if unsafe { (*rte).rtekind != pg_sys::RTEKind::RTE_RELATION || (*rte).inh } {
        return None;
    }
    // SAFETY: `input` is valid (the contract).
    let paths = unsafe {
        if partial {
            (*input).partial_pathlist
        } else {
            (*input).pathlist
        }
    };
    // SAFETY: the path lists of a valid `RelOptInfo` hold valid paths; a projection's
    // `subpath` and a custom path's `methods` are read only after their tags are checked.
    let scan = unsafe {
        list::ptrs::<pg_sys::Path>(paths)
            .map(|p| {
                if (*p).type_ == pg_sys::NodeTag::T_ProjectionPath {
                    (*(p as *mut pg_sys::ProjectionPath)).subpath
                } else {
                    p
                }
            })
            .find(|&p| {
                (*p).type_ == pg_sys::NodeTag::T_CustomPath
                    && std::ptr::eq((*(p as *mut pg_sys::CustomPath)).methods, path_methods())
                    && (*p).param_info.is_null()
            })
    }?;
    // SAFETY: `input` is a valid base relation, while planning (the contract).
    if !unsafe { every_qual_vectorized(input) } {
        return None;
    }
    // SAFETY: in a transaction (planning); the relation is closed once its width is read.
    unsafe {
        let relation = pg_sys::RelationIdGetRelation((*rte).relid);
        if relation.is_null() {
            return None;
        }
        let natts = (*(*relation).rd_att).natts as usize;
        pg_sys::RelationClose(relation);
        Some((scan, natts))
    }
}

/// The live partitions of `input` (dummy ones left out), for a node planned partition by
/// partition over a partitioned table; `None` unless `input` is a partitioned base relation
/// whose every live partition is a leaf with paths (a partition partitioned in turn would
/// need its own partitions planned here).
///
/// # Safety
///
/// `input` must be one of the planner's valid `RelOptInfo`s, at an upper stage (its
/// partitions' paths are set), while planning.
pub(super) unsafe fn leaf_partitions(
    input: *mut pg_sys::RelOptInfo,
) -> Option<Vec<*mut pg_sys::RelOptInfo>> {
    // SAFETY: `input` is valid (the contract); `live_parts` indexes its `part_rels`, whose
    // members are its live partitions' relations, valid while planning
    unsafe {
        if (*input).reloptkind != pg_sys::RelOptKind::RELOPT_BASEREL
            || (*input).part_scheme.is_null()
            || (*input).part_rels.is_null()
        {
            return None;
        }
        let mut children = Vec::new();
        let mut i = -1;
        loop {
            i = pg_sys::bms_next_member((*input).live_parts, i);
            if i < 0 {
                return Some(children);
            }
            let child = *(*input).part_rels.add(i as usize);
            if child.is_null() || pg_sys::is_dummy_rel(child) {
                continue;
            }
            if !(*child).part_scheme.is_null() || (*child).cheapest_total_path.is_null() {
                return None;
            }
            children.push(child);
        }
    }
}

/// An Append of partitioned table `input` over one path per partition in `children`:
/// `path_of(child)` gives the partition's path (whose parent must be the partition's own
/// relation) and whether it is one of this extension's nodes. The Append belongs to `input`
/// and returns `target` (`None`: `input`'s own), so PostgreSQL prunes its partitions at run
/// time by `input`'s quals. `None` unless at least one path is this extension's (otherwise
/// PostgreSQL's own plan is the same thing).
///
/// # Safety
///
/// `root` and `input` must be the planner's, `children` `input`'s live partitions
/// ([`leaf_partitions`]), `target` null or a target whose columns each path returns, in its
/// order; while planning, in the planner's memory context. `path_of` is called with each
/// child once, in order.
pub(super) unsafe fn partitions_append(
    root: *mut pg_sys::PlannerInfo,
    input: *mut pg_sys::RelOptInfo,
    children: Vec<*mut pg_sys::RelOptInfo>,
    target: Option<*mut pg_sys::PathTarget>,
    mut path_of: impl FnMut(*mut pg_sys::RelOptInfo) -> (*mut pg_sys::Path, bool),
) -> Option<*mut pg_sys::AppendPath> {
    let mut ours = 0;
    let subpaths: Vec<*mut pg_sys::Node> = children
        .into_iter()
        .map(|child| {
            let (path, ours_here) = path_of(child);
            ours += ours_here as usize;
            path as *mut pg_sys::Node
        })
        .collect();
    if ours == 0 {
        return None;
    }
    // SAFETY: the planner's structures, the subpaths `input`'s partitions' (this function's
    // contract)
    unsafe {
        let append = crate::compat::create_append_path(root, input, list::from_nodes(subpaths));
        if let Some(t) = target {
            (*append).path.pathtarget = t;
        }
        Some(append)
    }
}

/// `node`, an expression over a partitioned table's columns, over partition `child`'s (as
/// PostgreSQL translates a partition's targets).
///
/// # Safety
///
/// `root` and `child` (a partition's relation) must be the planner's, while planning, in its
/// memory context; `node` a valid expression tree.
pub(super) unsafe fn over_partition(
    root: *mut pg_sys::PlannerInfo,
    child: *mut pg_sys::RelOptInfo,
    node: *mut pg_sys::Node,
) -> *mut pg_sys::Node {
    // SAFETY: the planner's structures (the contract); the appinfos array is freed once used
    unsafe {
        let mut n: std::ffi::c_int = 0;
        let appinfos = pg_sys::find_appinfos_by_relids(root, (*child).relids, &mut n);
        let out = pg_sys::adjust_appendrel_attrs(root, node, n, appinfos);
        pg_sys::pfree(appinfos as *mut std::ffi::c_void);
        out
    }
}

/// Installs the `set_rel_pathlist` hook.
///
/// # Safety
///
/// Called once per backend, from `_PG_init` (through `exec::install`).
pub unsafe fn install_hook() {
    // SAFETY: `_PG_init` runs once, in the backend's one thread (the contract); nothing reads
    // the hook variables meanwhile.
    unsafe {
        PREV_SET_REL_PATHLIST = pg_sys::set_rel_pathlist_hook;
        pg_sys::set_rel_pathlist_hook = Some(set_rel_pathlist);
    }
}

/// Whether `p` is a sequential scan path without parameters.
///
/// # Safety
///
/// `p` must be a valid path.
unsafe fn is_plain_seqscan(p: *mut pg_sys::Path) -> bool {
    // SAFETY: `p` is a valid path (the contract).
    unsafe { (*p).pathtype == pg_sys::NodeTag::T_SeqScan && (*p).param_info.is_null() }
}

/// Adds to each index and bitmap heap path of a sorted pg_columnar table what fetching its
/// rows by TID costs beyond what PostgreSQL counted. PostgreSQL costs a fetch by the pages it
/// touches, and a pg_columnar table has few (its data is compressed). A TID is a row's
/// insert order and a sorted stripe stores rows in key order, so the rows of a TID block lie
/// apart and each fetched row decodes its own values, in each column read, about as much
/// work as decoding a vector (a bitmap heap scan of 23,040 rows of a sorted TSBS table took
/// 525 ms, 1.9 µs a row and column, where the custom scan took 3). A decode is costed as
/// the custom scan costs reading a vector's values (`make_path`: `cpu_tuple_cost` times
/// `0.5 * columns` a row, `columns` the share of the columns read). In an unsorted table
/// rows fetched in TID order share their vectors, and PostgreSQL's costs are left as they
/// are.
///
/// # Safety
/// `rel` is the planner's valid relation of a pg_columnar table, in `set_rel_pathlist`.
unsafe fn add_sorted_fetch_costs(rel: *mut pg_sys::RelOptInfo, columns: f64) {
    // SAFETY: `cpu_tuple_cost` is a setting, read in the backend's one thread.
    let per_row =
        unsafe { pg_sys::cpu_tuple_cost } * 0.5 * columns * pg_columnar_codec::MAX_ROWS as f64;
    // SAFETY: `rel`'s path lists hold valid paths (the contract), changed in this hook
    unsafe {
        for p in list::ptrs::<pg_sys::Path>((*rel).pathlist)
            .chain(list::ptrs::<pg_sys::Path>((*rel).partial_pathlist))
        {
            if matches!(
                (*p).pathtype,
                pg_sys::NodeTag::T_IndexScan
                    | pg_sys::NodeTag::T_IndexOnlyScan
                    | pg_sys::NodeTag::T_BitmapHeapScan
            ) {
                // an index path's rows are those of one scan (one loop, when parameterized)
                (*p).total_cost += (*p).rows.max(1.0) * per_row;
            }
        }
    }
}

/// `paths` without the unparameterized sequential scan, a new List.
///
/// # Safety
/// `paths` is a List of valid paths, while planning.
unsafe fn without_plain_seqscan(paths: *mut pg_sys::List) -> *mut pg_sys::List {
    // SAFETY: `paths` holds valid paths (this function's contract); the List is made in the
    // planner's memory context
    unsafe {
        list::from_nodes(
            list::ptrs::<pg_sys::Path>(paths)
                .filter(|&p| !is_plain_seqscan(p))
                .map(|p| p as *mut pg_sys::Node),
        )
    }
}

/// # Safety
///
/// Called by PostgreSQL only, as `set_rel_pathlist_hook`, with valid planner structures.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn set_rel_pathlist(
    root: *mut pg_sys::PlannerInfo,
    rel: *mut pg_sys::RelOptInfo,
    rti: pg_sys::Index,
    rte: *mut pg_sys::RangeTblEntry,
) {
    // SAFETY: `PREV_SET_REL_PATHLIST` is written only from `_PG_init` and read in the
    // backend's one thread; the next hook gets PostgreSQL's own arguments.
    unsafe {
        if let Some(prev) = PREV_SET_REL_PATHLIST {
            prev(root, rel, rti, rte);
        }
    }
    // SAFETY: `rte` and `rel` are valid (the contract).
    if !super::ENABLE_CUSTOM_SCAN.get()
        || !super::node::FRAME.registered()
        || unsafe {
            (*rte).rtekind != pg_sys::RTEKind::RTE_RELATION
                || (*rte).inh
                || !(*rte).tablesample.is_null()
                || (*rel).rtekind != pg_sys::RTEKind::RTE_RELATION
        }
    {
        return;
    }
    // WHERE CURRENT OF runs only as a TID scan: from 18 PostgreSQL makes no other path for
    // it and no longer costs other paths out through the qual, so none is added beside it
    // SAFETY: `rel`'s restriction list holds valid RestrictInfos with valid clauses.
    if unsafe {
        list::ptrs::<pg_sys::RestrictInfo>((*rel).baserestrictinfo).any(|r| {
            (*((*r).clause as *mut pg_sys::Node)).type_ == pg_sys::NodeTag::T_CurrentOfExpr
        })
    } {
        return;
    }
    // SAFETY: planning, in a transaction (the contract); a relation opened is closed on each
    // path below.
    let relation = unsafe { pg_sys::RelationIdGetRelation((*rte).relid) };
    if relation.is_null() {
        return;
    }
    // PostgreSQL's sequential scan path may be gone already, pruned by an index path that
    // costs less (a selective qual on an indexed column): the custom scan, which skips by
    // zone maps, is made all the same and competes with the index paths on cost
    if !crate::am::relation::is_columnar(relation) {
        // SAFETY: `relation` was opened above and is closed once.
        unsafe { pg_sys::RelationClose(relation) };
        return;
    }
    // SAFETY: `relation` is open until its close below, and `root`, `rel` and `rte` are the
    // planner's valid structures for it (the contract), as the estimates require.
    let (natts, live, stripes_read, read_fraction, leading_key) = unsafe {
        let natts = (*(*relation).rd_att).natts as usize;
        let live = (0..natts)
            .filter(|&i| !(*crate::compat::tuple_desc_attr((*relation).rd_att, i)).attisdropped)
            .count();
        let (stripe_fraction, stripes_read) = stripes_read(root, rel, relation);
        // a stripe read decodes at least one vector of each column read, however few of its
        // rows match: without this floor a point lookup on a column stored in order would cost
        // one row's decoding, and win against the index fetch that decodes one value per column
        let least_read = if (*rel).tuples > 0.0 {
            (stripes_read as f64 * pg_columnar_codec::MAX_ROWS as f64 / (*rel).tuples)
                .min(stripe_fraction)
        } else {
            0.0
        };
        let leading_key = crate::am::options::sort_key(relation)
            .first()
            .map(|&c| c as i32 + 1);
        let layout = Layout {
            leading_key,
            stripes: stripes_read,
            rows: stripe_fraction * (*rel).tuples,
        };
        let read_fraction = (stripe_fraction
            * vectors_read_within(
                (*rte).relid,
                root,
                rel,
                (*rel).baserestrictinfo,
                0,
                stripe_fraction,
                &layout,
            ))
        .max(least_read);
        pg_sys::RelationClose(relation);
        (natts, live, stripes_read, read_fraction, leading_key)
    };
    // SAFETY: `rel`'s lists hold valid paths, RestrictInfos and expressions (the contract).
    let (partial_workers, read) = unsafe {
        let partial_workers = list::ptrs::<pg_sys::Path>((*rel).partial_pathlist)
            .find(|&p| is_plain_seqscan(p))
            .map(|p| (*p).parallel_workers);

        // the columns the query reads: its target list and its quals
        let mut nodes: Vec<*mut pg_sys::Node> =
            vec![(*(*rel).reltarget).exprs as *mut pg_sys::Node];
        nodes.extend(
            list::ptrs::<pg_sys::RestrictInfo>((*rel).baserestrictinfo)
                .map(|r| (*r).clause as *mut pg_sys::Node),
        );
        let read = wanted_columns(&nodes, (*rel).relid, natts)
            .iter()
            .filter(|&&w| w)
            .count();
        (partial_workers, read)
    };
    // decoding cost grows with the columns read; a row costs something even when none is
    // read (count(*))
    let fraction = (read as f64 + 1.0) / (live as f64 + 1.0);

    // SAFETY: `rel` is valid and its path lists the planner's to change in this hook (the
    // contract); the new lists and paths are made in the planner's memory context.
    unsafe {
        if leading_key.is_some() {
            add_sorted_fetch_costs(rel, fraction);
        }
        (*rel).pathlist = without_plain_seqscan((*rel).pathlist);
        pg_sys::add_path(
            rel,
            make_path(
                root,
                rel,
                fraction,
                read_fraction,
                stripes_read,
                None,
                null_mut(),
            ) as *mut pg_sys::Path,
        );
        if super::ENABLE_PARAMETERIZED_SCAN.get() {
            let layout = Layout {
                leading_key,
                stripes: stripes_read,
                rows: read_fraction * (*rel).tuples,
            };
            add_parameterized_paths(root, rel, (*rte).relid, fraction, read_fraction, &layout);
        }
        // parallel workers share out whole stripes: with one stripe to read, none would help
        if let Some(workers) = partial_workers.filter(|&w| w > 0 && stripes_read > 1) {
            (*rel).partial_pathlist = without_plain_seqscan((*rel).partial_pathlist);
            pg_sys::add_partial_path(
                rel,
                make_path(
                    root,
                    rel,
                    fraction,
                    read_fraction,
                    stripes_read,
                    Some(workers),
                    null_mut(),
                ) as *mut pg_sys::Path,
            );
        }
    }
}

/// Adds a path parameterized by each set of other relations whose columns a join clause
/// compares one of `rel`'s with (`t.tags_id = tags.id`, from the join's clauses or its
/// equivalence classes, as an index's parameterized paths are found): the inner side of a
/// nested loop, which skips stripes and vectors by the outer row's values as by constants
/// (`Translator::with_outer`; the values are evaluated again at each rescan). Costed as the
/// unparameterized path (`columns`, `read_fraction`) times the share of vectors a value of
/// the join column leaves (`vectors_read_within`, from the clause's selectivity for one
/// value and the column's correlation), and at least one vector: a column stored in order
/// (a sort key) makes it cheap per outer row, an unordered one not, so the planner takes it
/// when the outer side is small and the column is ordered. Only clauses the scan can skip by
/// count; a set of relations that brings none gets no path.
///
/// # Safety
///
/// `root` and `rel` must be the planner's valid structures of base relation `relid`, in
/// `set_rel_pathlist`.
unsafe fn add_parameterized_paths(
    root: *mut pg_sys::PlannerInfo,
    rel: *mut pg_sys::RelOptInfo,
    relid: pg_sys::Oid,
    columns: f64,
    read_fraction: f64,
    layout: &Layout,
) {
    // SAFETY: `root` and `rel` are the planner's (the contract); the lists, sets and paths
    // are made in its memory context, and the callback reads only the member it is given
    unsafe {
        let mut clauses: Vec<*mut pg_sys::RestrictInfo> =
            list::ptrs::<pg_sys::RestrictInfo>((*rel).joininfo)
                .filter(|&r| pg_sys::join_clause_is_movable_to(r, rel))
                .collect();
        if (*rel).has_eclass_joins {
            let mut attnos: Vec<i16> = list::nodes((*(*rel).reltarget).exprs)
                .filter(|&n| pgrx::is_a(n, pg_sys::NodeTag::T_Var))
                .map(|n| n as *mut pg_sys::Var)
                .filter(|&v| (*v).varno as u32 == (*rel).relid && (*v).varattno > 0)
                .map(|v| (*v).varattno)
                .collect();
            attnos.sort_unstable();
            attnos.dedup();
            for mut attno in attnos {
                let implied = pg_sys::generate_implied_equalities_for_column(
                    root,
                    rel,
                    Some(member_is_column),
                    &mut attno as *mut i16 as *mut std::ffi::c_void,
                    null_mut(),
                );
                clauses.extend(list::ptrs::<pg_sys::RestrictInfo>(implied));
            }
        }
        let mut outers: Vec<pg_sys::Relids> = Vec::new();
        for rinfo in clauses {
            let outer = pg_sys::bms_del_members(
                pg_sys::bms_union((*rinfo).clause_relids, (*rel).lateral_relids),
                (*rel).relids,
            );
            if pg_sys::bms_num_members(outer) > 0
                && !outers.iter().any(|&o| pg_sys::bms_equal(o, outer))
            {
                outers.push(outer);
            }
        }
        let one_vector = if (*rel).tuples > 0.0 {
            (pg_columnar_codec::MAX_ROWS as f64 / (*rel).tuples).min(1.0)
        } else {
            0.0
        };
        for outer in outers {
            let param = pg_sys::get_baserel_parampathinfo(root, rel, outer);
            if param.is_null() {
                continue;
            }
            let mut translator = Translator::with_outer((*rel).relid, outer);
            let skipping = list::from_nodes(
                list::ptrs::<pg_sys::RestrictInfo>((*param).ppi_clauses)
                    .filter(|&r| {
                        !(*r).pseudoconstant && scan_qual(&mut translator, rel, r).is_some()
                    })
                    .map(|r| r as *mut pg_sys::Node),
            );
            if skipping.is_null() {
                continue;
            }
            let share =
                vectors_read_within(relid, root, rel, skipping, (*rel).relid as i32, 1.0, layout);
            let rows_read = (read_fraction * share).max(one_vector.min(read_fraction));
            pg_sys::add_path(
                rel,
                make_path(root, rel, columns, rows_read, 1, None, param) as *mut pg_sys::Path,
            );
        }
    }
}

/// Whether equivalence class member `em` is column `*arg` (an `i16` attribute number) of
/// `rel`: the callback of `generate_implied_equalities_for_column`.
///
/// # Safety
///
/// Called by PostgreSQL with valid planner structures and the `arg` given above.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn member_is_column(
    _root: *mut pg_sys::PlannerInfo,
    rel: *mut pg_sys::RelOptInfo,
    _ec: *mut pg_sys::EquivalenceClass,
    em: *mut pg_sys::EquivalenceMember,
    arg: *mut std::ffi::c_void,
) -> bool {
    // SAFETY: `em` and `rel` are the planner's, `arg` the attribute number given with the
    // callback (the contract); a RelabelType's `arg` is a valid expression
    unsafe {
        let mut expr = (*em).em_expr as *mut pg_sys::Node;
        while pgrx::is_a(expr, pg_sys::NodeTag::T_RelabelType) {
            expr = (*(expr as *mut pg_sys::RelabelType)).arg as *mut pg_sys::Node;
        }
        pgrx::is_a(expr, pg_sys::NodeTag::T_Var) && {
            let var = expr as *mut pg_sys::Var;
            (*var).varno as u32 == (*rel).relid
                && (*var).varlevelsup == 0
                && (*var).varattno == *(arg as *const i16)
        }
    }
}

/// The stripes that the quals' constants cannot rule out by the stripes' zone summaries (the
/// catalog rows, which the planner's size estimate reads anyway; no data page): the share
/// of the table's rows in them, what the scan will decode at most, and how many there are.
/// A parameter is not known at plan time and rules nothing out; a stable expression is
/// estimated as the planner does (`estimate_expression_value`). Vectors skipped inside the
/// stripes read are not counted. Without quals or stripes: (1.0, the stripes).
///
/// # Safety
///
/// `root` and `rel` must be the planner's valid structures of the base relation `relation`,
/// which is open, while planning.
unsafe fn stripes_read(
    root: *mut pg_sys::PlannerInfo,
    rel: *mut pg_sys::RelOptInfo,
    relation: pg_sys::Relation,
) -> (f64, usize) {
    use super::skip::{value_of, RuntimeSkip, Scalar, Value};
    // SAFETY: `rel` is valid (the contract).
    let mut translator = Translator::new(unsafe { (*rel).relid });
    let mut parts = Vec::new();
    // SAFETY: `rel`'s restriction list holds valid RestrictInfos of it (the contract), as
    // `scan_qual` requires.
    unsafe {
        for rinfo in list::ptrs::<pg_sys::RestrictInfo>((*rel).baserestrictinfo) {
            if (*rinfo).pseudoconstant {
                continue;
            }
            if let Some((e, _)) = scan_qual(&mut translator, rel, rinfo) {
                parts.push(e);
            }
        }
    }
    let Some(meta) = crate::storage::meta::read(relation) else {
        return (1.0, 0);
    };
    let planning = crate::storage::catalog::planning_list(
        meta.storage_id,
        meta.next_row,
        crate::am::scan::current_snapshot(),
    );
    let stripes = &planning.list;
    // rows numbered since the read are in stripes it does not list: counted as read
    let (rows_since, stripes_since) = (
        planning.rows_since,
        planning
            .rows_since
            .div_ceil(crate::am::write::stripe_row_limit()) as usize,
    );
    let total: u64 = stripes.stored_rows() + rows_since;
    if parts.is_empty() || total == 0 {
        return (1.0, stripes.len() + stripes_since);
    }
    let values: Vec<Value> = translator
        .values
        .iter()
        // SAFETY: `v` is a value expression copied from `rel`'s quals, estimated with the
        // valid `root` (the contract); a Const's value is a valid Datum of its type.
        .map(|&v| unsafe {
            let v = pg_sys::estimate_expression_value(root, v);
            if pgrx::is_a(v, pg_sys::NodeTag::T_Const) {
                let c = v as *mut pg_sys::Const;
                value_of((*c).constvalue, (*c).constisnull, (*c).consttype)
            } else {
                Value::One(Scalar::Unknown)
            }
        })
        .collect();
    let mut skip = RuntimeSkip::new(
        SkipExpr::And(parts),
        // SAFETY: `relation` is open (the contract).
        crate::am::datum::column_types(unsafe { (*relation).rd_att }),
        values,
    );
    // Past PLANNED_STRIPES stripes (a table of many small stripes that VACUUM has not merged
    // yet) the planning of each statement would cost more than the last: then the stripes
    // holding at least 1/PLANNED_STRIPES of the rows (at most that many) are checked each,
    // and of the smaller ones an evenly spaced sample of PLANNED_STRIPES, whose share of
    // rows and stripes read is scaled up to all of them (`StripeList::sample`).
    let sample = stripes.sample(PLANNED_STRIPES);
    let summaries = stripes.summaries();
    let mut may_match = |i: usize| {
        // a summary that does not parse is the scan's to report; here it rules nothing out
        summaries[i]
            .as_ref()
            .and_then(|r| r.as_ref().ok())
            .is_none_or(|summary| skip.may_match_stripe(summary, stripes.row(i).row_count as usize))
    };
    let (mut read, mut read_rows) = (0usize, 0u64);
    for &i in &sample.large {
        if may_match(i) {
            read += 1;
            read_rows += stripes.row(i).row_count;
        }
    }
    if !sample.sampled.is_empty() {
        let (mut small_read, mut small_read_rows) = (0usize, 0u64);
        for &i in &sample.sampled {
            if may_match(i) {
                small_read += 1;
                small_read_rows += stripes.row(i).row_count;
            }
        }
        read += (small_read as f64 * sample.small_count as f64 / sample.sampled.len() as f64)
            .round() as usize;
        read_rows += (small_read_rows as f64 * sample.small_rows as f64
            / sample.sampled_rows.max(1) as f64)
            .round() as u64;
    }
    (
        (read_rows + rows_since) as f64 / total as f64,
        read + stripes_since,
    )
}

/// Stripes whose zone summaries the planner checks at most ([`stripes_read`]).
const PLANNED_STRIPES: usize = 1024;

/// Of the rows in the stripes read (`stripe_fraction` of the table), the share in vectors
/// that are read: per column with single-column quals among `clauses` (estimated with
/// `var_relid` as `clauselist_selectivity` takes it: 0 for restriction clauses, the
/// relation's index for a parameterized path's join clauses, whose other side then counts
/// as one value), `f + (1 - f)(1 - c²)`, where `f` is their selectivity within those stripes
/// and `c` the column's correlation between row order and value (ANALYZE's statistic; 0
/// without one): the vectors of a column stored in order hold narrow ranges that the zone
/// maps skip, those of an unordered one wide ranges that they do not (the interpolation
/// btree's cost estimate makes from the same statistic). The leading column of a sort key is
/// sorted within each stripe however stripes follow each other (the correlation of a table
/// loaded in time order and sorted by host is near 0): its selected rows are one run per
/// stripe, `f` plus a vector per stripe.
///
/// # Safety
///
/// `root` and `rel` must be the planner's valid structures of base relation `relid`, while
/// planning.
unsafe fn vectors_read_within(
    relid: pg_sys::Oid,
    root: *mut pg_sys::PlannerInfo,
    rel: *mut pg_sys::RelOptInfo,
    clauses: *mut pg_sys::List,
    var_relid: i32,
    stripe_fraction: f64,
    layout: &Layout,
) -> f64 {
    if stripe_fraction <= 0.0 {
        return 1.0;
    }
    // the quals that read one column, by column
    let mut by_column: Vec<(i32, *mut pg_sys::List)> = Vec::new();
    // SAFETY: `rel`'s restriction list holds valid RestrictInfos with valid clauses (the
    // contract); the sets and lists are made in the planner's memory context.
    unsafe {
        for rinfo in list::ptrs::<pg_sys::RestrictInfo>(clauses) {
            if (*rinfo).pseudoconstant {
                continue;
            }
            let mut set: *mut pg_sys::Bitmapset = std::ptr::null_mut();
            pg_sys::pull_varattnos((*rinfo).clause as *mut pg_sys::Node, (*rel).relid, &mut set);
            let first = pg_sys::bms_next_member(set, -1);
            if first < 0 || pg_sys::bms_next_member(set, first) >= 0 {
                continue;
            }
            let attno = first + pg_sys::FirstLowInvalidHeapAttributeNumber;
            if attno <= 0 {
                continue;
            }
            match by_column.iter_mut().find(|(a, _)| *a == attno) {
                Some((_, l)) => *l = pg_sys::lappend(*l, rinfo as *mut std::ffi::c_void),
                None => by_column.push((
                    attno,
                    pg_sys::lappend(std::ptr::null_mut(), rinfo as *mut std::ffi::c_void),
                )),
            }
        }
    }
    let mut share = 1.0;
    for (attno, clauses) in by_column {
        // SAFETY: `root` is valid (the contract) and `clauses` a list of its RestrictInfos;
        // the statistics are looked up in a transaction (planning).
        let (selectivity, c) = unsafe {
            let selectivity = pg_sys::clauselist_selectivity(
                root,
                clauses,
                var_relid,
                pg_sys::JoinType::JOIN_INNER,
                std::ptr::null_mut(),
            );
            (
                selectivity * initplan_array_correction(root, clauses, var_relid),
                correlation(relid, attno),
            )
        };
        let f = (selectivity / stripe_fraction).clamp(0.0, 1.0);
        share *= if Some(attno) == layout.leading_key && layout.rows > 0.0 {
            // each stripe sorted by the column: the rows a qual on it selects are one run
            // in each stripe, a vector more than their own at most
            (f + layout.stripes as f64 * pg_columnar_codec::MAX_ROWS as f64 / layout.rows).min(1.0)
        } else {
            f + (1.0 - f) * (1.0 - c * c)
        };
    }
    share.clamp(0.0, 1.0)
}

/// PostgreSQL estimates `col = ANY (array)` of an array it cannot see as 10 elements; for an
/// array an initplan makes (`ARRAY(SELECT ...)`, as `subquery` makes of an IN subquery), the
/// planner knows the subquery's estimated rows: the factor that turns the selectivity of
/// `clauses` (one column's) into one for that many elements, from the per-element
/// selectivity the 10 imply. 1 for every other clause.
///
/// # Safety
/// `root` is the planner's, `clauses` a List of its RestrictInfos, while planning.
unsafe fn initplan_array_correction(
    root: *mut pg_sys::PlannerInfo,
    clauses: *mut pg_sys::List,
    var_relid: i32,
) -> f64 {
    let mut factor = 1.0;
    // SAFETY: `root` and `clauses` are the planner's (this function's contract); each node is
    // read as its type only once its tag says so; an initplan's `plan_id` numbers the
    // planner's list of subplans from 1
    unsafe {
        for rinfo in list::ptrs::<pg_sys::RestrictInfo>(clauses) {
            let clause = (*rinfo).clause as *mut pg_sys::Node;
            if !pgrx::is_a(clause, pg_sys::NodeTag::T_ScalarArrayOpExpr) {
                continue;
            }
            let saop = clause as *mut pg_sys::ScalarArrayOpExpr;
            let Some(array) = list::nodes((*saop).args).nth(1) else {
                continue;
            };
            if !(*saop).useOr || !pgrx::is_a(array, pg_sys::NodeTag::T_Param) {
                continue;
            }
            let param = array as *mut pg_sys::Param;
            if (*param).paramkind != pg_sys::ParamKind::PARAM_EXEC {
                continue;
            }
            let Some(subplan) = list::ptrs::<pg_sys::SubPlan>((*root).init_plans)
                .find(|&sp| pg_sys::list_member_int((*sp).setParam, (*param).paramid))
            else {
                continue;
            };
            let Some(plan) = list::ptrs::<pg_sys::Plan>((*(*root).glob).subplans)
                .nth((*subplan).plan_id as usize - 1)
            else {
                continue;
            };
            let assumed = pg_sys::clause_selectivity(
                root,
                rinfo as *mut pg_sys::Node,
                var_relid,
                pg_sys::JoinType::JOIN_INNER,
                std::ptr::null_mut(),
            )
            .clamp(1e-12, 1.0);
            let per_element = 1.0 - (1.0 - assumed).powf(1.0 / 10.0);
            let elements = (*plan).plan_rows.max(1.0);
            let known = 1.0 - (1.0 - per_element).powf(elements);
            factor *= known / assumed;
        }
    }
    factor
}

/// How the rows a scan reads lie: what [`vectors_read_within`] needs besides the statistics.
struct Layout {
    /// The first column (attribute number) of the table's sort key, if it has one: every
    /// stripe is sorted by it.
    leading_key: Option<i32>,
    /// The stripes read, and the rows they hold.
    stripes: usize,
    rows: f64,
}

/// Gives `f` ANALYZE's statistics slot of `kind` for attribute `attno` of `relid`
/// (`flags`: what of it to read), if there is one.
///
/// # Safety
///
/// Called in a transaction (a syscache lookup). The slot `f` is given is valid only during
/// the call.
unsafe fn with_stats_slot<R>(
    relid: pg_sys::Oid,
    attno: i32,
    kind: u32,
    flags: u32,
    f: impl FnOnce(&pg_sys::AttStatsSlot) -> R,
) -> Option<R> {
    // SAFETY: a syscache lookup, in a transaction (the contract); the tuple is released below.
    let tuple = unsafe {
        pg_sys::SearchSysCache3(
            pg_sys::SysCacheIdentifier::STATRELATTINH as i32,
            pg_sys::Datum::from(relid),
            pg_sys::Datum::from(attno as i16),
            pg_sys::Datum::from(false),
        )
    };
    if tuple.is_null() {
        return None;
    }
    // SAFETY: AttStatsSlot is plain data (pointers, numbers), all-zero valid before
    // `get_attstatsslot` fills it.
    let mut slot: pg_sys::AttStatsSlot = unsafe { std::mem::zeroed() };
    let mut out = None;
    // SAFETY: `tuple` is a pg_statistic row held until its release below; a slot filled is
    // read by `f` and then freed once.
    unsafe {
        if pg_sys::get_attstatsslot(
            &mut slot,
            tuple,
            kind as i32,
            pg_sys::InvalidOid,
            flags as i32,
        ) {
            out = Some(f(&slot));
            pg_sys::free_attstatsslot(&mut slot);
        }
        pg_sys::ReleaseSysCache(tuple);
    }
    out
}

/// ANALYZE's correlation of attribute `attno` (its absolute value), 0 without statistics.
///
/// # Safety
///
/// Called in a transaction (a syscache lookup).
pub(super) unsafe fn correlation(relid: pg_sys::Oid, attno: i32) -> f64 {
    let numbers = |slot: &pg_sys::AttStatsSlot| {
        if slot.nnumbers > 0 {
            // SAFETY: a slot read with ATTSTATSSLOT_NUMBERS holds `nnumbers` (> 0) numbers.
            unsafe { (*slot.numbers as f64).abs().min(1.0) }
        } else {
            0.0
        }
    };
    // SAFETY: in a transaction (the contract).
    unsafe {
        with_stats_slot(
            relid,
            attno,
            pg_sys::STATISTIC_KIND_CORRELATION,
            pg_sys::ATTSTATSSLOT_NUMBERS,
            numbers,
        )
    }
    .unwrap_or(0.0)
}

/// The least and greatest value ANALYZE's histogram of attribute `attno` holds, for a
/// column whose Datums are its integers (int8, timestamp, timestamptz); `None` without one.
///
/// # Safety
///
/// Called in a transaction (a syscache lookup).
pub(super) unsafe fn histogram_range(relid: pg_sys::Oid, attno: i32) -> Option<(i64, i64)> {
    let ends = |slot: &pg_sys::AttStatsSlot| {
        (slot.nvalues >= 2).then(|| {
            // SAFETY: a slot read with ATTSTATSSLOT_VALUES holds `nvalues` (>= 2) values.
            unsafe {
                (
                    (*slot.values).value() as i64,
                    (*slot.values.add(slot.nvalues as usize - 1)).value() as i64,
                )
            }
        })
    };
    // SAFETY: in a transaction (the contract).
    unsafe {
        with_stats_slot(
            relid,
            attno,
            pg_sys::STATISTIC_KIND_HISTOGRAM,
            pg_sys::ATTSTATSSLOT_VALUES,
            ends,
        )
    }
    .flatten()
}

/// PostgreSQL's share of a partial path's rows per process (costsize.c's
/// `get_parallel_divisor`: the leader counts for less the more workers there are).
///
/// # Safety
///
/// Called in a backend (it reads the setting `parallel_leader_participation`).
unsafe fn parallel_divisor(workers: i32) -> f64 {
    let mut divisor = workers as f64;
    // SAFETY: a setting, a global of the backend read in its one thread (the contract).
    if unsafe { pg_sys::parallel_leader_participation } {
        let leader = 1.0 - 0.3 * workers as f64;
        if leader > 0.0 {
            divisor += leader;
        }
    }
    divisor
}

/// A custom scan path: serial, or partial with `workers`. Like a sequential scan's cost,
/// of the rows in the `stripes` it will read (`rows_read`, a fraction of the table's), with
/// the pages and the per-row decoding scaled by the fraction of columns read (`columns`).
/// The processes of a parallel scan share whole stripes, so they divide the work by no more
/// than the stripes. With `param` (not null), a path parameterized by its outer relations:
/// it returns their `ppi_rows` rows a rescan, and evaluates its join clauses too.
///
/// # Safety
///
/// `root` and `rel` must be the planner's valid structures of a base relation, while
/// planning (the path is allocated in the current memory context, the planner's); `param`
/// null or a `ParamPathInfo` of `rel`.
unsafe fn make_path(
    root: *mut pg_sys::PlannerInfo,
    rel: *mut pg_sys::RelOptInfo,
    columns: f64,
    rows_read: f64,
    stripes: usize,
    workers: Option<i32>,
    param: *mut pg_sys::ParamPathInfo,
) -> *mut pg_sys::CustomPath {
    // SAFETY: `palloc0` returns a zeroed CustomPath-sized block (or raises an ERROR), which
    // the `&mut` below is the only reference to.
    let p = unsafe {
        pg_sys::palloc0(std::mem::size_of::<pg_sys::CustomPath>()) as *mut pg_sys::CustomPath
    };
    // SAFETY: as above.
    let path = unsafe { &mut (*p).path };
    path.type_ = pg_sys::NodeTag::T_CustomPath;
    path.pathtype = pg_sys::NodeTag::T_CustomScan;
    path.parent = rel;
    // SAFETY: `rel` is valid (the contract).
    path.pathtarget = unsafe { (*rel).reltarget };
    path.param_info = param;
    path.parallel_aware = workers.is_some();
    // SAFETY: as above.
    path.parallel_safe = unsafe { (*rel).consider_parallel };
    path.parallel_workers = workers.unwrap_or(0);
    path.pathkeys = std::ptr::null_mut();

    let (mut spc_random, mut spc_seq) = (0.0, 0.0);
    // SAFETY: a catalog lookup for the valid `rel`'s tablespace (the contract); the outputs
    // are live locals.
    unsafe {
        pg_sys::get_tablespace_page_costs((*rel).reltablespace, &mut spc_random, &mut spc_seq)
    };
    // SAFETY: `rel` and its target are valid (the contract).
    let (pages, mut qual, target, tuples, mut rows) = unsafe {
        (
            (*rel).pages,
            (*rel).baserestrictcost,
            (*(*rel).reltarget).cost,
            (*rel).tuples,
            (*rel).rows,
        )
    };
    if !param.is_null() {
        // as `get_restriction_qual_cost`: the join clauses moved into the scan cost too
        let mut join = pg_sys::QualCost::default();
        // SAFETY: `param` is `rel`'s (the contract); its clauses are valid RestrictInfos
        unsafe {
            pg_sys::cost_qual_eval(&mut join, (*param).ppi_clauses, root);
            rows = (*param).ppi_rows;
        }
        qual.startup += join.startup;
        qual.per_tuple += join.per_tuple;
    }
    let disk = spc_seq * pages as f64 * columns * rows_read;
    // SAFETY: `cpu_tuple_cost` is a setting, read in the backend's one thread.
    let per_row = unsafe { pg_sys::cpu_tuple_cost } * (0.5 + 0.5 * columns) + qual.per_tuple;
    let mut cpu = per_row * tuples * rows_read;
    if let Some(w) = workers {
        // SAFETY: in a backend, planning.
        let d = unsafe { parallel_divisor(w) }.min(stripes.max(1) as f64);
        cpu /= d;
        rows = (rows / d).round().max(1.0);
    }
    path.rows = rows;
    path.startup_cost = qual.startup + target.startup;
    path.total_cost = path.startup_cost + cpu + disk + target.per_tuple * rows;
    // SAFETY: `enable_seqscan` is a setting read in the backend's one thread, planning.
    if !unsafe { pg_sys::enable_seqscan } {
        // SAFETY: planning, in a backend.
        unsafe { crate::compat::disable_path(path) };
    }
    // ExecScan projects, so the planner need not put a Result node above for it
    // SAFETY: `p` is the block allocated above; `PATH_METHODS` is never written, so its
    // address may be kept in the path.
    unsafe {
        (*p).flags = pg_sys::CUSTOMPATH_SUPPORT_PROJECTION;
        (*p).methods = &raw const PATH_METHODS;
    }
    p
}

/// # Safety
///
/// Called by PostgreSQL only, as the `PlanCustomPath` of a PgcolScan path ([`make_path`]),
/// with valid planner structures, in the planner's memory context.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn plan_custom_path(
    _root: *mut pg_sys::PlannerInfo,
    rel: *mut pg_sys::RelOptInfo,
    best_path: *mut pg_sys::CustomPath,
    tlist: *mut pg_sys::List,
    clauses: *mut pg_sys::List,
    _custom_plans: *mut pg_sys::List,
) -> *mut pg_sys::Plan {
    // SAFETY: `palloc0` returns a zeroed CustomScan-sized block (or raises an ERROR); `rel`
    // and `best_path` are valid (the contract).
    let cscan = unsafe {
        let cscan =
            pg_sys::palloc0(std::mem::size_of::<pg_sys::CustomScan>()) as *mut pg_sys::CustomScan;
        (*cscan).scan.plan.type_ = pg_sys::NodeTag::T_CustomScan;
        (*cscan).scan.plan.targetlist = tlist;
        (*cscan).scan.scanrelid = (*rel).relid;
        (*cscan).flags = (*best_path).flags;
        (*cscan).methods = super::node::FRAME.scan_methods();
        cscan
    };

    // every qual that translates skips; those it translates exactly, with a kernel for each
    // leaf, are evaluated by the node instead of the executor (order does not matter: the
    // kernels call no function, so they can neither fail nor leak)
    // a parameterized path's join clauses compare with the outer relations' columns, which
    // the planner makes nestloop parameters in the qual and `custom_exprs` after this returns
    // SAFETY: `rel` and `best_path` are valid (the contract), and a path's `param_info` null
    // or its relation's
    let mut translator = unsafe {
        let param = (*best_path).path.param_info;
        if param.is_null() {
            Translator::new((*rel).relid)
        } else {
            Translator::with_outer((*rel).relid, (*param).ppi_req_outer)
        }
    };
    let (mut skip_parts, mut skip_clauses) = (Vec::new(), Vec::new());
    let (mut filter_parts, mut filter_clauses) = (Vec::new(), Vec::new());
    let mut quals: *mut pg_sys::List = std::ptr::null_mut();
    // SAFETY: called only with the valid clauses of the RestrictInfos below; the copy is made
    // in the planner's memory context, as the plan is.
    let copy = |n: *mut pg_sys::Node| unsafe {
        pg_sys::copyObjectImpl(n as *const std::ffi::c_void) as *mut pg_sys::Node
    };
    // SAFETY: `clauses` holds valid RestrictInfos of `rel` (the contract), as `scan_qual`
    // requires; `quals` is a list made here.
    unsafe {
        for rinfo in list::ptrs::<pg_sys::RestrictInfo>(clauses) {
            if (*rinfo).pseudoconstant {
                continue;
            }
            let clause = (*rinfo).clause as *mut pg_sys::Node;
            match scan_qual(&mut translator, rel, rinfo) {
                Some((e, true)) => {
                    skip_parts.push(e.clone());
                    skip_clauses.push(copy(clause));
                    filter_parts.push(e);
                    filter_clauses.push(copy(clause));
                }
                Some((e, _)) => {
                    skip_parts.push(e);
                    skip_clauses.push(copy(clause));
                    quals = pg_sys::lappend(quals, clause as *mut std::ffi::c_void);
                }
                None => quals = pg_sys::lappend(quals, clause as *mut std::ffi::c_void),
            }
        }
        (*cscan).scan.plan.qual = quals;
    }
    let and = |mut parts: Vec<SkipExpr>| match parts.len() {
        0 => None,
        1 => parts.pop(),
        _ => Some(SkipExpr::And(parts)),
    };
    let spec = ScanSpec {
        value_count: translator.values.len() as u16,
        skip_clauses: skip_clauses.len() as u16,
        skip: and(skip_parts),
        filter: and(filter_parts),
    };
    // SAFETY: `cscan` is the plan allocated above; the lists are made in the planner's
    // memory context, as `to_private` requires.
    unsafe {
        (*cscan).custom_exprs = list::from_nodes(
            translator
                .values
                .into_iter()
                .chain(skip_clauses)
                .chain(filter_clauses),
        );
        (*cscan).custom_private = super::plan_data::to_private(&spec);
    }
    cscan as *mut pg_sys::Plan
}

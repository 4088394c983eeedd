//! PgcolIndexSkip: the first row of each group of a row-store partition, read through a
//! btree index that leads with the group's column and then gives the query's order: one
//! descent of the index per group, instead of every row of the partition read and sorted.
//!
//! Planned only for `SELECT DISTINCT ON (g) ... ORDER BY g, o` over a partitioned table with
//! a pg_columnar partition (`super::topn::partitions_path`), for each of its partitions of
//! another access method (a lifecycle's newest partitions are heap): TSBS lastpoint sorted
//! all their rows. The index must be a btree whose first column is `g` (ascending or
//! descending) and whose next columns give the query's order after `g` (`o`'s direction and
//! NULLS), in the direction the index is scanned; a partial index only if the quals imply
//! its predicate. `pg_columnar.enable_index_skip = off` leaves those partitions' rows to the
//! Sort.
//!
//! The node scans the NULL group first (`g IS NULL`: its first row in the index's order),
//! then from the first non-NULL key, then from the key after each row returned (`g > last`
//! where the scan meets `g` ascending, `g < last` where descending), each a new descent of
//! the index. Rows are visible ones under the query's snapshot (the index scan's); the
//! partition's quals are evaluated here, a failing row leading to the next in the index's
//! order, so each group's row is its first row satisfying them. A row is copied into the
//! node's scan slot with its table and TID; a query reading another system column (`xmin`)
//! is not offered the node. The groups come in the index's order of `g`; PostgreSQL's Sort
//! and Unique above order and pick them with the other partitions' rows.

use pgrx::pg_sys;

use super::frame::{CustomNode, Frame};
use super::list;
use super::seeds::{self, DatumKind, SeedSet};

/// PgcolIndexSkip's method tables and their registration (`super::frame`).
pub(super) static FRAME: Frame<Exec> = Frame::new().with_path(plan_custom_path);

/// What the node reads, decided at plan time.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub(super) struct SkipSpec {
    /// The index's OID.
    index: u32,
    /// The table's column the index leads with (its attribute number, 1-based).
    key_column: i16,
    /// The index scanned backward (its order of `o` the reverse of the query's).
    backward: bool,
    /// The next group's key is greater than the last (the index's order of `g` in the scan's
    /// direction is ascending), else less.
    next_greater: bool,
    /// The order within a group, the index's second column: what a bound on it is.
    order: OrderColumn,
    /// How many of the plan's quals (the last ones of `custom_exprs`) are bounds on the
    /// order column that a group's rows, once they fail one, go on failing (`is_bound`); set
    /// by `plan_custom_path`.
    bounds: u16,
    /// The partitions' set this node records the rows it returns in (`super::seeds`); 0: none.
    seeds: u32,
    /// The planner's estimate of the partition's groups.
    groups: u32,
}

/// A group's order column (the index's second): its attribute number, its opfamily and
/// collation in the index, and whether the scan meets its values descending.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
struct OrderColumn {
    column: i16,
    opfamily: u32,
    collation: u32,
    descending: bool,
}

/// Whether the node may evaluate bounds on the order column before the other quals
/// (`is_bound`): only if no qual is a security barrier's or a row security policy's
/// (`security_level` 0 for all), whose quals must run before any other that may leak.
///
/// # Safety
/// `rinfos` is a valid List of RestrictInfos.
unsafe fn bounds_allowed(rinfos: *mut pg_sys::List) -> bool {
    // SAFETY: a valid List of RestrictInfos (this function's contract)
    unsafe { list::ptrs::<pg_sys::RestrictInfo>(rinfos).all(|r| (*r).security_level == 0) }
}

/// Whether `clause` bounds the order column so that a group's rows, met in the scan's order,
/// pass it and then fail it for good: `o >= x` or `o > x` met descending, `o <= x` or `o < x`
/// met ascending, `x` free of the relation's columns, the operator one of the index's
/// opfamily under its collation (so its order is the index's). Its first failure on a row
/// whose `o` is not NULL ends the group (a NULL `o` fails it too, but NULLs may come first).
///
/// # Safety
/// `clause` is a valid expression of relation `relid`, in a transaction.
unsafe fn is_bound(clause: *mut pg_sys::Node, relid: pg_sys::Index, order: &OrderColumn) -> bool {
    // SAFETY: `clause` is a valid expression (this function's contract), read by its tag
    unsafe {
        if (*clause).type_ != pg_sys::NodeTag::T_OpExpr {
            return false;
        }
        let op = clause as *mut pg_sys::OpExpr;
        if list::len((*op).args) != 2 || (*op).inputcollid.to_u32() != order.collation {
            return false;
        }
        let args: Vec<*mut pg_sys::Node> = list::nodes((*op).args).collect();
        let (var_left, other) = if column_of(args[0], relid) == Some(order.column) {
            (true, args[1])
        } else if column_of(args[1], relid) == Some(order.column) {
            (false, args[0])
        } else {
            return false;
        };
        if pg_sys::contain_var_clause(other) {
            return false;
        }
        let strategy =
            pg_sys::get_op_opfamily_strategy((*op).opno, pg_sys::Oid::from(order.opfamily)) as u32;
        // as `o <op> x`
        let keeps_large = match (strategy, var_left) {
            (pg_sys::BTGreaterStrategyNumber | pg_sys::BTGreaterEqualStrategyNumber, true)
            | (pg_sys::BTLessStrategyNumber | pg_sys::BTLessEqualStrategyNumber, false) => true,
            (pg_sys::BTLessStrategyNumber | pg_sys::BTLessEqualStrategyNumber, true)
            | (pg_sys::BTGreaterStrategyNumber | pg_sys::BTGreaterEqualStrategyNumber, false) => {
                false
            }
            _ => return false,
        };
        keeps_large == order.descending
    }
}

/// The path reading the first row of each group of partition `child`, a table of another
/// access method than pg_columnar, through one of its indexes, for `SELECT DISTINCT ON (g)
/// ... ORDER BY g, o ...` (`group`: `g` over `child`'s columns); `None` if no index of
/// `child` leads with `g` and gives that order, if the partition's quals are volatile, if
/// the query reads a system column other than `tableoid` and `ctid` (the node's rows are
/// copies), or if reading the partition whole costs less (groups nearly as many as rows).
///
/// # Safety
/// `root` is the planner's, at the DISTINCT stage, and `child` one of its partitions'
/// relations with its paths set; `group` and `order_by` (`o`) valid expressions over its
/// columns; `seeds` the partitions' set its rows are recorded in (`super::seeds`), 0 for
/// none; while planning, in the planner's memory context, in a transaction.
pub(super) unsafe fn path(
    root: *mut pg_sys::PlannerInfo,
    child: *mut pg_sys::RelOptInfo,
    group: *mut pg_sys::Node,
    order_by: *mut pg_sys::Node,
    seeds: u32,
) -> Option<*mut pg_sys::Path> {
    if !FRAME.registered() || !super::ENABLE_INDEX_SKIP.get() {
        return None;
    }
    // SAFETY: `root` and `child` are the planner's (this function's contract); the Lists are
    // read at once
    let (sort, quals, secure, tuples, whole, relid) = unsafe {
        (
            list::ptrs::<pg_sys::PathKey>((*root).sort_pathkeys).collect::<Vec<_>>(),
            list::ptrs::<pg_sys::RestrictInfo>((*child).baserestrictinfo)
                .map(|r| (*r).clause as *mut pg_sys::Node)
                .collect::<Vec<_>>(),
            bounds_allowed((*child).baserestrictinfo),
            (*child).tuples,
            (*child).cheapest_total_path,
            (*child).relid,
        )
    };
    // SAFETY: the partition's quals are valid expressions (this function's contract)
    let volatile = quals
        .iter()
        .any(|&q| unsafe { pg_sys::contain_volatile_functions(q) });
    // SAFETY: `child` is a base relation of the planner (this function's contract), so its
    // `relid` indexes the range table array; its table is locked by the planner
    if sort.len() < 2
        || volatile
        || whole.is_null()
        || unsafe { is_columnar_table(root, relid) || reads_other_system_columns(child, &quals) }
    {
        return None;
    }
    // SAFETY: `group` is a valid expression (this function's contract)
    let key_column = unsafe { column_of(group, relid) }?;
    // SAFETY: `child`'s index list holds its IndexOptInfos, valid while planning
    let indexes: Vec<*mut pg_sys::IndexOptInfo> =
        unsafe { list::ptrs((*child).indexlist) }.collect();
    let (index, backward) = indexes.into_iter().find_map(|index| {
        // the first column must be the group's: `build_index_pathkeys` leaves out a column
        // the quals hold constant, so the pathkeys alone would accept (tenant, g, o) for
        // `WHERE tenant = 1` and the node would skip by tenant
        // SAFETY: `index` is a valid IndexOptInfo of `child`, `root` the planner's
        if unsafe { *(*index).indexkeys } != key_column as i32 {
            return None;
        }
        // SAFETY: as above
        unsafe { gives_order(root, index, &sort) }.map(|backward| (index, backward))
    })?;
    // SAFETY: `index` is a valid IndexOptInfo with at least one key column
    let first_descending = unsafe { *(*index).reverse_sort };
    // SAFETY: while planning, in a transaction (this function's contract); `group` is a valid
    // expression and the List is made in the planner's memory context
    let groups = unsafe {
        pg_sys::estimate_num_groups(
            root,
            list::from_nodes([group]),
            tuples.max(1.0),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    }
    .max(1.0);
    // SAFETY: the planner's settings and `child`'s selectivity, read in the backend's thread
    let (random_page, index_tuple, tuple, operator, rows) = unsafe {
        (
            pg_sys::random_page_cost,
            pg_sys::cpu_index_tuple_cost,
            pg_sys::cpu_tuple_cost,
            pg_sys::cpu_operator_cost,
            (*child).rows,
        )
    };
    // each group: a descent (a leaf page and a table page not yet read), then the rows up to
    // its first satisfying the quals, each a table page: about 1 / their selectivity for
    // quals independent of the index's order, at most the group's rows; a qual on a column
    // of the index (`t < X` under `t DESC`, `h >= 'host_5'`) can fail a group's rows in a
    // run up to its end, so then the whole group is counted
    let rows_per_group = (tuples / groups).max(1.0);
    // SAFETY: `index` is a valid IndexOptInfo with at least two key columns (`gives_order`)
    let order = unsafe {
        OrderColumn {
            column: *(*index).indexkeys.add(1) as i16,
            opfamily: (*(*index).opfamily.add(1)).to_u32(),
            collation: (*(*index).indexcollations.add(1)).to_u32(),
            descending: *(*index).reverse_sort.add(1) != backward,
        }
    };
    // a bound on the order column ends a group at its first failure: it costs no rows read,
    // so the rows read until one passes come from the other quals' selectivity
    // SAFETY: the quals are valid expressions of `child`, in a transaction
    let others: Vec<*mut pg_sys::Node> = quals
        .iter()
        .copied()
        .filter(|&q| !(secure && order.column > 0 && unsafe { is_bound(q, relid, &order) }))
        .collect();
    // SAFETY: `index` is a valid IndexOptInfo; the quals valid expressions of `child`
    let on_key = unsafe { quals_read_key_columns(index, relid, &others) };
    // SAFETY: while planning (this function's contract); the List is made in the planner's
    // memory context
    let selectivity = unsafe {
        pg_sys::clauselist_selectivity(
            root,
            list::from_nodes(others.iter().copied()),
            relid as i32,
            pg_sys::JoinType::JOIN_INNER,
            std::ptr::null_mut(),
        )
    }
    .clamp(1e-9, 1.0);
    let read = if on_key {
        rows_per_group
    } else {
        rows_per_group.min(1.0 / selectivity)
    };
    let total =
        groups * (2.0 * random_page + (read - 1.0) * random_page + read * (index_tuple + tuple));
    // the alternative: every row of the partition, read by its cheapest path and sorted
    // above with the other partitions' (a comparison costs two operators, as cost_sort
    // counts it)
    let sorted = rows.max(2.0);
    // SAFETY: `whole` is `child`'s cheapest path, valid while planning
    let whole = unsafe { (*whole).total_cost } + sorted * sorted.log2() * 2.0 * operator;
    if total >= whole {
        return None;
    }
    // SAFETY: `index` is a valid IndexOptInfo of `child`
    let index_oid = unsafe { (*index).indexoid };
    let spec = SkipSpec {
        index: index_oid.to_u32(),
        key_column,
        backward,
        // the index's order of the group's key in the scan's direction
        next_greater: backward == first_descending,
        order,
        bounds: 0,
        groups: groups.min(u32::MAX as f64) as u32,
        // the rows are recorded with the index's second column as their order value: only
        // if it is the ORDER BY column (the pathkeys leave out a column the quals hold
        // constant, so an index (g, x, o) under `WHERE x = 1` gives the order of o)
        // SAFETY: `order_by` is a valid expression (this function's contract)
        seeds: if unsafe { column_of(order_by, relid) } == Some(order.column) {
            seeds
        } else {
            0
        },
    };
    // SAFETY: in a backend, while planning (this function's contract)
    let p = unsafe { FRAME.new_path() };
    // SAFETY: `p` was just made, and nothing else refers to it; `child` is the planner's
    unsafe {
        let path = &mut (*p).path;
        path.parent = child;
        path.pathtarget = (*child).reltarget;
        path.rows = groups.min(rows.max(1.0));
        path.startup_cost = 2.0 * random_page;
        path.total_cost = total;
        (*p).custom_private = FRAME.private(&spec);
    }
    Some(p as *mut pg_sys::Path)
}

/// The column (attribute number, 1-based) `expr` is, of relation `relid` of the query,
/// under any binary-compatible relabeling; `None` for another expression.
///
/// # Safety
/// `expr` is a valid expression.
unsafe fn column_of(expr: *mut pg_sys::Node, relid: pg_sys::Index) -> Option<i16> {
    // SAFETY: `expr` is a valid expression (this function's contract)
    unsafe { super::quals::column_of(expr, relid) }.map(|(c, _)| c as i16 + 1)
}

/// Whether the query's relation `relid` is a pg_columnar table (whose partitions PgcolTopN
/// reads, or PostgreSQL when it cannot).
///
/// # Safety
/// `root` is the planner's and `relid` a base relation's index in its range table, whose
/// table the planner has locked; in a transaction.
unsafe fn is_columnar_table(root: *mut pg_sys::PlannerInfo, relid: pg_sys::Index) -> bool {
    // SAFETY: `relid` indexes the range table array (this function's contract); the table is
    // locked, so it is opened without a lock and closed at once
    unsafe {
        let oid = (**(*root).simple_rte_array.add(relid as usize)).relid;
        let rel = pg_sys::RelationIdGetRelation(oid);
        if rel.is_null() {
            return true; // not opened: not offered
        }
        let columnar = crate::am::relation::is_columnar(rel);
        pg_sys::RelationClose(rel);
        columnar
    }
}

/// Whether the partition's target or quals read a system column other than `tableoid` and
/// `ctid`: the node's scan slot holds a copy of each row, which has those two alone.
///
/// # Safety
/// `child` is a relation of the planner and `quals` its quals, while planning.
unsafe fn reads_other_system_columns(
    child: *mut pg_sys::RelOptInfo,
    quals: &[*mut pg_sys::Node],
) -> bool {
    let mut attnos: *mut pg_sys::Bitmapset = std::ptr::null_mut();
    // SAFETY: `child`'s target and quals are valid expressions (this function's contract);
    // the set is made in the planner's memory context
    unsafe {
        let relid = (*child).relid as i32;
        pg_sys::pull_varattnos(
            (*(*child).reltarget).exprs as *mut pg_sys::Node,
            relid as _,
            &mut attnos,
        );
        for &q in quals {
            pg_sys::pull_varattnos(q, relid as _, &mut attnos);
        }
        let offset = pg_sys::FirstLowInvalidHeapAttributeNumber;
        let mut m = -1;
        loop {
            m = pg_sys::bms_next_member(attnos, m);
            if m < 0 {
                return false;
            }
            let attno = m + offset;
            if attno < 0
                && attno != pg_sys::TableOidAttributeNumber
                && attno != pg_sys::SelfItemPointerAttributeNumber
            {
                return true;
            }
        }
    }
}

/// Whether any of `quals` reads a key column of `index` (the group's or the order within
/// one).
///
/// # Safety
/// `index` is a valid IndexOptInfo of relation `relid`, `quals` valid expressions of it.
unsafe fn quals_read_key_columns(
    index: *mut pg_sys::IndexOptInfo,
    relid: pg_sys::Index,
    quals: &[*mut pg_sys::Node],
) -> bool {
    let mut attnos: *mut pg_sys::Bitmapset = std::ptr::null_mut();
    // SAFETY: valid expressions and index (this function's contract); the set is made in the
    // planner's memory context
    unsafe {
        for &q in quals {
            pg_sys::pull_varattnos(q, relid as _, &mut attnos);
        }
        (0..(*index).nkeycolumns as usize).any(|i| {
            let column = *(*index).indexkeys.add(i);
            // an expression column (0) counts as reading any column
            column == 0
                || pg_sys::bms_is_member(
                    column - pg_sys::FirstLowInvalidHeapAttributeNumber,
                    attnos,
                )
        })
    }
}

/// Whether `index` gives the DISTINCT ON order `sort` (its first pathkey the group's, the
/// rest the order within a group) one group after another: `Some(backward)`, the direction
/// to scan it in. The index's first key may go either way (the groups' order does not
/// matter); the keys after it must match the query's order exactly in that direction.
///
/// # Safety
/// `root` is the planner's and `index` a valid IndexOptInfo of one of its relations, while
/// planning, in a transaction.
unsafe fn gives_order(
    root: *mut pg_sys::PlannerInfo,
    index: *mut pg_sys::IndexOptInfo,
    sort: &[*mut pg_sys::PathKey],
) -> Option<bool> {
    // SAFETY: `index` is valid while planning (this function's contract)
    let usable = unsafe {
        (*index).relam == pg_sys::BTREE_AM_OID
            && !(*index).hypothetical
            && (*index).amhasgettuple
            && (*index).amsearchnulls
            && (*index).nkeycolumns as usize >= sort.len()
            && *(*index).indexkeys > 0
            && ((*index).indpred.is_null() || (*index).predOK)
    };
    if !usable {
        return None;
    }
    [false, true].into_iter().find(|&backward| {
        let direction = if backward {
            pg_sys::ScanDirection::BackwardScanDirection
        } else {
            pg_sys::ScanDirection::ForwardScanDirection
        };
        // SAFETY: the planner's `root` and a valid `index` (this function's contract); the
        // pathkeys are canonical (the planner's own), so equal ones are the same pointer
        unsafe {
            let keys: Vec<*mut pg_sys::PathKey> =
                list::ptrs(pg_sys::build_index_pathkeys(root, index, direction)).collect();
            keys.len() >= sort.len()
                && (*keys[0]).pk_eclass == (*sort[0]).pk_eclass
                && (*keys[0]).pk_opfamily == (*sort[0]).pk_opfamily
                && keys[1..sort.len()] == sort[1..]
        }
    })
}

/// The plan scans the partition itself: its scan tuple is a row of the table and the target
/// list the path's; the quals go to `custom_exprs`, evaluated by the node on each row it
/// reads (a row failing them must lead to the next row of its group, not to the next
/// group), the bounds on the order column last (a row failing one ends its group).
///
/// # Safety
/// PostgreSQL's contract (`PlanCustomPath`): `rel` is the partition's relation, `best_path`
/// a path [`path`] made, `tlist` its target list and `clauses` the partition's quals
/// (RestrictInfos), while planning.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn plan_custom_path(
    _root: *mut pg_sys::PlannerInfo,
    rel: *mut pg_sys::RelOptInfo,
    best_path: *mut pg_sys::CustomPath,
    tlist: *mut pg_sys::List,
    clauses: *mut pg_sys::List,
    _custom_plans: *mut pg_sys::List,
) -> *mut pg_sys::Plan {
    // SAFETY: `best_path` is a path [`path`] made, its private data the node's spec
    let mut spec: SkipSpec = unsafe {
        super::plan_data::from_private((*best_path).custom_private, &Exec::NAME.to_string_lossy())
    };
    // the bounds on the order column go last, counted in the spec
    // SAFETY: `clauses` are the partition's quals and `rel` its relation (this function's
    // contract), in a transaction
    let (mut others, mut bounds): (Vec<*mut pg_sys::Node>, Vec<*mut pg_sys::Node>) = unsafe {
        let relid = (*rel).relid;
        let secure = bounds_allowed(clauses);
        list::nodes(pg_sys::extract_actual_clauses(clauses, false))
            .partition(|&q| !(secure && spec.order.column > 0 && is_bound(q, relid, &spec.order)))
    };
    if let Ok(n) = u16::try_from(bounds.len()) {
        spec.bounds = n;
    } else {
        others.append(&mut bounds); // never so many; then none ends a group
        spec.bounds = 0;
    }
    // SAFETY: while planning, `best_path` a path of the node (this function's contract)
    let cscan = unsafe { FRAME.new_plan(best_path) };
    // SAFETY: `cscan` is the plan just made, nothing else refers to it; `rel` is the
    // planner's; the Lists and the plan data are made in the planner's memory context
    unsafe {
        (*cscan).scan.plan.targetlist = tlist;
        (*cscan).scan.scanrelid = (*rel).relid;
        (*cscan).custom_exprs = list::from_nodes(others.into_iter().chain(bounds));
        (*cscan).custom_private = FRAME.private(&spec);
    }
    cscan as *mut pg_sys::Plan
}

/// Where the scan is among the groups.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Step {
    /// The group of rows whose key is NULL.
    Nulls,
    /// The groups after the last key (`Exec::last`, or the seed passed last; none at first)
    /// and before the next seed's key (none past the last seed).
    Gap,
    /// The rows of the next seed's group that come before its seed.
    Seed,
    Done,
}

/// An operator of the index's opfamily on one of its columns, as a scan key takes it.
#[derive(Debug, Clone, Copy, Default)]
struct KeyOp {
    strategy: u16,
    /// The operator's input type (the opclass's, both sides).
    input: pg_sys::Oid,
    collation: pg_sys::Oid,
    procedure: pg_sys::Oid,
}

impl KeyOp {
    /// The operator of `strategy` on index column `column` (0-based) of `index`, if its
    /// opfamily has one.
    ///
    /// # Safety
    /// `index` is an open btree index with more than `column` key columns.
    unsafe fn of(index: pg_sys::Relation, column: usize, strategy: u32) -> Option<KeyOp> {
        // SAFETY: an open index's per-column arrays (this function's contract)
        unsafe {
            let family = *(*index).rd_opfamily.add(column);
            let input = *(*index).rd_opcintype.add(column);
            let op = pg_sys::get_opfamily_member(family, input, input, strategy as i16);
            (op != pg_sys::InvalidOid).then(|| KeyOp {
                strategy: strategy as u16,
                input,
                collation: *(*index).rd_indcollation.add(column),
                procedure: pg_sys::get_opcode(op),
            })
        }
    }
}

/// The operators of the descents.
#[derive(Debug, Clone, Copy, Default)]
struct KeyOps {
    /// First column: after the last key, before a seed's, a seed's.
    after: KeyOp,
    before: KeyOp,
    equal: KeyOp,
    /// Second column: before a seed's order value (a row that comes first); `None`: the
    /// seeds are not used.
    better: Option<KeyOp>,
}

/// What the node did, for EXPLAIN ANALYZE.
#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    descents: u64,
    rows_read: u64,
    groups: u64,
    /// Groups left at a row failing a bound on the order column, without a row.
    groups_ended: u64,
    /// Groups whose first row came from the partitions before this one (`super::seeds`).
    groups_seeded: u64,
}

pub(super) struct Exec {
    spec: SkipSpec,
    /// The index, open from the first row to the node's end.
    index: pg_sys::Relation,
    /// The scans of the descents of one key and of two, and the one pointed at a group.
    scan: pg_sys::IndexScanDesc,
    scan_of_two: pg_sys::IndexScanDesc,
    current: pg_sys::IndexScanDesc,
    /// A slot of the table's type, which the index scan stores rows into.
    table_slot: *mut pg_sys::TupleTableSlot,
    /// The query's memory, which holds the copy of the last key.
    query_memory: pg_sys::MemoryContext,
    /// The key column's `attbyval` and `attlen`.
    key_type: (bool, i16),
    quals: *mut pg_sys::ExprState,
    /// The bounds on the order column (`SkipSpec::bounds`).
    bounds: *mut pg_sys::ExprState,
    step: Step,
    /// A copy of the last key returned (palloc'd, in the query's memory, freed once the scan
    /// no longer refers to it).
    last: Option<pg_sys::Datum>,
    /// The scan keys of the current descent; the index scan keeps a copy of them, pointing
    /// to `last` or a seed's Datums.
    keys: [pg_sys::ScanKeyData; 2],
    ops: KeyOps,
    /// The partitions' set and how the key and order columns are read for it, if the rows
    /// returned are recorded (`super::seeds`).
    seeds: Option<(SeedSet, DatumKind, DatumKind)>,
    /// This pass's rows of the partitions before this one, as (key, order value) Datums of
    /// the index's types (a key by reference palloc'd in the query's memory), one per key,
    /// in the scan's order of keys; the next one; whether the last key passed is the seed
    /// before it (no row of its group came before it) rather than `last`.
    seed_keys: Vec<(pg_sys::Datum, pg_sys::Datum)>,
    seed_at: usize,
    after_seed: bool,
    /// A pass has begun (or the node) and its seeds are not taken yet.
    fresh: bool,
    counts: Counts,
}

impl Exec {
    /// Starts the index scan (at the first row asked for, so EXPLAIN without ANALYZE opens
    /// nothing).
    ///
    /// # Safety
    /// `node` is the node's begun `CustomScanState`, its relation open.
    unsafe fn start(&mut self, node: *mut pg_sys::CustomScanState) {
        // SAFETY: `node` is begun (this method's contract): its relation is open and its
        // executor state holds the query's snapshot; the index was chosen by the planner for
        // this relation, and the plan is invalidated if it is dropped
        unsafe {
            let heap = (*node).ss.ss_currentRelation;
            let snapshot = (*(*node).ss.ps.state).es_snapshot;
            self.index = pg_sys::index_open(
                pg_sys::Oid::from(self.spec.index),
                pg_sys::AccessShareLock as pg_sys::LOCKMODE,
            );
            // an index scan takes as many keys at each rescan as it was begun with: one scan
            // for the descents of one key, one for those of two
            self.scan = crate::compat::index_beginscan(heap, self.index, snapshot, 1);
            self.scan_of_two = crate::compat::index_beginscan(heap, self.index, snapshot, 2);
            // the comparisons of the first column's keys: the index's operators of its
            // opfamily and type, under its collation; after the last key is greater than it
            // when the scan meets keys ascending
            let (after, before) = if self.spec.next_greater {
                (
                    pg_sys::BTGreaterStrategyNumber,
                    pg_sys::BTLessStrategyNumber,
                )
            } else {
                (
                    pg_sys::BTLessStrategyNumber,
                    pg_sys::BTGreaterStrategyNumber,
                )
            };
            let first = |strategy| {
                KeyOp::of(self.index, 0, strategy).unwrap_or_else(|| {
                    pgrx::error!(
                        "pg_columnar: index {} has no operator of strategy {strategy} for its first column",
                        self.spec.index
                    )
                })
            };
            // a row before a seed's order value comes first: greater when the scan meets the
            // values descending. Seeds are used only if no row of a NULL order value comes
            // first (such a row would beat a seed, and the key leaves it out): the column
            // is NOT NULL, or the scan meets NULLs last
            let nulls_first =
                (*(*self.index).rd_indoption.add(1) as u32 & pg_sys::INDOPTION_NULLS_FIRST != 0)
                    != self.spec.backward;
            let column = self.spec.order.column.max(1) as usize - 1;
            let better = if self.spec.order.descending {
                pg_sys::BTGreaterStrategyNumber
            } else {
                pg_sys::BTLessStrategyNumber
            };
            self.ops = KeyOps {
                after: first(after),
                before: first(before),
                equal: first(pg_sys::BTEqualStrategyNumber),
                better: (self.seeds.is_some()
                    && (!nulls_first || crate::compat::attribute_never_null(heap, column)))
                .then(|| KeyOp::of(self.index, 1, better))
                .flatten(),
            };
        }
    }

    /// Points the index scan at the next group: `self.step`'s, from `self.last` or the seed
    /// passed last, up to the next seed's key.
    ///
    /// # Safety
    /// The scan is started ([`Exec::start`]); `self.step` is not `Done`.
    unsafe fn descend(&mut self) {
        // (attribute, operator, flags, argument) of each key, in attribute order; a NULL
        // test has no operator (InvalidStrategy)
        let null_test = KeyOp::default();
        let searching = |flag: u32| {
            (
                1,
                null_test,
                pg_sys::SK_ISNULL | flag,
                pg_sys::Datum::from(0),
            )
        };
        let mut keys: Vec<(i16, KeyOp, u32, pg_sys::Datum)> = Vec::with_capacity(2);
        match self.step {
            Step::Nulls => keys.push(searching(pg_sys::SK_SEARCHNULL)),
            Step::Gap => {
                let lower = if self.after_seed {
                    Some(self.seed_keys[self.seed_at - 1].0)
                } else {
                    self.last
                };
                if let Some(l) = lower {
                    keys.push((1, self.ops.after, 0, l));
                }
                if let Some(&(key, _)) = self.seed_keys.get(self.seed_at) {
                    keys.push((1, self.ops.before, 0, key));
                }
                if keys.is_empty() {
                    keys.push(searching(pg_sys::SK_SEARCHNOTNULL));
                }
            }
            Step::Seed => {
                let (key, value) = self.seed_keys[self.seed_at];
                keys.push((1, self.ops.equal, 0, key));
                let better = self.ops.better.expect("seeds only with their operator");
                keys.push((2, better, 0, value));
            }
            Step::Done => unreachable!("no group after the last"),
        }
        for (k, (attno, op, flags, arg)) in keys.iter().enumerate() {
            // SAFETY: `self.keys[k]` is this node's ScanKeyData (at most two keys)
            unsafe {
                pg_sys::ScanKeyEntryInitialize(
                    &mut self.keys[k],
                    *flags as i32,
                    *attno,
                    op.strategy,
                    op.input,
                    op.collation,
                    op.procedure,
                    *arg,
                )
            };
        }
        self.current = if keys.len() == 2 {
            self.scan_of_two
        } else {
            self.scan
        };
        // SAFETY: the scans are started (this method's contract), `current` the one begun
        // with this many keys; the keys are in attribute order and point to Datums that live
        // until the next descent
        unsafe {
            pg_sys::index_rescan(
                self.current,
                self.keys.as_mut_ptr(),
                keys.len() as i32,
                std::ptr::null_mut(),
                0,
            )
        };
        self.counts.descents += 1;
    }

    /// Takes this pass's rows of the partitions before this one (`super::seeds`) as the
    /// seeds the groups are read up to: one per key (its best order value), in the scan's
    /// order of keys, as Datums of the index's types. None unless the rows are recorded and
    /// the order column's operator is known (`KeyOps::better`); a row with a NULL key or
    /// order value is left out (its group is read as if unseen).
    ///
    /// # Safety
    /// The scan is started; in the query (its memory context live).
    unsafe fn take_seeds(&mut self) {
        self.forget_key();
        self.after_seed = false;
        self.seed_at = 0;
        for (key, _) in self.seed_keys.drain(..) {
            if self.key_type.0 {
                continue;
            }
            // SAFETY: a key by reference this node palloc'd, which no scan key points to
            // (the scan is rescanned before it reads again)
            unsafe { pg_sys::pfree(key.cast_mut_ptr()) };
        }
        let (Some((set, key_kind, order_kind)), Some(_)) = (self.seeds, self.ops.better) else {
            return;
        };
        let DatumKind::Int { len: order_len } = order_kind else {
            return;
        };
        let taken = set.take();
        // each seed costs two descents, each reading an entry: worth it where the seeds are
        // this partition's groups (a later time partition's), not where the partitions hold
        // other groups (partitions by group: many seeds, few of them here)
        if taken.rows.len() as u64 > 2 * self.spec.groups.max(1) as u64 {
            // SAFETY: in the query, whose memory context is the set's
            unsafe { set.put(taken) };
            return;
        }
        let mut seeds: Vec<(pg_sys::Datum, i64)> = Vec::with_capacity(taken.rows.len());
        // SAFETY: in the query's memory context, where the keys by reference are made
        let old = unsafe { pg_sys::MemoryContextSwitchTo(self.query_memory) };
        for seed in &taken.rows {
            let (Some(group), Some(value)) = (&seed.group, seed.value) else {
                continue;
            };
            let bytes = match (group, key_kind) {
                (seeds::GroupKey::Int(v), DatumKind::Int { len }) => {
                    seeds.push((DatumKind::int_datum(len, *v), value));
                    continue;
                }
                (seeds::GroupKey::Bytes(b), DatumKind::Bytes) => &b[..],
                (seeds::GroupKey::Interned(id), DatumKind::Bytes) => match &taken.interner {
                    Some(i) => i.get(*id),
                    None => continue,
                },
                _ => continue,
            };
            // SAFETY: a text of these bytes, palloc'd in the current (query) memory context
            let text = unsafe {
                pg_sys::cstring_to_text_with_len(
                    bytes.as_ptr() as *const std::ffi::c_char,
                    bytes.len() as i32,
                )
            };
            seeds.push((pg_sys::Datum::from(text), value));
        }
        // SAFETY: back to the caller's context
        unsafe { pg_sys::MemoryContextSwitchTo(old) };
        // SAFETY: in the query, whose memory context is the set's
        unsafe { set.put(taken) };
        // the scan's order of keys: the index's order of its first column, reversed when the
        // scan meets keys descending
        // SAFETY: the index is open; a btree opclass has its comparison function, whose
        // lookup the index's relcache entry keeps
        let order_proc =
            unsafe { pg_sys::index_getprocinfo(self.index, 1, pg_sys::BTORDER_PROC as u16) };
        let collation = self.ops.equal.collation;
        let compare = |a: pg_sys::Datum, b: pg_sys::Datum| -> std::cmp::Ordering {
            // SAFETY: the opclass's comparison of two values of its type (the Datums made
            // above), under the index's collation
            let r = unsafe { pg_sys::FunctionCall2Coll(order_proc, collation, a, b) };
            (r.value() as i32).cmp(&0)
        };
        let next_greater = self.spec.next_greater;
        seeds.sort_by(|a, b| {
            let c = compare(a.0, b.0);
            if next_greater {
                c
            } else {
                c.reverse()
            }
        });
        // one per key: the best value (the one the scan meets first)
        let descending = self.spec.order.descending;
        let mut kept: Vec<(pg_sys::Datum, i64)> = Vec::with_capacity(seeds.len());
        for (key, value) in seeds {
            match kept.last_mut() {
                Some(last) if compare(last.0, key).is_eq() => {
                    if (value > last.1) == descending && value != last.1 {
                        last.1 = value;
                    }
                    if !self.key_type.0 {
                        // SAFETY: a text palloc'd above, referred to by nothing else
                        unsafe { pg_sys::pfree(key.cast_mut_ptr()) };
                    }
                }
                _ => kept.push((key, value)),
            }
        }
        self.counts.groups_seeded = kept.len() as u64;
        self.seed_keys = kept
            .into_iter()
            .map(|(k, v)| (k, DatumKind::int_datum(order_len, v)))
            .collect();
    }

    /// The plan's quals (`custom_exprs`): the others, then the bounds on the order column
    /// (the last `SkipSpec::bounds`).
    ///
    /// # Safety
    /// `node` is the node's `CustomScanState`, its plan this node's CustomScan.
    unsafe fn quals_and_bounds(
        &self,
        node: *mut pg_sys::CustomScanState,
    ) -> (Vec<*mut pg_sys::Node>, Vec<*mut pg_sys::Node>) {
        // SAFETY: the node's plan is a CustomScan with its list of expressions (this
        // method's contract)
        let mut others: Vec<*mut pg_sys::Node> = unsafe {
            let cscan = (*node).ss.ps.plan as *mut pg_sys::CustomScan;
            list::nodes((*cscan).custom_exprs).collect()
        };
        let split = others.len().saturating_sub(self.spec.bounds as usize);
        let bounds = others.split_off(split);
        (others, bounds)
    }

    /// Points the scan at the group after the one of the row in the table slot: from the
    /// NULL group to the first key, else past the row's key (a seed's group: past the seed).
    ///
    /// # Safety
    /// The scan is started and not `Done`; the table slot holds the row of the current group.
    unsafe fn next_group(&mut self) {
        if self.step != Step::Nulls {
            // SAFETY: the table slot holds a row of the table (this method's contract);
            // the scan is rescanned just below, before it reads again
            unsafe { self.keep_key() };
            self.after_seed = false;
            if self.step == Step::Seed {
                self.seed_at += 1;
            }
        }
        self.step = Step::Gap;
        // SAFETY: the scan is started and `step` is not Done
        unsafe { self.descend() };
    }

    /// Keeps the key of the row in the table slot: a copy (detoasted) in the query's memory,
    /// which the next descent's scan key points to; the copy before it is freed.
    ///
    /// # Safety
    /// The table slot holds a row of the table; the index scan is rescanned before it reads
    /// again (it refers to the previous copy until then).
    unsafe fn keep_key(&mut self) {
        let column = self.spec.key_column as i32;
        let (byval, len) = self.key_type;
        // SAFETY: the slot holds a row of the table (this method's contract), whose column
        // `column` exists (the index leads with it); the copy is made in the query's memory
        let copy = unsafe {
            let old = pg_sys::MemoryContextSwitchTo(self.query_memory);
            let slot = self.table_slot;
            if ((*slot).tts_nvalid as i32) < column {
                pg_sys::slot_getsomeattrs_int(slot, column);
            }
            let value = *(*slot).tts_values.add(column as usize - 1);
            let copy = if len == -1 {
                pg_sys::Datum::from(pg_sys::pg_detoast_datum_copy(
                    value.cast_mut_ptr::<pg_sys::varlena>(),
                ))
            } else {
                pg_sys::datumCopy(value, byval, len as i32)
            };
            pg_sys::MemoryContextSwitchTo(old);
            copy
        };
        self.forget_key();
        self.last = Some(copy);
    }

    /// Frees the copy of the last key, if any, and is not pass-by-value.
    fn forget_key(&mut self) {
        if let Some(old) = self.last.take() {
            if !self.key_type.0 {
                // SAFETY: a copy `keep_key` palloc'd, referred to by nothing now
                unsafe { pg_sys::pfree(old.cast_mut_ptr()) };
            }
        }
    }

    /// What the row in the node's scan slot is to its group: `Pass` if it satisfies the
    /// partition's quals, `EndOfGroup` if it fails a bound on the order column with an order
    /// value (so every later row of its group fails it too), else `Fail`.
    ///
    /// # Safety
    /// `node` is the node's begun `CustomScanState`; its scan slot holds a row.
    unsafe fn test(&self, node: *mut pg_sys::CustomScanState) -> Test {
        // SAFETY: `node` is begun (this method's contract), with its expression context and
        // its scan slot holding a row of the table, whose order column exists
        unsafe {
            let econtext = (*node).ss.ps.ps_ExprContext;
            let slot = (*node).ss.ss_ScanTupleSlot;
            pg_sys::MemoryContextReset((*econtext).ecxt_per_tuple_memory);
            (*econtext).ecxt_scantuple = slot;
            if !self.bounds.is_null() && !pg_sys::ExecQual(self.bounds, econtext) {
                let column = self.spec.order.column as i32;
                if ((*slot).tts_nvalid as i32) < column {
                    pg_sys::slot_getsomeattrs_int(slot, column);
                }
                let null = *(*slot).tts_isnull.add(column as usize - 1);
                return if null { Test::Fail } else { Test::EndOfGroup };
            }
            if self.quals.is_null() || pg_sys::ExecQual(self.quals, econtext) {
                Test::Pass
            } else {
                Test::Fail
            }
        }
    }

    /// Records the row in the node's scan slot, which it returns, in the partitions' set
    /// (`super::seeds`), if it has one.
    ///
    /// # Safety
    /// `node` is the node's begun `CustomScanState`; its scan slot holds the row.
    unsafe fn record(&self, node: *mut pg_sys::CustomScanState) {
        let Some((set, key_kind, order_kind)) = self.seeds else {
            return;
        };
        let (key, order) = (self.spec.key_column as i32, self.spec.order.column as i32);
        // SAFETY: `node` is begun (this method's contract), its scan slot holding a row of the
        // table, which has both columns; a detoasted key is made in the per-row memory, reset
        // before the next row is tested, and copied out at once
        let seed = unsafe {
            let slot = (*node).ss.ss_ScanTupleSlot;
            let last = key.max(order);
            if ((*slot).tts_nvalid as i32) < last {
                pg_sys::slot_getsomeattrs_int(slot, last);
            }
            let datum = |c: i32| {
                (!*(*slot).tts_isnull.add(c as usize - 1))
                    .then(|| *(*slot).tts_values.add(c as usize - 1))
            };
            let econtext = (*node).ss.ps.ps_ExprContext;
            let old = pg_sys::MemoryContextSwitchTo((*econtext).ecxt_per_tuple_memory);
            let group = datum(key).map(|d| key_kind.key(d));
            pg_sys::MemoryContextSwitchTo(old);
            seeds::Seed {
                group,
                value: datum(order).and_then(|d| order_kind.value(d)),
            }
        };
        // SAFETY: the node runs in its query, whose memory context is the set's
        unsafe { set.add([seed]) };
    }
}

/// A row's test against the partition's quals ([`Exec::test`]).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Test {
    Pass,
    Fail,
    EndOfGroup,
}

/// `dst := src`, every column, as `ExecCopySlot` does, and the row's table and TID (which
/// `copyslot` leaves out), so `tableoid` and `ctid` read from `dst` are the row's.
///
/// # Safety
/// Both are valid slots of the same row type.
unsafe fn copy_slot(dst: *mut pg_sys::TupleTableSlot, src: *mut pg_sys::TupleTableSlot) {
    // SAFETY: valid slots (this function's contract); every slot type has `copyslot`
    unsafe {
        let copy = (*(*dst).tts_ops)
            .copyslot
            .expect("a slot type without copyslot");
        copy(dst, src);
        (*dst).tts_tableOid = (*src).tts_tableOid;
        (*dst).tts_tid = (*src).tts_tid;
    }
}

impl CustomNode for Exec {
    const NAME: &'static std::ffi::CStr = c"PgcolIndexSkip";
    const TABLE_ROWS: bool = false;
    const ABOVE_SCAN: bool = false;
    type Spec = SkipSpec;

    fn frame() -> &'static Frame<Exec> {
        &FRAME
    }

    /// # Safety
    /// As [`CustomNode::create`] (nothing is read of the plan here).
    unsafe fn create(_cscan: *mut pg_sys::CustomScan, spec: SkipSpec) -> Exec {
        Exec {
            spec,
            index: std::ptr::null_mut(),
            scan: std::ptr::null_mut(),
            scan_of_two: std::ptr::null_mut(),
            current: std::ptr::null_mut(),
            table_slot: std::ptr::null_mut(),
            query_memory: std::ptr::null_mut(),
            key_type: (true, 8),
            quals: std::ptr::null_mut(),
            bounds: std::ptr::null_mut(),
            step: Step::Nulls,
            last: None,
            // SAFETY: all-zero is a valid ScanKeyData (no flags, null Datum, InvalidOids)
            keys: unsafe { std::mem::zeroed() },
            ops: KeyOps::default(),
            seeds: None,
            seed_keys: Vec::new(),
            seed_at: 0,
            after_seed: false,
            fresh: true,
            counts: Counts::default(),
        }
    }

    /// # Safety
    /// As [`CustomNode::begin`].
    unsafe fn begin(
        &mut self,
        node: *mut pg_sys::CustomScanState,
        estate: *mut pg_sys::EState,
        _eflags: i32,
    ) {
        // SAFETY: `node` is being begun, its relation open and its plan this node's, in the
        // query's memory context (this method's contract); the extra slot is the executor
        // state's, dropped with it
        unsafe {
            let rel = (*node).ss.ss_currentRelation;
            self.query_memory = (*estate).es_query_cxt;
            let attr =
                crate::compat::tuple_desc_attr((*rel).rd_att, self.spec.key_column as usize - 1);
            self.key_type = ((*attr).attbyval, (*attr).attlen);
            self.table_slot = pg_sys::ExecInitExtraTupleSlot(
                estate,
                (*rel).rd_att,
                pg_sys::table_slot_callbacks(rel),
            );
            let (quals, bounds) = self.quals_and_bounds(node);
            let state = |part: Vec<*mut pg_sys::Node>, ps: *mut pg_sys::PlanState| {
                if part.is_empty() {
                    std::ptr::null_mut()
                } else {
                    pg_sys::ExecInitQual(list::from_nodes(part), ps)
                }
            };
            self.quals = state(quals, &mut (*node).ss.ps);
            self.bounds = state(bounds, &mut (*node).ss.ps);
            // the rows are recorded if both columns are of a kind the set's PgcolTopN nodes
            // read: an integer order column, an integer or string key
            let kind_of = |column: i16| {
                let attr = crate::compat::tuple_desc_attr((*rel).rd_att, column as usize - 1);
                DatumKind::of_type((*attr).atttypid)
            };
            self.seeds = match SeedSet::of(estate, self.spec.seeds) {
                Some(set) if self.spec.order.column > 0 => {
                    match (
                        kind_of(self.spec.key_column),
                        kind_of(self.spec.order.column),
                    ) {
                        (Some(key), Some(order @ DatumKind::Int { .. })) => Some((set, key, order)),
                        _ => None,
                    }
                }
                _ => None,
            };
        }
    }

    /// # Safety
    /// As [`CustomNode::next`].
    unsafe fn next(&mut self, node: *mut pg_sys::CustomScanState) -> *mut pg_sys::TupleTableSlot {
        // SAFETY: `node` is begun, not ended (this method's contract)
        let slot = unsafe { (*node).ss.ss_ScanTupleSlot };
        if self.scan.is_null() {
            // SAFETY: as above
            unsafe { self.start(node) };
        }
        if self.fresh {
            self.fresh = false;
            // SAFETY: the scan is started; in the query (its memory context live)
            unsafe { self.take_seeds() };
            self.step = Step::Nulls;
            // SAFETY: the scan is started, at the NULL group
            unsafe { self.descend() };
        }
        let direction = if self.spec.backward {
            pg_sys::ScanDirection::BackwardScanDirection
        } else {
            pg_sys::ScanDirection::ForwardScanDirection
        };
        loop {
            if self.step == Step::Done {
                // SAFETY: `slot` is the node's valid scan slot
                return unsafe { pg_sys::ExecClearTuple(slot) };
            }
            // SAFETY: the scan is started and pointed at a group; the table slot is of the
            // table's type, as the index scan asks
            let found =
                unsafe { pg_sys::index_getnext_slot(self.current, direction, self.table_slot) };
            if !found {
                // no (more) rows in this step's range: the NULL group's is empty, no key
                // follows (up to the next seed's), or no row of the seed's group comes before
                // the seed
                self.step = match self.step {
                    Step::Nulls => Step::Gap,
                    Step::Gap if self.seed_at < self.seed_keys.len() => Step::Seed,
                    Step::Seed => {
                        self.forget_key();
                        self.after_seed = true;
                        self.seed_at += 1;
                        Step::Gap
                    }
                    _ => Step::Done,
                };
                if self.step != Step::Done {
                    // SAFETY: the scan is started and `step` is not Done
                    unsafe { self.descend() };
                }
                continue;
            }
            self.counts.rows_read += 1;
            // SAFETY: both slots are valid, of the table's row type (the scan slot's
            // descriptor is the relation's)
            unsafe { copy_slot(slot, self.table_slot) };
            // SAFETY: `node` is begun and its scan slot holds the row
            match unsafe { self.test(node) } {
                // the next row in the index's order: of this group, or the next
                Test::Fail => continue,
                Test::EndOfGroup => {
                    self.counts.groups_ended += 1;
                    // SAFETY: the scan is started, at a group; the table slot holds its row
                    unsafe { self.next_group() };
                    continue;
                }
                Test::Pass => {}
            }
            self.counts.groups += 1;
            // SAFETY: `node` is begun, its scan slot holding the row returned
            unsafe { self.record(node) };
            // SAFETY: as above
            unsafe { self.next_group() };
            return slot;
        }
    }

    /// # Safety
    /// As [`CustomNode::recheck`]: the test tuple is evaluated against the quals.
    unsafe fn recheck(
        &mut self,
        node: *mut pg_sys::CustomScanState,
        slot: *mut pg_sys::TupleTableSlot,
    ) -> bool {
        // SAFETY: `node` is begun, `slot` holds a row of its table (this method's contract)
        unsafe {
            let scan_slot = (*node).ss.ss_ScanTupleSlot;
            copy_slot(scan_slot, slot);
            self.test(node) == Test::Pass
        }
    }

    fn rescan(&mut self) {
        // a new pass: the rows of the last one are not this one's (`super::seeds`)
        if let Some((set, _, _)) = self.seeds {
            set.clear();
        }
        // the seeds are taken and the scan pointed at the NULL group at the next row
        self.fresh = true;
    }

    /// # Safety
    /// As [`CustomNode::end`].
    unsafe fn end(&mut self, _node: *mut pg_sys::CustomScanState) {
        // SAFETY: the scan and the index, if started, are this node's, ended once; the lock
        // is kept to the transaction's end, as PostgreSQL's index scans keep it
        unsafe {
            if !self.scan.is_null() {
                pg_sys::index_endscan(self.scan);
                pg_sys::index_endscan(self.scan_of_two);
                self.scan = std::ptr::null_mut();
                self.scan_of_two = std::ptr::null_mut();
                self.current = std::ptr::null_mut();
            }
            if !self.index.is_null() {
                pg_sys::index_close(self.index, pg_sys::NoLock as pg_sys::LOCKMODE);
                self.index = std::ptr::null_mut();
            }
        }
        self.forget_key();
    }

    /// # Safety
    /// As [`CustomNode::explain`].
    unsafe fn explain(
        &self,
        node: *mut pg_sys::CustomScanState,
        ancestors: *mut pg_sys::List,
        es: *mut pg_sys::ExplainState,
    ) {
        // SAFETY: `node` is a begun node, its relation open, `es` EXPLAIN's state (this
        // method's contract); the names are read in a transaction
        let (index, column, analyze, verbose) = unsafe {
            let reloid = (*(*node).ss.ss_currentRelation).rd_id;
            let index = pg_sys::get_rel_name(pg_sys::Oid::from(self.spec.index));
            (
                if index.is_null() {
                    format!("#{}", self.spec.index)
                } else {
                    std::ffi::CStr::from_ptr(index)
                        .to_string_lossy()
                        .into_owned()
                },
                super::node::attribute_name(reloid, self.spec.key_column as u16 - 1),
                (*es).analyze,
                (*es).verbose,
            )
        };
        // SAFETY: `es` is EXPLAIN's state (this method's contract)
        let property = |label: &std::ffi::CStr, value: String| unsafe {
            super::node::explain_text(label, &value, es)
        };
        let direction = if self.spec.backward {
            "backward"
        } else {
            "forward"
        };
        property(c"Index", format!("{index} ({direction})"));
        property(c"First Row Per Group", column);
        // the quals this node evaluates (its plan's qual list is empty), the bounds apart
        // SAFETY: `node` is begun, its plan this node's CustomScan; `es` is EXPLAIN's state,
        // which set up its deparse context, and `ancestors` its list of the node's ancestors
        // (this method's contract)
        unsafe {
            let (quals, bounds) = self.quals_and_bounds(node);
            let context =
                pg_sys::set_deparse_context_plan((*es).deparse_cxt, (*node).ss.ps.plan, ancestors);
            for (label, part) in [(c"Filter", quals), (c"Bound", bounds)] {
                if !part.is_empty() {
                    property(label, super::node::deparse_clauses(&part, context, verbose));
                }
            }
        }
        if analyze {
            let c = self.counts;
            property(c"Index Descents", c.descents.to_string());
            property(c"Rows Read", c.rows_read.to_string());
            property(c"Groups", c.groups.to_string());
            if self.spec.seeds != 0 {
                property(
                    c"Groups From Earlier Partitions",
                    c.groups_seeded.to_string(),
                );
            }
            if self.spec.bounds > 0 {
                property(c"Groups Ended By Bound", c.groups_ended.to_string());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Exec, OrderColumn, SkipSpec};
    use crate::exec::frame::assert_round_trip;

    /// PgcolIndexSkip's plan data: both directions each way of the first column, extreme OIDs
    /// and columns.
    #[test]
    fn plan_data_round_trip() {
        let specs: Vec<SkipSpec> = [
            (0u32, 1i16, false, true),
            (u32::MAX, i16::MAX, true, true),
            (1, 2, false, false),
            (2, 3, true, false),
        ]
        .into_iter()
        .map(|(index, key_column, backward, next_greater)| SkipSpec {
            index,
            key_column,
            backward,
            next_greater,
            order: OrderColumn {
                column: key_column.saturating_add(1),
                opfamily: index,
                collation: u32::MAX - index,
                descending: backward,
            },
            bounds: key_column as u16,
            seeds: index.wrapping_mul(7),
            groups: index.wrapping_mul(3),
        })
        .collect();
        assert_round_trip::<Exec>(&specs);
    }
}

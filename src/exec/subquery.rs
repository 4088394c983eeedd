//! `col IN (SELECT ...)` on a pg_columnar column, planned as `col = ANY (ARRAY(SELECT ...))`:
//! the subquery becomes an initplan, run once before the scan, and its values reach the scan
//! as a run-time array it skips stripes and vectors by and filters with its sorted-set kernel,
//! as it does a constant `IN (...)` list; PgcolAgg and PgcolTopN then stay in play, which a
//! semi-join above the scan would rule out. TSBS's own query form reaches hosts this way
//! (`tags_id IN (SELECT id FROM tags WHERE hostname IN (...))`).
//!
//! The two forms give the same rows: in a WHERE clause's top-level AND, `x IN (subquery)` and
//! `x = ANY (array of the subquery's rows)` are the same OR of comparisons, NULLs included,
//! and neither duplicates a row. The rewrite is made in the planner hook, on the query about
//! to be planned (never on a stored view or rule), only where it is cheap for certain:
//!
//! * a top-level conjunct of a SELECT's WHERE (also in the SELECTs of its FROM subqueries and
//!   WITH queries), `col op ANY (subquery)` with `col` a column of a pg_columnar table of
//!   that query, or of a partitioned table with a pg_columnar partition (its heap partitions
//!   filter by the array as PostgreSQL does, or use it in an index scan), whose comparison
//!   with an array the scan evaluates exactly (asked of the scan's own `quals::Translator`);
//! * the subquery uncorrelated, without volatile functions, of one output column whose type
//!   has an array type, reading only tables of at most [`SMALL_TABLE_ROWS`] rows by their
//!   statistics (a dimension table): its array is built in memory, and each of its values
//!   is looked up per row only through the scan's sorted set.
//!
//! `pg_columnar.enable_subquery_values = off` plans such queries as PostgreSQL does (a
//! semi-join, which the scan joins as the inner side of a nested loop or under a hash join).

use pgrx::pg_sys;

use super::list;

/// Rows a table read by the subquery may have (pg_class's estimate; a table never analyzed
/// counts by its pages, [`SMALL_TABLE_PAGES`]).
const SMALL_TABLE_ROWS: f32 = 10_000.0;
const SMALL_TABLE_PAGES: i32 = 128;

/// Values the subquery may return (by the bound its tables' statistics give) when a
/// partitioned table it filters has partitions of another access method, which compare
/// each row with every value of the array.
const OTHER_PARTITION_VALUES: f64 = 100.0;

static mut PREV_PLANNER: pg_sys::planner_hook_type = None;

/// Installs the planner hook.
///
/// # Safety
/// Called once, from `_PG_init`, in the backend's one thread.
pub(super) unsafe fn install_hook() {
    // SAFETY: once per backend, before any planning (this function's contract)
    unsafe {
        PREV_PLANNER = pg_sys::planner_hook;
        pg_sys::planner_hook = Some(planner);
    }
}

/// # Safety
/// Called by PostgreSQL only, as `planner_hook`, with the query to plan.
#[cfg(not(feature = "pg19"))]
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn planner(
    parse: *mut pg_sys::Query,
    query_string: *const std::ffi::c_char,
    cursor_options: std::ffi::c_int,
    bound_params: pg_sys::ParamListInfo,
) -> *mut pg_sys::PlannedStmt {
    // SAFETY: `parse` is the query PostgreSQL plans next, which the planner may change (the
    // contract); `PREV_PLANNER` is written only at load, and the next planner gets the
    // arguments as given
    unsafe {
        rewrite(parse);
        match PREV_PLANNER {
            Some(prev) => prev(parse, query_string, cursor_options, bound_params),
            None => pg_sys::standard_planner(parse, query_string, cursor_options, bound_params),
        }
    }
}

/// # Safety
/// Called by PostgreSQL only, as `planner_hook`, with the query to plan.
#[cfg(feature = "pg19")]
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn planner(
    parse: *mut pg_sys::Query,
    query_string: *const std::ffi::c_char,
    cursor_options: std::ffi::c_int,
    bound_params: pg_sys::ParamListInfo,
    es: *mut pg_sys::ExplainState,
) -> *mut pg_sys::PlannedStmt {
    // SAFETY: as the other majors' `planner` above
    unsafe {
        rewrite(parse);
        match PREV_PLANNER {
            Some(prev) => prev(parse, query_string, cursor_options, bound_params, es),
            None => pg_sys::standard_planner(parse, query_string, cursor_options, bound_params, es),
        }
    }
}

/// Rewrites the IN subqueries of `query` (a SELECT) and of the SELECTs of its FROM
/// subqueries and WITH queries that qualify (see the module's documentation).
///
/// # Safety
/// `query` is a valid Query being planned, in a transaction; new nodes are made in the
/// current memory context, the planner's.
unsafe fn rewrite(query: *mut pg_sys::Query) {
    if !super::ENABLE_SUBQUERY_VALUES.get() || !super::ENABLE_CUSTOM_SCAN.get() {
        return;
    }
    // SAFETY: `query` is valid (the contract); its range table, WITH list and join tree are
    // valid lists and nodes of it
    unsafe {
        if (*query).commandType != pg_sys::CmdType::CMD_SELECT {
            return;
        }
        for rte in list::ptrs::<pg_sys::RangeTblEntry>((*query).rtable) {
            if (*rte).rtekind == pg_sys::RTEKind::RTE_SUBQUERY && !(*rte).subquery.is_null() {
                rewrite((*rte).subquery);
            }
        }
        for cte in list::ptrs::<pg_sys::CommonTableExpr>((*query).cteList) {
            let q = (*cte).ctequery as *mut pg_sys::Node;
            if !q.is_null() && pgrx::is_a(q, pg_sys::NodeTag::T_Query) {
                rewrite(q as *mut pg_sys::Query);
            }
        }
        let jointree = (*query).jointree;
        if jointree.is_null() || (*jointree).quals.is_null() {
            return;
        }
        let quals = (*jointree).quals;
        let and = pgrx::is_a(quals, pg_sys::NodeTag::T_BoolExpr)
            && (*(quals as *mut pg_sys::BoolExpr)).boolop == pg_sys::BoolExprType::AND_EXPR;
        if and {
            let b = quals as *mut pg_sys::BoolExpr;
            let args: Vec<*mut pg_sys::Node> = list::nodes((*b).args)
                .map(|n| as_array_any(query, n).unwrap_or(n))
                .collect();
            (*b).args = list::from_nodes(args);
        } else if let Some(new) = as_array_any(query, quals) {
            (*jointree).quals = new;
        }
    }
}

/// `col op ANY (ARRAY(subquery))` for conjunct `node` of `query`'s WHERE if it is a qualifying
/// `col op ANY (subquery)`.
///
/// # Safety
/// As [`rewrite`]; `node` a conjunct of `query`'s WHERE.
unsafe fn as_array_any(
    query: *mut pg_sys::Query,
    node: *mut pg_sys::Node,
) -> Option<*mut pg_sys::Node> {
    // SAFETY: `node` and `query` are valid (the contract); each node is read as its type only
    // once its tag says so; the lookups are catalog reads, in a transaction
    unsafe {
        if !pgrx::is_a(node, pg_sys::NodeTag::T_SubLink) {
            return None;
        }
        let sublink = node as *mut pg_sys::SubLink;
        if (*sublink).subLinkType != pg_sys::SubLinkType::ANY_SUBLINK
            || (*sublink).testexpr.is_null()
            || !pgrx::is_a((*sublink).testexpr, pg_sys::NodeTag::T_OpExpr)
        {
            return None;
        }
        let op = (*sublink).testexpr as *mut pg_sys::OpExpr;
        let args: Vec<*mut pg_sys::Node> = list::nodes((*op).args).collect();
        let [left, right] = args[..] else {
            return None;
        };
        // the subquery's one output column, as is
        if !pgrx::is_a(right, pg_sys::NodeTag::T_Param) {
            return None;
        }
        let param = right as *mut pg_sys::Param;
        if (*param).paramkind != pg_sys::ParamKind::PARAM_SUBLINK || (*param).paramid != 1 {
            return None;
        }
        let var = super::quals::strip(left);
        if !pgrx::is_a(var, pg_sys::NodeTag::T_Var) {
            return None;
        }
        let var = var as *mut pg_sys::Var;
        if (*var).varlevelsup != 0 || (*var).varattno <= 0 {
            return None;
        }
        let rte =
            list::ptrs::<pg_sys::RangeTblEntry>((*query).rtable).nth((*var).varno as usize - 1)?;
        if (*rte).rtekind != pg_sys::RTEKind::RTE_RELATION {
            return None;
        }
        let sub = (*sublink).subselect as *mut pg_sys::Query;
        if sub.is_null()
            || (*sub).commandType != pg_sys::CmdType::CMD_SELECT
            || pg_sys::contain_vars_of_level(sub as *mut pg_sys::Node, 1)
            || pg_sys::contain_volatile_functions(sub as *mut pg_sys::Node)
        {
            return None;
        }
        let rows = small_tables_rows(sub)?;
        if !is_columnar_table((*rte).relid) {
            // a partitioned table with a pg_columnar partition; its other partitions look
            // the values up in the array one by one (PostgreSQL hashes only a constant
            // array), so only a few values, where a hash semi-join would not be better
            let leaves = crate::am::relation::partition_leaves((*rte).relid)?;
            if leaves.columnar == 0 || (leaves.other > 0 && rows > OTHER_PARTITION_VALUES) {
                return None;
            }
        }
        let outputs = list::ptrs::<pg_sys::TargetEntry>((*sub).targetList)
            .filter(|&te| !(*te).resjunk)
            .count();
        let array_type = pg_sys::get_array_type((*param).paramtype);
        if outputs != 1 || array_type == pg_sys::InvalidOid {
            return None;
        }
        // the ANY the rewrite makes, first with a stand-in value of the array's type: the
        // scan's translator says whether its filter evaluates it exactly
        let probe = pg_sys::palloc0(std::mem::size_of::<pg_sys::Param>()) as *mut pg_sys::Param;
        (*probe).xpr.type_ = pg_sys::NodeTag::T_Param;
        (*probe).paramkind = pg_sys::ParamKind::PARAM_EXEC;
        (*probe).paramtype = array_type;
        (*probe).paramtypmod = -1;
        (*probe).paramcollid = (*param).paramcollid;
        (*probe).location = -1;
        let any = pg_sys::palloc0(std::mem::size_of::<pg_sys::ScalarArrayOpExpr>())
            as *mut pg_sys::ScalarArrayOpExpr;
        (*any).xpr.type_ = pg_sys::NodeTag::T_ScalarArrayOpExpr;
        (*any).opno = (*op).opno;
        (*any).opfuncid = (*op).opfuncid;
        (*any).useOr = true;
        (*any).inputcollid = (*op).inputcollid;
        (*any).args = list::from_nodes([left, probe as *mut pg_sys::Node]);
        (*any).location = -1;
        let mut translator = super::quals::Translator::new((*var).varno as u32);
        if !matches!(
            translator.translate_qual(any as *mut pg_sys::Node, false),
            Some((_, true))
        ) {
            return None;
        }
        let array = pg_sys::palloc0(std::mem::size_of::<pg_sys::SubLink>()) as *mut pg_sys::SubLink;
        (*array).xpr.type_ = pg_sys::NodeTag::T_SubLink;
        (*array).subLinkType = pg_sys::SubLinkType::ARRAY_SUBLINK;
        (*array).subselect = sub as *mut pg_sys::Node;
        (*array).location = -1;
        (*any).args = list::from_nodes([left, array as *mut pg_sys::Node]);
        Some(any as *mut pg_sys::Node)
    }
}

/// Whether relation `relid` is a pg_columnar table.
///
/// # Safety
/// In a transaction; the relation is locked by the query being planned.
unsafe fn is_columnar_table(relid: pg_sys::Oid) -> bool {
    // SAFETY: a relcache lookup of a relation the query has locked (the contract), closed
    // at once
    unsafe {
        let rel = pg_sys::RelationIdGetRelation(relid);
        if rel.is_null() {
            return false;
        }
        let columnar = crate::am::relation::is_columnar(rel);
        pg_sys::RelationClose(rel);
        columnar
    }
}

/// If `sub` reads only tables (no functions, VALUES or subqueries) small by their
/// statistics (of at most [`SMALL_TABLE_ROWS`] rows, or [`SMALL_TABLE_PAGES`] pages if never
/// analyzed, counted as [`SMALL_TABLE_ROWS`]): a bound on the rows it returns, the product of
/// the tables' rows (a join returns at most that; set-returning targets and grouping sets,
/// which may return more, give no bound).
///
/// # Safety
/// `sub` is a valid Query, in a transaction.
unsafe fn small_tables_rows(sub: *mut pg_sys::Query) -> Option<f64> {
    // SAFETY: `sub` is a valid Query (the contract)
    if unsafe { (*sub).hasTargetSRFs || !(*sub).groupingSets.is_null() } {
        return None;
    }
    let mut bound = 1.0f64;
    // SAFETY: `sub`'s range table holds valid entries (the contract); each relation is one
    // the query has locked, opened and closed at once
    unsafe {
        for rte in list::ptrs::<pg_sys::RangeTblEntry>((*sub).rtable) {
            match (*rte).rtekind {
                pg_sys::RTEKind::RTE_JOIN => {}
                pg_sys::RTEKind::RTE_RELATION => {
                    let rel = pg_sys::RelationIdGetRelation((*rte).relid);
                    if rel.is_null() {
                        return None;
                    }
                    let (tuples, pages) = ((*(*rel).rd_rel).reltuples, (*(*rel).rd_rel).relpages);
                    pg_sys::RelationClose(rel);
                    let rows = if tuples >= 0.0 {
                        (tuples <= SMALL_TABLE_ROWS).then_some(tuples)
                    } else {
                        (pages <= SMALL_TABLE_PAGES).then_some(SMALL_TABLE_ROWS)
                    }?;
                    bound *= f64::from(rows).max(1.0);
                }
                _ => return None,
            }
        }
    }
    Some(bound)
}

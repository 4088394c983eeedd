//! PgcolTopN: the first rows of a pg_columnar table by one integer, date or timestamp
//! column, overall or in each group, reading only the vectors that can hold them.
//!
//! It plans two query shapes over one table whose quals the scan evaluates itself, with
//! neither aggregates, window functions, row locks nor volatile or set-returning targets:
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
use pg_columnar_codec::group::GroupTable;
use pg_columnar_codec::stripe::StoredZone;
use pg_columnar_codec::topn::{Order, Rank, TopRows};
use pg_columnar_codec::MAX_ROWS;
use pgrx::pg_sys;

use super::frame::{CustomNode, Frame};
use super::group::{key_spec, KeyReader, KeySpec};
use super::list;
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

pub unsafe fn install() {
    FRAME.register();
    PREV_UPPER_PATHS = pg_sys::create_upper_paths_hook;
    pg_sys::create_upper_paths_hook = Some(upper_paths);
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
    if let Some(path) = topn_path(root, stage, input_rel, output_rel) {
        pg_sys::add_path(output_rel, path as *mut pg_sys::Path);
    }
}

/// The ordering of sort clause `sgc` over `expr` if `expr` is an integer column of relation
/// `relid` sorted by its type's own `<` or `>`: the column and the order.
unsafe fn order_of(
    sgc: *mut pg_sys::SortGroupClause,
    expr: *mut pg_sys::Node,
    relid: pg_sys::Index,
    natts: usize,
) -> Option<(u16, Order)> {
    let Some(KeySpec::Int { column }) = key_spec(expr, relid, natts) else {
        return None;
    };
    let tc = pg_sys::lookup_type_cache(
        pg_sys::exprType(expr),
        (pg_sys::TYPECACHE_LT_OPR | pg_sys::TYPECACHE_GT_OPR) as i32,
    );
    if tc.is_null() {
        return None;
    }
    let descending = match (*sgc).sortop {
        op if op == (*tc).gt_opr => true,
        op if op == (*tc).lt_opr => false,
        _ => return None,
    };
    Some((
        column,
        Order {
            descending,
            nulls_first: (*sgc).nulls_first,
        },
    ))
}

/// The path, if the query is one of the shapes this node computes (see the module's
/// comment): at `UPPERREL_DISTINCT` the DISTINCT ON shape, at `UPPERREL_ORDERED` the
/// ORDER BY ... LIMIT one.
unsafe fn topn_path(
    root: *mut pg_sys::PlannerInfo,
    stage: pg_sys::UpperRelationKind::Type,
    input: *mut pg_sys::RelOptInfo,
    output: *mut pg_sys::RelOptInfo,
) -> Option<*mut pg_sys::CustomPath> {
    let parse = (*root).parse;
    let target = *(*root).upper_targets.as_ptr().add(stage as usize);
    if target.is_null()
        || (*parse).hasAggs
        || !(*parse).groupClause.is_null()
        || !(*parse).groupingSets.is_null()
        || !(*parse).havingQual.is_null()
        || (*parse).hasWindowFuncs
        || (*parse).hasTargetSRFs
        || !(*parse).rowMarks.is_null()
        || pg_sys::contain_volatile_functions((*target).exprs as *mut pg_sys::Node)
        || pg_sys::contain_subplans((*target).exprs as *mut pg_sys::Node)
    {
        return None;
    }
    let relid = (*input).relid;
    let (scan, natts) = super::plan::scan_path_below(root, input, false)?;
    let sort: Vec<*mut pg_sys::SortGroupClause> = list::ptrs((*parse).sortClause).collect();
    let tlist = (*parse).targetList;
    let expr_of = |sgc: *mut pg_sys::SortGroupClause| pg_sys::get_sortgroupclause_expr(sgc, tlist);
    let (spec, rows, pathkeys) = if stage == pg_sys::UpperRelationKind::UPPERREL_DISTINCT {
        let distinct: Vec<*mut pg_sys::SortGroupClause> =
            list::ptrs((*parse).distinctClause).collect();
        if !(*parse).hasDistinctOn
            || distinct.len() != 1
            || sort.len() != 2
            || (*sort[0]).tleSortGroupRef != (*distinct[0]).tleSortGroupRef
        {
            return None;
        }
        let g = expr_of(distinct[0]);
        let group = key_spec(g, relid, natts)
            .filter(|k| matches!(k, KeySpec::Int { .. } | KeySpec::Text { .. }))?;
        // DISTINCT ON's equality must be the type's own (for text: bytewise, the collation
        // being deterministic)
        let tc = pg_sys::lookup_type_cache(pg_sys::exprType(g), pg_sys::TYPECACHE_EQ_OPR as i32);
        if tc.is_null() || (*distinct[0]).eqop != (*tc).eq_opr {
            return None;
        }
        let (column, order) = order_of(sort[1], expr_of(sort[1]), relid, natts)?;
        let groups = pg_sys::estimate_num_groups(
            root,
            list::from_nodes([g as *mut pg_sys::Node]),
            (*scan).rows,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        );
        if groups * BYTES_PER_GROUP > super::agg::group_memory_limit() as f64 {
            return None;
        }
        (
            TopSpec {
                column,
                order,
                keep: 1,
                group: Some(group),
            },
            groups,
            std::ptr::null_mut(),
        )
    } else {
        let keep = (*root).limit_tuples;
        if !(*parse).distinctClause.is_null()
            || sort.len() != 1
            || !(1.0..=MAX_KEEP).contains(&keep)
        {
            return None;
        }
        let (column, order) = order_of(sort[0], expr_of(sort[0]), relid, natts)?;
        (
            TopSpec {
                column,
                order,
                keep: keep as u32,
                group: None,
            },
            keep.min((*scan).rows),
            (*root).sort_pathkeys,
        )
    };
    let rte = *(*root).simple_rte_array.add(relid as usize);
    let correlation = super::plan::correlation((*rte).relid, spec.column as i32 + 1);
    let share = (1.0 - correlation).max(LEAST_SHARE_OF_SCAN_COST);
    let p = FRAME.new_path();
    let path = &mut (*p).path;
    path.parent = output;
    path.pathtarget = target;
    path.pathkeys = pathkeys;
    path.rows = rows.max(1.0);
    path.startup_cost = (*scan).startup_cost + ((*scan).total_cost - (*scan).startup_cost) * share;
    path.total_cost = path.startup_cost + path.rows * pg_sys::cpu_tuple_cost;
    (*p).custom_paths = list::from_nodes([scan as *mut pg_sys::Node]);
    (*p).custom_private = FRAME.private(&spec);
    Some(p)
}

/// What a group holds here: its key in the group table, its row in `TopRows`.
const BYTES_PER_GROUP: f64 = 96.0;

/// The plan scans the relation itself (its scan tuple is a row of the table, stored by the
/// child's reader), so the target list is the path's, over the relation's columns.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn plan_custom_path(
    _root: *mut pg_sys::PlannerInfo,
    _rel: *mut pg_sys::RelOptInfo,
    best_path: *mut pg_sys::CustomPath,
    tlist: *mut pg_sys::List,
    _clauses: *mut pg_sys::List,
    custom_plans: *mut pg_sys::List,
) -> *mut pg_sys::Plan {
    let child = list::ptrs::<pg_sys::CustomScan>(custom_plans)
        .next()
        .expect("PgcolTopN without its scan");
    let cscan = FRAME.new_plan(best_path);
    (*cscan).scan.plan.targetlist = tlist;
    (*cscan).scan.scanrelid = (*child).scan.scanrelid;
    (*cscan).custom_plans = custom_plans;
    (*cscan).custom_private = (*best_path).custom_private;
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
    counts: Counts,
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

/// The groups stripe `i` holds, if every one has been seen: its shared dictionary of the
/// group column holds every value of the stripe's column, and its NULL count says whether
/// the NULL group is among them. `None` without a shared dictionary.
unsafe fn stripe_groups(
    scan: &mut VectorScan,
    i: usize,
    reader: &mut KeyReader,
    table: &GroupTable,
) -> Option<Vec<u32>> {
    let c = reader.spec.column() as usize;
    scan.reader
        .with_stripe_dictionary(i, c, |ctx, nulls, serial| {
            let mut groups = Vec::new();
            if nulls {
                groups.push(table.find_single(None)?);
            }
            for &e in reader.shared_entries(ctx, serial)?.iter() {
                groups.push(table.find_single(Some(e))?);
            }
            Some(groups)
        })
}

/// Reads what can hold the first rows (see the module's comment) and returns them, as
/// (stripe index, row within the stripe, `None` if no other of them is of its vector, else
/// the index in `Exec::chosen`, which this sets, of its vector's), in the order to return
/// them.
unsafe fn compute(
    exec: &mut Exec,
    node: *mut pg_sys::CustomScanState,
) -> Vec<(usize, u64, Option<usize>)> {
    let css = &mut *node;
    let child = super::frame::child_of(css);
    let instr = (*child).instrument;
    if !instr.is_null() {
        pg_sys::InstrStartNode(instr);
    }
    let (scan, child_slot) = super::node::batch_source(child).expect("PgcolTopN over a PgcolScan");
    let spec = exec.spec;
    if exec.readers.is_none() {
        let desc = (*child_slot).tts_tupleDescriptor;
        let ps = &mut css.ss.ps as *mut pg_sys::PlanState;
        let values = KeyReader::new(
            KeySpec::Int {
                column: spec.column,
            },
            std::ptr::null_mut(),
            ps,
            desc,
        );
        let group = spec
            .group
            .map(|g| KeyReader::new(g, std::ptr::null_mut(), ps, desc));
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
                holds = Some((stripe_groups(scan, i, reader, table), table.len()));
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
                    let Some(k) = reader.read(u, &ctx, selection, serial) else {
                        crate::storage::corrupt(rel, format!("column {} holds values of another type than its own", c + 1));
                    };
                    k
                };
                let ordering = read_key(values);
                let row_groups = match group.as_mut() {
                    Some(g) => {
                        let k = read_key(g);
                        table.assign(&[k], selection, &mut groups);
                        if table.len() > limit {
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
    counts.groups = top.groups() as u64;
    let grouped = spec.group.is_some();
    let mut rows: Vec<u64> = top
        .into_rows()
        .into_iter()
        .map(|(_, _, position)| position)
        .collect();
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
        pg_sys::InstrStopNode(instr, counts.rows_offered as f64);
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

    unsafe fn create(_cscan: *mut pg_sys::CustomScan, spec: TopSpec) -> Exec {
        Exec {
            spec,
            readers: None,
            rows: None,
            chosen: Vec::new(),
            next_row: 0,
            counts: Counts::default(),
        }
    }

    unsafe fn next(&mut self, node: *mut pg_sys::CustomScanState) -> *mut pg_sys::TupleTableSlot {
        if self.rows.is_none() {
            let rows = compute(self, node);
            self.rows = Some(rows);
            self.next_row = 0;
        }
        let slot = (*node).ss.ss_ScanTupleSlot;
        let Some(&(i, r, chosen)) = self.rows.as_ref().unwrap().get(self.next_row) else {
            return pg_sys::ExecClearTuple(slot);
        };
        self.next_row += 1;
        let (scan, _) = super::node::batch_source(super::frame::child_of(node))
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
    }

    unsafe fn end(&mut self, _node: *mut pg_sys::CustomScanState) {
        if let Some((values, group)) = self.readers.as_mut() {
            values.end();
            if let Some(g) = group {
                g.end();
            }
        }
    }

    unsafe fn explain(
        &self,
        node: *mut pg_sys::CustomScanState,
        _ancestors: *mut pg_sys::List,
        es: *mut pg_sys::ExplainState,
    ) {
        let reloid = (*(*node).ss.ss_currentRelation).rd_id;
        let spec = self.spec;
        let property = |name: &std::ffi::CStr, value: String| {
            let text = std::ffi::CString::new(value).unwrap();
            pg_sys::ExplainPropertyText(name.as_ptr(), text.as_ptr(), es);
        };
        let name = |c: u16| {
            std::ffi::CStr::from_ptr(pg_sys::get_attname(
                reloid,
                c as pg_sys::AttrNumber + 1,
                false,
            ))
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
        if (*es).analyze {
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
                    });
                }
            }
        }
        assert_round_trip::<Exec>(&specs);
    }
}

//! PgcolIndexSkip: the first row of each group of a row-store partition, read through a
//! btree index that leads with the group's column and then gives the query's order: one
//! descent of the index per group, instead of every row of the partition read and sorted.
//!
//! Planned only for `SELECT DISTINCT ON (g) ... ORDER BY g, o` over a partitioned table with
//! a pg_columnar partition (`super::topn::partitions_path`), for each of its other partitions
//! (a lifecycle's newest partitions are heap): TSBS lastpoint sorted all their rows. The
//! index must be a btree whose first column is `g` (in either direction) and whose next
//! columns give the query's order after `g` (`o`'s direction and NULLS), in the direction the
//! index is scanned; a partial index only if the quals imply its predicate.
//!
//! The node scans the NULL group first (`g IS NULL`: its first row in the index's order),
//! then from the first non-NULL key, then from the key after each row returned (`g > last`
//! scanning forward, `g < last` backward), each a new descent of the index. Rows are visible
//! ones under the query's snapshot (the index scan's); the partition's quals are evaluated
//! here, a failing row leading to the next in the index's order, so each group's row is its
//! first row satisfying them. The groups come in the index's order of `g`; PostgreSQL's Sort
//! and Unique above order and pick them with the other partitions' rows.

use pgrx::pg_sys;

use super::frame::{CustomNode, Frame};
use super::list;

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
}

/// The path reading the first row of each group of partition `child` through one of its
/// indexes, for `SELECT DISTINCT ON (g) ... ORDER BY g, o ...` (`group`: `g` over `child`'s
/// columns); `None` if no index of `child` gives that order, if the partition's quals are
/// volatile, or if reading the partition whole costs less (groups nearly as many as rows).
///
/// # Safety
/// `root` is the planner's, at the DISTINCT stage, and `child` one of its partitions'
/// relations with its paths set; `group` a valid expression; while planning, in the planner's
/// memory context, in a transaction.
pub(super) unsafe fn path(
    root: *mut pg_sys::PlannerInfo,
    child: *mut pg_sys::RelOptInfo,
    group: *mut pg_sys::Node,
) -> Option<*mut pg_sys::Path> {
    if !FRAME.registered() {
        return None;
    }
    // SAFETY: `root` and `child` are the planner's (this function's contract); the Lists are
    // read at once
    let (sort, quals, tuples, whole) = unsafe {
        (
            list::ptrs::<pg_sys::PathKey>((*root).sort_pathkeys).collect::<Vec<_>>(),
            (*child).baserestrictinfo,
            (*child).tuples,
            (*child).cheapest_total_path,
        )
    };
    // SAFETY: the partition's quals, a valid List of RestrictInfos (this function's contract)
    let volatile = unsafe {
        list::ptrs::<pg_sys::RestrictInfo>(quals)
            .any(|r| pg_sys::contain_volatile_functions((*r).clause as *mut pg_sys::Node))
    };
    if sort.len() < 2 || volatile || whole.is_null() {
        return None;
    }
    // SAFETY: `child`'s index list holds its IndexOptInfos, valid while planning
    let indexes: Vec<*mut pg_sys::IndexOptInfo> =
        unsafe { list::ptrs((*child).indexlist) }.collect();
    let (index, backward) = indexes.into_iter().find_map(|index| {
        // SAFETY: `index` is a valid IndexOptInfo of `child`, `root` the planner's
        unsafe { gives_order(root, index, &sort) }.map(|backward| (index, backward))
    })?;
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
    // each group: a descent (a leaf page and a table page not yet read), then the index
    // entries up to its first row satisfying the quals: 1 / their selectivity, at most the
    // group's rows
    let selectivity = (rows / tuples.max(1.0)).clamp(1e-9, 1.0);
    let per_group = (tuples / groups).max(1.0).min(1.0 / selectivity);
    let total = groups * (2.0 * random_page + per_group * (index_tuple + tuple));
    // the alternative: every row of the partition, read by its cheapest path and sorted
    // above with the other partitions' (a comparison costs two operators, as cost_sort
    // counts it)
    let sorted = rows.max(2.0);
    // SAFETY: `whole` is `child`'s cheapest path, valid while planning
    let whole = unsafe { (*whole).total_cost } + sorted * sorted.log2() * 2.0 * operator;
    if total >= whole {
        return None;
    }
    // SAFETY: `index` is a valid IndexOptInfo of `child` (its first column a table column:
    // `gives_order` checked)
    let spec = unsafe {
        SkipSpec {
            index: (*index).indexoid.to_u32(),
            key_column: *(*index).indexkeys as i16,
            backward,
        }
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
/// reads (a row failing them must lead to the next row of its group, not to the next group).
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
    // SAFETY: while planning, `best_path` a path of the node (this function's contract)
    let cscan = unsafe { FRAME.new_plan(best_path) };
    // SAFETY: `cscan` is the plan just made, nothing else refers to it; `rel`, `clauses` and
    // `best_path` are the planner's (this function's contract)
    unsafe {
        (*cscan).scan.plan.targetlist = tlist;
        (*cscan).scan.scanrelid = (*rel).relid;
        (*cscan).custom_exprs = pg_sys::extract_actual_clauses(clauses, false);
        (*cscan).custom_private = (*best_path).custom_private;
    }
    cscan as *mut pg_sys::Plan
}

/// Where the scan is among the groups.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Step {
    /// The group of rows whose key is NULL.
    Nulls,
    /// The first group of a non-NULL key.
    FirstKey,
    /// The group after the last key returned (`Exec::last`).
    After,
    Done,
}

/// What the node did, for EXPLAIN ANALYZE.
#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    descents: u64,
    rows_read: u64,
    groups: u64,
}

pub(super) struct Exec {
    spec: SkipSpec,
    /// The index, open from the first row to the node's end.
    index: pg_sys::Relation,
    scan: pg_sys::IndexScanDesc,
    /// A slot of the table's type, which the index scan stores rows into.
    table_slot: *mut pg_sys::TupleTableSlot,
    /// The query's memory, which holds the copy of the last key.
    query_memory: pg_sys::MemoryContext,
    /// The key column's `attbyval` and `attlen`.
    key_type: (bool, i16),
    quals: *mut pg_sys::ExprState,
    step: Step,
    /// A copy of the last key returned (palloc'd, in the query's memory, freed once the scan
    /// no longer refers to it).
    last: Option<pg_sys::Datum>,
    /// The scan key of the current descent; the index scan keeps a copy of it, pointing to
    /// `last`.
    key: pg_sys::ScanKeyData,
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
            self.scan = crate::compat::index_beginscan(heap, self.index, snapshot, 1);
        }
    }

    /// Points the index scan at the next group: `self.step`'s, from `self.last`.
    ///
    /// # Safety
    /// The scan is started ([`Exec::start`]); `self.step` is not `Done`.
    unsafe fn descend(&mut self) {
        let key = &raw mut self.key;
        // SAFETY: `key` is this node's ScanKeyData; the index is open (this method's
        // contract), its opfamily, input type and collation arrays one entry per column
        unsafe {
            match self.step {
                Step::Nulls | Step::FirstKey => {
                    let test = if self.step == Step::Nulls {
                        pg_sys::SK_SEARCHNULL
                    } else {
                        pg_sys::SK_SEARCHNOTNULL
                    };
                    pg_sys::ScanKeyEntryInitialize(
                        key,
                        (pg_sys::SK_ISNULL | test) as i32,
                        1,
                        0, // InvalidStrategy: a NULL test has none
                        pg_sys::InvalidOid,
                        pg_sys::InvalidOid,
                        pg_sys::InvalidOid,
                        pg_sys::Datum::from(0),
                    );
                }
                Step::After => {
                    let strategy = if self.spec.backward {
                        pg_sys::BTLessStrategyNumber
                    } else {
                        pg_sys::BTGreaterStrategyNumber
                    } as u16;
                    let family = *(*self.index).rd_opfamily;
                    let input = *(*self.index).rd_opcintype;
                    let op = pg_sys::get_opfamily_member(family, input, input, strategy as i16);
                    if op == pg_sys::InvalidOid {
                        pgrx::error!(
                            "pg_columnar: index {} has no operator of strategy {strategy} for its first column",
                            self.spec.index
                        );
                    }
                    pg_sys::ScanKeyEntryInitialize(
                        key,
                        0,
                        1,
                        strategy,
                        input,
                        *(*self.index).rd_indcollation,
                        pg_sys::get_opcode(op),
                        self.last.expect("a key after the first group"),
                    );
                }
                Step::Done => unreachable!("no group after the last"),
            }
            pg_sys::index_rescan(self.scan, key, 1, std::ptr::null_mut(), 0);
        }
        self.counts.descents += 1;
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

    /// Whether the row in the node's scan slot satisfies the partition's quals.
    ///
    /// # Safety
    /// `node` is the node's begun `CustomScanState`; its scan slot holds a row.
    unsafe fn passes(&self, node: *mut pg_sys::CustomScanState) -> bool {
        if self.quals.is_null() {
            return true;
        }
        // SAFETY: `node` is begun (this method's contract), with its expression context
        unsafe {
            let econtext = (*node).ss.ps.ps_ExprContext;
            pg_sys::MemoryContextReset((*econtext).ecxt_per_tuple_memory);
            (*econtext).ecxt_scantuple = (*node).ss.ss_ScanTupleSlot;
            pg_sys::ExecQual(self.quals, econtext)
        }
    }
}

/// `dst := src`, every column, as `ExecCopySlot` does.
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
            table_slot: std::ptr::null_mut(),
            query_memory: std::ptr::null_mut(),
            key_type: (true, 8),
            quals: std::ptr::null_mut(),
            step: Step::Nulls,
            last: None,
            // SAFETY: all-zero is a valid ScanKeyData (no flags, null Datum, InvalidOids)
            key: unsafe { std::mem::zeroed() },
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
            let cscan = (*node).ss.ps.plan as *mut pg_sys::CustomScan;
            if !(*cscan).custom_exprs.is_null() {
                self.quals = pg_sys::ExecInitQual((*cscan).custom_exprs, &mut (*node).ss.ps);
            }
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
            self.step = Step::Nulls;
            // SAFETY: the scan was just started, at the NULL group
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
                unsafe { pg_sys::index_getnext_slot(self.scan, direction, self.table_slot) };
            if !found {
                // no (more) rows in this step's range: the NULL group's is empty, or no key
                // follows
                self.step = match self.step {
                    Step::Nulls => Step::FirstKey,
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
            if !unsafe { self.passes(node) } {
                continue; // the next row in the index's order: of this group, or the next
            }
            self.counts.groups += 1;
            self.step = match self.step {
                Step::Nulls => Step::FirstKey,
                _ => {
                    // SAFETY: the table slot holds the row just found
                    unsafe { self.keep_key() };
                    Step::After
                }
            };
            // SAFETY: the scan is started and `step` is not Done
            unsafe { self.descend() };
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
            self.passes(node)
        }
    }

    fn rescan(&mut self) {
        if !self.scan.is_null() {
            self.step = Step::Nulls;
            // SAFETY: the scan is started
            unsafe { self.descend() };
        }
    }

    /// # Safety
    /// As [`CustomNode::end`].
    unsafe fn end(&mut self, _node: *mut pg_sys::CustomScanState) {
        // SAFETY: the scan and the index, if started, are this node's, ended once; the lock
        // is kept to the transaction's end, as PostgreSQL's index scans keep it
        unsafe {
            if !self.scan.is_null() {
                pg_sys::index_endscan(self.scan);
                self.scan = std::ptr::null_mut();
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
        _ancestors: *mut pg_sys::List,
        es: *mut pg_sys::ExplainState,
    ) {
        // SAFETY: `node` is a begun node, its relation open, `es` EXPLAIN's state (this
        // method's contract); the names are read in a transaction
        let (index, column, analyze) = unsafe {
            let reloid = (*(*node).ss.ss_currentRelation).rd_id;
            let name = |p: *const std::ffi::c_char| {
                if p.is_null() {
                    String::from("?")
                } else {
                    std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
                }
            };
            (
                name(pg_sys::get_rel_name(pg_sys::Oid::from(self.spec.index))),
                name(pg_sys::get_attname(reloid, self.spec.key_column, true)),
                (*es).analyze,
            )
        };
        let property = |label: &std::ffi::CStr, value: String| {
            let text = std::ffi::CString::new(value.replace('\0', "")).unwrap();
            // SAFETY: `es` is EXPLAIN's state (this method's contract); both strings are
            // NUL-terminated and outlive the call
            unsafe { pg_sys::ExplainPropertyText(label.as_ptr(), text.as_ptr(), es) };
        };
        let direction = if self.spec.backward {
            "backward"
        } else {
            "forward"
        };
        property(c"Index", format!("{index} ({direction})"));
        property(c"First Row Per Group", column);
        if analyze {
            let c = self.counts;
            property(c"Index Descents", c.descents.to_string());
            property(c"Rows Read", c.rows_read.to_string());
            property(c"Groups", c.groups.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Exec, SkipSpec};
    use crate::exec::frame::assert_round_trip;

    /// PgcolIndexSkip's plan data: both directions, extreme OIDs and columns.
    #[test]
    fn plan_data_round_trip() {
        let specs: Vec<SkipSpec> = [(0u32, 1i16, false), (u32::MAX, i16::MAX, true)]
            .into_iter()
            .map(|(index, key_column, backward)| SkipSpec {
                index,
                key_column,
                backward,
            })
            .collect();
        assert_round_trip::<Exec>(&specs);
    }
}

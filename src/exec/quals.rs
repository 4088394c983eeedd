//! Which quals of a scan can skip vectors, translated at plan time into a [`SkipExpr`] that
//! the executor evaluates against each vector's zone map and null count.
//!
//! A leaf compares one column of the scanned relation with a value that is fixed for the
//! whole scan (a constant, a parameter, an initplan's result or a stable expression: the
//! executor evaluates it when the scan starts and again on every rescan). Columns of the
//! types below, compared by an operator of the type's default btree family (cross-type
//! members included, so `int4 < int8` and `timestamptz < date` keep their own semantics,
//! session TimeZone included: the check calls the operator itself on the zone's bounds):
//!
//! * int2, int4, int8, date, timestamp, timestamptz, float4, float8 (NaN greatest, as the
//!   operators order it): `<`, `<=`, `=`, `>=`, `>`, `<>`;
//! * text and varchar: bytewise, so `=` and `<>` under a deterministic collation, and the
//!   ranges only under the `C` or `POSIX` collation (where bytewise order is the
//!   collation's);
//! * `IN (...)` and `op ANY/ALL (array)` of those, `IS [NOT] NULL` of any column, and
//!   AND/OR trees of all of these.
//!
//! A qual is only ever used to skip: it stays in the plan's qual list and the executor still
//! evaluates it on every row returned. Below a security barrier (RLS policies, security
//! barrier views) a qual whose operator functions are not leakproof is not used, since the
//! check would run them on values of rows the barrier hides.

use pg_columnar_codec::zonemap::Cmp;
use pgrx::pg_sys;

use super::list;

/// The "POSIX" collation (bytewise like "C"; its OID is fixed in pg_collation.dat, and 18
/// dropped the macro naming it).
const POSIX_COLLATION: pg_sys::Oid = pg_sys::Oid::from_u32(951);

/// Operator strategies of btree families (PostgreSQL's numbering).
const BT_LESS: i32 = 1;
const BT_LESS_EQUAL: i32 = 2;
const BT_EQUAL: i32 = 3;
const BT_GREATER_EQUAL: i32 = 4;
const BT_GREATER: i32 = 5;

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(super) enum SkipExpr {
    And(Vec<SkipExpr>),
    Or(Vec<SkipExpr>),
    /// A test of `column` (0-based attribute index).
    Leaf {
        column: u16,
        test: Test,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Test {
    IsNull,
    IsNotNull,
    Compare(Compare),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ArrayMode {
    /// The value is a scalar.
    Scalar,
    /// `op ANY (array)`, `IN (...)`: some element must satisfy it.
    Any,
    /// `op ALL (array)`: every element must.
    All,
}

#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Compare {
    /// `column <cmp> value`.
    pub cmp: Cmp,
    /// Index of the value among the scan's value expressions.
    pub value: u16,
    pub array: ArrayMode,
    pub how: How,
    /// The value's type where a vectorized kernel gives exactly the operator's result
    /// (`codec::filter`): integers of one family, floats, one date/time type against
    /// itself, text bytewise; `None` where only the operator knows (date against
    /// timestamptz, which depends on the TimeZone).
    pub exact: Option<Exact>,
}

/// The physical type of a comparison value that a vectorized kernel reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Exact {
    Int16,
    Int32,
    Int64,
    Float32,
    Float64,
    Bytes,
}

#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum How {
    /// Byte strings: the zone's bounds and the value compared bytewise.
    Bytes,
    /// The comparison functions called on the zone's bounds (as Datums of the column's
    /// type) and the value, with `collation`: for `<` `<=` `>` `>=` the operator's own
    /// function; for `=` the family's `<=` then `>=`; for `<>` the family's `=`.
    Procs { procs: [u32; 2], collation: u32 },
}

/// Column types whose zone maps the skip rules read.
fn skippable_type(base: pg_sys::Oid) -> Option<bool> {
    // Some(true): byte strings; Some(false): numbers in the zone's integer or float form
    match base {
        pg_sys::INT2OID
        | pg_sys::INT4OID
        | pg_sys::INT8OID
        | pg_sys::DATEOID
        | pg_sys::TIMESTAMPOID
        | pg_sys::TIMESTAMPTZOID
        | pg_sys::FLOAT4OID
        | pg_sys::FLOAT8OID => Some(false),
        pg_sys::TEXTOID | pg_sys::VARCHAROID => Some(true),
        _ => None,
    }
}

/// The kernel form of `column (of base type) <op(left, right)> value`, if one is exact.
fn exact_form(base: pg_sys::Oid, left: pg_sys::Oid, right: pg_sys::Oid) -> Option<Exact> {
    use pg_sys::{
        DATEOID, FLOAT4OID, FLOAT8OID, INT2OID, INT4OID, INT8OID, TIMESTAMPOID, TIMESTAMPTZOID,
    };
    let ints = [INT2OID, INT4OID, INT8OID];
    let floats = [FLOAT4OID, FLOAT8OID];
    let same_datetime =
        [DATEOID, TIMESTAMPOID, TIMESTAMPTZOID].contains(&base) && left == base && right == base;
    let int_family = ints.contains(&base) && ints.contains(&left) && ints.contains(&right);
    let float_family = floats.contains(&base) && floats.contains(&left) && floats.contains(&right);
    if !(same_datetime || int_family || float_family) || left != base {
        return None;
    }
    Some(match right {
        INT2OID => Exact::Int16,
        INT4OID | DATEOID => Exact::Int32,
        INT8OID | TIMESTAMPOID | TIMESTAMPTZOID => Exact::Int64,
        FLOAT4OID => Exact::Float32,
        _ => Exact::Float64,
    })
}

/// Strips binary-compatible relabelling (varchar read as text).
///
/// # Safety
///
/// `node` must be null or a valid expression node.
pub(super) unsafe fn strip(mut node: *mut pg_sys::Node) -> *mut pg_sys::Node {
    // SAFETY: `node` is null or a valid node (the contract), and so is a RelabelType's `arg`.
    unsafe {
        while !node.is_null() && pgrx::is_a(node, pg_sys::NodeTag::T_RelabelType) {
            node = (*(node as *mut pg_sys::RelabelType)).arg as *mut pg_sys::Node;
        }
    }
    node
}

/// The 0-based column a node reads, if it is a plain Var of relation `relid` (range table
/// index) at this query level.
///
/// # Safety
///
/// `node` must be null or a valid expression node.
pub(super) unsafe fn column_of(node: *mut pg_sys::Node, relid: u32) -> Option<(u16, pg_sys::Oid)> {
    // SAFETY: `node` is null or a valid node (the contract).
    let node = unsafe { strip(node) };
    // SAFETY: `node` is a valid node when it is not null (checked first).
    if node.is_null() || !unsafe { pgrx::is_a(node, pg_sys::NodeTag::T_Var) } {
        return None;
    }
    let var = node as *mut pg_sys::Var;
    // SAFETY: the tag says `node` is a Var.
    unsafe {
        if (*var).varno as u32 != relid || (*var).varlevelsup != 0 || (*var).varattno <= 0 {
            return None;
        }
        Some(((*var).varattno as u16 - 1, (*var).vartype))
    }
}

/// A value the executor can compute once per scan: no Vars, nothing volatile, no subplans.
///
/// # Safety
///
/// `node` must be a valid expression tree, in a transaction (the function lookups).
unsafe fn is_scan_constant(node: *mut pg_sys::Node) -> bool {
    // SAFETY: `node` is a valid expression tree, in a transaction (the contract); the walkers
    // only read it.
    unsafe {
        !pg_sys::contain_var_clause(node)
            && !pg_sys::contain_volatile_functions(node)
            && !pg_sys::contain_subplans(node)
    }
}

/// Translates quals into skip expressions.
pub(super) struct Translator {
    /// Range table index of the scanned relation.
    pub relid: u32,
    /// The relations a parameterized path takes values from (null: none): their columns are
    /// values fixed for each rescan, which the planner turns into nestloop parameters in the
    /// plan's quals and `custom_exprs` (`replace_nestloop_params`).
    outer: pg_sys::Relids,
    /// The value expressions collected (copies), in the order leaves refer to them.
    pub values: Vec<*mut pg_sys::Node>,
    /// Set when an AND left out a part it could not translate: the result is then weaker
    /// than the clause (fine for skipping, not for replacing the clause).
    dropped: bool,
}

impl Translator {
    pub fn new(relid: u32) -> Translator {
        Translator {
            relid,
            outer: std::ptr::null_mut(),
            values: Vec::new(),
            dropped: false,
        }
    }

    /// A translator for a path parameterized by the relations `outer`, whose columns may be
    /// the values the scan's columns are compared with.
    pub fn with_outer(relid: u32, outer: pg_sys::Relids) -> Translator {
        Translator {
            outer,
            ..Translator::new(relid)
        }
    }

    /// Whether `node` is fixed for a whole scan (or rescan): no column of the scanned
    /// relation, none of another except of the [`outer`](Self::outer) relations, no volatile
    /// function and no subplan.
    ///
    /// # Safety
    ///
    /// `node` must be a valid expression tree, in a transaction (the function lookups).
    unsafe fn is_scan_value(&self, node: *mut pg_sys::Node) -> bool {
        // SAFETY: `node` is a valid expression tree, in a transaction (the contract)
        if unsafe { is_scan_constant(node) } {
            return true;
        }
        if self.outer.is_null() {
            return false;
        }
        // SAFETY: as above; the walkers only read `node`, and the list they return holds its
        // Vars (and any placeholder, aggregate or window function, refused here)
        unsafe {
            if pg_sys::contain_volatile_functions(node) || pg_sys::contain_subplans(node) {
                return false;
            }
            let flags = (pg_sys::PVC_INCLUDE_AGGREGATES
                | pg_sys::PVC_INCLUDE_WINDOWFUNCS
                | pg_sys::PVC_INCLUDE_PLACEHOLDERS) as i32;
            list::nodes(pg_sys::pull_var_clause(node, flags)).all(|n| {
                pgrx::is_a(n, pg_sys::NodeTag::T_Var) && {
                    let var = n as *mut pg_sys::Var;
                    (*var).varno as u32 != self.relid
                        && pg_sys::bms_is_member((*var).varno as i32, self.outer)
                }
            })
        }
    }

    /// Translates a top-level qual: the skip expression, and whether it is the clause
    /// exactly and every leaf has a vectorized kernel (then the scan may evaluate it instead
    /// of the executor).
    ///
    /// # Safety
    ///
    /// As [`translate`](Self::translate).
    pub(super) unsafe fn translate_qual(
        &mut self,
        clause: *mut pg_sys::Node,
        leakproof_only: bool,
    ) -> Option<(SkipExpr, bool)> {
        self.dropped = false;
        // SAFETY: this fn's contract is `translate`'s.
        let e = unsafe { self.translate(clause, leakproof_only) }?;
        let exact = !self.dropped && e.is_exact();
        Some((e, exact))
    }

    /// Translates `clause`; `leakproof_only`: the clause sits above a security barrier's
    /// quals, so only leakproof functions may be run on the zones' values.
    ///
    /// # Safety
    ///
    /// `clause` must be null or a valid expression tree of the query being planned, in a
    /// transaction (catalog lookups), in a memory context the value copies may live in.
    pub(super) unsafe fn translate(
        &mut self,
        clause: *mut pg_sys::Node,
        leakproof_only: bool,
    ) -> Option<SkipExpr> {
        if clause.is_null() {
            return None;
        }
        // SAFETY: `clause` is a valid node (the contract; not null here).
        match unsafe { (*clause).type_ } {
            pg_sys::NodeTag::T_BoolExpr => {
                let b = clause as *mut pg_sys::BoolExpr;
                // SAFETY: the tag says `clause` is a BoolExpr; its args are valid expression
                // trees of the same query, translated under this fn's contract.
                unsafe {
                    let args: Vec<*mut pg_sys::Node> = list::nodes((*b).args).collect();
                    match (*b).boolop {
                        // skipping on the clauses that translate is sound: the AND is false
                        // wherever one of them is
                        pg_sys::BoolExprType::AND_EXPR => {
                            let parts: Vec<SkipExpr> = args
                                .iter()
                                .filter_map(|&a| self.translate(a, leakproof_only))
                                .collect();
                            self.dropped |= parts.len() < args.len();
                            (!parts.is_empty()).then_some(SkipExpr::And(parts))
                        }
                        // an OR can only be proven false if every branch can
                        pg_sys::BoolExprType::OR_EXPR => {
                            let mark = self.values.len();
                            let parts: Option<Vec<SkipExpr>> = args
                                .iter()
                                .map(|&a| self.translate(a, leakproof_only))
                                .collect();
                            if parts.is_none() {
                                self.values.truncate(mark);
                            }
                            parts.map(SkipExpr::Or)
                        }
                        _ => None,
                    }
                }
            }
            pg_sys::NodeTag::T_NullTest => {
                let t = clause as *mut pg_sys::NullTest;
                // SAFETY: the tag says `clause` is a NullTest, whose `arg` is a valid node.
                unsafe {
                    if (*t).argisrow {
                        return None;
                    }
                    let (column, _) = column_of((*t).arg as *mut pg_sys::Node, self.relid)?;
                    let test = if (*t).nulltesttype == pg_sys::NullTestType::IS_NULL {
                        Test::IsNull
                    } else {
                        Test::IsNotNull
                    };
                    Some(SkipExpr::Leaf { column, test })
                }
            }
            pg_sys::NodeTag::T_OpExpr => {
                let op = clause as *mut pg_sys::OpExpr;
                // SAFETY: the tag says `clause` is an OpExpr, whose args are valid expression
                // trees; the rest are catalog lookups, in a transaction (this fn's contract).
                unsafe {
                    let args: Vec<*mut pg_sys::Node> = list::nodes((*op).args).collect();
                    if args.len() != 2 {
                        return None;
                    }
                    let (mut opno, column, value) = match (
                        column_of(args[0], self.relid),
                        column_of(args[1], self.relid),
                    ) {
                        (Some(c), None) => ((*op).opno, c, args[1]),
                        (None, Some(c)) => (pg_sys::get_commutator((*op).opno), c, args[0]),
                        _ => return None,
                    };
                    if opno == pg_sys::InvalidOid {
                        return None;
                    }
                    if !self.is_scan_value(value) {
                        return None;
                    }
                    let (cmp, how, exact) =
                        self.how(&mut opno, column.1, (*op).inputcollid, leakproof_only)?;
                    let value = self.push_value(value);
                    Some(SkipExpr::Leaf {
                        column: column.0,
                        test: Test::Compare(Compare {
                            cmp,
                            value,
                            array: ArrayMode::Scalar,
                            how,
                            exact,
                        }),
                    })
                }
            }
            pg_sys::NodeTag::T_ScalarArrayOpExpr => {
                let op = clause as *mut pg_sys::ScalarArrayOpExpr;
                // SAFETY: the tag says `clause` is a ScalarArrayOpExpr, whose args are valid
                // expression trees; the rest are catalog lookups, in a transaction (the contract).
                unsafe {
                    let args: Vec<*mut pg_sys::Node> = list::nodes((*op).args).collect();
                    if args.len() != 2 {
                        return None;
                    }
                    let column = column_of(args[0], self.relid)?;
                    if !self.is_scan_value(args[1]) {
                        return None;
                    }
                    let mut opno = (*op).opno;
                    let (cmp, how, exact) =
                        self.how(&mut opno, column.1, (*op).inputcollid, leakproof_only)?;
                    let value = self.push_value(args[1]);
                    let array = if (*op).useOr {
                        ArrayMode::Any
                    } else {
                        ArrayMode::All
                    };
                    Some(SkipExpr::Leaf {
                        column: column.0,
                        test: Test::Compare(Compare {
                            cmp,
                            value,
                            array,
                            how,
                            exact,
                        }),
                    })
                }
            }
            _ => None,
        }
    }

    /// Keeps a copy of value expression `value`; returns its index.
    ///
    /// # Safety
    ///
    /// `value` must be a valid expression tree; the copy is made in the current memory
    /// context, which must outlive the translator's use of it.
    unsafe fn push_value(&mut self, value: *mut pg_sys::Node) -> u16 {
        // SAFETY: `value` is a valid expression tree (the contract), copied whole.
        let copy = unsafe { pg_sys::copyObjectImpl(value as *const std::ffi::c_void) };
        self.values.push(copy as *mut pg_sys::Node);
        (self.values.len() - 1) as u16
    }

    /// How `column <opno> value` is checked against a zone map, if it can be.
    ///
    /// # Safety
    ///
    /// Called in a transaction (it looks up types, operators and functions by oid).
    unsafe fn how(
        &self,
        opno: &mut pg_sys::Oid,
        column_type: pg_sys::Oid,
        collation: pg_sys::Oid,
        leakproof_only: bool,
    ) -> Option<(Cmp, How, Option<Exact>)> {
        // SAFETY: a catalog lookup by oid, in a transaction (the contract).
        let base = unsafe { pg_sys::getBaseType(column_type) };
        let bytes = skippable_type(base)?;
        // the default btree operator family, from the type cache (GetDefaultOpClass would
        // scan pg_opclass each time: a planning query does this per qual and aggregate)
        // SAFETY: in a transaction (the contract); `lookup_type_cache` returns a valid entry
        // for an existing type (or raises an ERROR), read at once.
        let family = unsafe {
            (*pg_sys::lookup_type_cache(base, pg_sys::TYPECACHE_BTREE_OPFAMILY as i32)).btree_opf
        };
        if family == pg_sys::InvalidOid {
            return None;
        }
        let (mut left, mut right) = (pg_sys::InvalidOid, pg_sys::InvalidOid);
        // SAFETY: a catalog lookup by oid, in a transaction (the contract).
        let strategy = unsafe { pg_sys::get_op_opfamily_strategy(*opno, family) };
        let (cmp, family_op) = match strategy {
            BT_LESS => (Cmp::Lt, *opno),
            BT_LESS_EQUAL => (Cmp::Le, *opno),
            BT_EQUAL => (Cmp::Eq, *opno),
            BT_GREATER_EQUAL => (Cmp::Ge, *opno),
            BT_GREATER => (Cmp::Gt, *opno),
            _ => {
                // `<>` is no btree member; its negator `=` is
                // SAFETY: catalog lookups by oid, in a transaction (the contract).
                unsafe {
                    let negator = pg_sys::get_negator(*opno);
                    if negator == pg_sys::InvalidOid
                        || pg_sys::get_op_opfamily_strategy(negator, family) != BT_EQUAL
                    {
                        return None;
                    }
                    (Cmp::Ne, negator)
                }
            }
        };
        // SAFETY: a catalog lookup by oid, in a transaction (the contract); the outputs are
        // live locals.
        unsafe { pg_sys::op_input_types(family_op, &mut left, &mut right) };
        if bytes {
            // bytewise: only text against text, and only where bytes order as the collation
            let c_order = collation == pg_sys::C_COLLATION_OID || collation == POSIX_COLLATION;
            // SAFETY: a catalog lookup of a valid collation oid (checked first), in a
            // transaction (the contract).
            let exact = collation != pg_sys::InvalidOid
                && unsafe { pg_sys::get_collation_isdeterministic(collation) };
            let allowed = match cmp {
                Cmp::Eq | Cmp::Ne => exact,
                _ => c_order,
            };
            if left != pg_sys::TEXTOID || right != pg_sys::TEXTOID || !allowed {
                return None;
            }
            return Some((cmp, How::Bytes, Some(Exact::Bytes)));
        }
        // SAFETY: a catalog lookup by oid, in a transaction (the contract).
        let member = |strategy: i32| unsafe {
            pg_sys::get_opfamily_member(family, left, right, strategy as i16)
        };
        let ops: [pg_sys::Oid; 2] = match cmp {
            Cmp::Eq => [member(BT_LESS_EQUAL), member(BT_GREATER_EQUAL)],
            Cmp::Ne => [family_op, family_op],
            _ => [*opno, *opno],
        };
        let mut procs = [0u32; 2];
        for (p, op) in procs.iter_mut().zip(ops) {
            if op == pg_sys::InvalidOid {
                return None;
            }
            // SAFETY: catalog lookups by a valid operator's and its function's oids, in a
            // transaction (the contract).
            unsafe {
                let proc = pg_sys::get_opcode(op);
                if proc == pg_sys::InvalidOid
                    || (leakproof_only && !pg_sys::get_func_leakproof(proc))
                {
                    return None;
                }
                *p = proc.to_u32();
            }
        }
        Some((
            cmp,
            How::Procs {
                procs,
                collation: collation.to_u32(),
            },
            exact_form(base, left, right),
        ))
    }
}

impl SkipExpr {
    /// The columns the expression reads, in the order first met.
    pub fn columns(&self, out: &mut Vec<u16>) {
        match self {
            SkipExpr::And(p) | SkipExpr::Or(p) => p.iter().for_each(|e| e.columns(out)),
            SkipExpr::Leaf { column, .. } => {
                if !out.contains(column) {
                    out.push(*column);
                }
            }
        }
    }

    /// Whether every leaf has an exact kernel (`IS [NOT] NULL` always has).
    pub(super) fn is_exact(&self) -> bool {
        match self {
            SkipExpr::And(p) | SkipExpr::Or(p) => p.iter().all(SkipExpr::is_exact),
            SkipExpr::Leaf {
                test: Test::Compare(c),
                ..
            } => c.exact.is_some(),
            SkipExpr::Leaf { .. } => true,
        }
    }
}

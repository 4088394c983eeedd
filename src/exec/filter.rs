//! The vectorized filter: the quals PgcolScan evaluates itself, over whole vectors,
//! with the codec's kernels (`codec::filter`). Only quals whose every leaf has an exact
//! kernel get here (`quals::Compare::exact`); the plan no longer gives them to the executor.

use pg_columnar_codec::filter::{
    select_unpacked_cached, EntryCache, Operand, Predicate, Selection,
};
use pgrx::pg_sys;

use super::quals::{ArrayMode, SkipExpr, Test};
use super::skip::{operand, Value};
use crate::am::scan::{ColumnLookup, VectorFilter};

enum Node {
    And(Vec<Node>),
    Or(Vec<Node>),
    /// `cache`: the predicate's results on the entries of the current stripe's shared
    /// dictionary of the column.
    Leaf {
        column: usize,
        predicate: Predicate,
        cache: EntryCache,
    },
}

pub(super) struct RuntimeFilter {
    root: Node,
    columns: Vec<usize>,
}

/// The predicate of one leaf, with `ScalarArrayOpExpr`'s rules for arrays: an empty array
/// is false for ANY and true for ALL (on every row, NULLs included); a NULL array, a NULL
/// scalar, or a NULL element under ALL make the result never true; ANY ignores NULL
/// elements.
fn predicate(test: &Test, values: &[Value]) -> Predicate {
    let c = match test {
        Test::IsNull => return Predicate::IsNull,
        Test::IsNotNull => return Predicate::IsNotNull,
        Test::Compare(c) => c,
    };
    let exact = c.exact.expect("only exact leaves are vectorized");
    match (&values[c.value as usize], c.array) {
        (Value::One(s), ArrayMode::Scalar) => {
            operand(s, exact).map_or(Predicate::Nothing, |o| Predicate::Compare(c.cmp, o))
        }
        (Value::Many(elements), ArrayMode::Any) => {
            let ops: Vec<Operand> = elements.iter().filter_map(|e| operand(e, exact)).collect();
            if ops.is_empty() {
                Predicate::Nothing
            } else {
                Predicate::any(c.cmp, ops)
            }
        }
        (Value::Many(elements), ArrayMode::All) => {
            if elements.is_empty() {
                return Predicate::All;
            }
            let ops: Option<Vec<Operand>> = elements.iter().map(|e| operand(e, exact)).collect();
            ops.map_or(Predicate::Nothing, |ops| Predicate::AllOf(c.cmp, ops))
        }
        // a NULL array
        (Value::One(_), _) => Predicate::Nothing,
        (Value::Many(_), ArrayMode::Scalar) => {
            unreachable!("a scalar comparison with an array value")
        }
    }
}

fn build(e: &SkipExpr, values: &[Value], columns: &mut Vec<usize>) -> Node {
    match e {
        SkipExpr::And(p) => Node::And(p.iter().map(|x| build(x, values, columns)).collect()),
        SkipExpr::Or(p) => Node::Or(p.iter().map(|x| build(x, values, columns)).collect()),
        SkipExpr::Leaf { column, test } => {
            let column = *column as usize;
            if !columns.contains(&column) {
                columns.push(column);
            }
            Node::Leaf {
                column,
                predicate: predicate(test, values),
                cache: EntryCache::default(),
            }
        }
    }
}

impl RuntimeFilter {
    pub fn new(expr: &SkipExpr, values: &[Value]) -> RuntimeFilter {
        let mut columns = Vec::new();
        let root = build(expr, values, &mut columns);
        RuntimeFilter { root, columns }
    }
}

fn eval<'v>(
    n: &mut Node,
    vector: &ColumnLookup<'v>,
    stripe: u64,
    rows: usize,
) -> Option<Selection> {
    Some(match n {
        Node::And(parts) => {
            let mut s = Selection::all(rows);
            for p in parts.iter_mut() {
                s.and(&eval(p, vector, stripe, rows)?);
                if s.is_empty() {
                    break;
                }
            }
            s
        }
        Node::Or(parts) => {
            let mut s = Selection::none(rows);
            for p in parts.iter_mut() {
                s.or(&eval(p, vector, stripe, rows)?);
            }
            s
        }
        Node::Leaf {
            column,
            predicate,
            cache,
        } => {
            let (v, ctx) = vector(*column)?;
            if v.rows != rows {
                return None;
            }
            select_unpacked_cached(v, &ctx, predicate, cache, stripe)?
        }
    })
}

impl VectorFilter for RuntimeFilter {
    fn columns(&self) -> &[usize] {
        &self.columns
    }

    fn select<'v>(
        &mut self,
        vector: &ColumnLookup<'v>,
        stripe: u64,
        rows: usize,
    ) -> Option<Selection> {
        eval(&mut self.root, vector, stripe, rows)
    }
}

/// Evaluates the vectorized quals on one row, as the executor would have: the recheck of
/// an EvalPlanQual test tuple (`node`).
///
/// # Safety
///
/// `quals` must be null or the node's compiled quals, `econtext` its expression context and
/// `slot` a valid slot holding the row to test, of the scan's tuple descriptor.
pub unsafe fn recheck(
    quals: *mut pg_sys::ExprState,
    econtext: *mut pg_sys::ExprContext,
    slot: *mut pg_sys::TupleTableSlot,
) -> bool {
    if quals.is_null() {
        return true;
    }
    // SAFETY: `quals` is compiled for `econtext`, whose scan tuple is set to the valid `slot`
    // the quals were compiled to read (the contract).
    unsafe {
        (*econtext).ecxt_scantuple = slot;
        pg_sys::ExecQual(quals, econtext)
    }
}

//! Executing a [`SkipExpr`] against a stripe's directory: per vector, from its zone map and
//! null count, whether it may hold a row that satisfies the quals (`false` is a proof; the
//! scan then reads nothing of the vector), and whether every row of it does (`true` is a
//! proof; an aggregate may then take the vector's metadata instead of its rows).

use pg_columnar_codec::filter::{Operand, OperandSet, SET_MIN_OPERANDS};
use pg_columnar_codec::stripe::{StoredZone, StripeDirectory, StripeSummary};
use pg_columnar_codec::zonemap::{bytes_may_satisfy, Cmp};
use pgrx::pg_sys;

use super::quals::{ArrayMode, Compare, Exact, How, SkipExpr, Test};
use crate::am::datum::ColumnType;
use crate::am::scan::VectorSkip;

/// A comparison value, evaluated when the scan starts.
#[derive(Debug, Clone)]
pub enum Scalar {
    Null,
    /// Not known yet (a parameter, when the planner estimates what the scan skips): may
    /// match anything.
    Unknown,
    Datum(pg_sys::Datum),
    /// A text value's bytes (detoasted, without header).
    Bytes(Vec<u8>),
}

/// A value expression's result: one scalar, or an array's elements.
#[derive(Debug, Clone)]
pub enum Value {
    One(Scalar),
    Many(Vec<Scalar>),
}

/// A comparison value from a Datum of type `ty` (text as its bytes, arrays as their
/// elements). By-reference Datums other than text must outlive the value.
///
/// # Safety
/// `datum` must be a valid Datum of `ty` unless `isnull`.
pub(super) unsafe fn value_of(datum: pg_sys::Datum, isnull: bool, ty: pg_sys::Oid) -> Value {
    // SAFETY: a catalog lookup by type oid, in a transaction (planning or execution).
    let element = unsafe { pg_sys::get_element_type(ty) };
    if isnull {
        Value::One(Scalar::Null)
    } else if element != pg_sys::InvalidOid {
        // SAFETY: `datum` is a valid non-NULL array of `ty`, whose elements are `element`s
        // (the contract).
        Value::Many(unsafe { array_elements(datum, element) })
    } else {
        // SAFETY: `datum` is a valid non-NULL Datum of `ty` (the contract).
        Value::One(unsafe { scalar(datum, ty) })
    }
}

/// A comparison value in the form of the column's decoded values (`None` for NULL).
pub(super) fn operand(s: &Scalar, exact: Exact) -> Option<Operand> {
    match (s, exact) {
        (Scalar::Null, _) => None,
        (Scalar::Unknown, _) => unreachable!("the executor knows every value"),
        (Scalar::Bytes(b), Exact::Bytes) => Some(Operand::Bytes(b.clone())),
        (Scalar::Datum(d), e) => {
            let raw = d.value();
            Some(match e {
                Exact::Int16 => Operand::Int(raw as u16 as i16 as i64),
                Exact::Int32 => Operand::Int(raw as u32 as i32 as i64),
                Exact::Int64 => Operand::Int(raw as u64 as i64),
                Exact::Float32 => Operand::Float(f32::from_bits(raw as u32) as f64),
                Exact::Float64 => Operand::Float(f64::from_bits(raw as u64)),
                Exact::Bytes => unreachable!("text values are evaluated to bytes"),
            })
        }
        (Scalar::Bytes(_), _) => unreachable!("only text values are evaluated to bytes"),
    }
}

/// The comparison values of expression states `states`, evaluated in `econtext` (in the
/// current memory context, which by-reference values other than text must outlive).
///
/// # Safety
///
/// Each of `states` must be an expression state initialized for `econtext`, a valid
/// expression context whose parameters the expressions may read.
pub unsafe fn evaluate(
    states: &[*mut pg_sys::ExprState],
    econtext: *mut pg_sys::ExprContext,
) -> Vec<Value> {
    states
        .iter()
        .map(|&state| {
            let mut isnull = false;
            // SAFETY: `state` was initialized for the valid `econtext` (the contract); its result
            // is a Datum of its expression's type, or NULL.
            unsafe {
                let datum = pg_sys::ExecEvalExpr(state, econtext, &mut isnull);
                value_of(
                    datum,
                    isnull,
                    pg_sys::exprType((*state).expr as *mut pg_sys::Node),
                )
            }
        })
        .collect()
}

/// Whether type `ty` is text or varchar (or a domain over them).
///
/// # Safety
///
/// Called in a transaction (a catalog lookup).
unsafe fn is_text(ty: pg_sys::Oid) -> bool {
    // SAFETY: a catalog lookup by type oid, in a transaction (the contract).
    let base = unsafe { pg_sys::getBaseType(ty) };
    base == pg_sys::TEXTOID || base == pg_sys::VARCHAROID
}

/// The comparison value of Datum `datum` of type `ty` (text as its bytes).
///
/// # Safety
///
/// `datum` must be a valid non-NULL Datum of `ty`, in a transaction.
unsafe fn scalar(datum: pg_sys::Datum, ty: pg_sys::Oid) -> Scalar {
    // SAFETY: in a transaction (the contract).
    if unsafe { is_text(ty) } {
        // SAFETY: `datum` is a valid text value (the contract); its bytes, detoasted if need be,
        // are copied at once.
        unsafe {
            let v = pg_sys::pg_detoast_datum_packed(datum.cast_mut_ptr());
            Scalar::Bytes(pgrx::varlena::varlena_to_byte_slice(v).to_vec())
        }
    } else {
        Scalar::Datum(datum)
    }
}

/// The comparison values of the elements of array `datum` of elements of type `element`.
///
/// # Safety
///
/// `datum` must be a valid non-NULL array whose elements are of type `element`, in a
/// transaction; by-reference elements other than text must outlive the values.
unsafe fn array_elements(datum: pg_sys::Datum, element: pg_sys::Oid) -> Vec<Scalar> {
    // SAFETY: `datum` is a valid array of `element`s (the contract); `deconstruct_array` is
    // given the element type's own length, by-value flag and alignment, and sets `elems`,
    // `nulls` and `n` to `n` entries each.
    let (elems, nulls, n) = unsafe {
        let array = pg_sys::pg_detoast_datum(datum.cast_mut_ptr()) as *mut pg_sys::ArrayType;
        let (mut len, mut byval, mut align) = (0i16, false, 0 as std::ffi::c_char);
        pg_sys::get_typlenbyvalalign(element, &mut len, &mut byval, &mut align);
        let mut elems: *mut pg_sys::Datum = std::ptr::null_mut();
        let mut nulls: *mut bool = std::ptr::null_mut();
        let mut n = 0;
        pg_sys::deconstruct_array(
            array, element, len as i32, byval, align, &mut elems, &mut nulls, &mut n,
        );
        (elems, nulls, n)
    };
    (0..n as usize)
        .map(|i| {
            // SAFETY: `i < n`, the length of both arrays `deconstruct_array` made; a non-NULL
            // element is a valid Datum of `element` (the contract).
            unsafe {
                if *nulls.add(i) {
                    Scalar::Null
                } else {
                    scalar(*elems.add(i), element)
                }
            }
        })
        .collect()
}

pub(super) struct RuntimeSkip {
    expr: SkipExpr,
    types: Vec<ColumnType>,
    values: Vec<Value>,
    /// By value index: the elements of an array that `column = ANY (array)` compares with,
    /// sorted, where they are many and compare exactly as the column's stored form
    /// ([`sets_of`]); a zone is then checked by one binary search instead of two operator
    /// calls per element.
    sets: Vec<Option<(Compare, OperandSet)>>,
    functions: Functions,
}

/// The sorted sets of [`RuntimeSkip::sets`] for the `= ANY` leaves of `expr`.
fn sets_of(expr: &SkipExpr, values: &[Value]) -> Vec<Option<(Compare, OperandSet)>> {
    fn walk(e: &SkipExpr, values: &[Value], sets: &mut Vec<Option<(Compare, OperandSet)>>) {
        match e {
            SkipExpr::And(p) | SkipExpr::Or(p) => p.iter().for_each(|x| walk(x, values, sets)),
            SkipExpr::Leaf {
                test: Test::Compare(c),
                ..
            } if c.cmp == Cmp::Eq && c.array == ArrayMode::Any => {
                let Value::Many(elements) = &values[c.value as usize] else {
                    return;
                };
                if elements.len() < SET_MIN_OPERANDS || sets[c.value as usize].is_some() {
                    return;
                }
                // NULL elements match nothing; an unknown one (a parameter at plan time)
                // leaves the leaf to the comparisons one by one
                let operands: Option<Vec<Operand>> = elements
                    .iter()
                    .filter(|s| !matches!(s, Scalar::Null))
                    .map(|s| match (c.how, s, c.exact) {
                        (How::Bytes, Scalar::Bytes(b), _) => Some(Operand::Bytes(b.clone())),
                        (How::Procs { .. }, Scalar::Datum(_), Some(exact)) => operand(s, exact),
                        _ => None,
                    })
                    .collect();
                sets[c.value as usize] = operands
                    .and_then(|o| OperandSet::of(&o))
                    .map(|set| (*c, set));
            }
            SkipExpr::Leaf { .. } => {}
        }
    }
    let mut sets = vec![None; values.len()];
    walk(expr, values, &mut sets);
    sets
}

/// Comparison functions looked up so far, by function OID.
#[derive(Default)]
struct Functions(Vec<(u32, Box<pg_sys::FmgrInfo>)>);

impl Functions {
    fn call(&mut self, proc: u32, collation: u32, a: pg_sys::Datum, b: pg_sys::Datum) -> bool {
        let i = match self.0.iter().position(|(p, _)| *p == proc) {
            Some(i) => i,
            None => {
                // SAFETY: FmgrInfo is plain data; fmgr_info fills every field
                let mut info: Box<pg_sys::FmgrInfo> = Box::new(unsafe { std::mem::zeroed() });
                // SAFETY: `info` is a live, boxed FmgrInfo (its address stable for its life);
                // `proc` is a function oid `quals` chose, in a transaction.
                unsafe { pg_sys::fmgr_info(pg_sys::Oid::from(proc), &mut *info) };
                self.0.push((proc, info));
                self.0.len() - 1
            }
        };
        let info = &mut *self.0[i].1;
        // SAFETY: not checked by this safe fn's signature: the callers here pass the leaf's
        // comparison function, a zone bound of the (by-value) column type and the leaf's value.
        unsafe { pg_sys::FunctionCall2Coll(info, pg_sys::Oid::from(collation), a, b).value() != 0 }
    }
}

impl RuntimeSkip {
    pub fn new(expr: SkipExpr, types: Vec<ColumnType>, values: Vec<Value>) -> RuntimeSkip {
        let sets = sets_of(&expr, &values);
        RuntimeSkip {
            expr,
            types,
            values,
            sets,
            functions: Functions::default(),
        }
    }
}

/// What is known of one column over some rows (a vector, or a whole stripe): its zone and
/// how many of the rows are NULL.
struct Known<'a> {
    zone: &'a StoredZone,
    nulls: usize,
    rows: usize,
}

struct Eval<'a> {
    types: &'a [ColumnType],
    values: &'a [Value],
    sets: &'a [Option<(Compare, OperandSet)>],
    functions: &'a mut Functions,
}

impl Eval<'_> {
    /// `known(column)`: `None` when nothing is known of the column (a column added after
    /// the stripe was written reads as its default; a summary that could not join zones).
    fn eval<'k>(&mut self, expr: &SkipExpr, known: &dyn Fn(usize) -> Option<Known<'k>>) -> bool {
        match expr {
            SkipExpr::And(parts) => parts.iter().all(|p| self.eval(p, known)),
            SkipExpr::Or(parts) => parts.iter().any(|p| self.eval(p, known)),
            SkipExpr::Leaf { column, test } => {
                let column = *column as usize;
                let Some(k) = known(column) else { return true };
                match test {
                    Test::IsNull => k.nulls > 0,
                    Test::IsNotNull => k.nulls < k.rows,
                    Test::Compare(c) => self.compare(c, self.types[column], k.zone),
                }
            }
        }
    }

    /// Whether every row satisfies `expr` (`false` when that is not proven): a comparison
    /// needs a zone that satisfies it at both ends and no NULL row.
    fn covers<'k>(&mut self, expr: &SkipExpr, known: &dyn Fn(usize) -> Option<Known<'k>>) -> bool {
        match expr {
            SkipExpr::And(parts) => parts.iter().all(|p| self.covers(p, known)),
            SkipExpr::Or(parts) => parts.iter().any(|p| self.covers(p, known)),
            SkipExpr::Leaf { column, test } => {
                let column = *column as usize;
                let Some(k) = known(column) else { return false };
                match test {
                    Test::IsNull => k.nulls == k.rows,
                    Test::IsNotNull => k.nulls == 0,
                    Test::Compare(c) => {
                        k.nulls == 0 && self.compare_all(c, self.types[column], k.zone)
                    }
                }
            }
        }
    }

    /// Whether every value within `zone` satisfies the comparison: with one element that
    /// every value satisfies, ANY holds; ALL needs every element.
    fn compare_all(&mut self, c: &Compare, ty: ColumnType, zone: &StoredZone) -> bool {
        if let Some((_, set)) = self.sets[c.value as usize]
            .as_ref()
            .filter(|(leaf, _)| leaf == c)
        {
            return set.covers_zone(zone);
        }
        let values = self.values;
        let elements: &[Scalar] = match &values[c.value as usize] {
            Value::One(s) => std::slice::from_ref(s),
            Value::Many(e) => e,
        };
        let mut one = |s: &Scalar| self.compare_all_one(c, ty, zone, s);
        match c.array {
            ArrayMode::Scalar | ArrayMode::Any => elements.iter().any(&mut one),
            ArrayMode::All => elements.iter().all(&mut one),
        }
    }

    fn compare_all_one(
        &mut self,
        c: &Compare,
        ty: ColumnType,
        zone: &StoredZone,
        s: &Scalar,
    ) -> bool {
        let (How::Procs { procs, collation }, Scalar::Datum(d)) = (c.how, s) else {
            return false;
        };
        let Some((lo, hi)) = bounds(ty, zone) else {
            return false;
        };
        let f = &mut *self.functions;
        match c.cmp {
            // every value < d iff the maximum is (likewise <=)
            Cmp::Lt | Cmp::Le => f.call(procs[0], collation, hi, *d),
            Cmp::Gt | Cmp::Ge => f.call(procs[0], collation, lo, *d),
            // d <= min and max <= d (procs: <=, >=)
            Cmp::Eq => f.call(procs[1], collation, lo, *d) && f.call(procs[0], collation, hi, *d),
            // only = is at hand: not proven
            Cmp::Ne => false,
        }
    }

    fn compare(&mut self, c: &Compare, ty: ColumnType, zone: &StoredZone) -> bool {
        if let Some((_, set)) = self.sets[c.value as usize]
            .as_ref()
            .filter(|(leaf, _)| leaf == c)
        {
            return set.may_equal_within(zone);
        }
        let values = self.values;
        let elements: &[Scalar] = match &values[c.value as usize] {
            Value::One(s) => std::slice::from_ref(s),
            Value::Many(e) => e,
        };
        let mut one = |s: &Scalar| self.compare_one(c, ty, zone, s);
        match c.array {
            ArrayMode::Scalar | ArrayMode::Any => elements.iter().any(&mut one),
            ArrayMode::All => elements.iter().all(&mut one),
        }
    }

    /// Whether some value within `zone` may satisfy `value <cmp> s`. The operators are
    /// strict: a NULL comparison value matches nothing, nor does a vector of NULLs only.
    fn compare_one(&mut self, c: &Compare, ty: ColumnType, zone: &StoredZone, s: &Scalar) -> bool {
        if matches!(zone, StoredZone::Empty) || matches!(s, Scalar::Null) {
            return false;
        }
        if matches!(s, Scalar::Unknown) {
            return true;
        }
        match (c.how, zone, s) {
            (
                How::Bytes,
                StoredZone::Bytes {
                    min,
                    max,
                    max_truncated,
                },
                Scalar::Bytes(b),
            ) => bytes_may_satisfy(min, max, *max_truncated, c.cmp, b),
            (How::Procs { procs, collation }, _, Scalar::Datum(d)) => {
                let Some((lo, hi)) = bounds(ty, zone) else {
                    return true;
                };
                let f = &mut *self.functions;
                match c.cmp {
                    // some value < d exists iff the minimum is (likewise <=)
                    Cmp::Lt | Cmp::Le => f.call(procs[0], collation, lo, *d),
                    Cmp::Gt | Cmp::Ge => f.call(procs[0], collation, hi, *d),
                    // min <= d <= max
                    Cmp::Eq => {
                        f.call(procs[0], collation, lo, *d) && f.call(procs[1], collation, hi, *d)
                    }
                    // every value equals d only if both bounds do
                    Cmp::Ne => {
                        !(f.call(procs[0], collation, lo, *d)
                            && f.call(procs[0], collation, hi, *d))
                    }
                }
            }
            // a zone of another form than the column's type has: no conclusion
            _ => true,
        }
    }
}

/// A numeric zone's bounds as Datums of the column's type.
fn bounds(ty: ColumnType, zone: &StoredZone) -> Option<(pg_sys::Datum, pg_sys::Datum)> {
    let int = |v: i64| pg_sys::Datum::from(v as isize);
    match (ty, zone) {
        (
            ColumnType::Int16 | ColumnType::Int32 | ColumnType::Int64,
            StoredZone::Int { min, max },
        ) => Some((int(*min), int(*max))),
        (ColumnType::Float64, StoredZone::Float { min, max }) => Some((
            pg_sys::Datum::from(min.to_bits() as usize),
            pg_sys::Datum::from(max.to_bits() as usize),
        )),
        // float4 values were widened exactly; narrowing gives them back
        (ColumnType::Float32, StoredZone::Float { min, max }) => Some((
            pg_sys::Datum::from((*min as f32).to_bits() as usize),
            pg_sys::Datum::from((*max as f32).to_bits() as usize),
        )),
        _ => None,
    }
}

/// What a directory knows of each column of a vector.
fn vector_known<'d>(
    dir: &'d StripeDirectory,
    vector: usize,
) -> impl Fn(usize) -> Option<Known<'d>> {
    let rows = dir.vector_rows(vector);
    move |c: usize| {
        dir.stored_vectors(c).map(|vectors| {
            let e = &vectors[vector];
            Known {
                zone: &e.zone,
                nulls: e.null_count,
                rows,
            }
        })
    }
}

/// What a catalog summary knows of each column of a stripe of `rows` rows.
fn stripe_known<'s>(
    summary: &'s StripeSummary,
    rows: usize,
) -> impl Fn(usize) -> Option<Known<'s>> {
    move |c: usize| {
        let col = summary.columns.get(c)?;
        Some(Known {
            zone: col.zone.as_ref()?,
            nulls: col.null_count as usize,
            rows,
        })
    }
}

impl VectorSkip for RuntimeSkip {
    fn may_match(&mut self, dir: &StripeDirectory, vector: usize) -> bool {
        let mut eval = Eval {
            types: &self.types,
            values: &self.values,
            sets: &self.sets,
            functions: &mut self.functions,
        };
        eval.eval(&self.expr, &vector_known(dir, vector))
    }

    fn may_match_stripe(&mut self, summary: &StripeSummary, rows: usize) -> bool {
        let mut eval = Eval {
            types: &self.types,
            values: &self.values,
            sets: &self.sets,
            functions: &mut self.functions,
        };
        eval.eval(&self.expr, &stripe_known(summary, rows))
    }

    fn covers(&mut self, dir: &StripeDirectory, vector: usize) -> bool {
        let mut eval = Eval {
            types: &self.types,
            values: &self.values,
            sets: &self.sets,
            functions: &mut self.functions,
        };
        eval.covers(&self.expr, &vector_known(dir, vector))
    }

    fn covers_stripe(&mut self, summary: &StripeSummary, rows: usize) -> bool {
        let mut eval = Eval {
            types: &self.types,
            values: &self.values,
            sets: &self.sets,
            functions: &mut self.functions,
        };
        eval.covers(&self.expr, &stripe_known(summary, rows))
    }
}

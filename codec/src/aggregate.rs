//! Aggregates over the selected rows of vectors, with the semantics of PostgreSQL's own
//! transition functions, so that a query answered here returns what PostgreSQL's Agg would:
//!
//! * `count(*)`, `count(x)`: int8.
//! * `sum` of int2/int4: int8, added with wrapping (PostgreSQL builds with `-fwrapv`, and
//!   `int4_sum` does not check); of int8: exact (PostgreSQL's int128 state), a numeric.
//! * `avg` of integers: numeric sum / numeric count (`int8_avg`, `numeric_poly_avg`); the
//!   sum as PostgreSQL keeps it (int8 with wrapping for int2/int4, exact for int8). The
//!   division itself is left to the caller (PostgreSQL's `numeric_div`).
//! * `sum` of float4/float8: `float4pl`/`float8pl` in row order, in the argument's own
//!   precision, starting from the first value (they have no initial state), with their
//!   overflow error (a finite sum of finite values that becomes infinite). Integer-valued
//!   floats whose partial sums all stay exact integers are added as integers, which gives
//!   the same bits.
//! * `avg` of float4/float8: `float8_accum`'s Youngs-Cramer state (N, Sx, Sxx) in row order,
//!   with its overflow rule (which can fire on Sxx alone), then Sx / N.
//! * `min`/`max`: integers as numbers; floats in PostgreSQL's order (NaN above all) where,
//!   as in `float8smaller`/`float8larger`, the newer value wins a tie (so of -0.0 and 0.0 the
//!   later one is kept, bits included).
//!
//! Values are visited in row order within a vector; a caller gives vectors in row order.

use std::cmp::Ordering;

use crate::decode::{Form, Unpacked};
use crate::filter::{float_order, Selection};
use crate::float_int::Scaled;
use crate::stripe::StoredZone;
use crate::vector::{Kind, Values};
use crate::ColumnContext;

/// The aggregate functions computed here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Function {
    CountStar,
    Count,
    Sum,
    Avg,
    Min,
    Max,
    /// `count(DISTINCT col)`: how many distinct non-NULL values.
    CountDistinct,
}

/// The distinct values `count(DISTINCT col)` has met, by the equality of the column's type:
/// integers (dates, timestamps) by value, floats by float equality (`-0` equals `0`, and
/// every NaN is one value, as PostgreSQL's float comparisons have it), strings bytewise (a
/// deterministic collation's equality).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DistinctSet {
    fixed: std::collections::HashSet<i64>,
    bytes: std::collections::HashSet<Box<[u8]>>,
}

/// About the bytes a value kept in a [`DistinctSet`] takes beyond a string's own: its hash
/// table slot, and a string's allocation.
const DISTINCT_ENTRY_BYTES: usize = 32;

impl DistinctSet {
    pub fn len(&self) -> usize {
        self.fixed.len() + self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Inserts string `v`; the bytes it added (0 if it was there).
    fn insert_bytes(&mut self, v: &[u8]) -> usize {
        if self.bytes.contains(v) {
            return 0;
        }
        self.bytes.insert(v.into());
        v.len() + DISTINCT_ENTRY_BYTES
    }

    /// Inserts picked value `k`, by its key ([`distinct_key_f64`], [`distinct_key_f32`]);
    /// the bytes it added.
    fn insert_picked(&mut self, p: &Picked, k: usize) -> usize {
        let new = self.fixed.insert(match p {
            Picked::Ints(x) => x[k],
            Picked::Float8(x) => distinct_key_f64(x[k]),
            Picked::Float4(x) => distinct_key_f32(x[k]),
        });
        if new {
            DISTINCT_ENTRY_BYTES
        } else {
            0
        }
    }
}

/// The key of a float8 under float equality: `-0` as `0`, every NaN as one.
pub fn distinct_key_f64(v: f64) -> i64 {
    if v == 0.0 {
        0
    } else if v.is_nan() {
        f64::NAN.to_bits() as i64
    } else {
        v.to_bits() as i64
    }
}

/// [`distinct_key_f64`] for float4.
pub fn distinct_key_f32(v: f32) -> i64 {
    if v == 0.0 {
        0
    } else if v.is_nan() {
        f32::NAN.to_bits() as i64
    } else {
        v.to_bits() as i64
    }
}

/// Whether `u` holds strings (plain, or codes into strings).
fn is_bytes(u: &Unpacked, ctx: &ColumnContext<'_>) -> bool {
    match &u.form {
        Form::Values(v) => matches!(v, Values::Bytes(_)),
        Form::Codes { inline, .. } => matches!(Unpacked::entries(inline, ctx), Values::Bytes(_)),
        Form::Integers { .. } | Form::Scaled(_) => false,
    }
}

/// Adds to `sets` (indexed by group; `group(r)` of row `r`) the selected non-NULL strings of
/// `u`, and the bytes they added to `memory`. A dictionary vector's entries are each
/// inserted once per group that has one of its codes, its rows compared by code, not by
/// string.
fn insert_selected_bytes(
    u: &Unpacked,
    ctx: &ColumnContext<'_>,
    sel: &Selection,
    sets: &mut [DistinctSet],
    memory: &mut usize,
    group: impl Fn(usize) -> usize,
) -> Option<()> {
    if let Form::Codes { inline, codes } = &u.form {
        let Values::Bytes(entries) = Unpacked::entries(inline, ctx) else {
            return None;
        };
        let entries = entries.as_ref();
        let nulls = u.nulls.as_deref();
        let is_null = |r: usize| nulls.is_some_and(|b| b[r / 8] >> (r % 8) & 1 == 1);
        // the (group, code) pairs met, each string inserted once
        let mut met: std::collections::HashSet<(usize, u32)> = std::collections::HashSet::new();
        let (mut k, mut next_row) = (0, 0);
        for r in sel.iter() {
            k += (next_row..r).filter(|&s| !is_null(s)).count();
            next_row = r + 1;
            if !is_null(r) {
                let code = *codes.get(k)? as u32;
                if (code as usize) >= entries.len() {
                    return None;
                }
                met.insert((group(r), code));
                k += 1;
            }
        }
        for (g, code) in met {
            *memory += sets[g].insert_bytes(entries.get(code as usize));
        }
        return Some(());
    }
    for_each_selected_bytes(u, ctx, sel, |r, v| {
        *memory += sets[group(r)].insert_bytes(v)
    })
}

/// A value kept by `min`/`max`, in its column's own form.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Number {
    Int(i64),
    Float8(f64),
    Float4(f32),
}

/// The running state of one aggregate.
#[derive(Debug, Clone, PartialEq)]
pub enum State {
    Count(i64),
    /// Integers: how many, and their exact sum.
    IntSum {
        n: i64,
        sum: i128,
    },
    Float8Sum {
        n: i64,
        sum: f64,
    },
    Float4Sum {
        n: i64,
        sum: f32,
    },
    /// `float8_accum`'s transition values.
    FloatAccum {
        n: f64,
        sx: f64,
        sxx: f64,
    },
    /// `avg` of floats that all lie within ±[`AVG_BOUND`], at most [`AVG_MAX_ROWS`] of them:
    /// `float8_accum`'s N and Sx, computed as it computes them, without Sxx. Neither can
    /// overflow then (see [`AVG_BOUND`]), and avg's result reads only N and Sx, so the
    /// result and its bits are the same; it is no transition state to hand on, though.
    FloatAvg {
        n: f64,
        sx: f64,
    },
    MinMax {
        max: bool,
        best: Option<Number>,
    },
    /// `min`/`max` of byte strings in bytewise order (text under a collation that orders
    /// bytewise, which the caller checks).
    MinMaxBytes {
        max: bool,
        best: Option<Vec<u8>>,
    },
    /// `count(DISTINCT col)`: the values met, and about the bytes they take.
    Distinct {
        set: DistinctSet,
        memory: usize,
    },
}

/// The bound on |x| under which `avg` may be computed without `float8_accum`'s Sxx
/// ([`State::FloatAvg`]), with at most [`AVG_MAX_ROWS`] values. Sxx only grows by
/// `(x·n − Sx)² / (n·(n−1))` per step; with |x| ≤ B, |Sx| ≤ B·n, so a step adds at most
/// `(2·B·n)² / (n·(n−1)) ≤ 8·B²` (n ≥ 2), and N steps at most `8·B²·N`: for B = 1e100 and
/// N = 2^40 that is under 1e214, far from f64's 1.8e308, and |Sx| ≤ 1.1e112. So neither
/// overflows, and `float8_accum` would raise no error on these values.
pub const AVG_BOUND: f64 = 1e100;
pub const AVG_MAX_ROWS: u64 = 1 << 40;

/// What an aggregate returns, before it becomes a Datum.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    Null,
    Int8(i64),
    Int4(i32),
    Int2(i16),
    Float8(f64),
    Float4(f32),
    /// An exact integer as a numeric.
    Numeric(i128),
    /// numeric(sum) / numeric(count), count > 0.
    NumericRatio(i128, i64),
    /// A byte string (text).
    Bytes(Vec<u8>),
}

/// A sum or an accumulation of finite float values became infinite: PostgreSQL's
/// "value out of range: overflow".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FloatOverflow;

/// The selected non-null values of one vector, in row order, in one numeric form.
enum Picked {
    Ints(Vec<i64>),
    Float8(Vec<f64>),
    Float4(Vec<f32>),
}

impl Picked {
    fn len(&self) -> usize {
        match self {
            Picked::Ints(x) => x.len(),
            Picked::Float8(x) => x.len(),
            Picked::Float4(x) => x.len(),
        }
    }
}

/// The indexes among the non-null values of the selected non-null rows, and (if `rows` is
/// given) those rows.
fn picked_indexes(u: &Unpacked, sel: &Selection, mut rows: Option<&mut Vec<usize>>) -> Vec<usize> {
    match u.nulls.as_deref() {
        None => {
            let out: Vec<usize> = sel.iter().collect();
            if let Some(r) = rows {
                r.clone_from(&out);
            }
            out
        }
        Some(bitmap) => {
            let mut out = Vec::with_capacity(sel.count());
            let mut k = 0;
            for r in 0..u.rows {
                if bitmap[r / 8] >> (r % 8) & 1 == 1 {
                    continue;
                }
                if sel.contains(r) {
                    out.push(k);
                    if let Some(rows) = rows.as_deref_mut() {
                        rows.push(r);
                    }
                }
                k += 1;
            }
            out
        }
    }
}

/// `f` of the picked elements of `x`: all of them, or those at `idx`.
fn gather<T: Copy, U>(x: &[T], all: bool, idx: &[usize], f: impl Fn(T) -> U) -> Vec<U> {
    if all {
        x.iter().map(|&v| f(v)).collect()
    } else {
        idx.iter().map(|&k| f(x[k])).collect()
    }
}

/// The selected values as numbers, and (if `rows` is given) the row of each; `None` for
/// strings and opaque values.
fn pick(
    u: &Unpacked,
    ctx: &ColumnContext<'_>,
    sel: &Selection,
    rows: Option<&mut Vec<usize>>,
) -> Option<Picked> {
    let all = u.nulls.is_none() && sel.count() == u.rows && rows.is_none();
    let idx = if all {
        Vec::new()
    } else {
        picked_indexes(u, sel, rows)
    };
    let (values, codes) = match &u.form {
        Form::Scaled(s) => (s.values(), None),
        Form::Integers { kind, ints } => {
            return Some(match kind {
                Kind::Float64 => Picked::Float8(gather(ints, all, &idx, |i| i as f64)),
                Kind::Float32 => Picked::Float4(gather(ints, all, &idx, |i| i as f32)),
                _ => Picked::Ints(gather(ints, all, &idx, |i| i)),
            })
        }
        Form::Values(v) => (v, None),
        Form::Codes { inline, codes } => (Unpacked::entries(inline, ctx), Some(codes.as_slice())),
    };
    // dictionary codes: pick the codes, then look the entries up
    let at: Vec<usize>;
    let (all, idx) = match codes {
        None => (all, idx.as_slice()),
        Some(c) => {
            at = gather(c, all, &idx, |c| c as usize);
            (false, at.as_slice())
        }
    };
    Some(match values {
        Values::Int8(x) => Picked::Ints(gather(x, all, idx, |v| v as i64)),
        Values::Int16(x) => Picked::Ints(gather(x, all, idx, |v| v as i64)),
        Values::Int32(x) => Picked::Ints(gather(x, all, idx, |v| v as i64)),
        Values::Int64(x) => Picked::Ints(gather(x, all, idx, |v| v)),
        Values::Float64(x) => Picked::Float8(gather(x, all, idx, |v| v)),
        Values::Float32(x) => Picked::Float4(gather(x, all, idx, |v| v)),
        Values::Bytes(_) | Values::Fixed { .. } => return None,
    })
}

fn float8_add(a: f64, b: f64) -> Result<f64, FloatOverflow> {
    let s = a + b;
    if s.is_infinite() && !a.is_infinite() && !b.is_infinite() {
        return Err(FloatOverflow);
    }
    Ok(s)
}

fn float4_add(a: f32, b: f32) -> Result<f32, FloatOverflow> {
    let s = a + b;
    if s.is_infinite() && !a.is_infinite() && !b.is_infinite() {
        return Err(FloatOverflow);
    }
    Ok(s)
}

/// One step of `float8_accum`.
#[inline(always)]
fn accum(n: &mut f64, sx: &mut f64, sxx: &mut f64, x: f64) -> Result<(), FloatOverflow> {
    let (n0, sx0) = (*n, *sx);
    *n = n0 + 1.0;
    *sx = sx0 + x;
    if n0 > 0.0 {
        let tmp = x * *n - *sx;
        *sxx += tmp * tmp / (*n * n0);
        if sx.is_infinite() || sxx.is_infinite() {
            if !sx0.is_infinite() && !x.is_infinite() {
                return Err(FloatOverflow);
            }
            *sxx = f64::NAN;
        }
    } else if x.is_nan() || x.is_infinite() {
        *sxx = f64::NAN;
    }
    Ok(())
}

/// One step of `float8_accum` for N and Sx alone ([`State::FloatAvg`]).
#[inline(always)]
fn avg_step(n: &mut f64, sx: &mut f64, x: f64) {
    *n += 1.0;
    *sx += x;
}

/// The float sum `sum` plus integer-valued floats whose exact sum is `total` and whose
/// magnitudes add up to `magnitude` (below 2^62), if adding them to it one by one as floats
/// gives exactly that: `sum` is an integer and it and every partial sum stay within `limit`
/// (2^53 for float8, 2^24 for float4) in magnitude, so every partial sum is an exact integer
/// and no step rounds or overflows. (-0.0 plus values summing to 0 is 0.0 both ways.)
fn exact_integer_sum(sum: f64, total: i64, magnitude: i64, limit: i64) -> Option<i64> {
    let start = (sum.fract() == 0.0 && sum.abs() <= limit as f64).then_some(sum as i64)?;
    (start.abs() + magnitude <= limit).then_some(start + total)
}

/// The exact sum and the sum of magnitudes of `values` (each below 2^52 in magnitude, at
/// most 1024 of them: no overflow); in two independent chains the compiler vectorizes.
fn total_and_magnitude(values: &[i64]) -> (i64, i64) {
    values
        .iter()
        .fold((0i64, 0i64), |(t, m), &v| (t + v, m + v.abs()))
}

/// `sum` plus `run`'s values added one by one as floats ([`avg_step`]'s Sx), in integers
/// where [`exact_integer_sum`] shows that is the same; `exact`: every value of the vector is
/// below 2^52 in magnitude.
#[inline(always)]
fn float8_run_sum(sum: f64, run: &[i64], exact: bool) -> f64 {
    if exact {
        let (total, magnitude) = total_and_magnitude(run);
        if let Some(s) = exact_integer_sum(sum, total, magnitude, 1 << 53) {
            return s as f64;
        }
    }
    float_run_sum(sum, run, |v| v as f64)
}

/// Runs of one group among a vector's values: the end and group of each run, in order, or
/// `None` when the group changes so often (a time-major vector of many hosts) that values
/// go one by one: a short run's loop exit would cost a mispredicted branch per value. Found
/// once per vector for all its aggregates.
#[derive(Debug, Default)]
pub struct GroupRuns(Option<Vec<(usize, u32)>>);

impl GroupRuns {
    /// What [`GroupStates::add`] reads: the runs of the selected rows' groups when those rows
    /// are one range (every row, or a sorted stripe's vector that a time window cuts: part
    /// of a host's run), ends counted from the range's start; none otherwise.
    pub fn of_selected(groups: &[u32], sel: &Selection) -> GroupRuns {
        sel.single_range()
            .map_or_else(GroupRuns::default, |range| GroupRuns::of(&groups[range]))
    }

    /// The runs of `groups` (`None` past one change per 8 values).
    pub fn of(groups: &[u32]) -> GroupRuns {
        let n = groups.len();
        let mut runs = Vec::new();
        let mut r = 0;
        while r < n {
            let g = groups[r];
            let mut end = r + 1;
            // 16 at a time by a test the compiler vectorizes, then one by one
            while end + 16 <= n
                && groups[end..end + 16]
                    .iter()
                    .fold(true, |same, &x| same & (x == g))
            {
                end += 16;
            }
            while end < n && groups[end] == g {
                end += 1;
            }
            runs.push((end, g));
            if (runs.len() - 1) * 8 > n {
                return GroupRuns(None);
            }
            r = end;
        }
        GroupRuns(Some(runs))
    }

    /// Each run as its values' range and group.
    fn each(runs: &[(usize, u32)]) -> impl Iterator<Item = (std::ops::Range<usize>, usize)> + '_ {
        runs.iter().scan(0, |start, &(end, g)| {
            let range = *start..end;
            *start = end;
            Some((range, g as usize))
        })
    }
}

/// [`avg_step`] for each of `x` into the states of its group (`groups`, with its `runs`), a
/// run of one group at a time where there are runs (a vector of a sorted table is one
/// host's): `run_sum` adds a run's values to its Sx as the steps would, one after the other
/// in registers rather than through the states' memory, or at once where that is the same
/// bits; its count is added at once (exact: counts stay far below 2^53).
#[inline(always)]
fn avg_runs<T: Copy>(
    n: &mut [f64],
    sx: &mut [f64],
    x: &[T],
    groups: &[u32],
    runs: &GroupRuns,
    f: impl Fn(T) -> f64,
    run_sum: impl Fn(f64, &[T]) -> f64,
) {
    let Some(runs) = &runs.0 else {
        for (&v, &g) in x.iter().zip(groups) {
            avg_step(&mut n[g as usize], &mut sx[g as usize], f(v));
        }
        return;
    };
    for (range, g) in GroupRuns::each(runs) {
        n[g] += range.len() as f64;
        sx[g] = run_sum(sx[g], &x[range]);
    }
}

/// `sum` plus float `run`'s values added one by one.
#[inline(always)]
fn float_run_sum<T: Copy>(sum: f64, run: &[T], f: impl Fn(T) -> f64) -> f64 {
    run.iter().fold(sum, |s, &v| s + f(v))
}

/// One step of `float8pl` as a sum aggregate: it has no initial state, so the first value
/// is the sum (0 + -0 would be 0, not -0).
#[inline(always)]
fn float8_sum_step(n: &mut i64, sum: &mut f64, v: f64) -> Result<(), FloatOverflow> {
    *sum = if *n == 0 { v } else { float8_add(*sum, v)? };
    *n += 1;
    Ok(())
}

/// [`float8_sum_step`] for `float4pl`.
#[inline(always)]
fn float4_sum_step(n: &mut i64, sum: &mut f32, v: f32) -> Result<(), FloatOverflow> {
    *sum = if *n == 0 { v } else { float4_add(*sum, v)? };
    *n += 1;
    Ok(())
}

/// `min`/`max` from `best` over `x` in order under `order`: a value replaces the best unless
/// the best is strictly better, so of equal values the last is kept.
#[inline(always)]
fn fold_best<T: Copy>(
    max: bool,
    best: Option<T>,
    x: &[T],
    order: impl Fn(T, T) -> Ordering,
) -> Option<T> {
    let mut it = x.iter().copied();
    let mut b = best.or_else(|| it.next())?;
    let keep = if max {
        Ordering::Greater
    } else {
        Ordering::Less
    };
    for v in it {
        if order(b, v) != keep {
            b = v;
        }
    }
    Some(b)
}

/// One step of `min`/`max`.
#[inline(always)]
fn min_max_step(max: bool, best: &mut Option<Number>, v: Number) {
    *best = Some(match *best {
        Some(b) if !replaces(max, b, v) => b,
        _ => v,
    });
}

/// Whether `new` replaces `best` (`max`: `best > new` keeps it; `min`: `best < new`).
#[inline(always)]
fn replaces(max: bool, best: Number, new: Number) -> bool {
    let o = number_order(best, new);
    if max {
        o != Ordering::Greater
    } else {
        o != Ordering::Less
    }
}

/// The order of two numbers of one kind (floats as PostgreSQL orders them).
#[inline(always)]
fn number_order(a: Number, b: Number) -> Ordering {
    match (a, b) {
        (Number::Int(a), Number::Int(b)) => a.cmp(&b),
        (Number::Float8(a), Number::Float8(b)) => float_order(a, b),
        (Number::Float4(a), Number::Float4(b)) => float_order(a as f64, b as f64),
        _ => unreachable!("one column, one kind"),
    }
}

impl State {
    /// The state of `f` over values of `kind`; `None` if it is not computed here.
    pub fn new(f: Function, kind: Kind) -> Option<State> {
        let int = matches!(kind, Kind::Int16 | Kind::Int32 | Kind::Int64);
        Some(match (f, kind) {
            (Function::CountStar | Function::Count, _) => State::Count(0),
            (Function::Sum | Function::Avg, _) if int => State::IntSum { n: 0, sum: 0 },
            (Function::Sum, Kind::Float64) => State::Float8Sum { n: 0, sum: 0.0 },
            (Function::Sum, Kind::Float32) => State::Float4Sum { n: 0, sum: 0.0 },
            (Function::Avg, Kind::Float64 | Kind::Float32) => State::FloatAccum {
                n: 0.0,
                sx: 0.0,
                sxx: 0.0,
            },
            (Function::Min | Function::Max, _) if int || kind.is_float() => State::MinMax {
                max: f == Function::Max,
                best: None,
            },
            (Function::Min | Function::Max, Kind::Bytes) => State::MinMaxBytes {
                max: f == Function::Max,
                best: None,
            },
            (Function::CountDistinct, _) if int || kind.is_float() || kind == Kind::Bytes => {
                State::Distinct {
                    set: DistinctSet::default(),
                    memory: 0,
                }
            }
            _ => return None,
        })
    }

    /// `avg` over floats that all lie within ±[`AVG_BOUND`], at most [`AVG_MAX_ROWS`] of
    /// them (the caller proves it, from zone maps): see [`State::FloatAvg`].
    pub fn bounded_avg() -> State {
        State::FloatAvg { n: 0.0, sx: 0.0 }
    }

    /// Adds what metadata answered for rows not read (see [`answer_from_metadata`]).
    pub fn add_answer(&mut self, a: MetaAnswer) {
        match (self, a) {
            (State::Count(n), MetaAnswer::Count(k)) => *n += k,
            (State::MinMax { max, best }, MetaAnswer::Best(b)) => {
                if let Some(v) = b {
                    min_max_step(*max, best, v);
                }
            }
            (s, a) => unreachable!("state {s:?} for {a:?}"),
        }
    }

    /// Adds `count` selected rows to a `count(*)`.
    pub fn add_rows(&mut self, count: usize) {
        match self {
            State::Count(n) => *n += count as i64,
            _ => unreachable!("rows are counted by count(*) only"),
        }
    }

    /// Adds the selected rows of `u` (unpacked with `ctx`). `None`: the vector holds values
    /// that are not numbers (a caller checks kinds first).
    pub fn add(
        &mut self,
        u: &Unpacked,
        ctx: &ColumnContext<'_>,
        sel: &Selection,
    ) -> Option<Result<(), FloatOverflow>> {
        if let State::Count(n) = self {
            let nonnull = match u.nulls.as_deref() {
                None => sel.count(),
                Some(bitmap) => sel
                    .iter()
                    .filter(|&r| bitmap[r / 8] >> (r % 8) & 1 == 0)
                    .count(),
            };
            *n += nonnull as i64;
            return Some(Ok(()));
        }
        if let State::MinMaxBytes { max, best } = self {
            let max = *max;
            for_each_selected_bytes(u, ctx, sel, |_, v| {
                if best.as_deref().is_none_or(|b| bytes_replace(max, b, v)) {
                    *best = Some(v.to_vec());
                }
            })?;
            return Some(Ok(()));
        }
        if let State::Distinct { set, memory } = self {
            if is_bytes(u, ctx) {
                return insert_selected_bytes(
                    u,
                    ctx,
                    sel,
                    std::slice::from_mut(set),
                    memory,
                    |_| 0,
                )
                .map(Ok);
            }
            let picked = pick(u, ctx, sel, None)?;
            for k in 0..picked.len() {
                *memory += set.insert_picked(&picked, k);
            }
            return Some(Ok(()));
        }
        if let (
            Form::Integers { kind, ints },
            State::Float8Sum { .. } | State::Float4Sum { .. } | State::FloatAvg { .. },
        ) = (&u.form, &*self)
        {
            if self.add_exact_integers(*kind, ints, u, sel) {
                return Some(Ok(()));
            }
        }
        if let Form::Scaled(s) = &u.form {
            if let Some(done) = self.add_scaled(s, u, sel) {
                return Some(done);
            }
        }
        let picked = pick(u, ctx, sel, None)?;
        Some(self.add_picked(&picked))
    }

    /// A float sum (or a bounded avg's Sx) over the selected values of a decimal vector, each
    /// converted as it is added (`d / 10^e`, the value `materialize` gives) in row order, the
    /// exceptions added as they are (with float8pl's overflow check); `None` (nothing added)
    /// for another state. A run of converted values is added without the check: each is
    /// at most 2^63 in magnitude, and a finite float plus that cannot overflow (the largest
    /// float is 2^970 below the first sum that rounds to infinity in float8, 2^103 in
    /// float4: half an ulp), while an infinite sum stays infinite or NaN without an error,
    /// as in float8pl.
    fn add_scaled(
        &mut self,
        s: &Scaled,
        u: &Unpacked,
        sel: &Selection,
    ) -> Option<Result<(), FloatOverflow>> {
        if !matches!(
            self,
            State::Float8Sum { .. } | State::Float4Sum { .. } | State::FloatAvg { .. }
        ) {
            return None;
        }
        let all = u.nulls.is_none() && sel.count() == u.rows;
        // the selected integers, and the exceptions among them (place, value), in order
        let (ints, exceptions): (std::borrow::Cow<'_, [i64]>, Vec<(usize, f64)>) = if all {
            let e = s.exceptions.iter();
            let e = e.map(|&(k, b)| (k as usize, s.exception_value(b)));
            (s.ints.as_slice().into(), e.collect())
        } else {
            let idx = picked_indexes(u, sel, None);
            let mut e = s.exceptions.iter().peekable();
            let mut exceptions = Vec::new();
            for (place, &i) in idx.iter().enumerate() {
                while e.next_if(|&&(k, _)| (k as usize) < i).is_some() {}
                if let Some(&(_, b)) = e.next_if(|&&(k, _)| k as usize == i) {
                    exceptions.push((place, s.exception_value(b)));
                }
            }
            (gather(&s.ints, false, &idx, |d| d).into(), exceptions)
        };
        let mut from = 0;
        let ends = exceptions.iter().map(|&(k, v)| (k, Some(v)));
        for (to, exception) in ends.chain([(ints.len(), None)]) {
            self.add_scaled_run(s, &ints[from..to]);
            if let Some(v) = exception {
                let step = match self {
                    State::Float8Sum { n, sum } => float8_sum_step(n, sum, v),
                    State::Float4Sum { n, sum } => float4_sum_step(n, sum, v as f32),
                    State::FloatAvg { n, sx } => {
                        avg_step(n, sx, v);
                        Ok(())
                    }
                    _ => unreachable!("checked above"),
                };
                if let Err(e) = step {
                    return Some(Err(e));
                }
            }
            from = to + 1;
        }
        Some(Ok(()))
    }

    /// [`add_scaled`](Self::add_scaled) of a run of integers (no exception among them),
    /// each converted to its value ([`Scaled::value`]: a float4 value rounded as float4).
    fn add_scaled_run(&mut self, s: &Scaled, run: &[i64]) {
        let Some((&first, rest)) = run.split_first() else {
            return;
        };
        match self {
            State::Float8Sum { n, sum } => {
                // a sum's first value starts it as it is
                let start = if *n == 0 {
                    s.value(first)
                } else {
                    *sum + s.value(first)
                };
                (*sum, *n) = (
                    float_run_sum(start, rest, |d| s.value(d)),
                    *n + run.len() as i64,
                );
            }
            State::Float4Sum { n, sum } => {
                // (a float4 value widened and narrowed back is itself)
                let start = if *n == 0 {
                    s.value(first) as f32
                } else {
                    *sum + s.value(first) as f32
                };
                (*sum, *n) = (
                    rest.iter().fold(start, |a, &d| a + s.value(d) as f32),
                    *n + run.len() as i64,
                );
            }
            State::FloatAvg { n, sx } => {
                // N counts whole rows below 2^40 (AVG_MAX_ROWS): adding the run's length is
                // adding 1.0 that many times; a float4 value is widened as float4_accum does
                *sx = float_run_sum(*sx, run, |d| s.value(d));
                *n += run.len() as f64;
            }
            _ => unreachable!("add_scaled checked the state"),
        }
    }

    /// A float sum (or a bounded avg's Sx) over integer-valued floats, added as integers
    /// when that is what adding them one by one gives ([`exact_integer_sum`]). False
    /// (nothing added) otherwise.
    fn add_exact_integers(
        &mut self,
        kind: Kind,
        ints: &[i64],
        u: &Unpacked,
        sel: &Selection,
    ) -> bool {
        let all = u.nulls.is_none() && sel.count() == u.rows;
        let picked;
        let values: &[i64] = if all {
            ints
        } else {
            picked = gather(ints, false, &picked_indexes(u, sel, None), |i| i);
            &picked
        };
        if values.is_empty() {
            return true;
        }
        if !crate::all_within_bits(values, 52) {
            return false;
        }
        let (total, magnitude) = total_and_magnitude(values);
        let len = values.len();
        // (a sum's first value starts it as it is, so an empty one counts as 0)
        match self {
            State::Float8Sum { n, sum } if kind == Kind::Float64 => {
                let Some(s) =
                    exact_integer_sum(if *n == 0 { 0.0 } else { *sum }, total, magnitude, 1 << 53)
                else {
                    return false;
                };
                (*sum, *n) = (s as f64, *n + len as i64);
            }
            State::Float4Sum { n, sum } if kind == Kind::Float32 => {
                let Some(s) = exact_integer_sum(
                    if *n == 0 { 0.0 } else { *sum as f64 },
                    total,
                    magnitude,
                    1 << 24,
                ) else {
                    return false;
                };
                (*sum, *n) = (s as f32, *n + len as i64);
            }
            State::FloatAvg { n, sx } => {
                let Some(s) = exact_integer_sum(*sx, total, magnitude, 1 << 53) else {
                    return false;
                };
                (*sx, *n) = (s as f64, *n + len as f64);
            }
            _ => return false,
        }
        true
    }

    fn add_picked(&mut self, p: &Picked) -> Result<(), FloatOverflow> {
        match (self, p) {
            (State::IntSum { n, sum }, Picked::Ints(x)) => {
                *n += x.len() as i64;
                if crate::all_within_bits(x, 52) {
                    // at most 1024 values of magnitude below 2^52: no i64 overflow
                    *sum += x.iter().sum::<i64>() as i128;
                } else {
                    *sum += x.iter().map(|&v| v as i128).sum::<i128>();
                }
            }
            (State::Float8Sum { n, sum }, Picked::Float8(x)) => {
                for &v in x {
                    float8_sum_step(n, sum, v)?;
                }
            }
            (State::Float4Sum { n, sum }, Picked::Float4(x)) => {
                for &v in x {
                    float4_sum_step(n, sum, v)?;
                }
            }
            (State::FloatAccum { n, sx, sxx }, Picked::Float8(x)) => {
                for &v in x {
                    accum(n, sx, sxx, v)?;
                }
            }
            (State::FloatAccum { n, sx, sxx }, Picked::Float4(x)) => {
                for &v in x {
                    accum(n, sx, sxx, v as f64)?;
                }
            }
            (State::FloatAvg { n, sx }, Picked::Float8(x)) => {
                for &v in x {
                    avg_step(n, sx, v);
                }
            }
            (State::FloatAvg { n, sx }, Picked::Float4(x)) => {
                for &v in x {
                    avg_step(n, sx, v as f64);
                }
            }
            // one loop per value type, on the bare values (the newer of equal values wins,
            // as in min_max_step)
            (State::MinMax { max, best }, Picked::Ints(x)) => {
                let b = best.map(|b| {
                    if let Number::Int(v) = b {
                        v
                    } else {
                        unreachable!()
                    }
                });
                *best = fold_best(*max, b, x, |a, b| a.cmp(&b)).map(Number::Int);
            }
            (State::MinMax { max, best }, Picked::Float8(x)) => {
                let b = best.map(|b| {
                    if let Number::Float8(v) = b {
                        v
                    } else {
                        unreachable!()
                    }
                });
                *best = fold_best(*max, b, x, float_order).map(Number::Float8);
            }
            (State::MinMax { max, best }, Picked::Float4(x)) => {
                let b = best.map(|b| {
                    if let Number::Float4(v) = b {
                        v
                    } else {
                        unreachable!()
                    }
                });
                *best = fold_best(*max, b, x, |a, b| float_order(a as f64, b as f64))
                    .map(Number::Float4);
            }
            (s, _) => unreachable!("state {s:?} for values of another kind"),
        }
        Ok(())
    }

    /// About the bytes the state holds beyond its own size: the values `count(DISTINCT)`
    /// keeps (0 for every other aggregate).
    pub fn memory(&self) -> usize {
        match self {
            State::Distinct { memory, .. } => *memory,
            _ => 0,
        }
    }

    /// The aggregate's result for values of `kind` (the column's kind).
    pub fn finish(&self, f: Function, kind: Kind) -> Output {
        match self {
            State::Count(n) => Output::Int8(*n),
            State::Distinct { set, .. } => Output::Int8(set.len() as i64),
            State::IntSum { n: 0, .. }
            | State::Float8Sum { n: 0, .. }
            | State::Float4Sum { n: 0, .. } => Output::Null,
            State::IntSum { n, sum } => match (f, kind) {
                (Function::Sum, Kind::Int64) => Output::Numeric(*sum),
                (Function::Sum, _) => Output::Int8(*sum as i64),
                (_, Kind::Int64) => Output::NumericRatio(*sum, *n),
                _ => Output::NumericRatio(*sum as i64 as i128, *n),
            },
            State::Float8Sum { sum, .. } => Output::Float8(*sum),
            State::Float4Sum { sum, .. } => Output::Float4(*sum),
            State::FloatAccum { n, sx, .. } | State::FloatAvg { n, sx } => {
                if *n == 0.0 {
                    Output::Null
                } else {
                    Output::Float8(*sx / *n)
                }
            }
            State::MinMax { best: None, .. } | State::MinMaxBytes { best: None, .. } => {
                Output::Null
            }
            State::MinMaxBytes { best: Some(b), .. } => Output::Bytes(b.clone()),
            State::MinMax { best: Some(b), .. } => match (*b, kind) {
                (Number::Int(v), Kind::Int16) => Output::Int2(v as i16),
                (Number::Int(v), Kind::Int32) => Output::Int4(v as i32),
                (Number::Int(v), _) => Output::Int8(v),
                (Number::Float8(v), _) => Output::Float8(v),
                (Number::Float4(v), _) => Output::Float4(v),
            },
        }
    }
}

/// What the metadata of a stripe or a vector knows of one column over its rows: how many
/// are NULL, and the zone of the others (`None`: no zone is known).
#[derive(Debug, Clone, Copy)]
pub struct ColumnFacts<'a> {
    pub nulls: usize,
    pub zone: Option<&'a StoredZone>,
}

/// An aggregate's contribution from rows it did not read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MetaAnswer {
    /// This many rows (`count(*)`) or non-null values (`count(col)`).
    Count(i64),
    /// The least (`min`) or greatest (`max`) value, `None` if every value is NULL.
    Best(Option<Number>),
}

/// `f` over `rows` rows, every one of them selected, of a column of `kind` whose metadata
/// says `facts` (`count(*)` needs none), if the metadata gives it exactly: counts always;
/// `min`/`max` from a zone of the column's own form (zone bounds are the values themselves),
/// except a float zone bound of ±0.0, since the zone keeps the first of equal values and
/// PostgreSQL the last, and -0.0 equals 0.0 with other bits. Never `sum` or `avg`.
pub fn answer_from_metadata(
    f: Function,
    kind: Kind,
    rows: usize,
    facts: Option<ColumnFacts<'_>>,
) -> Option<MetaAnswer> {
    match f {
        Function::CountStar => Some(MetaAnswer::Count(rows as i64)),
        Function::Count => Some(MetaAnswer::Count(rows.checked_sub(facts?.nulls)? as i64)),
        Function::CountDistinct => None,
        Function::Min | Function::Max => {
            let max = f == Function::Max;
            Some(MetaAnswer::Best(match (facts?.zone?, kind) {
                (StoredZone::Empty, _) => None,
                (StoredZone::Int { min, max: hi }, Kind::Int16 | Kind::Int32 | Kind::Int64) => {
                    Some(Number::Int(if max { *hi } else { *min }))
                }
                (StoredZone::Float { min, max: hi }, Kind::Float64 | Kind::Float32) => {
                    let v = if max { *hi } else { *min };
                    if v == 0.0 {
                        return None;
                    }
                    Some(if kind == Kind::Float32 {
                        Number::Float4(v as f32)
                    } else {
                        Number::Float8(v)
                    })
                }
                _ => return None,
            }))
        }
        Function::Sum | Function::Avg => None,
    }
}

/// Calls `f` with each selected non-NULL row of `u` and its bytes; `None` if `u` holds no
/// byte strings (a vector of another kind).
fn for_each_selected_bytes(
    u: &Unpacked,
    ctx: &ColumnContext<'_>,
    sel: &Selection,
    mut f: impl FnMut(usize, &[u8]),
) -> Option<()> {
    // the strings, and for a dictionary vector the code of each non-NULL row into them
    let (strings, codes) = match &u.form {
        Form::Values(Values::Bytes(b)) => (b.as_ref(), None),
        Form::Codes { inline, codes } => {
            let Values::Bytes(entries) = Unpacked::entries(inline, ctx) else {
                return None;
            };
            (entries.as_ref(), Some(codes.as_slice()))
        }
        _ => return None,
    };
    let nulls = u.nulls.as_deref();
    let is_null = |r: usize| nulls.is_some_and(|b| b[r / 8] >> (r % 8) & 1 == 1);
    // the index among non-NULL rows of each selected row, walked alongside the selection
    let (mut k, mut next_row) = (0, 0);
    for r in sel.iter() {
        k += (next_row..r).filter(|&s| !is_null(s)).count();
        next_row = r + 1;
        if !is_null(r) {
            f(r, strings.get(codes.map_or(k, |c| c[k] as usize)));
            k += 1;
        }
    }
    Some(())
}

/// Whether `new` takes the place of `best` in `min` (`max` false) or `max`, bytewise.
fn bytes_replace(max: bool, best: &[u8], new: &[u8]) -> bool {
    if max {
        new > best
    } else {
        new < best
    }
}

/// Grouped `min`/`max`: value `x[k]` goes to group `vg[k]` (the newer of equal values wins,
/// as in [`min_max_step`]). Where there are `runs`, a run of one group is folded in
/// registers ([`fold_best`], the same rule), not through the group's best in memory value
/// by value.
#[inline(always)]
fn min_max_each<T: Copy>(
    max: bool,
    best: &mut [T],
    seen: &mut [bool],
    x: &[T],
    vg: &[u32],
    runs: &GroupRuns,
    number: impl Fn(T) -> Number,
) {
    let Some(runs) = &runs.0 else {
        for (&v, &g) in x.iter().zip(vg) {
            let g = g as usize;
            if !seen[g] || replaces(max, number(best[g]), number(v)) {
                best[g] = v;
                seen[g] = true;
            }
        }
        return;
    };
    for (range, g) in GroupRuns::each(runs) {
        if let Some(b) = fold_best(max, seen[g].then(|| best[g]), &x[range], |a, b| {
            number_order(number(a), number(b))
        }) {
            best[g] = b;
            seen[g] = true;
        }
    }
}

/// The states of one aggregate for every group, as arrays indexed by group number, so that
/// a grouped step touches a few numbers instead of a whole [`State`].
#[derive(Debug, Clone, PartialEq)]
pub enum GroupStates {
    Count(Vec<i64>),
    IntSum {
        n: Vec<i64>,
        sum: Vec<i128>,
    },
    Float8Sum {
        n: Vec<i64>,
        sum: Vec<f64>,
    },
    Float4Sum {
        n: Vec<i64>,
        sum: Vec<f32>,
    },
    FloatAccum {
        n: Vec<f64>,
        sx: Vec<f64>,
        sxx: Vec<f64>,
    },
    /// See [`State::FloatAvg`].
    FloatAvg {
        n: Vec<f64>,
        sx: Vec<f64>,
    },
    /// `min`/`max`: the best value so far of each group that has one (`seen`).
    MinMaxInt {
        max: bool,
        best: Vec<i64>,
        seen: Vec<bool>,
    },
    MinMaxFloat8 {
        max: bool,
        best: Vec<f64>,
        seen: Vec<bool>,
    },
    MinMaxFloat4 {
        max: bool,
        best: Vec<f32>,
        seen: Vec<bool>,
    },
    MinMaxBytes {
        max: bool,
        best: Vec<Option<Box<[u8]>>>,
    },
    /// `count(DISTINCT col)`: each group's values, and about the bytes they take together.
    Distinct {
        sets: Vec<DistinctSet>,
        memory: usize,
    },
}

impl GroupStates {
    /// No group yet of `f` over values of `kind`; `None` if it is not computed here.
    pub fn new(f: Function, kind: Kind) -> Option<GroupStates> {
        Some(match State::new(f, kind)? {
            State::Count(_) => GroupStates::Count(Vec::new()),
            State::IntSum { .. } => GroupStates::IntSum {
                n: Vec::new(),
                sum: Vec::new(),
            },
            State::Float8Sum { .. } => GroupStates::Float8Sum {
                n: Vec::new(),
                sum: Vec::new(),
            },
            State::Float4Sum { .. } => GroupStates::Float4Sum {
                n: Vec::new(),
                sum: Vec::new(),
            },
            State::FloatAccum { .. } => GroupStates::FloatAccum {
                n: Vec::new(),
                sx: Vec::new(),
                sxx: Vec::new(),
            },
            State::FloatAvg { .. } => GroupStates::bounded_avg(),
            State::MinMaxBytes { max, .. } => GroupStates::MinMaxBytes {
                max,
                best: Vec::new(),
            },
            State::Distinct { .. } => GroupStates::Distinct {
                sets: Vec::new(),
                memory: 0,
            },
            State::MinMax { max, .. } => match kind {
                Kind::Float64 => GroupStates::MinMaxFloat8 {
                    max,
                    best: Vec::new(),
                    seen: Vec::new(),
                },
                Kind::Float32 => GroupStates::MinMaxFloat4 {
                    max,
                    best: Vec::new(),
                    seen: Vec::new(),
                },
                _ => GroupStates::MinMaxInt {
                    max,
                    best: Vec::new(),
                    seen: Vec::new(),
                },
            },
        })
    }

    /// `avg` over floats that all lie within ±[`AVG_BOUND`], at most [`AVG_MAX_ROWS`] of
    /// them (the caller proves it, from zone maps): see [`State::FloatAvg`].
    pub fn bounded_avg() -> GroupStates {
        GroupStates::FloatAvg {
            n: Vec::new(),
            sx: Vec::new(),
        }
    }

    /// About the bytes the states hold beyond a fixed size per group: the values
    /// `count(DISTINCT)` keeps (0 for every other aggregate).
    pub fn memory(&self) -> usize {
        match self {
            GroupStates::Distinct { memory, .. } => *memory,
            _ => 0,
        }
    }

    /// Makes room for `groups` groups, the new ones empty.
    pub fn resize(&mut self, groups: usize) {
        match self {
            GroupStates::Count(c) => c.resize(groups, 0),
            GroupStates::IntSum { n, sum } => {
                n.resize(groups, 0);
                sum.resize(groups, 0);
            }
            GroupStates::Float8Sum { n, sum } => {
                n.resize(groups, 0);
                sum.resize(groups, 0.0);
            }
            GroupStates::Float4Sum { n, sum } => {
                n.resize(groups, 0);
                sum.resize(groups, 0.0);
            }
            GroupStates::FloatAccum { n, sx, sxx } => {
                n.resize(groups, 0.0);
                sx.resize(groups, 0.0);
                sxx.resize(groups, 0.0);
            }
            GroupStates::FloatAvg { n, sx } => {
                n.resize(groups, 0.0);
                sx.resize(groups, 0.0);
            }
            GroupStates::MinMaxInt { best, seen, .. } => {
                best.resize(groups, 0);
                seen.resize(groups, false);
            }
            GroupStates::MinMaxFloat8 { best, seen, .. } => {
                best.resize(groups, 0.0);
                seen.resize(groups, false);
            }
            GroupStates::MinMaxFloat4 { best, seen, .. } => {
                best.resize(groups, 0.0);
                seen.resize(groups, false);
            }
            GroupStates::MinMaxBytes { best, .. } => best.resize(groups, None),
            GroupStates::Distinct { sets, .. } => sets.resize(groups, DistinctSet::default()),
        }
    }

    /// The state of group `g`.
    pub fn state(&self, g: usize) -> State {
        let best = |seen: &[bool], v: Number| seen[g].then_some(v);
        match self {
            GroupStates::Count(c) => State::Count(c[g]),
            // (its count is all a result needs: the set stays here)
            GroupStates::Distinct { sets, .. } => State::Count(sets[g].len() as i64),
            GroupStates::IntSum { n, sum } => State::IntSum {
                n: n[g],
                sum: sum[g],
            },
            GroupStates::Float8Sum { n, sum } => State::Float8Sum {
                n: n[g],
                sum: sum[g],
            },
            GroupStates::Float4Sum { n, sum } => State::Float4Sum {
                n: n[g],
                sum: sum[g],
            },
            GroupStates::FloatAccum { n, sx, sxx } => State::FloatAccum {
                n: n[g],
                sx: sx[g],
                sxx: sxx[g],
            },
            GroupStates::FloatAvg { n, sx } => State::FloatAvg { n: n[g], sx: sx[g] },
            GroupStates::MinMaxBytes { max, best } => State::MinMaxBytes {
                max: *max,
                best: best[g].as_ref().map(|b| b.to_vec()),
            },
            GroupStates::MinMaxInt { max, best: b, seen } => State::MinMax {
                max: *max,
                best: best(seen, Number::Int(b[g])),
            },
            GroupStates::MinMaxFloat8 { max, best: b, seen } => State::MinMax {
                max: *max,
                best: best(seen, Number::Float8(b[g])),
            },
            GroupStates::MinMaxFloat4 { max, best: b, seen } => State::MinMax {
                max: *max,
                best: best(seen, Number::Float4(b[g])),
            },
        }
    }

    /// Adds the selected rows of a vector to the `count(*)` of their groups (`groups[r]` for
    /// row `r`; `runs` as in [`add`](Self::add)).
    pub fn count_rows(&mut self, sel: &Selection, groups: &[u32], runs: &GroupRuns) {
        let GroupStates::Count(c) = self else {
            unreachable!("rows are counted by count(*) only")
        };
        if let Some(runs) = &runs.0 {
            for (range, g) in GroupRuns::each(runs) {
                c[g] += range.len() as i64;
            }
            return;
        }
        for r in sel.iter() {
            c[groups[r] as usize] += 1;
        }
    }

    /// [`State::add`] for grouped rows: each selected row `r` of `u` goes to group
    /// `groups[r]`, in row order; `runs` are [`GroupRuns::of_selected`]. `None`: the vector
    /// holds values that are not numbers.
    pub fn add(
        &mut self,
        u: &Unpacked,
        ctx: &ColumnContext<'_>,
        sel: &Selection,
        groups: &[u32],
        runs: &GroupRuns,
    ) -> Option<Result<(), FloatOverflow>> {
        if let GroupStates::Count(c) = self {
            let nulls = u.nulls.as_deref();
            for r in sel.iter() {
                if !nulls.is_some_and(|b| b[r / 8] >> (r % 8) & 1 == 1) {
                    c[groups[r] as usize] += 1;
                }
            }
            return Some(Ok(()));
        }
        if let GroupStates::MinMaxBytes { max, best } = self {
            let max = *max;
            for_each_selected_bytes(u, ctx, sel, |r, v| {
                let b = &mut best[groups[r] as usize];
                if b.as_deref().is_none_or(|b| bytes_replace(max, b, v)) {
                    *b = Some(v.into());
                }
            })?;
            return Some(Ok(()));
        }
        if let GroupStates::Distinct { sets, memory } = self {
            if is_bytes(u, ctx) {
                return insert_selected_bytes(u, ctx, sel, sets, memory, |r| groups[r] as usize)
                    .map(Ok);
            }
            let mut rows = Vec::new();
            let picked = pick(u, ctx, sel, Some(&mut rows))?;
            for (k, &r) in rows.iter().enumerate() {
                *memory += sets[groups[r] as usize].insert_picked(&picked, k);
            }
            return Some(Ok(()));
        }
        // the rows picked as one range of a vector without NULLs (every row, or part of a
        // host's run), whose values are that range of the vector's, in order
        let range = if u.nulls.is_none() {
            sel.single_range()
        } else {
            None
        };
        if let (Some(range), GroupStates::FloatAvg { n, sx }) = (range.clone(), &mut *self) {
            // a plain or bitpacked vector: straight over those values
            match &u.form {
                Form::Values(Values::Float64(x)) => {
                    avg_runs(
                        n,
                        sx,
                        &x[range.clone()],
                        &groups[range],
                        runs,
                        |v| v,
                        |s, run| float_run_sum(s, run, |v| v),
                    );
                    return Some(Ok(()));
                }
                Form::Integers {
                    kind: Kind::Float64 | Kind::Float32,
                    ints,
                } => {
                    let ints = &ints[range.clone()];
                    let exact = crate::all_within_bits(ints, 52);
                    avg_runs(
                        n,
                        sx,
                        ints,
                        &groups[range],
                        runs,
                        |v| v as f64,
                        |s, run| float8_run_sum(s, run, exact),
                    );
                    return Some(Ok(()));
                }
                _ => {}
            }
        }
        // the group of each picked value: with every row picked, value k is row k's
        let all = range == Some(0..u.rows);
        let mut rows = Vec::new();
        let picked = pick(u, ctx, sel, (!all).then_some(&mut rows))?;
        let value_groups: Vec<u32>;
        let value_runs: GroupRuns;
        let (vg, runs): (&[u32], &GroupRuns) = if all {
            (&groups[..u.rows], runs)
        } else {
            value_groups = rows.iter().map(|&r| groups[r]).collect();
            // (the runs of the values picked, for the states that add runs)
            value_runs = match self {
                GroupStates::FloatAvg { .. }
                | GroupStates::MinMaxInt { .. }
                | GroupStates::MinMaxFloat8 { .. }
                | GroupStates::MinMaxFloat4 { .. } => GroupRuns::of(&value_groups),
                _ => GroupRuns::default(),
            };
            (&value_groups, &value_runs)
        };
        // one loop per state and value type: each step is a few array updates
        match (self, &picked) {
            (GroupStates::IntSum { n, sum }, Picked::Ints(x)) => {
                for (&v, &g) in x.iter().zip(vg) {
                    n[g as usize] += 1;
                    sum[g as usize] += v as i128;
                }
            }
            (GroupStates::Float8Sum { n, sum }, Picked::Float8(x)) => {
                for (&v, &g) in x.iter().zip(vg) {
                    if let Err(e) = float8_sum_step(&mut n[g as usize], &mut sum[g as usize], v) {
                        return Some(Err(e));
                    }
                }
            }
            (GroupStates::Float4Sum { n, sum }, Picked::Float4(x)) => {
                for (&v, &g) in x.iter().zip(vg) {
                    if let Err(e) = float4_sum_step(&mut n[g as usize], &mut sum[g as usize], v) {
                        return Some(Err(e));
                    }
                }
            }
            (GroupStates::FloatAccum { n, sx, sxx }, Picked::Float8(x)) => {
                for (&v, &g) in x.iter().zip(vg) {
                    let g = g as usize;
                    if let Err(e) = accum(&mut n[g], &mut sx[g], &mut sxx[g], v) {
                        return Some(Err(e));
                    }
                }
            }
            (GroupStates::FloatAccum { n, sx, sxx }, Picked::Float4(x)) => {
                for (&v, &g) in x.iter().zip(vg) {
                    let g = g as usize;
                    if let Err(e) = accum(&mut n[g], &mut sx[g], &mut sxx[g], v as f64) {
                        return Some(Err(e));
                    }
                }
            }
            (GroupStates::FloatAvg { n, sx }, Picked::Float8(x)) => avg_runs(
                n,
                sx,
                x,
                vg,
                runs,
                |v| v,
                |s, run| float_run_sum(s, run, |v| v),
            ),
            (GroupStates::FloatAvg { n, sx }, Picked::Float4(x)) => avg_runs(
                n,
                sx,
                x,
                vg,
                runs,
                |v| v as f64,
                |s, run| float_run_sum(s, run, |v| v as f64),
            ),
            (GroupStates::MinMaxInt { max, best, seen }, Picked::Ints(x)) => {
                min_max_each(*max, best, seen, x, vg, runs, Number::Int)
            }
            (GroupStates::MinMaxFloat8 { max, best, seen }, Picked::Float8(x)) => {
                min_max_each(*max, best, seen, x, vg, runs, Number::Float8)
            }
            (GroupStates::MinMaxFloat4 { max, best, seen }, Picked::Float4(x)) => {
                min_max_each(*max, best, seen, x, vg, runs, Number::Float4)
            }
            (s, _) => unreachable!("grouped state {s:?} for values of another kind"),
        }
        Some(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `GroupRuns::of` against runs found one value at a time, on runs of every length
    /// around the 16-value steps, and the switch to values one by one past a change per 8.
    #[test]
    fn group_runs_are_the_runs_of_equal_groups() {
        let mut state = 7u64;
        let mut next = |n: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % n
        };
        let (mut with_runs, mut without) = (0, 0);
        for case in 0..2000 {
            let longest = [1, 3, 9, 17, 40, 300][case % 6];
            let rows = next(1025) as usize;
            let mut groups = Vec::new();
            while groups.len() < rows {
                let g = next(4) as u32;
                let len = 1 + next(longest) as usize;
                groups.extend(std::iter::repeat_n(g, len.min(rows - groups.len())));
            }
            let mut want: Vec<(usize, u32)> = Vec::new();
            for (r, &g) in groups.iter().enumerate() {
                match want.last_mut() {
                    Some((end, last)) if *last == g => *end = r + 1,
                    _ => want.push((r + 1, g)),
                }
            }
            let got = GroupRuns::of(&groups).0;
            if want.len().saturating_sub(1) * 8 > rows {
                assert_eq!(got, None, "case {case}");
                without += 1;
            } else {
                assert_eq!(got, Some(want), "case {case}");
                with_runs += 1;
            }
        }
        assert!(
            with_runs > 500 && without > 500,
            "{with_runs} with runs, {without} without"
        );
    }

    #[test]
    fn float_rules() {
        // a finite overflow is an error, an infinite input is not
        assert_eq!(float8_add(f64::MAX, f64::MAX), Err(FloatOverflow));
        assert_eq!(float8_add(f64::INFINITY, 1.0), Ok(f64::INFINITY));
        assert_eq!(float4_add(f32::MAX, f32::MAX), Err(FloatOverflow));
        // Sxx overflows before Sx does
        let (mut n, mut sx, mut sxx) = (0.0, 0.0, 0.0);
        accum(&mut n, &mut sx, &mut sxx, 1e200).unwrap();
        assert_eq!(accum(&mut n, &mut sx, &mut sxx, -1e200), Err(FloatOverflow));
        // ties: the newer value wins, so -0.0 then 0.0 keeps 0.0
        assert!(replaces(false, Number::Float8(-0.0), Number::Float8(0.0)));
        assert!(!replaces(
            true,
            Number::Float8(f64::NAN),
            Number::Float8(1.0)
        ));
        assert!(replaces(
            true,
            Number::Float8(1.0),
            Number::Float8(f64::NAN)
        ));
    }
}

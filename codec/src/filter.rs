//! Vectorized filters: a predicate evaluated over one decoded vector at a time, giving a
//! [`Selection`] (one bit per row), instead of row by row through PostgreSQL's executor.
//!
//! Semantics are PostgreSQL's for the operators the scan hands over (see `exec::filter` in
//! the extension): integers compare as numbers whatever their width (int2, int4, int8, date,
//! timestamp, timestamptz, each against its own family); floats in PostgreSQL's order, where
//! NaN equals NaN and is greater than every other value, and -0.0 equals 0.0; byte strings
//! bytewise (memcmp, a prefix first). Comparisons are strict: a NULL row is never selected.
//! `ANY`/`ALL` follow `ScalarArrayOpExpr`: an empty array gives false for ANY and true for
//! ALL on every row, NULL ones included (so a caller maps that case to [`Predicate::All`]),
//! and a NULL element never satisfies (ANY ignores it; ALL with one is never true).

use std::cmp::Ordering;

use crate::vector::{Values, Vector, MAX_ROWS};
use crate::zonemap::Cmp;

const WORDS: usize = MAX_ROWS / 64;

/// The selected rows of one vector: bit `r % 64` of word `r / 64` for row `r`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Selection {
    words: [u64; WORDS],
    rows: usize,
}

impl Selection {
    pub fn none(rows: usize) -> Selection {
        assert!(rows <= MAX_ROWS, "a vector has at most {MAX_ROWS} rows");
        Selection { words: [0; WORDS], rows }
    }

    pub fn all(rows: usize) -> Selection {
        let mut s = Selection::none(rows);
        for (i, w) in s.words.iter_mut().enumerate() {
            let lo = i * 64;
            *w = match rows.saturating_sub(lo) {
                0 => 0,
                n if n >= 64 => u64::MAX,
                n => (1u64 << n) - 1,
            };
        }
        s
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn contains(&self, r: usize) -> bool {
        r < self.rows && self.words[r / 64] >> (r % 64) & 1 == 1
    }

    pub fn set(&mut self, r: usize) {
        self.words[r / 64] |= 1 << (r % 64);
    }

    pub fn count(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    pub fn and(&mut self, o: &Selection) {
        self.words.iter_mut().zip(&o.words).for_each(|(a, b)| *a &= b);
    }

    pub fn or(&mut self, o: &Selection) {
        self.words.iter_mut().zip(&o.words).for_each(|(a, b)| *a |= b);
    }

    /// The first selected row at or after `from`.
    pub fn next_from(&self, from: usize) -> Option<usize> {
        if from >= self.rows {
            return None;
        }
        let mut i = from / 64;
        let mut w = self.words[i] & (u64::MAX << (from % 64));
        loop {
            if w != 0 {
                let r = i * 64 + w.trailing_zeros() as usize;
                return (r < self.rows).then_some(r);
            }
            i += 1;
            if i == WORDS || i * 64 >= self.rows {
                return None;
            }
            w = self.words[i];
        }
    }

    /// The selected rows, ascending.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        std::iter::successors(self.next_from(0), move |&r| self.next_from(r + 1))
    }
}

/// A comparison constant, in the form of the column's decoded values.
#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    Int(i64),
    Float(f64),
    Bytes(Vec<u8>),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Predicate {
    /// `value <cmp> operand`.
    Compare(Cmp, Operand),
    /// `value <cmp> ANY (operands)`: some element satisfies it (non-empty; no NULLs).
    Any(Cmp, Vec<Operand>),
    /// `value <cmp> ALL (operands)` (non-empty; no NULLs).
    AllOf(Cmp, Vec<Operand>),
    IsNull,
    IsNotNull,
    /// Every row, NULL ones included (`x op ALL ('{}')`).
    All,
    /// No row (a comparison with NULL, `ANY ('{}')`, `ALL` with a NULL element).
    Nothing,
}

/// PostgreSQL's float order (float8_cmp_internal): NaN equal to itself and above all.
pub fn float_order(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => a.partial_cmp(&b).unwrap(),
    }
}

fn holds(cmp: Cmp, o: Ordering) -> bool {
    match cmp {
        Cmp::Lt => o == Ordering::Less,
        Cmp::Le => o != Ordering::Greater,
        Cmp::Eq => o == Ordering::Equal,
        Cmp::Ge => o != Ordering::Less,
        Cmp::Gt => o == Ordering::Greater,
        Cmp::Ne => o != Ordering::Equal,
    }
}

/// Packs `test(k)` for the `n` non-null values into a selection over `rows` rows, where the
/// non-null values sit at the rows whose null bit is clear.
#[inline(always)]
fn pack(rows: usize, nulls: Option<&[u8]>, n: usize, mut test: impl FnMut(usize) -> bool) -> Selection {
    let mut s = Selection::none(rows);
    match nulls {
        None => {
            debug_assert_eq!(n, rows);
            for (i, word) in s.words.iter_mut().enumerate().take(rows.div_ceil(64)) {
                let lo = i * 64;
                let hi = (lo + 64).min(rows);
                let mut w = 0u64;
                for k in lo..hi {
                    w |= (test(k) as u64) << (k - lo);
                }
                *word = w;
            }
        }
        Some(bitmap) => {
            let mut k = 0;
            for r in 0..rows {
                if bitmap[r / 8] >> (r % 8) & 1 == 0 {
                    if test(k) {
                        s.set(r);
                    }
                    k += 1;
                }
            }
        }
    }
    s
}

/// A float comparison against one constant as plain IEEE tests (NaN handled per case), so
/// that the loop stays branch-free.
#[inline(always)]
fn float_test(cmp: Cmp, c: f64) -> impl Fn(f64) -> bool {
    move |v: f64| {
        if c.is_nan() {
            match cmp {
                Cmp::Lt => !v.is_nan(),
                Cmp::Le => true,
                Cmp::Eq | Cmp::Ge => v.is_nan(),
                Cmp::Gt => false,
                Cmp::Ne => !v.is_nan(),
            }
        } else {
            match cmp {
                Cmp::Lt => v < c,
                Cmp::Le => v <= c,
                Cmp::Eq => v == c,
                Cmp::Ge => v >= c || v.is_nan(),
                Cmp::Gt => v > c || v.is_nan(),
                Cmp::Ne => v != c,
            }
        }
    }
}

fn compare_one(v: &Vector, cmp: Cmp, operand: &Operand) -> Option<Selection> {
    let nulls = v.nulls.as_deref();
    let rows = v.rows;
    macro_rules! ints {
        ($x:expr, $c:expr) => {{
            let x = $x;
            let c: i64 = $c;
            // each case its own loop, so the comparison is not re-decided per value
            Some(match cmp {
                Cmp::Lt => pack(rows, nulls, x.len(), |k| (x[k] as i64) < c),
                Cmp::Le => pack(rows, nulls, x.len(), |k| (x[k] as i64) <= c),
                Cmp::Eq => pack(rows, nulls, x.len(), |k| (x[k] as i64) == c),
                Cmp::Ge => pack(rows, nulls, x.len(), |k| (x[k] as i64) >= c),
                Cmp::Gt => pack(rows, nulls, x.len(), |k| (x[k] as i64) > c),
                Cmp::Ne => pack(rows, nulls, x.len(), |k| (x[k] as i64) != c),
            })
        }};
    }
    match (&v.values, operand) {
        (Values::Int8(x), Operand::Int(c)) => ints!(x, *c),
        (Values::Int16(x), Operand::Int(c)) => ints!(x, *c),
        (Values::Int32(x), Operand::Int(c)) => ints!(x, *c),
        (Values::Int64(x), Operand::Int(c)) => ints!(x, *c),
        (Values::Float64(x), Operand::Float(c)) => {
            let t = float_test(cmp, *c);
            Some(pack(rows, nulls, x.len(), |k| t(x[k])))
        }
        (Values::Float32(x), Operand::Float(c)) => {
            let t = float_test(cmp, *c);
            Some(pack(rows, nulls, x.len(), |k| t(x[k] as f64)))
        }
        (Values::Bytes(b), Operand::Bytes(c)) => {
            let b = b.as_ref();
            Some(pack(rows, nulls, b.len(), |k| holds(cmp, b.get(k).cmp(c.as_slice()))))
        }
        _ => None,
    }
}

fn null_selection(v: &Vector, want_null: bool) -> Selection {
    let mut s = Selection::none(v.rows);
    for r in 0..v.rows {
        if v.is_null(r) == want_null {
            s.set(r);
        }
    }
    s
}

/// Evaluates `p` over every row of `v`; `None` if the vector's values are not of the form
/// the operand needs (the caller then reports corruption or falls back).
pub fn select(v: &Vector, p: &Predicate) -> Option<Selection> {
    match p {
        Predicate::Compare(cmp, o) => compare_one(v, *cmp, o),
        Predicate::Any(cmp, os) => {
            let mut s = Selection::none(v.rows);
            for o in os {
                s.or(&compare_one(v, *cmp, o)?);
            }
            Some(s)
        }
        Predicate::AllOf(cmp, os) => {
            let mut s = null_selection(v, false);
            for o in os {
                s.and(&compare_one(v, *cmp, o)?);
            }
            Some(s)
        }
        Predicate::IsNull => Some(null_selection(v, true)),
        Predicate::IsNotNull => Some(null_selection(v, false)),
        Predicate::All => Some(Selection::all(v.rows)),
        Predicate::Nothing => Some(Selection::none(v.rows)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vector::ByteStrings;
    use proptest::prelude::*;

    /// The reference: row by row, from the definitions above, on values widened to one form.
    #[derive(Debug, Clone)]
    enum Cell {
        Null,
        Int(i64),
        Float(f64),
        Bytes(Vec<u8>),
    }

    fn reference_holds(cmp: Cmp, cell: &Cell, o: &Operand) -> bool {
        match (cell, o) {
            (Cell::Null, _) => false,
            (Cell::Int(a), Operand::Int(b)) => holds(cmp, a.cmp(b)),
            (Cell::Float(a), Operand::Float(b)) => holds(cmp, float_order(*a, *b)),
            (Cell::Bytes(a), Operand::Bytes(b)) => holds(cmp, a.as_slice().cmp(b.as_slice())),
            _ => unreachable!(),
        }
    }

    fn reference(cells: &[Cell], p: &Predicate) -> Vec<bool> {
        cells
            .iter()
            .map(|c| match p {
                Predicate::Compare(cmp, o) => reference_holds(*cmp, c, o),
                Predicate::Any(cmp, os) => os.iter().any(|o| reference_holds(*cmp, c, o)),
                Predicate::AllOf(cmp, os) => !matches!(c, Cell::Null) && os.iter().all(|o| reference_holds(*cmp, c, o)),
                Predicate::IsNull => matches!(c, Cell::Null),
                Predicate::IsNotNull => !matches!(c, Cell::Null),
                Predicate::All => true,
                Predicate::Nothing => false,
            })
            .collect()
    }

    /// A vector of `cells` (all of one form) in the codec's layout, as `kind`.
    fn vector(cells: &[Cell], kind: u8) -> Vector {
        let rows = cells.len();
        let any_null = cells.iter().any(|c| matches!(c, Cell::Null));
        let mut nulls = vec![0u8; rows.div_ceil(8)];
        for (r, c) in cells.iter().enumerate() {
            if matches!(c, Cell::Null) {
                nulls[r / 8] |= 1 << (r % 8);
            }
        }
        let ints = || cells.iter().filter_map(|c| if let Cell::Int(v) = c { Some(*v) } else { None });
        let floats = || cells.iter().filter_map(|c| if let Cell::Float(v) = c { Some(*v) } else { None });
        let values = match kind {
            0 => Values::Int16(ints().map(|v| v as i16).collect()),
            1 => Values::Int32(ints().map(|v| v as i32).collect()),
            2 => Values::Int64(ints().collect()),
            3 => Values::Float32(floats().map(|v| v as f32).collect()),
            4 => Values::Float64(floats().collect()),
            _ => Values::Bytes(cells.iter().filter_map(|c| if let Cell::Bytes(b) = c { Some(b.clone()) } else { None }).collect::<ByteStrings>()),
        };
        Vector { rows, nulls: any_null.then_some(nulls), values }
    }

    fn cmp_strategy() -> impl Strategy<Value = Cmp> {
        prop_oneof![Just(Cmp::Lt), Just(Cmp::Le), Just(Cmp::Eq), Just(Cmp::Ge), Just(Cmp::Gt), Just(Cmp::Ne)]
    }

    /// Values of one kind (0 int2, 1 int4, 2 int8, 3 float4, 4 float8, 5 bytes) with NULLs and
    /// the edge values, and constants drawn from the same pool.
    fn case() -> impl Strategy<Value = (u8, Vec<Cell>, Vec<Operand>)> {
        (0u8..6, 0usize..=MAX_ROWS, any::<u64>()).prop_map(|(kind, rows, seed)| {
            let mut s = seed | 1;
            let mut next = move || {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                s
            };
            let int_pool: Vec<i64> = match kind {
                0 => vec![i16::MIN as i64, -1, 0, 1, 7, i16::MAX as i64],
                1 => vec![i32::MIN as i64, -1, 0, 1, 7, i32::MAX as i64],
                _ => vec![i64::MIN, -1, 0, 1, 7, i64::MAX],
            };
            let float_pool = [f64::NAN, -0.0, 0.0, 1.5, -1.5, f64::INFINITY, f64::NEG_INFINITY, 2.25];
            let byte_pool: [&[u8]; 6] = [b"", b"a", b"ab", b"b", b"\xff", b"host_1"];
            let draw = |n: u64| -> Cell {
                match kind {
                    0..=2 => Cell::Int(int_pool[(n % int_pool.len() as u64) as usize]),
                    3 | 4 => Cell::Float(float_pool[(n % float_pool.len() as u64) as usize]),
                    _ => Cell::Bytes(byte_pool[(n % byte_pool.len() as u64) as usize].to_vec()),
                }
            };
            let null_rate = next() % 4;
            let cells = (0..rows).map(|_| if next() % 8 < null_rate { Cell::Null } else { draw(next()) }).collect();
            // integer constants also beyond the column's width (int2 against int8)
            let wide = [i64::MIN, i64::MAX, 1 << 40, -(1 << 20)];
            let operands = (0..4)
                .map(|_| match draw(next()) {
                    Cell::Int(_) if next() % 3 == 0 => Operand::Int(wide[(next() % 4) as usize]),
                    Cell::Int(v) => Operand::Int(v),
                    Cell::Float(v) => Operand::Float(v),
                    Cell::Bytes(b) => Operand::Bytes(b),
                    Cell::Null => unreachable!(),
                })
                .collect();
            (kind, cells, operands)
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]
        #[test]
        fn selections_equal_the_row_by_row_reference((kind, cells, operands) in case(), cmp in cmp_strategy()) {
            let v = vector(&cells, kind);
            let preds = [
                Predicate::Compare(cmp, operands[0].clone()),
                Predicate::Any(cmp, operands[..3].to_vec()),
                Predicate::AllOf(cmp, operands[1..].to_vec()),
                Predicate::IsNull,
                Predicate::IsNotNull,
                Predicate::All,
                Predicate::Nothing,
            ];
            for p in &preds {
                let got = select(&v, p).unwrap();
                let want = reference(&cells, p);
                prop_assert_eq!(got.rows(), cells.len());
                for (r, w) in want.iter().enumerate() {
                    prop_assert_eq!(got.contains(r), *w, "row {} of {:?} under {:?}", r, cells[r], p);
                }
                prop_assert_eq!(got.count(), want.iter().filter(|&&w| w).count());
                prop_assert_eq!(got.iter().collect::<Vec<_>>(), (0..cells.len()).filter(|&r| want[r]).collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn edges() {
        let v = vector(&[Cell::Float(f64::NAN), Cell::Float(-0.0), Cell::Null, Cell::Float(0.0)], 4);
        let sel = |p: Predicate| select(&v, &p).unwrap().iter().collect::<Vec<_>>();
        assert_eq!(sel(Predicate::Compare(Cmp::Eq, Operand::Float(0.0))), vec![1, 3]);
        assert_eq!(sel(Predicate::Compare(Cmp::Eq, Operand::Float(f64::NAN))), vec![0]);
        assert_eq!(sel(Predicate::Compare(Cmp::Gt, Operand::Float(f64::INFINITY))), vec![0]);
        assert_eq!(sel(Predicate::Compare(Cmp::Ne, Operand::Float(f64::NAN))), vec![1, 3]);
        assert_eq!(sel(Predicate::All), vec![0, 1, 2, 3]);
        assert!(Selection::none(0).is_empty());
        assert_eq!(Selection::all(MAX_ROWS).count(), MAX_ROWS);
        assert_eq!(Selection::all(65).iter().last(), Some(64));
        // a kind the operand does not fit is refused, not guessed
        assert_eq!(select(&v, &Predicate::Compare(Cmp::Eq, Operand::Int(0))), None);
    }
}

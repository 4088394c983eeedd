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

use crate::decode::{Form, Unpacked};
use crate::float_int::Scaled;
use crate::stripe::StoredZone;
use crate::vector::{Kind, Values, Vector, MAX_ROWS};
use crate::zonemap::{bytes_may_satisfy, Cmp};
use crate::ColumnContext;

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
        Selection {
            words: [0; WORDS],
            rows,
        }
    }

    pub fn all(rows: usize) -> Selection {
        Selection::of_range(rows, 0..rows)
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

    pub fn unset(&mut self, r: usize) {
        self.words[r / 64] &= !(1 << (r % 64));
    }

    pub fn count(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    pub fn and(&mut self, o: &Selection) {
        self.words
            .iter_mut()
            .zip(&o.words)
            .for_each(|(a, b)| *a &= b);
    }

    pub fn or(&mut self, o: &Selection) {
        self.words
            .iter_mut()
            .zip(&o.words)
            .for_each(|(a, b)| *a |= b);
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

    /// The selected rows when they are one range (all rows included), `None` otherwise or
    /// when none is selected.
    pub fn single_range(&self) -> Option<std::ops::Range<usize>> {
        let first = self.next_from(0)?;
        let end = first + self.count();
        // as many rows from the first as are selected: one range exactly when those are them
        (end <= self.rows && *self == Selection::of_range(self.rows, first..end))
            .then_some(first..end)
    }

    /// The rows `range` of a vector of `rows` rows.
    pub fn of_range(rows: usize, range: std::ops::Range<usize>) -> Selection {
        let mut s = Selection::none(rows);
        for (i, w) in s.words.iter_mut().enumerate() {
            let (lo, hi) = (
                range.start.clamp(i * 64, i * 64 + 64) - i * 64,
                range.end.clamp(i * 64, i * 64 + 64) - i * 64,
            );
            if hi > lo {
                *w = (u64::MAX >> (64 - (hi - lo))) << lo;
            }
        }
        s
    }

    /// The selected rows, ascending.
    pub fn iter(&self) -> SelectedRows<'_> {
        SelectedRows {
            words: &self.words,
            word: 0,
            bits: self.words[0],
        }
    }
}

/// The rows of a [`Selection`], a word at a time (the lowest set bit, then cleared).
pub struct SelectedRows<'a> {
    words: &'a [u64; WORDS],
    word: usize,
    bits: u64,
}

impl Iterator for SelectedRows<'_> {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        while self.bits == 0 {
            self.word += 1;
            if self.word == WORDS {
                return None;
            }
            self.bits = self.words[self.word];
        }
        let r = self.word * 64 + self.bits.trailing_zeros() as usize;
        self.bits &= self.bits - 1;
        Some(r)
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
    /// `value = ANY (operands)` with many operands, as a set each value is looked up in
    /// (a binary search, instead of a pass over the values per operand). Made by
    /// [`Predicate::any`].
    InSet(OperandSet),
    IsNull,
    IsNotNull,
    /// Every row, NULL ones included (`x op ALL ('{}')`).
    All,
    /// No row (a comparison with NULL, `ANY ('{}')`, `ALL` with a NULL element).
    Nothing,
}

/// `= ANY` over at least this many operands is a set lookup ([`Predicate::InSet`]).
pub const SET_MIN_OPERANDS: usize = 16;

impl Predicate {
    /// `value <cmp> ANY (operands)` (non-empty; no NULLs): [`Predicate::InSet`] for `=` over
    /// [`SET_MIN_OPERANDS`] or more operands of one form, [`Predicate::Any`] otherwise.
    pub fn any(cmp: Cmp, operands: Vec<Operand>) -> Predicate {
        if cmp == Cmp::Eq && operands.len() >= SET_MIN_OPERANDS {
            if let Some(set) = OperandSet::of(&operands) {
                return Predicate::InSet(set);
            }
        }
        Predicate::Any(cmp, operands)
    }
}

/// The operands of `value = ANY (...)`, sorted, each once, in the order the comparisons
/// use: integers; floats in PostgreSQL's order (-0.0 and 0.0 equal, NaN once, above all);
/// byte strings bytewise.
#[derive(Debug, Clone, PartialEq)]
pub enum OperandSet {
    Ints(Vec<i64>),
    /// `integral`: the floats that are integers within the i64 range, as integers: what a
    /// vector of integer-valued floats unpacked as integers is looked up in (as
    /// `IntTest::of_float` restates `=`).
    Floats {
        floats: Vec<f64>,
        integral: Vec<i64>,
    },
    Bytes(Vec<Vec<u8>>),
}

impl OperandSet {
    /// The set of `operands`, if they are all of one form.
    pub fn of(operands: &[Operand]) -> Option<OperandSet> {
        let set = match operands.first()? {
            Operand::Int(_) => {
                let mut v: Vec<i64> = operands
                    .iter()
                    .map(|o| {
                        if let Operand::Int(x) = o {
                            Some(*x)
                        } else {
                            None
                        }
                    })
                    .collect::<Option<_>>()?;
                v.sort_unstable();
                v.dedup();
                OperandSet::Ints(v)
            }
            Operand::Float(_) => {
                let mut v: Vec<f64> = operands
                    .iter()
                    .map(|o| {
                        if let Operand::Float(x) = o {
                            Some(*x)
                        } else {
                            None
                        }
                    })
                    .collect::<Option<_>>()?;
                v.sort_unstable_by(|a, b| float_order(*a, *b));
                v.dedup_by(|a, b| float_order(*a, *b) == Ordering::Equal);
                let mut integral: Vec<i64> = v
                    .iter()
                    .filter_map(|&c| match IntTest::of_float(Cmp::Eq, c) {
                        IntTest::Compare(_, i) => Some(i),
                        IntTest::Always(_) => None,
                    })
                    .collect();
                integral.sort_unstable();
                integral.dedup();
                OperandSet::Floats {
                    floats: v,
                    integral,
                }
            }
            Operand::Bytes(_) => {
                let mut v: Vec<Vec<u8>> = operands
                    .iter()
                    .map(|o| {
                        if let Operand::Bytes(x) = o {
                            Some(x.clone())
                        } else {
                            None
                        }
                    })
                    .collect::<Option<_>>()?;
                v.sort_unstable();
                v.dedup();
                OperandSet::Bytes(v)
            }
        };
        Some(set)
    }

    /// Whether some element may equal a value within `zone` (`true` where the zone's form
    /// says nothing about the set's), as testing each element against the zone would
    /// conclude (`zonemap::bytes_may_satisfy` for byte strings): the first element at or
    /// above the zone's minimum decides, since the upper bound's test only fails more for
    /// greater elements.
    pub fn may_equal_within(&self, zone: &StoredZone) -> bool {
        match (self, zone) {
            (_, StoredZone::Empty) => false,
            (OperandSet::Ints(s), StoredZone::Int { min, max }) => s
                .get(s.partition_point(|e| e < min))
                .is_some_and(|e| e <= max),
            (OperandSet::Floats { floats, .. }, StoredZone::Float { min, max }) => floats
                .get(floats.partition_point(|e| float_order(*e, *min).is_lt()))
                .is_some_and(|e| float_order(*e, *max).is_le()),
            (
                OperandSet::Bytes(s),
                StoredZone::Bytes {
                    min,
                    max,
                    max_truncated,
                },
            ) => s
                .get(s.partition_point(|e| e[..] < min[..]))
                .is_some_and(|e| bytes_may_satisfy(min, max, *max_truncated, Cmp::Eq, e)),
            _ => true,
        }
    }

    /// Whether every value within `zone` equals some element (`false` when not proven): the
    /// zone holds one number, and the set has it.
    pub fn covers_zone(&self, zone: &StoredZone) -> bool {
        match (self, zone) {
            (OperandSet::Ints(s), StoredZone::Int { min, max }) => {
                min == max && s.binary_search(min).is_ok()
            }
            (OperandSet::Floats { floats, .. }, StoredZone::Float { min, max }) => {
                float_order(*min, *max).is_eq()
                    && floats.binary_search_by(|e| float_order(*e, *min)).is_ok()
            }
            _ => false,
        }
    }

    /// The set's operands, in its order.
    pub fn operands(&self) -> Vec<Operand> {
        match self {
            OperandSet::Ints(v) => v.iter().map(|&x| Operand::Int(x)).collect(),
            OperandSet::Floats { floats, .. } => {
                floats.iter().map(|&x| Operand::Float(x)).collect()
            }
            OperandSet::Bytes(v) => v.iter().map(|x| Operand::Bytes(x.clone())).collect(),
        }
    }
}

fn in_ints(set: &[i64], v: i64) -> u8 {
    set.binary_search(&v).is_ok() as u8
}

fn in_floats(set: &[f64], v: f64) -> u8 {
    set.binary_search_by(|e| float_order(*e, v)).is_ok() as u8
}

/// Whether each value is in `set`; `None` if the values are not of the set's form.
fn member_lanes(lanes: Lanes<'_>, set: &OperandSet) -> Option<Vec<u8>> {
    Some(match (lanes, set) {
        (Lanes::Values(Values::Int8(x)), OperandSet::Ints(s)) => {
            x.iter().map(|&v| in_ints(s, v as i64)).collect()
        }
        (Lanes::Values(Values::Int16(x)), OperandSet::Ints(s)) => {
            x.iter().map(|&v| in_ints(s, v as i64)).collect()
        }
        (Lanes::Values(Values::Int32(x)), OperandSet::Ints(s)) => {
            x.iter().map(|&v| in_ints(s, v as i64)).collect()
        }
        (Lanes::Values(Values::Int64(x)), OperandSet::Ints(s)) => {
            x.iter().map(|&v| in_ints(s, v)).collect()
        }
        (Lanes::Values(Values::Float32(x)), OperandSet::Floats { floats, .. }) => {
            x.iter().map(|&v| in_floats(floats, v as f64)).collect()
        }
        (Lanes::Values(Values::Float64(x)), OperandSet::Floats { floats, .. }) => {
            x.iter().map(|&v| in_floats(floats, v)).collect()
        }
        (Lanes::Values(Values::Bytes(b)), OperandSet::Bytes(s)) => {
            let b = b.as_ref();
            (0..b.len())
                .map(|k| s.binary_search_by(|e| e.as_slice().cmp(b.get(k))).is_ok() as u8)
                .collect()
        }
        (Lanes::Integers { kind, ints }, OperandSet::Ints(s)) if kind.is_integer() => {
            ints.iter().map(|&v| in_ints(s, v)).collect()
        }
        (Lanes::Integers { kind, ints }, OperandSet::Floats { integral, .. })
            if kind.is_float() =>
        {
            ints.iter().map(|&v| in_ints(integral, v)).collect()
        }
        (Lanes::Codes { .. }, _) => {
            unreachable!("dictionary codes are looked up per entry (with_codes)")
        }
        (Lanes::Scaled(s), _) => return member_lanes(Lanes::Values(s.values()), set),
        _ => return None,
    })
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

/// The non-null values a predicate is tested on, in one of the forms they decode to (see
/// [`crate::Form`]).
#[derive(Clone, Copy)]
enum Lanes<'a> {
    Values(&'a Values),
    Integers {
        kind: Kind,
        ints: &'a [i64],
    },
    /// `shared`: the entries are a stripe column's shared dictionary.
    Codes {
        entries: &'a Values,
        codes: &'a [i64],
        shared: bool,
    },
    Scaled(&'a Scaled),
}

/// One predicate's results on the entries of a shared dictionary, kept across the vectors
/// that use it, so each entry is tested once per stripe column instead of once per vector.
/// The key names the dictionary: the caller must give another key whenever it gives
/// another dictionary (the extension uses the serial number of the stripe load).
#[derive(Debug, Clone, Default)]
pub struct EntryCache {
    key: Option<u64>,
    hits: Vec<u8>,
}

/// `cmp` against `c` on each value, as one loop per operator so that the comparison is not
/// re-decided per value and the loop vectorises (inlined, so that the AVX2 build of a caller
/// compiles it for AVX2 too).
#[inline(always)]
fn compare_loop<T: Copy, C: Copy + PartialOrd>(
    x: &[T],
    cmp: Cmp,
    c: C,
    widen: impl Fn(T) -> C,
) -> Vec<u8> {
    let w = &widen;
    match cmp {
        Cmp::Lt => x.iter().map(|&v| (w(v) < c) as u8).collect(),
        Cmp::Le => x.iter().map(|&v| (w(v) <= c) as u8).collect(),
        Cmp::Eq => x.iter().map(|&v| (w(v) == c) as u8).collect(),
        Cmp::Ge => x.iter().map(|&v| (w(v) >= c) as u8).collect(),
        Cmp::Gt => x.iter().map(|&v| (w(v) > c) as u8).collect(),
        Cmp::Ne => x.iter().map(|&v| (w(v) != c) as u8).collect(),
    }
}

/// `cmp` against `c` on each integer. With AVX2 (detected at run time) the same loops run
/// four 64-bit or eight 32-bit lanes at a time.
fn compare_ints(ints: &[i64], cmp: Cmp, c: i64) -> Vec<u8> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is available (checked just above)
        return unsafe { compare_ints_avx2(ints, cmp, c) };
    }
    compare_ints_portable(ints, cmp, c)
}

/// [`compare_ints`] for the baseline target: its twin, tested against it.
#[inline(always)]
fn compare_ints_portable(ints: &[i64], cmp: Cmp, c: i64) -> Vec<u8> {
    if crate::all_within_bits_portable(ints, 31) {
        return match i32::try_from(c) {
            // values that fit 32 bits compare as such: twice the lanes per register, and a
            // compare instruction every x86_64 has
            Ok(c) => compare_loop(ints, cmp, c, |v| v as i32),
            // a constant outside their range answers every value
            Err(_) => vec![holds(cmp, 0i64.cmp(&c)) as u8; ints.len()],
        };
    }
    compare_loop(ints, cmp, c, |v| v)
}

/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn compare_ints_avx2(ints: &[i64], cmp: Cmp, c: i64) -> Vec<u8> {
    compare_ints_portable(ints, cmp, c)
}

/// `cmp` against `c` on each integer, as a selection of `ints.len()` rows (no NULLs): the
/// tests of [`compare_ints`] written straight into the selection's words, without a byte per
/// value between. With AVX-512 (detected at run time) one instruction tests eight integers
/// and gives their eight bits; with AVX2 the portable loops are built for it.
fn compare_ints_selection(ints: &[i64], cmp: Cmp, c: i64) -> Selection {
    let mut s = Selection::none(ints.len());
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: AVX-512 F is available (checked just above)
        unsafe { compare_words_avx512(ints, cmp, c, &mut s.words) };
        return s;
    } else if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is available (checked just above)
        unsafe { compare_words_avx2(ints, cmp, c, &mut s.words) };
        return s;
    }
    compare_words_portable(ints, cmp, c, &mut s.words);
    s
}

/// [`compare_ints_selection`]'s words for the baseline target: its twin, tested against it.
/// Writes a word for each 64 integers begun.
#[inline(always)]
fn compare_words_portable(ints: &[i64], cmp: Cmp, c: i64, words: &mut [u64]) {
    #[inline(always)]
    fn tests(chunk: &[i64], bytes: &mut [u8; 64], holds: impl Fn(i64) -> bool) {
        bytes
            .iter_mut()
            .zip(chunk)
            .for_each(|(b, &v)| *b = holds(v) as u8);
    }
    for (w, chunk) in words.iter_mut().zip(ints.chunks(64)) {
        let mut bytes = [0u8; 64];
        match cmp {
            Cmp::Lt => tests(chunk, &mut bytes, |v| v < c),
            Cmp::Le => tests(chunk, &mut bytes, |v| v <= c),
            Cmp::Eq => tests(chunk, &mut bytes, |v| v == c),
            Cmp::Ge => tests(chunk, &mut bytes, |v| v >= c),
            Cmp::Gt => tests(chunk, &mut bytes, |v| v > c),
            Cmp::Ne => tests(chunk, &mut bytes, |v| v != c),
        }
        *w = bytes.chunks_exact(8).enumerate().fold(0, |acc, (k, b)| {
            acc | eight_bits(b.try_into().unwrap()) << (8 * k)
        });
    }
}

/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn compare_words_avx2(ints: &[i64], cmp: Cmp, c: i64, words: &mut [u64]) {
    compare_words_portable(ints, cmp, c, words)
}

/// # Safety
/// The CPU must support AVX-512 F. Writes a word for each 64 integers begun.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn compare_words_avx512(ints: &[i64], cmp: Cmp, c: i64, words: &mut [u64]) {
    use std::arch::x86_64::*;
    #[target_feature(enable = "avx512f")]
    fn lanes<const OP: i32>(ints: &[i64], c: i64, words: &mut [u64]) {
        let cv = _mm512_set1_epi64(c);
        let holds = |v: i64| match OP {
            _MM_CMPINT_LT => v < c,
            _MM_CMPINT_LE => v <= c,
            _MM_CMPINT_EQ => v == c,
            _MM_CMPINT_NE => v != c,
            _MM_CMPINT_NLT => v >= c,
            _ => v > c,
        };
        // each word built in a register (not or-ed into memory eight times: a chain of
        // store-to-load forwards)
        for (w, chunk) in words.iter_mut().zip(ints.chunks(64)) {
            let eights = chunk.chunks_exact(8);
            let tail = eights.remainder();
            let mut m = 0u64;
            for (k, e) in eights.enumerate() {
                // SAFETY: `e` is eight i64s, 64 bytes readable (an unaligned load)
                let v = unsafe { _mm512_loadu_si512(e.as_ptr().cast()) };
                m |= (_mm512_cmp_epi64_mask::<OP>(v, cv) as u64) << (8 * k);
            }
            let done = chunk.len() - tail.len();
            for (j, &v) in tail.iter().enumerate() {
                m |= (holds(v) as u64) << (done + j);
            }
            *w = m;
        }
    }
    match cmp {
        Cmp::Lt => lanes::<_MM_CMPINT_LT>(ints, c, words),
        Cmp::Le => lanes::<_MM_CMPINT_LE>(ints, c, words),
        Cmp::Eq => lanes::<_MM_CMPINT_EQ>(ints, c, words),
        Cmp::Ne => lanes::<_MM_CMPINT_NE>(ints, c, words),
        Cmp::Ge => lanes::<_MM_CMPINT_NLT>(ints, c, words),
        Cmp::Gt => lanes::<_MM_CMPINT_NLE>(ints, c, words),
    }
}

/// One comparison of integers (or of a decimal vector's integers, its exceptions tested as
/// floats) in a vector without NULLs, as a selection at once; `None` for other lanes and
/// operands ([`test_lanes`] decides those).
fn compare_selection(lanes: Lanes<'_>, cmp: Cmp, operand: &Operand) -> Option<Selection> {
    Some(match (lanes, operand) {
        (Lanes::Integers { kind, ints }, Operand::Int(c)) if kind.is_integer() => {
            IntTest::Compare(cmp, *c).select(ints)
        }
        (Lanes::Integers { kind, ints }, Operand::Float(c)) if kind.is_float() => {
            IntTest::of_float(cmp, *c).select(ints)
        }
        (Lanes::Scaled(s), Operand::Float(c)) => {
            let mut sel = ScaledTest::of(s, cmp, *c).select(&s.ints);
            for &(k, bits) in &s.exceptions {
                if holds(cmp, float_order(s.exception_value(bits), *c)) {
                    sel.set(k as usize);
                } else {
                    sel.unset(k as usize);
                }
            }
            sel
        }
        _ => return None,
    })
}

/// Floats in PostgreSQL's order as plain IEEE tests: NaN is handled per case, so the loops
/// stay branch-free.
fn float_loop<T: Copy>(x: &[T], cmp: Cmp, c: f64, widen: impl Fn(T) -> f64) -> Vec<u8> {
    if c.is_nan() {
        // NaN equals NaN and is above every other value
        return match cmp {
            Cmp::Lt | Cmp::Ne => x.iter().map(|&v| (!widen(v).is_nan()) as u8).collect(),
            Cmp::Le => vec![1; x.len()],
            Cmp::Eq | Cmp::Ge => x.iter().map(|&v| (widen(v).is_nan()) as u8).collect(),
            Cmp::Gt => vec![0; x.len()],
        };
    }
    let w = &widen;
    match cmp {
        Cmp::Ge => x
            .iter()
            .map(|&v| (w(v) >= c) as u8 | w(v).is_nan() as u8)
            .collect(),
        Cmp::Gt => x
            .iter()
            .map(|&v| (w(v) > c) as u8 | w(v).is_nan() as u8)
            .collect(),
        // IEEE's answers are PostgreSQL's here: a NaN value is not below, not equal
        _ => compare_loop(x, cmp, c, widen),
    }
}

/// A comparison of integer values with a float constant, restated on the integers: what a
/// bitpack vector of integer-valued floats is tested as, without converting them.
#[derive(Debug, Clone, Copy, PartialEq)]
enum IntTest {
    Compare(Cmp, i64),
    /// The same answer for every value.
    Always(bool),
}

impl IntTest {
    /// The test on each integer, as a selection of `ints.len()` rows.
    fn select(self, ints: &[i64]) -> Selection {
        match self {
            IntTest::Always(true) => Selection::all(ints.len()),
            IntTest::Always(false) => Selection::none(ints.len()),
            IntTest::Compare(cmp, c) => compare_ints_selection(ints, cmp, c),
        }
    }

    fn not(self) -> IntTest {
        match self {
            IntTest::Always(b) => IntTest::Always(!b),
            IntTest::Compare(cmp, c) => IntTest::Compare(
                match cmp {
                    Cmp::Lt => Cmp::Ge,
                    Cmp::Le => Cmp::Gt,
                    Cmp::Eq => Cmp::Ne,
                    Cmp::Ge => Cmp::Lt,
                    Cmp::Gt => Cmp::Le,
                    Cmp::Ne => Cmp::Eq,
                },
                c,
            ),
        }
    }

    /// `v cmp c` for every integer v, in PostgreSQL's float order (v as a float is exact:
    /// the integers of a float vector are checked to be). NaN is above every value; for the
    /// rest, with F = floor(c) and C = ceil(c): v <= c iff v <= F, v >= c iff v >= C, and
    /// v = c iff c is an integer and v = c. Bounds past the i64 range answer every value.
    fn of_float(cmp: Cmp, c: f64) -> IntTest {
        const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;
        if c.is_nan() {
            return IntTest::Always(matches!(cmp, Cmp::Lt | Cmp::Le | Cmp::Ne));
        }
        let at_most_floor = || {
            let f = c.floor();
            if f >= TWO_POW_63 {
                IntTest::Always(true)
            } else if f < -TWO_POW_63 {
                IntTest::Always(false)
            } else {
                IntTest::Compare(Cmp::Le, f as i64)
            }
        };
        let at_least_ceil = || {
            let f = c.ceil();
            if f <= -TWO_POW_63 {
                IntTest::Always(true)
            } else if f >= TWO_POW_63 {
                IntTest::Always(false)
            } else {
                IntTest::Compare(Cmp::Ge, f as i64)
            }
        };
        let equal = || {
            if c.floor() == c && (-TWO_POW_63..TWO_POW_63).contains(&c) {
                IntTest::Compare(Cmp::Eq, c as i64)
            } else {
                IntTest::Always(false)
            }
        };
        match cmp {
            Cmp::Le => at_most_floor(),
            Cmp::Gt => at_most_floor().not(),
            Cmp::Ge => at_least_ceil(),
            Cmp::Lt => at_least_ceil().not(),
            Cmp::Eq => equal(),
            Cmp::Ne => equal().not(),
        }
    }
}

/// A comparison restated on a [`Scaled`] vector's integers ([`ScaledTest::of`]).
#[derive(Debug, Clone, Copy, PartialEq)]
enum ScaledTest {
    Int(IntTest),
    /// `above < d <= at_most`, or (`negate`) its opposite.
    Between {
        above: i64,
        at_most: i64,
        negate: bool,
    },
}

impl ScaledTest {
    /// `v cmp c` for the values of `s`'s integers (not its exceptions), in PostgreSQL's
    /// float order. Those values are finite and never -0.0, so only a NaN `c` needs
    /// PostgreSQL's order (above them all); the rest is IEEE's, and each test is one on the
    /// integers up to [`Scaled::last_passing`]: v <= c iff d <= L, v < c iff d <= L' (L' the
    /// strict bound), v = c iff L' < d <= L.
    fn of(s: &Scaled, cmp: Cmp, c: f64) -> ScaledTest {
        if c.is_nan() {
            return ScaledTest::Int(IntTest::Always(matches!(cmp, Cmp::Lt | Cmp::Le | Cmp::Ne)));
        }
        let up_to = |bound: Option<i64>| match bound {
            None => IntTest::Always(false),
            Some(i64::MAX) => IntTest::Always(true),
            Some(t) => IntTest::Compare(Cmp::Le, t),
        };
        let at_most = || s.last_passing(c, false);
        let below = || s.last_passing(c, true);
        ScaledTest::Int(match cmp {
            Cmp::Le => up_to(at_most()),
            Cmp::Gt => up_to(at_most()).not(),
            Cmp::Lt => up_to(below()),
            Cmp::Ge => up_to(below()).not(),
            Cmp::Eq | Cmp::Ne => {
                let negate = cmp == Cmp::Ne;
                let equal = match (below(), at_most()) {
                    (Some(b), Some(a)) if b < a => {
                        return ScaledTest::Between {
                            above: b,
                            at_most: a,
                            negate,
                        }
                    }
                    (None, a) => up_to(a),
                    // no integer between the bounds
                    _ => IntTest::Always(false),
                };
                if negate {
                    equal.not()
                } else {
                    equal
                }
            }
        })
    }

    /// The test on each integer, as a selection of `ints.len()` rows.
    fn select(self, ints: &[i64]) -> Selection {
        match self {
            ScaledTest::Int(t) => t.select(ints),
            ScaledTest::Between {
                above,
                at_most,
                negate: false,
            } => {
                let mut sel = compare_ints_selection(ints, Cmp::Gt, above);
                sel.and(&compare_ints_selection(ints, Cmp::Le, at_most));
                sel
            }
            ScaledTest::Between {
                above,
                at_most,
                negate: true,
            } => {
                let mut sel = compare_ints_selection(ints, Cmp::Le, above);
                sel.or(&compare_ints_selection(ints, Cmp::Gt, at_most));
                sel
            }
        }
    }

    /// The test on each integer, as a byte (1 or 0) each.
    fn apply(self, ints: &[i64]) -> Vec<u8> {
        match self {
            ScaledTest::Int(IntTest::Always(b)) => vec![b as u8; ints.len()],
            ScaledTest::Int(IntTest::Compare(cmp, t)) => compare_ints(ints, cmp, t),
            ScaledTest::Between {
                above,
                at_most,
                negate,
            } => {
                let mut tests = compare_ints(ints, Cmp::Gt, above);
                let upper = compare_ints(ints, Cmp::Le, at_most);
                let flip = negate as u8;
                tests
                    .iter_mut()
                    .zip(&upper)
                    .for_each(|(t, u)| *t = (*t & u) ^ flip);
                tests
            }
        }
    }
}

/// Whether each value satisfies `cmp operand`; `None` if the values are not of the form the
/// operand needs.
fn test_values(values: &Values, cmp: Cmp, operand: &Operand) -> Option<Vec<u8>> {
    Some(match (values, operand) {
        (Values::Int8(x), Operand::Int(c)) => compare_loop(x, cmp, *c, |v| v as i64),
        (Values::Int16(x), Operand::Int(c)) => compare_loop(x, cmp, *c, |v| v as i64),
        (Values::Int32(x), Operand::Int(c)) => compare_loop(x, cmp, *c, |v| v as i64),
        (Values::Int64(x), Operand::Int(c)) => compare_loop(x, cmp, *c, |v| v),
        (Values::Float32(x), Operand::Float(c)) => float_loop(x, cmp, *c, |v| v as f64),
        (Values::Float64(x), Operand::Float(c)) => float_loop(x, cmp, *c, |v| v),
        (Values::Bytes(b), Operand::Bytes(c)) => {
            let b = b.as_ref();
            (0..b.len())
                .map(|k| holds(cmp, b.get(k).cmp(c.as_slice())) as u8)
                .collect()
        }
        _ => return None,
    })
}

/// One operand over integers or values (dictionary codes are tested per entry by [`test_all`]).
fn test_lanes(lanes: Lanes<'_>, cmp: Cmp, operand: &Operand) -> Option<Vec<u8>> {
    match lanes {
        Lanes::Values(v) => test_values(v, cmp, operand),
        Lanes::Integers { kind, ints } => {
            let test = match (kind.is_float(), operand) {
                (false, Operand::Int(c)) if kind.is_integer() => IntTest::Compare(cmp, *c),
                (true, Operand::Float(c)) => IntTest::of_float(cmp, *c),
                _ => return None,
            };
            Some(match test {
                IntTest::Always(b) => vec![b as u8; ints.len()],
                IntTest::Compare(cmp, c) => compare_ints(ints, cmp, c),
            })
        }
        Lanes::Scaled(s) => {
            let Operand::Float(c) = *operand else {
                return None;
            };
            let mut tests = ScaledTest::of(s, cmp, c).apply(&s.ints);
            // the exceptions' values as they are, in PostgreSQL's order
            for &(k, bits) in &s.exceptions {
                tests[k as usize] = holds(cmp, float_order(s.exception_value(bits), c)) as u8;
            }
            Some(tests)
        }
        Lanes::Codes { .. } => {
            unreachable!("test_all tests a dictionary's entries, then looks its codes up")
        }
    }
}

/// Whether each non-null value satisfies `cmp` against any (`any`) or all of `operands`
/// (non-empty). Dictionary codes are tested once per entry, whatever the number of operands;
/// a shared dictionary's entries once per `cache` key.
fn test_all(
    lanes: Lanes<'_>,
    cmp: Cmp,
    operands: &[Operand],
    any: bool,
    cache: Option<(&mut EntryCache, u64)>,
) -> Option<Vec<u8>> {
    with_codes(lanes, cache, |l| test_plain(l, cmp, operands, any))
}

/// `test(lanes)`, except that dictionary codes are tested once per entry (a shared
/// dictionary's entries once per `cache` key) and then looked up.
fn with_codes(
    lanes: Lanes<'_>,
    cache: Option<(&mut EntryCache, u64)>,
    test: impl Fn(Lanes<'_>) -> Option<Vec<u8>>,
) -> Option<Vec<u8>> {
    let Lanes::Codes {
        entries,
        codes,
        shared,
    } = lanes
    else {
        return test(lanes);
    };
    let fresh;
    let hit: &[u8] = match cache {
        Some((cache, key)) if shared => {
            if cache.key != Some(key) {
                cache.key = None;
                cache.hits = test(Lanes::Values(entries))?;
                cache.key = Some(key);
            }
            &cache.hits
        }
        _ => {
            fresh = test(Lanes::Values(entries))?;
            &fresh
        }
    };
    Some(codes.iter().map(|&c| hit[c as usize]).collect())
}

/// [`test_all`] on values or integers (not dictionary codes).
fn test_plain(lanes: Lanes<'_>, cmp: Cmp, operands: &[Operand], any: bool) -> Option<Vec<u8>> {
    let (first, rest) = operands.split_first().expect("at least one operand");
    let mut acc = test_lanes(lanes, cmp, first)?;
    for o in rest {
        let t = test_lanes(lanes, cmp, o)?;
        if any {
            acc.iter_mut().zip(&t).for_each(|(a, b)| *a |= b);
        } else {
            acc.iter_mut().zip(&t).for_each(|(a, b)| *a &= b);
        }
    }
    Some(acc)
}

/// Eight tests (bytes 0 or 1, the first in the lowest byte) as eight bits: the multiply
/// moves byte i's bit to bit 56 + i, and no two partial products meet (8i - 7j = 8i' - 7j'
/// has no other solution with 0 <= i, j < 8), so nothing carries.
#[inline(always)]
fn eight_bits(bytes: [u8; 8]) -> u64 {
    u64::from_le_bytes(bytes).wrapping_mul(0x0102_0408_1020_4080) >> 56
}

/// The selection of `rows` rows whose non-null values' tests are `dense` (1 or 0 each) (in row order; the null
/// rows, where `nulls` has a bit set, are never selected).
fn place(rows: usize, nulls: Option<&[u8]>, dense: &[u8]) -> Selection {
    let mut s = Selection::none(rows);
    match nulls {
        None => {
            debug_assert_eq!(dense.len(), rows);
            let mut chunks = dense.chunks_exact(8);
            for (i, c) in chunks.by_ref().enumerate() {
                s.words[i / 8] |= eight_bits(c.try_into().unwrap()) << (8 * (i % 8));
            }
            let done = rows - chunks.remainder().len();
            for (j, &b) in chunks.remainder().iter().enumerate() {
                s.words[(done + j) / 64] |= (b as u64) << ((done + j) % 64);
            }
        }
        Some(bitmap) => {
            let mut k = 0;
            for r in 0..rows {
                if bitmap[r / 8] >> (r % 8) & 1 == 0 {
                    if dense[k] != 0 {
                        s.set(r);
                    }
                    k += 1;
                }
            }
            debug_assert_eq!(k, dense.len());
        }
    }
    s
}

fn null_selection(rows: usize, nulls: Option<&[u8]>, want_null: bool) -> Selection {
    let Some(bitmap) = nulls else {
        return if want_null {
            Selection::none(rows)
        } else {
            Selection::all(rows)
        };
    };
    let mut s = Selection::none(rows);
    for r in 0..rows {
        if (bitmap[r / 8] >> (r % 8) & 1 == 1) == want_null {
            s.set(r);
        }
    }
    s
}

fn select_lanes(
    rows: usize,
    nulls: Option<&[u8]>,
    lanes: Lanes<'_>,
    p: &Predicate,
    cache: Option<(&mut EntryCache, u64)>,
) -> Option<Selection> {
    let (cmp, operands, any) = match p {
        Predicate::Compare(cmp, o) => (*cmp, std::slice::from_ref(o), true),
        Predicate::Any(cmp, os) => (*cmp, os.as_slice(), true),
        Predicate::AllOf(cmp, os) => (*cmp, os.as_slice(), false),
        Predicate::InSet(set) => {
            return Some(place(
                rows,
                nulls,
                &with_codes(lanes, cache, |l| member_lanes(l, set))?,
            ))
        }
        Predicate::IsNull => return Some(null_selection(rows, nulls, true)),
        Predicate::IsNotNull => return Some(null_selection(rows, nulls, false)),
        Predicate::All => return Some(Selection::all(rows)),
        Predicate::Nothing => return Some(Selection::none(rows)),
    };
    if operands.is_empty() {
        // ANY of none is false, ALL of none true (the caller states these as All/Nothing)
        return Some(if any {
            Selection::none(rows)
        } else {
            null_selection(rows, nulls, false)
        });
    }
    if let (Predicate::Compare(cmp, operand), None) = (p, nulls) {
        if let Some(s) = compare_selection(lanes, *cmp, operand) {
            debug_assert_eq!(s.rows(), rows);
            return Some(s);
        }
    }
    Some(place(
        rows,
        nulls,
        &test_all(lanes, cmp, operands, any, cache)?,
    ))
}

/// Evaluates `p` over every row of `v`; `None` if the vector's values are not of the form
/// the operand needs (the caller then reports corruption or falls back).
pub fn select(v: &Vector, p: &Predicate) -> Option<Selection> {
    select_lanes(
        v.rows,
        v.nulls.as_deref(),
        Lanes::Values(&v.values),
        p,
        None,
    )
}

/// [`select`] on a vector not yet materialized, in the form it was unpacked to: integers
/// (integer-valued floats compared as integers) or dictionary codes (the predicate evaluated
/// once per entry). `ctx` must be the one the vector was unpacked with. The selection is
/// the one [`select`] gives on the materialized vector.
pub fn select_unpacked(u: &Unpacked, ctx: &ColumnContext<'_>, p: &Predicate) -> Option<Selection> {
    select_unpacked_with(u, ctx, p, None)
}

/// [`select_unpacked`], keeping the predicate's results on a shared dictionary's entries in
/// `cache` under `key` (see [`EntryCache`]).
pub fn select_unpacked_cached(
    u: &Unpacked,
    ctx: &ColumnContext<'_>,
    p: &Predicate,
    cache: &mut EntryCache,
    key: u64,
) -> Option<Selection> {
    select_unpacked_with(u, ctx, p, Some((cache, key)))
}

fn select_unpacked_with(
    u: &Unpacked,
    ctx: &ColumnContext<'_>,
    p: &Predicate,
    cache: Option<(&mut EntryCache, u64)>,
) -> Option<Selection> {
    let lanes = match &u.form {
        Form::Values(v) => Lanes::Values(v),
        Form::Integers { kind, ints } => Lanes::Integers { kind: *kind, ints },
        Form::Codes { inline, codes } => Lanes::Codes {
            entries: Unpacked::entries(inline, ctx),
            codes,
            shared: inline.is_none(),
        },
        Form::Scaled(s) => Lanes::Scaled(s),
    };
    select_lanes(u.rows, u.nulls.as_deref(), lanes, p, cache)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vector::ByteStrings;
    use proptest::prelude::*;

    /// `of_range` against setting the rows one by one, and `single_range` against reading
    /// the selected rows: every range of a few sizes of vector, with and without one row more
    /// or less.
    #[test]
    fn single_ranges_are_found_exactly() {
        for rows in [0, 1, 63, 64, 65, 127, 200, 1024] {
            for start in 0..=rows {
                for end in (start..=rows).step_by(if rows > 200 { 37 } else { 1 }) {
                    let mut want = Selection::none(rows);
                    (start..end).for_each(|r| want.set(r));
                    let s = Selection::of_range(rows, start..end);
                    assert_eq!(s, want, "{rows} rows, {start}..{end}");
                    let expect = |s: &Selection| {
                        let picked: Vec<usize> = s.iter().collect();
                        let one = picked.windows(2).all(|w| w[1] == w[0] + 1);
                        (!picked.is_empty() && one).then(|| picked[0]..picked[picked.len() - 1] + 1)
                    };
                    assert_eq!(s.single_range(), expect(&s), "{rows} rows, {start}..{end}");
                    // a row more past the end, or a row fewer inside
                    for r in [end + 1, (start + end) / 2] {
                        if start < end && r < rows && (r > end || (start < r && r + 1 < end)) {
                            let mut t = s;
                            if r > end {
                                t.set(r)
                            } else {
                                t.unset(r)
                            }
                            assert_eq!(
                                t.single_range(),
                                expect(&t),
                                "{rows} rows, {start}..{end}, row {r} changed"
                            );
                            assert_eq!(t.single_range(), None);
                        }
                    }
                }
            }
        }
    }

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
                Predicate::AllOf(cmp, os) => {
                    !matches!(c, Cell::Null) && os.iter().all(|o| reference_holds(*cmp, c, o))
                }
                Predicate::InSet(set) => set
                    .operands()
                    .iter()
                    .any(|o| reference_holds(Cmp::Eq, c, o)),
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
        let ints = || {
            cells
                .iter()
                .filter_map(|c| if let Cell::Int(v) = c { Some(*v) } else { None })
        };
        let floats = || {
            cells.iter().filter_map(|c| {
                if let Cell::Float(v) = c {
                    Some(*v)
                } else {
                    None
                }
            })
        };
        let values = match kind {
            0 => Values::Int16(ints().map(|v| v as i16).collect()),
            1 => Values::Int32(ints().map(|v| v as i32).collect()),
            2 => Values::Int64(ints().collect()),
            3 => Values::Float32(floats().map(|v| v as f32).collect()),
            4 => Values::Float64(floats().collect()),
            _ => Values::Bytes(
                cells
                    .iter()
                    .filter_map(|c| {
                        if let Cell::Bytes(b) = c {
                            Some(b.clone())
                        } else {
                            None
                        }
                    })
                    .collect::<ByteStrings>(),
            ),
        };
        Vector {
            rows,
            nulls: any_null.then_some(nulls),
            values,
        }
    }

    fn cmp_strategy() -> impl Strategy<Value = Cmp> {
        prop_oneof![
            Just(Cmp::Lt),
            Just(Cmp::Le),
            Just(Cmp::Eq),
            Just(Cmp::Ge),
            Just(Cmp::Gt),
            Just(Cmp::Ne)
        ]
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
            let float_pool = [
                f64::NAN,
                -0.0,
                0.0,
                1.5,
                -1.5,
                f64::INFINITY,
                f64::NEG_INFINITY,
                2.25,
            ];
            let byte_pool: [&[u8]; 6] = [b"", b"a", b"ab", b"b", b"\xff", b"host_1"];
            let draw = |n: u64| -> Cell {
                match kind {
                    0..=2 => Cell::Int(int_pool[(n % int_pool.len() as u64) as usize]),
                    3 | 4 => Cell::Float(float_pool[(n % float_pool.len() as u64) as usize]),
                    _ => Cell::Bytes(byte_pool[(n % byte_pool.len() as u64) as usize].to_vec()),
                }
            };
            let null_rate = next() % 4;
            let cells = (0..rows)
                .map(|_| {
                    if next() % 8 < null_rate {
                        Cell::Null
                    } else {
                        draw(next())
                    }
                })
                .collect();
            // integer constants also beyond the column's width (int2 against int8)
            let wide = [i64::MIN, i64::MAX, 1 << 40, -(1 << 20)];
            let operands = (0..SET_MIN_OPERANDS + 4)
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
                Predicate::AllOf(cmp, operands[1..4].to_vec()),
                Predicate::any(Cmp::Eq, operands.clone()),
                Predicate::IsNull,
                Predicate::IsNotNull,
                Predicate::All,
                Predicate::Nothing,
            ];
            // the set lookup against each operand compared in turn
            prop_assert!(matches!(&preds[3], Predicate::InSet(_)));
            prop_assert_eq!(select(&v, &preds[3]), select(&v, &Predicate::Any(Cmp::Eq, operands.clone())));
            for p in &preds {
                let got = select(&v, p).unwrap();
                let want = match p {
                    // against the operands as given (with their duplicates), not the set's
                    Predicate::InSet(_) => reference(&cells, &Predicate::Any(Cmp::Eq, operands.clone())),
                    _ => reference(&cells, p),
                };
                prop_assert_eq!(got.rows(), cells.len());
                for (r, w) in want.iter().enumerate() {
                    prop_assert_eq!(got.contains(r), *w, "row {} of {:?} under {:?}", r, cells[r], p);
                }
                prop_assert_eq!(got.count(), want.iter().filter(|&&w| w).count());
                prop_assert_eq!(got.iter().collect::<Vec<_>>(), (0..cells.len()).filter(|&r| want[r]).collect::<Vec<_>>());
            }
        }
    }

    /// Integers compared with a float constant as integers give what comparing them as
    /// floats gives, at every edge: NaN, infinities, -0.0, fractions, 2^53 + 1, +-2^63.
    #[test]
    fn integer_tests_of_float_constants_equal_the_float_comparisons() {
        let two63 = 9_223_372_036_854_775_808.0f64;
        let constants = [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.0,
            -1.0,
            90.0,
            90.5,
            89.999,
            two63,
            -two63,
            two63 * 2.0,
            -two63 * 2.0,
            9_007_199_254_740_993.0,
            -9_007_199_254_740_992.0,
            1e300,
            -1e300,
            f64::MIN_POSITIVE,
            -f64::MIN_POSITIVE,
        ];
        let values = [
            i64::MIN,
            i64::MIN + 1024,
            -(1 << 53),
            -91,
            -1,
            0,
            1,
            89,
            90,
            91,
            1 << 53,
            (1 << 62) + 1024,
            i64::MAX - 1023,
        ];
        for c in constants {
            for cmp in [Cmp::Lt, Cmp::Le, Cmp::Eq, Cmp::Ge, Cmp::Gt, Cmp::Ne] {
                let t = IntTest::of_float(cmp, c);
                for v in values {
                    let x = v as f64; // exact for these values
                    assert_eq!(x as i64, v);
                    let want = holds(cmp, float_order(x, c));
                    let got = match t {
                        IntTest::Always(b) => b,
                        IntTest::Compare(k, b) => holds(k, v.cmp(&b)),
                    };
                    assert_eq!(got, want, "{v} {cmp:?} {c}");
                }
            }
        }
    }

    /// The AVX2 build of the integer comparison gives the portable one's results, and the
    /// comparisons into a selection's words (portable and AVX-512) the same tests.
    #[test]
    fn integer_comparison_twins_agree() {
        let mut seed = 0x5851_f42d_4c95_7f2du64;
        for len in [0usize, 1, 3, 7, 8, 33, 64, 65, 1000, 1024] {
            for span in [4u32, 31, 32, 62] {
                let ints: Vec<i64> = (0..len)
                    .map(|_| {
                        seed = seed
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        (seed >> 1) as i64 >> (63 - span)
                    })
                    .collect();
                for c in [
                    0i64,
                    1,
                    -1,
                    90,
                    i32::MAX as i64,
                    i32::MAX as i64 + 1,
                    i32::MIN as i64 - 1,
                    i64::MIN,
                    i64::MAX,
                ] {
                    for cmp in [Cmp::Lt, Cmp::Le, Cmp::Eq, Cmp::Ge, Cmp::Gt, Cmp::Ne] {
                        let want: Vec<u8> =
                            ints.iter().map(|&v| holds(cmp, v.cmp(&c)) as u8).collect();
                        assert_eq!(compare_ints_portable(&ints, cmp, c), want, "{cmp:?} {c}");
                        #[cfg(target_arch = "x86_64")]
                        if std::arch::is_x86_feature_detected!("avx2") {
                            // SAFETY: AVX2 is available
                            assert_eq!(
                                unsafe { compare_ints_avx2(&ints, cmp, c) },
                                want,
                                "AVX2 {cmp:?} {c}"
                            );
                            // SAFETY: AVX2 is available
                            assert_eq!(
                                unsafe { crate::all_within_bits_avx2(&ints, 31) },
                                crate::all_within_bits_portable(&ints, 31)
                            );
                        }
                        // the tests as a selection's words: bit r of the selection is byte r
                        let mut selected = Selection::none(len);
                        want.iter()
                            .enumerate()
                            .filter(|(_, &b)| b == 1)
                            .for_each(|(r, _)| selected.set(r));
                        let mut words = Selection::none(len);
                        compare_words_portable(&ints, cmp, c, &mut words.words);
                        assert_eq!(words, selected, "words {cmp:?} {c}");
                        #[cfg(target_arch = "x86_64")]
                        if std::arch::is_x86_feature_detected!("avx512f") {
                            let mut words = Selection::none(len);
                            // SAFETY: AVX-512 F is available
                            unsafe { compare_words_avx512(&ints, cmp, c, &mut words.words) };
                            assert_eq!(words, selected, "AVX-512 words {cmp:?} {c}");
                        }
                        #[cfg(target_arch = "x86_64")]
                        if std::arch::is_x86_feature_detected!("avx2") {
                            let mut words = Selection::none(len);
                            // SAFETY: AVX2 is available
                            unsafe { compare_words_avx2(&ints, cmp, c, &mut words.words) };
                            assert_eq!(words, selected, "AVX2 words {cmp:?} {c}");
                        }
                    }
                }
            }
        }
    }

    /// A set's zone checks give what testing each element against the zone gives (the skip
    /// rules' comparisons one by one), on zones and sets drawn from small pools so that both
    /// answers come up; the counts show they did.
    #[test]
    fn set_zone_checks_equal_the_element_by_element_ones() {
        use crate::stripe::{StoredZone, ZoneBound, ZONE_BYTES};
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let ints = [i64::MIN, -7, -1, 0, 1, 2, 5, 9, 100, i64::MAX];
        let floats = [
            f64::NEG_INFINITY,
            -2.5,
            -0.0,
            0.0,
            1.0,
            3.5,
            f64::INFINITY,
            f64::NAN,
        ];
        let long = vec![b'h'; ZONE_BYTES + 4];
        let bytes: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b"a".to_vec(),
            b"ab".to_vec(),
            b"b".to_vec(),
            long[..ZONE_BYTES].to_vec(),
            long.clone(),
            b"z".to_vec(),
        ];
        let (mut yes, mut no, mut covered) = (0, 0, 0);
        for _ in 0..20_000 {
            let n = (next() % 20) as usize + 1;
            let (operands, zone) = match next() % 3 {
                0 => {
                    let ops: Vec<Operand> = (0..n)
                        .map(|_| Operand::Int(ints[(next() % 10) as usize]))
                        .collect();
                    let (a, b) = (ints[(next() % 10) as usize], ints[(next() % 10) as usize]);
                    (
                        ops,
                        StoredZone::Int {
                            min: a.min(b),
                            max: a.max(b),
                        },
                    )
                }
                1 => {
                    let ops: Vec<Operand> = (0..n)
                        .map(|_| Operand::Float(floats[(next() % 8) as usize]))
                        .collect();
                    let (a, b) = (floats[(next() % 8) as usize], floats[(next() % 8) as usize]);
                    let (min, max) = if float_order(a, b).is_le() {
                        (a, b)
                    } else {
                        (b, a)
                    };
                    (ops, StoredZone::Float { min, max })
                }
                _ => {
                    let ops: Vec<Operand> = (0..n)
                        .map(|_| Operand::Bytes(bytes[(next() % 7) as usize].clone()))
                        .collect();
                    let (a, b) = (&bytes[(next() % 7) as usize], &bytes[(next() % 7) as usize]);
                    let (min, max) = if a <= b { (a, b) } else { (b, a) };
                    let cut = |v: &Vec<u8>| ZoneBound::new(&v[..v.len().min(ZONE_BYTES)]);
                    (
                        ops,
                        StoredZone::Bytes {
                            min: cut(min),
                            max: cut(max),
                            max_truncated: max.len() > ZONE_BYTES,
                        },
                    )
                }
            };
            let zone = if next() % 50 == 0 {
                StoredZone::Empty
            } else {
                zone
            };
            let set = OperandSet::of(&operands).unwrap();
            let want_may = operands.iter().any(|o| match (o, &zone) {
                (_, StoredZone::Empty) => false,
                (Operand::Int(e), StoredZone::Int { min, max }) => min <= e && e <= max,
                (Operand::Float(e), StoredZone::Float { min, max }) => {
                    float_order(*min, *e).is_le() && float_order(*e, *max).is_le()
                }
                (
                    Operand::Bytes(e),
                    StoredZone::Bytes {
                        min,
                        max,
                        max_truncated,
                    },
                ) => bytes_may_satisfy(min, max, *max_truncated, Cmp::Eq, e),
                _ => unreachable!(),
            });
            let want_covers = operands.iter().any(|o| match (o, &zone) {
                (Operand::Int(e), StoredZone::Int { min, max }) => min == e && e == max,
                (Operand::Float(e), StoredZone::Float { min, max }) => {
                    float_order(*min, *e).is_eq() && float_order(*e, *max).is_eq()
                }
                _ => false,
            });
            assert_eq!(
                set.may_equal_within(&zone),
                want_may,
                "{operands:?} in {zone:?}"
            );
            assert_eq!(
                set.covers_zone(&zone),
                want_covers,
                "{operands:?} covering {zone:?}"
            );
            if want_may {
                yes += 1
            } else {
                no += 1
            }
            covered += want_covers as u32;
        }
        assert!(
            yes > 1000 && no > 1000 && covered > 100,
            "{yes} may, {no} may not, {covered} covered"
        );
    }

    #[test]
    fn eight_bits_packs_in_order() {
        for m in 0..=255u8 {
            let bytes: [u8; 8] = std::array::from_fn(|i| m >> i & 1);
            assert_eq!(eight_bits(bytes), m as u64);
        }
    }

    #[test]
    fn edges() {
        let v = vector(
            &[
                Cell::Float(f64::NAN),
                Cell::Float(-0.0),
                Cell::Null,
                Cell::Float(0.0),
            ],
            4,
        );
        let sel = |p: Predicate| select(&v, &p).unwrap().iter().collect::<Vec<_>>();
        assert_eq!(
            sel(Predicate::Compare(Cmp::Eq, Operand::Float(0.0))),
            vec![1, 3]
        );
        assert_eq!(
            sel(Predicate::Compare(Cmp::Eq, Operand::Float(f64::NAN))),
            vec![0]
        );
        assert_eq!(
            sel(Predicate::Compare(Cmp::Gt, Operand::Float(f64::INFINITY))),
            vec![0]
        );
        assert_eq!(
            sel(Predicate::Compare(Cmp::Ne, Operand::Float(f64::NAN))),
            vec![1, 3]
        );
        assert_eq!(sel(Predicate::All), vec![0, 1, 2, 3]);
        assert!(Selection::none(0).is_empty());
        assert_eq!(Selection::all(MAX_ROWS).count(), MAX_ROWS);
        assert_eq!(Selection::all(65).iter().last(), Some(64));
        // a kind the operand does not fit is refused, not guessed
        assert_eq!(
            select(&v, &Predicate::Compare(Cmp::Eq, Operand::Int(0))),
            None
        );
    }
}

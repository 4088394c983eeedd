//! Floats stored as integers through a mapping: the *float-as-integer* encoding's payload.
//!
//! Real-world decimals (21.37, 54.8, 230.934) are not integers, so the bitpack path of
//! `floats` does not take them; but each is an integer of digits over a power of ten. This
//! is the idea of ALP (Afroozeh, Kuffó, Boncz, SIGMOD 2024), with the mapping defined so its
//! inverse is one correctly rounded operation:
//!
//! * **decimal, exponent `e`** (0..=[`max_exponent`]): the value is `d / 10^e` computed in the
//!   float's own width (`10^e` is exact there, and IEEE division rounds once), so every
//!   decimal literal with at most `e` decimals and few enough digits comes back bit for bit:
//!   the parser rounded the same exact quotient to the same float;
//! * **16-bit** ([`HALF`], [`BFLOAT16`]): the value is the IEEE half (or bfloat16) whose bit
//!   pattern is the integer, widened exactly.
//!
//! The integers then go through the packed-integer block (frame of reference, delta, stride,
//! Rice; `bitpack`). A value the mapping does not give back exactly (NaN, ±inf, -0.0, a
//! value with more decimals) is an *exception*: its row keeps a stand-in integer (the one
//! before it, so deltas stay small) and its bits are stored apart and patched in.
//!
//! Payload, after the encoding tag (lengths known from the vector header: `n` values):
//!
//! ```text
//! mapping: u8            0..=18 decimal exponent (0..=10 for float4), 0x40 half, 0x41 bfloat16
//! exceptions: u16        0..=n
//! positions: exceptions × u16, strictly increasing, each < n
//! values: exceptions × lane bytes (4 or 8, little-endian bit patterns)
//! block: the packed-integer block of n integers (bitpack)
//! ```

use crate::bitpack::{self, BlockPlan};
use crate::bits::ByteReader;
use crate::error::{DecodeError, DecodeResult};
use crate::vector::{Kind, Values, ValuesRef};

/// The mapping byte of 16-bit IEEE half floats.
pub const HALF: u8 = 0x40;
/// The mapping byte of bfloat16 (the high half of a float4).
pub const BFLOAT16: u8 = 0x41;

/// 2^63 as f64 (exactly representable): digits must be below it.
const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;

/// How many values the exponent is chosen on (evenly spaced through the vector).
const SAMPLE: usize = 32;

/// The largest decimal exponent for a float kind: `10^e` is exact in the kind (5^e fits its
/// significand) and the digits of a value up to 10^(digits the kind holds) fit an i64.
pub fn max_exponent(kind: Kind) -> u8 {
    if kind == Kind::Float32 {
        10
    } else {
        18
    }
}

const POW10_F64: [f64; 19] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18,
];
const POW10_F32: [f32; 11] = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10];

/// The floats of a vector, as bit patterns widened to f64 where the arithmetic needs it.
#[derive(Clone, Copy)]
enum Floats<'a> {
    F32(&'a [f32]),
    F64(&'a [f64]),
}

impl Floats<'_> {
    fn len(&self) -> usize {
        match self {
            Floats::F32(v) => v.len(),
            Floats::F64(v) => v.len(),
        }
    }
}

/// The integer a value maps to under `mapping`, if the inverse gives the value's exact bits.
#[inline]
fn forward_f64(x: f64, mapping: u8) -> Option<i64> {
    match mapping {
        HALF => {
            let h = half::f16::from_f64(x);
            (h.to_f64().to_bits() == x.to_bits()).then_some(h.to_bits() as i64)
        }
        BFLOAT16 => {
            let h = half::bf16::from_f64(x);
            (h.to_f64().to_bits() == x.to_bits()).then_some(h.to_bits() as i64)
        }
        e => {
            let p = POW10_F64[e as usize];
            let scaled = (x * p).round();
            // the range test is false for NaN; the round trip refuses what rounding changed
            let d = scaled as i64;
            ((-TWO_POW_63..TWO_POW_63).contains(&scaled) && (d as f64 / p).to_bits() == x.to_bits())
                .then_some(d)
        }
    }
}

#[inline]
fn forward_f32(x: f32, mapping: u8) -> Option<i64> {
    match mapping {
        HALF => {
            let h = half::f16::from_f32(x);
            (h.to_f32().to_bits() == x.to_bits()).then_some(h.to_bits() as i64)
        }
        BFLOAT16 => {
            let h = half::bf16::from_f32(x);
            (h.to_f32().to_bits() == x.to_bits()).then_some(h.to_bits() as i64)
        }
        e => {
            let p = POW10_F32[e as usize];
            let scaled = (x as f64 * p as f64).round();
            let d = scaled as i64;
            ((-TWO_POW_63..TWO_POW_63).contains(&scaled) && (d as f32 / p).to_bits() == x.to_bits())
                .then_some(d)
        }
    }
}

fn forward(v: Floats<'_>, i: usize, mapping: u8) -> Option<i64> {
    match v {
        Floats::F32(x) => forward_f32(x[i], mapping),
        Floats::F64(x) => forward_f64(x[i], mapping),
    }
}

/// A vector planned as floats-as-integers: the mapping, the integers (stand-ins at the
/// exceptions), the exceptions' positions and the block's plan.
#[derive(Debug, Clone)]
pub struct FloatIntPlan {
    pub mapping: u8,
    pub ints: Vec<i64>,
    pub exceptions: Vec<u16>,
    pub block: BlockPlan,
    lane_bytes: usize,
}

impl FloatIntPlan {
    /// Payload bytes (after the encoding tag).
    pub fn encoded_len(&self) -> usize {
        1 + 2 + self.exceptions.len() * (2 + self.lane_bytes) + self.block.encoded_len()
    }
}

/// The mapping a sample of the vector favours: the decimal exponent that gives back the
/// most sampled values (the smallest on a tie: smaller digits), or a 16-bit form if that
/// gives back more. `None` when no mapping gives back at least three quarters of the sample.
fn choose_mapping(v: Floats<'_>, kind: Kind) -> Option<u8> {
    let n = v.len();
    let step = n.div_ceil(SAMPLE).max(1);
    let sample: Vec<usize> = (0..n).step_by(step).collect();
    let hits = |m: u8| {
        sample
            .iter()
            .filter(|&&i| forward(v, i, m).is_some())
            .count()
    };
    let mut best: Option<(usize, u8)> = None;
    let candidates = (0..=max_exponent(kind)).chain([HALF, BFLOAT16]);
    for m in candidates {
        let h = hits(m);
        if best.is_none_or(|(b, _)| h > b) {
            best = Some((h, m));
        }
        if h == sample.len() && m < HALF {
            break; // every sampled value at the smallest exponent that has them all
        }
    }
    best.filter(|&(h, _)| 4 * h >= 3 * sample.len())
        .map(|(_, m)| m)
}

/// Plans the vector's non-null `values` (floats) as integers, or `None` when it is not
/// worth sizing: not floats, no mapping fits the sample, or more than a quarter of the
/// values would be exceptions. `lag` is the stripe's row period, as for bitpack.
pub fn plan(values: &ValuesRef<'_>, lag: Option<usize>) -> Option<FloatIntPlan> {
    let (v, kind) = match values {
        ValuesRef::Float32(x) => (Floats::F32(x), Kind::Float32),
        ValuesRef::Float64(x) => (Floats::F64(x), Kind::Float64),
        _ => return None,
    };
    let n = v.len();
    if n == 0 {
        return None;
    }
    let mapping = choose_mapping(v, kind)?;
    plan_mapping(v, kind, mapping, lag)
}

fn plan_mapping(
    v: Floats<'_>,
    kind: Kind,
    mapping: u8,
    lag: Option<usize>,
) -> Option<FloatIntPlan> {
    let n = v.len();
    let mut ints = Vec::with_capacity(n);
    let mut exceptions = Vec::new();
    let mut last: Option<i64> = None;
    for i in 0..n {
        match forward(v, i, mapping) {
            Some(d) => {
                if last.is_none() {
                    // the stand-ins before the first mapped value take its integer
                    ints.iter_mut().for_each(|s| *s = d);
                }
                ints.push(d);
                last = Some(d);
            }
            None => {
                exceptions.push(i as u16);
                ints.push(last.unwrap_or(0));
            }
        }
    }
    if 4 * exceptions.len() > n {
        return None;
    }
    let block = bitpack::plan_with(&ints, lag);
    Some(FloatIntPlan {
        mapping,
        ints,
        exceptions,
        block,
        lane_bytes: kind.lane_bytes().expect("a float kind"),
    })
}

/// Appends the payload of `plan`, made from these `values`.
pub fn encode(values: &ValuesRef<'_>, plan: &FloatIntPlan, out: &mut Vec<u8>) {
    out.push(plan.mapping);
    out.extend_from_slice(&(plan.exceptions.len() as u16).to_le_bytes());
    for &p in &plan.exceptions {
        out.extend_from_slice(&p.to_le_bytes());
    }
    for &p in &plan.exceptions {
        match values {
            ValuesRef::Float32(x) => out.extend_from_slice(&x[p as usize].to_bits().to_le_bytes()),
            ValuesRef::Float64(x) => out.extend_from_slice(&x[p as usize].to_bits().to_le_bytes()),
            _ => unreachable!("planned from floats"),
        }
    }
    bitpack::write_planned(&plan.ints, &plan.block, out);
}

/// The mapping byte, checked against the kind.
fn read_mapping(r: &mut ByteReader<'_>, kind: Kind) -> DecodeResult<u8> {
    if !kind.is_float() {
        return Err(DecodeError::Inconsistent {
            what: "float-as-integer encoding for a non-float kind",
        });
    }
    let m = r.u8("float mapping")?;
    if m <= max_exponent(kind) || m == HALF || m == BFLOAT16 {
        Ok(m)
    } else {
        Err(DecodeError::UnknownTag {
            what: "float mapping",
            value: m,
        })
    }
}

/// The exception section: positions (checked strictly increasing and below `count`) and the
/// bytes of their values.
fn read_exceptions<'a>(
    r: &mut ByteReader<'a>,
    kind: Kind,
    count: usize,
) -> DecodeResult<(&'a [u8], &'a [u8])> {
    let n = r.u16("exception count")? as usize;
    if n > count {
        return Err(DecodeError::OutOfRange {
            what: "exception count",
            value: n as u64,
            limit: count as u64,
        });
    }
    let positions = r.take(2 * n, "exception positions")?;
    let mut prev: Option<u16> = None;
    for p in positions.chunks_exact(2) {
        let p = u16::from_le_bytes([p[0], p[1]]);
        if p as usize >= count || prev.is_some_and(|q| p <= q) {
            return Err(DecodeError::Inconsistent {
                what: "exception positions",
            });
        }
        prev = Some(p);
    }
    let values = r.take(
        n * kind.lane_bytes().expect("a float kind"),
        "exception values",
    )?;
    Ok((positions, values))
}

/// A vector of floats stored with a decimal mapping, unpacked: each value is `ints[k]` over
/// `10^exponent` in its kind, except at the exceptions, whose values are stored apart. A
/// filter compares the integers ([`Scaled::last_passing`]) instead of converting them.
#[derive(Debug, Clone, PartialEq)]
pub struct Scaled {
    /// [`Kind::Float32`] or [`Kind::Float64`].
    pub kind: Kind,
    /// 0..=[`max_exponent`] of the kind.
    pub exponent: u8,
    /// One per non-null value, a stand-in at each exception.
    pub ints: Vec<i64>,
    /// (position among `ints`, bit pattern of the value there), positions increasing.
    pub exceptions: Vec<(u16, u64)>,
    /// The floats once converted ([`Scaled::values`]), for the readers that want them
    /// (several aggregates of one column convert the vector once).
    converted: Converted,
}

/// A vector's converted floats, kept beside its integers; not part of its value (two
/// [`Scaled`] are equal whether or not either was converted yet).
#[derive(Debug, Clone, Default)]
struct Converted(std::cell::OnceCell<Values>);

impl PartialEq for Converted {
    fn eq(&self, _: &Converted) -> bool {
        true
    }
}

impl Scaled {
    /// The floats: each integer converted and divided, the exceptions patched in; converted
    /// once, then kept.
    pub fn values(&self) -> &Values {
        self.converted.0.get_or_init(|| {
            inverse(
                self.kind,
                self.ints.clone(),
                self.exponent,
                self.exceptions.clone(),
            )
        })
    }

    /// The value integer `d` stands for (what [`Scaled::values`] gives for it), widened to
    /// f64 (exactly).
    #[inline]
    pub fn value(&self, d: i64) -> f64 {
        match self.kind {
            Kind::Float32 => (d as f32 / POW10_F32[self.exponent as usize]) as f64,
            _ => d as f64 / POW10_F64[self.exponent as usize],
        }
    }

    /// The value of exception bit pattern `bits`, widened to f64 (exactly).
    pub fn exception_value(&self, bits: u64) -> f64 {
        match self.kind {
            Kind::Float32 => f32::from_bits(bits as u32) as f64,
            _ => f64::from_bits(bits),
        }
    }

    /// The largest integer whose value is below `c` (`strict`) or at most `c`; `None` when
    /// no integer's is. A value is an integer converted to the kind and divided by a
    /// positive power of ten, each step correctly rounded and so monotone: the integers
    /// whose values pass are exactly those up to it. Every value is finite and never -0.0
    /// (those are exceptions), so IEEE's order is PostgreSQL's here; `c` must not be NaN.
    /// Found from the nearest guess, `c·10^e`, by doubling steps and a bisection: a few
    /// conversions where the guess is right, at most about 130 where it is not.
    pub fn last_passing(&self, c: f64, strict: bool) -> Option<i64> {
        debug_assert!(!c.is_nan());
        let pass = |d: i64| {
            let v = self.value(d);
            if strict {
                v < c
            } else {
                v <= c
            }
        };
        if !pass(i64::MIN) {
            return None;
        }
        if pass(i64::MAX) {
            return Some(i64::MAX);
        }
        // a saturating conversion; the bracket is found from wherever it lands
        let guess = (c * POW10_F64[self.exponent as usize]).floor() as i64;
        // lo passes, hi does not
        let (mut lo, mut hi);
        let mut step: i64 = 1;
        if pass(guess) {
            lo = guess;
            loop {
                let h = lo.saturating_add(step);
                if !pass(h) {
                    hi = h;
                    break;
                }
                lo = h;
                step = step.saturating_mul(2);
            }
        } else {
            hi = guess;
            loop {
                let l = hi.saturating_sub(step);
                if pass(l) {
                    lo = l;
                    break;
                }
                hi = l;
                step = step.saturating_mul(2);
            }
        }
        while (hi as i128 - lo as i128) > 1 {
            let mid = (lo as i128 + (hi as i128 - lo as i128) / 2) as i64;
            if pass(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Some(lo)
    }

    /// The floats, as [`Scaled::values`] gives them (taken if already converted).
    pub fn into_values(self) -> Values {
        match self.converted.0.into_inner() {
            Some(values) => values,
            None => inverse(self.kind, self.ints, self.exponent, self.exceptions),
        }
    }
}

/// A payload of `count` values of `kind` (a float kind) read and checked: a decimal
/// mapping's integers as a [`Scaled`], a 16-bit mapping's values as floats.
pub fn unpack(
    r: &mut ByteReader<'_>,
    kind: Kind,
    count: usize,
) -> DecodeResult<Result<Scaled, Values>> {
    let mapping = read_mapping(r, kind)?;
    let (positions, patches) = read_exceptions(r, kind, count)?;
    let mut ints = Vec::with_capacity(count);
    bitpack::read_block(r, count, &mut ints)?;
    let positions = positions
        .chunks_exact(2)
        .map(|p| u16::from_le_bytes([p[0], p[1]]));
    let lane = kind.lane_bytes().expect("a float kind");
    let exceptions = positions
        .zip(patches.chunks_exact(lane))
        .map(|(p, b)| {
            let mut bits = [0u8; 8];
            bits[..lane].copy_from_slice(b);
            (p, u64::from_le_bytes(bits))
        })
        .collect();
    if mapping == HALF || mapping == BFLOAT16 {
        // no order to compare in (sign and magnitude): the floats at once
        return Ok(Err(inverse(kind, ints, mapping, exceptions)));
    }
    Ok(Ok(Scaled {
        kind,
        exponent: mapping,
        ints,
        exceptions,
        converted: Converted::default(),
    }))
}

/// The floats `ints` map to under `mapping`, with the exceptions' bit patterns patched in.
fn inverse(kind: Kind, ints: Vec<i64>, mapping: u8, exceptions: Vec<(u16, u64)>) -> Values {
    match kind {
        Kind::Float32 => {
            let mut out = inverse_f32(&ints, mapping);
            for (k, b) in exceptions {
                out[k as usize] = f32::from_bits(b as u32);
            }
            Values::Float32(out)
        }
        _ => {
            let mut out = inverse_f64(ints, mapping);
            for (k, b) in exceptions {
                out[k as usize] = f64::from_bits(b);
            }
            Values::Float64(out)
        }
    }
}

/// The value at `index` of a payload of `count` values: what [`unpack`] gives there as a
/// float, reading one integer of the block where it can (`bitpack::value_at`).
pub fn value_at(
    r: &mut ByteReader<'_>,
    kind: Kind,
    count: usize,
    index: usize,
    scratch: &mut Vec<i64>,
) -> DecodeResult<Values> {
    let mapping = read_mapping(r, kind)?;
    let (positions, patches) = read_exceptions(r, kind, count)?;
    let lane = kind.lane_bytes().expect("a float kind");
    let found = positions
        .chunks_exact(2)
        .position(|p| u16::from_le_bytes([p[0], p[1]]) as usize == index);
    let d = bitpack::value_at(r, count, index, scratch)?;
    Ok(match (kind, found) {
        (Kind::Float32, Some(k)) => Values::Float32(vec![f32::from_bits(u32::from_le_bytes(
            patches[k * lane..(k + 1) * lane].try_into().unwrap(),
        ))]),
        (Kind::Float32, None) => Values::Float32(inverse_f32(&[d], mapping)),
        (_, Some(k)) => Values::Float64(vec![f64::from_bits(u64::from_le_bytes(
            patches[k * lane..(k + 1) * lane].try_into().unwrap(),
        ))]),
        (_, None) => Values::Float64(inverse_f64(vec![d], mapping)),
    })
}

/// The floats the integers map back to. Any integer gives some float (a damaged one a
/// wrong value, never a fault). The integers' buffer becomes the floats' (same size and
/// alignment: the collect reuses it).
pub fn inverse_f64(ints: Vec<i64>, mapping: u8) -> Vec<f64> {
    match mapping {
        HALF => ints
            .into_iter()
            .map(|d| half::f16::from_bits(d as u16).to_f64())
            .collect(),
        BFLOAT16 => ints
            .into_iter()
            .map(|d| half::bf16::from_bits(d as u16).to_f64())
            .collect(),
        e => decimals_f64(ints, POW10_F64[e as usize]),
    }
}

pub fn inverse_f32(ints: &[i64], mapping: u8) -> Vec<f32> {
    match mapping {
        HALF => ints
            .iter()
            .map(|&d| half::f16::from_bits(d as u16).to_f32())
            .collect(),
        BFLOAT16 => ints
            .iter()
            .map(|&d| half::bf16::from_bits(d as u16).to_f32())
            .collect(),
        e => {
            let p = POW10_F32[e as usize];
            ints.iter().map(|&d| d as f32 / p).collect()
        }
    }
}

/// `d / p` for each integer: one conversion and one division a value. Baseline x86_64 has no
/// packed i64 -> f64 conversion, so with AVX-512 DQ (detected at run time) the same loop
/// runs eight lanes at a time.
fn decimals_f64(ints: Vec<i64>, p: f64) -> Vec<f64> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512dq")
        && std::arch::is_x86_feature_detected!("avx512vl")
    {
        // SAFETY: AVX-512 F, DQ and VL are available (DQ and VL imply F; checked just above)
        return unsafe { decimals_f64_avx512(ints, p) };
    }
    decimals_f64_portable(ints, p)
}

/// [`decimals_f64`] for the baseline target: its twin, tested against it.
#[inline(always)]
fn decimals_f64_portable(ints: Vec<i64>, p: f64) -> Vec<f64> {
    ints.into_iter().map(|d| d as f64 / p).collect()
}

/// # Safety
/// The CPU must support AVX-512 F, DQ and VL.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512vl")]
unsafe fn decimals_f64_avx512(ints: Vec<i64>, p: f64) -> Vec<f64> {
    decimals_f64_portable(ints, p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Rng;

    /// A payload read back to the floats (what `unpack_vector` then `materialize` give).
    fn decode(r: &mut ByteReader<'_>, kind: Kind, count: usize) -> DecodeResult<Values> {
        Ok(match unpack(r, kind, count)? {
            Ok(scaled) => scaled.into_values(),
            Err(values) => values,
        })
    }

    /// The reference: every value mapped one at a time with the definition written out
    /// (digits = the nearest integer to x·10^e, kept if digits / 10^e is x's bits), the
    /// exceptions the values that are not.
    fn reference_exceptions_f64(x: &[f64], e: u8) -> Vec<u16> {
        (0..x.len())
            .filter(|&i| {
                let p = 10f64.powi(e as i32);
                let d = (x[i] * p).round();
                !(d.abs() < 9.2e18 && ((d as i64) as f64 / p).to_bits() == x[i].to_bits())
            })
            .map(|i| i as u16)
            .collect()
    }

    fn round_trip(values: ValuesRef<'_>) -> Option<FloatIntPlan> {
        let p = plan(&values, Some(7))?;
        let mut out = Vec::new();
        encode(&values, &p, &mut out);
        assert_eq!(out.len(), p.encoded_len(), "sized as written");
        let kind = values.kind();
        let n = values.len();
        let back = decode(&mut ByteReader::new(&out), kind, n).unwrap();
        let bits = |v: &Values| -> Vec<u64> {
            match v {
                Values::Float32(x) => x.iter().map(|f| f.to_bits() as u64).collect(),
                Values::Float64(x) => x.iter().map(|f| f.to_bits()).collect(),
                _ => unreachable!(),
            }
        };
        let want: Vec<u64> = match values {
            ValuesRef::Float32(x) => x.iter().map(|f| f.to_bits() as u64).collect(),
            ValuesRef::Float64(x) => x.iter().map(|f| f.to_bits()).collect(),
            _ => unreachable!(),
        };
        assert_eq!(bits(&back), want, "bit-exact round trip");
        let mut scratch = Vec::new();
        for i in [0, n / 2, n - 1] {
            let one = value_at(&mut ByteReader::new(&out), kind, n, i, &mut scratch).unwrap();
            assert_eq!(bits(&one), vec![want[i]], "value_at({i})");
        }
        Some(p)
    }

    fn decimals(rng: &mut Rng, n: usize, e: u8, step: i64) -> Vec<f64> {
        let mut d: i64 = 2137;
        (0..n)
            .map(|_| {
                d += (rng.next() % (2 * step as u64 + 1)) as i64 - step;
                format!("{}", d as f64 / 10f64.powi(e as i32))
                    .parse()
                    .unwrap()
            })
            .collect()
    }

    #[test]
    fn decimals_take_the_smallest_exponent_and_round_trip() {
        let mut rng = Rng(48);
        for e in 0..=6u8 {
            let x = decimals(&mut rng, 1024, e, 5);
            let p = round_trip(ValuesRef::Float64(&x)).expect("decimal");
            assert!(p.mapping <= e, "exponent {} for {e} decimals", p.mapping);
            assert_eq!(p.exceptions, reference_exceptions_f64(&x, p.mapping));
            assert!(p.exceptions.is_empty());
        }
    }

    #[test]
    fn decimal_literals_of_every_width_come_back_exactly() {
        // every decimal with up to 15 significant digits and e decimals maps at exponent e
        let mut rng = Rng(7);
        for e in 0..=15u8 {
            for _ in 0..2000 {
                let digits = (rng.next() % 10u64.pow(15 - e.min(14) as u32)) as i64;
                let s = format!("{}", digits as f64 / 10f64.powi(e as i32));
                let x: f64 = s.parse().unwrap();
                assert!(forward_f64(x, e).is_some(), "{s} at exponent {e}");
            }
        }
        for e in 0..=6u8 {
            for _ in 0..2000 {
                let digits = (rng.next() % 1_000_000) as i64;
                let x: f32 = format!("{}", digits as f64 / 10f64.powi(e as i32))
                    .parse()
                    .unwrap();
                assert!(forward_f32(x, e).is_some(), "{x} at exponent {e}");
            }
        }
    }

    #[test]
    fn edge_values_are_exceptions_and_come_back() {
        let mut rng = Rng(3);
        let mut x = decimals(&mut rng, 1024, 2, 3);
        let specials = [
            f64::NAN,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::from_bits(0x7ff8_0000_dead_beef), // a NaN with a payload
            1e300,
            f64::MIN_POSITIVE / 4.0, // subnormal
            std::f64::consts::PI,
        ];
        for (k, s) in specials.iter().enumerate() {
            x[k * 100 + 1] = *s;
        }
        x[0] = f64::NAN; // a leading exception: its stand-in is the first mapped integer
        let p = round_trip(ValuesRef::Float64(&x)).expect("mostly decimal");
        assert_eq!(p.mapping, 2);
        assert_eq!(p.exceptions.len(), specials.len() + 1);
        assert_eq!(p.exceptions, reference_exceptions_f64(&x, 2));
        assert_eq!(p.ints[0], p.ints[1], "the leading stand-in");
    }

    #[test]
    fn sixteen_bit_floats() {
        let mut rng = Rng(16);
        // halves of every sign and scale: not decimals, all exact in f16
        let halves: Vec<f64> = (0..1024)
            .map(|_| {
                half::f16::from_bits(
                    (rng.next() % 0x7c00) as u16 | 0x8000 * (rng.next() % 2) as u16,
                )
                .to_f64()
            })
            .collect();
        let p = round_trip(ValuesRef::Float64(&halves)).expect("halves");
        assert_eq!(p.mapping, HALF);
        let bf: Vec<f32> = (0..1024)
            .map(|_| half::bf16::from_bits((rng.next() % 0x7f00) as u16).to_f32())
            .collect();
        let p = round_trip(ValuesRef::Float32(&bf)).expect("bfloat16");
        assert!(p.mapping == BFLOAT16 || p.mapping <= max_exponent(Kind::Float32));
    }

    #[test]
    fn float4_decimals() {
        let mut rng = Rng(4);
        let x: Vec<f32> = decimals(&mut rng, 1000, 1, 4)
            .iter()
            .map(|&v| format!("{v}").parse().unwrap())
            .collect();
        let p = round_trip(ValuesRef::Float32(&x)).expect("float4 decimals");
        assert_eq!(p.mapping, 1);
    }

    #[test]
    fn not_planned_without_a_mapping_or_with_many_exceptions() {
        let mut rng = Rng(9);
        let noise: Vec<f64> = (0..1024).map(|_| f64::from_bits(rng.next() >> 2)).collect();
        assert!(plan(&ValuesRef::Float64(&noise), None).is_none());
        assert!(plan(&ValuesRef::Int64(&[1, 2]), None).is_none());
        assert!(plan(&ValuesRef::Float64(&[]), None).is_none());
        let mut x = decimals(&mut rng, 1024, 2, 3);
        for v in x.iter_mut().skip(1).step_by(3) {
            *v = std::f64::consts::E * *v; // a third of the values not decimals
        }
        assert!(plan_mapping(Floats::F64(&x), Kind::Float64, 2, None).is_none());
    }

    /// The run-time dispatched loop (AVX-512 where this CPU has it) gives its portable
    /// twin's bits on every exponent, over small, large (rounding) and extreme integers.
    #[test]
    fn decimal_inverse_matches_its_portable_twin() {
        let mut rng = Rng(77);
        let mut ints: Vec<i64> = (0..1000)
            .map(|_| rng.next() as i64 >> (rng.next() % 64))
            .collect();
        ints.extend([0, 1, -1, i64::MIN, i64::MAX, (1 << 53) + 1, -(1 << 53) - 1]);
        for e in 0..=18u8 {
            let p = POW10_F64[e as usize];
            let fast: Vec<u64> = decimals_f64(ints.clone(), p)
                .iter()
                .map(|x| x.to_bits())
                .collect();
            let twin: Vec<u64> = decimals_f64_portable(ints.clone(), p)
                .iter()
                .map(|x| x.to_bits())
                .collect();
            assert_eq!(fast, twin, "exponent {e}");
        }
    }

    /// `last_passing` against its definition: the bound passes and the integer after it
    /// does not (the values being monotone, checked on sorted random integers), for
    /// constants at the values, between them, at their neighbouring floats, far outside and
    /// at the edges, on both kinds and every exponent, digits near 0 and near ±2^63.
    #[test]
    fn last_passing_is_the_last_integer_that_passes() {
        let mut rng = Rng(2024);
        for kind in [Kind::Float64, Kind::Float32] {
            for exponent in 0..=max_exponent(kind) {
                let s = Scaled {
                    kind,
                    exponent,
                    ints: Vec::new(),
                    exceptions: Vec::new(),
                    converted: Converted::default(),
                };
                let mut ds: Vec<i64> = (0..200)
                    .map(|k| match k % 4 {
                        0 => rng.next() as i64,
                        1 => (rng.next() as i64) >> 40,
                        2 => i64::MAX - (rng.below(5000) as i64),
                        _ => i64::MIN + (rng.below(5000) as i64),
                    })
                    .chain([i64::MIN, -1, 0, 1, i64::MAX])
                    .collect();
                ds.sort_unstable();
                for w in ds.windows(2) {
                    assert!(s.value(w[0]) <= s.value(w[1]), "monotone at {w:?}");
                }
                let mut cs: Vec<f64> = Vec::new();
                for &d in &ds {
                    let v = s.value(d);
                    cs.extend([v, v.next_up(), v.next_down(), v + 0.5, v * 1.0000001]);
                }
                cs.extend([
                    f64::INFINITY,
                    f64::NEG_INFINITY,
                    0.0,
                    -0.0,
                    f64::MAX,
                    f64::MIN,
                    f64::MIN_POSITIVE,
                    -f64::MIN_POSITIVE,
                    1e300,
                    -1e300,
                ]);
                for c in cs {
                    for strict in [false, true] {
                        let pass = |d: i64| {
                            if strict {
                                s.value(d) < c
                            } else {
                                s.value(d) <= c
                            }
                        };
                        match s.last_passing(c, strict) {
                            None => assert!(!pass(i64::MIN), "{kind:?} e{exponent} {c} {strict}"),
                            Some(t) => {
                                assert!(pass(t), "{kind:?} e{exponent} {c} {strict}: {t}");
                                assert!(
                                    t == i64::MAX || !pass(t + 1),
                                    "{kind:?} e{exponent} {c} {strict}: {t}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn one_value_and_width_64_digits() {
        round_trip(ValuesRef::Float64(&[21.37])).unwrap();
        // digits spanning the whole i64 range: the block packs at width 64
        let x = [9.2e17, -9.2e17, 0.5, 1.0];
        let p = plan_mapping(Floats::F64(&x), Kind::Float64, 1, None).unwrap();
        let mut out = Vec::new();
        encode(&ValuesRef::Float64(&x), &p, &mut out);
        let back = decode(&mut ByteReader::new(&out), Kind::Float64, 4).unwrap();
        assert_eq!(back, Values::Float64(x.to_vec()));
    }

    #[test]
    fn damaged_payloads_are_refused_or_give_floats() {
        let mut rng = Rng(11);
        let mut x = decimals(&mut rng, 300, 2, 3);
        x[5] = f64::NAN;
        x[9] = -0.0;
        let p = plan(&ValuesRef::Float64(&x), None).unwrap();
        let mut out = Vec::new();
        encode(&ValuesRef::Float64(&x), &p, &mut out);
        for cut in 0..out.len() {
            assert!(
                decode(&mut ByteReader::new(&out[..cut]), Kind::Float64, 300).is_err(),
                "cut at {cut}"
            );
        }
        let bad = |f: &dyn Fn(&mut Vec<u8>)| {
            let mut b = out.clone();
            f(&mut b);
            decode(&mut ByteReader::new(&b), Kind::Float64, 300)
        };
        assert!(bad(&|b| b[0] = 19).is_err(), "exponent past the kind's");
        assert!(bad(&|b| b[0] = 0x42).is_err(), "unknown mapping");
        assert!(
            bad(&|b| b[1] = 0xff).is_err(),
            "more exceptions than values"
        );
        assert!(
            bad(&|b| b[3..5].copy_from_slice(&400u16.to_le_bytes())).is_err(),
            "position past the end"
        );
        assert!(
            bad(&|b| b[5..7].copy_from_slice(&5u16.to_le_bytes())).is_err(),
            "positions not increasing"
        );
        assert!(decode(&mut ByteReader::new(&out), Kind::Int64, 300).is_err());
        // every single-byte change decodes to an error or to floats, never a panic
        for i in 0..out.len() {
            let _ = bad(&|b| b[i] ^= 0x5a);
        }
    }
}

//! Deterministic vector generator for the codec's tests: a (kind, shape, rows, nulls, seed)
//! tuple always gives the same vector, so proptest explores tuples and golden tests pin
//! them.

#![allow(dead_code)]

pub mod tsbs;

use pg_columnar_codec::{ByteStrings, Values, Vector};

/// splitmix64: small, fast, deterministic everywhere.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GenKind {
    Int8,
    Int16,
    Int32,
    Int64,
    Float32,
    Float64,
    Bytes,
    Fixed,
}

pub const KINDS: [GenKind; 8] = [
    GenKind::Int8,
    GenKind::Int16,
    GenKind::Int32,
    GenKind::Int64,
    GenKind::Float32,
    GenKind::Float64,
    GenKind::Bytes,
    GenKind::Fixed,
];

/// Value shapes, each aimed at one mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Uniform over the whole domain (random bit patterns for floats).
    Random,
    /// Integers whose range needs exactly `w` bits, w from WIDTHS.
    Width(u32),
    /// One value repeated.
    Constant,
    /// A ramp with a fixed step (delta wins).
    Ramp,
    /// Exactly `d` distinct values, picked at random.
    Distinct(usize),
    /// Float specials: NaN, ±inf, -0.0, subnormals, extremes, mixed with ordinary values.
    Specials,
    /// Integer-valued random walk (TSBS metrics).
    Walk,
    /// Slowly increasing values in steps of 1/8 (floats: three decimal digits, float_int's case).
    Drift,
    /// The same walk in steps of 2^-40 (floats: no decimal scale up to 10^-18 holds them,
    /// Gorilla's case).
    FineDrift,
    /// Runs of 50..700 rows, each a ramp of its own from a random start (a stripe sorted by
    /// host, then time: a few series per vector): patched delta blocks' case.
    Runs,
    /// A random walk with about one value in 200 replaced by a random one: patched frame of
    /// reference's case.
    Outliers,
    /// Floats: a walk in hundredths across zero (real sensors' decimals), about one value in
    /// 30 a special or a value with more decimals: float_int's exceptions' case. Integers:
    /// the walk's digits.
    Decimals,
}

pub const WIDTHS: [u32; 11] = [0, 1, 7, 8, 9, 31, 32, 33, 57, 63, 64];
/// Distinct counts around the dictionary cap (512) and small ones.
pub const DISTINCTS: [usize; 7] = [1, 2, 100, 511, 512, 513, 1024];
pub const ROWS: [usize; 9] = [0, 1, 2, 7, 8, 9, 1000, 1023, 1024];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nulls {
    None,
    All,
    /// Each row null with this percent chance.
    Some(u64),
}

#[derive(Debug, Clone, Copy)]
pub struct Spec {
    pub kind: GenKind,
    pub shape: Shape,
    pub rows: usize,
    pub nulls: Nulls,
    pub seed: u64,
}

fn kind_bits(kind: GenKind) -> u32 {
    match kind {
        GenKind::Int8 => 8,
        GenKind::Int16 => 16,
        GenKind::Int32 | GenKind::Float32 => 32,
        _ => 64,
    }
}

/// `n` raw 64-bit "seeds" for the values, following the shape.
fn raw_values(spec: &Spec, n: usize, rng: &mut Rng) -> Vec<u64> {
    let bits = kind_bits(spec.kind);
    let mask = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    match spec.shape {
        Shape::Random | Shape::Specials => (0..n).map(|_| rng.next() & mask).collect(),
        Shape::Width(w) => {
            // signed values base..=base + 2^w - 1, all inside the kind's range
            let w = w.min(bits);
            let span = if w == 64 { u64::MAX } else { (1u64 << w) - 1 };
            let (lo, hi) = (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1);
            let room = (hi - span as i128 - lo) as u128; // choices for the base, minus one
            let base = lo + (rng.next() as u128 % (room + 1)) as i128;
            let at = |off: u64| (base + off as i128) as i64 as u64;
            let mut v: Vec<u64> = (0..n).map(|_| at(rng.next() & span)).collect();
            // make the range need exactly w bits when there are two or more values
            if n >= 2 && w > 0 {
                v[0] = at(0);
                v[n - 1] = at(span);
            }
            v
        }
        Shape::Constant => vec![rng.next() & mask; n],
        Shape::Ramp => {
            let start = rng.next() & mask;
            let step = rng.below(1000);
            (0..n as u64)
                .map(|i| start.wrapping_add(i * step))
                .collect()
        }
        Shape::Distinct(d) => {
            let pool: Vec<u64> = (0..d).map(|_| rng.next() & mask).collect();
            (0..n)
                .map(|i| {
                    if i < d {
                        pool[i]
                    } else {
                        pool[rng.below(d as u64) as usize]
                    }
                })
                .collect()
        }
        Shape::Drift | Shape::FineDrift => {
            let mut x = rng.below(1 << 20);
            (0..n)
                .map(|_| {
                    x += 1 + rng.below(15);
                    x
                })
                .collect()
        }
        Shape::Runs => {
            let mut v = Vec::with_capacity(n);
            while v.len() < n {
                let (start, step) = (rng.next() & mask, rng.below(1000));
                let len = (50 + rng.below(650) as usize).min(n - v.len());
                v.extend((0..len as u64).map(|i| start.wrapping_add(i * step)));
            }
            v
        }
        Shape::Outliers => {
            let mut x = rng.below(100) as i64;
            (0..n)
                .map(|_| {
                    x = (x + rng.below(5) as i64 - 2).clamp(0, 100);
                    if rng.below(200) == 0 {
                        rng.next() & mask
                    } else {
                        x as u64
                    }
                })
                .collect()
        }
        Shape::Decimals => {
            let mut x = rng.below(4000) as i64 - 2000;
            (0..n)
                .map(|_| {
                    x += rng.below(7) as i64 - 3;
                    x as u64
                })
                .collect()
        }
        Shape::Walk => {
            let mut x = rng.below(100) as i64;
            (0..n)
                .map(|_| {
                    x = (x + rng.below(5) as i64 - 2).clamp(0, 100);
                    x as u64
                })
                .collect()
        }
    }
}

const F64_SPECIALS: [f64; 10] = [
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    -0.0,
    0.0,
    f64::MIN_POSITIVE / 4.0,
    -f64::MIN_POSITIVE / 3.0,
    f64::MAX,
    f64::MIN,
    f64::EPSILON,
];

fn floats_from(spec: &Spec, raw: &[u64], rng: &mut Rng) -> Vec<f64> {
    raw.iter()
        .map(|&r| match spec.shape {
            Shape::Random => f64::from_bits(r),
            Shape::Specials => {
                if rng.chance(40) {
                    F64_SPECIALS[rng.below(F64_SPECIALS.len() as u64) as usize]
                } else {
                    (r % 2000) as f64 / 8.0 - 100.0
                }
            }
            Shape::Drift => r as f64 / 8.0,
            Shape::Decimals => {
                if rng.below(30) == 0 {
                    if rng.chance(50) {
                        F64_SPECIALS[rng.below(F64_SPECIALS.len() as u64) as usize]
                    } else {
                        r as i64 as f64 / 1000.0 + 0.0005
                    }
                } else {
                    r as i64 as f64 / 100.0
                }
            }
            Shape::FineDrift => r as f64 / (1u64 << 40) as f64,
            // integer-valued (exercises float bitpack), kept within the float's exact range
            _ => ((r as i64) >> 12) as f64,
        })
        .collect()
}

pub fn generate(spec: &Spec) -> Vector {
    let mut rng = Rng(spec.seed ^ 0xC0DEC);
    let rows = spec.rows;
    let null_flags: Vec<bool> = (0..rows)
        .map(|_| match spec.nulls {
            Nulls::None => false,
            Nulls::All => true,
            Nulls::Some(p) => rng.chance(p),
        })
        .collect();
    let n = null_flags.iter().filter(|&&x| !x).count();
    let nulls = if null_flags.iter().any(|&x| x) {
        let mut b = vec![0u8; rows.div_ceil(8)];
        for (i, &x) in null_flags.iter().enumerate() {
            if x {
                b[i / 8] |= 1 << (i % 8);
            }
        }
        Some(b)
    } else {
        None
    };
    let raw = raw_values(spec, n, &mut rng);
    let values = match spec.kind {
        GenKind::Int8 => Values::Int8(raw.iter().map(|&r| r as i8).collect()),
        GenKind::Int16 => Values::Int16(raw.iter().map(|&r| r as i16).collect()),
        GenKind::Int32 => Values::Int32(raw.iter().map(|&r| r as i32).collect()),
        GenKind::Int64 => Values::Int64(raw.iter().map(|&r| r as i64).collect()),
        GenKind::Float32 => {
            let f: Vec<f32> = if spec.shape == Shape::Random {
                raw.iter().map(|&r| f32::from_bits(r as u32)).collect()
            } else {
                floats_from(spec, &raw, &mut rng)
                    .into_iter()
                    .map(|x| x as f32)
                    .collect()
            };
            Values::Float32(f)
        }
        GenKind::Float64 => Values::Float64(floats_from(spec, &raw, &mut rng)),
        GenKind::Bytes => {
            let mut s = ByteStrings::new();
            for &r in &raw {
                s.push(&string_for(spec.shape, r));
            }
            Values::Bytes(s)
        }
        GenKind::Fixed => {
            let mut data = Vec::new();
            for &r in &raw {
                data.extend_from_slice(&r.to_le_bytes()[..6]);
                data.extend_from_slice(&[0xAB; 10]);
            }
            Values::Fixed { width: 16, data }
        }
    };
    Vector {
        rows,
        nulls,
        values,
    }
}

/// A byte string derived from a raw value: host-name-like for walks and small widths,
/// random bytes of random length otherwise, empty for zero.
fn string_for(shape: Shape, r: u64) -> Vec<u8> {
    match shape {
        Shape::Walk | Shape::Width(0..=9) => format!("host_{}", r % 1000).into_bytes(),
        Shape::Constant | Shape::Distinct(_) | Shape::Ramp => format!("value-{r:x}").into_bytes(),
        _ => {
            let len = (r % 41) as usize;
            let mut rng = Rng(r);
            (0..len).map(|_| rng.next() as u8).collect()
        }
    }
}

pub fn shapes() -> Vec<Shape> {
    let mut s = vec![
        Shape::Random,
        Shape::Constant,
        Shape::Ramp,
        Shape::Specials,
        Shape::Walk,
        Shape::Drift,
        Shape::FineDrift,
        Shape::Runs,
        Shape::Outliers,
        Shape::Decimals,
    ];
    s.extend(WIDTHS.iter().map(|&w| Shape::Width(w)));
    s.extend(DISTINCTS.iter().map(|&d| Shape::Distinct(d)));
    s
}

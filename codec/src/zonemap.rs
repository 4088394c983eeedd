//! Zone maps: the minimum and maximum of a vector's non-null values, which storage keeps so
//! scans can skip vectors that cannot match.
//!
//! Orders: integers as signed numbers (so an unsigned type stored by bit pattern, such as
//! oid, has no meaningful zone map); floats in PostgreSQL's order, where NaN is greater than
//! every other value and equal to itself and -0.0 equals 0.0; byte strings and fixed-width
//! opaque values bytewise (memcmp, shorter first on a common prefix). On ties the first
//! value seen is kept, so the result is deterministic.

use crate::vector::ValuesRef;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ZoneMap {
    /// The vector has no non-null values.
    Empty,
    Int {
        min: i64,
        max: i64,
    },
    Float {
        min: f64,
        max: f64,
    },
    /// Indices (among the non-null values) of the bytewise minimum and maximum.
    Bytes {
        min: usize,
        max: usize,
    },
}

fn int_zone(values: impl Iterator<Item = i64>) -> ZoneMap {
    let mut zone = ZoneMap::Empty;
    for v in values {
        zone = match zone {
            ZoneMap::Empty => ZoneMap::Int { min: v, max: v },
            ZoneMap::Int { min, max } => ZoneMap::Int {
                min: min.min(v),
                max: max.max(v),
            },
            _ => unreachable!(),
        };
    }
    zone
}

/// Min and max in PostgreSQL's order: over the non-NaN values with strict comparisons (so
/// the first of equal values, -0.0 and 0.0 included, is kept), then NaN as the maximum if
/// any value is NaN (and as the minimum too if every value is).
fn float_zone(values: impl Iterator<Item = f64>) -> ZoneMap {
    let (mut min, mut max, mut nan, mut any) = (f64::NAN, f64::NAN, false, false);
    for v in values {
        any = true;
        if v.is_nan() {
            nan = true;
        } else if min.is_nan() {
            (min, max) = (v, v);
        } else {
            if v < min {
                min = v;
            }
            if v > max {
                max = v;
            }
        }
    }
    match (any, nan) {
        (false, _) => ZoneMap::Empty,
        (true, true) => ZoneMap::Float { min, max: f64::NAN },
        (true, false) => ZoneMap::Float { min, max },
    }
}

fn bytes_zone<'a>(values: impl Iterator<Item = &'a [u8]>) -> ZoneMap {
    let mut best: Option<(usize, &[u8], usize, &[u8])> = None;
    for (i, v) in values.enumerate() {
        best = Some(match best {
            None => (i, v, i, v),
            Some((mi, m, xi, x)) => {
                let (mi, m) = if v < m { (i, v) } else { (mi, m) };
                let (xi, x) = if v > x { (i, v) } else { (xi, x) };
                (mi, m, xi, x)
            }
        });
    }
    match best {
        None => ZoneMap::Empty,
        Some((min, _, max, _)) => ZoneMap::Bytes { min, max },
    }
}

pub fn zone_map(values: &ValuesRef<'_>) -> ZoneMap {
    match values {
        ValuesRef::Int8(v) => int_zone(v.iter().map(|&x| x as i64)),
        ValuesRef::Int16(v) => int_zone(v.iter().map(|&x| x as i64)),
        ValuesRef::Int32(v) => int_zone(v.iter().map(|&x| x as i64)),
        ValuesRef::Int64(v) => int_zone(v.iter().copied()),
        ValuesRef::Float32(v) => float_zone(v.iter().map(|&x| x as f64)),
        ValuesRef::Float64(v) => float_zone(v.iter().copied()),
        ValuesRef::Bytes(b) => bytes_zone(b.iter()),
        ValuesRef::Fixed { width, data } => {
            if *width == 0 {
                ZoneMap::Empty
            } else {
                bytes_zone(data.chunks_exact(*width as usize))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vector::ByteStrings;

    #[test]
    fn nan_is_greatest_and_ties_keep_the_first() {
        let v = [1.0, f64::NAN, -0.0, 0.0, -5.0];
        assert!(matches!(zone_map(&ValuesRef::Float64(&v)),
            ZoneMap::Float { min, max } if min == -5.0 && max.is_nan()));
        assert!(
            matches!(zone_map(&ValuesRef::Float64(&[f64::NAN, f64::NAN])),
            ZoneMap::Float { min, max } if min.is_nan() && max.is_nan())
        );
        assert!(
            matches!(zone_map(&ValuesRef::Float64(&[f64::NAN, 2.0, 1.0])),
            ZoneMap::Float { min, max } if min == 1.0 && max.is_nan())
        );
        let z = zone_map(&ValuesRef::Float64(&[-0.0, 0.0]));
        assert!(
            matches!(z, ZoneMap::Float { min, max } if min.is_sign_negative() && max.is_sign_negative())
        );
        assert_eq!(zone_map(&ValuesRef::Int32(&[])), ZoneMap::Empty);
    }

    #[test]
    fn bytes_are_ordered_bytewise() {
        let s: ByteStrings = ["b", "ab", "", "b", "\u{ff}"].into_iter().collect();
        assert_eq!(
            zone_map(&ValuesRef::Bytes(s.as_ref())),
            ZoneMap::Bytes { min: 2, max: 4 }
        );
    }
}

/// A comparison `value_in_vector <op> constant`, as a zone map is asked about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Cmp {
    Lt,
    Le,
    Eq,
    Ge,
    Gt,
    Ne,
}

impl Cmp {
    pub fn holds<T: Ord + ?Sized>(self, a: &T, b: &T) -> bool {
        match self {
            Cmp::Lt => a < b,
            Cmp::Le => a <= b,
            Cmp::Eq => a == b,
            Cmp::Ge => a >= b,
            Cmp::Gt => a > b,
            Cmp::Ne => a != b,
        }
    }
}

/// Whether a vector whose stored byte-string zone map is (`min`, `max`, `max_truncated`)
/// may hold a value `v` with `v <cmp> constant`, bytewise (memcmp order, a prefix first).
/// `false` is a proof that no value does; `true` promises nothing.
///
/// What a stored zone guarantees of every value `v` (see `stripe`, "Byte-string zone
/// maps"): `min <= v` (a shortened minimum is a prefix of the true one), and `v <= max`
/// when the maximum is whole, or else only `prefix(v) <= max` where `prefix` keeps
/// [`crate::stripe::ZONE_BYTES`] bytes (the stored maximum is the true maximum's prefix,
/// and taking a prefix keeps order).
pub fn bytes_may_satisfy(
    min: &[u8],
    max: &[u8],
    max_truncated: bool,
    cmp: Cmp,
    constant: &[u8],
) -> bool {
    let prefix = &constant[..constant.len().min(crate::stripe::ZONE_BYTES)];
    // some v <= max could be >= constant (a truncated max: prefix(v) <= max, and v >= c
    // implies prefix(v) >= prefix(c))
    let above_possible = |strict: bool| match (max_truncated, strict) {
        (false, true) => max > constant,
        (false, false) => max >= constant,
        (true, _) => max >= prefix,
    };
    match cmp {
        Cmp::Lt => min < constant,
        Cmp::Le => min <= constant,
        Cmp::Gt => above_possible(true),
        Cmp::Ge => above_possible(false),
        Cmp::Eq => min <= constant && above_possible(false),
        // every value equals the constant only if min and max do and max is whole
        Cmp::Ne => max_truncated || min != constant || max != constant,
    }
}

#[cfg(test)]
mod pruning_tests {
    use super::*;
    use crate::stripe::ZONE_BYTES;

    /// The stored zone of a set of values, as the stripe writer stores it.
    fn stored(values: &[Vec<u8>]) -> (Vec<u8>, Vec<u8>, bool) {
        let min = values.iter().min().unwrap();
        let max = values.iter().max().unwrap();
        (
            min[..min.len().min(ZONE_BYTES)].to_vec(),
            max[..max.len().min(ZONE_BYTES)].to_vec(),
            max.len() > ZONE_BYTES,
        )
    }

    /// Reference: a zone may answer `false` only when no value satisfies the comparison;
    /// and it must answer `false` in the cases the rule is meant to prune, so the test also
    /// counts both answers.
    #[test]
    fn byte_zone_never_prunes_a_matching_vector() {
        let alphabet: [&[u8]; 6] = [b"", b"a", b"ab", b"b", b"\xff", b"\x00"];
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let word = |n: &mut dyn FnMut() -> u64| -> Vec<u8> {
            let parts = (n() % 40) as usize;
            let mut w = Vec::new();
            for _ in 0..parts {
                w.extend_from_slice(alphabet[(n() % alphabet.len() as u64) as usize]);
            }
            w
        };
        let (mut pruned, mut kept) = (0, 0);
        for _ in 0..20_000 {
            let values: Vec<Vec<u8>> = (0..1 + next() % 4).map(|_| word(&mut next)).collect();
            let constant = if next() % 3 == 0 {
                values[(next() % values.len() as u64) as usize].clone()
            } else {
                word(&mut next)
            };
            let (min, max, truncated) = stored(&values);
            for cmp in [Cmp::Lt, Cmp::Le, Cmp::Eq, Cmp::Ge, Cmp::Gt, Cmp::Ne] {
                let any = values
                    .iter()
                    .any(|v| cmp.holds(v.as_slice(), constant.as_slice()));
                let may = bytes_may_satisfy(&min, &max, truncated, cmp, &constant);
                assert!(may || !any, "{cmp:?} {constant:?} pruned {values:?}");
                if may {
                    kept += 1
                } else {
                    pruned += 1
                }
            }
        }
        assert!(
            pruned > 10_000 && kept > 10_000,
            "pruned {pruned}, kept {kept}"
        );
    }

    #[test]
    fn byte_zone_edges() {
        // a whole maximum bounds exactly; a truncated one only by its prefix
        assert!(!bytes_may_satisfy(b"a", b"b", false, Cmp::Gt, b"b"));
        assert!(bytes_may_satisfy(b"a", b"b", true, Cmp::Gt, b"b"));
        let long = vec![b'x'; ZONE_BYTES + 5];
        assert!(bytes_may_satisfy(
            b"a",
            &long[..ZONE_BYTES],
            true,
            Cmp::Eq,
            &long
        ));
        assert!(!bytes_may_satisfy(b"a", b"a", false, Cmp::Ne, b"a"));
        assert!(bytes_may_satisfy(b"a", b"a", true, Cmp::Ne, b"a"));
        assert!(!bytes_may_satisfy(b"b", b"c", false, Cmp::Lt, b"b"));
        assert!(bytes_may_satisfy(b"", b"", false, Cmp::Le, b""));
    }
}

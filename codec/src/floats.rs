//! Floats that are exact integers: TSBS-style metrics are integers stored in float8, and
//! storing them as integers is where most of their size is won. A float qualifies when
//! converting it to i64 and back gives the same bit pattern: so -0.0, NaN, infinities,
//! fractions and magnitudes of 2^63 and beyond never qualify, and the round trip is exact.

use crate::error::{DecodeError, DecodeResult};
use crate::vector::{Kind, Values};

/// 2^63 as f64 (exactly representable).
const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;

#[inline]
pub fn f64_to_exact_int(x: f64) -> Option<i64> {
    // the range test is false for NaN, so NaN falls out here
    if (-TWO_POW_63..TWO_POW_63).contains(&x) {
        let i = x as i64;
        if (i as f64).to_bits() == x.to_bits() {
            return Some(i);
        }
    }
    None
}

#[inline]
pub fn f32_to_exact_int(x: f32) -> Option<i64> {
    if (-(TWO_POW_63 as f32)..TWO_POW_63 as f32).contains(&x) {
        let i = x as i64;
        if (i as f32).to_bits() == x.to_bits() {
            return Some(i);
        }
    }
    None
}

/// The values as integers, if every one is an exact integer. Branch-free per value (the
/// same test as [`f64_to_exact_int`]: `as` saturates, so the range test keeps 2^63, which
/// would round-trip through i64::MAX, out) so the loop vectorises.
pub fn f64s_as_integers(values: &[f64]) -> Option<Vec<i64>> {
    let mut exact = true;
    let out = values
        .iter()
        .map(|&x| {
            let i = x as i64;
            exact &= (x < TWO_POW_63) & ((i as f64).to_bits() == x.to_bits());
            i
        })
        .collect();
    exact.then_some(out)
}

pub fn f32s_as_integers(values: &[f32]) -> Option<Vec<i64>> {
    let mut exact = true;
    let out = values
        .iter()
        .map(|&x| {
            let i = x as i64;
            exact &= (x < TWO_POW_63 as f32) & ((i as f32).to_bits() == x.to_bits());
            i
        })
        .collect();
    exact.then_some(out)
}

/// Whether every integer is one that a float of `kind` maps to (see [`f64_to_exact_int`]):
/// the inverse conversion is then exact. Stored integers that fail (a corrupted block) are
/// refused rather than rounded. Branch-free per value, so the loop vectorises: `i as f64`
/// rounds, and the round trip gives `i` back exactly when nothing was rounded (2^63, what
/// i64::MAX rounds to, is outside the range).
pub fn integers_are_floats(kind: Kind, ints: &[i64]) -> DecodeResult<()> {
    // every integer in [-2^53, 2^53) (float8) or [-2^24, 2^24) (float4) is a float exactly:
    // the common case, decided without converting anything
    if crate::all_within_bits(ints, if kind == Kind::Float64 { 53 } else { 24 }) {
        return Ok(());
    }
    let exact = match kind {
        Kind::Float64 => ints.iter().fold(true, |ok, &i| {
            let x = i as f64;
            ok & (x < TWO_POW_63) & (x as i64 == i)
        }),
        Kind::Float32 => ints.iter().fold(true, |ok, &i| {
            let x = i as f32;
            ok & (x < TWO_POW_63 as f32) & (x as i64 == i)
        }),
        _ => unreachable!("float kinds only"),
    };
    if exact {
        Ok(())
    } else {
        Err(DecodeError::Inconsistent {
            what: "integer-valued float out of exact range",
        })
    }
}

/// The floats of `kind` that `ints` stand for; they must have passed [`integers_are_floats`].
pub fn integers_to_floats(kind: Kind, ints: &[i64]) -> Values {
    match kind {
        Kind::Float64 => Values::Float64(ints.iter().map(|&i| i as f64).collect()),
        Kind::Float32 => Values::Float32(ints.iter().map(|&i| i as f32).collect()),
        _ => unreachable!("float kinds only"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_exact_integers_qualify() {
        assert_eq!(f64_to_exact_int(3.0), Some(3));
        assert_eq!(f64_to_exact_int(-3.0), Some(-3));
        assert_eq!(f64_to_exact_int(0.0), Some(0));
        assert_eq!(f64_to_exact_int(-0.0), None);
        assert_eq!(f64_to_exact_int(f64::NAN), None);
        assert_eq!(f64_to_exact_int(f64::INFINITY), None);
        assert_eq!(f64_to_exact_int(0.5), None);
        assert_eq!(f64_to_exact_int(-TWO_POW_63), Some(i64::MIN));
        assert_eq!(f64_to_exact_int(TWO_POW_63), None);
        assert_eq!(f64_to_exact_int(f64::MIN_POSITIVE / 2.0), None); // subnormal
        assert_eq!(f32_to_exact_int(-0.0), None);
        assert_eq!(f32_to_exact_int(16_777_217.0), Some(16_777_216)); // rounds when parsed
        assert_eq!(f32_to_exact_int(1e30), None);
        // the slice versions agree with the scalar ones, 2^63 and -2^63 included
        let probes = [
            3.0,
            -0.0,
            f64::NAN,
            -TWO_POW_63,
            TWO_POW_63,
            0.5,
            f64::INFINITY,
            -1e300,
        ];
        for x in probes {
            assert_eq!(
                f64s_as_integers(&[x]),
                f64_to_exact_int(x).map(|i| vec![i]),
                "{x}"
            );
            let y = x as f32;
            assert_eq!(
                f32s_as_integers(&[y]),
                f32_to_exact_int(y).map(|i| vec![i]),
                "{y}"
            );
        }
    }

    #[test]
    fn range_test_edges() {
        for bits in [0u32, 24, 31, 53, 62] {
            let lo = -(1i64 << bits);
            let hi = (1i64 << bits) - 1;
            assert!(crate::all_within_bits(&[lo, hi, 0], bits), "{bits}");
            assert!(!crate::all_within_bits(&[0, hi + 1], bits), "{bits}");
            assert!(!crate::all_within_bits(&[lo - 1, 0], bits), "{bits}");
            assert!(
                !crate::all_within_bits(&[i64::MIN], bits)
                    && !crate::all_within_bits(&[i64::MAX], bits)
            );
        }
        assert!(crate::all_within_bits(&[], 0));
    }

    #[test]
    fn corrupt_integers_are_refused() {
        // 2^53 + 1 is not exactly a float8
        assert!(integers_are_floats(Kind::Float64, &[(1 << 53) + 1]).is_err());
        assert!(integers_are_floats(Kind::Float64, &[1 << 53, -(1 << 53), i64::MIN]).is_ok());
        assert!(integers_are_floats(Kind::Float64, &[i64::MAX]).is_err());
        assert!(integers_are_floats(Kind::Float32, &[(1 << 24) + 1]).is_err());
        assert!(integers_are_floats(Kind::Float32, &[1 << 24, i64::MIN]).is_ok());
        // the branch-free test agrees with the scalar conversion on every edge
        for i in [
            0,
            1,
            -1,
            (1 << 53) + 1,
            1 << 62,
            i64::MAX,
            i64::MIN,
            i64::MAX - 511,
            i64::MAX - 512,
            i64::MAX - 1024,
        ] {
            let want = f64_to_exact_int(i as f64) == Some(i);
            assert_eq!(
                integers_are_floats(Kind::Float64, &[i]).is_ok(),
                want,
                "{i}"
            );
            let want = f32_to_exact_int(i as f32) == Some(i);
            assert_eq!(
                integers_are_floats(Kind::Float32, &[i]).is_ok(),
                want,
                "{i}"
            );
        }
    }
}

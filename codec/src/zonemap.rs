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
    Int { min: i64, max: i64 },
    Float { min: f64, max: f64 },
    /// Indices (among the non-null values) of the bytewise minimum and maximum.
    Bytes { min: usize, max: usize },
}

fn int_zone(values: impl Iterator<Item = i64>) -> ZoneMap {
    let mut zone = ZoneMap::Empty;
    for v in values {
        zone = match zone {
            ZoneMap::Empty => ZoneMap::Int { min: v, max: v },
            ZoneMap::Int { min, max } => ZoneMap::Int { min: min.min(v), max: max.max(v) },
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
        assert!(matches!(zone_map(&ValuesRef::Float64(&[f64::NAN, f64::NAN])),
            ZoneMap::Float { min, max } if min.is_nan() && max.is_nan()));
        assert!(matches!(zone_map(&ValuesRef::Float64(&[f64::NAN, 2.0, 1.0])),
            ZoneMap::Float { min, max } if min == 1.0 && max.is_nan()));
        let z = zone_map(&ValuesRef::Float64(&[-0.0, 0.0]));
        assert!(matches!(z, ZoneMap::Float { min, max } if min.is_sign_negative() && max.is_sign_negative()));
        assert_eq!(zone_map(&ValuesRef::Int32(&[])), ZoneMap::Empty);
    }

    #[test]
    fn bytes_are_ordered_bytewise() {
        let s: ByteStrings = ["b", "ab", "", "b", "\u{ff}"].into_iter().collect();
        assert_eq!(zone_map(&ValuesRef::Bytes(s.as_ref())), ZoneMap::Bytes { min: 2, max: 4 });
    }
}

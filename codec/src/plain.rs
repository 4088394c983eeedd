//! The *plain* encoding: values as they are. The fallback when nothing is smaller, and the
//! fastest to decode.
//!
//! * integers and floats: each value little-endian at its own width (floats as their IEEE
//!   754 bit pattern);
//! * byte strings: a packed-integer block (see `bitpack`) of the lengths, then the bytes of
//!   every value, concatenated;
//! * fixed-width opaque values: the values' bytes, concatenated.

use crate::bitpack;
use crate::bits::ByteReader;
use crate::error::{DecodeError, DecodeResult};
use crate::vector::{ByteStrings, BytesRef, Kind, Values, ValuesRef};

/// The "raw" size of values, the baseline the chooser's savings are measured against:
/// `count * width` for fixed-width kinds, `4 * count + total length` for byte strings
/// (as if each had a 4-byte length word).
pub fn raw_len(values: &ValuesRef<'_>) -> usize {
    match values {
        ValuesRef::Bytes(b) => 4 * b.len() + (b.offsets[b.len()] - b.offsets[0]),
        ValuesRef::Fixed { data, .. } => data.len(),
        v => v.len() * v.kind().lane_bytes().expect("fixed-width kind"),
    }
}

/// Lengths of byte strings as the integers a packed block holds.
pub fn lengths(b: &BytesRef<'_>) -> Vec<i64> {
    b.offsets.windows(2).map(|w| (w[1] - w[0]) as i64).collect()
}

pub fn encoded_len(values: &ValuesRef<'_>) -> usize {
    match values {
        ValuesRef::Bytes(b) => {
            bitpack::plan(&lengths(b)).encoded_len() + (b.offsets[b.len()] - b.offsets[0])
        }
        v => raw_len(v),
    }
}

pub fn encode(values: &ValuesRef<'_>, out: &mut Vec<u8>) {
    match values {
        ValuesRef::Int8(v) => out.extend(v.iter().map(|x| *x as u8)),
        ValuesRef::Int16(v) => v
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        ValuesRef::Int32(v) => v
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        ValuesRef::Int64(v) => v
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        ValuesRef::Float32(v) => v
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_bits().to_le_bytes())),
        ValuesRef::Float64(v) => v
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_bits().to_le_bytes())),
        ValuesRef::Bytes(b) => {
            bitpack::encode_block(&lengths(b), out);
            out.extend_from_slice(&b.data[b.offsets[0]..b.offsets[b.len()]]);
        }
        ValuesRef::Fixed { data, .. } => out.extend_from_slice(data),
    }
}

/// Reads `count` byte strings written as a length block followed by the bytes.
pub fn read_strings(r: &mut ByteReader<'_>, count: usize) -> DecodeResult<ByteStrings> {
    let mut lens = Vec::with_capacity(count);
    bitpack::read_block(r, count, &mut lens)?;
    let total = checked_total(r, &lens)?;
    let mut offsets = Vec::with_capacity(count + 1);
    offsets.push(0usize);
    let mut at = 0usize;
    for &l in &lens {
        at += l as usize;
        offsets.push(at);
    }
    let data = r.take(total, "string bytes")?.to_vec();
    Ok(ByteStrings { offsets, data })
}

/// The bytes of string `index` of `count` stored as [`read_strings`] reads them (the lengths
/// read into `scratch`, and checked as there).
pub fn string_at<'a>(
    r: &mut ByteReader<'a>,
    count: usize,
    index: usize,
    scratch: &mut Vec<i64>,
) -> DecodeResult<&'a [u8]> {
    if index >= count {
        return Err(DecodeError::OutOfRange {
            what: "string of a block",
            value: index as u64,
            limit: count.saturating_sub(1) as u64,
        });
    }
    scratch.clear();
    bitpack::read_block(r, count, scratch)?;
    let total = checked_total(r, scratch)?;
    let data = r.take(total, "string bytes")?;
    let start: usize = scratch[..index].iter().map(|&l| l as usize).sum();
    Ok(&data[start..start + scratch[index] as usize])
}

/// The sum of string lengths `lens`, each non-negative and all together no more than the
/// bytes left in `r`.
fn checked_total(r: &ByteReader<'_>, lens: &[i64]) -> DecodeResult<usize> {
    let mut total: u64 = 0;
    for &l in lens {
        if l < 0 || l as u64 > r.remaining() as u64 {
            return Err(DecodeError::OutOfRange {
                what: "string length",
                value: l as u64,
                limit: r.remaining() as u64,
            });
        }
        total += l as u64;
        if total > r.remaining() as u64 {
            return Err(DecodeError::Truncated {
                what: "string bytes",
                needed: total as usize,
                available: r.remaining(),
            });
        }
    }
    Ok(total as usize)
}

/// Reads `count` plain values of `kind` (`fixed_width` for [`Kind::Fixed`]).
pub fn decode(
    r: &mut ByteReader<'_>,
    kind: Kind,
    fixed_width: u16,
    count: usize,
) -> DecodeResult<Values> {
    macro_rules! lanes {
        ($t:ty, $n:expr, $what:expr) => {{
            let bytes = r.take(count * $n, $what)?;
            bytes
                .chunks_exact($n)
                .map(|c| <$t>::from_le_bytes(c.try_into().unwrap()))
                .collect()
        }};
    }
    Ok(match kind {
        Kind::Int8 => Values::Int8(
            r.take(count, "plain int8 values")?
                .iter()
                .map(|&b| b as i8)
                .collect(),
        ),
        Kind::Int16 => Values::Int16(lanes!(i16, 2, "plain int16 values")),
        Kind::Int32 => Values::Int32(lanes!(i32, 4, "plain int32 values")),
        Kind::Int64 => Values::Int64(lanes!(i64, 8, "plain int64 values")),
        Kind::Float32 => {
            let bits: Vec<u32> = lanes!(u32, 4, "plain float4 values");
            Values::Float32(bits.into_iter().map(f32::from_bits).collect())
        }
        Kind::Float64 => {
            let bits: Vec<u64> = lanes!(u64, 8, "plain float8 values");
            Values::Float64(bits.into_iter().map(f64::from_bits).collect())
        }
        Kind::Bytes => Values::Bytes(read_strings(r, count)?),
        Kind::Fixed => Values::Fixed {
            width: fixed_width,
            data: r
                .take(count * fixed_width as usize, "plain fixed-width values")?
                .to_vec(),
        },
    })
}

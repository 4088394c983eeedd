//! Bitpacking of 64-bit integers: the *bitpack* encoding's payload, and the packed-integer
//! block that the other encodings reuse (dictionary codes and entries, string lengths).
//!
//! A block holds `n` integers (n known from context) as one of two variants, whichever is
//! smaller (ties go to frame of reference):
//!
//! * frame of reference: `mode=0, width, reference: i64`, then `v[i] - reference` packed;
//! * delta: `mode=1, width, first: i64, min_delta: i64`, then for i in 1..n
//!   `(v[i] - v[i-1]) - min_delta` packed.
//!
//! All arithmetic wraps modulo 2^64, so every i64 sequence round-trips exactly, width 64
//! included. Packed fields are LSB-first (see `bits`); the field area is
//! `ceil(count * width / 8)` bytes.

use crate::bits::{bit_width, low_mask, packed_len, read_field, BitWriter, ByteReader};
use crate::error::{DecodeError, DecodeResult};

/// The variant of a packed-integer block; the byte values are part of the format.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockMode {
    FrameOfReference = 0,
    Delta = 1,
}

/// What a block will be written as, computed from the values without writing anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockPlan {
    pub mode: BlockMode,
    pub width: u32,
    /// Frame of reference: the minimum. Delta: the first value.
    pub base: i64,
    /// Delta only: the smallest delta.
    pub min_delta: i64,
    /// Number of integers in the block.
    pub count: usize,
}

impl BlockPlan {
    /// Encoded size in bytes, header included.
    pub fn encoded_len(&self) -> usize {
        match self.mode {
            BlockMode::FrameOfReference => 10 + packed_len(self.count, self.width),
            BlockMode::Delta => 18 + packed_len(self.count.saturating_sub(1), self.width),
        }
    }
}

/// Frame-of-reference plan: minimum and width of `max - min`.
pub fn plan_for(values: &[i64]) -> BlockPlan {
    let (mut min, mut max) = (i64::MAX, i64::MIN);
    for &v in values {
        min = min.min(v);
        max = max.max(v);
    }
    if values.is_empty() {
        (min, max) = (0, 0);
    }
    let range = max.wrapping_sub(min) as u64; // max >= min, so this is the true range
    BlockPlan {
        mode: BlockMode::FrameOfReference,
        width: bit_width(range),
        base: min,
        min_delta: 0,
        count: values.len(),
    }
}

/// Delta plan: first value, minimum delta and width of `max_delta - min_delta`.
pub fn plan_delta(values: &[i64]) -> BlockPlan {
    let (mut min_d, mut max_d) = (i64::MAX, i64::MIN);
    for w in values.windows(2) {
        let d = w[1].wrapping_sub(w[0]);
        min_d = min_d.min(d);
        max_d = max_d.max(d);
    }
    if values.len() < 2 {
        (min_d, max_d) = (0, 0);
    }
    BlockPlan {
        mode: BlockMode::Delta,
        width: bit_width(max_d.wrapping_sub(min_d) as u64),
        base: values.first().copied().unwrap_or(0),
        min_delta: min_d,
        count: values.len(),
    }
}

/// The smaller of the two variants; frame of reference on a tie.
pub fn plan(values: &[i64]) -> BlockPlan {
    let f = plan_for(values);
    let d = plan_delta(values);
    if d.encoded_len() < f.encoded_len() {
        d
    } else {
        f
    }
}

/// Appends `values` as a block of the smaller variant and returns its plan.
pub fn encode_block(values: &[i64], out: &mut Vec<u8>) -> BlockPlan {
    let p = plan(values);
    write_planned(values, &p, out);
    p
}

/// Appends the block described by `plan` (which must come from these `values`).
pub fn write_planned(values: &[i64], plan: &BlockPlan, out: &mut Vec<u8>) {
    debug_assert_eq!(values.len(), plan.count);
    out.push(plan.mode as u8);
    out.push(plan.width as u8);
    out.extend_from_slice(&plan.base.to_le_bytes());
    match plan.mode {
        BlockMode::FrameOfReference => {
            let base = plan.base;
            pack(values.iter().map(|&v| v.wrapping_sub(base) as u64), plan.width, out);
        }
        BlockMode::Delta => {
            out.extend_from_slice(&plan.min_delta.to_le_bytes());
            let md = plan.min_delta;
            pack(
                values.windows(2).map(|w| w[1].wrapping_sub(w[0]).wrapping_sub(md) as u64),
                plan.width,
                out,
            );
        }
    }
}

/// Packs each value's low `width` bits (the values must fit).
pub fn pack(values: impl Iterator<Item = u64>, width: u32, out: &mut Vec<u8>) {
    let mut w = BitWriter::new(out);
    for v in values {
        w.write(v, width);
    }
    w.finish();
}

/// Reads one block of `count` integers, appending them to `out`.
pub fn read_block(r: &mut ByteReader<'_>, count: usize, out: &mut Vec<i64>) -> DecodeResult<()> {
    let mode = r.u8("bitpack block mode")?;
    let width = r.u8("bitpack block width")? as u32;
    if width > 64 {
        return Err(DecodeError::OutOfRange { what: "bitpack width", value: width as u64, limit: 64 });
    }
    let base = r.u64("bitpack block base")? as i64;
    match mode {
        m if m == BlockMode::FrameOfReference as u8 => {
            let data = r.take(packed_len(count, width), "bitpack fields")?;
            let start = out.len();
            out.resize(start + count, 0);
            unpack(data, width, &mut out[start..]);
            for v in &mut out[start..] {
                *v = v.wrapping_add(base);
            }
        }
        m if m == BlockMode::Delta as u8 => {
            let min_delta = r.u64("bitpack block min_delta")? as i64;
            let fields = count.saturating_sub(1);
            let data = r.take(packed_len(fields, width), "bitpack fields")?;
            if count == 0 {
                return Ok(());
            }
            let start = out.len();
            out.resize(start + count, 0);
            let dst = &mut out[start..];
            dst[0] = base;
            unpack(data, width, &mut dst[1..]);
            let mut prev = base;
            for v in &mut dst[1..] {
                prev = prev.wrapping_add(min_delta).wrapping_add(*v);
                *v = prev;
            }
        }
        value => return Err(DecodeError::UnknownTag { what: "bitpack block mode", value }),
    }
    Ok(())
}

/// Unpacks `out.len()` fields of `width` bits from `data` (which holds at least
/// `packed_len(out.len(), width)` bytes) into `out` as non-negative integers.
pub fn unpack(data: &[u8], width: u32, out: &mut [i64]) {
    debug_assert!(data.len() >= packed_len(out.len(), width));
    if width == 0 {
        out.fill(0);
        return;
    }
    let mask = low_mask(width);
    // Fast path: one unaligned 8-byte little-endian load per field while 8 bytes remain;
    // a field of up to 57 bits starting at any bit offset (0..=7) fits in one load.
    let n = out.len();
    let mut i = 0;
    if width <= 57 {
        let w = width as usize;
        while i < n {
            let pos = i * w;
            let byte = pos / 8;
            if byte + 8 > data.len() {
                break;
            }
            let word = u64::from_le_bytes(data[byte..byte + 8].try_into().unwrap());
            out[i] = ((word >> (pos % 8)) & mask) as i64;
            i += 1;
        }
    }
    while i < n {
        out[i] = read_field(data, i * width as usize, width) as i64;
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(values: &[i64]) -> BlockPlan {
        let mut out = Vec::new();
        let p = encode_block(values, &mut out);
        assert_eq!(out.len(), p.encoded_len());
        let mut r = ByteReader::new(&out);
        let mut back = Vec::new();
        read_block(&mut r, values.len(), &mut back).unwrap();
        r.finish().unwrap();
        assert_eq!(back, values);
        p
    }

    #[test]
    fn extremes_round_trip_at_width_64() {
        let p = roundtrip(&[i64::MIN, i64::MAX, 0, -1, 1]);
        assert_eq!(p.width, 64);
        roundtrip(&[]);
        roundtrip(&[42]);
        assert_eq!(roundtrip(&[7; 1024]).width, 0);
    }

    #[test]
    fn delta_wins_on_a_ramp() {
        let ramp: Vec<i64> = (0..1024).map(|i| 1_000_000 + 10 * i).collect();
        let p = roundtrip(&ramp);
        assert_eq!(p.mode, BlockMode::Delta);
        assert_eq!(p.width, 0);
    }
}

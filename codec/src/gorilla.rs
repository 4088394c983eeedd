//! The *Gorilla* encoding for float4/float8 (Pelkonen et al., VLDB 2015): each value is
//! XORed with the previous one and only the meaningful bits of the XOR are kept.
//!
//! Payload: one LSB-first bit stream (see `bits`), `W` = 32 (float4) or 64 (float8),
//! `L` = 5 (float4) or 6 (float8):
//! * the first value's bit pattern, `W` bits;
//! * for each further value, with `x` = its bits XOR the previous value's bits:
//!   - `x == 0`: one bit `0`;
//!   - `x` fits the current window (there is one, `lz(x) >= window_lz` and
//!     `tz(x) >= window_tz`): bits `1`,`0`, then `x >> window_tz` in
//!     `W - window_lz - window_tz` bits;
//!   - otherwise: bits `1`,`1`, `lz(x)` in `L` bits, `m - 1` in `L` bits where
//!     `m = W - lz(x) - tz(x)`, then `x >> tz(x)` in `m` bits; the window becomes
//!     `(lz(x), tz(x))`.
//!
//! `lz`/`tz` count leading/trailing zero bits within `W` bits; `x == 0` is its own case, so
//! the counts are only taken of non-zero values (where they are at most `W - 1`). The stream
//! is zero-padded to a whole byte and ends the vector.

use crate::bits::{low_mask, BitReader, BitWriter};
use crate::error::{DecodeError, DecodeResult};

/// Where encoded bits go: the real writer, or a counter used to size the output exactly.
trait BitSink {
    fn put(&mut self, value: u64, width: u32);
    /// Whether encoding may stop (the counter passed its limit); never for the writer.
    fn exceeded(&self) -> bool;
}

impl BitSink for BitWriter<'_> {
    #[inline(always)]
    fn put(&mut self, value: u64, width: u32) {
        self.write(value, width)
    }

    #[inline(always)]
    fn exceeded(&self) -> bool {
        false
    }
}

/// Counts bits, and gives up once more than `limit` bits are counted.
struct BitCounter {
    bits: u64,
    limit: u64,
}

impl BitSink for BitCounter {
    #[inline(always)]
    fn put(&mut self, _value: u64, width: u32) {
        self.bits += width as u64;
    }

    #[inline(always)]
    fn exceeded(&self) -> bool {
        self.bits > self.limit
    }
}

/// Encodes `lanes` (bit patterns of `lane_bits`-bit floats, zero-extended) into `sink`.
#[inline(always)]
fn run<S: BitSink>(lanes: &[u64], lane_bits: u32, sink: &mut S) {
    let Some((&first, rest)) = lanes.split_first() else {
        return;
    };
    let len_bits = if lane_bits == 64 { 6 } else { 5 };
    let unused = 64 - lane_bits; // leading bits of a u64 lane outside the float
    sink.put(first, lane_bits);
    let mut prev = first;
    // No window yet: an impossible window that no x fits.
    let (mut wlz, mut wtz) = (u32::MAX, u32::MAX);
    for &cur in rest {
        if sink.exceeded() {
            return;
        }
        let x = cur ^ prev;
        prev = cur;
        if x == 0 {
            sink.put(0, 1);
            continue;
        }
        let lz = x.leading_zeros() - unused;
        let tz = x.trailing_zeros();
        if wlz != u32::MAX && lz >= wlz && tz >= wtz {
            sink.put(0b01, 2);
            sink.put(x >> wtz, lane_bits - wlz - wtz);
        } else {
            let m = lane_bits - lz - tz;
            let header = 0b11 | (lz as u64) << 2 | ((m - 1) as u64) << (2 + len_bits);
            sink.put(header, 2 + 2 * len_bits);
            sink.put(x >> tz, m);
            wlz = lz;
            wtz = tz;
        }
    }
}

/// Exact payload size in bytes.
pub fn encoded_len(lanes: &[u64], lane_bits: u32) -> usize {
    encoded_len_within(lanes, lane_bits, usize::MAX).expect("no limit")
}

/// Exact payload size in bytes if it is at most `limit`; `None` as soon as the bits counted
/// so far already need more than `limit` bytes (the rest is not looked at).
pub fn encoded_len_within(lanes: &[u64], lane_bits: u32, limit: usize) -> Option<usize> {
    let limit_bits = (limit as u64).saturating_mul(8);
    let mut c = BitCounter {
        bits: 0,
        limit: limit_bits,
    };
    run(lanes, lane_bits, &mut c);
    (!c.exceeded()).then_some(c.bits.div_ceil(8) as usize)
}

pub fn encode(lanes: &[u64], lane_bits: u32, out: &mut Vec<u8>) {
    let mut w = BitWriter::new(out);
    run(lanes, lane_bits, &mut w);
    w.finish();
}

/// Decodes `count` lanes from `data`, which must be exactly the payload.
///
/// Each record is at most `2 + 2L + W` bits (78 for float8). While at least 16 bytes remain
/// past the record's first byte, one 16-byte load holds the whole record (121 bits from any
/// bit offset) and it is parsed from that word; near the end, fields are read one at a time
/// with bounds checks. Both paths apply the same rules.
pub fn decode(data: &[u8], count: usize, lane_bits: u32) -> DecodeResult<Vec<u64>> {
    decode_first(data, count, count, lane_bits)
}

/// The first `take` (at most `count`) of the `count` lanes [`decode`] reads from `data`:
/// records are read up to the last one taken, the rest of the stream is not looked at.
pub fn decode_first(
    data: &[u8],
    count: usize,
    take: usize,
    lane_bits: u32,
) -> DecodeResult<Vec<u64>> {
    debug_assert!(take <= count);
    if take == 0 {
        return if count > 0 || data.is_empty() {
            Ok(Vec::new())
        } else {
            Err(DecodeError::TrailingBytes { count: data.len() })
        };
    }
    let len_bits = if lane_bits == 64 { 6 } else { 5 };
    let len_mask = (1u64 << len_bits) - 1;
    let mut r = BitReader::new(data);
    let mut prev = r.read_checked(lane_bits, "gorilla first value")?;
    // written in place (no capacity check a value, as a push has)
    let mut out = vec![0u64; take];
    out[0] = prev;
    let mut pos = r.bit_position();
    let (mut wlz, mut wtz) = (u32::MAX, u32::MAX);
    for slot in out[1..].iter_mut() {
        let byte = pos / 8;
        let x = if let Some(chunk) = data.get(byte..byte + 16) {
            let word = u128::from_le_bytes(chunk.try_into().unwrap()) >> (pos % 8);
            if word & 1 == 0 {
                pos += 1;
                0
            } else if word & 2 == 0 {
                if wlz == u32::MAX {
                    return Err(DecodeError::Inconsistent {
                        what: "gorilla window reused before one was set",
                    });
                }
                let m = lane_bits - wlz - wtz;
                pos += 2 + m as usize;
                ((word >> 2) as u64 & low_mask(m)) << wtz
            } else {
                let lz = ((word >> 2) as u64 & len_mask) as u32;
                let m = ((word >> (2 + len_bits)) as u64 & len_mask) as u32 + 1;
                if lz + m > lane_bits {
                    return Err(DecodeError::OutOfRange {
                        what: "gorilla window",
                        value: (lz + m) as u64,
                        limit: lane_bits as u64,
                    });
                }
                wlz = lz;
                wtz = lane_bits - lz - m;
                pos += (2 + 2 * len_bits + m) as usize;
                ((word >> (2 + 2 * len_bits)) as u64 & low_mask(m)) << wtz
            }
        } else {
            let mut r = BitReader::at(data, pos);
            let x = read_record_checked(&mut r, lane_bits, len_bits, &mut wlz, &mut wtz)?;
            pos = r.bit_position();
            x
        };
        // `pos` stays within `data` without a check here: a record read from the 16 bytes at
        // `byte` ends inside them (at most 7 + 2 + 2·6 + 64 = 85 of their 128 bits), and the
        // checked reader refuses to read past the end
        prev ^= x;
        *slot = prev;
    }
    let used = pos.div_ceil(8);
    if take == count && used != data.len() {
        return Err(DecodeError::TrailingBytes {
            count: data.len() - used,
        });
    }
    Ok(out)
}

/// One record read field by field with bounds checks (the end of the stream).
fn read_record_checked(
    r: &mut BitReader<'_>,
    lane_bits: u32,
    len_bits: u32,
    wlz: &mut u32,
    wtz: &mut u32,
) -> DecodeResult<u64> {
    if r.read_checked(1, "gorilla control bit")? == 0 {
        return Ok(0);
    }
    if r.read_checked(1, "gorilla control bit")? == 0 {
        if *wlz == u32::MAX {
            return Err(DecodeError::Inconsistent {
                what: "gorilla window reused before one was set",
            });
        }
        return Ok(r.read_checked(lane_bits - *wlz - *wtz, "gorilla meaningful bits")? << *wtz);
    }
    let lz = r.read_checked(len_bits, "gorilla leading zeros")? as u32;
    let m = r.read_checked(len_bits, "gorilla meaningful length")? as u32 + 1;
    if lz + m > lane_bits {
        return Err(DecodeError::OutOfRange {
            what: "gorilla window",
            value: (lz + m) as u64,
            limit: lane_bits as u64,
        });
    }
    *wlz = lz;
    *wtz = lane_bits - lz - m;
    Ok(r.read_checked(m, "gorilla meaningful bits")? << *wtz)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_values_cost_one_bit_each() {
        let lanes = vec![1.5f64.to_bits(); 1024];
        assert_eq!(encoded_len(&lanes, 64), (64 + 1023usize).div_ceil(8));
        let mut out = Vec::new();
        encode(&lanes, 64, &mut out);
        assert_eq!(decode(&out, 1024, 64).unwrap(), lanes);
    }

    #[test]
    fn width_64_xor_and_float4_lanes_round_trip() {
        let lanes = vec![0, u64::MAX, 0, 1, 1 << 63, 0];
        let mut out = Vec::new();
        encode(&lanes, 64, &mut out);
        assert_eq!(out.len(), encoded_len(&lanes, 64));
        assert_eq!(decode(&out, lanes.len(), 64).unwrap(), lanes);
        let lanes32: Vec<u64> = [1.0f32, -2.5, f32::NAN, 0.0, -0.0, f32::MAX]
            .iter()
            .map(|x| x.to_bits() as u64)
            .collect();
        let mut out = Vec::new();
        encode(&lanes32, 32, &mut out);
        assert_eq!(decode(&out, lanes32.len(), 32).unwrap(), lanes32);
    }
}

//! Rice-coded deltas: mode 3 of the packed-integer block (see `bitpack` and docs/FORMAT.md,
//! "Rice delta blocks").
//!
//! A series whose steps are small and centred, such as one host's metric in a stripe sorted
//! by host (a rounded random walk: steps of 0 and ±1 most of the time, ±2 to ±4 rarely), packs
//! each step at the width of the widest one, 3 bits, where the steps' entropy is near 2.2.
//! Here each step less a centre is zigzag-mapped to `z` (0, -1, 1, -2, ... → 0, 1, 2, 3, ...)
//! and split into its low `k` bits, packed at width `k`, and its high part `z >> k`, written
//! in unary: that many 0 bits, then a 1. Small steps cost few bits, rare large ones more. A
//! high part of [`ESCAPE`] or more is written as exactly `ESCAPE` zeros and a one, and stored
//! apart, packed, so a jump between hosts costs a few bytes, not a run of thousands of bits.
//!
//! Decoding finds the unary codes as the positions of the 1 bits, a word at a time (one
//! trailing-zero count per code), so a vector costs a few cycles per value over the plain
//! delta block's unpacking.

use crate::bits::{bit_width, packed_len, read_field, BitWriter};
use crate::error::{DecodeError, DecodeResult};

/// The longest unary run: a high part this large or larger is an escape. (A power of two:
/// the decoder tests runs against it by their OR.)
pub const ESCAPE: u64 = 32;

/// Header bytes of a Rice block: mode, k, first value, centre, unary length (u32), escape
/// count (u32), escape width.
pub const HEADER: usize = 1 + 1 + 8 + 8 + 4 + 4 + 1;

/// How a block's deltas are Rice-coded, computed from them without writing anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RicePlan {
    /// Low bits per item, 0..=63.
    pub k: u32,
    /// Subtracted from each delta before the zigzag mapping: the lower median of the deltas.
    pub center: i64,
    /// Bytes of the unary codes.
    pub unary_len: usize,
    /// Items whose high part is stored apart, and the width their high parts are packed at.
    pub escapes: usize,
    pub escape_width: u32,
}

impl RicePlan {
    /// Block size in bytes, header included, for `items` deltas.
    pub fn encoded_len(&self, items: usize) -> usize {
        HEADER + packed_len(items, self.k) + self.unary_len + packed_len(self.escapes, self.escape_width)
    }
}

fn zigzag(x: i64) -> u64 {
    ((x << 1) ^ (x >> 63)) as u64
}

fn unzigzag(z: u64) -> i64 {
    ((z >> 1) as i64) ^ -((z & 1) as i64)
}

/// The items of `deltas` against `center`.
fn items(deltas: &[i64], center: i64) -> impl Iterator<Item = u64> + '_ {
    deltas.iter().map(move |&d| zigzag(d.wrapping_sub(center)))
}

/// Widest delta window [`plan`] takes (the packed-integer block tries Rice at 2 to 5 bits).
pub const MAX_WINDOW_WIDTH: u32 = 5;

/// The smallest Rice coding of `deltas` (none if there are none, or if the window is wider
/// than [`MAX_WINDOW_WIDTH`] or reaches past `i64::MAX`).
///
/// `window` is the delta block's `(base, width)`: all but a few deltas lie in
/// `[base, base + 2^width)` (the rest are its exceptions), so the deltas are counted there
/// in a histogram, once, and every size below is computed from it and the few others.
///
/// The centre is the lower median of the deltas. `k` is searched upwards from
/// `bit_width(mean item) - 2` (at least 0), stopping once the header, the low bits and one
/// stop bit per item alone are at least the best size found; the smallest size wins, the
/// smaller `k` on a tie. (The search is part of the format: docs/FORMAT.md.)
pub fn plan(deltas: &[i64], window: (i64, u32)) -> Option<RicePlan> {
    let m = deltas.len();
    let (base, width) = window;
    if m == 0 || width > MAX_WINDOW_WIDTH || base.checked_add((1 << width) - 1).is_none() {
        return None;
    }
    let span = 1usize << width;
    // four histograms, so that runs of one delta do not wait on each other's counts
    let mut lanes = [[0u32; 1 << MAX_WINDOW_WIDTH]; 4];
    let mut outside: Vec<i64> = Vec::new();
    for (i, &d) in deltas.iter().enumerate() {
        let o = d.wrapping_sub(base) as u64;
        if o < span as u64 {
            lanes[i & 3][o as usize] += 1;
        } else {
            outside.push(d);
        }
    }
    let counts: Vec<(i64, u64)> =
        (0..span).map(|o| (base + o as i64, lanes.iter().map(|l| l[o] as u64).sum::<u64>())).filter(|&(_, c)| c > 0).collect();
    // the lower median: among the deltas below the window, in it, or above it
    outside.sort_unstable();
    let below = outside.partition_point(|&d| d < base);
    let inside = m - outside.len();
    let rank = (m - 1) / 2;
    let center = if rank < below {
        outside[rank]
    } else if rank < below + inside {
        let mut seen = below as u64;
        counts.iter().find(|&&(_, c)| {
            seen += c;
            seen > rank as u64
        })
        .unwrap()
        .0
    } else {
        outside[rank - inside]
    };
    // the items: each window delta's with its count, and each other one
    let items: Vec<(u64, u64)> = counts
        .iter()
        .map(|&(d, c)| (zigzag(d.wrapping_sub(center)), c))
        .chain(outside.iter().map(|&d| (zigzag(d.wrapping_sub(center)), 1)))
        .collect();
    let mean = (items.iter().map(|&(z, c)| z as u128 * c as u128).sum::<u128>() / m as u128) as u64;
    let mut best: Option<(usize, RicePlan)> = None;
    for k in bit_width(mean).saturating_sub(2)..64 {
        if best.is_some_and(|(len, _)| HEADER + packed_len(m, k) + m.div_ceil(8) >= len) {
            break; // every larger k costs at least this much
        }
        let (mut bits, mut escapes, mut widest) = (0usize, 0usize, 0u64);
        for &(z, c) in &items {
            let high = z >> k;
            bits += (high.min(ESCAPE) as usize + 1) * c as usize;
            if high >= ESCAPE {
                escapes += c as usize;
                widest = widest.max(high);
            }
        }
        let p = RicePlan { k, center, unary_len: bits.div_ceil(8), escapes, escape_width: bit_width(widest) };
        let len = p.encoded_len(m);
        if best.is_none_or(|(b, _)| len < b) {
            best = Some((len, p));
        }
    }
    best.map(|(_, p)| p)
}

/// Appends the block body after its mode, k and first value: centre, unary length, escape
/// count and width, then the low bits, the unary codes and the escapes' high parts.
pub fn write_body(deltas: &[i64], plan: &RicePlan, out: &mut Vec<u8>) {
    let k = plan.k;
    out.extend_from_slice(&plan.center.to_le_bytes());
    out.extend_from_slice(&(plan.unary_len as u32).to_le_bytes());
    out.extend_from_slice(&(plan.escapes as u32).to_le_bytes());
    out.push(plan.escape_width as u8);
    let z: Vec<u64> = items(deltas, plan.center).collect();
    crate::bitpack::pack(z.iter().map(|&z| z & crate::bits::low_mask(k)), k, out);
    let start = out.len();
    let mut w = BitWriter::new(out);
    for &z in &z {
        // `high` zeros, then a one: at most ESCAPE + 1 bits, one write
        let high = (z >> k).min(ESCAPE);
        w.write(1 << high, high as u32 + 1);
    }
    w.finish();
    debug_assert_eq!(out.len() - start, plan.unary_len);
    crate::bitpack::pack(z.iter().map(|&z| z >> k).filter(|&h| h >= ESCAPE), plan.escape_width, out);
}

/// Reads a block body (after mode, `k` and `first`) of `count` values into `out`.
pub fn read_body(r: &mut crate::bits::ByteReader<'_>, count: usize, k: u32, first: i64, out: &mut Vec<i64>) -> DecodeResult<()> {
    if k > 63 {
        return Err(DecodeError::OutOfRange { what: "rice block k", value: k as u64, limit: 63 });
    }
    let center = r.u64("rice block centre")? as i64;
    let unary_len = r.u32("rice block unary length")? as usize;
    let escapes = r.u32("rice block escape count")? as usize;
    let escape_width = r.u8("rice block escape width")? as u32;
    if escape_width > 64 {
        return Err(DecodeError::OutOfRange { what: "rice block escape width", value: escape_width as u64, limit: 64 });
    }
    let m = count.saturating_sub(1);
    if escapes > m {
        return Err(DecodeError::OutOfRange { what: "rice block escape count", value: escapes as u64, limit: m as u64 });
    }
    let lows = r.take(packed_len(m, k), "rice block low bits")?;
    let unary = r.take(unary_len, "rice block unary codes")?;
    let escaped = r.take(packed_len(escapes, escape_width), "rice block escapes")?;
    if count == 0 {
        return if unary_len == 0 && escapes == 0 { Ok(()) } else { Err(CODES) };
    }
    let start = out.len();
    out.resize(start + count, 0);
    let dst = &mut out[start..];
    dst[0] = first;
    let items = &mut dst[1..];
    stop_positions(unary, items)?;
    if items.is_empty() {
        return Ok(()); // one value: no codes (checked), no escapes (escapes <= m)
    }
    // passes without a branch per item (but the escapes'), all but the last free of
    // dependencies between items: each item's run of zeros is the gap between its stop bit
    // and the one before; its high part is the run, or for a run of ESCAPE, the next escape
    // in place, last first, so each item still sees the previous item's stop
    for i in (1..items.len()).rev() {
        items[i] = items[i] - items[i - 1] - 1;
    }
    // every run below ESCAPE (a power of two) iff their OR is
    if escapes > 0 || items.iter().fold(0u64, |a, &run| a | run as u64) >= ESCAPE {
        let mut e = 0;
        for v in items.iter_mut().filter(|v| **v as u64 >= ESCAPE) {
            if *v as u64 > ESCAPE || e == escapes {
                return Err(CODES);
            }
            let h = read_field(escaped, e * escape_width as usize, escape_width);
            e += 1;
            if h < ESCAPE || h > u64::MAX >> k {
                return Err(DecodeError::Inconsistent { what: "rice block escape (below the escape or too wide)" });
            }
            *v = h as i64;
        }
        if e != escapes {
            return Err(CODES);
        }
    }
    if k > 0 {
        // the low bits a vector's worth at a time into a buffer on the stack (a chunk of
        // LOW_CHUNK fields starts on a byte boundary)
        let mut low_bits = [0i64; LOW_CHUNK];
        for (c, chunk) in items.chunks_mut(LOW_CHUNK).enumerate() {
            let low_bits = &mut low_bits[..chunk.len()];
            crate::bitpack::unpack(&lows[c * LOW_CHUNK * k as usize / 8..], k, 0, low_bits);
            for (v, &low) in chunk.iter_mut().zip(low_bits.iter()) {
                *v = (((*v as u64) << k) | low as u64) as i64;
            }
        }
    }
    for v in items.iter_mut() {
        *v = unzigzag(*v as u64).wrapping_add(center);
    }
    let mut sum = first;
    for v in items.iter_mut() {
        sum = sum.wrapping_add(*v);
        *v = sum;
    }
    Ok(())
}

/// Items whose low bits are unpacked together (a multiple of 8).
pub(crate) const LOW_CHUNK: usize = 1024;

const CODES: DecodeError = DecodeError::Inconsistent { what: "rice block unary codes (not one per value, a run past the escape, an escape miscounted, or padding)" };

/// Puts the bit position of each item's stop bit (the 1 that ends its unary code) in
/// `stops`: a word at a time, one trailing-zero count per code. The codes must be exactly
/// one per item and end in the last byte (so the bits after the last code are 0).
fn stop_positions(unary: &[u8], stops: &mut [i64]) -> DecodeResult<()> {
    let mut n = 0;
    let mut word = |mut w: u64, base: i64| -> DecodeResult<()> {
        let ones = w.count_ones() as usize;
        let dst = stops.get_mut(n..n + ones).ok_or(CODES)?;
        // four at a time: fewer loop branches, whose exit (a word's count of codes varies)
        // is mispredicted once a word
        let mut quads = dst.chunks_exact_mut(4);
        for q in quads.by_ref() {
            for s in q {
                *s = base + w.trailing_zeros() as i64;
                w &= w - 1;
            }
        }
        for s in quads.into_remainder() {
            *s = base + w.trailing_zeros() as i64;
            w &= w - 1;
        }
        n += ones;
        Ok(())
    };
    let mut words = unary.chunks_exact(8);
    let mut base = 0;
    for chunk in words.by_ref() {
        word(u64::from_le_bytes(chunk.try_into().unwrap()), base)?;
        base += 64;
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut b = [0u8; 8];
        b[..rest.len()].copy_from_slice(rest);
        word(u64::from_le_bytes(b), base)?;
    }
    let end = stops.last().map_or(0, |&s| s as usize + 1);
    if n != stops.len() || unary.len() != end.div_ceil(8) {
        return Err(CODES);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zigzag_round_trips_at_the_edges() {
        for x in [0, 1, -1, 2, -2, i64::MAX, i64::MIN, i64::MIN + 1] {
            assert_eq!(unzigzag(zigzag(x)), x);
        }
        assert_eq!([0, -1, 1, -2].map(zigzag), [0, 1, 2, 3]);
    }
}

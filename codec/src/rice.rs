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
//! Decoding reads the unary codes a byte at a time through a table of each byte's runs of
//! zeros, then adds up the deltas in one pass with the low bits, so a vector costs a few
//! cycles per value over the plain delta block's unpacking.

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
        HEADER
            + packed_len(items, self.k)
            + self.unary_len
            + packed_len(self.escapes, self.escape_width)
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
    let counts: Vec<(i64, u64)> = (0..span)
        .map(|o| {
            (
                base + o as i64,
                lanes.iter().map(|l| l[o] as u64).sum::<u64>(),
            )
        })
        .filter(|&(_, c)| c > 0)
        .collect();
    // the lower median: among the deltas below the window, in it, or above it
    outside.sort_unstable();
    let below = outside.partition_point(|&d| d < base);
    let inside = m - outside.len();
    let rank = (m - 1) / 2;
    let center = if rank < below {
        outside[rank]
    } else if rank < below + inside {
        let mut seen = below as u64;
        counts
            .iter()
            .find(|&&(_, c)| {
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
    let mean = (items
        .iter()
        .map(|&(z, c)| z as u128 * c as u128)
        .sum::<u128>()
        / m as u128) as u64;
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
        let p = RicePlan {
            k,
            center,
            unary_len: bits.div_ceil(8),
            escapes,
            escape_width: bit_width(widest),
        };
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
    crate::bitpack::pack(
        z.iter().map(|&z| z >> k).filter(|&h| h >= ESCAPE),
        plan.escape_width,
        out,
    );
}

/// Reads a block body (after mode, `k` and `first`) of `count` values into `out`.
pub fn read_body(
    r: &mut crate::bits::ByteReader<'_>,
    count: usize,
    k: u32,
    first: i64,
    out: &mut Vec<i64>,
) -> DecodeResult<()> {
    if k > 63 {
        return Err(DecodeError::OutOfRange {
            what: "rice block k",
            value: k as u64,
            limit: 63,
        });
    }
    let center = r.u64("rice block centre")? as i64;
    let unary_len = r.u32("rice block unary length")? as usize;
    let escapes = r.u32("rice block escape count")? as usize;
    let escape_width = r.u8("rice block escape width")? as u32;
    if escape_width > 64 {
        return Err(DecodeError::OutOfRange {
            what: "rice block escape width",
            value: escape_width as u64,
            limit: 64,
        });
    }
    let m = count.saturating_sub(1);
    if escapes > m {
        return Err(DecodeError::OutOfRange {
            what: "rice block escape count",
            value: escapes as u64,
            limit: m as u64,
        });
    }
    let lows = r.take(packed_len(m, k), "rice block low bits")?;
    let unary = r.take(unary_len, "rice block unary codes")?;
    let escaped = r.take(packed_len(escapes, escape_width), "rice block escapes")?;
    if count == 0 {
        return if unary_len == 0 && escapes == 0 {
            Ok(())
        } else {
            Err(CODES)
        };
    }
    // each item's run of zeros, a byte each (a vector's on the stack), with the slack
    // `unary_runs` writes past the last
    let mut on_stack = [0u8; LOW_CHUNK + 8];
    let mut on_heap = Vec::new();
    let runs: &mut [u8] = if m + 8 <= on_stack.len() {
        &mut on_stack[..m + 8]
    } else {
        on_heap.resize(m + 8, 0);
        &mut on_heap
    };
    unary_runs(unary, runs, m)?;
    let runs = &runs[..m];
    // the escapes, in item order: a run of exactly ESCAPE takes the next one's high part
    let widest = runs.iter().fold(0u8, |a, &run| a.max(run));
    let mut escaped_items: Vec<(usize, u64)> = Vec::new();
    if widest as u64 > ESCAPE {
        return Err(CODES);
    }
    if widest as u64 == ESCAPE || escapes > 0 {
        // (a block of runs is looked into only if it holds an escape: a test the compiler
        // vectorizes, where a search item by item is a branch per item)
        for (b, block) in runs.chunks(64).enumerate() {
            if !block
                .iter()
                .fold(false, |any, &run| any | (run as u64 == ESCAPE))
            {
                continue;
            }
            for (i, _) in block
                .iter()
                .enumerate()
                .filter(|&(_, &run)| run as u64 == ESCAPE)
            {
                let e = escaped_items.len();
                if e == escapes {
                    return Err(CODES);
                }
                let h = read_field(escaped, e * escape_width as usize, escape_width);
                if h < ESCAPE || h > u64::MAX >> k {
                    return Err(DecodeError::Inconsistent {
                        what: "rice block escape (below the escape or too wide)",
                    });
                }
                escaped_items.push((b * 64 + i, h));
            }
        }
        if escaped_items.len() != escapes {
            return Err(CODES);
        }
    }
    let start = out.len();
    out.resize(start + count, 0);
    let dst = &mut out[start..];
    dst[0] = first;
    let items = &mut dst[1..];
    // one pass per chunk of items: high part, low bits, zigzag, centre and the running sum
    // together; the low bits a chunk at a time into a buffer on the stack (a chunk of
    // LOW_CHUNK fields starts on a byte boundary)
    let mut sum = first;
    let mut low_store;
    let low_bits: &mut [i64] = if k > 0 {
        low_store = [0i64; LOW_CHUNK];
        &mut low_store
    } else {
        &mut []
    };
    // an item's delta from its high part and low bits
    let delta = |high: u64, low: u64| unzigzag((high << k) | low).wrapping_add(center);
    // with no low bits, the delta of each run below the escape (a table of every byte, so
    // that a lookup needs no bounds check: the runs summed are all below the escape)
    let mut run_deltas = [0i64; 256];
    if k == 0 {
        for (r, d) in run_deltas[..ESCAPE as usize].iter_mut().enumerate() {
            *d = delta(r as u64, 0);
        }
    }
    let mut next_escape = escaped_items.iter().copied().peekable();
    for (c, chunk) in items.chunks_mut(LOW_CHUNK).enumerate() {
        let from = c * LOW_CHUNK;
        let chunk_runs = &runs[from..from + chunk.len()];
        if k > 0 {
            crate::bitpack::unpack(
                &lows[from * k as usize / 8..],
                k,
                0,
                &mut low_bits[..chunk.len()],
            );
        }
        let mut i = 0;
        while i < chunk.len() {
            // up to the next escaped item of this chunk, the high parts are the runs
            let end = match next_escape.peek() {
                Some(&(at, _)) if at < from + chunk.len() => at - from,
                _ => chunk.len(),
            };
            if k == 0 {
                // an item is its run: its delta looked up
                let mut s = sum;
                for (v, &run) in chunk[i..end].iter_mut().zip(&chunk_runs[i..end]) {
                    s = s.wrapping_add(run_deltas[run as usize]);
                    *v = s;
                }
                sum = s;
            } else {
                let mut s = sum;
                for ((v, &run), &low) in chunk[i..end]
                    .iter_mut()
                    .zip(&chunk_runs[i..end])
                    .zip(&low_bits[i..end])
                {
                    s = s.wrapping_add(delta(run as u64, low as u64));
                    *v = s;
                }
                sum = s;
            }
            if end == chunk.len() {
                break;
            }
            let (_, high) = next_escape.next().unwrap();
            let low = if k > 0 { low_bits[end] as u64 } else { 0 };
            sum = sum.wrapping_add(delta(high, low));
            chunk[end] = sum;
            i = end + 1;
        }
    }
    Ok(())
}

/// Items whose low bits are unpacked together (a multiple of 8).
pub(crate) const LOW_CHUNK: usize = 1024;

const CODES: DecodeError = DecodeError::Inconsistent { what: "rice block unary codes (not one per value, a run past the escape, an escape miscounted, or padding)" };

/// What one byte of unary codes holds: the runs of zeros before each of its stop bits (the
/// first counted from the byte's first bit), one per byte of `runs` from the lowest (the
/// rest 0); how many stop bits; and the zeros after its last stop bit (8 if it has none).
#[derive(Clone, Copy)]
struct ByteCodes {
    runs: u64,
    stops: u8,
    tail: u8,
}

const BYTE_CODES: [ByteCodes; 256] = {
    let mut table = [ByteCodes {
        runs: 0,
        stops: 0,
        tail: 8,
    }; 256];
    let mut b = 0;
    while b < 256 {
        let (mut runs, mut stops, mut run) = (0u64, 0u8, 0u64);
        let mut bit = 0;
        while bit < 8 {
            if b >> bit & 1 == 1 {
                runs |= run << (8 * stops);
                stops += 1;
                run = 0;
            } else {
                run += 1;
            }
            bit += 1;
        }
        table[b] = ByteCodes {
            runs,
            stops,
            tail: run as u8,
        };
        b += 1;
    }
    table
};

/// Puts each item's run of zeros (the bits of its unary code before its stop bit) in
/// `runs[..m]`, a byte of codes at a time through [`BYTE_CODES`]: the byte's runs stored as
/// one 8-byte word at the next item, its first run plus the zeros carried from the bytes
/// before, so `runs` needs 8 bytes past the `m` items. A run longer than [`ESCAPE`] is
/// reported as some run longer than it (at most 71), for the caller to refuse. The codes
/// must be exactly `m` and end in the last byte (so the bits after the last code are 0).
fn unary_runs(unary: &[u8], runs: &mut [u8], m: usize) -> DecodeResult<()> {
    debug_assert_eq!(runs.len(), m + 8);
    let (mut n, mut carry) = (0usize, 0u64);
    for &b in unary {
        if n > m {
            return Err(CODES);
        }
        let codes = BYTE_CODES[b as usize];
        // (a carry past the escape is an error however long: capped, it stays in byte 0)
        let word = codes.runs + carry.min(ESCAPE + 32);
        runs[n..n + 8].copy_from_slice(&word.to_le_bytes());
        n += codes.stops as usize;
        carry = if codes.stops == 0 {
            carry + 8
        } else {
            codes.tail as u64
        };
    }
    if n != m || unary.last() == Some(&0) {
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

    /// `unary_runs` read bit by bit: each code's zeros, the runs longer than ESCAPE as
    /// `None`; `None` for the stream if its codes are not `m` or do not end in its last byte.
    fn runs_bit_by_bit(unary: &[u8], m: usize) -> Option<Vec<Option<u64>>> {
        let (mut runs, mut run) = (Vec::new(), 0u64);
        for i in 0..unary.len() * 8 {
            if unary[i / 8] >> (i % 8) & 1 == 1 {
                runs.push((run <= ESCAPE).then_some(run));
                run = 0;
            } else {
                run += 1;
            }
        }
        // (the zeros after the last code must stay within its byte)
        (runs.len() == m && run < 8).then_some(runs)
    }

    /// The byte table's reading of unary codes against the bit by bit one, on streams of
    /// random bytes with runs of zero bytes (long runs, escapes and runs past them), and on
    /// every count of codes near the right one.
    #[test]
    fn unary_runs_by_table_equal_bit_by_bit() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let (mut long, mut escape) = (0, 0);
        for case in 0..3000 {
            let len = (next() % 40) as usize;
            let unary: Vec<u8> = (0..len)
                .map(|_| match next() % 8 {
                    0..=3 => 0,
                    4 => 0x80,
                    5 => 1,
                    _ => next() as u8,
                })
                .collect();
            let ones: usize = unary.iter().map(|b| b.count_ones() as usize).sum();
            for m in ones.saturating_sub(1)..=ones + 1 {
                let mut runs = vec![0u8; m + 8];
                let fast = unary_runs(&unary, &mut runs, m)
                    .ok()
                    .map(|()| runs[..m].to_vec());
                let slow = runs_bit_by_bit(&unary, m);
                match (&fast, &slow) {
                    (None, None) => {}
                    (Some(f), Some(s)) => {
                        for (i, (&f, &s)) in f.iter().zip(s).enumerate() {
                            match s {
                                Some(run) => assert_eq!(f as u64, run, "case {case}, item {i}"),
                                None => {
                                    long += 1;
                                    assert!(
                                        f as u64 > ESCAPE,
                                        "case {case}, item {i}: a long run read as {f}"
                                    );
                                }
                            }
                            escape += (s == Some(ESCAPE)) as usize;
                        }
                    }
                    _ => panic!(
                        "case {case} ({unary:02x?}, m {m}): table {fast:?}, bit by bit {slow:?}"
                    ),
                }
            }
        }
        assert!(
            long > 10 && escape > 10,
            "runs past the escape {long}, escapes {escape}"
        );
    }
}

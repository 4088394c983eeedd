//! Bitpacking of 64-bit integers: the *bitpack* encoding's payload, and the packed-integer
//! block that the other encodings reuse (dictionary codes and entries, string lengths).
//!
//! A block holds `n` integers (n known from context) as one of three variants, whichever is
//! smallest (ties go to the earlier one):
//!
//! * frame of reference: `mode=0, width, reference: i64`, then `v[i] - reference` packed;
//! * delta: `mode=1, width, first: i64, min_delta: i64`, then for i in 1..n
//!   `(v[i] - v[i-1]) - min_delta` packed;
//! * stride delta, tried only when the caller knows a row period `lag` (rows of interleaved
//!   series, e.g. 100 hosts reporting every 10 s): `mode=2, width, lag: u16, head_width,
//!   head_base: i64, min_delta: i64`, then the first `h = min(lag, n)` values packed against
//!   `head_base`, then for i in h..n `(v[i] - v[i-lag]) - min_delta` packed.
//!
//! Each variant packs a sequence of *items* (the values, the deltas, the lagged deltas)
//! against their minimum at the width of their range. A variant may also be *patched*
//! (mode byte | 0x80): a few items that would widen every field are stored apart after the
//! fields, as exceptions, and the rest are packed narrower. This is what a stripe sorted by
//! host needs: one host's run ends inside most vectors, and the single jump from one host's
//! last timestamp to the next host's first would otherwise set the width of every delta.
//!
//! All arithmetic wraps modulo 2^64, so every i64 sequence round-trips exactly, width 64
//! included. Packed fields are LSB-first (see `bits`); the field area is
//! `ceil(count * width / 8)` bytes.

use crate::bits::{bit_width, low_mask, packed_len, read_field, BitWriter, ByteReader};
use crate::error::{DecodeError, DecodeResult};
use crate::vector::{Kind, Values};

/// The variant of a packed-integer block; the byte values are part of the format.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockMode {
    FrameOfReference = 0,
    Delta = 1,
    Stride = 2,
    /// Deltas Rice-coded (`rice`): never patched.
    Rice = 3,
}

/// Set in a block's mode byte when the block is patched (ends with an exception section).
pub const PATCHED: u8 = 0x80;

/// Bytes of an exception section before its packed positions and values: count (u16),
/// value width (u8), value base (i64).
const PATCH_HEADER: usize = 2 + 1 + 8;

/// The exceptions of a patched block: the items outside the fields' window
/// `[field base, field base + 2^width)`, stored apart. (Which items they are follows from the
/// window, so the plan keeps only what sizes and heads the section.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Patch {
    /// Number of exceptions, 1..=items.
    pub count: usize,
    /// The smallest exception, and the width of the exceptions' range.
    pub base: i64,
    pub width: u32,
}

impl Patch {
    /// Section size for a block of `items` packed items.
    fn encoded_len(&self, items: usize) -> usize {
        PATCH_HEADER
            + packed_len(self.count, position_width(items))
            + packed_len(self.count, self.width)
    }
}

/// Width of an exception's position among `items` items.
fn position_width(items: usize) -> u32 {
    bit_width(items.saturating_sub(1) as u64)
}

/// What a block will be written as, computed from the values without writing anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockPlan {
    pub mode: BlockMode,
    pub width: u32,
    /// Frame of reference: the minimum (of the items packed, when patched). Delta: the first
    /// value.
    pub base: i64,
    /// Delta and stride: the smallest delta (of the items packed, when patched).
    pub min_delta: i64,
    /// Number of integers in the block.
    pub count: usize,
    /// Stride only: the lag, and the frame of reference of the first `min(lag, count)`
    /// values (their minimum and the width of their range).
    pub lag: usize,
    pub head_base: i64,
    pub head_width: u32,
    /// The exceptions, when the block is patched.
    pub patch: Option<Patch>,
    /// Rice only: how the deltas are coded (`base` is the first value).
    pub rice: Option<crate::rice::RicePlan>,
}

impl BlockPlan {
    /// Encoded size in bytes, header included.
    pub fn encoded_len(&self) -> usize {
        let items = self.items();
        if let Some(rice) = self.rice {
            return rice.encoded_len(items);
        }
        let patch = self.patch.map_or(0, |p| p.encoded_len(items));
        patch
            + packed_len(items, self.width)
            + match self.mode {
                BlockMode::FrameOfReference => 10,
                BlockMode::Delta => 18,
                BlockMode::Stride => {
                    STRIDE_HEADER + packed_len(self.lag.min(self.count), self.head_width)
                }
                BlockMode::Rice => unreachable!("a Rice block's size is its RicePlan's"),
            }
    }

    /// Number of packed items: values, deltas, or lagged deltas.
    fn items(&self) -> usize {
        match self.mode {
            BlockMode::FrameOfReference => self.count,
            BlockMode::Delta | BlockMode::Rice => self.count.saturating_sub(1),
            BlockMode::Stride => self.count - self.lag.min(self.count),
        }
    }

    /// The base the items are packed against.
    fn item_base(&self) -> i64 {
        match self.mode {
            BlockMode::FrameOfReference => self.base,
            BlockMode::Delta | BlockMode::Stride | BlockMode::Rice => self.min_delta,
        }
    }
}

/// Header bytes of a stride block: mode, width, lag, head width, head base, min delta.
const STRIDE_HEADER: usize = 1 + 1 + 2 + 1 + 8 + 8;

/// Minimum and width of `max - min` of `values` (0 and 0 when empty): what every block mode
/// packs its fields against.
fn min_and_width(values: impl Iterator<Item = i64>) -> (i64, u32) {
    let (min, max) = values.fold((i64::MAX, i64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if min > max {
        return (0, 0); // nothing seen
    }
    (min, bit_width(max.wrapping_sub(min) as u64)) // max >= min: the true range
}

/// How the items of one variant are packed: their base, width and exceptions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Packing {
    base: i64,
    width: u32,
    patch: Option<Patch>,
}

/// Most exceptions a patched block has: each costs its position and value, so more rarely
/// pay, and the bound keeps the search to the smallest and largest few items.
pub const MAX_EXCEPTIONS: usize = 64;

/// The smallest packing of `items` (the patched one only if strictly smaller).
///
/// Unpatched: the items' minimum and the width of their range, `W`. Patched, for each width
/// `w < W`: among the windows `[a, a + 2^w)` that leave at most [`MAX_EXCEPTIONS`] items
/// outside, the one holding the most items, the smallest such `a` (a window is best started
/// at an item), packs the items inside it against `a`; the rest are exceptions. The smallest
/// total (fields plus exception section) wins, the larger `w` on a tie.
///
/// Such a window starts at one of the `MAX_EXCEPTIONS + 1` smallest items and ends before one
/// of the `MAX_EXCEPTIONS + 1` largest, so only those are sorted (after a selection that
/// sets them apart, and only if [`may_patch`] allows a window at all); each width is then a
/// pass over the smallest with a binary search among the largest. Widths are tried widest
/// first, stopping once the exception section alone is at least the best total, since
/// narrower windows only leave more items out.
fn packing(items: &[i64]) -> Packing {
    let (base, width) = min_and_width(items.iter().copied());
    let unpatched = Packing {
        base,
        width,
        patch: None,
    };
    let m = items.len();
    let pw = position_width(m);
    let mut best = packed_len(m, width);
    // the smallest possible exception section: one exception of width 0
    if width == 0 || PATCH_HEADER + packed_len(1, pw) >= best {
        return unpatched;
    }
    if !may_patch(items, base, width) {
        return unpatched;
    }
    let edge = (MAX_EXCEPTIONS + 1).min(m);
    let mut sorted = items.to_vec();
    if m > 2 * edge {
        sorted.select_nth_unstable(edge - 1);
        sorted[edge..].select_nth_unstable(m - 2 * edge);
        sorted[..edge].sort_unstable();
        sorted[m - edge..].sort_unstable();
    } else {
        sorted.sort_unstable();
    }
    let (low, high) = (&sorted[..edge], &sorted[m - edge..]);
    let mut chosen = unpatched;
    for w in (0..width).rev() {
        // (items kept, index of the window's first item, exceptions above it)
        let mut top: Option<(usize, usize, usize)> = None;
        for lo in 0..edge {
            if lo > 0 && low[lo] == low[lo - 1] {
                continue; // the window from the first equal item keeps this one too
            }
            let end = low[lo] as i128 + (1i128 << w);
            let in_high = high.partition_point(|&x| (x as i128) < end);
            if in_high == 0 {
                continue; // every one of the largest is outside: too many exceptions
            }
            let above = edge - in_high;
            if lo + above > MAX_EXCEPTIONS {
                continue;
            }
            let kept = m - lo - above;
            if top.is_none_or(|(k, _, _)| kept > k) {
                top = Some((kept, lo, above));
            }
        }
        let Some((kept, lo, above)) = top else { break }; // narrower windows leave more out
        let count = m - kept; // >= 1: the full range is at least 2^(width - 1) >= 2^w
        let section = PATCH_HEADER + packed_len(count, pw);
        if section >= best {
            break;
        }
        let min = if lo > 0 { low[0] } else { high[edge - above] };
        let max = if above > 0 {
            high[edge - 1]
        } else {
            low[lo - 1]
        };
        let patch = Patch {
            count,
            base: min,
            width: bit_width(max.wrapping_sub(min) as u64),
        };
        let total = packed_len(m, w) + patch.encoded_len(m);
        if total < best {
            best = total;
            chosen = Packing {
                base: low[lo],
                width: w,
                patch: Some(patch),
            };
        }
    }
    chosen
}

/// Whether some window of width `2^(width - 1)` may leave at most [`MAX_EXCEPTIONS`] of the
/// items out, from a histogram of 64 buckets over their range `[min, min + 2^width)`: a
/// window that wide meets at most `2^(width - 1 - shift) + 1` consecutive buckets (or 2 when
/// narrower than a bucket), so the fullest such run of buckets bounds the items it keeps.
/// When even that leaves too many out, no narrower window can do better (exact pruning: it
/// saves sorting items that cannot be patched, such as values spread over their range).
fn may_patch(items: &[i64], min: i64, width: u32) -> bool {
    let shift = width.saturating_sub(6);
    let mut buckets = [0usize; 64];
    for &x in items {
        buckets[((x.wrapping_sub(min) as u64) >> shift) as usize & 63] += 1;
    }
    let w = width - 1;
    let run = if w >= shift {
        (1usize << (w - shift)) + 1
    } else {
        2
    }
    .min(64);
    let mut kept = buckets[..run].iter().sum::<usize>();
    let mut most = kept;
    for i in run..64 {
        kept = kept + buckets[i] - buckets[i - run];
        most = most.max(kept);
    }
    items.len() - most <= MAX_EXCEPTIONS
}

/// Frame-of-reference plan: the values packed against their minimum (see [`packing`]).
pub fn plan_for(values: &[i64]) -> BlockPlan {
    let p = packing(values);
    BlockPlan {
        mode: BlockMode::FrameOfReference,
        width: p.width,
        base: p.base,
        min_delta: 0,
        count: values.len(),
        lag: 0,
        head_base: 0,
        head_width: 0,
        patch: p.patch,
        rice: None,
    }
}

/// Delta plan: the first value, then the deltas packed against their minimum.
pub fn plan_delta(values: &[i64]) -> BlockPlan {
    delta_plan(values, &deltas_of(values))
}

/// `v[i+1] - v[i]` (wrapping) for each neighbouring pair.
fn deltas_of(values: &[i64]) -> Vec<i64> {
    values.windows(2).map(|w| w[1].wrapping_sub(w[0])).collect()
}

/// [`plan_delta`] given the deltas.
fn delta_plan(values: &[i64], deltas: &[i64]) -> BlockPlan {
    let p = packing(deltas);
    BlockPlan {
        mode: BlockMode::Delta,
        width: p.width,
        base: values.first().copied().unwrap_or(0),
        min_delta: p.base,
        count: values.len(),
        lag: 0,
        head_base: 0,
        head_width: 0,
        patch: p.patch,
        rice: None,
    }
}

/// Stride plan for `lag` (1..=65535): the first `min(lag, n)` values by frame of reference,
/// then each value as its difference from the value `lag` before it.
pub fn plan_stride(values: &[i64], lag: usize) -> BlockPlan {
    assert!((1..=u16::MAX as usize).contains(&lag), "stride lag {lag}");
    let head = lag.min(values.len());
    let (head_base, head_width) = min_and_width(values[..head].iter().copied());
    let deltas: Vec<i64> = (head..values.len())
        .map(|i| values[i].wrapping_sub(values[i - lag]))
        .collect();
    let p = packing(&deltas);
    BlockPlan {
        mode: BlockMode::Stride,
        width: p.width,
        base: 0,
        min_delta: p.base,
        count: values.len(),
        lag,
        head_base,
        head_width,
        patch: p.patch,
        rice: None,
    }
}

/// Rice plan: the first value, then the deltas Rice-coded (see [`crate::rice::plan`], which
/// is given the delta plan's window); none where that gives none.
fn rice_plan(deltas: &[i64], delta: &BlockPlan) -> Option<BlockPlan> {
    let rice = crate::rice::plan(deltas, (delta.min_delta, delta.width))?;
    Some(BlockPlan {
        mode: BlockMode::Rice,
        width: rice.k,
        min_delta: 0,
        patch: None,
        rice: Some(rice),
        ..*delta
    })
}

/// The smallest of frame of reference, delta, (given a lag shorter than the block) stride
/// delta and Rice delta; the earlier one on a tie. Rice is tried only when the delta block
/// packs its items at 2 to 5 bits: below, a Rice item's 1-bit stop and larger header cannot
/// win; above, it rarely wins by much (small steps are what it is for) and each try costs a
/// median and a pass per `k` of the encoder's time.
pub fn plan_with(values: &[i64], lag: Option<usize>) -> BlockPlan {
    let mut best = plan_for(values);
    let deltas = deltas_of(values);
    let d = delta_plan(values, &deltas);
    let rice = (2..=crate::rice::MAX_WINDOW_WIDTH)
        .contains(&d.width)
        .then(|| rice_plan(&deltas, &d))
        .flatten();
    if d.encoded_len() < best.encoded_len() {
        best = d;
    }
    if let Some(lag) = lag.filter(|&l| l >= 1 && l < values.len() && l <= u16::MAX as usize) {
        let s = plan_stride(values, lag);
        if s.encoded_len() < best.encoded_len() {
            best = s;
        }
    }
    if let Some(r) = rice {
        if r.encoded_len() < best.encoded_len() {
            best = r;
        }
    }
    best
}

/// The smaller of frame of reference and delta; frame of reference on a tie.
pub fn plan(values: &[i64]) -> BlockPlan {
    plan_with(values, None)
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
    out.push(plan.mode as u8 | if plan.patch.is_some() { PATCHED } else { 0 });
    out.push(plan.width as u8);
    match plan.mode {
        BlockMode::FrameOfReference => {
            out.extend_from_slice(&plan.base.to_le_bytes());
            write_items(values.iter().copied(), plan, out);
        }
        BlockMode::Delta => {
            out.extend_from_slice(&plan.base.to_le_bytes());
            out.extend_from_slice(&plan.min_delta.to_le_bytes());
            write_items(
                values.windows(2).map(|w| w[1].wrapping_sub(w[0])),
                plan,
                out,
            );
        }
        BlockMode::Stride => {
            let head = plan.lag.min(values.len());
            out.extend_from_slice(&(plan.lag as u16).to_le_bytes());
            out.push(plan.head_width as u8);
            out.extend_from_slice(&plan.head_base.to_le_bytes());
            out.extend_from_slice(&plan.min_delta.to_le_bytes());
            let hb = plan.head_base;
            pack(
                values[..head].iter().map(|&v| v.wrapping_sub(hb) as u64),
                plan.head_width,
                out,
            );
            let lag = plan.lag;
            write_items(
                (head..values.len()).map(|i| values[i].wrapping_sub(values[i - lag])),
                plan,
                out,
            );
        }
        BlockMode::Rice => {
            out.extend_from_slice(&plan.base.to_le_bytes());
            crate::rice::write_body(
                &deltas_of(values),
                plan.rice.as_ref().expect("a Rice plan"),
                out,
            );
        }
    }
}

/// Packs the items against the plan's base at its width; when patched, an exception's field
/// is 0 and the exception section follows: count, value width, value base, then the
/// exceptions' positions (ascending) and their values less the value base, packed.
fn write_items(items: impl Iterator<Item = i64> + Clone, plan: &BlockPlan, out: &mut Vec<u8>) {
    let (base, width) = (plan.item_base(), plan.width);
    let mask = low_mask(width);
    pack(
        items.clone().map(|v| {
            let f = v.wrapping_sub(base) as u64;
            if f > mask {
                0
            } else {
                f
            }
        }),
        width,
        out,
    );
    let Some(patch) = plan.patch else { return };
    out.extend_from_slice(&(patch.count as u16).to_le_bytes());
    out.push(patch.width as u8);
    out.extend_from_slice(&patch.base.to_le_bytes());
    let outside = items
        .enumerate()
        .filter(|&(_, v)| v.wrapping_sub(base) as u64 > mask);
    pack(
        outside.clone().map(|(i, _)| i as u64),
        position_width(plan.items()),
        out,
    );
    pack(
        outside.map(|(_, v)| v.wrapping_sub(patch.base) as u64),
        patch.width,
        out,
    );
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
    let (mode_byte, width) = read_mode(r)?;
    let patched = mode_byte & PATCHED != 0;
    let mode = mode_byte & !PATCHED;
    if mode == BlockMode::Stride as u8 {
        return read_stride(r, count, width, patched, out);
    }
    if mode_byte == BlockMode::Rice as u8 {
        let first = r.u64("rice block first value")? as i64;
        return crate::rice::read_body(r, count, width, first, out);
    }
    let base = r.u64("bitpack block base")? as i64;
    match mode {
        m if m == BlockMode::FrameOfReference as u8 => {
            let data = r.take(packed_len(count, width), "bitpack fields")?;
            let start = out.len();
            out.resize(start + count, 0);
            unpack(data, width, base, &mut out[start..]);
            if patched {
                read_exceptions(r, &mut out[start..], 0)?;
            }
        }
        m if m == BlockMode::Delta as u8 => {
            let min_delta = r.u64("bitpack block min_delta")? as i64;
            let fields = count.saturating_sub(1);
            let data = r.take(packed_len(fields, width), "bitpack fields")?;
            if count == 0 {
                // no items: a patched block's exceptions cannot have a place
                return if patched {
                    read_exceptions(r, &mut [], 0)
                } else {
                    Ok(())
                };
            }
            let start = out.len();
            out.resize(start + count, 0);
            let dst = &mut out[start..];
            dst[0] = base;
            unpack(data, width, 0, &mut dst[1..]);
            if patched {
                // the fields are added to min_delta below: store the exception less it
                read_exceptions(r, &mut dst[1..], min_delta)?;
            }
            let mut prev = base;
            for v in &mut dst[1..] {
                prev = prev.wrapping_add(min_delta).wrapping_add(*v);
                *v = prev;
            }
        }
        _ => {
            return Err(DecodeError::UnknownTag {
                what: "bitpack block mode",
                value: mode_byte,
            })
        }
    }
    Ok(())
}

/// A block's mode byte and field width, the width checked.
fn read_mode(r: &mut ByteReader<'_>) -> DecodeResult<(u8, u32)> {
    let mode_byte = r.u8("bitpack block mode")?;
    let width = r.u8("bitpack block width")? as u32;
    if width > 64 {
        return Err(DecodeError::OutOfRange {
            what: "bitpack width",
            value: width as u64,
            limit: 64,
        });
    }
    Ok((mode_byte, width))
}

/// A stride block after its mode and width: the lag, the head's fields (`head` of them,
/// `head_width` bits each, against `head_base`) and the lagged items' fields (against
/// `min_delta`), every length checked.
struct StrideBlock<'a> {
    lag: usize,
    head: usize,
    head_width: u32,
    head_base: i64,
    min_delta: i64,
    head_data: &'a [u8],
    data: &'a [u8],
}

fn read_stride_header<'a>(
    r: &mut ByteReader<'a>,
    count: usize,
    width: u32,
) -> DecodeResult<StrideBlock<'a>> {
    let lag = r.u16("bitpack stride lag")? as usize;
    if lag == 0 {
        return Err(DecodeError::OutOfRange {
            what: "bitpack stride lag",
            value: 0,
            limit: u16::MAX as u64,
        });
    }
    let head_width = r.u8("bitpack stride head width")? as u32;
    if head_width > 64 {
        return Err(DecodeError::OutOfRange {
            what: "bitpack stride head width",
            value: head_width as u64,
            limit: 64,
        });
    }
    let head_base = r.u64("bitpack stride head base")? as i64;
    let min_delta = r.u64("bitpack block min_delta")? as i64;
    let head = lag.min(count);
    let head_data = r.take(packed_len(head, head_width), "bitpack stride head")?;
    let data = r.take(packed_len(count - head, width), "bitpack fields")?;
    Ok(StrideBlock {
        lag,
        head,
        head_width,
        head_base,
        min_delta,
        head_data,
        data,
    })
}

fn read_stride(
    r: &mut ByteReader<'_>,
    count: usize,
    width: u32,
    patched: bool,
    out: &mut Vec<i64>,
) -> DecodeResult<()> {
    let b = read_stride_header(r, count, width)?;
    let start = out.len();
    out.resize(start + count, 0);
    let dst = &mut out[start..];
    unpack(b.head_data, b.head_width, b.head_base, &mut dst[..b.head]);
    unpack(b.data, width, b.min_delta, &mut dst[b.head..]);
    if patched {
        read_exceptions(r, &mut dst[b.head..], 0)?;
    }
    add_lagged(dst, b.head, b.lag);
    Ok(())
}

/// The integer at `index` of a block of `count` integers: what [`read_block`] puts at
/// `out[index]`, reading only what that integer depends on where the variant allows it. A
/// frame-of-reference integer is one field; a delta block's is the sum of the deltas before
/// it; a stride block's the sum of the items `lag` apart down to its head field; a Rice
/// block is decoded whole (into `scratch`). The header, every length and the exception
/// section are checked as [`read_block`] checks them; fields not read are not.
pub fn value_at(
    r: &mut ByteReader<'_>,
    count: usize,
    index: usize,
    scratch: &mut Vec<i64>,
) -> DecodeResult<i64> {
    if index >= count {
        return Err(DecodeError::OutOfRange {
            what: "integer of a block",
            value: index as u64,
            limit: count.saturating_sub(1) as u64,
        });
    }
    let (mode_byte, width) = read_mode(r)?;
    let patched = mode_byte & PATCHED != 0;
    let mode = mode_byte & !PATCHED;
    let field = |data: &[u8], i: usize| read_field(data, i * width as usize, width) as i64;
    if mode == BlockMode::Stride as u8 {
        let b = read_stride_header(r, count, width)?;
        let head_field = |i: usize| {
            (read_field(b.head_data, i * b.head_width as usize, b.head_width) as i64)
                .wrapping_add(b.head_base)
        };
        if index < b.head {
            return Ok(head_field(index));
        }
        // v[i] = v[i - lag] + item[i] for i >= head (= lag here): the head field of index's
        // lane plus the lane's items up to index
        let lane = index % b.lag;
        let mut sum = head_field(lane);
        let mut i = index;
        while i >= b.head {
            sum = sum
                .wrapping_add(field(b.data, i - b.head))
                .wrapping_add(b.min_delta);
            i -= b.lag;
        }
        if patched {
            // an exception is the item itself, in place of its field plus min_delta
            read_exception_section(r, count - b.head, |at, v| {
                let i = at + b.head;
                if i <= index && i % b.lag == lane {
                    sum = sum
                        .wrapping_add(v)
                        .wrapping_sub(field(b.data, at).wrapping_add(b.min_delta));
                }
            })?;
        }
        return Ok(sum);
    }
    if mode_byte == BlockMode::Rice as u8 {
        let first = r.u64("rice block first value")? as i64;
        scratch.clear();
        crate::rice::read_body(r, count, width, first, scratch)?;
        return Ok(scratch[index]);
    }
    let base = r.u64("bitpack block base")? as i64;
    match mode {
        m if m == BlockMode::FrameOfReference as u8 => {
            let data = r.take(packed_len(count, width), "bitpack fields")?;
            let mut value = field(data, index).wrapping_add(base);
            if patched {
                read_exception_section(r, count, |at, v| {
                    if at == index {
                        value = v;
                    }
                })?;
            }
            Ok(value)
        }
        m if m == BlockMode::Delta as u8 => {
            let min_delta = r.u64("bitpack block min_delta")? as i64;
            let data = r.take(packed_len(count - 1, width), "bitpack fields")?;
            // the deltas into values 1..=index (item k is the delta into value k + 1)
            scratch.clear();
            scratch.resize(index, 0);
            unpack(data, width, min_delta, scratch);
            if patched {
                read_exception_section(r, count - 1, |at, v| {
                    if at < index {
                        scratch[at] = v;
                    }
                })?;
            }
            Ok(scratch.iter().fold(base, |sum, &d| sum.wrapping_add(d)))
        }
        _ => Err(DecodeError::UnknownTag {
            what: "bitpack block mode",
            value: mode_byte,
        }),
    }
}

/// Reads a patched block's exception section and puts each exception, less `offset`, in
/// its item's place in `items` (the block's unpacked items).
fn read_exceptions(r: &mut ByteReader<'_>, items: &mut [i64], offset: i64) -> DecodeResult<()> {
    read_exception_section(r, items.len(), |at, v| items[at] = v.wrapping_sub(offset))
}

/// Reads and checks a patched block's exception section for a block of `items` packed items,
/// calling `each(position, exception)` for every exception, positions ascending (each below
/// `items`).
fn read_exception_section(
    r: &mut ByteReader<'_>,
    items: usize,
    mut each: impl FnMut(usize, i64),
) -> DecodeResult<()> {
    let count = r.u16("bitpack exception count")? as usize;
    if count == 0 || count > items {
        return Err(DecodeError::OutOfRange {
            what: "bitpack exception count",
            value: count as u64,
            limit: items as u64,
        });
    }
    let width = r.u8("bitpack exception width")? as u32;
    if width > 64 {
        return Err(DecodeError::OutOfRange {
            what: "bitpack exception width",
            value: width as u64,
            limit: 64,
        });
    }
    let base = r.u64("bitpack exception base")? as i64;
    let pw = position_width(items);
    let positions = r.take(packed_len(count, pw), "bitpack exception positions")?;
    let values = r.take(packed_len(count, width), "bitpack exception values")?;
    // the fields unpacked 64 at a time (the SIMD unpack; 64 fields end on a byte), into
    // buffers on the stack, then checked and handed on
    const CHUNK: usize = 64;
    let (mut at, mut value) = ([0i64; CHUNK], [0i64; CHUNK]);
    let mut next = 0usize; // positions ascend strictly
    for start in (0..count).step_by(CHUNK) {
        let n = CHUNK.min(count - start);
        unpack(&positions[start * pw as usize / 8..], pw, 0, &mut at[..n]);
        unpack(
            &values[start * width as usize / 8..],
            width,
            base,
            &mut value[..n],
        );
        for (&at, &v) in at[..n].iter().zip(&value[..n]) {
            let at = at as usize;
            if at < next || at >= items {
                return Err(DecodeError::Inconsistent {
                    what: "bitpack exception positions (out of order or past the items)",
                });
            }
            next = at + 1;
            each(at, v);
        }
    }
    Ok(())
}

/// `dst[i] += dst[i - lag]` for i in `from..` in order (wrapping), `from >= lag`. The rows of
/// one lag apart depend on each other only across runs of `lag`, so each run is one
/// element-wise add of the run before it, which vectorises; with AVX2 (detected at run
/// time) four lanes at a time.
fn add_lagged(dst: &mut [i64], from: usize, lag: usize) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is available (checked just above)
        return unsafe { add_lagged_avx2(dst, from, lag) };
    }
    add_lagged_portable(dst, from, lag)
}

/// [`add_lagged`] for the baseline target: its twin, tested against it.
#[inline(always)]
fn add_lagged_portable(dst: &mut [i64], from: usize, lag: usize) {
    debug_assert!(from >= lag || from == dst.len());
    let mut i = from;
    while i < dst.len() {
        let n = lag.min(dst.len() - i);
        let (done, rest) = dst.split_at_mut(i);
        for (d, s) in rest[..n].iter_mut().zip(&done[i - lag..i - lag + n]) {
            *d = d.wrapping_add(*s);
        }
        i += n;
    }
}

/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn add_lagged_avx2(dst: &mut [i64], from: usize, lag: usize) {
    add_lagged_portable(dst, from, lag)
}

/// Reads one block of `count` integers as values of `kind`: the inverse of
/// [`ValuesRef::as_integers`](crate::ValuesRef::as_integers). Integers that do not fit the
/// kind, or that no float of the kind maps to, are refused as corrupt.
pub fn read_values(r: &mut ByteReader<'_>, kind: Kind, count: usize) -> DecodeResult<Values> {
    let ints = read_integers(r, kind, count)?;
    Ok(crate::integers_into(kind, ints))
}

/// [`read_values`] without the last step: the integers, checked to stand for values of
/// `kind`.
pub fn read_integers(r: &mut ByteReader<'_>, kind: Kind, count: usize) -> DecodeResult<Vec<i64>> {
    let mut ints = Vec::with_capacity(count);
    read_block(r, count, &mut ints)?;
    crate::check_integers(kind, &ints)?;
    Ok(ints)
}

/// Unpacks `out.len()` fields of `width` bits from `data` (which holds at least
/// `packed_len(out.len(), width)` bytes) and stores `field + base` (wrapping) in `out`.
///
/// On x86_64 with AVX2 (detected at run time), widths 1..=25 go through [`simd`]; everything
/// else, and the values the SIMD kernel leaves, through [`unpack_scalar`], its twin. Both
/// give identical results (tested at every width).
pub fn unpack(data: &[u8], width: u32, base: i64, out: &mut [i64]) {
    #[cfg(target_arch = "x86_64")]
    if (1..=simd::MAX_WIDTH).contains(&width) && std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is available (checked just above).
        let done = unsafe { simd::unpack_avx2(data, width, base, out) };
        // `done` is a multiple of 8, so the rest starts on a byte boundary
        let from = done * width as usize / 8;
        return unpack_scalar(&data[from..], width, base, &mut out[done..]);
    }
    unpack_scalar(data, width, base, out)
}

/// The portable path. Widths 1..=57 use a loop specialised per width: eight fields of `w`
/// bits span exactly `w` bytes, so every load offset and shift in a group is a compile-time
/// constant and the loop unrolls; a field of up to 57 bits at any bit offset fits one
/// unaligned 8-byte load; the last few fields run on a zero-padded copy of their bytes.
/// Width 64 is a plain little-endian copy; widths 58..=63 take the general path
/// ([`unpack_reference`]).
pub fn unpack_scalar(data: &[u8], width: u32, base: i64, out: &mut [i64]) {
    debug_assert!(data.len() >= packed_len(out.len(), width));
    macro_rules! dispatch {
        ($($w:literal)*) => {
            match width {
                0 => out.fill(base),
                $($w => unpack_fixed::<$w>(data, base, out),)*
                64 => {
                    for (d, c) in out.iter_mut().zip(data.chunks_exact(8)) {
                        *d = i64::from_le_bytes(c.try_into().unwrap()).wrapping_add(base);
                    }
                }
                _ => unpack_reference(data, width, base, out),
            }
        };
    }
    dispatch!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30
              31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57);
}

#[inline(always)]
fn unpack_fixed<const W: usize>(data: &[u8], base: i64, out: &mut [i64]) {
    let done = unpack_groups::<W>(data, base, out);
    if done == out.len() {
        return;
    }
    // The last groups lack the slack the 8-byte loads need: run them on a zero-padded copy
    // of the bytes that hold them (fewer than W + 8 bytes, plus at most one partial group).
    let from = done * W / 8;
    let need = packed_len(out.len() - done, W as u32);
    let mut pad = [0u8; 3 * 57 + 16];
    pad[..need].copy_from_slice(&data[from..from + need]);
    let rest = &mut out[done..];
    let more = unpack_groups::<W>(&pad[..need + W + 8], base, rest);
    for (i, d) in rest.iter_mut().enumerate().skip(more) {
        *d = (read_field(&pad, i * W, W as u32) as i64).wrapping_add(base);
    }
}

/// Whole groups of eight fields while 8-byte loads stay inside `data`; returns how many
/// values were written (a multiple of 8).
#[inline(always)]
fn unpack_groups<const W: usize>(data: &[u8], base: i64, out: &mut [i64]) -> usize {
    let mask = low_mask(W as u32);
    let mut g = 0;
    // a group needs bytes g*W .. g*W + W + 8 for its eight 8-byte loads
    while (g + 1) * 8 <= out.len() && g * W + W + 8 <= data.len() {
        let src = &data[g * W..g * W + W + 8];
        let dst = &mut out[g * 8..g * 8 + 8];
        for (j, d) in dst.iter_mut().enumerate() {
            let bit = j * W;
            let word = u64::from_le_bytes(src[bit / 8..bit / 8 + 8].try_into().unwrap());
            *d = (((word >> (bit % 8)) & mask) as i64).wrapping_add(base);
        }
        g += 1;
    }
    g * 8
}

/// The general path, one field at a time: any width, any position.
pub fn unpack_reference(data: &[u8], width: u32, base: i64, out: &mut [i64]) {
    for (i, d) in out.iter_mut().enumerate() {
        *d = (read_field(data, i * width as usize, width) as i64).wrapping_add(base);
    }
}

/// AVX2 kernel for widths up to 25: eight fields at a time. Fields 0..3 of a group lie in
/// its first 16 bytes and fields 4..7 in the 16 bytes from bit `4w`; a byte shuffle moves
/// each field's bytes into its own 32-bit lane, a variable shift and a mask isolate it
/// (shift <= 7 and width <= 25 keep it inside 32 bits), and the lanes are widened to i64 and
/// offset by the base.
#[cfg(target_arch = "x86_64")]
mod simd {
    use crate::bits::low_mask;
    use std::arch::x86_64::*;

    pub const MAX_WIDTH: u32 = 25;

    /// Unpacks as many whole groups of eight as it can read with 16-byte loads inside
    /// `data`, and returns how many values it wrote (a multiple of 8).
    ///
    /// # Safety
    /// The CPU must support AVX2, and `1 <= width <= MAX_WIDTH`.
    #[target_feature(enable = "avx2")]
    pub unsafe fn unpack_avx2(data: &[u8], width: u32, base: i64, out: &mut [i64]) -> usize {
        let w = width as usize;
        let hi_byte = 4 * w / 8; // byte where the second half of a group is loaded from
        let mut ctrl = [0u8; 32];
        let mut shifts = [0u32; 8];
        for j in 0..8 {
            let bit = j * w;
            let half_start = if j < 4 { 0 } else { hi_byte };
            let rel = bit / 8 - half_start;
            for k in 0..4 {
                ctrl[(j / 4) * 16 + (j % 4) * 4 + k] = (rel + k) as u8; // rel + 3 <= 15
            }
            shifts[j] = (bit % 8) as u32;
        }
        // SAFETY: each array is 32 bytes, what an unaligned 256-bit load reads
        let (ctrl, shifts) = unsafe {
            (
                _mm256_loadu_si256(ctrl.as_ptr() as *const __m256i),
                _mm256_loadu_si256(shifts.as_ptr() as *const __m256i),
            )
        };
        let mask = _mm256_set1_epi32(low_mask(width) as i32);
        let basev = _mm256_set1_epi64x(base);
        let groups = out.len() / 8;
        let mut g = 0;
        while g < groups && g * w + hi_byte + 16 <= data.len() {
            // SAFETY: both 16-byte loads end at or before `g * w + hi_byte + 16 <= data.len()`
            // (the loop's condition)
            let (lo, hi) = unsafe {
                let p = data.as_ptr().add(g * w);
                (
                    _mm_loadu_si128(p as *const __m128i),
                    _mm_loadu_si128(p.add(hi_byte) as *const __m128i),
                )
            };
            let v = _mm256_shuffle_epi8(_mm256_set_m128i(hi, lo), ctrl);
            let v = _mm256_and_si256(_mm256_srlv_epi32(v, shifts), mask);
            let a = _mm256_add_epi64(_mm256_cvtepu32_epi64(_mm256_castsi256_si128(v)), basev);
            let b = _mm256_add_epi64(
                _mm256_cvtepu32_epi64(_mm256_extracti128_si256::<1>(v)),
                basev,
            );
            // SAFETY: g < groups = out.len() / 8, so the two 32-byte stores write out[g * 8..g * 8 + 8]
            unsafe {
                let dst = out.as_mut_ptr().add(g * 8) as *mut __m256i;
                _mm256_storeu_si256(dst, a);
                _mm256_storeu_si256(dst.add(1), b);
            }
            g += 1;
        }
        g * 8
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
        each_value_at(&out, values);
        p
    }

    /// [`value_at`] reads every integer of the block `bytes` as [`read_block`] does, and
    /// refuses an index past the block.
    fn each_value_at(bytes: &[u8], values: &[i64]) {
        let mut scratch = Vec::new();
        for (i, &v) in values.iter().enumerate() {
            assert_eq!(
                value_at(&mut ByteReader::new(bytes), values.len(), i, &mut scratch).unwrap(),
                v,
                "integer {i}"
            );
        }
        assert!(value_at(
            &mut ByteReader::new(bytes),
            values.len(),
            values.len(),
            &mut scratch
        )
        .is_err());
    }

    fn roundtrip_stride(values: &[i64], lag: usize) -> BlockPlan {
        let p = plan_stride(values, lag);
        let mut out = Vec::new();
        write_planned(values, &p, &mut out);
        assert_eq!(out.len(), p.encoded_len());
        let mut r = ByteReader::new(&out);
        let mut back = Vec::new();
        read_block(&mut r, values.len(), &mut back).unwrap();
        r.finish().unwrap();
        assert_eq!(back, values, "lag {lag}");
        each_value_at(&out, values);
        p
    }

    #[test]
    fn lagged_adds_equal_the_element_by_element_loop() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for len in [0usize, 1, 2, 7, 64, 100, 1023, 1024] {
            for lag in [1usize, 2, 3, 7, 8, 100, 511, 1023, 1024] {
                if lag > len {
                    continue;
                }
                let v: Vec<i64> = (0..len)
                    .map(|_| {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        seed as i64
                    })
                    .collect();
                let mut want = v.clone();
                for i in lag..len {
                    want[i] = want[i].wrapping_add(want[i - lag]);
                }
                let mut got = v.clone();
                add_lagged_portable(&mut got, lag, lag);
                assert_eq!(got, want, "len {len} lag {lag}");
                #[cfg(target_arch = "x86_64")]
                if std::arch::is_x86_feature_detected!("avx2") {
                    let mut got = v;
                    // SAFETY: AVX2 is available
                    unsafe { add_lagged_avx2(&mut got, lag, lag) };
                    assert_eq!(got, want, "AVX2, len {len} lag {lag}");
                }
            }
        }
    }

    #[test]
    fn stride_blocks_round_trip_at_the_edges() {
        // lag 1 (plain deltas), lag at and past the count (head only), width 64 both parts
        let extremes = [i64::MIN, i64::MAX, 0, -1, 1, i64::MAX, i64::MIN];
        for lag in [1, 2, 3, 6, 7, 8, 1000] {
            roundtrip_stride(&extremes, lag);
        }
        roundtrip_stride(&[], 5);
        roundtrip_stride(&[9], 1);
        // a periodic sequence costs nothing past its first period
        let periodic: Vec<i64> = (0..1024)
            .map(|i| (i % 100) * (i % 100) * 7919 % 10007 - 500)
            .collect();
        let p = roundtrip_stride(&periodic, 100);
        assert_eq!((p.width, p.min_delta), (0, 0));
        assert_eq!(plan_with(&periodic, Some(100)).mode, BlockMode::Stride);
        // control: without the lag the same values need a wide frame of reference
        assert_ne!(plan(&periodic).mode, BlockMode::Stride);
        assert!(plan(&periodic).encoded_len() > p.encoded_len());
    }

    #[test]
    fn stride_lag_zero_and_wide_fields_are_refused() {
        let mut out = Vec::new();
        write_planned(&[1, 2, 3], &plan_stride(&[1, 2, 3], 1), &mut out);
        let mut bad = out.clone();
        bad[2] = 0; // lag 0
        bad[3] = 0;
        assert!(read_block(&mut ByteReader::new(&bad), 3, &mut Vec::new()).is_err());
        let mut bad = out.clone();
        bad[4] = 65; // head width
        assert!(read_block(&mut ByteReader::new(&bad), 3, &mut Vec::new()).is_err());
        for cut in 0..out.len() {
            assert!(
                read_block(&mut ByteReader::new(&out[..cut]), 3, &mut Vec::new()).is_err(),
                "cut {cut}"
            );
        }
    }

    #[test]
    fn extremes_round_trip_at_width_64() {
        roundtrip(&[i64::MIN, i64::MAX, 0, -1, 1]);
        // scattered over the whole range, so that no window is worth patching: width 64
        let spread: Vec<i64> = (1..=64u64)
            .map(|i| {
                let x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
                ((x ^ (x >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9) ^ (x >> 32)) as i64
            })
            .collect();
        let p = roundtrip(&spread);
        assert_eq!((p.width, p.patch), (64, None));
        let mut rev = spread.clone();
        rev.reverse();
        let p = roundtrip_stride(&[&spread[..], &rev[..]].concat(), 64);
        assert_eq!(
            (p.mode, p.width, p.head_width, p.patch),
            (BlockMode::Stride, 64, 64, None)
        );
        roundtrip(&[]);
        roundtrip(&[42]);
        assert_eq!(roundtrip(&[7; 1024]).width, 0);
    }

    #[test]
    fn specialised_unpack_matches_the_general_path_at_every_width() {
        let data: Vec<u8> = (0..9000u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 7) as u8)
            .collect();
        for width in 0..=64u32 {
            for count in [0usize, 1, 7, 8, 9, 63, 64, 65, 1023, 1024] {
                let len = packed_len(count, width);
                let mut slow = vec![0i64; count];
                unpack_reference(&data[..len], width, -5, &mut slow);
                let mut scalar = vec![0i64; count];
                unpack_scalar(&data[..len], width, -5, &mut scalar);
                assert_eq!(scalar, slow, "scalar: width {width} count {count}");
                let mut dispatched = vec![0i64; count];
                unpack(&data[..len], width, -5, &mut dispatched);
                assert_eq!(dispatched, slow, "dispatched: width {width} count {count}");
                #[cfg(target_arch = "x86_64")]
                if std::arch::is_x86_feature_detected!("avx2")
                    && (1..=simd::MAX_WIDTH).contains(&width)
                {
                    let mut v = vec![0i64; count];
                    // SAFETY: AVX2 checked above, width in range
                    let done = unsafe { simd::unpack_avx2(&data[..len], width, -5, &mut v) };
                    assert!(
                        len < 40 || done > 0,
                        "the SIMD kernel did no work at width {width}"
                    );
                    assert_eq!(
                        &v[..done],
                        &slow[..done],
                        "avx2: width {width} count {count}"
                    );
                }
            }
        }
    }

    #[test]
    fn one_jump_is_an_exception_not_the_width_of_every_delta() {
        // two hosts' timestamps in one vector: 10 s steps, and one step back at the boundary
        let mut v: Vec<i64> = (0..600).map(|i| 1_000_000_000 + 10_000_000 * i).collect();
        v.extend((0..424).map(|i| 1_000_000_000 + 10_000_000 * i));
        let p = roundtrip(&v);
        assert_eq!(
            (p.mode, p.width, p.min_delta),
            (BlockMode::Delta, 0, 10_000_000)
        );
        assert_eq!(p.patch.map(|x| (x.count, x.width)), Some((1, 0)));
        assert!(p.encoded_len() < 40, "{}", p.encoded_len());
        // control: unpatched, the jump sets a 33-bit width for all 1023 deltas
        let (_, unpatched) = min_and_width(v.windows(2).map(|w| w[1] - w[0]));
        assert_eq!(unpatched, 33);
        // an outlier among small values, by frame of reference
        let mut w: Vec<i64> = (0..1000).map(|i| i % 7).collect();
        w[500] = 1 << 40;
        w[0] = -(1 << 50);
        let p = roundtrip(&w);
        assert_eq!(
            (p.mode, p.width, p.base),
            (BlockMode::FrameOfReference, 3, 0)
        );
        assert_eq!(p.patch.map(|x| x.count), Some(2));
        // and in a stride block's lagged deltas
        let mut s: Vec<i64> = (0..1024).map(|i| (i % 100) * 1000 + i / 100).collect();
        s[700] += 1 << 30;
        let p = roundtrip_stride(&s, 100);
        assert_eq!(p.patch.map(|x| x.count), Some(2)); // the jump up, and back 100 rows later
        assert_eq!((p.width, p.min_delta), (0, 1));
    }

    /// A Rice block longer than the decoder's chunk of low bits (a shared dictionary's
    /// entries can be), ending mid-chunk, round-trips.
    #[test]
    fn a_rice_block_of_several_chunks_round_trips() {
        let mut x = 12345u64;
        let mut value = 0i64;
        let walk: Vec<i64> = (0..2 * crate::rice::LOW_CHUNK + 517)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                // mostly small steps, a few of 12
                value += match x >> 58 {
                    0 => 12,
                    r => (r % 5) as i64 - 2,
                };
                value
            })
            .collect();
        assert_eq!(roundtrip(&walk).mode, BlockMode::Rice);
    }

    #[test]
    fn corrupt_exception_sections_are_refused() {
        let mut v: Vec<i64> = (0..64).collect();
        v[10] = 1 << 40;
        v[20] = 1 << 41;
        let p = plan_for(&v);
        assert_eq!(p.patch.map(|x| x.count), Some(2));
        let mut out = Vec::new();
        write_planned(&v, &p, &mut out);
        let read = |b: &[u8]| {
            let mut r = ByteReader::new(b);
            let mut back = Vec::new();
            read_block(&mut r, v.len(), &mut back)
                .and_then(|()| r.finish())
                .map(|()| back)
        };
        assert_eq!(read(&out).unwrap(), v);
        let section = 10 + packed_len(64, p.width); // mode, width, base, fields
        for count in [0u16, 65] {
            let mut bad = out.clone();
            bad[section..section + 2].copy_from_slice(&count.to_le_bytes());
            assert!(read(&bad).is_err(), "count {count}");
        }
        let mut bad = out.clone();
        bad[section + 2] = 65; // value width
        assert!(read(&bad).is_err());
        // positions 10 and 20, 6 bits each from byte section + 11: swap them
        let mut bad = out.clone();
        let at = section + 11;
        bad[at] = 20 | (10 << 6) as u8;
        bad[at + 1] = (10 >> 2) as u8;
        assert!(read(&bad).is_err(), "positions out of order");
        let mut bad = out.clone();
        bad[at] = 10 | (10 << 6) as u8; // the same position twice
        bad[at + 1] = (10 >> 2) as u8;
        assert!(read(&bad).is_err(), "a repeated position");
        for cut in 0..out.len() {
            assert!(read(&out[..cut]).is_err(), "cut {cut}");
        }
        // a patched delta block of no values, and a mode byte no version defines
        let mut empty = vec![1 | PATCHED, 0];
        empty.extend([0u8; 16]);
        empty.extend([1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert!(read_block(&mut ByteReader::new(&empty), 0, &mut Vec::new()).is_err());
        assert!(read_block(
            &mut ByteReader::new(&[3 | PATCHED, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
            1,
            &mut Vec::new()
        )
        .is_err());
    }

    #[test]
    fn delta_wins_on_a_ramp() {
        let ramp: Vec<i64> = (0..1024).map(|i| 1_000_000 + 10 * i).collect();
        let p = roundtrip(&ramp);
        assert_eq!(p.mode, BlockMode::Delta);
        assert_eq!(p.width, 0);
    }
}

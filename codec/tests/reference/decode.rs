//! A deliberately simple decoder, written from docs/FORMAT.md alone: bytes read one at a time,
//! bits one at a time, no shortcuts. It is the oracle for the fast decoder on every stream,
//! valid or not: both must accept the same streams and give the same vectors (tests in
//! reference_equivalence.rs, and the decode_vector fuzz target). `None` means "refused".

#![allow(dead_code)]

use pg_columnar_codec::{ByteStrings, Values, Vector, MAX_ROWS, MAX_VECTOR_BYTES};

struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.data.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }
    /// `n` bytes as a little-endian unsigned number.
    fn le(&mut self, n: usize) -> Option<u64> {
        let mut v = 0u64;
        for i in 0..n {
            v |= (self.byte()? as u64) << (8 * i);
        }
        Some(v)
    }
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.data.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }
    fn left(&self) -> usize {
        self.data.len() - self.pos
    }
}

/// Bit `i` of `data`, LSB-first.
fn bit(data: &[u8], i: usize) -> Option<u64> {
    Some(((*data.get(i / 8)? >> (i % 8)) & 1) as u64)
}

/// `m` fields of `width` bits, packed LSB-first.
fn fields(r: &mut Reader<'_>, m: usize, width: usize) -> Option<Vec<u64>> {
    let data = r.take((m * width).div_ceil(8))?;
    (0..m)
        .map(|i| (0..width).try_fold(0u64, |v, k| Some(v | bit(data, i * width + k)? << k)))
        .collect()
}

/// A patched block's exception section: (position, item) pairs, positions strictly
/// ascending and below `items`.
fn exceptions(r: &mut Reader<'_>, items: usize) -> Option<Vec<(usize, i64)>> {
    let count = r.le(2)? as usize;
    let width = r.byte()? as usize;
    if count == 0 || count > items || width > 64 {
        return None;
    }
    let base = r.le(8)? as i64;
    let mut pw = 0;
    while pw < 64 && ((items - 1) >> pw) != 0 {
        pw += 1;
    }
    let positions = fields(r, count, pw)?;
    let values = fields(r, count, width)?;
    if positions.windows(2).any(|p| p[0] >= p[1]) || positions.iter().any(|&p| p as usize >= items)
    {
        return None;
    }
    Some(
        positions
            .into_iter()
            .zip(values)
            .map(|(p, v)| (p as usize, base.wrapping_add(v as i64)))
            .collect(),
    )
}

/// `m` items packed against `base` at `width`, patched by an exception section when asked.
fn items(r: &mut Reader<'_>, m: usize, width: usize, base: i64, patched: bool) -> Option<Vec<i64>> {
    let mut v: Vec<i64> = fields(r, m, width)?
        .into_iter()
        .map(|f| base.wrapping_add(f as i64))
        .collect();
    if patched {
        for (p, x) in exceptions(r, m)? {
            v[p] = x;
        }
    }
    Some(v)
}

/// A packed-integer block of `count` values.
fn block(r: &mut Reader<'_>, count: usize) -> Option<Vec<i64>> {
    let mode_byte = r.byte()?;
    let (mode, patched) = (mode_byte & 0x7f, mode_byte & 0x80 != 0);
    let width = r.byte()? as usize;
    if width > 64 {
        return None;
    }
    match mode {
        0 => {
            let base = r.le(8)? as i64;
            items(r, count, width, base, patched)
        }
        1 => {
            let base = r.le(8)? as i64;
            let min_delta = r.le(8)? as i64;
            let deltas = items(r, count.saturating_sub(1), width, min_delta, patched)?;
            let mut v = Vec::new();
            if count > 0 {
                v.push(base);
                for d in deltas {
                    let prev = *v.last().unwrap();
                    v.push(prev.wrapping_add(d));
                }
            }
            Some(v)
        }
        2 => {
            let lag = r.le(2)? as usize;
            if lag == 0 {
                return None;
            }
            let head_width = r.byte()? as usize;
            if head_width > 64 {
                return None;
            }
            let head_base = r.le(8)? as i64;
            let min_delta = r.le(8)? as i64;
            let h = lag.min(count);
            let head = fields(r, h, head_width)?;
            let deltas = items(r, count - h, width, min_delta, patched)?;
            let mut v: Vec<i64> = head
                .into_iter()
                .map(|f| head_base.wrapping_add(f as i64))
                .collect();
            for (j, d) in deltas.into_iter().enumerate() {
                let i = h + j;
                v.push(v[i - lag].wrapping_add(d));
            }
            Some(v)
        }
        3 if !patched => {
            // Rice delta: every field read bit by bit, every rule checked
            let k = width;
            if k > 63 {
                return None;
            }
            let first = r.le(8)? as i64;
            let center = r.le(8)? as i64;
            let unary_len = r.le(4)? as usize;
            let escapes = r.le(4)? as usize;
            let ew = r.byte()? as usize;
            if ew > 64 {
                return None;
            }
            let m = count.saturating_sub(1);
            if escapes > m {
                return None; // (more escapes than items: nothing to size a list by)
            }
            let lows = fields(r, m, k)?;
            let unary = r.take(unary_len)?;
            let esc = fields(r, escapes, ew)?;
            let (mut at, mut e, mut v) = (0usize, 0usize, Vec::new());
            if count > 0 {
                v.push(first);
            }
            for low in lows {
                let mut run = 0u64;
                while bit(unary, at)? == 0 {
                    run += 1;
                    at += 1;
                    if run > 32 {
                        return None;
                    }
                }
                at += 1;
                let high = if run == 32 {
                    let h = *esc.get(e)?;
                    e += 1;
                    if h < 32 || (k > 0 && h >> (64 - k) != 0) {
                        return None;
                    }
                    h
                } else {
                    run
                };
                let z = (high << k) | low;
                let d = if z % 2 == 0 {
                    (z / 2) as i64
                } else {
                    !((z / 2) as i64)
                };
                let prev = *v.last().unwrap();
                v.push(prev.wrapping_add(center).wrapping_add(d));
            }
            // exactly the escapes counted, the codes ending in the last byte, zero padding
            if e != escapes
                || unary.len() != at.div_ceil(8)
                || (at..unary.len() * 8).any(|i| bit(unary, i) != Some(0))
            {
                return None;
            }
            Some(v)
        }
        _ => None,
    }
}

/// Exact integer of a float, as FORMAT.md's bitpack section defines it.
/// (-2^63 is one, 2^63 is not: it does not fit an i64.)
fn exact_f64(x: f64) -> Option<i64> {
    let i = x as i64;
    ((-9.223372036854775808e18..9.223372036854775808e18).contains(&x)
        && (i as f64).to_bits() == x.to_bits())
    .then_some(i)
}
fn exact_f32(x: f32) -> Option<i64> {
    let i = x as i64;
    ((-9.223372036854775808e18..9.223372036854775808e18).contains(&x)
        && (i as f32).to_bits() == x.to_bits())
    .then_some(i)
}

/// Integers as values of `kind` (1..=6), refusing any that does not fit exactly.
fn from_ints(kind: u8, ints: Vec<i64>) -> Option<Values> {
    Some(match kind {
        1 => Values::Int8(
            ints.iter()
                .map(|&i| i8::try_from(i).ok())
                .collect::<Option<_>>()?,
        ),
        2 => Values::Int16(
            ints.iter()
                .map(|&i| i16::try_from(i).ok())
                .collect::<Option<_>>()?,
        ),
        3 => Values::Int32(
            ints.iter()
                .map(|&i| i32::try_from(i).ok())
                .collect::<Option<_>>()?,
        ),
        4 => Values::Int64(ints),
        5 => Values::Float32(
            ints.iter()
                .map(|&i| (exact_f32(i as f32) == Some(i)).then_some(i as f32))
                .collect::<Option<_>>()?,
        ),
        6 => Values::Float64(
            ints.iter()
                .map(|&i| (exact_f64(i as f64) == Some(i)).then_some(i as f64))
                .collect::<Option<_>>()?,
        ),
        _ => return None,
    })
}

/// `count` byte strings: a block of lengths, then the bytes.
fn strings(r: &mut Reader<'_>, count: usize) -> Option<Vec<Vec<u8>>> {
    let lens = block(r, count)?;
    let mut out = Vec::new();
    for l in lens {
        if l < 0 {
            return None;
        }
        out.push(r.take(usize::try_from(l).ok()?)?.to_vec());
    }
    Some(out)
}

fn bytes_values(items: Vec<Vec<u8>>) -> Values {
    Values::Bytes(items.iter().map(|s| &s[..]).collect::<ByteStrings>())
}

fn plain(r: &mut Reader<'_>, kind: u8, width: usize, n: usize) -> Option<Values> {
    let lanes = |r: &mut Reader<'_>, size: usize| -> Option<Vec<u64>> {
        (0..n).map(|_| r.le(size)).collect()
    };
    Some(match kind {
        1 => Values::Int8(lanes(r, 1)?.into_iter().map(|v| v as u8 as i8).collect()),
        2 => Values::Int16(lanes(r, 2)?.into_iter().map(|v| v as u16 as i16).collect()),
        3 => Values::Int32(lanes(r, 4)?.into_iter().map(|v| v as u32 as i32).collect()),
        4 => Values::Int64(lanes(r, 8)?.into_iter().map(|v| v as i64).collect()),
        5 => Values::Float32(
            lanes(r, 4)?
                .into_iter()
                .map(|v| f32::from_bits(v as u32))
                .collect(),
        ),
        6 => Values::Float64(lanes(r, 8)?.into_iter().map(f64::from_bits).collect()),
        7 => bytes_values(strings(r, n)?),
        _ => Values::Fixed {
            width: width as u16,
            data: r.take(n.checked_mul(width)?)?.to_vec(),
        },
    })
}

/// Entry `i` of `entries` as a one-value `Values` appended to `out`.
fn push_entry(out: &mut Values, entries: &Values, i: usize) {
    match (out, entries) {
        (Values::Int8(o), Values::Int8(e)) => o.push(e[i]),
        (Values::Int16(o), Values::Int16(e)) => o.push(e[i]),
        (Values::Int32(o), Values::Int32(e)) => o.push(e[i]),
        (Values::Int64(o), Values::Int64(e)) => o.push(e[i]),
        (Values::Float32(o), Values::Float32(e)) => o.push(e[i]),
        (Values::Float64(o), Values::Float64(e)) => o.push(e[i]),
        (Values::Bytes(o), Values::Bytes(e)) => o.push(e.as_ref().get(i)),
        (Values::Fixed { data: o, .. }, Values::Fixed { width, data: e }) => {
            let w = *width as usize;
            o.extend_from_slice(&e[i * w..(i + 1) * w])
        }
        _ => unreachable!("entries of the vector's kind"),
    }
}

fn kind_of(v: &Values) -> (u8, usize) {
    match v {
        Values::Int8(_) => (1, 0),
        Values::Int16(_) => (2, 0),
        Values::Int32(_) => (3, 0),
        Values::Int64(_) => (4, 0),
        Values::Float32(_) => (5, 0),
        Values::Float64(_) => (6, 0),
        Values::Bytes(_) => (7, 0),
        Values::Fixed { width, .. } => (8, *width as usize),
    }
}

fn empty(kind: u8, width: usize) -> Values {
    match kind {
        1 => Values::Int8(vec![]),
        2 => Values::Int16(vec![]),
        3 => Values::Int32(vec![]),
        4 => Values::Int64(vec![]),
        5 => Values::Float32(vec![]),
        6 => Values::Float64(vec![]),
        7 => Values::Bytes(ByteStrings::new()),
        _ => Values::Fixed {
            width: width as u16,
            data: vec![],
        },
    }
}

fn entry_bytes(entries: &Values, i: usize) -> u64 {
    match entries {
        Values::Bytes(b) => b.as_ref().get(i).len() as u64,
        _ => 0,
    }
}

fn dictionary(
    r: &mut Reader<'_>,
    kind: u8,
    width: usize,
    n: usize,
    shared: Option<&Values>,
) -> Option<Values> {
    let entry_count = r.le(2)? as usize;
    let inline;
    let entries = if entry_count == 0 {
        let d = shared?;
        if kind_of(d) != (kind, width) {
            return None;
        }
        d
    } else {
        if entry_count > 512 {
            return None;
        }
        inline = match kind {
            1..=4 => from_ints(kind, block(r, entry_count)?)?,
            5 | 6 => match r.byte()? {
                0 => plain(r, kind, 0, entry_count)?,
                1 => from_ints(kind, block(r, entry_count)?)?,
                _ => return None,
            },
            _ => plain(r, kind, width, entry_count)?,
        };
        &inline
    };
    let codes = block(r, n)?;
    let count = entries.len();
    if codes.iter().any(|&c| c < 0 || c as usize >= count) {
        return None;
    }
    if codes
        .iter()
        .map(|&c| entry_bytes(entries, c as usize))
        .sum::<u64>()
        > MAX_VECTOR_BYTES
    {
        return None;
    }
    let mut out = empty(kind, width);
    for c in codes {
        push_entry(&mut out, entries, c as usize);
    }
    Some(out)
}

fn fsst(r: &mut Reader<'_>, n: usize, symbols: &[Vec<u8>]) -> Option<Values> {
    let mut out = Vec::new();
    for s in strings(r, n)? {
        let mut plain = Vec::new();
        let mut i = 0;
        while i < s.len() {
            match s[i] as usize {
                255 => {
                    plain.push(*s.get(i + 1)?);
                    i += 2;
                }
                c if c < symbols.len() => {
                    plain.extend_from_slice(&symbols[c]);
                    i += 1;
                }
                _ => return None,
            }
        }
        out.push(plain);
    }
    Some(bytes_values(out))
}

fn gorilla(data: &[u8], n: usize, w: usize) -> Option<Vec<u64>> {
    let l = if w == 64 { 6 } else { 5 };
    let mut pos = 0usize;
    let mut read = |bits: usize| -> Option<u64> {
        let v = (0..bits).try_fold(0u64, |v, k| Some(v | bit(data, pos + k)? << k))?;
        pos += bits;
        Some(v)
    };
    let mut prev = read(w)?;
    let mut out = vec![prev];
    let mut window: Option<(usize, usize)> = None;
    for _ in 1..n {
        let x = if read(1)? == 0 {
            0
        } else if read(1)? == 0 {
            let (wlz, wtz) = window?;
            read(w - wlz - wtz)? << wtz
        } else {
            let lz = read(l)? as usize;
            let m = read(l)? as usize + 1;
            if lz + m > w {
                return None;
            }
            let tz = w - lz - m;
            window = Some((lz, tz));
            read(m)? << tz
        };
        prev ^= x;
        out.push(prev);
    }
    (pos.div_ceil(8) == data.len()).then_some(out)
}

/// Float-as-integer: mapping, exceptions (positions strictly increasing, below n), then the
/// block of n integers; each integer mapped back (digits / 10^e, or a 16-bit float widened),
/// the exceptions' bits put at their rows.
fn float_int(r: &mut Reader<'_>, kind: u8, n: usize) -> Option<Values> {
    let m = r.byte()?;
    let max_e = if kind == 5 { 10 } else { 18 };
    if m > max_e && m != 0x40 && m != 0x41 {
        return None;
    }
    let count = r.le(2)? as usize;
    if count > n {
        return None;
    }
    let positions: Vec<usize> = (0..count)
        .map(|_| r.le(2).map(|p| p as usize))
        .collect::<Option<_>>()?;
    if positions.iter().any(|&p| p >= n) || positions.windows(2).any(|w| w[0] >= w[1]) {
        return None;
    }
    let lane = if kind == 5 { 4 } else { 8 };
    let patches: Vec<u64> = (0..count).map(|_| r.le(lane)).collect::<Option<_>>()?;
    let ints = block(r, n)?;
    if kind == 5 {
        let mut out: Vec<f32> = ints
            .iter()
            .map(|&d| match m {
                0x40 => half::f16::from_bits(d as u16).to_f32(),
                0x41 => half::bf16::from_bits(d as u16).to_f32(),
                e => d as f32 / 10f32.powi(e as i32),
            })
            .collect();
        for (&p, &b) in positions.iter().zip(&patches) {
            out[p] = f32::from_bits(b as u32);
        }
        Some(Values::Float32(out))
    } else {
        let mut out: Vec<f64> = ints
            .iter()
            .map(|&d| match m {
                0x40 => half::f16::from_bits(d as u16).to_f64(),
                0x41 => half::bf16::from_bits(d as u16).to_f64(),
                e => d as f64 / 10f64.powi(e as i32),
            })
            .collect();
        for (&p, &b) in positions.iter().zip(&patches) {
            out[p] = f64::from_bits(b);
        }
        Some(Values::Float64(out))
    }
}

/// Decodes one whole vector; `symbols` is the stripe column's FSST table (its symbols in code
/// order) and `shared` its shared dictionary's entries, if it has them.
pub fn decode_vector(
    bytes: &[u8],
    symbols: Option<&[Vec<u8>]>,
    shared: Option<&Values>,
) -> Option<Vector> {
    let mut r = Reader {
        data: bytes,
        pos: 0,
    };
    let kind = r.byte()?;
    if !(1..=8).contains(&kind) {
        return None;
    }
    let width = if kind == 8 { r.le(2)? as usize } else { 0 };
    if kind == 8 && width == 0 {
        return None;
    }
    let rows = r.le(2)? as usize;
    if rows > MAX_ROWS {
        return None;
    }
    let mut null_rows = 0;
    let nulls = match r.byte()? {
        0 => None,
        1 => {
            let b = r.take(rows.div_ceil(8))?.to_vec();
            null_rows = (0..rows).filter(|&i| bit(&b, i) == Some(1)).count();
            let spare = (rows..rows.div_ceil(8) * 8).any(|i| bit(&b, i) == Some(1));
            if null_rows == 0 || null_rows == rows || spare {
                return None;
            }
            Some(b)
        }
        2 => {
            if rows == 0 {
                return None;
            }
            null_rows = rows;
            let mut b = vec![0u8; rows.div_ceil(8)];
            for i in 0..rows {
                b[i / 8] |= 1 << (i % 8);
            }
            Some(b)
        }
        _ => return None,
    };
    let n = rows - null_rows;
    if n == 0 {
        return (r.left() == 0).then(|| Vector {
            rows,
            nulls,
            values: empty(kind, width),
        });
    }
    let values = match r.byte()? {
        0 => plain(&mut r, kind, width, n)?,
        1 => dictionary(&mut r, kind, width, n, shared)?,
        2 => from_ints(kind, block(&mut r, n)?)?,
        3 if kind == 7 => fsst(&mut r, n, symbols?)?,
        4 if kind == 5 || kind == 6 => {
            let w = if kind == 5 { 32 } else { 64 };
            let lanes = gorilla(r.take(r.left())?, n, w)?;
            if kind == 5 {
                Values::Float32(
                    lanes
                        .into_iter()
                        .map(|b| f32::from_bits(b as u32))
                        .collect(),
                )
            } else {
                Values::Float64(lanes.into_iter().map(f64::from_bits).collect())
            }
        }
        5 if kind == 5 || kind == 6 => float_int(&mut r, kind, n)?,
        _ => return None,
    };
    (r.left() == 0).then_some(Vector {
        rows,
        nulls,
        values,
    })
}

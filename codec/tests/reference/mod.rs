//! Deliberately simple reference encoders: bits written one at a time into a Vec<bool>,
//! dictionaries found by linear search, sizes found by encoding and measuring. The fast
//! codec must produce byte-identical output (see tests/reference_equivalence.rs).

#![allow(dead_code)]

pub mod decode;

use pg_columnar_codec::{ColumnContext, SharedDictionary, SymbolTable, Values, Vector};

pub struct Bits(pub Vec<bool>);

impl Bits {
    pub fn new() -> Self {
        Bits(Vec::new())
    }
    pub fn put(&mut self, value: u64, width: u32) {
        for j in 0..width {
            self.0.push((value >> j) & 1 == 1);
        }
    }
    pub fn bytes(&self) -> Vec<u8> {
        let mut out = vec![0u8; self.0.len().div_ceil(8)];
        for (k, &b) in self.0.iter().enumerate() {
            if b {
                out[k / 8] |= 1 << (k % 8);
            }
        }
        out
    }
}

fn width_of(range: u64) -> u32 {
    let mut w = 0;
    while w < 64 && (range >> w) != 0 {
        w += 1;
    }
    w
}

fn bytes_for(count: usize, width: u32) -> usize {
    (count * width as usize).div_ceil(8)
}

/// How a block packs its items (values, deltas or lagged deltas): base, width, and the
/// exceptions (position, item) when patched. Brute force over FORMAT.md's rule: for every
/// width below the items' own, the window `[a, a + 2^w)` with the most items (smallest `a`,
/// an item), its outsiders as exceptions if at most 64; the smallest total wins, wider on a
/// tie, patched only when strictly smaller than unpatched.
fn items_packing(items: &[i64]) -> (i64, u32, Option<Vec<(usize, i64)>>) {
    let min = items.iter().copied().min().unwrap_or(0);
    let max = items.iter().copied().max().unwrap_or(0);
    let full = width_of((max as i128 - min as i128) as u64);
    let m = items.len();
    let pw = width_of(m.saturating_sub(1) as u64);
    let mut best = (bytes_for(m, full), min, full, None);
    let mut sorted = items.to_vec();
    sorted.sort();
    for w in (0..full).rev() {
        let mut top: Option<(usize, i64)> = None;
        for &a in &sorted {
            let hi = a as i128 + (1i128 << w);
            let n =
                sorted.partition_point(|&x| (x as i128) < hi) - sorted.partition_point(|&x| x < a);
            if top.is_none_or(|(t, _)| n > t) {
                top = Some((n, a));
            }
        }
        let (_, a) = top.unwrap();
        // only windows leaving at most MAX_EXCEPTIONS (64) items out are considered, and the
        // best window leaves the fewest
        if top.unwrap().0 + 64 < m {
            continue;
        }
        let inside = |x: i64| (x as i128) >= a as i128 && (x as i128) < a as i128 + (1i128 << w);
        let exceptions: Vec<(usize, i64)> = items
            .iter()
            .copied()
            .enumerate()
            .filter(|&(_, x)| !inside(x))
            .collect();
        let (_, ew) = exceptions_base_and_width(&exceptions);
        let e = exceptions.len();
        let total = bytes_for(m, w) + 11 + bytes_for(e, pw) + bytes_for(e, ew);
        if total < best.0 {
            best = (total, a, w, Some(exceptions));
        }
    }
    (best.1, best.2, best.3)
}

/// The smallest of the exceptions (position, item) and the width of their range.
fn exceptions_base_and_width(exceptions: &[(usize, i64)]) -> (i64, u32) {
    let emin = exceptions.iter().map(|e| e.1).min().unwrap();
    let emax = exceptions.iter().map(|e| e.1).max().unwrap();
    (emin, width_of((emax as i128 - emin as i128) as u64))
}

/// Packs the items as `items_packing` says, appends the exception section when patched, and
/// sets the patched bit of the block's mode byte (`out[0]`).
fn put_items(items: &[i64], out: &mut Vec<u8>, base_at: usize) {
    let (base, width, exceptions) = items_packing(items);
    out[1] = width as u8;
    out[base_at..base_at + 8].copy_from_slice(&base.to_le_bytes());
    let mut bits = Bits::new();
    for (i, &x) in items.iter().enumerate() {
        let outside = exceptions
            .as_ref()
            .is_some_and(|e| e.iter().any(|&(p, _)| p == i));
        bits.put(
            if outside {
                0
            } else {
                (x as i128 - base as i128) as u64
            },
            width,
        );
    }
    out.extend(bits.bytes());
    let Some(exceptions) = exceptions else { return };
    out[0] |= 0x80;
    let (emin, ew) = exceptions_base_and_width(&exceptions);
    out.extend_from_slice(&(exceptions.len() as u16).to_le_bytes());
    out.push(ew as u8);
    out.extend_from_slice(&emin.to_le_bytes());
    let pw = width_of(items.len().saturating_sub(1) as u64);
    let mut bits = Bits::new();
    for &(p, _) in &exceptions {
        bits.put(p as u64, pw);
    }
    out.extend(bits.bytes());
    let mut bits = Bits::new();
    for &(_, x) in &exceptions {
        bits.put((x as i128 - emin as i128) as u64, ew);
    }
    out.extend(bits.bytes());
}

/// Frame of reference block (patched when that is smaller).
pub fn block_for(values: &[i64]) -> Vec<u8> {
    let mut out = vec![0u8, 0];
    out.extend_from_slice(&[0; 8]);
    put_items(values, &mut out, 2);
    out
}

/// Delta block.
pub fn block_delta(values: &[i64]) -> Vec<u8> {
    let deltas: Vec<i64> = (1..values.len())
        .map(|i| values[i].wrapping_sub(values[i - 1]))
        .collect();
    let mut out = vec![1u8, 0];
    out.extend_from_slice(&values.first().copied().unwrap_or(0).to_le_bytes());
    out.extend_from_slice(&[0; 8]);
    put_items(&deltas, &mut out, 10);
    out
}

/// Stride block: the first min(lag, n) values against their minimum, then each later value
/// minus the one `lag` before it, against the smallest such difference.
pub fn block_stride(values: &[i64], lag: usize) -> Vec<u8> {
    let head = lag.min(values.len());
    let hmin = values[..head].iter().copied().min().unwrap_or(0);
    let hmax = values[..head].iter().copied().max().unwrap_or(0);
    let hwidth = width_of((hmax as i128 - hmin as i128) as u64);
    let deltas: Vec<i64> = (head..values.len())
        .map(|i| values[i].wrapping_sub(values[i - lag]))
        .collect();
    let mut out = vec![2u8, 0];
    out.extend_from_slice(&(lag as u16).to_le_bytes());
    out.push(hwidth as u8);
    out.extend_from_slice(&hmin.to_le_bytes());
    out.extend_from_slice(&[0; 8]);
    let mut bits = Bits::new();
    for &v in &values[..head] {
        bits.put((v as i128 - hmin as i128) as u64, hwidth);
    }
    out.extend(bits.bytes());
    put_items(&deltas, &mut out, 13);
    out
}

/// Rice delta block (FORMAT.md, "Rice delta blocks"), by its rule: the centre is the lower
/// median of the deltas, each item is zigzag(delta - centre), and every k from
/// bit_width(mean item) - 2 (at least 0) to 63 is tried, the smallest block kept (the smaller
/// k on a tie). No early stop, unary codes bit by bit. None for fewer than two values.
pub fn block_rice(values: &[i64]) -> Option<Vec<u8>> {
    if values.len() < 2 {
        return None;
    }
    let deltas: Vec<i64> = (1..values.len())
        .map(|i| values[i].wrapping_sub(values[i - 1]))
        .collect();
    let mut sorted = deltas.clone();
    sorted.sort();
    let center = sorted[(sorted.len() - 1) / 2];
    let items: Vec<u64> = deltas
        .iter()
        .map(|&d| {
            let x = d.wrapping_sub(center);
            if x >= 0 {
                (x as u64) * 2
            } else {
                (!(x as u64)) * 2 + 1
            }
        })
        .collect();
    let mean = (items.iter().map(|&x| x as u128).sum::<u128>() / items.len() as u128) as u64;
    let mut best: Option<Vec<u8>> = None;
    for k in width_of(mean).saturating_sub(2)..64 {
        let mut lows = Bits::new();
        let mut unary = Bits::new();
        let mut escapes = Vec::new();
        for &z in &items {
            lows.put(z & ((1u64 << k) - 1), k);
            let high = z >> k;
            for _ in 0..high.min(32) {
                unary.put(0, 1);
            }
            unary.put(1, 1);
            if high >= 32 {
                escapes.push(high);
            }
        }
        let ew = width_of(escapes.iter().copied().max().unwrap_or(0));
        let mut esc = Bits::new();
        for &h in &escapes {
            esc.put(h, ew);
        }
        let unary = unary.bytes();
        let mut out = vec![3u8, k as u8];
        out.extend_from_slice(&values[0].to_le_bytes());
        out.extend_from_slice(&center.to_le_bytes());
        out.extend_from_slice(&(unary.len() as u32).to_le_bytes());
        out.extend_from_slice(&(escapes.len() as u32).to_le_bytes());
        out.push(ew as u8);
        out.extend(lows.bytes());
        out.extend(unary);
        out.extend(esc.bytes());
        if best.as_ref().is_none_or(|b| out.len() < b.len()) {
            best = Some(out);
        }
    }
    best
}

/// The smaller block, frame of reference on a tie.
pub fn block(values: &[i64]) -> Vec<u8> {
    block_with(values, None)
}

/// The smallest of frame of reference, delta, (with a lag shorter than the block) stride and
/// Rice delta; the earlier one on a tie.
pub fn block_with(values: &[i64], lag: Option<usize>) -> Vec<u8> {
    let mut best = block_for(values);
    let d = block_delta(values);
    let (delta_width, delta_base) = (d[1], i64::from_le_bytes(d[10..18].try_into().unwrap()));
    if d.len() < best.len() {
        best = d;
    }
    if let Some(lag) = lag.filter(|&l| l >= 1 && l < values.len()) {
        let s = block_stride(values, lag);
        if s.len() < best.len() {
            best = s;
        }
    }
    // Rice only when the delta block packs at 2 to 5 bits and its window stays below i64::MAX
    if (2..=5).contains(&delta_width) && delta_base.checked_add((1 << delta_width) - 1).is_some() {
        if let Some(r) = block_rice(values) {
            if r.len() < best.len() {
                best = r;
            }
        }
    }
    best
}

pub fn exact_int_f64(x: f64) -> Option<i64> {
    let two63 = 2f64.powi(63);
    if x.is_finite()
        && x.fract() == 0.0
        && !(x == 0.0 && x.is_sign_negative())
        && x >= -two63
        && x < two63
    {
        Some(x as i64)
    } else {
        None
    }
}

pub fn exact_int_f32(x: f32) -> Option<i64> {
    exact_int_f64(x as f64)
}

/// The vector's values as a list of byte-string "items" (for dictionary/plain of any kind)
/// plus typed views.
fn lanes(values: &Values) -> Vec<Vec<u8>> {
    match values {
        Values::Int8(v) => v.iter().map(|x| x.to_le_bytes().to_vec()).collect(),
        Values::Int16(v) => v.iter().map(|x| x.to_le_bytes().to_vec()).collect(),
        Values::Int32(v) => v.iter().map(|x| x.to_le_bytes().to_vec()).collect(),
        Values::Int64(v) => v.iter().map(|x| x.to_le_bytes().to_vec()).collect(),
        Values::Float32(v) => v
            .iter()
            .map(|x| x.to_bits().to_le_bytes().to_vec())
            .collect(),
        Values::Float64(v) => v
            .iter()
            .map(|x| x.to_bits().to_le_bytes().to_vec())
            .collect(),
        Values::Bytes(b) => b.as_ref().iter().map(|s| s.to_vec()).collect(),
        Values::Fixed { width, data } => data.chunks(*width as usize).map(|c| c.to_vec()).collect(),
    }
}

fn ints(values: &Values) -> Option<Vec<i64>> {
    match values {
        Values::Int8(v) => Some(v.iter().map(|&x| x as i64).collect()),
        Values::Int16(v) => Some(v.iter().map(|&x| x as i64).collect()),
        Values::Int32(v) => Some(v.iter().map(|&x| x as i64).collect()),
        Values::Int64(v) => Some(v.clone()),
        Values::Float32(v) => v.iter().map(|&x| exact_int_f32(x)).collect(),
        Values::Float64(v) => v.iter().map(|&x| exact_int_f64(x)).collect(),
        _ => None,
    }
}

fn kind_tag(values: &Values) -> u8 {
    match values {
        Values::Int8(_) => 1,
        Values::Int16(_) => 2,
        Values::Int32(_) => 3,
        Values::Int64(_) => 4,
        Values::Float32(_) => 5,
        Values::Float64(_) => 6,
        Values::Bytes(_) => 7,
        Values::Fixed { .. } => 8,
    }
}

fn strings(items: &[Vec<u8>]) -> Vec<u8> {
    let lens: Vec<i64> = items.iter().map(|s| s.len() as i64).collect();
    let mut out = block(&lens);
    for s in items {
        out.extend_from_slice(s);
    }
    out
}

pub fn plain(values: &Values) -> Vec<u8> {
    let items = lanes(values);
    match values {
        Values::Bytes(_) => strings(&items),
        _ => items.concat(),
    }
}

pub const DICTIONARY_CAP: usize = 512;

/// The smaller of the inline and the shared dictionary (inline on a tie).
pub fn dictionary(
    values: &Values,
    shared: Option<&SharedDictionary>,
    lag: Option<usize>,
) -> Option<Vec<u8>> {
    let inline = dictionary_inline(values, lag);
    let shared = shared.and_then(|d| dictionary_shared(values, d, lag));
    match (inline, shared) {
        (Some(i), Some(s)) => Some(if s.len() < i.len() { s } else { i }),
        (i, s) => i.or(s),
    }
}

/// Codes into the shared dictionary, found by linear search.
pub fn dictionary_shared(
    values: &Values,
    d: &SharedDictionary,
    lag: Option<usize>,
) -> Option<Vec<u8>> {
    if std::mem::discriminant(values) != std::mem::discriminant(d.entries()) || values.is_empty() {
        return None;
    }
    if let (Values::Fixed { width: a, .. }, Values::Fixed { width: b, .. }) = (values, d.entries())
    {
        if a != b {
            return None;
        }
    }
    let entries = lanes(d.entries());
    let codes: Option<Vec<i64>> = lanes(values)
        .iter()
        .map(|it| entries.iter().position(|e| e == it).map(|c| c as i64))
        .collect();
    let mut out = vec![0u8, 0u8];
    out.extend(block_with(&codes?, lag));
    Some(out)
}

pub fn dictionary_inline(values: &Values, lag: Option<usize>) -> Option<Vec<u8>> {
    let items = lanes(values);
    let mut entries: Vec<Vec<u8>> = Vec::new();
    let mut codes = Vec::new();
    for it in &items {
        match entries.iter().position(|e| e == it) {
            Some(c) => codes.push(c as i64),
            None => {
                entries.push(it.clone());
                codes.push(entries.len() as i64 - 1);
            }
        }
    }
    if entries.is_empty() || entries.len() > DICTIONARY_CAP {
        return None;
    }
    let mut out = (entries.len() as u16).to_le_bytes().to_vec();
    let entry_values = match values {
        Values::Int8(_) | Values::Int16(_) | Values::Int32(_) | Values::Int64(_) => {
            let e: Vec<i64> = entries
                .iter()
                .map(|b| {
                    let mut buf = [0u8; 8];
                    buf[..b.len()].copy_from_slice(b);
                    let shift = 64 - 8 * b.len() as u32;
                    (i64::from_le_bytes(buf) << shift) >> shift
                })
                .collect();
            block(&e)
        }
        Values::Float32(_) | Values::Float64(_) => {
            let mut raw = vec![0u8];
            raw.extend(entries.concat());
            let as_ints: Option<Vec<i64>> = entries
                .iter()
                .map(|b| {
                    if b.len() == 4 {
                        exact_int_f32(f32::from_le_bytes(b[..].try_into().unwrap()))
                    } else {
                        exact_int_f64(f64::from_le_bytes(b[..].try_into().unwrap()))
                    }
                })
                .collect();
            match as_ints {
                Some(e) => {
                    let mut packed = vec![1u8];
                    packed.extend(block(&e));
                    if packed.len() < raw.len() {
                        packed
                    } else {
                        raw
                    }
                }
                None => raw,
            }
        }
        Values::Bytes(_) => strings(&entries),
        Values::Fixed { .. } => entries.concat(),
    };
    out.extend(entry_values);
    out.extend(block_with(&codes, lag));
    Some(out)
}

pub fn bitpack(values: &Values, lag: Option<usize>) -> Option<Vec<u8>> {
    ints(values).map(|v| block_with(&v, lag))
}

pub fn gorilla(values: &Values) -> Option<Vec<u8>> {
    let (lanes, w): (Vec<u64>, u32) = match values {
        Values::Float32(v) => (v.iter().map(|x| x.to_bits() as u64).collect(), 32),
        Values::Float64(v) => (v.iter().map(|x| x.to_bits()).collect(), 64),
        _ => return None,
    };
    let l = if w == 64 { 6 } else { 5 };
    let mut bits = Bits::new();
    let mut window: Option<(u32, u32)> = None;
    for (i, &cur) in lanes.iter().enumerate() {
        if i == 0 {
            bits.put(cur, w);
            continue;
        }
        let x = cur ^ lanes[i - 1];
        if x == 0 {
            bits.put(0, 1);
            continue;
        }
        // count zeros one bit at a time
        let mut lz = 0;
        while (x >> (w - 1 - lz)) & 1 == 0 {
            lz += 1;
        }
        let mut tz = 0;
        while (x >> tz) & 1 == 0 {
            tz += 1;
        }
        match window {
            Some((wl, wt)) if lz >= wl && tz >= wt => {
                bits.put(1, 1);
                bits.put(0, 1);
                bits.put(x >> wt, w - wl - wt);
            }
            _ => {
                let m = w - lz - tz;
                bits.put(1, 1);
                bits.put(1, 1);
                bits.put(lz as u64, l);
                bits.put((m - 1) as u64, l);
                bits.put(x >> tz, m);
                window = Some((lz, tz));
            }
        }
    }
    Some(bits.bytes())
}

/// The float-as-integer mapping `m` applied to one value, written out from its definition:
/// a decimal exponent's digits are the nearest integer to x·10^e, kept when digits / 10^e
/// (one division in the float's width) is x again, bit for bit; a 16-bit float's bit
/// pattern is kept when widening it is x again.
fn float_int_forward(values: &Values, i: usize, m: u8) -> Option<i64> {
    match (values, m) {
        (Values::Float64(v), 0x40) => {
            let h = half::f16::from_f64(v[i]);
            (h.to_f64().to_bits() == v[i].to_bits()).then_some(h.to_bits() as i64)
        }
        (Values::Float64(v), 0x41) => {
            let h = half::bf16::from_f64(v[i]);
            (h.to_f64().to_bits() == v[i].to_bits()).then_some(h.to_bits() as i64)
        }
        (Values::Float32(v), 0x40) => {
            let h = half::f16::from_f32(v[i]);
            (h.to_f32().to_bits() == v[i].to_bits()).then_some(h.to_bits() as i64)
        }
        (Values::Float32(v), 0x41) => {
            let h = half::bf16::from_f32(v[i]);
            (h.to_f32().to_bits() == v[i].to_bits()).then_some(h.to_bits() as i64)
        }
        (Values::Float64(v), e) => {
            let p = 10f64.powi(e as i32);
            let d = (v[i] * p).round();
            (d >= -(2f64.powi(63))
                && d < 2f64.powi(63)
                && ((d as i64) as f64 / p).to_bits() == v[i].to_bits())
            .then_some(d as i64)
        }
        (Values::Float32(v), e) => {
            let p = 10f32.powi(e as i32);
            let d = (v[i] as f64 * p as f64).round();
            (d >= -(2f64.powi(63))
                && d < 2f64.powi(63)
                && ((d as i64) as f32 / p).to_bits() == v[i].to_bits())
            .then_some(d as i64)
        }
        _ => None,
    }
}

/// Float-as-integer (FORMAT.md): the mapping that gives back the most of a sample of 32
/// values evenly spaced (every ceil(n/32)-th from the first), decimal exponents from 0 up
/// then half then bfloat16, the first on a tie; at least three quarters of the sample, and
/// at most a quarter of all values exceptions. Only for floats that are not all integers.
pub fn float_int(values: &Values, lag: Option<usize>) -> Option<Vec<u8>> {
    let (n, max_e) = match values {
        Values::Float32(v) => (v.len(), 10u8),
        Values::Float64(v) => (v.len(), 18u8),
        _ => return None,
    };
    if n == 0 || ints(values).is_some() {
        return None;
    }
    let step = n.div_ceil(32);
    let sample: Vec<usize> = (0..n).step_by(step).collect();
    let mut best: Option<(usize, u8)> = None;
    for m in (0..=max_e).chain([0x40, 0x41]) {
        let hits = sample
            .iter()
            .filter(|&&i| float_int_forward(values, i, m).is_some())
            .count();
        if best.is_none_or(|(b, _)| hits > b) {
            best = Some((hits, m));
        }
    }
    let (hits, m) = best?;
    if hits * 4 < sample.len() * 3 {
        return None;
    }
    let mapped: Vec<Option<i64>> = (0..n).map(|i| float_int_forward(values, i, m)).collect();
    let exceptions: Vec<usize> = (0..n).filter(|&i| mapped[i].is_none()).collect();
    if exceptions.len() * 4 > n {
        return None;
    }
    // stand-ins: the integer before, or for leading exceptions the first mapped one
    let first = mapped.iter().flatten().next().copied().unwrap_or(0);
    let mut digits = Vec::with_capacity(n);
    for i in 0..n {
        let d = mapped[i].unwrap_or(if i == 0 { first } else { digits[i - 1] });
        digits.push(d);
    }
    let mut out = vec![m];
    out.extend_from_slice(&(exceptions.len() as u16).to_le_bytes());
    for &i in &exceptions {
        out.extend_from_slice(&(i as u16).to_le_bytes());
    }
    let lanes = lanes(values);
    for &i in &exceptions {
        out.extend_from_slice(&lanes[i]);
    }
    out.extend(block_with(&digits, lag));
    Some(out)
}

/// FSST with a given table: greedy longest match found by trying every symbol.
pub fn fsst(values: &Values, table: &SymbolTable) -> Vec<u8> {
    let Values::Bytes(b) = values else {
        panic!("strings only")
    };
    let mut lens = Vec::new();
    let mut data = Vec::new();
    for s in b.as_ref().iter() {
        let before = data.len();
        let mut i = 0;
        while i < s.len() {
            let mut best: Option<(usize, usize)> = None; // (len, code)
            for (code, sym) in table.symbols().iter().enumerate() {
                if s[i..].starts_with(sym) && best.is_none_or(|(l, _)| sym.len() > l) {
                    best = Some((sym.len(), code));
                }
            }
            match best {
                Some((l, code)) => {
                    data.push(code as u8);
                    i += l;
                }
                None => {
                    data.push(255);
                    data.push(s[i]);
                    i += 1;
                }
            }
        }
        lens.push((data.len() - before) as i64);
    }
    let mut out = block(&lens);
    out.extend(data);
    out
}

pub fn raw_len(values: &Values) -> usize {
    match values {
        Values::Bytes(b) => 4 * b.len() + b.data.len(),
        _ => lanes(values).concat().len(),
    }
}

/// The whole vector by the chooser's rule.
pub fn encode_vector(v: &Vector, ctx: &ColumnContext<'_>) -> Vec<u8> {
    let table = ctx.fsst;
    let mut out = vec![kind_tag(&v.values)];
    if let Values::Fixed { width, .. } = &v.values {
        out.extend_from_slice(&width.to_le_bytes());
    }
    out.extend_from_slice(&(v.rows as u16).to_le_bytes());
    let nulls = (0..v.rows).filter(|&r| v.is_null(r)).count();
    if nulls == 0 {
        out.push(0);
    } else if nulls == v.rows {
        out.push(2);
        return out;
    } else {
        out.push(1);
        let mut bits = Bits::new();
        for r in 0..v.rows {
            bits.put(v.is_null(r) as u64, 1);
        }
        out.extend(bits.bytes());
    }
    if v.rows == 0 {
        return out;
    }
    let plain = plain(&v.values);
    let mut best: Option<(u8, Vec<u8>)> = None;
    let consider = |id: u8, cand: Option<Vec<u8>>, best: &mut Option<(u8, Vec<u8>)>| {
        if let Some(c) = cand {
            if best.as_ref().is_none_or(|(_, b)| c.len() < b.len()) {
                *best = Some((id, c));
            }
        }
    };
    let lag = ctx.stride.map(usize::from);
    consider(1, dictionary(&v.values, ctx.dictionary, lag), &mut best);
    consider(2, bitpack(&v.values, lag), &mut best);
    if let (Some(t), Values::Bytes(_)) = (table, &v.values) {
        let so_far = best
            .as_ref()
            .map_or(plain.len(), |(_, b)| b.len().min(plain.len()));
        if so_far * 100 > raw_len(&v.values) * 75 {
            consider(3, Some(fsst(&v.values, t)), &mut best);
        }
    }
    consider(5, float_int(&v.values, lag), &mut best);
    consider(4, gorilla(&v.values), &mut best);
    match best {
        Some((id, c)) if c.len() < plain.len() => {
            out.push(id);
            out.extend(c);
        }
        _ => {
            out.push(0);
            out.extend(plain);
        }
    }
    out
}

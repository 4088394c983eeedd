//! The *FSST* encoding for byte strings (Boncz, Neumann, Leis: "FSST: Fast Random Access
//! String Compression", VLDB 2020): a table of up to 255 symbols of 1 to 8 bytes, built
//! once per stripe and column; each string becomes a sequence of one-byte codes, code 255
//! being an escape followed by one literal byte.
//!
//! * Symbol table (stored once per stripe column by the storage layer): `count: u8`
//!   (0..=255), `count` symbol lengths (`u8`, 1..=8), then the symbols' bytes concatenated.
//!   Codes are the symbols' positions in the table.
//! * Vector payload: a packed-integer block (see `bitpack`) of the compressed lengths, then
//!   the compressed strings concatenated.
//! * Compression is greedy: at each position the longest symbol that matches is emitted,
//!   else an escape and the byte.
//!
//! Whether a stripe column gets a table at all is decided by [`decide_and_build`] on a
//! bounded prefix of the column, and the table is learnt from a smaller bounded sample; see
//! there for both caps and why they differ.

use crate::bitpack;
use crate::bits::ByteReader;
use crate::error::{DecodeError, DecodeResult};
use crate::vector::{ByteStrings, BytesRef};
use std::collections::HashMap;

pub const MAX_SYMBOLS: usize = 255;
pub const ESCAPE: u8 = 255;
pub const MAX_SYMBOL_LEN: usize = 8;

/// How many of a stripe column's first non-null strings the build decision looks at.
///
/// Larger than [`SAMPLE_CAP_BYTES`] on purpose: the decision asks how *repetitive* the
/// column is (distinct values against values), and a small prefix overstates distinctness
/// (128 rows of 100 hosts look 78% distinct, 4096 rows 2.4%), which would build tables
/// for columns the dictionary handles. Learning symbols only needs enough text to see the
/// frequent substrings, so the sample that trains the table can be smaller and cheaper.
pub const DECIDE_CAP_VALUES: usize = 4096;
/// Bytes of string data (whole strings, in column order, from the decide prefix) that train
/// the table.
pub const SAMPLE_CAP_BYTES: usize = 16 * 1024;
/// A table is built only if more than this share (in percent) of the decide prefix's
/// values are distinct, i.e. where a per-vector dictionary is unlikely to do well...
pub const DECIDE_MIN_DISTINCT_PERCENT: usize = 25;
/// ...and the prefix holds at least this many bytes of strings (too little text teaches
/// nothing and the table would cost more than it saves).
pub const DECIDE_MIN_BYTES: usize = 1024;
/// Training rounds; the paper's algorithm converges in about five.
const GENERATIONS: usize = 5;

#[derive(Debug, Clone)]
pub struct SymbolTable {
    /// Symbol bytes, by code.
    symbols: Vec<Vec<u8>>,
    /// Each symbol zero-padded to 8 bytes, read little-endian, by code.
    words: Vec<u64>,
    /// Byte masks selecting each symbol's length within a word, by code.
    masks: Vec<u64>,
    /// Codes of the symbols of 2 or more bytes, grouped by their first two bytes (longest
    /// first, then lower code): group `p` is `multi[multi_start[p]..multi_start[p + 1]]`.
    multi_start: Vec<u32>,
    multi: Vec<u8>,
    /// The code of the one-byte symbol for each byte value, if any.
    single: [Option<u8>; 256],
}

impl PartialEq for SymbolTable {
    fn eq(&self, other: &Self) -> bool {
        self.symbols == other.symbols
    }
}

impl Eq for SymbolTable {}

/// Up to 8 bytes of `s` as a little-endian word, zero-padded.
#[inline(always)]
fn word_of(s: &[u8]) -> u64 {
    match s.get(..8) {
        Some(b) => u64::from_le_bytes(b.try_into().unwrap()),
        None => {
            let mut b = [0u8; 8];
            b[..s.len()].copy_from_slice(s);
            u64::from_le_bytes(b)
        }
    }
}

impl SymbolTable {
    pub fn new(symbols: Vec<Vec<u8>>) -> SymbolTable {
        assert!(symbols.len() <= MAX_SYMBOLS);
        let mut single = [None; 256];
        // (first two bytes, longest first, code) for the symbols of two or more bytes
        let mut keyed: Vec<(u16, std::cmp::Reverse<usize>, u8)> = Vec::new();
        for (code, s) in symbols.iter().enumerate() {
            assert!(!s.is_empty() && s.len() <= MAX_SYMBOL_LEN);
            if s.len() == 1 {
                single[s[0] as usize] = Some(code as u8);
            } else {
                keyed.push((
                    u16::from_le_bytes([s[0], s[1]]),
                    std::cmp::Reverse(s.len()),
                    code as u8,
                ));
            }
        }
        keyed.sort_unstable();
        let multi: Vec<u8> = keyed.iter().map(|k| k.2).collect();
        let mut multi_start = vec![0u32; (1 << 16) + 1];
        for k in &keyed {
            multi_start[k.0 as usize + 1] += 1;
        }
        for p in 0..1 << 16 {
            multi_start[p + 1] += multi_start[p];
        }
        let words = symbols.iter().map(|s| word_of(s)).collect();
        let masks = symbols
            .iter()
            .map(|s| crate::bits::low_mask(8 * s.len() as u32))
            .collect();
        SymbolTable {
            symbols,
            words,
            masks,
            multi_start,
            multi,
            single,
        }
    }

    pub fn symbols(&self) -> &[Vec<u8>] {
        &self.symbols
    }

    /// Appends the serialized table.
    pub fn serialize(&self, out: &mut Vec<u8>) {
        out.push(self.symbols.len() as u8);
        out.extend(self.symbols.iter().map(|s| s.len() as u8));
        for s in &self.symbols {
            out.extend_from_slice(s);
        }
    }

    pub fn deserialize(bytes: &[u8]) -> DecodeResult<SymbolTable> {
        let mut r = ByteReader::new(bytes);
        let count = r.u8("FSST symbol count")? as usize;
        if count > MAX_SYMBOLS {
            return Err(DecodeError::OutOfRange {
                what: "FSST symbol count",
                value: count as u64,
                limit: MAX_SYMBOLS as u64,
            });
        }
        let lens = r.take(count, "FSST symbol lengths")?.to_vec();
        let mut symbols = Vec::with_capacity(count);
        for l in lens {
            if l == 0 || l as usize > MAX_SYMBOL_LEN {
                return Err(DecodeError::OutOfRange {
                    what: "FSST symbol length",
                    value: l as u64,
                    limit: MAX_SYMBOL_LEN as u64,
                });
            }
            symbols.push(r.take(l as usize, "FSST symbol bytes")?.to_vec());
        }
        r.finish()?;
        let mut seen = std::collections::HashSet::new();
        if !symbols.iter().all(|s| seen.insert(s.clone())) {
            return Err(DecodeError::Inconsistent {
                what: "FSST table with a repeated symbol",
            });
        }
        Ok(SymbolTable::new(symbols))
    }

    /// The longest symbol matching the start of `s` (non-empty), if any: a symbol of two or
    /// more bytes shares the first two bytes of `s`, so only that group is tried, longest
    /// first, comparing masked words; else the one-byte symbol for `s[0]`.
    #[inline]
    fn longest_match(&self, s: &[u8]) -> Option<(u8, usize)> {
        if s.len() >= 2 {
            let p = u16::from_le_bytes([s[0], s[1]]) as usize;
            let group = &self.multi[self.multi_start[p] as usize..self.multi_start[p + 1] as usize];
            if !group.is_empty() {
                let w = word_of(s);
                for &code in group {
                    let c = code as usize;
                    let len = self.symbols[c].len();
                    if len <= s.len() && w & self.masks[c] == self.words[c] {
                        return Some((code, len));
                    }
                }
            }
        }
        self.single[s[0] as usize].map(|code| (code, 1))
    }

    /// Appends the compressed form of `s`.
    pub fn compress_into(&self, s: &[u8], out: &mut Vec<u8>) {
        let mut i = 0;
        while i < s.len() {
            match self.longest_match(&s[i..]) {
                Some((code, len)) => {
                    out.push(code);
                    i += len;
                }
                None => {
                    out.push(ESCAPE);
                    out.push(s[i]);
                    i += 1;
                }
            }
        }
    }

    /// Compressed size of `s` without writing it.
    pub fn compressed_len(&self, s: &[u8]) -> usize {
        let (mut i, mut n) = (0, 0);
        while i < s.len() {
            match self.longest_match(&s[i..]) {
                Some((_, len)) => {
                    n += 1;
                    i += len;
                }
                None => {
                    n += 2;
                    i += 1;
                }
            }
        }
        n
    }

    /// Appends the decompressed form of `codes`.
    pub fn decompress_into(&self, codes: &[u8], out: &mut Vec<u8>) -> DecodeResult<()> {
        let n = self.symbols.len();
        out.reserve(codes.len() * MAX_SYMBOL_LEN);
        let mut i = 0;
        while i < codes.len() {
            let c = codes[i] as usize;
            if c < n {
                // whole words, then cut back to the symbol's length: no per-symbol memcpy call
                let len = out.len();
                out.extend_from_slice(&self.words[c].to_le_bytes());
                out.truncate(len + self.symbols[c].len());
                i += 1;
            } else if c == ESCAPE as usize {
                let b = *codes.get(i + 1).ok_or(DecodeError::Truncated {
                    what: "FSST escaped byte",
                    needed: 1,
                    available: 0,
                })?;
                out.push(b);
                i += 2;
            } else {
                return Err(DecodeError::OutOfRange {
                    what: "FSST code",
                    value: c as u64,
                    limit: n as u64,
                });
            }
        }
        Ok(())
    }
}

/// Learns a table from `sample` (the paper's bottom-up construction, made deterministic):
/// each generation compresses the sample with the current table, counts how often every
/// symbol (or escaped byte) and every pair of consecutive ones occurs, and keeps the 255
/// candidates with the highest gain (occurrences × length; ties broken by the bytes).
pub fn build_table(sample: &[&[u8]]) -> SymbolTable {
    let mut table = SymbolTable::new(Vec::new());
    for _ in 0..GENERATIONS {
        // Units: symbol codes 0..=254 as themselves, escaped byte b as 256 + b.
        let unit_bytes = |u: usize, t: &SymbolTable| -> Vec<u8> {
            if u >= 256 {
                vec![(u - 256) as u8]
            } else {
                t.symbols[u].clone()
            }
        };
        let mut single = vec![0u64; 512];
        let mut pairs: HashMap<(u16, u16), u64> = HashMap::new();
        for s in sample {
            let mut prev: Option<usize> = None;
            let mut i = 0;
            while i < s.len() {
                let (unit, len) = match table.longest_match(&s[i..]) {
                    Some((code, len)) => (code as usize, len),
                    None => (256 + s[i] as usize, 1),
                };
                single[unit] += 1;
                if let Some(p) = prev {
                    *pairs.entry((p as u16, unit as u16)).or_default() += 1;
                }
                prev = Some(unit);
                i += len;
            }
        }
        let mut gains: HashMap<Vec<u8>, u64> = HashMap::new();
        for (u, &n) in single.iter().enumerate() {
            if n > 0 {
                let b = unit_bytes(u, &table);
                *gains.entry(b.clone()).or_default() += n * b.len() as u64;
            }
        }
        for (&(a, b), &n) in &pairs {
            let mut s = unit_bytes(a as usize, &table);
            let t = unit_bytes(b as usize, &table);
            if s.len() + t.len() <= MAX_SYMBOL_LEN {
                s.extend_from_slice(&t);
                let len = s.len() as u64;
                *gains.entry(s).or_default() += n * len;
            }
        }
        let mut ranked: Vec<(Vec<u8>, u64)> = gains.into_iter().collect();
        ranked.sort_by(|(a, ga), (b, gb)| gb.cmp(ga).then_with(|| a.cmp(b)));
        ranked.truncate(MAX_SYMBOLS);
        // codes in byte order of the symbols, so the table does not depend on hash order
        let mut symbols: Vec<Vec<u8>> = ranked.into_iter().map(|(s, _)| s).collect();
        symbols.sort();
        table = SymbolTable::new(symbols);
    }
    table
}

/// The stripe-level decision and build: looks at (at most) the first
/// [`DECIDE_CAP_VALUES`] non-null strings of a stripe column; if more than
/// [`DECIDE_MIN_DISTINCT_PERCENT`] of them are distinct and they hold at least
/// [`DECIDE_MIN_BYTES`] bytes, learns a table from the first [`SAMPLE_CAP_BYTES`] of them
/// (whole strings; a first string longer than the cap is cut to it). `None`: no table, and
/// then FSST is not tried for this stripe column.
pub fn decide_and_build<'a>(prefix: impl Iterator<Item = &'a [u8]>) -> Option<SymbolTable> {
    let values: Vec<&[u8]> = prefix.take(DECIDE_CAP_VALUES).collect();
    let bytes: usize = values.iter().map(|v| v.len()).sum();
    if bytes < DECIDE_MIN_BYTES {
        return None;
    }
    let distinct = values
        .iter()
        .collect::<std::collections::HashSet<_>>()
        .len();
    if distinct * 100 <= values.len() * DECIDE_MIN_DISTINCT_PERCENT {
        return None;
    }
    let mut sample = Vec::new();
    let mut taken = 0;
    for v in values {
        if taken + v.len() > SAMPLE_CAP_BYTES {
            if sample.is_empty() {
                sample.push(&v[..SAMPLE_CAP_BYTES]);
            }
            break;
        }
        taken += v.len();
        sample.push(v);
    }
    Some(build_table(&sample))
}

/// Exact payload size of `strings` compressed with `table`.
pub fn encoded_len(strings: &BytesRef<'_>, table: &SymbolTable) -> usize {
    let lens: Vec<i64> = strings
        .iter()
        .map(|s| table.compressed_len(s) as i64)
        .collect();
    bitpack::plan(&lens).encoded_len() + lens.iter().sum::<i64>() as usize
}

pub fn encode(strings: &BytesRef<'_>, table: &SymbolTable, out: &mut Vec<u8>) {
    let mut compressed = Vec::new();
    let mut lens = Vec::with_capacity(strings.len());
    for s in strings.iter() {
        let before = compressed.len();
        table.compress_into(s, &mut compressed);
        lens.push((compressed.len() - before) as i64);
    }
    bitpack::encode_block(&lens, out);
    out.extend_from_slice(&compressed);
}

pub fn decode(
    r: &mut ByteReader<'_>,
    count: usize,
    table: &SymbolTable,
) -> DecodeResult<ByteStrings> {
    let compressed = crate::plain::read_strings(r, count)?;
    let mut out = ByteStrings::new();
    out.data.reserve(compressed.data.len() * 3);
    for s in compressed.as_ref().iter() {
        table.decompress_into(s, &mut out.data)?;
        out.offsets.push(out.data.len());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_round_trips_and_compresses_repetitive_text() {
        let words: Vec<Vec<u8>> = (0..2000)
            .map(|i| {
                format!(
                    "https://example.com/product/{}/view?ref=home",
                    i * 7919 % 10007
                )
                .into_bytes()
            })
            .collect();
        let refs: Vec<&[u8]> = words.iter().map(|w| w.as_slice()).collect();
        let t = decide_and_build(refs.iter().copied()).expect("a table for distinct URLs");
        let mut ser = Vec::new();
        t.serialize(&mut ser);
        assert_eq!(SymbolTable::deserialize(&ser).unwrap(), t);
        let (mut raw, mut comp) = (0, 0);
        for w in &refs {
            let mut c = Vec::new();
            t.compress_into(w, &mut c);
            assert_eq!(c.len(), t.compressed_len(w));
            let mut back = Vec::new();
            t.decompress_into(&c, &mut back).unwrap();
            assert_eq!(&back, w);
            raw += w.len();
            comp += c.len();
        }
        assert!(comp * 3 < raw, "compressed {comp} of {raw}");
    }

    #[test]
    fn repetitive_or_tiny_columns_get_no_table() {
        let hosts: Vec<Vec<u8>> = (0..4096)
            .map(|i| format!("host_{}", i % 100).into_bytes())
            .collect();
        assert!(decide_and_build(hosts.iter().map(|h| h.as_slice())).is_none());
        let tiny: Vec<Vec<u8>> = (0..10).map(|i| format!("v{i}").into_bytes()).collect();
        assert!(decide_and_build(tiny.iter().map(|h| h.as_slice())).is_none());
    }
}

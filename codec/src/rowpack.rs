//! A batch of rows packed for a WAL record: pg_columnar's logical decoding logs the rows a
//! COPY or INSERT adds as heap tuples, and packs each batch of them so (docs/FORMAT.md,
//! "WAL: the change record").
//!
//! Each row is a byte string, written as its length (`u32`, little-endian) and its bytes.
//! That unit is XORed byte by byte with the previous row's unit over their common length
//! (the first row's with nothing). Rows of one table share most of their layout and often
//! the high bytes of their values, so the XOR leaves mostly zero bytes: TSBS rows, as heap
//! tuples, go from about 115 bytes to about 43. The XORed stream is then written as tokens:
//! a byte `c` below 128 is followed by `c + 1` literal bytes; a byte `c` of 128 or more
//! stands for `c - 127` zero bytes. Runs of one zero stay in literals.

use std::ops::Range;

/// Why a packed batch could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowPackError {
    /// The unpacked length is larger than the tokens can give, or than the caller allows.
    LengthOutOfRange,
    /// The tokens give more or fewer bytes than the stated unpacked length.
    LengthMismatch,
    /// A row's length runs past the unpacked bytes, or rows are left over or missing.
    RowsMismatch,
}

impl std::fmt::Display for RowPackError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RowPackError::LengthOutOfRange => "a packed batch's unpacked length is out of range",
            RowPackError::LengthMismatch => {
                "a packed batch unpacks to another length than it states"
            }
            RowPackError::RowsMismatch => "a packed batch's rows do not fit its bytes",
        })
    }
}

/// Zero bytes one token stands for, at most.
const MAX_ZEROS: usize = 128;
/// Literal bytes one token carries, at most.
const MAX_LITERALS: usize = 128;

/// Packs rows one by one; [`finish`](Self::finish) gives the packed bytes.
#[derive(Default)]
pub struct RowPacker {
    /// The XORed units so far.
    stream: Vec<u8>,
    /// The previous row's unit, as it was (not XORed).
    previous: Vec<u8>,
    unit: Vec<u8>,
    rows: usize,
}

impl RowPacker {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a row (at most 4 GiB).
    pub fn push(&mut self, row: &[u8]) {
        self.unit.clear();
        self.unit
            .extend_from_slice(&(row.len() as u32).to_le_bytes());
        self.unit.extend_from_slice(row);
        let start = self.stream.len();
        self.stream.extend_from_slice(&self.unit);
        xor_into(&mut self.stream[start..], &self.previous);
        std::mem::swap(&mut self.previous, &mut self.unit);
        self.rows += 1;
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The bytes the rows take before packing.
    pub fn unpacked_len(&self) -> usize {
        self.stream.len()
    }

    /// Appends the packed tokens to `out`; returns (rows, unpacked length). The packer is empty
    /// after.
    pub fn finish(&mut self, out: &mut Vec<u8>) -> (usize, usize) {
        pack_tokens(&self.stream, out);
        let done = (self.rows, self.stream.len());
        self.stream.clear();
        self.previous.clear();
        self.rows = 0;
        done
    }
}

/// The tokens of `stream` appended to `out`.
fn pack_tokens(stream: &[u8], out: &mut Vec<u8>) {
    let mut i = 0;
    let mut literal_start = 0;
    let flush_literals = |out: &mut Vec<u8>, from: usize, to: usize| {
        for chunk in stream[from..to].chunks(MAX_LITERALS) {
            out.push((chunk.len() - 1) as u8);
            out.extend_from_slice(chunk);
        }
    };
    while i < stream.len() {
        if stream[i] == 0 && stream.get(i + 1) == Some(&0) {
            flush_literals(out, literal_start, i);
            let mut n = 0;
            while i < stream.len() && stream[i] == 0 {
                n += 1;
                i += 1;
            }
            while n > 0 {
                let run = n.min(MAX_ZEROS);
                out.push((127 + run) as u8);
                n -= run;
            }
            literal_start = i;
        } else {
            i += 1;
        }
    }
    flush_literals(out, literal_start, stream.len());
}

/// XORs `out` with `with` over their common length (a loop the compiler vectorizes).
fn xor_into(out: &mut [u8], with: &[u8]) {
    for (b, p) in out.iter_mut().zip(with) {
        *b ^= p;
    }
}

/// Reads a packed batch of `rows` rows that unpacks to `unpacked_len` bytes, refusing one
/// whose stated lengths exceed `limit` bytes or what the tokens can give before anything is
/// allocated. Returns the rows' bytes, one after the other, and each row's range in them.
pub fn unpack_rows(
    packed: &[u8],
    rows: usize,
    unpacked_len: usize,
    limit: usize,
) -> Result<(Vec<u8>, Vec<Range<usize>>), RowPackError> {
    if unpacked_len > limit
        || unpacked_len > packed.len().saturating_mul(MAX_ZEROS)
        || rows > unpacked_len / 4
    {
        return Err(RowPackError::LengthOutOfRange);
    }
    // zeroed at once: a zero run only moves past its bytes
    let mut stream = vec![0u8; unpacked_len];
    let mut filled = 0;
    let mut i = 0;
    while i < packed.len() {
        let c = packed[i] as usize;
        i += 1;
        let n = if c < 128 {
            let n = c + 1;
            let literal = packed.get(i..i + n).ok_or(RowPackError::LengthMismatch)?;
            stream
                .get_mut(filled..filled + n)
                .ok_or(RowPackError::LengthMismatch)?
                .copy_from_slice(literal);
            i += n;
            n
        } else {
            c - 127
        };
        filled += n;
        if filled > unpacked_len {
            return Err(RowPackError::LengthMismatch);
        }
    }
    if filled != unpacked_len {
        return Err(RowPackError::LengthMismatch);
    }
    // undo the XOR in place, unit by unit: the previous unit is already restored
    let mut ranges = Vec::with_capacity(rows);
    let mut previous = 0..0;
    let mut at = 0;
    for _ in 0..rows {
        if at + 4 > stream.len() {
            return Err(RowPackError::RowsMismatch);
        }
        let (restored, rest) = stream.split_at_mut(at);
        let prev = &restored[previous];
        xor_into(&mut rest[..4], prev);
        let len = u32::from_le_bytes(rest[..4].try_into().unwrap()) as usize;
        let unit = 4usize
            .checked_add(len)
            .filter(|&u| u <= rest.len())
            .ok_or(RowPackError::RowsMismatch)?;
        xor_into(&mut rest[4..unit], prev.get(4..).unwrap_or_default());
        ranges.push(at + 4..at + unit);
        previous = at..at + unit;
        at += unit;
    }
    if at != stream.len() {
        return Err(RowPackError::RowsMismatch);
    }
    Ok((stream, ranges))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Rng;

    /// The reference: each unit XORed with the previous one, then written as tokens the
    /// simplest way (every zero run of two or more folded, everything else literal).
    fn reference(rows: &[Vec<u8>]) -> Vec<u8> {
        let mut stream = Vec::new();
        let mut previous: Vec<u8> = Vec::new();
        for r in rows {
            let mut unit = (r.len() as u32).to_le_bytes().to_vec();
            unit.extend_from_slice(r);
            let xored: Vec<u8> = unit
                .iter()
                .enumerate()
                .map(|(k, b)| b ^ previous.get(k).copied().unwrap_or(0))
                .collect();
            stream.extend_from_slice(&xored);
            previous = unit;
        }
        let mut out = Vec::new();
        let mut literals: Vec<u8> = Vec::new();
        let mut i = 0;
        let flush = |out: &mut Vec<u8>, literals: &mut Vec<u8>| {
            for c in literals.chunks(128) {
                out.push(c.len() as u8 - 1);
                out.extend_from_slice(c);
            }
            literals.clear();
        };
        while i < stream.len() {
            let zeros = stream[i..].iter().take_while(|&&b| b == 0).count();
            if zeros >= 2 {
                flush(&mut out, &mut literals);
                let mut n = zeros;
                while n > 0 {
                    let run = n.min(128);
                    out.push((127 + run) as u8);
                    n -= run;
                }
                i += zeros;
            } else {
                literals.push(stream[i]);
                i += 1;
            }
        }
        flush(&mut out, &mut literals);
        out
    }

    fn batches() -> Vec<Vec<Vec<u8>>> {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut all = vec![
            vec![],
            vec![vec![]],
            vec![vec![], vec![], vec![0]],
            vec![vec![0; 1000]],
            vec![vec![1; 300], vec![1; 300], vec![1; 299], vec![2; 301]],
            vec![(0..=255u8).collect(), (0..=255u8).rev().collect()],
        ];
        for _ in 0..200 {
            let rows = (rng.next() % 40) as usize;
            let width = (rng.next() % 200) as usize;
            let zeros = rng.next() % 4;
            let mut batch = Vec::new();
            for _ in 0..rows {
                let len = if rng.next() % 5 == 0 {
                    (rng.next() % 300) as usize
                } else {
                    width
                };
                let row: Vec<u8> = (0..len)
                    .map(|_| match rng.next() % 4 {
                        n if n < zeros => 0,
                        _ => (rng.next() % 7) as u8 * 37,
                    })
                    .collect();
                batch.push(row);
            }
            all.push(batch);
        }
        all
    }

    #[test]
    fn packs_as_the_reference_and_back() {
        for batch in batches() {
            let mut p = RowPacker::new();
            for r in &batch {
                p.push(r);
            }
            let mut packed = Vec::new();
            let (rows, len) = p.finish(&mut packed);
            assert_eq!(rows, batch.len());
            assert_eq!(
                packed,
                reference(&batch),
                "tokens differ from the reference's"
            );
            let (bytes, ranges) = unpack_rows(&packed, rows, len, usize::MAX).unwrap();
            let back: Vec<Vec<u8>> = ranges.into_iter().map(|r| bytes[r].to_vec()).collect();
            assert_eq!(back, batch);
        }
    }

    #[test]
    fn a_packer_is_empty_after_finish() {
        let mut p = RowPacker::new();
        p.push(&[1, 2, 3]);
        p.finish(&mut Vec::new());
        p.push(&[4, 5]);
        let mut packed = Vec::new();
        let (rows, len) = p.finish(&mut packed);
        let (bytes, ranges) = unpack_rows(&packed, rows, len, usize::MAX).unwrap();
        assert_eq!(ranges.len(), 1);
        assert_eq!(&bytes[ranges[0].clone()], &[4, 5]);
    }

    #[test]
    fn damaged_batches_are_errors_never_panics() {
        let batch: Vec<Vec<u8>> = vec![vec![7; 20], vec![7, 0, 0, 0, 9], vec![]];
        let mut p = RowPacker::new();
        batch.iter().for_each(|r| p.push(r));
        let mut packed = Vec::new();
        let (rows, len) = p.finish(&mut packed);
        // stated lengths: too large for the tokens, past the limit, wrong by one, too many rows
        assert_eq!(
            unpack_rows(&packed, rows, packed.len() * 128 + 1, usize::MAX),
            Err(RowPackError::LengthOutOfRange)
        );
        assert_eq!(
            unpack_rows(&packed, rows, len, len - 1),
            Err(RowPackError::LengthOutOfRange)
        );
        assert_eq!(
            unpack_rows(&packed, rows, len + 1, usize::MAX),
            Err(RowPackError::LengthMismatch)
        );
        assert_eq!(
            unpack_rows(&packed, rows, len - 1, usize::MAX),
            Err(RowPackError::LengthMismatch)
        );
        assert_eq!(
            unpack_rows(&packed, rows + 1, len, usize::MAX),
            Err(RowPackError::RowsMismatch)
        );
        assert_eq!(
            unpack_rows(&packed, rows - 1, len, usize::MAX),
            Err(RowPackError::RowsMismatch)
        );
        // every cut and every single-byte change reads as an error or as rows within bounds
        for cut in 0..packed.len() {
            let _ = unpack_rows(&packed[..cut], rows, len, usize::MAX);
        }
        for k in 0..packed.len() {
            for v in [0u8, 1, 127, 128, 255] {
                let mut d = packed.clone();
                d[k] = v;
                if let Ok((bytes, ranges)) = unpack_rows(&d, rows, len, usize::MAX) {
                    assert!(ranges.iter().all(|r| r.end <= bytes.len()));
                }
            }
        }
    }

    #[test]
    fn zero_runs_longer_than_a_token_and_literal_runs_longer_than_a_token() {
        let batch = vec![vec![0u8; 1000], (1..=255u8).cycle().take(1000).collect()];
        let mut p = RowPacker::new();
        batch.iter().for_each(|r| p.push(r));
        let mut packed = Vec::new();
        let (rows, len) = p.finish(&mut packed);
        let (bytes, ranges) = unpack_rows(&packed, rows, len, usize::MAX).unwrap();
        assert_eq!(
            ranges
                .iter()
                .map(|r| bytes[r.clone()].to_vec())
                .collect::<Vec<_>>(),
            batch
        );
    }
}

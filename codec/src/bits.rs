//! Byte and bit I/O shared by every encoding.
//!
//! Bit streams are LSB-first: bit `k` of a stream is bit `k % 8` of byte `k / 8`, and a field
//! of `w` bits written at bit position `p` holds its bit `j` at stream bit `p + j`. Integers
//! are little-endian. Nothing here depends on the host's byte order.

use crate::error::{DecodeError, DecodeResult};

/// Mask of the low `width` bits; `width == 64` gives all ones (a plain `1 << 64` would
/// overflow, so the shift-by-64 case is spelled out).
#[inline(always)]
pub fn low_mask(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

/// Number of bits needed to hold `x` (0 for 0, 64 for values with the top bit set).
#[inline(always)]
pub fn bit_width(x: u64) -> u32 {
    64 - x.leading_zeros()
}

/// Bytes needed for `count` fields of `width` bits.
#[inline]
pub fn packed_len(count: usize, width: u32) -> usize {
    ((count as u128 * width as u128).div_ceil(8)) as usize
}

/// Appends fields to a byte vector through a 64-bit accumulator; only whole bytes are
/// flushed, the partial last byte is written by [`BitWriter::finish`].
pub struct BitWriter<'a> {
    out: &'a mut Vec<u8>,
    acc: u64,
    /// Number of valid bits in `acc` (0..=63 between calls).
    fill: u32,
}

impl<'a> BitWriter<'a> {
    pub fn new(out: &'a mut Vec<u8>) -> Self {
        BitWriter {
            out,
            acc: 0,
            fill: 0,
        }
    }

    /// Writes the low `width` bits of `value` (`width` in 0..=64; higher bits of `value`
    /// must be zero).
    #[inline(always)]
    pub fn write(&mut self, value: u64, width: u32) {
        debug_assert!(width <= 64);
        debug_assert!(value & !low_mask(width) == 0);
        if width == 0 {
            return;
        }
        self.acc |= value << self.fill; // fill < 64, so the shift is defined
        let total = self.fill + width;
        if total >= 64 {
            self.out.extend_from_slice(&self.acc.to_le_bytes());
            // the bits of `value` that did not fit; `64 - fill` is in 1..=64
            let consumed = 64 - self.fill;
            self.acc = if consumed == 64 { 0 } else { value >> consumed };
            self.fill = total - 64;
        } else {
            self.fill = total;
        }
    }

    /// Flushes the remaining bits, zero-padded to a whole byte.
    pub fn finish(self) {
        let bytes = self.fill.div_ceil(8) as usize;
        self.out.extend_from_slice(&self.acc.to_le_bytes()[..bytes]);
    }
}

/// Reads fields back from an LSB-first bit stream. Reads past the end are refused by
/// [`BitReader::new`]'s caller checking the length, or by [`BitReader::read_checked`].
pub struct BitReader<'a> {
    data: &'a [u8],
    /// Next bit position.
    pos: usize,
}

impl<'a> BitReader<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        BitReader { data, pos: 0 }
    }

    /// A reader starting at bit `pos`.
    pub fn at(data: &'a [u8], pos: usize) -> Self {
        BitReader { data, pos }
    }

    pub fn bit_position(&self) -> usize {
        self.pos
    }

    /// Reads `width` bits (0..=64), failing if the stream has fewer left.
    #[inline(always)]
    pub fn read_checked(&mut self, width: u32, what: &'static str) -> DecodeResult<u64> {
        let end = self.pos + width as usize;
        if end > self.data.len() * 8 {
            return Err(DecodeError::Truncated {
                what,
                needed: end.div_ceil(8),
                available: self.data.len(),
            });
        }
        let v = read_field(self.data, self.pos, width);
        self.pos = end;
        Ok(v)
    }
}

/// The `width`-bit field at bit `pos` of `data`. The caller guarantees
/// `pos + width <= data.len() * 8`.
#[inline(always)]
pub fn read_field(data: &[u8], pos: usize, width: u32) -> u64 {
    if width == 0 {
        return 0;
    }
    let byte = pos / 8;
    let shift = (pos % 8) as u32;
    // Up to 9 bytes may hold the field (shift 7 + width 64 = 71 bits): load 16 where the
    // input has them, else copy the tail into a zeroed buffer.
    let word = match data.get(byte..byte + 16) {
        Some(chunk) => u128::from_le_bytes(chunk.try_into().unwrap()),
        None => {
            let mut buf = [0u8; 16];
            let n = data.len() - byte;
            buf[..n].copy_from_slice(&data[byte..]);
            u128::from_le_bytes(buf)
        }
    };
    ((word >> shift) as u64) & low_mask(width)
}

/// A bounds-checked cursor over stored bytes: every read names what it was reading so a
/// short input gives a [`DecodeError::Truncated`] that says where.
pub struct ByteReader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> ByteReader<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        ByteReader { data, pos: 0 }
    }

    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    pub fn position(&self) -> usize {
        self.pos
    }

    pub fn take(&mut self, len: usize, what: &'static str) -> DecodeResult<&'a [u8]> {
        if len > self.remaining() {
            return Err(DecodeError::Truncated {
                what,
                needed: len,
                available: self.remaining(),
            });
        }
        let s = &self.data[self.pos..self.pos + len];
        self.pos += len;
        Ok(s)
    }

    pub fn u8(&mut self, what: &'static str) -> DecodeResult<u8> {
        Ok(self.take(1, what)?[0])
    }

    pub fn u16(&mut self, what: &'static str) -> DecodeResult<u16> {
        Ok(u16::from_le_bytes(self.take(2, what)?.try_into().unwrap()))
    }

    pub fn u32(&mut self, what: &'static str) -> DecodeResult<u32> {
        Ok(u32::from_le_bytes(self.take(4, what)?.try_into().unwrap()))
    }

    pub fn u64(&mut self, what: &'static str) -> DecodeResult<u64> {
        Ok(u64::from_le_bytes(self.take(8, what)?.try_into().unwrap()))
    }

    /// Fails unless every byte was consumed.
    pub fn finish(&self) -> DecodeResult<()> {
        match self.remaining() {
            0 => Ok(()),
            count => Err(DecodeError::TrailingBytes { count }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_and_widths_at_the_edges() {
        assert_eq!(low_mask(0), 0);
        assert_eq!(low_mask(1), 1);
        assert_eq!(low_mask(63), u64::MAX >> 1);
        assert_eq!(low_mask(64), u64::MAX);
        assert_eq!(bit_width(0), 0);
        assert_eq!(bit_width(1), 1);
        assert_eq!(bit_width(u64::MAX), 64);
        assert_eq!(packed_len(1024, 64), 8192);
        assert_eq!(packed_len(3, 7), 3);
        assert_eq!(packed_len(0, 64), 0);
    }

    #[test]
    fn writer_is_lsb_first_and_reader_inverts_it() {
        let mut out = Vec::new();
        let mut w = BitWriter::new(&mut out);
        w.write(0b1, 1);
        w.write(0b10, 2);
        w.write(u64::MAX, 64);
        w.write(0, 0);
        w.write(0x5, 3);
        w.finish();
        // first byte: bit0 = 1, bits1..2 = 0b10 -> 0b101, then 64 ones from bit 3
        assert_eq!(out[0], 0b1111_1101);
        assert_eq!(out.len(), (1 + 2 + 64 + 3usize).div_ceil(8));
        let mut r = BitReader::new(&out);
        assert_eq!(r.read_checked(1, "t").unwrap(), 1);
        assert_eq!(r.read_checked(2, "t").unwrap(), 2);
        assert_eq!(r.read_checked(64, "t").unwrap(), u64::MAX);
        assert_eq!(r.read_checked(0, "t").unwrap(), 0);
        assert_eq!(r.read_checked(3, "t").unwrap(), 5);
        assert!(r.read_checked(8, "t").is_err());
    }
}

//! What a vector is: a kind, up to [`MAX_ROWS`] rows, a null bitmap, and the non-null values
//! in row order.

use crate::error::{DecodeError, DecodeResult};

/// Rows in a full vector.
pub const MAX_ROWS: usize = 1024;

/// The most bytes of values one decoded vector may hold (1.5 GiB). The extension's writer cuts
/// a stripe once its buffered values reach 256 MiB, and PostgreSQL values are at most 1 GiB,
/// so no stripe it writes holds a vector past 1.25 GiB; an encoding that would expand past
/// this (a dictionary repeating long entries) is corrupt, and is refused before memory is
/// sized from it.
pub const MAX_VECTOR_BYTES: u64 = 3 << 29;

/// The value kinds the codec understands natively. The byte values are part of the format
/// (the first byte of every vector).
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Kind {
    /// 1-byte signed integer (bool, "char").
    Int8 = 1,
    /// 2-byte signed integer (int2).
    Int16 = 2,
    /// 4-byte signed integer (int4, date, oid as its bit pattern).
    Int32 = 3,
    /// 8-byte signed integer (int8, time, timestamp, timestamptz).
    Int64 = 4,
    Float32 = 5,
    Float64 = 6,
    /// Variable-length byte strings (text, bytea, numeric, any varlena, as opaque bytes).
    Bytes = 7,
    /// Opaque fixed-width values of [`Fixed`](Kind::Fixed)'s width (uuid, macaddr, ...).
    Fixed = 8,
}

impl Kind {
    pub fn from_tag(tag: u8) -> DecodeResult<Kind> {
        Ok(match tag {
            1 => Kind::Int8,
            2 => Kind::Int16,
            3 => Kind::Int32,
            4 => Kind::Int64,
            5 => Kind::Float32,
            6 => Kind::Float64,
            7 => Kind::Bytes,
            8 => Kind::Fixed,
            value => {
                return Err(DecodeError::UnknownTag {
                    what: "value kind",
                    value,
                })
            }
        })
    }

    /// Width in bytes of one value of an integer or float kind.
    pub fn lane_bytes(self) -> Option<usize> {
        match self {
            Kind::Int8 => Some(1),
            Kind::Int16 => Some(2),
            Kind::Int32 | Kind::Float32 => Some(4),
            Kind::Int64 | Kind::Float64 => Some(8),
            Kind::Bytes | Kind::Fixed => None,
        }
    }

    pub fn is_integer(self) -> bool {
        matches!(self, Kind::Int8 | Kind::Int16 | Kind::Int32 | Kind::Int64)
    }

    pub fn is_float(self) -> bool {
        matches!(self, Kind::Float32 | Kind::Float64)
    }
}

/// Variable-length byte strings: value `i` is `data[offsets[i]..offsets[i + 1]]`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ByteStrings {
    pub offsets: Vec<usize>,
    pub data: Vec<u8>,
}

impl ByteStrings {
    pub fn new() -> Self {
        ByteStrings {
            offsets: vec![0],
            data: Vec::new(),
        }
    }

    pub fn push(&mut self, value: &[u8]) {
        self.data.extend_from_slice(value);
        self.offsets.push(self.data.len());
    }

    pub fn as_ref(&self) -> BytesRef<'_> {
        BytesRef {
            offsets: &self.offsets,
            data: &self.data,
        }
    }

    pub fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T: AsRef<[u8]>> FromIterator<T> for ByteStrings {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let mut s = ByteStrings::new();
        for v in iter {
            s.push(v.as_ref());
        }
        s
    }
}

/// Borrowed byte strings; `offsets` has one more entry than there are values and never
/// decreases.
#[derive(Debug, Clone, Copy)]
pub struct BytesRef<'a> {
    pub offsets: &'a [usize],
    pub data: &'a [u8],
}

impl<'a> BytesRef<'a> {
    pub fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline]
    pub fn get(&self, i: usize) -> &'a [u8] {
        &self.data[self.offsets[i]..self.offsets[i + 1]]
    }

    pub fn iter(&self) -> impl Iterator<Item = &'a [u8]> + '_ {
        (0..self.len()).map(move |i| self.get(i))
    }
}

/// The non-null values of a vector, in row order (owned).
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    Int8(Vec<i8>),
    Int16(Vec<i16>),
    Int32(Vec<i32>),
    Int64(Vec<i64>),
    Float32(Vec<f32>),
    Float64(Vec<f64>),
    Bytes(ByteStrings),
    Fixed { width: u16, data: Vec<u8> },
}

/// The non-null values of a vector, in row order (borrowed): the encoder's input.
#[derive(Debug, Clone, Copy)]
pub enum ValuesRef<'a> {
    Int8(&'a [i8]),
    Int16(&'a [i16]),
    Int32(&'a [i32]),
    Int64(&'a [i64]),
    Float32(&'a [f32]),
    Float64(&'a [f64]),
    Bytes(BytesRef<'a>),
    Fixed { width: u16, data: &'a [u8] },
}

impl Values {
    pub fn as_ref(&self) -> ValuesRef<'_> {
        match self {
            Values::Int8(v) => ValuesRef::Int8(v),
            Values::Int16(v) => ValuesRef::Int16(v),
            Values::Int32(v) => ValuesRef::Int32(v),
            Values::Int64(v) => ValuesRef::Int64(v),
            Values::Float32(v) => ValuesRef::Float32(v),
            Values::Float64(v) => ValuesRef::Float64(v),
            Values::Bytes(v) => ValuesRef::Bytes(v.as_ref()),
            Values::Fixed { width, data } => ValuesRef::Fixed {
                width: *width,
                data,
            },
        }
    }

    pub fn len(&self) -> usize {
        self.as_ref().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bitwise equality: floats compare by bit pattern, so NaN payloads and -0.0 count.
    pub fn bitwise_eq(&self, other: &Values) -> bool {
        match (self, other) {
            (Values::Float32(a), Values::Float32(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
            }
            (Values::Float64(a), Values::Float64(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
            }
            _ => self == other,
        }
    }
}

impl<'a> ValuesRef<'a> {
    /// `self[i]` for every i of `picks`, in order (each must index a value).
    pub fn gather(&self, picks: impl ExactSizeIterator<Item = usize> + Clone) -> Values {
        macro_rules! pick {
            ($v:expr, $variant:ident) => {
                Values::$variant(picks.map(|i| $v[i]).collect())
            };
        }
        match self {
            ValuesRef::Int8(v) => pick!(v, Int8),
            ValuesRef::Int16(v) => pick!(v, Int16),
            ValuesRef::Int32(v) => pick!(v, Int32),
            ValuesRef::Int64(v) => pick!(v, Int64),
            ValuesRef::Float32(v) => pick!(v, Float32),
            ValuesRef::Float64(v) => pick!(v, Float64),
            ValuesRef::Bytes(b) => {
                let mut out = ByteStrings::new();
                out.data
                    .reserve(picks.clone().map(|i| b.get(i).len()).sum());
                out.offsets.reserve(picks.len());
                for i in picks {
                    out.push(b.get(i));
                }
                Values::Bytes(out)
            }
            ValuesRef::Fixed { width, data } => {
                let w = *width as usize;
                let mut out = Vec::with_capacity(picks.len() * w);
                for i in picks {
                    out.extend_from_slice(&data[i * w..(i + 1) * w]);
                }
                Values::Fixed {
                    width: *width,
                    data: out,
                }
            }
        }
    }

    pub fn kind(&self) -> Kind {
        match self {
            ValuesRef::Int8(_) => Kind::Int8,
            ValuesRef::Int16(_) => Kind::Int16,
            ValuesRef::Int32(_) => Kind::Int32,
            ValuesRef::Int64(_) => Kind::Int64,
            ValuesRef::Float32(_) => Kind::Float32,
            ValuesRef::Float64(_) => Kind::Float64,
            ValuesRef::Bytes(_) => Kind::Bytes,
            ValuesRef::Fixed { .. } => Kind::Fixed,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            ValuesRef::Int8(v) => v.len(),
            ValuesRef::Int16(v) => v.len(),
            ValuesRef::Int32(v) => v.len(),
            ValuesRef::Int64(v) => v.len(),
            ValuesRef::Float32(v) => v.len(),
            ValuesRef::Float64(v) => v.len(),
            ValuesRef::Bytes(v) => v.len(),
            ValuesRef::Fixed { width, data } => {
                if *width == 0 {
                    0
                } else {
                    data.len() / *width as usize
                }
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The values as i64: integers sign-extended; floats only if every one is an exact
    /// integer (see [`crate::floats`]); `None` for floats that are not, strings and opaque
    /// values. What the bitpack encoding and integer-valued dictionary entries store.
    pub fn as_integers(&self) -> Option<Vec<i64>> {
        match self {
            ValuesRef::Int8(v) => Some(v.iter().map(|&x| x as i64).collect()),
            ValuesRef::Int16(v) => Some(v.iter().map(|&x| x as i64).collect()),
            ValuesRef::Int32(v) => Some(v.iter().map(|&x| x as i64).collect()),
            ValuesRef::Int64(v) => Some(v.to_vec()),
            ValuesRef::Float32(v) => crate::floats::f32s_as_integers(v),
            ValuesRef::Float64(v) => crate::floats::f64s_as_integers(v),
            ValuesRef::Bytes(_) | ValuesRef::Fixed { .. } => None,
        }
    }
}

/// One vector as the encoder sees it.
#[derive(Debug, Clone, Copy)]
pub struct VectorRef<'a> {
    /// Number of rows, nulls included (0..=MAX_ROWS).
    pub rows: usize,
    /// LSB-first bitmap of `ceil(rows / 8)` bytes, bit set = row is null; `None` = no nulls.
    pub nulls: Option<&'a [u8]>,
    /// The non-null values, in row order.
    pub values: ValuesRef<'a>,
}

/// One decoded vector.
#[derive(Debug, Clone, PartialEq)]
pub struct Vector {
    pub rows: usize,
    /// As in [`VectorRef::nulls`]; `None` when the vector has no nulls.
    pub nulls: Option<Vec<u8>>,
    pub values: Values,
}

impl Vector {
    pub fn as_ref(&self) -> VectorRef<'_> {
        VectorRef {
            rows: self.rows,
            nulls: self.nulls.as_deref(),
            values: self.values.as_ref(),
        }
    }

    pub fn is_null(&self, row: usize) -> bool {
        self.nulls
            .as_ref()
            .is_some_and(|b| b[row / 8] >> (row % 8) & 1 == 1)
    }
}

/// The bits of a bitmap's last byte that belong to its `rows` rows (all of them when `rows`
/// is a multiple of 8).
pub fn last_byte_mask(rows: usize) -> u8 {
    match rows % 8 {
        0 => 0xff,
        r => (1u8 << r) - 1,
    }
}

/// Number of set bits among the first `rows` bits of a null bitmap.
pub fn count_nulls(bitmap: &[u8], rows: usize) -> usize {
    let full = rows / 8;
    let mut n: usize = bitmap[..full].iter().map(|b| b.count_ones() as usize).sum();
    if !rows.is_multiple_of(8) {
        n += (bitmap[full] & last_byte_mask(rows)).count_ones() as usize;
    }
    n
}

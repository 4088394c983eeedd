//! pg_columnar's codec: turns one vector (up to 1024 values of one column plus a null mask)
//! into one self-describing encoded byte string and back. Pure Rust: no PostgreSQL, and
//! nothing about the output depends on the host's endianness or CPU features.
//!
//! * [`encode_vector`] tries dictionary → bitpack → float-as-integer → FSST → Gorilla where
//!   each applies, keeps the smallest and falls back to plain (the rule is in [`chooser`]);
//!   it reports what it tried and chose, and the vector's zone map.
//! * [`decode_vector`] reads any vector back, refusing corrupt input with a [`DecodeError`].
//!
//! The byte layout of everything is specified in docs/FORMAT.md.

#![deny(unsafe_op_in_unsafe_fn)]

pub mod aggregate;
pub mod bitpack;
pub mod bits;
pub mod bucket;
pub mod chooser;
pub mod decode;
pub mod dictionary;
mod error;
pub mod filter;
pub mod float_int;
pub mod floats;
pub mod fsst;
pub mod gorilla;
pub mod group;
pub mod plain;
pub mod rice;
pub mod rowpack;
pub mod sort;
pub mod stripe;
#[cfg(test)]
mod testing;
pub mod topn;
pub mod vector;
pub mod zonemap;

pub use chooser::{encode_vector, EncodeError, EncodeReport, FsstDecision, Sizing};
pub use decode::{decode_vector, unpack_row, unpack_vector, Form, Unpacked};
pub use dictionary::SharedDictionary;
pub use error::{DecodeError, DecodeResult};
pub use fsst::SymbolTable;
pub use vector::{
    ByteStrings, BytesRef, Kind, Values, ValuesRef, Vector, VectorRef, MAX_ROWS, MAX_VECTOR_BYTES,
};
pub use zonemap::ZoneMap;

/// What a stripe column shares among its vectors: an FSST symbol table and a dictionary,
/// each present only if the stripe writer built it, and the stripe's row period. Encoder and
/// decoder of a vector must be given the same table and dictionary; the period only guides
/// the encoder (a stride block carries its own lag), so the decoder ignores it.
#[derive(Debug, Clone, Copy, Default)]
pub struct ColumnContext<'a> {
    pub fsst: Option<&'a SymbolTable>,
    pub dictionary: Option<&'a SharedDictionary>,
    /// Rows per period when the stripe interleaves series in a fixed order (see
    /// [`stripe::detect_period`]): integers and dictionary codes are then also tried as
    /// differences from the value this many rows before.
    pub stride: Option<u16>,
}

/// Version of the encoded byte layout specified in docs/FORMAT.md, written in every stripe.
/// A reader refuses a version outside [`OLDEST_READABLE_VERSION`]`..=FORMAT_VERSION`; a
/// change to any encoder's output bytes must bump it.
pub const FORMAT_VERSION: u16 = 4;
/// The oldest stripe format this build reads: 1 lacks patched blocks and stores a sorted
/// stripe's row order the other way round ([`stripe::RowPositionValues`]); 2 lacks Rice
/// delta blocks and 3 the float-as-integer encoding (which a reader of 4 reads wherever they
/// stand).
pub const OLDEST_READABLE_VERSION: u16 = 1;

/// The encodings. The byte values are part of the format (frozen: a test fails if one
/// moves).
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Encoding {
    Plain = 0,
    Dictionary = 1,
    Bitpack = 2,
    Fsst = 3,
    Gorilla = 4,
    /// Floats as integers through a decimal scale or a 16-bit float ([`float_int`]).
    FloatInt = 5,
}

impl Encoding {
    pub const ALL: [Encoding; 6] = [
        Encoding::Plain,
        Encoding::Dictionary,
        Encoding::Bitpack,
        Encoding::Fsst,
        Encoding::Gorilla,
        Encoding::FloatInt,
    ];

    pub fn from_tag(tag: u8) -> DecodeResult<Encoding> {
        Encoding::ALL
            .get(tag as usize)
            .copied()
            .ok_or(DecodeError::UnknownTag {
                what: "encoding",
                value: tag,
            })
    }

    pub fn name(self) -> &'static str {
        match self {
            Encoding::Plain => "plain",
            Encoding::Dictionary => "dictionary",
            Encoding::Bitpack => "bitpack",
            Encoding::Fsst => "fsst",
            Encoding::Gorilla => "gorilla",
            Encoding::FloatInt => "float_int",
        }
    }
}

/// Whether every integer is in `[-2^bits, 2^bits)` (`bits` in 0..=62). Only adds, shifts
/// and ors, so the loop vectorises on every x86_64 (SSE2 has no 64-bit compare); with AVX2
/// (detected at run time) the same loop runs four lanes at a time.
pub(crate) fn all_within_bits(ints: &[i64], bits: u32) -> bool {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is available (checked just above)
        return unsafe { all_within_bits_avx2(ints, bits) };
    }
    all_within_bits_portable(ints, bits)
}

/// [`all_within_bits`] for the baseline target: its twin, tested against it.
#[inline(always)]
pub(crate) fn all_within_bits_portable(ints: &[i64], bits: u32) -> bool {
    debug_assert!(bits <= 62);
    ints.iter().fold(0u64, |acc, &i| {
        acc | (i.wrapping_add(1 << bits) as u64) >> (bits + 1)
    }) == 0
}

/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn all_within_bits_avx2(ints: &[i64], bits: u32) -> bool {
    all_within_bits_portable(ints, bits)
}

/// Whether stored integers fit `kind` (an integer kind: its width; a float kind: exactly
/// representable); one that does not means the stored bytes are corrupt. Branch-free per
/// value, so the loops vectorise.
pub(crate) fn check_integers(kind: Kind, ints: &[i64]) -> DecodeResult<()> {
    macro_rules! fits {
        ($t:ty) => {{
            if ints.iter().fold(true, |ok, &v| ok & (v as $t as i64 == v)) {
                Ok(())
            } else {
                let bad = ints.iter().copied().find(|&v| v as $t as i64 != v).unwrap();
                Err(DecodeError::OutOfRange {
                    what: concat!(stringify!($t), " value"),
                    value: bad as u64,
                    limit: <$t>::MAX as u64,
                })
            }
        }};
    }
    match kind {
        Kind::Int8 => fits!(i8),
        Kind::Int16 => fits!(i16),
        Kind::Int32 => fits!(i32),
        Kind::Int64 => Ok(()),
        Kind::Float32 | Kind::Float64 => floats::integers_are_floats(kind, ints),
        Kind::Bytes | Kind::Fixed => Err(DecodeError::Inconsistent {
            what: "packed integers for a non-numeric kind",
        }),
    }
}

/// The values of `kind` that integers stand for; they must have passed [`check_integers`].
pub(crate) fn integers_into(kind: Kind, ints: Vec<i64>) -> Values {
    match kind {
        Kind::Int8 => Values::Int8(ints.iter().map(|&v| v as i8).collect()),
        Kind::Int16 => Values::Int16(ints.iter().map(|&v| v as i16).collect()),
        Kind::Int32 => Values::Int32(ints.iter().map(|&v| v as i32).collect()),
        Kind::Int64 => Values::Int64(ints),
        Kind::Float32 | Kind::Float64 => floats::integers_to_floats(kind, &ints),
        Kind::Bytes | Kind::Fixed => unreachable!("checked by check_integers"),
    }
}

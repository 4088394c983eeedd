//! Reading an encoded vector back: header, null section, then the payload of its encoding.
//! Every length and tag is checked before use; corrupt input gives a [`DecodeError`].
//!
//! Two steps: [`unpack_vector`] reads and checks everything and stops at the form the
//! encoding gives most cheaply ([`Form`]: integers for a bitpack vector, codes for a
//! dictionary vector); [`Unpacked::materialize`] turns that into the values. A filter can
//! test the unpacked form directly (`filter::select_unpacked`), so a vector that no row of
//! survives is never materialized. [`decode_vector`] does both steps.

use crate::bits::ByteReader;
use crate::chooser::{NULLS_ALL, NULLS_BITMAP, NULLS_NONE};
use crate::error::{DecodeError, DecodeResult};
use crate::vector::{count_nulls, last_byte_mask, ByteStrings, Kind, Values, Vector, MAX_ROWS};
use crate::fsst;
use crate::{bitpack, dictionary, gorilla, plain, ColumnContext, Encoding};

fn empty_values(kind: Kind, fixed_width: u16) -> Values {
    match kind {
        Kind::Int8 => Values::Int8(Vec::new()),
        Kind::Int16 => Values::Int16(Vec::new()),
        Kind::Int32 => Values::Int32(Vec::new()),
        Kind::Int64 => Values::Int64(Vec::new()),
        Kind::Float32 => Values::Float32(Vec::new()),
        Kind::Float64 => Values::Float64(Vec::new()),
        Kind::Bytes => Values::Bytes(ByteStrings::new()),
        Kind::Fixed => Values::Fixed { width: fixed_width, data: Vec::new() },
    }
}

/// Decodes one whole encoded vector (`bytes` must be exactly the vector), with the context
/// its stripe column was encoded with.
pub fn decode_vector(bytes: &[u8], ctx: &ColumnContext<'_>) -> DecodeResult<Vector> {
    Ok(unpack_vector(bytes, ctx)?.materialize(ctx))
}

/// The non-null values of a vector in the form its encoding gives most cheaply. Every form
/// has been checked: integers stand for values of their kind, codes index their entries.
#[derive(Debug, Clone, PartialEq)]
pub enum Form {
    Values(Values),
    /// A bitpack vector: the integers that the values of `kind` are (integer kinds, and
    /// floats that are all exact integers).
    Integers { kind: Kind, ints: Vec<i64> },
    /// A dictionary vector: codes into its inline entries, or (`None`) into the stripe
    /// column's shared dictionary.
    Codes { inline: Option<Values>, codes: Vec<i64> },
}

/// A vector read and checked, its values still in their [`Form`].
#[derive(Debug, Clone, PartialEq)]
pub struct Unpacked {
    pub rows: usize,
    /// As in [`Vector::nulls`].
    pub nulls: Option<Vec<u8>>,
    pub form: Form,
}

impl Unpacked {
    /// The entries the codes of a [`Form::Codes`] index; `ctx` must be the one the vector
    /// was unpacked with.
    pub fn entries<'a>(inline: &'a Option<Values>, ctx: &ColumnContext<'a>) -> &'a Values {
        inline.as_ref().unwrap_or_else(|| ctx.dictionary.expect("unpack_vector checked the shared dictionary").entries())
    }

    /// The kind of the values and, for fixed-width ones, their width; `None` if the vector
    /// has no non-null value (any kind fits it then).
    pub fn value_kind(&self, ctx: &ColumnContext<'_>) -> Option<(Kind, u16)> {
        let values = match &self.form {
            Form::Values(v) => v,
            Form::Integers { kind, ints } => return (!ints.is_empty()).then_some((*kind, 0)),
            Form::Codes { inline, codes } => {
                if codes.is_empty() {
                    return None;
                }
                Unpacked::entries(inline, ctx)
            }
        };
        let width = match values {
            Values::Fixed { width, .. } => *width,
            _ => 0,
        };
        (!values.is_empty() || matches!(self.form, Form::Codes { .. })).then(|| (values.as_ref().kind(), width))
    }

    /// The values; `ctx` must be the one the vector was unpacked with.
    pub fn materialize(self, ctx: &ColumnContext<'_>) -> Vector {
        let values = match self.form {
            Form::Values(v) => v,
            Form::Integers { kind, ints } => crate::integers_into(kind, ints),
            Form::Codes { inline, codes } => dictionary::gather(Unpacked::entries(&inline, ctx), &codes),
        };
        Vector { rows: self.rows, nulls: self.nulls, values }
    }
}

/// Reads and checks one whole encoded vector up to its [`Form`] (see [`decode_vector`]).
pub fn unpack_vector(bytes: &[u8], ctx: &ColumnContext<'_>) -> DecodeResult<Unpacked> {
    let mut r = ByteReader::new(bytes);
    let kind = Kind::from_tag(r.u8("vector kind")?)?;
    let fixed_width = if kind == Kind::Fixed {
        let w = r.u16("fixed width")?;
        if w == 0 {
            return Err(DecodeError::OutOfRange { what: "fixed width", value: 0, limit: u16::MAX as u64 });
        }
        w
    } else {
        0
    };
    let rows = r.u16("row count")? as usize;
    if rows > MAX_ROWS {
        return Err(DecodeError::OutOfRange { what: "row count", value: rows as u64, limit: MAX_ROWS as u64 });
    }
    let (nulls, null_count) = match r.u8("null mode")? {
        NULLS_NONE => (None, 0),
        NULLS_ALL => {
            if rows == 0 {
                return Err(DecodeError::Inconsistent { what: "all-null vector without rows" });
            }
            let mut b = vec![0xffu8; rows.div_ceil(8)];
            *b.last_mut().unwrap() = last_byte_mask(rows);
            (Some(b), rows)
        }
        NULLS_BITMAP => {
            let b = r.take(rows.div_ceil(8), "null bitmap")?.to_vec();
            let n = count_nulls(&b, rows);
            if n == 0 || n == rows || b[rows.div_ceil(8) - 1] & !last_byte_mask(rows) != 0 {
                return Err(DecodeError::Inconsistent { what: "null bitmap" });
            }
            (Some(b), n)
        }
        value => return Err(DecodeError::UnknownTag { what: "null mode", value }),
    };
    let count = rows - null_count;
    if count == 0 {
        r.finish()?;
        return Ok(Unpacked { rows, nulls, form: Form::Values(empty_values(kind, fixed_width)) });
    }
    let encoding = Encoding::from_tag(r.u8("encoding")?)?;
    let values = match encoding {
        Encoding::Plain => plain::decode(&mut r, kind, fixed_width, count)?,
        Encoding::Dictionary => {
            let (inline, codes) = dictionary::unpack(&mut r, kind, fixed_width, count, ctx.dictionary)?;
            r.finish()?;
            return Ok(Unpacked { rows, nulls, form: Form::Codes { inline, codes } });
        }
        Encoding::Bitpack => {
            let ints = bitpack::read_integers(&mut r, kind, count)?;
            r.finish()?;
            return Ok(Unpacked { rows, nulls, form: Form::Integers { kind, ints } });
        }
        Encoding::Gorilla => {
            let bits = match kind {
                Kind::Float32 => 32,
                Kind::Float64 => 64,
                _ => return Err(DecodeError::Inconsistent { what: "gorilla encoding for a non-float kind" }),
            };
            let lanes = gorilla::decode(r.take(r.remaining(), "gorilla stream")?, count, bits)?;
            if bits == 32 {
                Values::Float32(lanes.into_iter().map(|b| f32::from_bits(b as u32)).collect())
            } else {
                Values::Float64(lanes.into_iter().map(f64::from_bits).collect())
            }
        }
        Encoding::Fsst => {
            if kind != Kind::Bytes {
                return Err(DecodeError::Inconsistent { what: "FSST encoding for a non-string kind" });
            }
            let table = ctx.fsst.ok_or(DecodeError::MissingSymbolTable)?;
            Values::Bytes(fsst::decode(&mut r, count, table)?)
        }
    };
    r.finish()?;
    Ok(Unpacked { rows, nulls, form: Form::Values(values) })
}

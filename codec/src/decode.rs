//! Reading an encoded vector back: header, null section, then the payload of its encoding.
//! Every length and tag is checked before use; corrupt input gives a [`DecodeError`].
//!
//! Two steps: [`unpack_vector`] reads and checks everything and stops at the form the
//! encoding gives most cheaply ([`Form`]: integers for a bitpack vector, codes for a
//! dictionary vector, integers over a power of ten for a decimal float-as-integer vector);
//! [`Unpacked::materialize`] turns that into the values. A filter can
//! test the unpacked form directly (`filter::select_unpacked`), so a vector that no row of
//! survives is never materialized. [`decode_vector`] does both steps.

use crate::bits::ByteReader;
use crate::chooser::{NULLS_ALL, NULLS_BITMAP, NULLS_NONE};
use crate::error::{DecodeError, DecodeResult};
use crate::fsst;
use crate::vector::{count_nulls, last_byte_mask, ByteStrings, Kind, Values, Vector, MAX_ROWS};
use crate::{bitpack, dictionary, float_int, gorilla, plain, ColumnContext, Encoding};

fn empty_values(kind: Kind, fixed_width: u16) -> Values {
    match kind {
        Kind::Int8 => Values::Int8(Vec::new()),
        Kind::Int16 => Values::Int16(Vec::new()),
        Kind::Int32 => Values::Int32(Vec::new()),
        Kind::Int64 => Values::Int64(Vec::new()),
        Kind::Float32 => Values::Float32(Vec::new()),
        Kind::Float64 => Values::Float64(Vec::new()),
        Kind::Bytes => Values::Bytes(ByteStrings::new()),
        Kind::Fixed => Values::Fixed {
            width: fixed_width,
            data: Vec::new(),
        },
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
    Integers {
        kind: Kind,
        ints: Vec<i64>,
    },
    /// A dictionary vector: codes into its inline entries, or (`None`) into the stripe
    /// column's shared dictionary.
    Codes {
        inline: Option<Values>,
        codes: Vec<i64>,
    },
    /// A float-as-integer vector of a decimal mapping: integers over a power of ten, the
    /// exceptions apart.
    Scaled(float_int::Scaled),
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
        inline.as_ref().unwrap_or_else(|| {
            ctx.dictionary
                .expect("unpack_vector checked the shared dictionary")
                .entries()
        })
    }

    /// The kind of the values and, for fixed-width ones, their width; `None` if the vector
    /// has no non-null value (any kind fits it then).
    pub fn value_kind(&self, ctx: &ColumnContext<'_>) -> Option<(Kind, u16)> {
        let values = match &self.form {
            Form::Values(v) => v,
            Form::Integers { kind, ints } => return (!ints.is_empty()).then_some((*kind, 0)),
            Form::Scaled(s) => return (!s.ints.is_empty()).then_some((s.kind, 0)),
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
        (!values.is_empty() || matches!(self.form, Form::Codes { .. }))
            .then(|| (values.as_ref().kind(), width))
    }

    /// The values; `ctx` must be the one the vector was unpacked with.
    pub fn materialize(self, ctx: &ColumnContext<'_>) -> Vector {
        let values = match self.form {
            Form::Values(v) => v,
            Form::Integers { kind, ints } => crate::integers_into(kind, ints),
            Form::Scaled(s) => s.into_values(),
            Form::Codes { inline, codes } => {
                dictionary::gather(Unpacked::entries(&inline, ctx), &codes)
            }
        };
        Vector {
            rows: self.rows,
            nulls: self.nulls,
            values,
        }
    }
}

/// A vector's null section as stored.
enum NullSection<'a> {
    None,
    All,
    Bitmap(&'a [u8]),
}

/// What precedes a vector's encoding tag: its kind, fixed width (0 unless
/// [`Kind::Fixed`]), rows and null section, all checked.
struct Header<'a> {
    kind: Kind,
    fixed_width: u16,
    rows: usize,
    nulls: NullSection<'a>,
    null_count: usize,
}

fn read_header<'a>(r: &mut ByteReader<'a>) -> DecodeResult<Header<'a>> {
    let kind = Kind::from_tag(r.u8("vector kind")?)?;
    let fixed_width = if kind == Kind::Fixed {
        let w = r.u16("fixed width")?;
        if w == 0 {
            return Err(DecodeError::OutOfRange {
                what: "fixed width",
                value: 0,
                limit: u16::MAX as u64,
            });
        }
        w
    } else {
        0
    };
    let rows = r.u16("row count")? as usize;
    if rows > MAX_ROWS {
        return Err(DecodeError::OutOfRange {
            what: "row count",
            value: rows as u64,
            limit: MAX_ROWS as u64,
        });
    }
    let (nulls, null_count) = match r.u8("null mode")? {
        NULLS_NONE => (NullSection::None, 0),
        NULLS_ALL => {
            if rows == 0 {
                return Err(DecodeError::Inconsistent {
                    what: "all-null vector without rows",
                });
            }
            (NullSection::All, rows)
        }
        NULLS_BITMAP => {
            let b = r.take(rows.div_ceil(8), "null bitmap")?;
            let n = count_nulls(b, rows);
            if n == 0 || n == rows || b[rows.div_ceil(8) - 1] & !last_byte_mask(rows) != 0 {
                return Err(DecodeError::Inconsistent {
                    what: "null bitmap",
                });
            }
            (NullSection::Bitmap(b), n)
        }
        value => {
            return Err(DecodeError::UnknownTag {
                what: "null mode",
                value,
            })
        }
    };
    Ok(Header {
        kind,
        fixed_width,
        rows,
        nulls,
        null_count,
    })
}

/// The lane width of a Gorilla vector of `kind` (a float kind).
fn gorilla_lane_bits(kind: Kind) -> DecodeResult<u32> {
    match kind {
        Kind::Float32 => Ok(32),
        Kind::Float64 => Ok(64),
        _ => Err(DecodeError::Inconsistent {
            what: "gorilla encoding for a non-float kind",
        }),
    }
}

/// The symbol table an FSST vector of `kind` (byte strings) is decoded with.
fn fsst_table<'a>(kind: Kind, ctx: &ColumnContext<'a>) -> DecodeResult<&'a crate::SymbolTable> {
    if kind != Kind::Bytes {
        return Err(DecodeError::Inconsistent {
            what: "FSST encoding for a non-string kind",
        });
    }
    ctx.fsst.ok_or(DecodeError::MissingSymbolTable)
}

/// Reads and checks one whole encoded vector up to its [`Form`] (see [`decode_vector`]).
pub fn unpack_vector(bytes: &[u8], ctx: &ColumnContext<'_>) -> DecodeResult<Unpacked> {
    let mut r = ByteReader::new(bytes);
    let Header {
        kind,
        fixed_width,
        rows,
        nulls,
        null_count,
    } = read_header(&mut r)?;
    let nulls = match nulls {
        NullSection::None => None,
        NullSection::All => {
            let mut b = vec![0xffu8; rows.div_ceil(8)];
            *b.last_mut().unwrap() = last_byte_mask(rows);
            Some(b)
        }
        NullSection::Bitmap(b) => Some(b.to_vec()),
    };
    let count = rows - null_count;
    if count == 0 {
        r.finish()?;
        return Ok(Unpacked {
            rows,
            nulls,
            form: Form::Values(empty_values(kind, fixed_width)),
        });
    }
    let encoding = Encoding::from_tag(r.u8("encoding")?)?;
    let values = match encoding {
        Encoding::Plain => plain::decode(&mut r, kind, fixed_width, count)?,
        Encoding::Dictionary => {
            let (inline, codes) =
                dictionary::unpack(&mut r, kind, fixed_width, count, ctx.dictionary)?;
            r.finish()?;
            return Ok(Unpacked {
                rows,
                nulls,
                form: Form::Codes { inline, codes },
            });
        }
        Encoding::Bitpack => {
            let ints = bitpack::read_integers(&mut r, kind, count)?;
            r.finish()?;
            return Ok(Unpacked {
                rows,
                nulls,
                form: Form::Integers { kind, ints },
            });
        }
        Encoding::Gorilla => {
            let bits = gorilla_lane_bits(kind)?;
            let lanes = gorilla::decode(r.take(r.remaining(), "gorilla stream")?, count, bits)?;
            if bits == 32 {
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
        Encoding::Fsst => {
            let table = fsst_table(kind, ctx)?;
            Values::Bytes(fsst::decode(&mut r, count, table)?)
        }
        Encoding::FloatInt => match float_int::unpack(&mut r, kind, count)? {
            Ok(scaled) => {
                r.finish()?;
                return Ok(Unpacked {
                    rows,
                    nulls,
                    form: Form::Scaled(scaled),
                });
            }
            Err(values) => values,
        },
    };
    r.finish()?;
    Ok(Unpacked {
        rows,
        nulls,
        form: Form::Values(values),
    })
}

/// The row count of one whole encoded vector and its row `row`, as an [`Unpacked`] of one
/// row: what [`unpack_vector`] gives for that row, reading only what its value needs where the
/// encoding allows (a row fetched by its number wants one value of each column, not 1,024).
/// A bitpack or dictionary vector gives one integer or code ([`bitpack::value_at`]); a plain
/// vector one value; an FSST vector one string decompressed; a Gorilla stream is read up to
/// the row. The header, the null section and every length read are checked as
/// [`unpack_vector`] checks them; the values of other rows are not (the stripe reader checks
/// the vector's checksum before either). `scratch` is reused between calls.
pub fn unpack_row(
    bytes: &[u8],
    ctx: &ColumnContext<'_>,
    row: usize,
    scratch: &mut Vec<i64>,
) -> DecodeResult<(usize, Unpacked)> {
    let mut r = ByteReader::new(bytes);
    let Header {
        kind,
        fixed_width,
        rows,
        nulls,
        null_count,
    } = read_header(&mut r)?;
    if row >= rows {
        return Err(DecodeError::OutOfRange {
            what: "row of a vector",
            value: row as u64,
            limit: rows.saturating_sub(1) as u64,
        });
    }
    // the row's place among the non-null values (`None`: the row is NULL)
    let index = match nulls {
        NullSection::None => Some(row),
        NullSection::All => None,
        NullSection::Bitmap(b) if b[row / 8] >> (row % 8) & 1 == 1 => None,
        NullSection::Bitmap(b) => Some(row - count_nulls(b, row)),
    };
    let Some(index) = index else {
        return Ok((
            rows,
            Unpacked {
                rows: 1,
                nulls: Some(vec![1]),
                form: Form::Values(empty_values(kind, fixed_width)),
            },
        ));
    };
    let count = rows - null_count;
    let one = |form| {
        Ok((
            rows,
            Unpacked {
                rows: 1,
                nulls: None,
                form,
            },
        ))
    };
    let value = match Encoding::from_tag(r.u8("encoding")?)? {
        Encoding::Plain => match kind {
            Kind::Bytes => {
                let mut b = ByteStrings::new();
                b.push(plain::string_at(&mut r, count, index, scratch)?);
                Values::Bytes(b)
            }
            _ => {
                let width = kind.lane_bytes().unwrap_or(fixed_width as usize);
                let all = r.take(count * width, "plain values")?;
                let mut one = ByteReader::new(&all[index * width..(index + 1) * width]);
                plain::decode(&mut one, kind, fixed_width, 1)?
            }
        },
        Encoding::Dictionary => {
            let (inline, code) = dictionary::unpack_one(
                &mut r,
                kind,
                fixed_width,
                count,
                index,
                ctx.dictionary,
                scratch,
            )?;
            return one(Form::Codes {
                inline,
                codes: vec![code],
            });
        }
        Encoding::Bitpack => {
            let v = bitpack::value_at(&mut r, count, index, scratch)?;
            crate::check_integers(kind, &[v])?;
            return one(Form::Integers {
                kind,
                ints: vec![v],
            });
        }
        Encoding::Gorilla => {
            let bits = gorilla_lane_bits(kind)?;
            let lanes = gorilla::decode_first(
                r.take(r.remaining(), "gorilla stream")?,
                count,
                index + 1,
                bits,
            )?;
            let lane = lanes[index];
            if bits == 32 {
                Values::Float32(vec![f32::from_bits(lane as u32)])
            } else {
                Values::Float64(vec![f64::from_bits(lane)])
            }
        }
        Encoding::Fsst => {
            let table = fsst_table(kind, ctx)?;
            let compressed = plain::string_at(&mut r, count, index, scratch)?;
            let mut b = ByteStrings::new();
            table.decompress_into(compressed, &mut b.data)?;
            b.offsets.push(b.data.len());
            Values::Bytes(b)
        }
        Encoding::FloatInt => float_int::value_at(&mut r, kind, count, index, scratch)?,
    };
    one(Form::Values(value))
}

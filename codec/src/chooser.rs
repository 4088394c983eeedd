//! The encoder's rule, and the vector header.
//!
//! For a vector with at least one non-null value the candidates are sized exactly, in this
//! order, each only where it applies:
//! 1. dictionary (every kind; inline with at most `dictionary::MAX_ENTRIES` distinct values,
//!    or shared when the stripe column has a shared dictionary holding every value; the
//!    smaller of the two, inline on a tie);
//! 2. bitpack (integers; floats whose every value is an exact integer);
//! 3. float-as-integer (floats that are not all exact integers, when a decimal scale or a
//!    16-bit float maps a sample of them: `float_int::plan`);
//! 4. FSST (byte strings, when the stripe column has a symbol table and the best size so
//!    far, plain included, saves less than 25% against raw: `4 * best > 3 * raw`);
//! 5. Gorilla (floats).
//!
//! The smallest candidate wins, ties going to the earlier one; it is written only if it is
//! strictly smaller than plain, otherwise the vector is plain. There are no shortcuts: every
//! applicable candidate is sized on every vector, so the choice is a function of the
//! vector's values alone.

use crate::bitpack::{self, BlockPlan};
use crate::dictionary::{self, DictionaryPlan};
use crate::float_int;
use crate::fsst::{self, SymbolTable};
use crate::gorilla;
use crate::plain;
use crate::vector::{count_nulls, last_byte_mask, Kind, ValuesRef, VectorRef, MAX_ROWS};
use crate::zonemap::{zone_map, ZoneMap};
use crate::ColumnContext;
use crate::Encoding;
use std::fmt;

/// Null section modes (the byte after the row count); part of the format.
pub(crate) const NULLS_NONE: u8 = 0;
pub(crate) const NULLS_BITMAP: u8 = 1;
pub(crate) const NULLS_ALL: u8 = 2;

/// Why FSST was or was not tried on a vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsstDecision {
    /// Not a byte-string vector (or no non-null values).
    NotApplicable,
    /// The stripe column has no FSST symbol table.
    NoSymbolTable,
    /// The best encoding so far already saved at least 25% against raw.
    SkippedBySavings,
    Tried,
}

/// What the encoder did with one vector: for statistics, EXPLAIN and the gate.
#[derive(Debug, Clone, PartialEq)]
pub struct EncodeReport {
    pub kind: Kind,
    pub rows: usize,
    pub null_count: usize,
    /// The encoding written; `None` when the vector has no non-null values (nothing but the
    /// header is stored).
    pub chosen: Option<Encoding>,
    /// How far each candidate was sized, indexed by encoding id.
    pub candidates: [Sizing; 6],
    /// The raw size of the non-null values (see `plain::raw_len`).
    pub raw_len: usize,
    /// Bytes of the whole encoded vector, header included.
    pub encoded_len: usize,
    pub zone_map: ZoneMap,
    pub fsst: FsstDecision,
    /// The dictionary candidate refers to the stripe column's shared dictionary (rather
    /// than holding its own entries).
    pub shared_dictionary: bool,
    /// The chosen encoding packs its integers (bitpack values, dictionary codes) as a stride
    /// block (differences from the value a row period earlier).
    pub stride_block: bool,
}

/// What the chooser learnt about one candidate's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sizing {
    /// Does not apply to this vector (or, for FSST, not tried).
    NotTried,
    /// The candidate's exact payload size.
    Exact(usize),
    /// Sizing stopped once the candidate was already larger than the best so far (so it
    /// could not have won); its size is more than this.
    MoreThan(usize),
}

impl EncodeReport {
    /// Whether the candidate was sized (exactly or until it lost).
    pub fn tried(&self, e: Encoding) -> bool {
        self.candidates[e as usize] != Sizing::NotTried
    }
}

/// The input was not a valid vector (a bug in the caller, never a property of data).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodeError(pub String);

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid vector: {}", self.0)
    }
}

impl std::error::Error for EncodeError {}

enum Candidate<'t> {
    Dictionary(DictionaryPlan),
    Bitpack(BlockPlan, Vec<i64>),
    Fsst(&'t SymbolTable),
    Gorilla(Vec<u64>, u32),
    FloatInt(float_int::FloatIntPlan),
}

/// Float bit patterns, zero-extended, and the float's width in bits.
fn gorilla_lanes(values: &ValuesRef<'_>) -> Option<(Vec<u64>, u32)> {
    match values {
        ValuesRef::Float32(v) => Some((v.iter().map(|x| x.to_bits() as u64).collect(), 32)),
        ValuesRef::Float64(v) => Some((v.iter().map(|x| x.to_bits()).collect(), 64)),
        _ => None,
    }
}

fn validate(v: &VectorRef<'_>) -> Result<usize, EncodeError> {
    if v.rows > MAX_ROWS {
        return Err(EncodeError(format!("{} rows, at most {MAX_ROWS}", v.rows)));
    }
    let nulls = match v.nulls {
        Some(b) => {
            if b.len() < v.rows.div_ceil(8) {
                return Err(EncodeError(format!(
                    "null bitmap of {} bytes for {} rows",
                    b.len(),
                    v.rows
                )));
            }
            count_nulls(b, v.rows)
        }
        None => 0,
    };
    match v.values {
        ValuesRef::Fixed { width, data }
            if width == 0 || !data.len().is_multiple_of(width as usize) =>
        {
            return Err(EncodeError(format!(
                "{} bytes of fixed-width {width} values",
                data.len()
            )));
        }
        ValuesRef::Bytes(b)
            if b.offsets.is_empty()
                || b.offsets.windows(2).any(|w| w[0] > w[1])
                || b.offsets[b.len()] > b.data.len() =>
        {
            return Err(EncodeError(
                "byte string offsets out of order or past the data".into(),
            ));
        }
        _ => {}
    }
    if v.values.len() != v.rows - nulls {
        return Err(EncodeError(format!(
            "{} values for {} rows with {nulls} nulls",
            v.values.len(),
            v.rows
        )));
    }
    Ok(nulls)
}

/// Appends the encoded vector to `out` and reports what was done. `ctx` holds what the
/// stripe column shares: the FSST symbol table ([`fsst::decide_and_build`]) and the shared
/// dictionary ([`SharedDictionary::build`]), where the stripe writer made them.
pub fn encode_vector(
    v: &VectorRef<'_>,
    ctx: &ColumnContext<'_>,
    out: &mut Vec<u8>,
) -> Result<EncodeReport, EncodeError> {
    let null_count = validate(v)?;
    let start = out.len();
    let values = &v.values;
    let kind = values.kind();

    // header: kind, [fixed width], rows, null section
    out.push(kind as u8);
    if let ValuesRef::Fixed { width, .. } = values {
        out.extend_from_slice(&width.to_le_bytes());
    }
    out.extend_from_slice(&(v.rows as u16).to_le_bytes());
    let non_null = v.rows - null_count;
    if null_count == 0 {
        out.push(NULLS_NONE);
    } else if non_null == 0 {
        out.push(NULLS_ALL);
    } else {
        out.push(NULLS_BITMAP);
        let bitmap = &v.nulls.expect("nulls counted from the bitmap")[..v.rows.div_ceil(8)];
        out.extend_from_slice(bitmap);
        // bits past the last row are not part of the vector: store them as zero
        *out.last_mut().unwrap() &= last_byte_mask(v.rows);
    }

    let mut report = EncodeReport {
        kind,
        rows: v.rows,
        null_count,
        chosen: None,
        candidates: [Sizing::NotTried; 6],
        raw_len: plain::raw_len(values),
        encoded_len: 0,
        zone_map: zone_map(values),
        fsst: FsstDecision::NotApplicable,
        shared_dictionary: false,
        stride_block: false,
    };
    if non_null == 0 {
        report.encoded_len = out.len() - start;
        return Ok(report);
    }

    let plain_len = plain::encoded_len(values);
    report.candidates[Encoding::Plain as usize] = Sizing::Exact(plain_len);
    let mut best: Option<(usize, Candidate)> = None;
    let stride = ctx.stride.map(usize::from);
    if let Some(p) = dictionary::plan(values, ctx.dictionary, stride) {
        let len = p.encoded_len();
        report.shared_dictionary = p.is_shared();
        report.candidates[Encoding::Dictionary as usize] = Sizing::Exact(len);
        consider(&mut best, len, Candidate::Dictionary(p));
    }
    if let Some(ints) = values.as_integers() {
        let p = bitpack::plan_with(&ints, stride);
        let len = p.encoded_len();
        report.candidates[Encoding::Bitpack as usize] = Sizing::Exact(len);
        consider(&mut best, len, Candidate::Bitpack(p, ints));
    } else if let Some(p) = float_int::plan(values, stride) {
        let len = p.encoded_len();
        report.candidates[Encoding::FloatInt as usize] = Sizing::Exact(len);
        consider(&mut best, len, Candidate::FloatInt(p));
    }
    if let ValuesRef::Bytes(strings) = values {
        report.fsst = match ctx.fsst {
            None => FsstDecision::NoSymbolTable,
            Some(table) => {
                let best_so_far = best
                    .as_ref()
                    .map_or(plain_len, |(l, _)| (*l).min(plain_len));
                if 4 * best_so_far > 3 * report.raw_len {
                    let len = fsst::encoded_len(strings, table);
                    report.candidates[Encoding::Fsst as usize] = Sizing::Exact(len);
                    consider(&mut best, len, Candidate::Fsst(table));
                    FsstDecision::Tried
                } else {
                    FsstDecision::SkippedBySavings
                }
            }
        };
    }
    if let Some((lanes, bits)) = gorilla_lanes(values) {
        // Gorilla is last: it can only be written if strictly smaller than both the best so
        // far and plain, so its sizing stops once it reaches that bound. This never changes
        // the choice (the reference encoder sizes it fully; the property tests compare).
        let bound = best
            .as_ref()
            .map_or(plain_len, |(l, _)| (*l).min(plain_len));
        report.candidates[Encoding::Gorilla as usize] =
            match gorilla::encoded_len_within(&lanes, bits, bound.saturating_sub(1)) {
                Some(len) => {
                    consider(&mut best, len, Candidate::Gorilla(lanes, bits));
                    Sizing::Exact(len)
                }
                None => Sizing::MoreThan(bound.saturating_sub(1)),
            };
    }

    match best {
        Some((len, c)) if len < plain_len => {
            let (encoding, before) = (encoding_of(&c), out.len());
            report.stride_block = match &c {
                Candidate::Dictionary(p) => p.codes_mode() == bitpack::BlockMode::Stride,
                Candidate::Bitpack(p, _) => p.mode == bitpack::BlockMode::Stride,
                Candidate::FloatInt(p) => p.block.mode == bitpack::BlockMode::Stride,
                _ => false,
            };
            out.push(encoding as u8);
            match c {
                Candidate::Dictionary(p) => dictionary::encode(&p, out),
                Candidate::Bitpack(p, ints) => bitpack::write_planned(&ints, &p, out),
                Candidate::Fsst(table) => match values {
                    ValuesRef::Bytes(strings) => fsst::encode(strings, table, out),
                    _ => unreachable!("FSST is only sized for byte strings"),
                },
                Candidate::Gorilla(lanes, bits) => gorilla::encode(&lanes, bits, out),
                Candidate::FloatInt(p) => float_int::encode(values, &p, out),
            }
            debug_assert_eq!(out.len() - before - 1, len, "{encoding:?} sized wrongly");
            report.chosen = Some(encoding);
        }
        _ => {
            out.push(Encoding::Plain as u8);
            plain::encode(values, out);
            report.chosen = Some(Encoding::Plain);
        }
    }
    report.encoded_len = out.len() - start;
    Ok(report)
}

/// Keeps `c` if it is strictly smaller than the best so far (ties go to the earlier one).
fn consider<'t>(best: &mut Option<(usize, Candidate<'t>)>, len: usize, c: Candidate<'t>) {
    if best.as_ref().is_none_or(|(l, _)| len < *l) {
        *best = Some((len, c));
    }
}

fn encoding_of(c: &Candidate) -> Encoding {
    match c {
        Candidate::Dictionary(_) => Encoding::Dictionary,
        Candidate::Bitpack(..) => Encoding::Bitpack,
        Candidate::Fsst(_) => Encoding::Fsst,
        Candidate::Gorilla(..) => Encoding::Gorilla,
        Candidate::FloatInt(_) => Encoding::FloatInt,
    }
}

//! The *dictionary* encoding: the distinct values in first-seen order, and for each value the
//! index ("code") of its entry.
//!
//! Payload: `entry_count: u16` (1..=[`MAX_ENTRIES`]), the entries (by kind, below), then a
//! packed-integer block (see `bitpack`) of the codes. Entries:
//! * integers: a packed-integer block of the entry values;
//! * floats: `u8` 0 then each entry's bit pattern little-endian, or `u8` 1 then a packed
//!   block of the entries as integers (only when every entry is an integral float, see
//!   [`crate::floats`]), whichever is smaller (0 on a tie);
//! * byte strings: a packed block of the entry lengths, then the entries' bytes;
//! * fixed-width opaque values: the entries' bytes.
//!
//! Distinct values are found with an xxh3 hash table; on a hash match the values themselves
//! are compared, so a collision can never change the output.

use crate::bitpack::{self, BlockPlan};
use crate::bits::ByteReader;
use crate::error::{DecodeError, DecodeResult};
use crate::floats;
use crate::plain;
use crate::vector::{ByteStrings, Kind, Values, ValuesRef};
use xxhash_rust::xxh3::xxh3_64;

/// The most distinct values a vector's dictionary may hold; a vector with more is not
/// dictionary-encoded. Part of the format: changing it changes which encoding wins.
pub const MAX_ENTRIES: usize = 512;

/// Hash table slots: a power of two, four times the entry cap (load factor <= 1/4).
const SLOTS: usize = 4 * MAX_ENTRIES;

/// A dictionary built for one vector, ready to be sized or written.
pub struct DictionaryPlan {
    /// Row index (among the non-null values) of each entry's first occurrence.
    pub first_index: Vec<u32>,
    pub codes: Vec<i64>,
    codes_plan: BlockPlan,
    entries_len: usize,
    /// Floats only: entries stored as integers.
    float_entries_integral: bool,
}

impl DictionaryPlan {
    pub fn encoded_len(&self) -> usize {
        2 + self.entries_len + self.codes_plan.encoded_len()
    }

    pub fn entry_count(&self) -> usize {
        self.first_index.len()
    }
}

/// Finds the distinct values of `n` items: `hash(i)` hashes item i and `same(i, j)` compares
/// two items. `None` when there are more than [`MAX_ENTRIES`].
fn distinct(
    n: usize,
    hash: impl Fn(usize) -> u64,
    same: impl Fn(usize, usize) -> bool,
) -> Option<(Vec<u32>, Vec<i64>)> {
    let mut slots = vec![u32::MAX; SLOTS];
    let mut first_index: Vec<u32> = Vec::new();
    let mut codes = Vec::with_capacity(n);
    for i in 0..n {
        let mut s = (hash(i) as usize) & (SLOTS - 1);
        loop {
            let e = slots[s];
            if e == u32::MAX {
                if first_index.len() == MAX_ENTRIES {
                    return None;
                }
                slots[s] = first_index.len() as u32;
                codes.push(first_index.len() as i64);
                first_index.push(i as u32);
                break;
            }
            if same(first_index[e as usize] as usize, i) {
                codes.push(e as i64);
                break;
            }
            s = (s + 1) & (SLOTS - 1);
        }
    }
    Some((first_index, codes))
}

/// Fixed-width lanes of a vector as u64 keys (integers sign-extended, floats as bits).
fn lane_keys(values: &ValuesRef<'_>) -> Option<Vec<u64>> {
    Some(match values {
        ValuesRef::Int8(v) => v.iter().map(|&x| x as i64 as u64).collect(),
        ValuesRef::Int16(v) => v.iter().map(|&x| x as i64 as u64).collect(),
        ValuesRef::Int32(v) => v.iter().map(|&x| x as i64 as u64).collect(),
        ValuesRef::Int64(v) => v.iter().map(|&x| x as u64).collect(),
        ValuesRef::Float32(v) => v.iter().map(|&x| x.to_bits() as u64).collect(),
        ValuesRef::Float64(v) => v.iter().map(|&x| x.to_bits()).collect(),
        ValuesRef::Bytes(_) | ValuesRef::Fixed { .. } => return None,
    })
}

/// Builds the dictionary of a non-empty vector, or `None` if it has too many distinct values.
pub fn plan(values: &ValuesRef<'_>) -> Option<DictionaryPlan> {
    let n = values.len();
    if n == 0 {
        return None;
    }
    let kind = values.kind();
    let (first_index, codes, entries_len, float_entries_integral) =
        if let Some(keys) = lane_keys(values) {
            let (first_index, codes) = distinct(
                n,
                |i| xxh3_64(&keys[i].to_le_bytes()),
                |a, b| keys[a] == keys[b],
            )?;
            let entries: Vec<u64> = first_index.iter().map(|&i| keys[i as usize]).collect();
            let (len, integral) = lane_entries_len(kind, &entries);
            (first_index, codes, len, integral)
        } else {
            match values {
                ValuesRef::Bytes(b) => {
                    let (first_index, codes) =
                        distinct(n, |i| xxh3_64(b.get(i)), |x, y| b.get(x) == b.get(y))?;
                    let lens: Vec<i64> =
                        first_index.iter().map(|&i| b.get(i as usize).len() as i64).collect();
                    let bytes: usize = lens.iter().map(|&l| l as usize).sum();
                    (first_index, codes, bitpack::plan(&lens).encoded_len() + bytes, false)
                }
                ValuesRef::Fixed { width, data } => {
                    let w = *width as usize;
                    let item = |i: usize| &data[i * w..(i + 1) * w];
                    let (first_index, codes) =
                        distinct(n, |i| xxh3_64(item(i)), |x, y| item(x) == item(y))?;
                    let len = first_index.len() * w;
                    (first_index, codes, len, false)
                }
                _ => unreachable!("lane kinds handled above"),
            }
        };
    let codes_plan = bitpack::plan(&codes);
    Some(DictionaryPlan { first_index, codes, codes_plan, entries_len, float_entries_integral })
}

/// Size of the entries of an integer or float dictionary, and (floats) whether they are
/// stored as integers.
fn lane_entries_len(kind: Kind, entries: &[u64]) -> (usize, bool) {
    if kind.is_integer() {
        let ints: Vec<i64> = entries.iter().map(|&k| k as i64).collect();
        return (bitpack::plan(&ints).encoded_len(), false);
    }
    let raw = 1 + entries.len() * kind.lane_bytes().unwrap();
    match float_entries_as_integers(kind, entries) {
        Some(ints) => {
            let packed = 1 + bitpack::plan(&ints).encoded_len();
            if packed < raw {
                (packed, true)
            } else {
                (raw, false)
            }
        }
        None => (raw, false),
    }
}

fn float_entries_as_integers(kind: Kind, entries: &[u64]) -> Option<Vec<i64>> {
    entries
        .iter()
        .map(|&bits| match kind {
            Kind::Float32 => floats::f32_to_exact_int(f32::from_bits(bits as u32)),
            _ => floats::f64_to_exact_int(f64::from_bits(bits)),
        })
        .collect()
}

/// Appends the payload of `plan`, which was built from `values`.
pub fn encode(values: &ValuesRef<'_>, plan: &DictionaryPlan, out: &mut Vec<u8>) {
    out.extend_from_slice(&(plan.entry_count() as u16).to_le_bytes());
    let kind = values.kind();
    if let Some(keys) = lane_keys(values) {
        let entries: Vec<u64> = plan.first_index.iter().map(|&i| keys[i as usize]).collect();
        if kind.is_integer() {
            let ints: Vec<i64> = entries.iter().map(|&k| k as i64).collect();
            bitpack::encode_block(&ints, out);
        } else if plan.float_entries_integral {
            out.push(1);
            bitpack::encode_block(&float_entries_as_integers(kind, &entries).unwrap(), out);
        } else {
            out.push(0);
            let lane = kind.lane_bytes().unwrap();
            for k in entries {
                out.extend_from_slice(&k.to_le_bytes()[..lane]);
            }
        }
    } else {
        match values {
            ValuesRef::Bytes(b) => {
                let lens: Vec<i64> =
                    plan.first_index.iter().map(|&i| b.get(i as usize).len() as i64).collect();
                bitpack::encode_block(&lens, out);
                for &i in &plan.first_index {
                    out.extend_from_slice(b.get(i as usize));
                }
            }
            ValuesRef::Fixed { width, data } => {
                let w = *width as usize;
                for &i in &plan.first_index {
                    let i = i as usize;
                    out.extend_from_slice(&data[i * w..(i + 1) * w]);
                }
            }
            _ => unreachable!("lane kinds handled above"),
        }
    }
    bitpack::write_planned(&plan.codes, &plan.codes_plan, out);
}

/// Reads a dictionary payload holding `count` values of `kind`.
pub fn decode(
    r: &mut ByteReader<'_>,
    kind: Kind,
    fixed_width: u16,
    count: usize,
) -> DecodeResult<Values> {
    let entry_count = r.u16("dictionary entry count")? as usize;
    if entry_count == 0 || entry_count > MAX_ENTRIES {
        return Err(DecodeError::OutOfRange {
            what: "dictionary entry count",
            value: entry_count as u64,
            limit: MAX_ENTRIES as u64,
        });
    }
    let entries: Values = match kind {
        Kind::Int8 | Kind::Int16 | Kind::Int32 | Kind::Int64 => {
            let mut ints = Vec::with_capacity(entry_count);
            bitpack::read_block(r, entry_count, &mut ints)?;
            crate::narrow_integers(kind, ints)?
        }
        Kind::Float32 | Kind::Float64 => match r.u8("dictionary float entry mode")? {
            0 => plain::decode(r, kind, 0, entry_count)?,
            1 => {
                let mut ints = Vec::with_capacity(entry_count);
                bitpack::read_block(r, entry_count, &mut ints)?;
                floats::integers_to_floats(kind, &ints)?
            }
            value => return Err(DecodeError::UnknownTag { what: "dictionary float entry mode", value }),
        },
        Kind::Bytes => Values::Bytes(plain::read_strings(r, entry_count)?),
        Kind::Fixed => plain::decode(r, kind, fixed_width, entry_count)?,
    };
    let mut codes = Vec::with_capacity(count);
    bitpack::read_block(r, count, &mut codes)?;
    if let Some(&bad) = codes.iter().find(|&&c| c < 0 || c as usize >= entry_count) {
        return Err(DecodeError::OutOfRange {
            what: "dictionary code",
            value: bad as u64,
            limit: entry_count as u64 - 1,
        });
    }
    Ok(gather(&entries, &codes))
}

/// `entries[codes[i]]` for every i (codes already checked to be in range).
fn gather(entries: &Values, codes: &[i64]) -> Values {
    macro_rules! pick {
        ($v:expr, $variant:ident) => {
            Values::$variant(codes.iter().map(|&c| $v[c as usize]).collect())
        };
    }
    match entries {
        Values::Int8(v) => pick!(v, Int8),
        Values::Int16(v) => pick!(v, Int16),
        Values::Int32(v) => pick!(v, Int32),
        Values::Int64(v) => pick!(v, Int64),
        Values::Float32(v) => pick!(v, Float32),
        Values::Float64(v) => pick!(v, Float64),
        Values::Bytes(b) => {
            let b = b.as_ref();
            let mut out = ByteStrings::new();
            out.data.reserve(codes.iter().map(|&c| b.get(c as usize).len()).sum());
            for &c in codes {
                out.push(b.get(c as usize));
            }
            Values::Bytes(out)
        }
        Values::Fixed { width, data } => {
            let w = *width as usize;
            let mut out = Vec::with_capacity(codes.len() * w);
            for &c in codes {
                out.extend_from_slice(&data[c as usize * w..(c as usize + 1) * w]);
            }
            Values::Fixed { width: *width, data: out }
        }
    }
}

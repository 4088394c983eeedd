//! The *dictionary* encoding: distinct values, and for each value the index ("code") of its
//! entry. The entries are either the vector's own distinct values in first-seen order
//! (*inline*), or the stripe column's [`SharedDictionary`] (*shared*), whichever payload is
//! smaller (inline on a tie).
//!
//! Payload: `entry_count: u16`, then
//! * inline (entry_count 1..=[`MAX_ENTRIES`]): the entries (below), then a packed-integer
//!   block (see `bitpack`) of the codes;
//! * shared (entry_count 0): a packed-integer block of codes into the shared dictionary.
//!
//! Entries, by kind:
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
use crate::plain;
use crate::vector::{BytesRef, Kind, Values, ValuesRef, MAX_VECTOR_BYTES};
use xxhash_rust::xxh3::xxh3_64;

/// The most distinct values a vector's inline dictionary may hold; a vector with more is not
/// inline-dictionary-encoded. Part of the format: changing it changes which encoding wins.
pub const MAX_ENTRIES: usize = 512;

/// The most distinct values a stripe column's shared dictionary may hold.
pub const SHARED_MAX_ENTRIES: usize = 16384;

/// A vector's values as the dictionary sees them: hashable and comparable one by one.
enum Items<'a> {
    /// Integers sign-extended, floats as bit patterns.
    Lanes(Vec<u64>),
    Bytes(BytesRef<'a>),
    Fixed {
        width: usize,
        data: &'a [u8],
    },
}

impl<'a> Items<'a> {
    fn new(values: &ValuesRef<'a>) -> Items<'a> {
        match values {
            ValuesRef::Int8(v) => Items::Lanes(v.iter().map(|&x| x as i64 as u64).collect()),
            ValuesRef::Int16(v) => Items::Lanes(v.iter().map(|&x| x as i64 as u64).collect()),
            ValuesRef::Int32(v) => Items::Lanes(v.iter().map(|&x| x as i64 as u64).collect()),
            ValuesRef::Int64(v) => Items::Lanes(v.iter().map(|&x| x as u64).collect()),
            ValuesRef::Float32(v) => Items::Lanes(v.iter().map(|&x| x.to_bits() as u64).collect()),
            ValuesRef::Float64(v) => Items::Lanes(v.iter().map(|&x| x.to_bits()).collect()),
            ValuesRef::Bytes(b) => Items::Bytes(*b),
            ValuesRef::Fixed { width, data } => Items::Fixed {
                width: *width as usize,
                data,
            },
        }
    }

    fn len(&self) -> usize {
        match self {
            Items::Lanes(k) => k.len(),
            Items::Bytes(b) => b.len(),
            Items::Fixed { width, data } => data.len() / width,
        }
    }

    #[inline]
    fn bytes(&self, i: usize) -> &[u8] {
        match self {
            Items::Bytes(b) => b.get(i),
            Items::Fixed { width, data } => &data[i * width..(i + 1) * width],
            Items::Lanes(_) => unreachable!("lanes are compared as integers"),
        }
    }

    #[inline]
    fn hash(&self, i: usize) -> u64 {
        match self {
            Items::Lanes(k) => xxh3_64(&k[i].to_le_bytes()),
            _ => xxh3_64(self.bytes(i)),
        }
    }

    /// Whether item `i` of `self` equals item `j` of `other` (same kind).
    #[inline]
    fn same(&self, i: usize, other: &Items<'_>, j: usize) -> bool {
        match (self, other) {
            (Items::Lanes(a), Items::Lanes(b)) => a[i] == b[j],
            _ => self.bytes(i) == other.bytes(j),
        }
    }

    /// The items at `indices`, as values of `kind`.
    fn gather(&self, kind: Kind, indices: impl Iterator<Item = usize>) -> Values {
        match self {
            Items::Lanes(k) => {
                let picked = indices.map(|i| k[i]);
                match kind {
                    Kind::Int8 => Values::Int8(picked.map(|x| x as i8).collect()),
                    Kind::Int16 => Values::Int16(picked.map(|x| x as i16).collect()),
                    Kind::Int32 => Values::Int32(picked.map(|x| x as i32).collect()),
                    Kind::Int64 => Values::Int64(picked.map(|x| x as i64).collect()),
                    Kind::Float32 => {
                        Values::Float32(picked.map(|x| f32::from_bits(x as u32)).collect())
                    }
                    Kind::Float64 => Values::Float64(picked.map(f64::from_bits).collect()),
                    Kind::Bytes | Kind::Fixed => unreachable!("not a lane kind"),
                }
            }
            Items::Bytes(_) => Values::Bytes(indices.map(|i| self.bytes(i)).collect()),
            Items::Fixed { width, .. } => {
                let mut data = Vec::new();
                for i in indices {
                    data.extend_from_slice(self.bytes(i));
                }
                Values::Fixed {
                    width: *width as u16,
                    data,
                }
            }
        }
    }
}

/// Open-addressing hash index from items to codes (linear probing, load factor <= 1/4).
#[derive(Debug, Clone)]
struct CodeIndex {
    slots: Vec<u32>,
}

const EMPTY: u32 = u32::MAX;

impl CodeIndex {
    fn for_entries(max_entries: usize) -> CodeIndex {
        CodeIndex {
            slots: vec![EMPTY; (4 * max_entries).next_power_of_two()],
        }
    }

    /// `Ok(code)` of the entry with this hash for which `is(code)`, or `Err(slot)`, the empty
    /// slot where it would be inserted.
    #[inline]
    fn probe(&self, hash: u64, is: impl Fn(u32) -> bool) -> Result<u32, usize> {
        let mask = self.slots.len() - 1;
        let mut s = hash as usize & mask;
        loop {
            match self.slots[s] {
                EMPTY => return Err(s),
                code if is(code) => return Ok(code),
                _ => s = (s + 1) & mask,
            }
        }
    }
}

/// The distinct items in first-seen order (as indices of their first occurrence) and every
/// item's code; `None` if there are more than `cap`.
fn distinct(items: &Items<'_>, cap: usize) -> Option<(Vec<u32>, Vec<i64>)> {
    match items {
        Items::Lanes(keys) => distinct_by(
            keys.len(),
            cap,
            |i| xxh3_64(&keys[i].to_le_bytes()),
            |a, b| keys[a] == keys[b],
        ),
        _ => distinct_by(
            items.len(),
            cap,
            |i| items.hash(i),
            |a, b| items.bytes(a) == items.bytes(b),
        ),
    }
}

/// [`distinct`] over `n` items given by their hash and an equality test (monomorphised per
/// kind so the inner loop has no dispatch).
#[inline(always)]
fn distinct_by(
    n: usize,
    cap: usize,
    hash: impl Fn(usize) -> u64,
    same: impl Fn(usize, usize) -> bool,
) -> Option<(Vec<u32>, Vec<i64>)> {
    // (at most `n` items can be distinct: the table need not be larger)
    let mut index = CodeIndex::for_entries(cap.min(n));
    let mut first: Vec<u32> = Vec::new();
    let mut codes = Vec::with_capacity(n);
    for i in 0..n {
        match index.probe(hash(i), |c| same(first[c as usize] as usize, i)) {
            Ok(code) => codes.push(code as i64),
            Err(slot) => {
                if first.len() == cap {
                    return None;
                }
                index.slots[slot] = first.len() as u32;
                codes.push(first.len() as i64);
                first.push(i as u32);
            }
        }
    }
    Some((first, codes))
}

/// [`distinct`] for items already given as codes `0..n` that name distinct values one to
/// one: the same first-seen order and codes, found with an array instead of a hash table.
fn distinct_codes(codes: &[i64], n: usize, cap: usize) -> Option<(Vec<u32>, Vec<i64>)> {
    let mut remap = vec![u32::MAX; n];
    let mut first: Vec<u32> = Vec::new();
    let mut out = Vec::with_capacity(codes.len());
    for (i, &c) in codes.iter().enumerate() {
        let slot = &mut remap[c as usize];
        if *slot == u32::MAX {
            if first.len() == cap {
                return None;
            }
            *slot = first.len() as u32;
            first.push(i as u32);
        }
        out.push(*slot as i64);
    }
    Some((first, out))
}

/// How a list of entries is stored: its size, and the integers it packs (always for
/// integer kinds; for floats only when packing them is strictly smaller than their bits).
struct EntriesPlan {
    len: usize,
    packed: Option<Vec<i64>>,
}

fn plan_entries(entries: &ValuesRef<'_>) -> EntriesPlan {
    let kind = entries.kind();
    let as_ints = entries.as_integers();
    let packed_len = as_ints.as_ref().map(|v| bitpack::plan(v).encoded_len());
    if kind.is_integer() {
        EntriesPlan {
            len: packed_len.expect("integers always pack"),
            packed: as_ints,
        }
    } else if kind.is_float() {
        let raw = 1 + plain::raw_len(entries);
        match packed_len {
            Some(len) if 1 + len < raw => EntriesPlan {
                len: 1 + len,
                packed: as_ints,
            },
            _ => EntriesPlan {
                len: raw,
                packed: None,
            },
        }
    } else {
        EntriesPlan {
            len: plain::encoded_len(entries),
            packed: None,
        }
    }
}

fn write_entries(entries: &ValuesRef<'_>, plan: &EntriesPlan, out: &mut Vec<u8>) {
    let kind = entries.kind();
    if kind.is_integer() {
        bitpack::encode_block(
            plan.packed.as_ref().expect("integer entries are packed"),
            out,
        );
    } else if kind.is_float() {
        match &plan.packed {
            Some(v) => {
                out.push(1);
                bitpack::encode_block(v, out);
            }
            None => {
                out.push(0);
                plain::encode(entries, out);
            }
        }
    } else {
        plain::encode(entries, out);
    }
}

fn read_entries(
    r: &mut ByteReader<'_>,
    kind: Kind,
    fixed_width: u16,
    count: usize,
) -> DecodeResult<Values> {
    if kind.is_integer() {
        return bitpack::read_values(r, kind, count);
    }
    if kind.is_float() {
        return match r.u8("dictionary float entry mode")? {
            0 => plain::decode(r, kind, 0, count),
            1 => bitpack::read_values(r, kind, count),
            value => Err(DecodeError::UnknownTag {
                what: "dictionary float entry mode",
                value,
            }),
        };
    }
    plain::decode(r, kind, fixed_width, count)
}

/// A stripe column's dictionary, stored once per stripe and column and referenced by the
/// vectors that choose it. Serialized as `kind: u8`, `fixed_width: u16` (kind 8 only),
/// `entry_count: u16` (1..=[`SHARED_MAX_ENTRIES`]), then the entries as in an inline
/// dictionary. Its entries are distinct.
#[derive(Debug, Clone)]
pub struct SharedDictionary {
    entries: Values,
    /// Lane kinds: the entries as lanes (see `Items`), for lookups.
    lanes: Vec<u64>,
    index: CodeIndex,
}

impl PartialEq for SharedDictionary {
    fn eq(&self, other: &Self) -> bool {
        self.entries.bitwise_eq(&other.entries)
    }
}

impl SharedDictionary {
    /// The distinct non-null values of a stripe column in first-seen order; `None` if there
    /// are none or more than [`SHARED_MAX_ENTRIES`].
    pub fn build(column: &ValuesRef<'_>) -> Option<SharedDictionary> {
        let items = Items::new(column);
        let (first, _) = distinct(&items, SHARED_MAX_ENTRIES)?;
        if first.is_empty() {
            return None;
        }
        let entries = items.gather(column.kind(), first.iter().map(|&i| i as usize));
        Self::from_distinct_entries(entries)
    }

    /// `None` if the entries are empty, too many, or not distinct.
    fn from_distinct_entries(entries: Values) -> Option<SharedDictionary> {
        let n = entries.len();
        if n == 0 || n > SHARED_MAX_ENTRIES {
            return None;
        }
        let items = Items::new(&entries.as_ref());
        // one pass builds the lookup index and proves the entries distinct; sized for these
        // entries (a dictionary never grows), not for the most a dictionary may hold: a
        // table for 16,384 entries is 256 kB to allocate and fill for every stripe a reader
        // loads, which was a third of a point lookup's time
        let mut index = CodeIndex::for_entries(n);
        for i in 0..n {
            let slot = index
                .probe(items.hash(i), |c| items.same(c as usize, &items, i))
                .err()?;
            index.slots[slot] = i as u32;
        }
        let lanes = match items {
            Items::Lanes(k) => k,
            _ => Vec::new(),
        };
        Some(SharedDictionary {
            entries,
            lanes,
            index,
        })
    }

    pub fn entries(&self) -> &Values {
        &self.entries
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn serialize(&self, out: &mut Vec<u8>) {
        let e = self.entries.as_ref();
        out.push(e.kind() as u8);
        if let ValuesRef::Fixed { width, .. } = e {
            out.extend_from_slice(&width.to_le_bytes());
        }
        out.extend_from_slice(&(self.len() as u16).to_le_bytes());
        write_entries(&e, &plan_entries(&e), out);
    }

    pub fn deserialize(bytes: &[u8]) -> DecodeResult<SharedDictionary> {
        let mut r = ByteReader::new(bytes);
        let kind = Kind::from_tag(r.u8("shared dictionary kind")?)?;
        let width = if kind == Kind::Fixed {
            r.u16("shared dictionary fixed width")?
        } else {
            0
        };
        if kind == Kind::Fixed && width == 0 {
            return Err(DecodeError::OutOfRange {
                what: "fixed width",
                value: 0,
                limit: u16::MAX as u64,
            });
        }
        let n = r.u16("shared dictionary entry count")? as usize;
        if n == 0 || n > SHARED_MAX_ENTRIES {
            return Err(DecodeError::OutOfRange {
                what: "shared dictionary entry count",
                value: n as u64,
                limit: SHARED_MAX_ENTRIES as u64,
            });
        }
        let entries = read_entries(&mut r, kind, width, n)?;
        r.finish()?;
        SharedDictionary::from_distinct_entries(entries).ok_or(DecodeError::Inconsistent {
            what: "shared dictionary with repeated entries",
        })
    }

    /// Every item's code, or `None` if an item is not in the dictionary or the kinds differ.
    fn codes_for(&self, items: &Items<'_>, kind: Kind, fixed_width: u16) -> Option<Vec<i64>> {
        let e = self.entries.as_ref();
        if e.kind() != kind || matches!(e, ValuesRef::Fixed { width, .. } if width != fixed_width) {
            return None;
        }
        let lookup = |i: usize| -> Option<i64> {
            let found = match items {
                Items::Lanes(k) => self
                    .index
                    .probe(items.hash(i), |c| self.lanes[c as usize] == k[i]),
                _ => {
                    let own = Items::new(&e); // borrows, no copy, for byte kinds
                    self.index
                        .probe(items.hash(i), |c| own.same(c as usize, items, i))
                }
            };
            found.ok().map(|c| c as i64)
        };
        (0..items.len()).map(lookup).collect()
    }
}

/// A dictionary payload for one vector, ready to be sized or written.
pub struct DictionaryPlan {
    /// `None`: shared (codes index the stripe column's shared dictionary).
    inline_entries: Option<(Values, EntriesPlan)>,
    codes: Vec<i64>,
    codes_plan: BlockPlan,
}

impl DictionaryPlan {
    pub fn encoded_len(&self) -> usize {
        2 + self.inline_entries.as_ref().map_or(0, |(_, p)| p.len) + self.codes_plan.encoded_len()
    }

    /// How the codes are packed.
    pub fn codes_mode(&self) -> bitpack::BlockMode {
        self.codes_plan.mode
    }

    pub fn is_shared(&self) -> bool {
        self.inline_entries.is_none()
    }

    pub fn entry_count(&self) -> usize {
        self.inline_entries.as_ref().map_or(0, |(e, _)| e.len())
    }
}

/// The smaller of the inline dictionary (if the vector has at most [`MAX_ENTRIES`] distinct
/// values) and the shared one (if given and holding every value); inline on a tie. `None`
/// for an empty vector or when neither applies. `stride` is the stripe's row period, if it
/// has one: the codes may then be packed as stride deltas.
pub fn plan(
    values: &ValuesRef<'_>,
    shared: Option<&SharedDictionary>,
    stride: Option<usize>,
) -> Option<DictionaryPlan> {
    if values.is_empty() {
        return None;
    }
    let items = Items::new(values);
    let fixed_width = match values {
        ValuesRef::Fixed { width, .. } => *width,
        _ => 0,
    };
    let shared_codes =
        shared.and_then(|d| Some((d.codes_for(&items, values.kind(), fixed_width)?, d.len())));
    // Codes into a shared dictionary name the distinct values one to one, so when there are
    // some, the inline dictionary is found from them without hashing the values again.
    let found = match &shared_codes {
        Some((codes, n)) => distinct_codes(codes, *n, MAX_ENTRIES),
        None => distinct(&items, MAX_ENTRIES),
    };
    let inline = found.map(|(first, codes)| {
        let entries = items.gather(values.kind(), first.iter().map(|&i| i as usize));
        let ep = plan_entries(&entries.as_ref());
        let codes_plan = bitpack::plan_with(&codes, stride);
        DictionaryPlan {
            inline_entries: Some((entries, ep)),
            codes,
            codes_plan,
        }
    });
    let shared = shared_codes.map(|(codes, _)| {
        let codes_plan = bitpack::plan_with(&codes, stride);
        DictionaryPlan {
            inline_entries: None,
            codes,
            codes_plan,
        }
    });
    match (inline, shared) {
        (Some(i), Some(s)) => Some(if s.encoded_len() < i.encoded_len() {
            s
        } else {
            i
        }),
        (i, s) => i.or(s),
    }
}

/// Appends the payload of `plan`.
pub fn encode(plan: &DictionaryPlan, out: &mut Vec<u8>) {
    out.extend_from_slice(&(plan.entry_count() as u16).to_le_bytes());
    if let Some((entries, ep)) = &plan.inline_entries {
        write_entries(&entries.as_ref(), ep, out);
    }
    bitpack::write_planned(&plan.codes, &plan.codes_plan, out);
}

/// Reads a dictionary payload without gathering: its inline entries (`None`: the codes index
/// `shared`) and the codes, each checked to index an entry, and the gathered strings checked
/// to fit [`MAX_VECTOR_BYTES`] (a few long entries repeated by every code).
pub fn unpack(
    r: &mut ByteReader<'_>,
    kind: Kind,
    fixed_width: u16,
    count: usize,
    shared: Option<&SharedDictionary>,
) -> DecodeResult<(Option<Values>, Vec<i64>)> {
    let inline = read_entry_section(r, kind, fixed_width, shared)?;
    let entries = inline.as_ref().unwrap_or_else(|| &shared.unwrap().entries);
    let mut codes = Vec::with_capacity(count);
    bitpack::read_block(r, count, &mut codes)?;
    let n = entries.len();
    if !codes_in_range(&codes, n) {
        let bad = codes
            .iter()
            .copied()
            .find(|&c| c < 0 || c as usize >= n)
            .expect("a code out of range");
        return Err(DecodeError::OutOfRange {
            what: "dictionary code",
            value: bad as u64,
            limit: (n as u64).saturating_sub(1),
        });
    }
    if let Values::Bytes(b) = entries {
        let b = b.as_ref();
        // the longest entry repeated by every code bounds the gathered bytes; only when that
        // bound does not fit are the codes' lengths added up
        let longest = b.offsets.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0) as u64;
        if longest.saturating_mul(codes.len() as u64) > MAX_VECTOR_BYTES {
            let total: u64 = codes.iter().map(|&c| b.get(c as usize).len() as u64).sum();
            if total > MAX_VECTOR_BYTES {
                return Err(DecodeError::OutOfRange {
                    what: "decoded bytes of a dictionary vector",
                    value: total,
                    limit: MAX_VECTOR_BYTES,
                });
            }
        }
    }
    Ok((inline, codes))
}

/// A dictionary payload's entries: inline (`Some`), or `None` when its codes index the
/// shared dictionary `shared`, which must then be present and of the vector's kind.
fn read_entry_section(
    r: &mut ByteReader<'_>,
    kind: Kind,
    fixed_width: u16,
    shared: Option<&SharedDictionary>,
) -> DecodeResult<Option<Values>> {
    match r.u16("dictionary entry count")? as usize {
        0 => {
            let d = shared.ok_or(DecodeError::MissingSharedDictionary)?;
            let e = d.entries.as_ref();
            if e.kind() != kind
                || matches!(e, ValuesRef::Fixed { width, .. } if width != fixed_width)
            {
                return Err(DecodeError::Inconsistent {
                    what: "shared dictionary of another kind",
                });
            }
            Ok(None)
        }
        n if n > MAX_ENTRIES => Err(DecodeError::OutOfRange {
            what: "dictionary entry count",
            value: n as u64,
            limit: MAX_ENTRIES as u64,
        }),
        n => Ok(Some(read_entries(r, kind, fixed_width, n)?)),
    }
}

/// [`unpack`] for value `index` of the `count`: the entries and that value's code, checked
/// to index them; the other codes are not read ([`bitpack::value_at`]).
pub fn unpack_one(
    r: &mut ByteReader<'_>,
    kind: Kind,
    fixed_width: u16,
    count: usize,
    index: usize,
    shared: Option<&SharedDictionary>,
    scratch: &mut Vec<i64>,
) -> DecodeResult<(Option<Values>, i64)> {
    let inline = read_entry_section(r, kind, fixed_width, shared)?;
    let n = inline
        .as_ref()
        .map_or_else(|| shared.unwrap().entries.len(), |e| e.len());
    let code = bitpack::value_at(r, count, index, scratch)?;
    if code < 0 || code as u64 >= n as u64 {
        return Err(DecodeError::OutOfRange {
            what: "dictionary code",
            value: code as u64,
            limit: (n as u64).saturating_sub(1),
        });
    }
    Ok((inline, code))
}

/// Whether every code is in `0..n` (`n` at most [`SHARED_MAX_ENTRIES`]). A code c is when
/// the sign bit of c is clear and that of c - n is set (c - n does not wrap, n being
/// small): one AND over all codes, with no early exit and no 64-bit compare, which the
/// baseline target's vector instructions lack, so the loop vectorizes.
fn codes_in_range(codes: &[i64], n: usize) -> bool {
    debug_assert!(n <= SHARED_MAX_ENTRIES);
    codes.iter().fold(u64::MAX, |a, &c| {
        a & !(c as u64) & (c as u64).wrapping_sub(n as u64)
    }) >> 63
        == 1
}

/// `entries[codes[i]]` for every i: the codes must index `entries` (as [`unpack`] checks).
pub fn gather(entries: &Values, codes: &[i64]) -> Values {
    entries.as_ref().gather(codes.iter().map(|&c| c as usize))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The range check against the plain comparison, at the edges of every `n`.
    #[test]
    fn codes_in_range_is_the_comparison() {
        let edges = [
            i64::MIN,
            i64::MIN + 1,
            -2,
            -1,
            0,
            1,
            2,
            63,
            64,
            511,
            512,
            16383,
            16384,
            i64::MAX - 1,
            i64::MAX,
        ];
        for n in [0usize, 1, 2, 64, 100, 512, 16384] {
            let near = [n as i64 - 1, n as i64, n as i64 + 1];
            for &c in edges.iter().chain(&near) {
                assert_eq!(
                    codes_in_range(&[c], n),
                    c >= 0 && (c as usize) < n,
                    "code {c} of {n} entries"
                );
                // one bad code among good ones is seen wherever it is
                let mut many = vec![0i64; 37];
                many[29] = c;
                assert_eq!(
                    codes_in_range(&many, n),
                    n > 0 && c >= 0 && (c as usize) < n,
                    "code {c} among zeros, {n} entries"
                );
            }
        }
        assert!(codes_in_range(&[], 0));
    }
}

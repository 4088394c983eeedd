//! Grouping for aggregation: each selected row of a vector gets the number of its group.
//!
//! A group key is a tuple of up to [`MAX_KEYS`] parts. Each part is one i64 per row, or
//! NULL: integers (int2/int4/int8, date, timestamps, bool) are their values, time buckets
//! the bucket's timestamp, and byte strings a dense id from an [`Interner`], which learns a
//! dictionary's entries once (per stripe for a shared dictionary) and then maps codes to ids
//! with an array lookup, so strings are not hashed per row. Two rows are in one group when
//! every part is equal, NULL equal to NULL, as GROUP BY has it.
//!
//! [`GroupTable`] numbers the groups in the order they are first seen.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::rc::Rc;

use crate::decode::{Form, Unpacked};
use crate::filter::Selection;
use crate::vector::{ByteStrings, Values};
use crate::ColumnContext;

/// The most parts a key has here.
pub const MAX_KEYS: usize = 4;

/// The key parts of a vector's rows: one per row, or (from a dictionary) a code per row and
/// the part of each code, so that work per distinct value is done once per entry.
#[derive(Debug, Clone, PartialEq)]
pub enum KeyParts {
    Rows(Vec<i64>),
    Coded { codes: Vec<u32>, entries: Rc<[i64]> },
}

/// One key part for each row of a vector (the part of a NULL row is unspecified).
#[derive(Debug, Clone, PartialEq)]
pub struct KeyColumn {
    pub parts: KeyParts,
    /// As in [`Unpacked::nulls`]: bit `r % 8` of byte `r / 8` set for a NULL row.
    pub nulls: Option<Vec<u8>>,
}

impl KeyColumn {
    /// One part per row, `None` for a NULL row (whose part is 0).
    pub fn of_rows(parts: &[Option<i64>]) -> KeyColumn {
        let mut nulls = vec![0u8; parts.len().div_ceil(8)];
        for (r, p) in parts.iter().enumerate() {
            if p.is_none() {
                nulls[r / 8] |= 1 << (r % 8);
            }
        }
        KeyColumn {
            parts: KeyParts::Rows(parts.iter().map(|p| p.unwrap_or(0)).collect()),
            nulls: parts.iter().any(Option::is_none).then_some(nulls),
        }
    }

    pub fn is_null(&self, r: usize) -> bool {
        self.nulls
            .as_ref()
            .is_some_and(|b| b[r / 8] >> (r % 8) & 1 == 1)
    }

    /// The part of row `r`.
    #[inline]
    pub fn part(&self, r: usize) -> i64 {
        match &self.parts {
            KeyParts::Rows(p) => p[r],
            KeyParts::Coded { codes, entries } => entries[codes[r] as usize],
        }
    }
}

/// The entries of the last shared dictionary a reader converted, by the key that names it
/// (see [`int_keys`]).
#[derive(Debug)]
pub struct EntryMemo<T: ?Sized> {
    key: Option<u64>,
    entries: Option<Rc<T>>,
}

impl<T: ?Sized> Default for EntryMemo<T> {
    fn default() -> Self {
        EntryMemo {
            key: None,
            entries: None,
        }
    }
}

impl<T: ?Sized> EntryMemo<T> {
    /// The entries for dictionary `key`, made by `make` unless they are the last ones made.
    pub fn get(&mut self, key: u64, make: impl FnOnce() -> Option<Rc<T>>) -> Option<Rc<T>> {
        if self.key != Some(key) || self.entries.is_none() {
            self.entries = Some(make()?);
            self.key = Some(key);
        }
        self.entries.clone()
    }
}

/// The multiplicative hash rustc uses for small keys (FxHash): keys here are a few
/// integers, for which SipHash's protection against chosen collisions costs more than the
/// whole aggregation step.
#[derive(Default)]
pub struct FxHasher(u64);

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.write_u64(u64::from_le_bytes(c.try_into().unwrap()));
        }
        let rest = chunks.remainder();
        let mut last = [0u8; 8];
        last[..rest.len()].copy_from_slice(rest);
        self.write_u64(u64::from_le_bytes(last) ^ (rest.len() as u64) << 59);
    }

    fn write_u8(&mut self, v: u8) {
        self.write_u64(v as u64);
    }

    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }

    fn write_i64(&mut self, v: i64) {
        self.write_u64(v as u64);
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

pub type FxBuild = BuildHasherDefault<FxHasher>;

/// Spreads the non-null `values` of a vector of `rows` rows over its rows.
fn spread(rows: usize, nulls: Option<&[u8]>, values: impl Iterator<Item = i64>) -> Vec<i64> {
    match nulls {
        None => values.collect(),
        Some(bitmap) => {
            let mut values = values;
            (0..rows)
                .map(|r| {
                    if bitmap[r / 8] >> (r % 8) & 1 == 1 {
                        0
                    } else {
                        values.next().unwrap_or(0)
                    }
                })
                .collect()
        }
    }
}

/// Integer values as i64 (`None`: they are not integers).
fn ints_of(values: &Values) -> Option<Vec<i64>> {
    Some(match values {
        Values::Int8(x) => x.iter().map(|&v| v as i64).collect(),
        Values::Int16(x) => x.iter().map(|&v| v as i64).collect(),
        Values::Int32(x) => x.iter().map(|&v| v as i64).collect(),
        Values::Int64(x) => x.clone(),
        _ => return None,
    })
}

/// The codes of a dictionary vector, one per row (0 for a NULL row).
fn row_codes(rows: usize, nulls: Option<&[u8]>, codes: &[i64]) -> Vec<u32> {
    match nulls {
        None => codes.iter().map(|&c| c as u32).collect(),
        Some(_) => spread(rows, nulls, codes.iter().copied())
            .into_iter()
            .map(|c| c as u32)
            .collect(),
    }
}

/// The integer of each row of `u`, a vector of integers (`None`: it holds other values).
/// A dictionary vector gives its codes and entries; `memo` keeps the entries of the last
/// shared dictionary, named by `dictionary_key` (the caller gives another key whenever it
/// gives another dictionary).
pub fn int_keys(
    u: &Unpacked,
    ctx: &ColumnContext<'_>,
    memo: &mut EntryMemo<[i64]>,
    dictionary_key: u64,
) -> Option<KeyColumn> {
    let nulls = u.nulls.as_deref();
    let parts = match &u.form {
        Form::Integers { kind, ints } => {
            if kind.is_float() {
                return None;
            }
            KeyParts::Rows(spread(u.rows, nulls, ints.iter().copied()))
        }
        Form::Scaled(_) => return None,
        Form::Values(v) => KeyParts::Rows(spread(u.rows, nulls, ints_of(v)?.into_iter())),
        Form::Codes { inline, codes } => {
            let entries = match inline {
                Some(e) => Rc::from(ints_of(e)?),
                None => shared_ints(ctx, memo, dictionary_key)?,
            };
            KeyParts::Coded {
                codes: row_codes(u.rows, nulls, codes),
                entries,
            }
        }
    };
    Some(KeyColumn {
        parts,
        nulls: u.nulls.clone(),
    })
}

/// The entries of `ctx`'s shared dictionary as integers, named by `dictionary_key` as in
/// [`int_keys`]; `None` if it has none or they are not integers.
pub fn shared_ints(
    ctx: &ColumnContext<'_>,
    memo: &mut EntryMemo<[i64]>,
    dictionary_key: u64,
) -> Option<Rc<[i64]>> {
    let dictionary = ctx.dictionary?;
    memo.get(dictionary_key, || {
        Some(Rc::from(ints_of(dictionary.entries())?))
    })
}

/// Dense ids of the distinct byte strings seen, with a cached mapping from the entries of
/// the last shared dictionary to their ids.
#[derive(Debug, Default)]
pub struct Interner {
    ids: HashMap<Box<[u8]>, u32, FxBuild>,
    strings: ByteStrings,
    /// The ids of the last shared dictionary's entries.
    remap: EntryMemo<[i64]>,
    /// The last byte strings interned as a dictionary's entries, and their ids: the next
    /// stripe's dictionary of a column often holds the same strings (the same hosts).
    last_entries: Option<(ByteStrings, Rc<[i64]>)>,
    /// How many dictionary entries were interned, how many had the ids of the last
    /// dictionary's equal entries, and how many strings were interned row by row (for
    /// EXPLAIN ANALYZE and the tests that show which path ran).
    pub entries_interned: u64,
    pub entries_reused: u64,
    pub rows_interned: u64,
}

impl Interner {
    pub fn new() -> Interner {
        Interner {
            strings: ByteStrings::new(),
            ..Default::default()
        }
    }

    pub fn id(&mut self, s: &[u8]) -> u32 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = self.strings.len() as u32;
        self.strings.push(s);
        self.ids.insert(s.into(), id);
        id
    }

    /// The string of an id.
    pub fn get(&self, id: u32) -> &[u8] {
        self.strings.as_ref().get(id as usize)
    }

    pub fn len(&self) -> usize {
        self.strings.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn ids_of_entries(&mut self, entries: &Values) -> Option<Rc<[i64]>> {
        let Values::Bytes(b) = entries else {
            return None;
        };
        if let Some((last, ids)) = &self.last_entries {
            if last == b {
                self.entries_reused += b.len() as u64;
                return Some(ids.clone());
            }
        }
        self.entries_interned += b.len() as u64;
        let ids: Rc<[i64]> = b.as_ref().iter().map(|s| self.id(s) as i64).collect();
        self.last_entries = Some((b.clone(), ids.clone()));
        Some(ids)
    }

    /// The id of each row's string of `u`, a vector of byte strings (`None`: it holds other
    /// values). `dictionary_key` names the shared dictionary `ctx` holds: the caller gives
    /// another key whenever it gives another dictionary.
    pub fn keys(
        &mut self,
        u: &Unpacked,
        ctx: &ColumnContext<'_>,
        dictionary_key: u64,
    ) -> Option<KeyColumn> {
        let nulls = u.nulls.as_deref();
        let parts = match &u.form {
            Form::Integers { .. } | Form::Scaled(_) => return None,
            Form::Values(Values::Bytes(b)) => {
                self.rows_interned += b.len() as u64;
                let ids: Vec<i64> = b.as_ref().iter().map(|s| self.id(s) as i64).collect();
                KeyParts::Rows(spread(u.rows, nulls, ids.into_iter()))
            }
            Form::Values(_) => return None,
            Form::Codes {
                inline: Some(entries),
                codes,
            } => KeyParts::Coded {
                codes: row_codes(u.rows, nulls, codes),
                entries: self.ids_of_entries(entries)?,
            },
            Form::Codes {
                inline: None,
                codes,
            } => KeyParts::Coded {
                codes: row_codes(u.rows, nulls, codes),
                entries: self.shared_ids(ctx, dictionary_key)?,
            },
        };
        Some(KeyColumn {
            parts,
            nulls: u.nulls.clone(),
        })
    }

    /// The ids of the entries of `ctx`'s shared dictionary, named by `dictionary_key` as in
    /// [`keys`](Self::keys); `None` if it has none or they are not byte strings.
    pub fn shared_ids(
        &mut self,
        ctx: &ColumnContext<'_>,
        dictionary_key: u64,
    ) -> Option<Rc<[i64]>> {
        let dictionary = ctx.dictionary?;
        let mut remap = std::mem::take(&mut self.remap);
        let entries = remap.get(dictionary_key, || self.ids_of_entries(dictionary.entries()));
        self.remap = remap;
        entries
    }
}

/// A group's key: its parts (0 where NULL) and which are NULL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub parts: [i64; MAX_KEYS],
    pub nulls: u8,
}

impl std::hash::Hash for Key {
    /// One word: each part multiplied by its own odd constant (independent multiplies, not
    /// a chain of them), folded, so a key of several parts hashes about as fast as one.
    fn hash<H: Hasher>(&self, state: &mut H) {
        const K: [u64; MAX_KEYS] = [
            0x9e37_79b9_7f4a_7c15,
            0xc2b2_ae3d_27d4_eb4f,
            0x1656_67b1_9e37_79f9,
            0x27d4_eb2f_1656_67c5,
        ];
        let mut h = self.nulls as u64;
        for (p, k) in self.parts.iter().zip(K) {
            h ^= (*p as u64).wrapping_mul(k).rotate_left(31);
        }
        state.write_u64(h);
    }
}

/// Single keys below this are numbered through an array instead of the hash table.
const DIRECT: i64 = 1 << 16;

/// The most distinct parts a column of plain parts may take for [`GroupTable::assign`]'s
/// numbering by local codes before its codes start again, and the most combinations of the
/// parts' codes.
const LOCAL_PARTS: usize = 64;
const LOCAL_COMBINATIONS: usize = 1 << 14;

/// How one part of a key is coded locally (see `GroupTable::assign_local`): by a
/// dictionary's distinct parts (each entry's code found once per dictionary: entries of one
/// part, such as the timestamps of one time bucket, share a code; NULL after them), or by
/// the distinct plain parts in order of appearance.
#[derive(Debug)]
enum LocalColumn {
    Coded {
        entries: Rc<[i64]>,
        entry_codes: Vec<u32>,
        parts: Vec<i64>,
    },
    Plain(Vec<Option<i64>>),
}

impl LocalColumn {
    /// The coding of a dictionary's entries by their distinct parts.
    fn coded(entries: &Rc<[i64]>) -> LocalColumn {
        let mut code_of: HashMap<i64, u32, FxBuild> = HashMap::default();
        let mut parts = Vec::new();
        let entry_codes = entries
            .iter()
            .map(|&e| {
                *code_of.entry(e).or_insert_with(|| {
                    parts.push(e);
                    parts.len() as u32 - 1
                })
            })
            .collect();
        LocalColumn::Coded {
            entries: entries.clone(),
            entry_codes,
            parts,
        }
    }

    /// How many codes the column may have while it stays as it is.
    fn capacity(&self) -> usize {
        match self {
            LocalColumn::Coded { parts, .. } => parts.len() + 1,
            LocalColumn::Plain(_) => LOCAL_PARTS,
        }
    }

    fn part(&self, code: u32) -> Option<i64> {
        match self {
            LocalColumn::Coded { parts, .. } => parts.get(code as usize).copied(),
            LocalColumn::Plain(parts) => parts[code as usize],
        }
    }

    /// Each selected row's code into `codes`; `None` if a plain column would exceed its
    /// capacity (its parts are then as they were plus some).
    fn code(&mut self, c: &KeyColumn, selection: &Selection, codes: &mut [u32]) -> Option<()> {
        match (self, &c.parts) {
            (
                LocalColumn::Coded {
                    entry_codes, parts, ..
                },
                KeyParts::Coded {
                    codes: row_codes, ..
                },
            ) => {
                if c.nulls.is_none() && selection.count() == selection.rows() {
                    // every row, none NULL: straight over the codes
                    for (code, &e) in codes.iter_mut().zip(row_codes) {
                        *code = entry_codes[e as usize];
                    }
                    return Some(());
                }
                let null = parts.len() as u32;
                for r in selection.iter() {
                    codes[r] = if c.is_null(r) {
                        null
                    } else {
                        entry_codes[row_codes[r] as usize]
                    };
                }
            }
            (LocalColumn::Plain(parts), column_parts) => {
                let mut code_of = |part: Option<i64>| -> Option<u32> {
                    match parts.iter().position(|&p| p == part) {
                        Some(i) => Some(i as u32),
                        None if parts.len() < LOCAL_PARTS => {
                            parts.push(part);
                            Some(parts.len() as u32 - 1)
                        }
                        None => None,
                    }
                };
                if let KeyParts::Coded {
                    codes: row_codes,
                    entries,
                } = column_parts
                {
                    // each entry's code found once (only entries of selected rows take one)
                    let mut remap = vec![u32::MAX; entries.len()];
                    if c.nulls.is_none() && selection.count() == selection.rows() {
                        // every row, none NULL: straight over the codes
                        for (code, &e) in codes.iter_mut().zip(row_codes) {
                            let e = e as usize;
                            if remap[e] == u32::MAX {
                                remap[e] = code_of(Some(entries[e]))?;
                            }
                            *code = remap[e];
                        }
                        return Some(());
                    }
                    let mut null_code = None;
                    for r in selection.iter() {
                        codes[r] = if c.is_null(r) {
                            match null_code {
                                Some(code) => code,
                                None => *null_code.insert(code_of(None)?),
                            }
                        } else {
                            let e = row_codes[r] as usize;
                            if remap[e] == u32::MAX {
                                remap[e] = code_of(Some(entries[e]))?;
                            }
                            remap[e]
                        };
                    }
                    return Some(());
                }
                let mut last: Option<(Option<i64>, u32)> = None;
                for r in selection.iter() {
                    let part = (!c.is_null(r)).then(|| c.part(r));
                    let code = match last {
                        Some((p, code)) if p == part => code,
                        _ => code_of(part)?,
                    };
                    last = Some((part, code));
                    codes[r] = code;
                }
            }
            (LocalColumn::Coded { .. }, _) => unreachable!("a coded local column for plain parts"),
        }
        Some(())
    }
}

/// The local coding of a key of several parts, kept from vector to vector while its
/// dictionaries stay the same: each combination of the parts' codes indexes `table`, which
/// holds its group (`u32::MAX`: none looked up yet).
#[derive(Debug, Default)]
struct LocalCoding {
    columns: Vec<LocalColumn>,
    table: Vec<u32>,
    /// The parts' codes of the vector being assigned, per part.
    codes: Vec<Vec<u32>>,
    /// Each row's combination of codes (an index of `table`), when every row is selected.
    index: Vec<u32>,
}

/// The groups seen so far, numbered from 0 in the order they were first seen.
#[derive(Debug, Default)]
pub struct GroupTable {
    width: usize,
    keys: Vec<Key>,
    map: HashMap<Key, u32, FxBuild>,
    /// For a single key: the group of part `v` (0 ≤ v < DIRECT) at `v + 1`, of NULL at 0;
    /// `u32::MAX` for none yet.
    direct: Vec<u32>,
    /// For a single key from a dictionary: its entries and each entry's group (`u32::MAX`:
    /// not numbered yet).
    entry_groups: Option<(Rc<[i64]>, Vec<u32>)>,
    /// For a key of several parts: their local coding (see `assign_local`).
    local: LocalCoding,
    /// Rows of keys of several parts numbered one by one through the hash table, not by
    /// local codes, and vectors numbered a run of one key at a time (for the tests that show
    /// which path ran).
    pub rows_hashed: u64,
    pub vectors_by_runs: u64,
}

/// [`GroupTable::assign`] numbers a vector's rows a run of one key at a time when its key
/// changes at most once per this many rows.
const RUN_ROWS: usize = 16;

impl GroupTable {
    /// A table for keys of `width` parts (0 < width ≤ MAX_KEYS).
    pub fn new(width: usize) -> GroupTable {
        assert!((1..=MAX_KEYS).contains(&width), "a key of {width} parts");
        GroupTable {
            width,
            ..Default::default()
        }
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The key of each group, in group order.
    pub fn keys(&self) -> &[Key] {
        &self.keys
    }

    /// The group of the key of one part `part` (`None`: NULL), if it has been seen.
    pub fn find_single(&self, part: Option<i64>) -> Option<u32> {
        let mut key = Key {
            parts: [0; MAX_KEYS],
            nulls: part.is_none() as u8,
        };
        key.parts[0] = part.unwrap_or(0);
        let slot = match part {
            None => 0,
            Some(p) if (0..DIRECT).contains(&p) => p as usize + 1,
            Some(_) => return self.map.get(&key).copied(),
        };
        self.direct.get(slot).copied().filter(|&g| g != u32::MAX)
    }

    fn number(&mut self, key: Key) -> u32 {
        let next = self.keys.len() as u32;
        let keys = &mut self.keys;
        *self.map.entry(key).or_insert_with(|| {
            keys.push(key);
            next
        })
    }

    fn number_single(&mut self, key: Key) -> u32 {
        let slot = if key.nulls != 0 {
            0
        } else if (0..DIRECT).contains(&key.parts[0]) {
            key.parts[0] as usize + 1
        } else {
            return self.number(key);
        };
        if slot >= self.direct.len() {
            self.direct.resize((slot + 1).next_power_of_two(), u32::MAX);
        }
        if self.direct[slot] == u32::MAX {
            self.direct[slot] = self.keys.len() as u32;
            self.keys.push(key);
        }
        self.direct[slot]
    }

    /// [`GroupTable::assign`] for a key of one part: a part seen before below [`DIRECT`] is
    /// one array lookup; from a dictionary, each entry is numbered once and each row is
    /// the number of its code.
    fn assign_single(&mut self, c: &KeyColumn, selection: &Selection, groups: &mut [u32]) {
        if let KeyParts::Coded { codes, entries } = &c.parts {
            // the entries' groups, kept while the same entries come (one shared dictionary)
            let mut memo = match self.entry_groups.take() {
                Some((e, g)) if Rc::ptr_eq(&e, entries) => (e, g),
                _ => (entries.clone(), vec![u32::MAX; entries.len()]),
            };
            if c.nulls.is_none() && selection.count() == selection.rows() {
                // every row, none NULL: straight over the codes
                for (slot, &code) in groups.iter_mut().zip(codes.iter()) {
                    let mut g = memo.1[code as usize];
                    if g == u32::MAX {
                        let mut parts = [0; MAX_KEYS];
                        parts[0] = memo.0[code as usize];
                        g = self.number_single(Key { parts, nulls: 0 });
                        memo.1[code as usize] = g;
                    }
                    *slot = g;
                }
                self.entry_groups = Some(memo);
                return;
            }
            for r in selection.iter() {
                if c.is_null(r) {
                    groups[r] = self.number_single(Key {
                        parts: [0; MAX_KEYS],
                        nulls: 1,
                    });
                    continue;
                }
                let code = codes[r] as usize;
                let mut g = memo.1[code];
                if g == u32::MAX {
                    let mut parts = [0; MAX_KEYS];
                    parts[0] = memo.0[code];
                    g = self.number_single(Key { parts, nulls: 0 });
                    memo.1[code] = g;
                }
                groups[r] = g;
            }
            self.entry_groups = Some(memo);
            return;
        }
        let KeyParts::Rows(parts) = &c.parts else {
            unreachable!()
        };
        // a run of rows of one part (a time bucket of rows sorted by time) is looked up once
        let mut last: Option<(bool, i64, u32)> = None;
        for r in selection.iter() {
            let null = c.is_null(r);
            let part = if null { 0 } else { parts[r] };
            if let Some((last_null, last_part, g)) = last {
                if last_null == null && last_part == part {
                    groups[r] = g;
                    continue;
                }
            }
            let slot = if null {
                0
            } else if (0..DIRECT).contains(&part) {
                part as usize + 1
            } else {
                usize::MAX
            };
            let g = match self.direct.get(slot) {
                Some(&g) if g != u32::MAX => g,
                _ => {
                    let mut parts = [0; MAX_KEYS];
                    parts[0] = part;
                    self.number_single(Key {
                        parts,
                        nulls: null as u8,
                    })
                }
            };
            last = Some((null, part, g));
            groups[r] = g;
        }
    }

    /// [`GroupTable::assign`] for a key of several parts that each take few values: each
    /// part is coded (a dictionary column by its codes, a plain one by its distinct parts)
    /// and every combination of codes indexes a table of groups, kept while the dictionaries
    /// stay the same, so only a combination's first row looks its key up and rows are not
    /// hashed one by one. False (nothing assigned) if the parts take too many values.
    fn assign_local(
        &mut self,
        columns: &[KeyColumn],
        selection: &Selection,
        groups: &mut [u32],
    ) -> bool {
        let mut local = std::mem::take(&mut self.local);
        let done = self.assign_coded(&mut local, columns, selection, groups);
        self.local = local;
        done
    }

    fn assign_coded(
        &mut self,
        local: &mut LocalCoding,
        columns: &[KeyColumn],
        selection: &Selection,
        groups: &mut [u32],
    ) -> bool {
        // the same coding as the last vector's, unless a dictionary changed
        let same = local.columns.len() == columns.len()
            && local
                .columns
                .iter()
                .zip(columns)
                .all(|(l, c)| match (l, &c.parts) {
                    (LocalColumn::Coded { entries: a, .. }, KeyParts::Coded { entries, .. }) => {
                        Rc::ptr_eq(a, entries)
                    }
                    (LocalColumn::Coded { .. }, KeyParts::Rows(_)) => false,
                    (LocalColumn::Plain(_), _) => true,
                });
        if !same {
            // a dictionary of more entries than a plain column may code is coded by its
            // distinct parts once (until it changes); a smaller one, which may change every
            // vector (an inline dictionary), by the parts of its rows
            local.columns = columns
                .iter()
                .map(|c| match &c.parts {
                    KeyParts::Coded { entries, .. }
                        if (LOCAL_PARTS..LOCAL_COMBINATIONS).contains(&entries.len()) =>
                    {
                        LocalColumn::coded(entries)
                    }
                    _ => LocalColumn::Plain(Vec::new()),
                })
                .collect();
            local.table.clear();
        }
        local.codes.resize_with(columns.len(), Vec::new);
        for (p, c) in columns.iter().enumerate() {
            local.codes[p].resize(selection.rows(), 0);
            if local.columns[p]
                .code(c, selection, &mut local.codes[p])
                .is_none()
            {
                // a plain part past its capacity starts its codes again, and the table
                local.columns[p] = LocalColumn::Plain(Vec::new());
                local.table.clear();
                if local.columns[p]
                    .code(c, selection, &mut local.codes[p])
                    .is_none()
                {
                    local.columns.clear();
                    return false;
                }
            }
        }
        let combinations = local.columns.iter().try_fold(1usize, |n, l| {
            n.checked_mul(l.capacity())
                .filter(|&n| n <= LOCAL_COMBINATIONS)
        });
        let Some(combinations) = combinations else {
            local.columns.clear();
            return false;
        };
        local.table.resize(combinations, u32::MAX);
        let mut number = |r: usize, index: usize| {
            let mut g = local.table[index];
            if g == u32::MAX {
                let mut key = Key {
                    parts: [0; MAX_KEYS],
                    nulls: 0,
                };
                for (p, (l, codes)) in local.columns.iter().zip(&local.codes).enumerate() {
                    match l.part(codes[r]) {
                        Some(part) => key.parts[p] = part,
                        None => key.nulls |= 1 << p,
                    }
                }
                g = self.number(key);
                local.table[index] = g;
            }
            g
        };
        if selection.count() == selection.rows() {
            // every row has its codes: the combinations a part at a time, over all rows
            let mut index = std::mem::take(&mut local.index);
            index.clear();
            index.resize(selection.rows(), 0);
            for (l, codes) in local.columns.iter().zip(&local.codes) {
                let capacity = l.capacity() as u32;
                for (i, &c) in index.iter_mut().zip(codes.iter()) {
                    *i = *i * capacity + c;
                }
            }
            for (r, (slot, &i)) in groups.iter_mut().zip(&index).enumerate() {
                *slot = number(r, i as usize);
            }
            local.index = index;
            return true;
        }
        for r in selection.iter() {
            let mut index = 0;
            for (l, codes) in local.columns.iter().zip(&local.codes) {
                index = index * l.capacity() + codes[r] as usize;
            }
            groups[r] = number(r, index);
        }
        true
    }

    /// The group of each selected row (`groups[r]`; unselected rows get an unspecified
    /// number), given the key parts of the vector's rows, one column per part.
    pub fn assign(&mut self, columns: &[KeyColumn], selection: &Selection, groups: &mut Vec<u32>) {
        assert_eq!(columns.len(), self.width, "one key column per part");
        // (not cleared: every selected row is written, and the others are unspecified)
        groups.resize(selection.rows(), 0);
        if let [c] = columns {
            return self.assign_single(c, selection, groups);
        }
        if self.assign_runs(columns, selection, groups) {
            return;
        }
        if !self.assign_local(columns, selection, groups) {
            self.assign_hashed(columns, selection, groups);
        }
    }

    /// [`GroupTable::assign`] for a key of several parts over every row of a vector, none
    /// NULL, whose key changes rarely (a sorted table's vector: one host, each time bucket
    /// for hundreds of rows): the rows where some part's value differs from the row before
    /// are found a column at a time (neighbours compared, which the compiler vectorizes;
    /// codes of a dictionary compared as codes, so two entries of one part only start a run
    /// that finds the same group), and each run's key is looked up once. False (nothing
    /// assigned) for a partial selection, NULLs, or more than one change per [`RUN_ROWS`].
    fn assign_runs(
        &mut self,
        columns: &[KeyColumn],
        selection: &Selection,
        groups: &mut [u32],
    ) -> bool {
        let rows = selection.rows();
        if rows < 2 * RUN_ROWS
            || selection.count() != rows
            || columns.iter().any(|c| c.nulls.is_some())
        {
            return false;
        }
        // changed[r - 1]: row r's key differs from row r - 1's
        let mut changed = vec![false; rows - 1];
        for c in columns {
            match &c.parts {
                KeyParts::Rows(p) => changed
                    .iter_mut()
                    .zip(p.windows(2))
                    .for_each(|(ch, w)| *ch |= w[0] != w[1]),
                KeyParts::Coded { codes, .. } => changed
                    .iter_mut()
                    .zip(codes.windows(2))
                    .for_each(|(ch, w)| *ch |= w[0] != w[1]),
            }
        }
        if changed.iter().filter(|&&c| c).count() * RUN_ROWS > rows {
            return false;
        }
        self.vectors_by_runs += 1;
        let mut start = 0;
        for end in (1..rows).filter(|&r| changed[r - 1]).chain([rows]) {
            let mut key = Key {
                parts: [0; MAX_KEYS],
                nulls: 0,
            };
            for (p, c) in columns.iter().enumerate() {
                key.parts[p] = c.part(start);
            }
            let g = self.number(key);
            groups[start..end].fill(g);
            start = end;
        }
        true
    }

    /// [`GroupTable::assign`] for a key of several parts, row by row: each row's key looked
    /// up unless it is the previous row's.
    fn assign_hashed(&mut self, columns: &[KeyColumn], selection: &Selection, groups: &mut [u32]) {
        self.rows_hashed += selection.count() as u64;
        let mut last: Option<(Key, u32)> = None;
        for r in selection.iter() {
            let mut key = Key {
                parts: [0; MAX_KEYS],
                nulls: 0,
            };
            for (p, c) in columns.iter().enumerate() {
                if c.is_null(r) {
                    key.nulls |= 1 << p;
                } else {
                    key.parts[p] = c.part(r);
                }
            }
            // runs of one key (a bucket of time-ordered rows) skip the lookup
            let g = match last {
                Some((k, g)) if k == key => g,
                _ if self.width == 1 => self.number_single(key),
                _ => self.number(key),
            };
            last = Some((key, g));
            groups[r] = g;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vector::Kind;

    fn column(parts: &[Option<i64>]) -> KeyColumn {
        let mut nulls = vec![0u8; parts.len().div_ceil(8)];
        for (r, p) in parts.iter().enumerate() {
            if p.is_none() {
                nulls[r / 8] |= 1 << (r % 8);
            }
        }
        let any = parts.iter().any(|p| p.is_none());
        KeyColumn {
            parts: KeyParts::Rows(parts.iter().map(|p| p.unwrap_or(12345)).collect()),
            nulls: any.then_some(nulls),
        }
    }

    /// `parts` as a dictionary vector over `dictionary` (each part is one of its entries), or
    /// as plain parts if one is not.
    fn coded(parts: &[Option<i64>], dictionary: &Rc<[i64]>) -> KeyColumn {
        let plain = column(parts);
        let codes: Option<Vec<u32>> = parts
            .iter()
            .map(|p| {
                p.map_or(Some(0), |v| {
                    dictionary.iter().position(|&e| e == v).map(|c| c as u32)
                })
            })
            .collect();
        match codes {
            Some(codes) => KeyColumn {
                parts: KeyParts::Coded {
                    codes,
                    entries: dictionary.clone(),
                },
                nulls: plain.nulls,
            },
            None => plain,
        }
    }

    /// The reference: groups numbered by first appearance, keys compared as `Option`s.
    fn reference(
        columns: &[Vec<Option<i64>>],
        selected: &[usize],
        seen: &mut Vec<Vec<Option<i64>>>,
    ) -> Vec<(usize, u32)> {
        selected
            .iter()
            .map(|&r| {
                let key: Vec<Option<i64>> = columns.iter().map(|c| c[r]).collect();
                let g = match seen.iter().position(|k| *k == key) {
                    Some(g) => g,
                    None => {
                        seen.push(key);
                        seen.len() - 1
                    }
                };
                (r, g as u32)
            })
            .collect()
    }

    #[test]
    fn groups_match_the_reference() {
        let mut x: u64 = 42;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        // vectors of keys of several parts numbered a run at a time, and otherwise
        let (mut by_runs, mut not_by_runs) = (0, 0);
        for width in 1..=MAX_KEYS {
            // the entries of a dictionary shared by the vectors (coded columns draw from it)
            let dictionary: Rc<[i64]> = (-2..48).chain([1 << 20, -(1 << 40)]).collect();
            let mut table = GroupTable::new(width);
            let mut seen = Vec::new();
            for _ in 0..30 {
                let rows = 1 + (next() % 1024) as usize;
                // some vectors as a sorted table's: every column in long runs, no NULL,
                // every row selected (numbered a run at a time when the key has several parts)
                let sorted = next() % 4 == 0;
                // some vectors without NULLs (the single key's path over every row)
                let no_nulls = sorted || next() % 3 == 0;
                let columns: Vec<Vec<Option<i64>>> = (0..width)
                    .map(|_| {
                        let spread = [3u64, 50, 1 << 20][(next() % 3) as usize];
                        // some columns in runs of one part (a time bucket of sorted rows),
                        // NULL runs among them
                        let runs = sorted || next() % 3 == 0;
                        // and some in long runs (a sorted vector's host and time bucket)
                        let repeat = if sorted || (runs && next() % 2 == 0) {
                            256
                        } else {
                            8
                        };
                        let mut previous: Option<Option<i64>> = None;
                        (0..rows)
                            .map(|_| {
                                let v = next();
                                if let Some(p) = previous.filter(|_| runs && v % repeat != 0) {
                                    return p;
                                }
                                // NULLs, negatives, values past the direct array, repeats;
                                // all of them entries of the dictionary when spread is small
                                let part = if spread < 50 {
                                    dictionary[(v >> 8) as usize % spread as usize]
                                } else {
                                    (v >> 8) as i64 % spread as i64 - 2
                                };
                                let part = (v % 11 != 0 || no_nulls).then_some(part);
                                previous = Some(part);
                                part
                            })
                            .collect()
                    })
                    .collect();
                // every row, dense and sparse selections (NULL rows left out of some)
                let keep = if sorted {
                    1
                } else {
                    [1u64, 3, 50][(next() % 3) as usize]
                };
                let mut selection = Selection::none(rows);
                for r in 0..rows {
                    if keep == 1 || next() % keep == 1 {
                        selection.set(r);
                    }
                }
                let keys: Vec<KeyColumn> = columns
                    .iter()
                    .map(|c| {
                        if next() % 2 == 0 {
                            column(c)
                        } else {
                            coded(c, &dictionary)
                        }
                    })
                    .collect();
                let mut groups = Vec::new();
                let before = table.vectors_by_runs;
                table.assign(&keys, &selection, &mut groups);
                if width > 1 {
                    if table.vectors_by_runs > before {
                        by_runs += 1
                    } else {
                        not_by_runs += 1
                    }
                }
                let selected: Vec<usize> = selection.iter().collect();
                for (r, g) in reference(&columns, &selected, &mut seen) {
                    assert_eq!(groups[r], g, "width {width}, row {r}");
                }
                assert_eq!(table.len(), seen.len());
                // the same vector in a table of its own (a group made before its first row
                // would shift every number)
                let mut alone = GroupTable::new(width);
                alone.assign(&keys, &selection, &mut groups);
                let mut fresh = Vec::new();
                for (r, g) in reference(&columns, &selected, &mut fresh) {
                    assert_eq!(groups[r], g, "alone: width {width}, row {r}");
                }
                assert_eq!(alone.len(), fresh.len());
            }
            // every group's key is the one it was given, and a key of one part finds its
            // group (and only a key seen finds one)
            if width == 1 {
                for (g, key) in seen.iter().enumerate() {
                    assert_eq!(table.find_single(key[0]), Some(g as u32));
                }
                for probe in [Some(-3), Some(1 << 21), Some(1 << 41), Some(49)] {
                    let known = seen.iter().any(|k| k[0] == probe);
                    assert_eq!(table.find_single(probe).is_some(), known);
                }
            }
            for (g, k) in table.keys().iter().enumerate() {
                for (p, part) in seen[g].iter().enumerate() {
                    assert_eq!(k.nulls >> p & 1 == 1, part.is_none());
                    if let Some(v) = part {
                        assert_eq!(k.parts[p], *v);
                    }
                }
            }
        }
        assert!(
            by_runs >= 5 && not_by_runs >= 20,
            "{by_runs} vectors by runs, {not_by_runs} otherwise"
        );
    }

    /// The numbering by local codes is the row-by-row one, on vectors whose parts are few
    /// (coded and plain, with NULLs), and declines parts that are many.
    #[test]
    fn local_codes_number_as_rows_do() {
        let dictionary: Rc<[i64]> = (0..100).collect();
        // hours plain and hosts by a shared dictionary; hours by a small dictionary of each
        // vector's own (an inline one) and hosts plain
        for inline in [false, true] {
            let mut local = GroupTable::new(2);
            let mut hashed = GroupTable::new(2);
            for v in 0..20i64 {
                let rows = 1024;
                let hours: Vec<Option<i64>> = (0..rows)
                    .map(|r| (r % 97 != 5).then_some(v / 3 + (r as i64) / 700))
                    .collect();
                // (at most LOCAL_PARTS hosts when they are plain)
                let spread = if inline { 50 } else { 100 };
                let hosts: Vec<Option<i64>> = (0..rows)
                    .map(|r| (r % 89 != 7).then_some((r as i64 * 7 + v) % spread))
                    .collect();
                let keys = if inline {
                    let own: Rc<[i64]> = [v / 3 + 1, v / 3].into_iter().collect();
                    [coded(&hours, &own), column(&hosts)]
                } else {
                    [column(&hours), coded(&hosts, &dictionary)]
                };
                assert!(keys
                    .iter()
                    .any(|k| matches!(k.parts, KeyParts::Coded { .. })));
                let mut selection = Selection::none(rows);
                (0..rows)
                    .filter(|r| r % 3 != 1)
                    .for_each(|r| selection.set(r));
                let (mut a, mut b) = (vec![0; rows], vec![0; rows]);
                assert!(local.assign_local(&keys, &selection, &mut a));
                hashed.assign_hashed(&keys, &selection, &mut b);
                for r in selection.iter() {
                    assert_eq!(a[r], b[r], "inline {inline}, vector {v}, row {r}");
                }
                assert_eq!(local.keys(), hashed.keys());
            }
        }
        let mut local = GroupTable::new(2);
        // more distinct plain parts than a vector may have locally
        let many: Vec<Option<i64>> = (0..1024).map(Some).collect();
        let mut groups = vec![0; 1024];
        assert!(!local.assign_local(
            &[column(&many), column(&many)],
            &Selection::all(1024),
            &mut groups
        ));
        local.assign(
            &[column(&many), column(&many)],
            &Selection::all(1024),
            &mut groups,
        );
        assert_eq!(local.rows_hashed, 1024);
    }

    /// A shared dictionary of many entries but few distinct parts (the hour buckets of a
    /// stripe's 1,310 timestamps) is coded by its parts: the table of combinations stays
    /// small, no row is hashed, and the groups are the row-by-row ones.
    #[test]
    fn dictionary_entries_of_one_part_share_a_code() {
        let times: Rc<[i64]> = (0..1310).map(|t| t / 100).collect();
        let hosts: Rc<[i64]> = (1000..1100).collect();
        let mut local = GroupTable::new(2);
        let mut hashed = GroupTable::new(2);
        for v in 0..40usize {
            let rows = 1024;
            let time_of = |r: usize| ((v * rows + r) / 100 % 1310) as i64;
            let host_parts: Vec<Option<i64>> = (0..rows)
                .map(|r| (v % 4 != 3 || r % 13 != 0).then_some(1000 + (r % 100) as i64))
                .collect();
            // each row's code is its timestamp's entry
            let time_codes = KeyParts::Coded {
                codes: (0..rows).map(|r| time_of(r) as u32).collect(),
                entries: times.clone(),
            };
            let keys = [
                KeyColumn {
                    parts: time_codes,
                    nulls: None,
                },
                coded(&host_parts, &hosts),
            ];
            let mut selection = Selection::none(rows);
            (0..rows)
                .filter(|r| v % 2 == 0 || r % 5 != 1)
                .for_each(|r| selection.set(r));
            let (mut a, mut b) = (vec![0; rows], vec![0; rows]);
            local.assign(&keys, &selection, &mut a);
            hashed.assign_hashed(&keys, &selection, &mut b);
            for r in selection.iter() {
                assert_eq!(a[r], b[r], "vector {v}, row {r}");
            }
            assert_eq!(local.keys(), hashed.keys());
        }
        assert_eq!(local.rows_hashed, 0);
        assert!(hashed.rows_hashed > 0);
    }

    #[test]
    fn interned_strings() {
        let mut entries = ByteStrings::new();
        for s in ["b", "a", ""] {
            entries.push(s.as_bytes());
        }
        let inline = Some(Values::Bytes(entries.clone()));
        let u = Unpacked {
            rows: 4,
            nulls: Some(vec![0b0100]),
            form: Form::Codes {
                inline,
                codes: vec![1, 0, 1],
            },
        };
        let mut interner = Interner::new();
        let k = interner.keys(&u, &ColumnContext::default(), 0).unwrap();
        assert!(k.is_null(2));
        assert!(matches!(k.parts, KeyParts::Coded { .. }));
        let text: Vec<&[u8]> = [0, 1, 3]
            .iter()
            .map(|&r| interner.get(k.part(r) as u32))
            .collect();
        assert_eq!(text, [b"a".as_slice(), b"b", b"a"]);
        // plain strings share ids with the entries
        let mut plain = ByteStrings::new();
        plain.push(b"");
        plain.push(b"b");
        let u = Unpacked {
            rows: 2,
            nulls: None,
            form: Form::Values(Values::Bytes(plain)),
        };
        let k2 = interner.keys(&u, &ColumnContext::default(), 0).unwrap();
        assert_eq!(interner.get(k2.part(0) as u32), b"");
        assert_eq!(k2.part(1), k.part(1));
        assert_eq!(interner.len(), 3);
        assert_eq!((interner.entries_interned, interner.rows_interned), (3, 2));
        // a dictionary equal to the last one takes its ids without a lookup per entry (the
        // control: one that differs in a byte is interned entry by entry)
        let again = Unpacked {
            rows: 2,
            nulls: None,
            form: Form::Codes {
                inline: Some(Values::Bytes(entries.clone())),
                codes: vec![2, 0],
            },
        };
        let k3 = interner.keys(&again, &ColumnContext::default(), 0).unwrap();
        assert_eq!((k3.part(0), k3.part(1)), (k2.part(0), k.part(1)));
        assert_eq!((interner.entries_interned, interner.entries_reused), (3, 3));
        let mut other = ByteStrings::new();
        for s in ["b", "c", ""] {
            other.push(s.as_bytes());
        }
        let differs = Unpacked {
            rows: 1,
            nulls: None,
            form: Form::Codes {
                inline: Some(Values::Bytes(other)),
                codes: vec![1],
            },
        };
        let k4 = interner
            .keys(&differs, &ColumnContext::default(), 0)
            .unwrap();
        assert_eq!(interner.get(k4.part(0) as u32), b"c");
        assert_eq!(
            (
                interner.entries_interned,
                interner.entries_reused,
                interner.len()
            ),
            (6, 3, 4)
        );
        // not strings
        let ints = Unpacked {
            rows: 1,
            nulls: None,
            form: Form::Integers {
                kind: Kind::Int64,
                ints: vec![7],
            },
        };
        assert!(interner.keys(&ints, &ColumnContext::default(), 0).is_none());
        let mut memo = EntryMemo::default();
        assert_eq!(
            int_keys(&ints, &ColumnContext::default(), &mut memo, 0)
                .unwrap()
                .parts,
            KeyParts::Rows(vec![7])
        );
        let floats = Unpacked {
            rows: 1,
            nulls: None,
            form: Form::Integers {
                kind: Kind::Float64,
                ints: vec![7],
            },
        };
        assert!(int_keys(&floats, &ColumnContext::default(), &mut memo, 0).is_none());
        let coded = Unpacked {
            rows: 3,
            nulls: Some(vec![0b010]),
            form: Form::Codes {
                inline: Some(Values::Int32(vec![5, -9])),
                codes: vec![1, 0],
            },
        };
        let k = int_keys(&coded, &ColumnContext::default(), &mut memo, 0).unwrap();
        assert_eq!((k.part(0), k.is_null(1), k.part(2)), (-9, true, 5));
    }
}

//! Between PostgreSQL Datums and the codec's values: how each attribute is stored, how a
//! row's Datums are appended to a column being buffered, and how a decoded vector becomes
//! Datums again.
//!
//! The mapping depends only on an attribute's physical shape (`typlen`, `typbyval`, and
//! whether the base type is float4/float8), so every type works, including domains, enums,
//! composites and arrays: by-value types become integers (or floats), fixed-length by-reference
//! types opaque fixed-width values, varlena types their detoasted bytes, cstrings their
//! bytes.

use pg_columnar_codec::filter::Selection;
use pg_columnar_codec::{
    ByteStrings, ColumnContext, Form, Kind, Unpacked, Values, Vector, MAX_ROWS,
};
use pgrx::pg_sys;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    /// A dropped column: stored as all NULL.
    Dropped,
    Int8,
    Int16,
    Int32,
    Int64,
    Float32,
    Float64,
    Fixed(u16),
    Varlena,
    CString,
}

impl ColumnType {
    pub fn of(attr: &pg_sys::FormData_pg_attribute) -> ColumnType {
        if attr.attisdropped {
            return ColumnType::Dropped;
        }
        // SAFETY: a syscache lookup by type OID, in the caller's transaction; a missing type
        // is an ERROR, not undefined behaviour
        let base = unsafe { pg_sys::getBaseType(attr.atttypid) };
        match (attr.attbyval, attr.attlen) {
            (true, 1) => ColumnType::Int8,
            (true, 2) => ColumnType::Int16,
            (true, 4) if base == pg_sys::FLOAT4OID => ColumnType::Float32,
            (true, 4) => ColumnType::Int32,
            (true, 8) if base == pg_sys::FLOAT8OID => ColumnType::Float64,
            (true, 8) => ColumnType::Int64,
            (false, n) if n > 0 => ColumnType::Fixed(n as u16),
            (false, -1) => ColumnType::Varlena,
            (false, -2) => ColumnType::CString,
            (byval, len) => pgrx::error!(
                "pg_columnar: unsupported attribute shape (byval {byval}, length {len})"
            ),
        }
    }

    /// The codec kind values of this type are stored as (`None` for a dropped column, whose
    /// vectors have no values: any kind is accepted).
    pub fn kind(self) -> Option<Kind> {
        Some(match self {
            ColumnType::Dropped => return None,
            ColumnType::Int8 => Kind::Int8,
            ColumnType::Int16 => Kind::Int16,
            ColumnType::Int32 => Kind::Int32,
            ColumnType::Int64 => Kind::Int64,
            ColumnType::Float32 => Kind::Float32,
            ColumnType::Float64 => Kind::Float64,
            ColumnType::Fixed(_) => Kind::Fixed,
            ColumnType::Varlena | ColumnType::CString => Kind::Bytes,
        })
    }

    fn empty_values(self) -> Values {
        match self {
            ColumnType::Dropped | ColumnType::Int8 => Values::Int8(Vec::new()),
            ColumnType::Int16 => Values::Int16(Vec::new()),
            ColumnType::Int32 => Values::Int32(Vec::new()),
            ColumnType::Int64 => Values::Int64(Vec::new()),
            ColumnType::Float32 => Values::Float32(Vec::new()),
            ColumnType::Float64 => Values::Float64(Vec::new()),
            ColumnType::Fixed(width) => Values::Fixed {
                width,
                data: Vec::new(),
            },
            ColumnType::Varlena | ColumnType::CString => Values::Bytes(ByteStrings::new()),
        }
    }
}

/// The column types of a relation's attributes, in attribute order.
pub fn column_types(desc: pg_sys::TupleDesc) -> Vec<ColumnType> {
    // SAFETY: `desc` is a valid tuple descriptor (every caller passes a relation's; a safe fn
    // over a raw pointer, so not checked); each attribute read is below its `natts`
    unsafe {
        let natts = (*desc).natts as usize;
        (0..natts)
            .map(|i| ColumnType::of(&*crate::compat::tuple_desc_attr(desc, i)))
            .collect()
    }
}

/// One column of a stripe being buffered: a null bitmap over its rows and the non-null
/// values.
pub struct ColumnBuffer {
    pub ty: ColumnType,
    pub nulls: Vec<u8>,
    pub has_nulls: bool,
    pub values: Values,
    pub rows: usize,
}

/// Makes room for `more` items in `v`, growing it by doubling as `Vec` does, with PostgreSQL's
/// "out of memory" ERROR if that allocation fails (`storage::out_of_memory`): the buffers of
/// a load are the large and growing allocations, so they ask first.
pub(super) fn room<T>(v: &mut Vec<T>, more: usize) {
    if v.capacity() - v.len() >= more {
        return;
    }
    if v.try_reserve(more.max(v.len())).is_err() && v.try_reserve_exact(more).is_err() {
        crate::storage::out_of_memory(
            (v.len() + more).saturating_mul(std::mem::size_of::<T>()),
            "for buffered rows",
        );
    }
}

/// Appends `x` to `v`, with [`room`] for it first.
fn push<T>(v: &mut Vec<T>, x: T) {
    room(v, 1);
    v.push(x)
}

impl ColumnBuffer {
    pub fn new(ty: ColumnType) -> ColumnBuffer {
        ColumnBuffer {
            ty,
            nulls: Vec::new(),
            has_nulls: false,
            values: ty.empty_values(),
            rows: 0,
        }
    }

    /// Appends one value. By-reference values are copied (varlenas detoasted first), so the
    /// Datum need not outlive the call. Returns the bytes the value added.
    ///
    /// # Safety
    /// `datum` must be a valid Datum of this column's type unless `is_null`.
    pub unsafe fn push(&mut self, datum: pg_sys::Datum, is_null: bool) -> usize {
        let row = self.rows;
        if row.is_multiple_of(8) {
            push(&mut self.nulls, 0);
        }
        self.rows += 1;
        if is_null || self.ty == ColumnType::Dropped {
            self.nulls[row / 8] |= 1 << (row % 8);
            self.has_nulls = true;
            return 0;
        }
        let raw = datum.value();
        match &mut self.values {
            Values::Int8(v) => push(v, raw as u8 as i8),
            Values::Int16(v) => push(v, raw as u16 as i16),
            Values::Int32(v) => push(v, raw as u32 as i32),
            Values::Int64(v) => push(v, raw as u64 as i64),
            Values::Float32(v) => push(v, f32::from_bits(raw as u32)),
            Values::Float64(v) => push(v, f64::from_bits(raw as u64)),
            Values::Fixed { width, data } => {
                let w = *width as usize;
                room(data, w);
                // SAFETY: a by-reference value of this fixed-width column points at its `w`
                // bytes (the caller's contract: a valid Datum of the column's type)
                data.extend_from_slice(unsafe {
                    std::slice::from_raw_parts(datum.cast_mut_ptr::<u8>(), w)
                });
                return w;
            }
            Values::Bytes(b) => {
                let bytes = if self.ty == ColumnType::CString {
                    // SAFETY: a cstring column's value points at a NUL-terminated string (the
                    // caller's contract), which outlives this call, where `bytes` is used
                    unsafe { std::ffi::CStr::from_ptr(datum.cast_mut_ptr()).to_bytes() }
                } else {
                    // detoast (decompress, fetch from the TOAST table, flatten expanded objects);
                    // the copy, if any, is freed when the caller resets its memory context
                    // SAFETY: a varlena column's value points at a varlena (the caller's
                    // contract); `v` is its detoasted form, whose payload the slice covers
                    unsafe {
                        let v = pg_sys::pg_detoast_datum_packed(datum.cast_mut_ptr());
                        std::slice::from_raw_parts(
                            pgrx::varlena::vardata_any(v) as *const u8,
                            pgrx::varlena::varsize_any_exhdr(v),
                        )
                    }
                };
                room(&mut b.data, bytes.len());
                room(&mut b.offsets, 1);
                b.push(bytes);
                return bytes.len();
            }
        }
        8
    }

    /// The value of buffered row `row` (`None` if it is NULL) as a Datum: by-reference values
    /// are copied into palloc'd memory of the current memory context (a varlena behind a
    /// 4-byte header, a cstring with its NUL).
    ///
    /// # Safety
    /// `row` must be below `self.rows`.
    pub(super) unsafe fn datum_at(&self, row: usize) -> Option<pg_sys::Datum> {
        let is_null = |r: usize| self.has_nulls && self.nulls[r / 8] & (1 << (r % 8)) != 0;
        if is_null(row) || self.ty == ColumnType::Dropped {
            return None;
        }
        // the value's place among the non-null values
        let at = if self.has_nulls {
            let whole: usize = self.nulls[..row / 8]
                .iter()
                .map(|b| b.count_ones() as usize)
                .sum();
            let part = (self.nulls[row / 8] & ((1u8 << (row % 8)) - 1)).count_ones() as usize;
            row - whole - part
        } else {
            row
        };
        let copy = |bytes: &[u8], header: Option<[u8; 4]>, trailing: usize| {
            let head = header.map_or(0, |h| h.len());
            // SAFETY: `p` is a fresh allocation (palloc raises an ERROR rather than return
            // null) of head + len + trailing bytes: the header, the bytes and one NUL fit
            unsafe {
                let p = pg_sys::palloc(head + bytes.len() + trailing) as *mut u8;
                if let Some(h) = header {
                    std::ptr::copy_nonoverlapping(h.as_ptr(), p, head);
                }
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), p.add(head), bytes.len());
                if trailing > 0 {
                    *p.add(head + bytes.len()) = 0;
                }
                pg_sys::Datum::from(p)
            }
        };
        Some(match &self.values {
            Values::Int8(v) => pg_sys::Datum::from(v[at] as i64),
            Values::Int16(v) => pg_sys::Datum::from(v[at] as i64),
            Values::Int32(v) => pg_sys::Datum::from(v[at] as i64),
            Values::Int64(v) => pg_sys::Datum::from(v[at]),
            Values::Float32(v) => pg_sys::Datum::from(v[at].to_bits() as u64),
            Values::Float64(v) => pg_sys::Datum::from(v[at].to_bits()),
            Values::Fixed { width, data } => {
                let w = *width as usize;
                copy(&data[at * w..(at + 1) * w], None, 0)
            }
            Values::Bytes(b) => {
                let bytes = b.as_ref().get(at);
                if self.ty == ColumnType::CString {
                    copy(bytes, None, 1)
                } else {
                    copy(bytes, Some(varlena_header(bytes.len())), 0)
                }
            }
        })
    }
}

/// One decoded vector of one column as Datums: what a scan hands to the executor. By-reference
/// Datums point into `arena`, which lives until the next vector is decoded into this buffer,
/// or into `dictionary`'s, which lives as long.
#[derive(Default)]
pub struct DatumVector {
    pub datums: Vec<pg_sys::Datum>,
    pub nulls: Vec<bool>,
    arena: Vec<u64>,
    /// A shared dictionary's entries laid out once for all the vectors of its stripe column
    /// (named by [`DictionaryKey`]): their arena and each entry's offset in it.
    dictionary: Option<(DictionaryKey, Vec<u64>, Vec<usize>)>,
}

/// Names a shared dictionary: the serial number of the loaded stripe it was read with
/// (`read::LoadedStripe::serial`), unique in the process, and its column.
pub(super) type DictionaryKey = (u64, usize);

/// Writes a 4-byte varlena header for `len` payload bytes (endian-aware, as SET_VARSIZE).
fn varlena_header(len: usize) -> [u8; 4] {
    let total = (len + 4) as u32;
    if cfg!(target_endian = "little") {
        (total << 2).to_le_bytes()
    } else {
        (total & 0x3FFF_FFFF).to_be_bytes()
    }
}

/// Copies `items` into `arena`, each at an 8-byte aligned offset (pushed to `offsets`),
/// behind a 4-byte varlena header if `varlena`, and followed by `trailing` zero bytes (a
/// cstring's NUL). An item `None` is not copied (its offset is pushed as 0).
fn lay_out<'a>(
    arena: &mut Vec<u64>,
    items: impl Iterator<Item = Option<&'a [u8]>> + Clone,
    varlena: bool,
    trailing: usize,
    offsets: &mut Vec<usize>,
) {
    let header = if varlena { 4 } else { 0 };
    let slot = |len: usize| (header + len + trailing).next_multiple_of(8);
    let total: usize = items.clone().flatten().map(|s| slot(s.len())).sum();
    arena.clear();
    arena.resize(total / 8, 0);
    let base = arena.as_mut_ptr() as *mut u8;
    let mut at = 0;
    for s in items {
        let Some(s) = s else {
            offsets.push(0);
            continue;
        };
        // SAFETY: the arena was sized above by these items' slots (a clone of the iterator:
        // the same items), so this item's header and bytes fit in its slot at `at`
        unsafe {
            if varlena {
                std::ptr::copy_nonoverlapping(varlena_header(s.len()).as_ptr(), base.add(at), 4);
            }
            std::ptr::copy_nonoverlapping(s.as_ptr(), base.add(at + header), s.len());
        }
        offsets.push(at);
        at += slot(s.len());
    }
}

/// By-value Datums (appended): `values` are the non-null rows' in row order.
fn by_value(
    datums: &mut Vec<pg_sys::Datum>,
    nulls_out: &mut Vec<bool>,
    rows: usize,
    nulls: Option<&[u8]>,
    values: impl Iterator<Item = usize>,
) {
    match nulls {
        None => {
            datums.extend(values.map(pg_sys::Datum::from));
            nulls_out.resize(rows, false);
        }
        Some(bitmap) => {
            let mut values = values;
            for r in 0..rows {
                let null = bitmap[r / 8] >> (r % 8) & 1 == 1;
                nulls_out.push(null);
                let value = if null { 0 } else { values.next().unwrap_or(0) };
                datums.push(pg_sys::Datum::from(value));
            }
        }
    }
}

/// A selection of fewer than one row in this many has only its rows' integers laid out as
/// Datums; a denser one, every row (one pass without a look at the selection).
const SPARSE: usize = 8;

/// Unpacked integers `ints` into Datums by `datum`: every row ([`by_value`]), or only the rows
/// of `sparse` (a vector without NULLs; the other rows' Datums are left 0).
fn integer_datums(
    datums: &mut Vec<pg_sys::Datum>,
    nulls_out: &mut Vec<bool>,
    rows: usize,
    nulls: Option<&[u8]>,
    ints: &[i64],
    sparse: Option<&Selection>,
    datum: impl Fn(i64) -> usize,
) {
    match sparse {
        Some(s) => {
            datums.resize(rows, pg_sys::Datum::from(0));
            nulls_out.resize(rows, false);
            for r in s.iter() {
                datums[r] = pg_sys::Datum::from(datum(ints[r]));
            }
        }
        None => by_value(
            datums,
            nulls_out,
            rows,
            nulls,
            ints.iter().map(|&v| datum(v)),
        ),
    }
}

impl DatumVector {
    /// Fills this buffer with `rows` NULLs (a column the stripe does not have is handled by
    /// the caller; this is for dropped columns and all-NULL vectors).
    pub(super) fn set_all_null(&mut self, rows: usize) {
        self.datums.clear();
        self.datums.resize(rows, pg_sys::Datum::from(0));
        self.nulls.clear();
        self.nulls.resize(rows, true);
    }

    /// Converts a vector of type `ty`, as unpacked with `ctx`, into Datums: those of the
    /// `selected` rows (every row if `None`); the others must not be stored. A text vector of
    /// dictionary codes gets Datums pointing at its entries, each laid out once (a shared
    /// dictionary's once for its stripe, under `key`); the rest is materialized first.
    pub(super) fn fill_unpacked(
        &mut self,
        ty: ColumnType,
        u: Unpacked,
        ctx: &ColumnContext<'_>,
        key: DictionaryKey,
        selected: Option<&Selection>,
    ) {
        if let Form::Integers { kind, ints } = &u.form {
            // the integers straight into Datums (the values `materialize` would give)
            self.datums.clear();
            self.nulls.clear();
            let (d, n, rows, nulls) = (
                &mut self.datums,
                &mut self.nulls,
                u.rows,
                u.nulls.as_deref(),
            );
            // few rows to store (a node's chosen rows, a selective filter's): theirs alone,
            // value r being row r's without NULLs
            let sparse = selected.filter(|s| nulls.is_none() && s.count() * SPARSE < rows);
            return match kind {
                Kind::Int8 => {
                    integer_datums(d, n, rows, nulls, ints, sparse, |v| v as i8 as u8 as usize)
                }
                Kind::Int16 => integer_datums(d, n, rows, nulls, ints, sparse, |v| {
                    v as i16 as u16 as usize
                }),
                Kind::Int32 => integer_datums(d, n, rows, nulls, ints, sparse, |v| {
                    v as i32 as u32 as usize
                }),
                Kind::Int64 => {
                    integer_datums(d, n, rows, nulls, ints, sparse, |v| v as u64 as usize)
                }
                Kind::Float32 => integer_datums(d, n, rows, nulls, ints, sparse, |v| {
                    (v as f32).to_bits() as usize
                }),
                Kind::Float64 => integer_datums(d, n, rows, nulls, ints, sparse, |v| {
                    (v as f64).to_bits() as usize
                }),
                Kind::Bytes | Kind::Fixed => {
                    unreachable!("unpacked integers are of a numeric kind")
                }
            };
        }
        if let (Form::Codes { inline, codes }, ColumnType::Varlena | ColumnType::CString) =
            (&u.form, ty)
        {
            if let Values::Bytes(entries) = Unpacked::entries(inline, ctx) {
                let wanted = selected.map_or(u.rows, |s| s.count());
                let cached =
                    inline.is_none() && self.dictionary.as_ref().is_some_and(|d| d.0 == key);
                // laying the entries out pays when no more of them than of rows to store
                if cached
                    || entries.len() <= wanted.max(if inline.is_none() { MAX_ROWS } else { 0 })
                {
                    if !cached {
                        let (mut arena, mut offsets) = self
                            .dictionary
                            .take()
                            .map(|d| (d.1, d.2))
                            .unwrap_or_default();
                        offsets.clear();
                        let items = entries.as_ref();
                        let items = (0..items.len()).map(move |i| Some(items.get(i)));
                        lay_out(
                            &mut arena,
                            items,
                            ty == ColumnType::Varlena,
                            (ty == ColumnType::CString) as usize,
                            &mut offsets,
                        );
                        // an inline dictionary's layout is this vector's alone
                        self.dictionary = Some((
                            if inline.is_none() {
                                key
                            } else {
                                (u64::MAX, usize::MAX)
                            },
                            arena,
                            offsets,
                        ));
                    }
                    let (_, arena, offsets) = self.dictionary.as_ref().unwrap();
                    let base = arena.as_ptr() as usize;
                    self.datums.clear();
                    self.nulls.clear();
                    let values = codes.iter().map(|&c| base + offsets[c as usize]);
                    by_value(
                        &mut self.datums,
                        &mut self.nulls,
                        u.rows,
                        u.nulls.as_deref(),
                        values,
                    );
                    return;
                }
            }
        }
        self.fill(ty, &u.materialize(ctx), selected)
    }

    /// Converts a decoded vector of type `ty` into Datums: those of the `selected` rows
    /// (every row if `None`); the others must not be stored.
    pub fn fill(&mut self, ty: ColumnType, v: &Vector, selected: Option<&Selection>) {
        let rows = v.rows;
        self.datums.clear();
        self.nulls.clear();
        let nulls = v.nulls.as_deref();
        match &v.values {
            Values::Int8(x) => {
                return by_value(
                    &mut self.datums,
                    &mut self.nulls,
                    rows,
                    nulls,
                    x.iter().map(|&x| x as u8 as usize),
                )
            }
            Values::Int16(x) => {
                return by_value(
                    &mut self.datums,
                    &mut self.nulls,
                    rows,
                    nulls,
                    x.iter().map(|&x| x as u16 as usize),
                )
            }
            Values::Int32(x) => {
                return by_value(
                    &mut self.datums,
                    &mut self.nulls,
                    rows,
                    nulls,
                    x.iter().map(|&x| x as u32 as usize),
                )
            }
            Values::Int64(x) => {
                return by_value(
                    &mut self.datums,
                    &mut self.nulls,
                    rows,
                    nulls,
                    x.iter().map(|&x| x as u64 as usize),
                )
            }
            Values::Float32(x) => {
                return by_value(
                    &mut self.datums,
                    &mut self.nulls,
                    rows,
                    nulls,
                    x.iter().map(|&x| x.to_bits() as usize),
                )
            }
            Values::Float64(x) => {
                return by_value(
                    &mut self.datums,
                    &mut self.nulls,
                    rows,
                    nulls,
                    x.iter().map(|&x| x.to_bits() as usize),
                )
            }
            Values::Fixed { .. } | Values::Bytes(_) => {}
        }
        // by-reference values: lay out those of selected rows in the arena, then point at
        // them; the non-null values are numbered in row order
        self.nulls.extend((0..rows).map(|r| v.is_null(r)));
        let wanted = |r: usize| selected.is_none_or(|s| s.contains(r));
        let take: Vec<bool> = (0..rows).filter(|&r| !self.nulls[r]).map(wanted).collect();
        let mut offsets: Vec<usize> = Vec::new();
        match (&v.values, ty) {
            (Values::Fixed { width, data }, _) => {
                let items = data
                    .chunks_exact(*width as usize)
                    .zip(take.iter())
                    .map(|(d, &t)| t.then_some(d));
                lay_out(&mut self.arena, items, false, 0, &mut offsets)
            }
            (Values::Bytes(b), _) => {
                let strings = b.as_ref();
                let items = (0..strings.len()).map(|i| take[i].then(|| strings.get(i)));
                match ty {
                    ColumnType::CString => lay_out(&mut self.arena, items, false, 1, &mut offsets),
                    _ => lay_out(&mut self.arena, items, true, 0, &mut offsets),
                }
            }
            _ => unreachable!("by-value kinds returned above"),
        }
        let base = self.arena.as_ptr() as usize;
        let mut k = 0;
        for r in 0..rows {
            if self.nulls[r] {
                self.datums.push(pg_sys::Datum::from(0));
                continue;
            }
            self.datums.push(pg_sys::Datum::from(if take[k] {
                base + offsets[k]
            } else {
                0
            }));
            k += 1;
        }
        debug_assert!(rows <= MAX_ROWS);
    }
}

//! The read path shared by scans, index and TID fetches, ANALYZE and the inspection
//! functions: load a stripe's directory (checked against the catalog's checksum), then decode
//! vectors (each checked against its directory checksum) into Datums.

use std::rc::Rc;

use pg_columnar_codec::filter::Selection;
use pg_columnar_codec::stripe::{self, StripeDirectory};
use pg_columnar_codec::{
    unpack_row, unpack_vector, ColumnContext, SharedDictionary, SymbolTable, Unpacked, Vector,
    MAX_ROWS,
};
use pgrx::pg_sys;

use super::datum::{ColumnType, DatumVector};
use crate::storage::catalog::StripeRow;
use crate::storage::corrupt;
use crate::storage::pages::PageReader;

/// A stripe whose directory has been read and checked. What it has read is immutable and
/// shared (`Rc`), so a copy is cheap: the stripes kept for row fetches hand out copies
/// ([`kept`]).
#[derive(Clone)]
pub struct LoadedStripe {
    /// Unique among the stripes this process loads: names what was read with this load (a
    /// shared dictionary laid out as Datums, `datum::DictionaryKey`).
    pub serial: u64,
    pub row: StripeRow,
    pub dir: Rc<StripeDirectory>,
    /// Per column, its FSST table and shared dictionary once read.
    contexts: Vec<Option<Rc<(Option<SymbolTable>, Option<SharedDictionary>)>>>,
    /// A sorted stripe's row order once read ([`row_order`](Self::row_order)).
    order: Option<Rc<RowOrder>>,
    /// Stored bytes of the contexts read so far (for [`approx_bytes`](Self::approx_bytes)).
    context_bytes: usize,
}

/// Where the rows of a sorted stripe are (`pg_columnar.sort_key`): a row keeps the row
/// number (hence TID) it was given at insert time, its *insert offset* within the stripe,
/// while it is stored at another *position*.
pub struct RowOrder {
    /// Per insert offset, the stored position.
    position: Vec<u32>,
    /// Per stored position, the insert offset.
    offset: Vec<u32>,
}

impl RowOrder {
    pub fn offset_of(&self, position: u64) -> u64 {
        self.offset[position as usize] as u64
    }

    pub fn position_of(&self, offset: u64) -> u64 {
        self.position[offset as usize] as u64
    }

    /// Per insert offset, the stored position.
    pub fn positions(&self) -> &[u32] {
        &self.position
    }
}

fn stripe_error(pages: &PageReader, row: &StripeRow, what: impl std::fmt::Display) -> ! {
    corrupt(
        pages.rel(),
        format!(
            "stripe at row {} (block {}): {what}",
            row.first_row, row.first_block
        ),
    )
}

/// Reads the header and directory of the stripe `row` into `buf`, checked against the
/// catalog's length and checksum.
fn read_directory(pages: &mut PageReader, row: &StripeRow, buf: &mut Vec<u8>) {
    if row.prefix_length < stripe::HEADER_LEN as u64 || row.prefix_length > row.byte_length {
        stripe_error(
            pages,
            row,
            format!(
                "catalog gives a directory of {} bytes in {}",
                row.prefix_length, row.byte_length
            ),
        );
    }
    pages.read(row.first_block, 0, row.prefix_length as usize, buf);
    if xxhash_rust::xxh3::xxh3_64(buf) != row.prefix_checksum {
        stripe_error(pages, row, "directory checksum mismatch");
    }
}

/// What a loaded stripe is the load of: its storage and catalog row's place and directory.
/// A stripe's bytes never change once written, and its directory (whose checksum is part of
/// the key) holds a checksum of every vector and context, so two stripes with one key have
/// the same directory and contexts, whatever happened to the file in between.
#[derive(Clone, Copy, PartialEq, Eq)]
struct StripeKey {
    storage_id: u64,
    first_row: u64,
    row_count: u64,
    first_block: u32,
    byte_length: u64,
    prefix_length: u64,
    prefix_checksum: u64,
}

impl StripeKey {
    fn of(row: &StripeRow) -> StripeKey {
        StripeKey {
            storage_id: row.storage_id,
            first_row: row.first_row,
            row_count: row.row_count,
            first_block: row.first_block,
            byte_length: row.byte_length,
            prefix_length: row.prefix_length,
            prefix_checksum: row.prefix_checksum,
        }
    }
}

/// How much memory (as [`LoadedStripe::approx_bytes`] counts it) the kept stripes may hold
/// in one backend.
const KEPT_BYTES: usize = 16 << 20;

thread_local! {
    /// Stripes that scans loaded (every one a row fetch loads, the first few of a query
    /// engine scan: `scan::SCAN_KEEPS`), kept for later scans of this backend, most recently used last,
    /// one load per stripe: a point lookup per statement would otherwise read and parse a
    /// stripe directory and its dictionaries for every row (most of a lookup's time), and a
    /// query that reads a few stripes would parse their directories again each time.
    /// Bounded by [`KEPT_BYTES`].
    static KEPT: std::cell::RefCell<Kept<StripeKey, LoadedStripe>> = const { std::cell::RefCell::new(Kept::new(KEPT_BYTES)) };
    /// Scans' stripe loads so far (row fetches' and the others') that found their stripe
    /// kept, and that did not.
    static KEPT_HITS: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) };
}

/// What a backend keeps across scans, least recently used first, each entry with the bytes it
/// is counted as, within a bound: the stripes scans loaded ([`KEPT`]) and the column
/// dictionaries PgcolTopN asked for ([`KEPT_DICTIONARIES`]).
struct Kept<K, V> {
    entries: Vec<(K, V, usize)>,
    bytes: usize,
    limit: usize,
}

impl<K: PartialEq, V> Kept<K, V> {
    const fn new(limit: usize) -> Kept<K, V> {
        Kept {
            entries: Vec::new(),
            bytes: 0,
            limit,
        }
    }

    /// The entry of `key`, made the most recently used.
    fn get(&mut self, key: &K) -> Option<&V> {
        let i = self.entries.iter().position(|(k, _, _)| k == key)?;
        let entry = self.entries.remove(i);
        self.entries.push(entry);
        self.entries.last().map(|(_, v, _)| v)
    }

    /// The bytes the entry of `key` is counted as, if there is one.
    fn size_of(&self, key: &K) -> Option<usize> {
        self.entries
            .iter()
            .find(|(k, _, _)| k == key)
            .map(|(_, _, size)| *size)
    }

    /// Keeps `value` under `key` (replacing the entry there), forgetting the least recently
    /// used entries past the bound; nothing if it alone would take more than a quarter of it.
    fn insert(&mut self, key: K, value: V, size: usize) {
        if size > self.limit / 4 {
            return;
        }
        if let Some(i) = self.entries.iter().position(|(k, _, _)| *k == key) {
            self.bytes -= self.entries.remove(i).2;
        }
        while self.bytes + size > self.limit && !self.entries.is_empty() {
            self.bytes -= self.entries.remove(0).2;
        }
        self.bytes += size;
        self.entries.push((key, value, size));
    }
}

/// Adds one to the first of the pair of counters `counts` if `first`, else to the second
/// (a kept store's hits and misses, rows decoded alone and vectors decoded whole).
pub fn count_either(
    counts: &'static std::thread::LocalKey<std::cell::Cell<(u64, u64)>>,
    first: bool,
) {
    counts.with(|c| {
        let (a, b) = c.get();
        c.set(if first { (a + 1, b) } else { (a, b + 1) });
    });
}

/// What this backend keeps (`pgcol.kept_stripes`): stripes, their approximate bytes, and the
/// scans' stripe loads that found their stripe kept and that did not.
pub fn kept_stats() -> (usize, usize, u64, u64) {
    let (stripes, bytes) = KEPT.with_borrow(|k| (k.entries.len(), k.bytes));
    let (hits, misses) = KEPT_HITS.get();
    (stripes, bytes, hits, misses)
}

/// A copy of the kept load of the stripe of catalog row `row`, if there is one, with `row`
/// as its catalog row. A copy (sharing what was read), not the kept one: two scans of one
/// statement (an UPDATE's index scan and its fetch of each old row) read the same stripes at
/// once.
pub fn kept(row: &StripeRow) -> Option<LoadedStripe> {
    let found = KEPT
        .with_borrow_mut(|k| k.get(&StripeKey::of(row)).cloned())
        .map(|mut stripe| {
            stripe.row = row.clone();
            stripe
        });
    count_either(&KEPT_HITS, found.is_some());
    found
}

/// Keeps `stripe` for a later [`kept`] (unless a kept load of the same stripe has read as
/// much of it), forgetting the least recently used ones past [`KEPT_BYTES`].
pub fn keep(stripe: LoadedStripe) {
    let size = stripe.approx_bytes();
    let key = StripeKey::of(&stripe.row);
    KEPT.with_borrow_mut(|k| {
        // one load per stripe: the one that has read more of it (contexts, row order)
        if k.size_of(&key).is_none_or(|kept| kept < size) {
            k.insert(key, stripe, size);
        }
    });
}

/// Names a load of stripe data, unique in this process (see [`LoadedStripe::serial`]).
fn next_serial() -> u64 {
    static LOADS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    LOADS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// The shared dictionary of `column` of the stripe `row` (`None`: it has none, or the stripe
/// does not store the column), whether the column has NULLs in it, and a serial number that
/// names this reading of the dictionary. The directory is walked only as far as the column
/// (`stripe::outline_column`): this costs a small part of loading the stripe. What is found
/// is kept for the backend's later asks ([`KEPT_DICTIONARIES`]): PgcolTopN asks it of
/// every stripe of the table that it may leave out, on every run.
pub fn column_dictionary(
    pages: &mut PageReader,
    row: StripeRow,
    column: usize,
    buf: &mut Vec<u8>,
) -> ColumnDictionary {
    let key = (StripeKey::of(&row), column);
    let kept = KEPT_DICTIONARIES.with_borrow_mut(|k| k.get(&key).cloned());
    count_either(&DICTIONARY_HITS, kept.is_some());
    if let Some(found) = kept {
        return found;
    }
    let (found, stored) = read_column_dictionary(pages, row, column, buf);
    // (the stored size stands for the parsed one; an entry costs something without one)
    KEPT_DICTIONARIES.with_borrow_mut(|k| k.insert(key, found.clone(), 64 + 2 * stored));
    found
}

/// What [`column_dictionary`] finds.
pub(super) type ColumnDictionary = (Option<Rc<SharedDictionary>>, bool, u64);

/// How much memory (about twice the stored size of each) the kept column dictionaries may
/// take in one backend.
const KEPT_DICTIONARY_BYTES: usize = 4 << 20;

thread_local! {
    /// Column dictionaries [`column_dictionary`] read, by stripe and column, with the stored
    /// bytes they stand for, least recently used first. A stripe's bytes never change under
    /// its key (see [`StripeKey`]), so what is kept stays true.
    static KEPT_DICTIONARIES: std::cell::RefCell<Kept<(StripeKey, usize), ColumnDictionary>> = const { std::cell::RefCell::new(Kept::new(KEPT_DICTIONARY_BYTES)) };
    /// [`column_dictionary`]'s asks so far that found what they asked kept, and that did not.
    static DICTIONARY_HITS: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) };
}

/// The column dictionaries kept (`pgcol.kept_stripes`), and [`column_dictionary`]'s asks
/// that found theirs kept and that did not.
pub fn kept_dictionary_stats() -> (usize, u64, u64) {
    let (hits, misses) = DICTIONARY_HITS.get();
    (
        KEPT_DICTIONARIES.with_borrow(|k| k.entries.len()),
        hits,
        misses,
    )
}

/// [`column_dictionary`] read from the stripe, with the stored length of the dictionary.
fn read_column_dictionary(
    pages: &mut PageReader,
    row: StripeRow,
    column: usize,
    buf: &mut Vec<u8>,
) -> (ColumnDictionary, usize) {
    read_directory(pages, &row, buf);
    let outline = match stripe::outline_column(buf, column) {
        Ok(Some(o)) => o,
        Ok(None) => return ((None, true, next_serial()), 0),
        Err(e) => stripe_error(pages, &row, e),
    };
    let Some(entry) = outline.dictionary else {
        return ((None, outline.null_count > 0, next_serial()), 0);
    };
    if entry.offset + entry.length > row.byte_length as usize {
        stripe_error(
            pages,
            &row,
            format!(
                "column {} dictionary lies past the stripe's end",
                column + 1
            ),
        );
    }
    pages.read(row.first_block, entry.offset, entry.length, buf);
    if stripe::checksum32(buf) != entry.checksum {
        stripe_error(
            pages,
            &row,
            format!("column {} dictionary checksum mismatch", column + 1),
        );
    }
    let dict = SharedDictionary::deserialize(buf).unwrap_or_else(|err| {
        stripe_error(
            pages,
            &row,
            format!("column {} dictionary: {err}", column + 1),
        )
    });
    (
        (Some(Rc::new(dict)), outline.null_count > 0, next_serial()),
        entry.length,
    )
}

impl LoadedStripe {
    pub fn load(pages: &mut PageReader, row: StripeRow) -> LoadedStripe {
        // read into a buffer of its own, which the directory keeps
        let mut bytes = Vec::new();
        read_directory(pages, &row, &mut bytes);
        let dir = match StripeDirectory::parse_owned(bytes) {
            Ok(d) => d,
            Err(e) => stripe_error(pages, &row, e),
        };
        if dir.total_len as u64 != row.byte_length || dir.row_count as u64 != row.row_count {
            stripe_error(
                pages,
                &row,
                format!(
                    "directory describes {} rows in {} bytes, catalog says {} rows in {} bytes",
                    dir.row_count, dir.total_len, row.row_count, row.byte_length
                ),
            );
        }
        let contexts = vec![None; dir.columns.len()];
        LoadedStripe {
            serial: next_serial(),
            row,
            dir: Rc::new(dir),
            contexts,
            order: None,
            context_bytes: 0,
        }
    }

    /// The row order of a sorted stripe (`None`: its rows are stored in insert order), read
    /// and checked (a permutation of the stripe's rows) on first use.
    pub fn row_order(&mut self, pages: &mut PageReader, buf: &mut Vec<u8>) -> Option<&RowOrder> {
        let positions = self.dir.row_positions.as_ref()?;
        if self.order.is_none() {
            let rows = self.dir.row_count;
            let mut values = Vec::with_capacity(rows);
            for (v, e) in positions.vectors.iter().enumerate() {
                pages.read(self.row.first_block, e.offset, e.length, buf);
                if stripe::checksum32(buf) != e.checksum {
                    stripe_error(
                        pages,
                        &self.row,
                        format!("row position vector {v} checksum mismatch"),
                    );
                }
                stripe::decode_row_positions(buf, self.dir.vector_rows(v), rows, &mut values)
                    .unwrap_or_else(|err| {
                        stripe_error(pages, &self.row, format!("row position vector {v}: {err}"))
                    });
            }
            let Some((position, offset)) = positions.orders(values) else {
                stripe_error(pages, &self.row, "row positions name one row twice");
            };
            self.order = Some(Rc::new(RowOrder { position, offset }));
        }
        self.order.as_deref()
    }

    pub fn vector_count(&self) -> usize {
        self.dir.vector_count()
    }

    /// About the memory this load holds: the directory (`StripeDirectory::approx_bytes`),
    /// the contexts read (a few times their stored size) and a sorted stripe's row order.
    fn approx_bytes(&self) -> usize {
        self.dir.approx_bytes()
            + 4 * self.context_bytes
            + self.order.as_ref().map_or(0, |o| 8 * o.position.len())
    }

    /// Reads and checks one item of a column context (FSST table or dictionary).
    fn read_context_item(
        &mut self,
        pages: &mut PageReader,
        entry: stripe::ContextEntry,
        column: usize,
        what: &str,
        buf: &mut Vec<u8>,
    ) {
        self.context_bytes += entry.length;
        pages.read(self.row.first_block, entry.offset, entry.length, buf);
        if stripe::checksum32(buf) != entry.checksum {
            stripe_error(
                pages,
                &self.row,
                format!("column {} {what} checksum mismatch", column + 1),
            );
        }
    }

    fn context(
        &mut self,
        pages: &mut PageReader,
        column: usize,
        buf: &mut Vec<u8>,
    ) -> ColumnContext<'_> {
        self.read_context(pages, column, buf);
        self.loaded_context(column)
    }

    /// Reads the context of `column` (its FSST table and shared dictionary), if not read yet;
    /// [`loaded_context`](Self::loaded_context) then gives it.
    pub fn read_context(&mut self, pages: &mut PageReader, column: usize, buf: &mut Vec<u8>) {
        if self.contexts[column].is_none() {
            let (fsst, dictionary) = (
                self.dir.columns[column].fsst,
                self.dir.columns[column].dictionary,
            );
            let fsst = fsst.map(|e| {
                self.read_context_item(pages, e, column, "FSST table", buf);
                SymbolTable::deserialize(buf).unwrap_or_else(|err| {
                    stripe_error(
                        pages,
                        &self.row,
                        format!("column {} FSST table: {err}", column + 1),
                    )
                })
            });
            let dict = dictionary.map(|e| {
                self.read_context_item(pages, e, column, "dictionary", buf);
                SharedDictionary::deserialize(buf).unwrap_or_else(|err| {
                    stripe_error(
                        pages,
                        &self.row,
                        format!("column {} dictionary: {err}", column + 1),
                    )
                })
            });
            self.contexts[column] = Some(Rc::new((fsst, dict)));
        }
    }

    /// The context of `column` that [`unpack`](Self::unpack) read (none before): what an
    /// unpacked vector of it is materialized and filtered with.
    pub fn loaded_context(&self, column: usize) -> ColumnContext<'_> {
        match self.contexts[column].as_deref() {
            Some((f, d)) => ColumnContext {
                fsst: f.as_ref(),
                dictionary: d.as_ref(),
                stride: None,
            },
            None => ColumnContext::default(),
        }
    }

    /// Reads vector `v` of `column` (0-based) up to its unpacked form, checking checksum,
    /// kind and row count.
    pub fn unpack(
        &mut self,
        pages: &mut PageReader,
        column: usize,
        v: usize,
        expected: ColumnType,
        buf: &mut Vec<u8>,
    ) -> Unpacked {
        self.unpack_with(pages, column, v, expected, buf, true, |bytes, ctx| {
            unpack_vector(bytes, ctx).map(|u| (u.rows, u))
        })
    }

    /// [`unpack`](Self::unpack) of row `r` of the vector alone (`codec::unpack_row`): an
    /// [`Unpacked`] of one row. The vector's checksum, kind and row count are checked as
    /// there.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn unpack_row(
        &mut self,
        pages: &mut PageReader,
        column: usize,
        v: usize,
        r: usize,
        expected: ColumnType,
        buf: &mut Vec<u8>,
        scratch: &mut Vec<i64>,
    ) -> Unpacked {
        self.unpack_with(pages, column, v, expected, buf, false, |bytes, ctx| {
            unpack_row(bytes, ctx, r, scratch)
        })
    }

    /// Reads vector `v` of `column`, checks its checksum, and unpacks it with `read`, which
    /// also gives the row count its header states; checks that and the kind. `whole`: the
    /// whole vector is wanted (a scan's), read through the column's kept page.
    #[allow(clippy::too_many_arguments)]
    fn unpack_with(
        &mut self,
        pages: &mut PageReader,
        column: usize,
        v: usize,
        expected: ColumnType,
        buf: &mut Vec<u8>,
        whole: bool,
        read: impl FnOnce(
            &[u8],
            &ColumnContext<'_>,
        ) -> pg_columnar_codec::DecodeResult<(usize, Unpacked)>,
    ) -> Unpacked {
        let entry = self.dir.vector(column, v);
        let row = self.row.clone();
        let rows = self.dir.vector_rows(v);
        let mut ctx_buf = Vec::new();
        let ctx = self.context(pages, column, &mut ctx_buf);
        let bytes = if whole {
            pages.bytes(row.first_block, entry.offset, entry.length, buf, column)
        } else {
            // a row alone: its page is seldom read again, so its vector is copied alone
            pages.read(row.first_block, entry.offset, entry.length, buf);
            buf
        };
        let read = (stripe::checksum32(bytes) == entry.checksum).then(|| read(bytes, &ctx));
        let Some(read) = read else {
            stripe_error(
                pages,
                &row,
                format!("column {} vector {v} checksum mismatch", column + 1),
            );
        };
        let (stored_rows, vector) = read.unwrap_or_else(|e| {
            stripe_error(
                pages,
                &row,
                format!("column {} vector {v}: {e}", column + 1),
            )
        });
        if stored_rows != rows {
            stripe_error(
                pages,
                &row,
                format!(
                    "column {} vector {v} has {stored_rows} rows, expected {rows}",
                    column + 1
                ),
            );
        }
        if let (Some(kind), Some((stored, width))) = (expected.kind(), vector.value_kind(&ctx)) {
            if stored != kind {
                stripe_error(
                    pages,
                    &row,
                    format!(
                        "column {} vector {v} holds {stored:?} values, the column needs {kind:?}",
                        column + 1
                    ),
                );
            }
            // a fixed-width vector's width must be the column's: the Datums made from it are
            // read by PostgreSQL as `attlen` bytes each
            if let ColumnType::Fixed(expected) = expected {
                if width != expected {
                    stripe_error(pages, &row, format!("column {} vector {v} holds values of {width} bytes, the column's are {expected}", column + 1));
                }
            }
        }
        vector
    }

    /// [`unpack`](Self::unpack), then the values.
    pub fn decode(
        &mut self,
        pages: &mut PageReader,
        column: usize,
        v: usize,
        expected: ColumnType,
        buf: &mut Vec<u8>,
    ) -> Vector {
        let u = self.unpack(pages, column, v, expected, buf);
        u.materialize(&self.loaded_context(column))
    }
}

/// Which rows of which vector a [`DecodedVector`] holds: stripe (by first row), vector, and
/// the selection whose rows are laid out as Datums, by the id its scan gave it (`None`: all
/// rows).
pub(super) type VectorKey = (u64, usize, Option<u64>);

/// A selection of a vector's rows and the id that names it in a [`VectorKey`].
pub type Selected<'a> = Option<(u64, &'a Selection)>;

/// Decoded rows of one vector of a stripe, all columns, as Datums.
pub struct DecodedVector {
    /// Stripe (by first row), vector index and rows laid out (`None`: all) this holds.
    pub key: Option<VectorKey>,
    /// Set when this holds only that row of the vector `key` names, at index 0
    /// ([`decode_row`](Self::decode_row)).
    single: Option<usize>,
    pub columns: Vec<DatumVector>,
    /// How many leading columns the stripe stores; the relation's later ones (added since)
    /// are filled by the slot's missing-attribute defaults.
    pub stored_columns: usize,
    /// The columns to decode (a custom scan's projection); `None`: all. The others are
    /// left undecoded and stored as NULL: nothing above the scan reads them.
    wanted: Option<Vec<bool>>,
    /// The wanted columns, ascending (`None`: all).
    wanted_list: Option<Vec<usize>>,
    /// Vectors decoded so far, per column.
    pub decoded_count: Vec<u64>,
    /// The vector [`prefill`](Self::prefill) has begun, and which of its columns it filled.
    pending: Option<VectorKey>,
    filled: Vec<bool>,
}

impl DecodedVector {
    pub fn new(natts: usize) -> DecodedVector {
        DecodedVector {
            key: None,
            single: None,
            columns: (0..natts).map(|_| DatumVector::default()).collect(),
            stored_columns: 0,
            wanted: None,
            wanted_list: None,
            decoded_count: vec![0; natts],
            pending: None,
            filled: vec![false; natts],
        }
    }

    /// Makes vector `v` of `stripe` (its `selected` rows) the one held, with the columns of
    /// `decoded` filled from those decoded vectors and the others left to
    /// [`decode`](Self::decode).
    pub fn prefill(
        &mut self,
        stripe: &LoadedStripe,
        v: usize,
        types: &[ColumnType],
        decoded: Vec<(usize, Unpacked)>,
        selected: Selected<'_>,
    ) {
        let key = (stripe.row.first_row, v, selected.map(|s| s.0));
        if self.key != Some(key) || self.single.is_some() {
            self.key = None;
            self.single = None;
            self.pending = Some(key);
            self.filled.iter_mut().for_each(|f| *f = false);
        }
        if self.pending != Some(key) {
            return;
        }
        for (c, vector) in decoded {
            if self.is_wanted(c) && !self.filled[c] {
                self.columns[c].fill_unpacked(
                    types[c],
                    vector,
                    &stripe.loaded_context(c),
                    (stripe.serial, c),
                    selected.map(|s| s.1),
                );
                self.filled[c] = true;
            }
        }
    }

    /// Decodes vector `v` of `stripe`, every wanted column of `types` (dropped ones become
    /// NULL) that [`prefill`](Self::prefill) did not fill, laying out as Datums only the
    /// `selected` rows (all if `None`): only those may be stored then.
    pub fn decode(
        &mut self,
        pages: &mut PageReader,
        stripe: &mut LoadedStripe,
        v: usize,
        types: &[ColumnType],
        buf: &mut Vec<u8>,
        selected: Selected<'_>,
    ) {
        let key = (stripe.row.first_row, v, selected.map(|s| s.0));
        if self.key == Some(key) && self.single.is_none() {
            return;
        }
        if self.pending != Some(key) {
            self.filled.iter_mut().for_each(|f| *f = false);
        }
        self.pending = None;
        self.key = None;
        let rows = stripe.dir.vector_rows(v);
        self.each_column(pages, stripe, types, |out, stripe, pages, c, ty| match ty {
            ColumnType::Dropped => {
                out.set_all_null(rows);
                false
            }
            _ => {
                let vector = stripe.unpack(pages, c, v, ty, buf);
                out.fill_unpacked(
                    ty,
                    vector,
                    &stripe.loaded_context(c),
                    (stripe.serial, c),
                    selected.map(|s| s.1),
                );
                true
            }
        });
        self.filled.iter_mut().for_each(|f| *f = false);
        self.key = Some(key);
        self.single = None;
        debug_assert!(rows <= MAX_ROWS);
    }

    /// What this holds of vector `v` of the stripe whose first row is `first_row`: `None`
    /// nothing, `Some(None)` every row, `Some(Some(r))` row `r` alone.
    pub fn holds(&self, first_row: u64, v: usize) -> Option<Option<usize>> {
        (self.key == Some((first_row, v, None))).then_some(self.single)
    }

    /// Decodes row `r` of vector `v` of `stripe` alone, every wanted column of `types` as in
    /// [`decode`](Self::decode): what a fetch of one row by its number needs. A vector held
    /// whole already has it.
    pub fn decode_row(
        &mut self,
        pages: &mut PageReader,
        stripe: &mut LoadedStripe,
        v: usize,
        r: usize,
        types: &[ColumnType],
        buf: &mut Vec<u8>,
        scratch: &mut Vec<i64>,
    ) {
        let key = (stripe.row.first_row, v, None);
        if self.key == Some(key) && self.single.is_none_or(|s| s == r) {
            return;
        }
        self.pending = None;
        self.key = None;
        self.filled.iter_mut().for_each(|f| *f = false);
        self.each_column(pages, stripe, types, |out, stripe, pages, c, ty| {
            match ty {
                ColumnType::Dropped => out.set_all_null(1),
                _ => {
                    let value = stripe.unpack_row(pages, c, v, r, ty, buf, scratch);
                    out.fill_unpacked(
                        ty,
                        value,
                        &stripe.loaded_context(c),
                        (stripe.serial, c),
                        None,
                    );
                }
            }
            false
        });
        self.key = Some(key);
        self.single = Some(r);
    }

    /// Runs `fill` on every wanted column the stripe stores that [`prefill`](Self::prefill)
    /// did not fill (with its output buffer, the stripe, the page reader, its index and its
    /// type; it returns whether it decoded a whole vector, counted in `decoded_count`), after
    /// checking that the stripe stores no more columns than `types` has;
    /// records how many columns it stores (the later ones come from the slot's
    /// missing-attribute defaults in [`store`](Self::store)).
    fn each_column(
        &mut self,
        pages: &mut PageReader,
        stripe: &mut LoadedStripe,
        types: &[ColumnType],
        mut fill: impl FnMut(
            &mut DatumVector,
            &mut LoadedStripe,
            &mut PageReader,
            usize,
            ColumnType,
        ) -> bool,
    ) {
        let stored = stripe.dir.columns.len().min(types.len());
        if stripe.dir.columns.len() > types.len() {
            stripe_error(
                pages,
                &stripe.row,
                format!(
                    "{} columns stored, the relation has {}",
                    stripe.dir.columns.len(),
                    types.len()
                ),
            );
        }
        for (c, ty) in types.iter().enumerate().take(stored) {
            if self.is_wanted(c)
                && !self.filled[c]
                && fill(&mut self.columns[c], stripe, pages, c, *ty)
            {
                self.decoded_count[c] += 1;
            }
        }
        self.stored_columns = stored;
    }

    /// Decodes only the columns marked in `wanted` (`None`: all).
    pub fn set_wanted(&mut self, wanted: Option<Vec<bool>>) {
        self.wanted_list = wanted
            .as_ref()
            .map(|w| (0..w.len()).filter(|&c| w[c]).collect());
        self.wanted = wanted;
    }

    fn is_wanted(&self, c: usize) -> bool {
        self.wanted.as_ref().is_none_or(|w| w[c])
    }

    /// Puts row `r` of this vector into `slot` as a virtual tuple with TID `row_number`, from
    /// the stripe `stripe` (its catalog row gives the system columns).
    ///
    /// # Safety
    /// `slot` must be a valid virtual slot for the relation's descriptor, which has as many
    /// attributes as this has columns (the descriptor it was decoded for).
    pub unsafe fn store(
        &self,
        r: usize,
        slot: *mut pg_sys::TupleTableSlot,
        row_number: u64,
        relid: pg_sys::Oid,
        stripe: &StripeRow,
    ) {
        debug_assert!(
            self.single.is_none_or(|s| s == r),
            "row {r} stored from a decoded row {:?}",
            self.single
        );
        let r = if self.single.is_some() { 0 } else { r };
        // SAFETY: `slot` is valid (this function's contract)
        unsafe { super::slot::clear_for_row(slot) };
        let natts = self.columns.len();
        // SAFETY: the slot's descriptor has `natts` attributes (this function's contract), so
        // its value and null arrays hold `natts` entries; nothing else reaches them meanwhile
        let (values, nulls) = unsafe {
            (
                std::slice::from_raw_parts_mut((*slot).tts_values, natts),
                std::slice::from_raw_parts_mut((*slot).tts_isnull, natts),
            )
        };
        match &self.wanted_list {
            None => {
                for c in 0..self.stored_columns {
                    values[c] = self.columns[c].datums[r];
                    nulls[c] = self.columns[c].nulls[r];
                }
            }
            Some(list) => {
                // the columns nothing reads are NULL
                nulls[..self.stored_columns].fill(true);
                for &c in list.iter().take_while(|&&c| c < self.stored_columns) {
                    values[c] = self.columns[c].datums[r];
                    nulls[c] = self.columns[c].nulls[r];
                }
            }
        }
        if self.stored_columns < natts {
            // SAFETY: `slot` is valid and its descriptor has `natts` attributes (this
            // function's contract)
            unsafe { pg_sys::slot_getmissingattrs(slot, self.stored_columns as i32, natts as i32) };
        }
        // SAFETY: `slot` is valid (this function's contract), cleared above, and has every
        // value set: the stored columns above (NULL where unwanted), the rest missing ones
        unsafe {
            super::slot::store_virtual(slot);
            (*slot).tts_tid = crate::storage::tid::to_tid(row_number);
            (*slot).tts_tableOid = relid;
        }
        super::slot::set_origin(slot, stripe.xmin, stripe.cmin);
    }
}

/// Finds the stripe holding `row_number` in `stripes` (sorted by first row); `None` also
/// for a row number in a stripe's range that holds no row (`StripeRow::absent`).
pub fn stripe_index_of(stripes: &[StripeRow], row_number: u64) -> Option<usize> {
    let i = stripe_index_of_position(stripes, row_number)?;
    stripes[i].holds(row_number).then_some(i)
}

/// Finds the stripe in `stripes` (sorted by first row) that stores position `position`,
/// counted as a scan counts stored rows (the stripe's first row plus the stored offset).
/// Unlike [`stripe_index_of`] it does not ask whether a row number is absent: in a sorted
/// stripe the row stored at offset `p` is not the row inserted at offset `p`, which may be
/// absent while the stored one is not.
pub fn stripe_index_of_position(stripes: &[StripeRow], position: u64) -> Option<usize> {
    let i = stripes
        .partition_point(|s| s.first_row <= position)
        .checked_sub(1)?;
    (position - stripes[i].first_row < stripes[i].row_count).then_some(i)
}

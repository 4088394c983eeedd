//! The stripe image: how the encoded vectors of many columns are laid out together, with the
//! directory that locates each one. Pure bytes, no PostgreSQL: the storage layer cuts this
//! image into pages and keeps one catalog row per stripe.
//!
//! ```text
//! stripe    := header directory data
//! header    := "PGCS" format_version:u16 column_count:u16 row_count:u32 directory_len:u32
//! directory := column_count × ( fsst_len:u32 fsst_sum:u32 dict_len:u32 dict_sum:u32
//!                               vector_count × entry )
//! entry     := length:u32 encoding:u8 null_count:u16 checksum:u32 zone
//! zone      := 0                                   (no non-null value)
//!            | 1 min:i64 max:i64                   (integers, signed)
//!            | 2 min:f64 max:f64                   (floats, PostgreSQL order, bit patterns)
//!            | 3 flags:u8 min_len:u8 min max_len:u8 max   (bytes, bytewise; see below)
//! data      := column_count × ( fsst_table dictionary vector_0 … vector_n-1 )
//! ```
//!
//! All integers are little-endian. `vector_count` is `ceil(row_count / 1024)`; every vector
//! holds 1024 rows except the last. A vector's offset is not stored: it is the sum of the
//! lengths before it in the data section (each column's FSST table and dictionary first), so
//! the directory cannot disagree with itself. `encoding` is the codec's encoding id, or 255
//! for a vector without non-null values (which has no payload). Checksums are the low 32
//! bits of xxh3-64 of the bytes they cover; a context with length 0 is absent.
//!
//! Byte-string zone maps keep at most [`ZONE_BYTES`] bytes of each bound. A shortened
//! minimum is a prefix, so still a lower bound; a shortened maximum is not an upper bound,
//! which flag bit 0 records (`max_truncated`): a reader may only use it as "≥ this prefix".
//!
//! The whole stripe is described in docs/FORMAT.md ("Stripes").

use std::sync::OnceLock;

use xxhash_rust::xxh3::xxh3_64;

use crate::bits::ByteReader;
use crate::error::{DecodeError, DecodeResult};
use crate::vector::{count_nulls, BytesRef, Values, ValuesRef, MAX_ROWS};
use crate::zonemap::ZoneMap;
use crate::{
    encode_vector, fsst, ColumnContext, EncodeError, EncodeReport, Encoding, SharedDictionary,
    SymbolTable,
};

pub const MAGIC: [u8; 4] = *b"PGCS";
pub const HEADER_LEN: usize = 4 + 2 + 2 + 4 + 4;
/// Longest prefix of a byte-string bound kept in a zone map.
pub const ZONE_BYTES: usize = 32;
/// A stripe column gets a shared dictionary only if its non-null values number at least this
/// many times its distinct values.
pub const SHARED_DICTIONARY_MIN_USES: usize = 4;
/// Encoding byte of a vector that has no non-null values.
pub const NO_ENCODING: u8 = 255;

/// Low 32 bits of xxh3-64: the checksum of vectors and column contexts.
pub fn checksum32(bytes: &[u8]) -> u32 {
    xxh3_64(bytes) as u32
}

/// One column of a stripe to be written: all its rows.
#[derive(Debug, Clone, Copy)]
pub struct ColumnInput<'a> {
    /// LSB-first null bitmap over the stripe's rows (bit set = null); `None`: no nulls.
    pub nulls: Option<&'a [u8]>,
    /// The non-null values in row order.
    pub values: ValuesRef<'a>,
}

/// A zone map as stored: the bounds themselves, not indices into a vector.
#[derive(Debug, Clone, PartialEq)]
pub enum StoredZone {
    Empty,
    Int {
        min: i64,
        max: i64,
    },
    Float {
        min: f64,
        max: f64,
    },
    Bytes {
        min: ZoneBound,
        max: ZoneBound,
        max_truncated: bool,
    },
}

/// One bound of a byte-string zone map: at most [`ZONE_BYTES`] bytes, kept inline, since a
/// directory holds one pair per vector and column and a scan parses every directory it reads.
#[derive(Clone, Copy)]
pub struct ZoneBound {
    len: u8,
    bytes: [u8; ZONE_BYTES],
}

impl ZoneBound {
    /// `b` must be at most [`ZONE_BYTES`] long.
    pub fn new(b: &[u8]) -> ZoneBound {
        let mut bytes = [0u8; ZONE_BYTES];
        bytes[..b.len()].copy_from_slice(b);
        ZoneBound {
            len: b.len() as u8,
            bytes,
        }
    }
}

impl std::ops::Deref for ZoneBound {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }
}

impl PartialEq for ZoneBound {
    fn eq(&self, o: &ZoneBound) -> bool {
        **self == **o
    }
}

impl Eq for ZoneBound {}

impl PartialOrd for ZoneBound {
    fn partial_cmp(&self, o: &ZoneBound) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

impl Ord for ZoneBound {
    fn cmp(&self, o: &ZoneBound) -> std::cmp::Ordering {
        (**self).cmp(&**o)
    }
}

impl std::fmt::Debug for ZoneBound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

impl StoredZone {
    fn from_report(zone: &ZoneMap, values: &ValuesRef<'_>) -> StoredZone {
        let bytes_at = |i: usize| -> &[u8] {
            match values {
                ValuesRef::Bytes(b) => b.get(i),
                ValuesRef::Fixed { width, data } => {
                    &data[i * *width as usize..(i + 1) * *width as usize]
                }
                _ => unreachable!("byte zone map on a numeric vector"),
            }
        };
        match *zone {
            ZoneMap::Empty => StoredZone::Empty,
            ZoneMap::Int { min, max } => StoredZone::Int { min, max },
            ZoneMap::Float { min, max } => StoredZone::Float { min, max },
            ZoneMap::Bytes { min, max } => {
                let (min, max) = (bytes_at(min), bytes_at(max));
                StoredZone::Bytes {
                    min: ZoneBound::new(&min[..min.len().min(ZONE_BYTES)]),
                    max: ZoneBound::new(&max[..max.len().min(ZONE_BYTES)]),
                    max_truncated: max.len() > ZONE_BYTES,
                }
            }
        }
    }

    fn write(&self, out: &mut Vec<u8>) {
        match self {
            StoredZone::Empty => out.push(0),
            StoredZone::Int { min, max } => {
                out.push(1);
                out.extend_from_slice(&min.to_le_bytes());
                out.extend_from_slice(&max.to_le_bytes());
            }
            StoredZone::Float { min, max } => {
                out.push(2);
                out.extend_from_slice(&min.to_bits().to_le_bytes());
                out.extend_from_slice(&max.to_bits().to_le_bytes());
            }
            StoredZone::Bytes {
                min,
                max,
                max_truncated,
            } => {
                out.push(3);
                out.push(*max_truncated as u8);
                out.push(min.len() as u8);
                out.extend_from_slice(min);
                out.push(max.len() as u8);
                out.extend_from_slice(max);
            }
        }
    }

    /// Steps over a zone, refusing what [`read`](Self::read) refuses, without making it.
    fn check(r: &mut ByteReader<'_>) -> DecodeResult<()> {
        match r.u8("zone map tag")? {
            0 => {}
            1 | 2 => {
                r.take(16, "zone map bounds")?;
            }
            3 => {
                Self::max_truncated(r)?;
                for what in ["zone map minimum", "zone map maximum"] {
                    Self::bound(r, what)?;
                }
            }
            value => {
                return Err(DecodeError::UnknownTag {
                    what: "zone map",
                    value,
                })
            }
        }
        Ok(())
    }

    fn read(r: &mut ByteReader<'_>) -> DecodeResult<StoredZone> {
        Ok(match r.u8("zone map tag")? {
            0 => StoredZone::Empty,
            1 => StoredZone::Int {
                min: r.u64("zone map minimum")? as i64,
                max: r.u64("zone map maximum")? as i64,
            },
            2 => StoredZone::Float {
                min: f64::from_bits(r.u64("zone map minimum")?),
                max: f64::from_bits(r.u64("zone map maximum")?),
            },
            3 => {
                let max_truncated = Self::max_truncated(r)?;
                let min = ZoneBound::new(Self::bound(r, "zone map minimum")?);
                let max = ZoneBound::new(Self::bound(r, "zone map maximum")?);
                StoredZone::Bytes {
                    min,
                    max,
                    max_truncated,
                }
            }
            value => {
                return Err(DecodeError::UnknownTag {
                    what: "zone map",
                    value,
                })
            }
        })
    }

    /// A byte-string zone's flags: whether its maximum was shortened.
    fn max_truncated(r: &mut ByteReader<'_>) -> DecodeResult<bool> {
        match r.u8("zone map flags")? {
            flags @ (0 | 1) => Ok(flags == 1),
            flags => Err(DecodeError::OutOfRange {
                what: "zone map flags",
                value: flags as u64,
                limit: 1,
            }),
        }
    }

    /// One bound of a byte-string zone: its length, then at most [`ZONE_BYTES`] bytes.
    fn bound<'a>(r: &mut ByteReader<'a>, what: &'static str) -> DecodeResult<&'a [u8]> {
        let len = r.u8(what)? as usize;
        if len > ZONE_BYTES {
            return Err(DecodeError::OutOfRange {
                what,
                value: len as u64,
                limit: ZONE_BYTES as u64,
            });
        }
        r.take(len, what)
    }
}

/// Bytes of a column context entry in the directory (length, checksum).
const CONTEXT_ENTRY: usize = 4 + 4;
/// The fewest bytes of a vector entry in the directory (length, encoding, null count,
/// checksum, and a zone map's tag).
const MIN_VECTOR_ENTRY: usize = 4 + 1 + 2 + 4 + 1;

/// Where one encoded vector is and what it holds.
#[derive(Debug, Clone, PartialEq)]
pub struct VectorEntry {
    /// Byte offset from the start of the stripe (derived, not stored).
    pub offset: usize,
    pub length: usize,
    /// `None` for a vector without non-null values.
    pub encoding: Option<Encoding>,
    pub null_count: usize,
    pub checksum: u32,
    pub zone: StoredZone,
}

impl VectorEntry {
    /// The entry as the directory stores it (the offset is derived, not stored).
    fn write(&self, directory: &mut Vec<u8>) {
        directory.extend_from_slice(&(self.length as u32).to_le_bytes());
        directory.push(self.encoding.map_or(NO_ENCODING, |x| x as u8));
        directory.extend_from_slice(&(self.null_count as u16).to_le_bytes());
        directory.extend_from_slice(&self.checksum.to_le_bytes());
        self.zone.write(directory);
    }

    /// Reads an entry at `offset` of a vector of `rows` rows.
    fn read(r: &mut ByteReader<'_>, offset: usize, rows: usize) -> DecodeResult<VectorEntry> {
        let (length, encoding, null_count) = Self::head(r, rows)?;
        let checksum = r.u32("vector checksum")?;
        let zone = StoredZone::read(r)?;
        Ok(VectorEntry {
            offset,
            length,
            encoding,
            null_count,
            checksum,
            zone,
        })
    }

    /// Steps over an entry of a vector of `rows` rows, refusing what [`read`](Self::read)
    /// refuses, without making it; returns the vector's length.
    fn check(r: &mut ByteReader<'_>, rows: usize) -> DecodeResult<usize> {
        let (length, _, _) = Self::head(r, rows)?;
        r.take(4, "vector checksum")?;
        StoredZone::check(r)?;
        Ok(length)
    }

    /// An entry's length, encoding and NULL count.
    fn head(r: &mut ByteReader<'_>, rows: usize) -> DecodeResult<(usize, Option<Encoding>, usize)> {
        let length = r.u32("vector length")? as usize;
        let encoding = match r.u8("vector encoding")? {
            NO_ENCODING => None,
            tag => Some(Encoding::from_tag(tag)?),
        };
        let null_count = r.u16("vector null count")? as usize;
        if null_count > rows {
            return Err(DecodeError::OutOfRange {
                what: "vector null count",
                value: null_count as u64,
                limit: rows as u64,
            });
        }
        Ok((length, encoding, null_count))
    }
}

/// What a sorted stripe's directory says of its order.
#[derive(Debug, Clone, PartialEq)]
pub struct RowPositions {
    /// The key the rows were sorted by: columns, 0-based.
    pub key: Vec<usize>,
    /// The int32 vectors of the row order, one per 1024 rows: in format 2 and later, per vector of
    /// stored rows, each row's insert offset; in format 1, per vector of rows in insert
    /// order, each row's stored position.
    pub vectors: Vec<VectorEntry>,
    /// Which of the two the vectors hold.
    pub holds: RowPositionValues,
}

/// What a sorted stripe's row-position vectors hold (see [`RowPositions::vectors`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowPositionValues {
    /// Format 2: the insert offset of each stored row. Rows that came one row period apart
    /// (a host's consecutive readings) lie next to each other once sorted, so these step by
    /// the period inside a host's run and pack to almost nothing.
    InsertOffsets,
    /// Format 1: the stored position of each row in insert order.
    StoredPositions,
}

impl RowPositions {
    /// From the values of all the vectors, in order: the stored position of each insert
    /// offset, and the insert offset of each stored row (`None` if the values are not a
    /// permutation).
    pub fn orders(&self, values: Vec<u32>) -> Option<(Vec<u32>, Vec<u32>)> {
        let inverse = crate::sort::invert(&values)?;
        Some(match self.holds {
            RowPositionValues::InsertOffsets => (inverse, values),
            RowPositionValues::StoredPositions => (values, inverse),
        })
    }
}

/// A column context (FSST table or shared dictionary) inside a stripe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextEntry {
    pub offset: usize,
    pub length: usize,
    pub checksum: u32,
}

/// One column of a parsed directory: its contexts, and where its vector entries lie. The
/// entries themselves are made from the directory's bytes when asked for
/// ([`StripeDirectory::vector`], [`StripeDirectory::vectors`]): a fetch of one row wants one
/// entry per column, not a stripe's thousands, each with its zone map.
#[derive(Debug, Clone)]
pub struct ColumnDirectory {
    pub fsst: Option<ContextEntry>,
    pub dictionary: Option<ContextEntry>,
    /// Per vector, where its entry starts in the directory and where its bytes start in the
    /// stripe.
    entries: Vec<EntryAt>,
    /// Every vector's entry, once [`StripeDirectory::vectors`] made them.
    parsed: OnceLock<Vec<VectorEntry>>,
}

#[derive(Debug, Clone, Copy)]
struct EntryAt {
    /// Position of the entry in the parsed bytes (header, then directory).
    at: u32,
    /// Offset of the vector's bytes from the start of the stripe.
    offset: usize,
}

/// A parsed header and directory.
#[derive(Debug, Clone)]
pub struct StripeDirectory {
    pub row_count: usize,
    pub columns: Vec<ColumnDirectory>,
    /// The header and directory as parsed, every entry in them checked by
    /// [`parse`](Self::parse).
    bytes: Vec<u8>,
    /// A sorted stripe's key and row positions. `None`: the rows are stored in insert
    /// order.
    pub row_positions: Option<RowPositions>,
    /// Bytes of header plus directory: where the data section starts.
    pub data_start: usize,
    /// Total stripe length the directory describes.
    pub total_len: usize,
}

impl StripeDirectory {
    pub fn vector_count(&self) -> usize {
        self.row_count.div_ceil(MAX_ROWS)
    }

    /// Rows in vector `v`.
    pub fn vector_rows(&self, v: usize) -> usize {
        (self.row_count - v * MAX_ROWS).min(MAX_ROWS)
    }

    /// Reads the header (the first [`HEADER_LEN`] bytes) and returns the length of header
    /// plus directory, so a caller can fetch exactly that much before [`parse`].
    pub fn prefix_len(header: &[u8]) -> DecodeResult<usize> {
        let mut r = ByteReader::new(header);
        let (_, _, _, directory_len) = read_header(&mut r)?;
        Ok(HEADER_LEN + directory_len)
    }

    /// Parses header and directory from `bytes` (at least [`prefix_len`] bytes; the data
    /// section need not be present). Checks every length against the others, not checksums
    /// of the data (that is the reader's job, per vector).
    pub fn parse(bytes: &[u8]) -> DecodeResult<StripeDirectory> {
        let prefix = Self::prefix_len(bytes)?.min(bytes.len());
        Self::parse_owned(bytes[..prefix].to_vec())
    }

    /// [`parse`](Self::parse), keeping `bytes` (header and directory, no more) for the
    /// entries it makes later.
    pub fn parse_owned(bytes: Vec<u8>) -> DecodeResult<StripeDirectory> {
        let (columns, row_count, row_positions, data_start, total_len) = Self::parse_parts(&bytes)?;
        Ok(StripeDirectory {
            row_count,
            columns,
            bytes,
            row_positions,
            data_start,
            total_len,
        })
    }

    #[allow(clippy::type_complexity)]
    fn parse_parts(
        bytes: &[u8],
    ) -> DecodeResult<(
        Vec<ColumnDirectory>,
        usize,
        Option<RowPositions>,
        usize,
        usize,
    )> {
        let mut r = ByteReader::new(bytes);
        let (column_count, row_count, version, directory_len) = read_header(&mut r)?;
        let directory = r.take(directory_len, "stripe directory")?;
        let mut r = ByteReader::new(directory);
        let vector_count = row_count.div_ceil(MAX_ROWS);
        // every column takes at least two context entries and every vector entry at least
        // MIN_VECTOR_ENTRY bytes: counts the directory cannot hold are refused before anything
        // is sized from them
        let needed = (column_count as u128)
            * (2 * CONTEXT_ENTRY as u128 + vector_count as u128 * MIN_VECTOR_ENTRY as u128);
        if needed > directory_len as u128 {
            return Err(DecodeError::Inconsistent {
                what: "stripe directory (shorter than its header's column and row counts need)",
            });
        }
        let data_start = HEADER_LEN + directory_len;
        let mut offset = data_start;
        let mut columns = Vec::with_capacity(column_count);
        for _ in 0..column_count {
            let mut context = |offset: &mut usize| -> DecodeResult<Option<ContextEntry>> {
                let length = r.u32("context length")? as usize;
                let checksum = r.u32("context checksum")?;
                if length == 0 && checksum != 0 {
                    return Err(DecodeError::Inconsistent {
                        what: "checksum of an absent column context",
                    });
                }
                let entry = (length > 0).then_some(ContextEntry {
                    offset: *offset,
                    length,
                    checksum,
                });
                *offset += length;
                Ok(entry)
            };
            let fsst = context(&mut offset)?;
            let dictionary = context(&mut offset)?;
            let mut entries = Vec::with_capacity(vector_count);
            for v in 0..vector_count {
                // checked whole, so that a bad entry is refused here; kept as a position only
                let at = (HEADER_LEN + r.position()) as u32;
                let length = VectorEntry::check(&mut r, (row_count - v * MAX_ROWS).min(MAX_ROWS))?;
                entries.push(EntryAt { at, offset });
                offset += length;
            }
            columns.push(ColumnDirectory {
                fsst,
                dictionary,
                entries,
                parsed: OnceLock::new(),
            });
        }
        // a sorted stripe's key and row positions follow the columns
        let row_positions = if r.remaining() > 0 {
            let key_len = r.u8("sort key length")? as usize;
            let mut key = Vec::with_capacity(key_len);
            for _ in 0..key_len {
                let c = r.u16("sort key column")? as usize;
                if c >= column_count || key.contains(&c) {
                    return Err(DecodeError::Inconsistent {
                        what: "sort key column (past the columns, or named twice)",
                    });
                }
                key.push(c);
            }
            if key.is_empty() {
                return Err(DecodeError::Inconsistent {
                    what: "sort key without a column",
                });
            }
            let mut vectors = Vec::with_capacity(vector_count);
            for v in 0..vector_count {
                let e =
                    VectorEntry::read(&mut r, offset, (row_count - v * MAX_ROWS).min(MAX_ROWS))?;
                if e.null_count != 0 || e.encoding.is_none() {
                    return Err(DecodeError::Inconsistent {
                        what: "row position vector with NULLs",
                    });
                }
                offset += e.length;
                vectors.push(e);
            }
            let holds = if version >= 2 {
                RowPositionValues::InsertOffsets
            } else {
                RowPositionValues::StoredPositions
            };
            Some(RowPositions {
                key,
                vectors,
                holds,
            })
        } else {
            None
        };
        r.finish()?;
        Ok((columns, row_count, row_positions, data_start, offset))
    }

    /// The entry of vector `v` of column `c`, made from the directory's bytes (unless
    /// [`vectors`](Self::vectors) made them all already).
    pub fn vector(&self, c: usize, v: usize) -> VectorEntry {
        match self.columns[c].parsed.get() {
            Some(parsed) => parsed[v].clone(),
            None => self.read_entry(c, v),
        }
    }

    /// The entries of every vector of column `c`, made on the first ask and kept: for a
    /// reader that looks at many of a column's zone maps.
    pub fn vectors(&self, c: usize) -> &[VectorEntry] {
        self.columns[c].parsed.get_or_init(|| {
            (0..self.vector_count())
                .map(|v| self.read_entry(c, v))
                .collect()
        })
    }

    /// [`vectors`](Self::vectors) of column `c`, `None` for a column the stripe does not
    /// store (added to the table since).
    pub fn stored_vectors(&self, c: usize) -> Option<&[VectorEntry]> {
        (c < self.columns.len()).then(|| self.vectors(c))
    }

    fn read_entry(&self, c: usize, v: usize) -> VectorEntry {
        let EntryAt { at, offset } = self.columns[c].entries[v];
        let mut r = ByteReader::new(&self.bytes[at as usize..]);
        // bytes `parse` checked with `VectorEntry::check`, which refuses what `read` refuses
        VectorEntry::read(&mut r, offset, self.vector_rows(v))
            .expect("a vector entry parse() accepted")
    }

    /// About how many bytes of memory this takes (the directory's bytes, the entries'
    /// positions, and the entries made so far).
    pub fn approx_bytes(&self) -> usize {
        let entry = std::mem::size_of::<VectorEntry>();
        self.bytes.capacity()
            + self
                .columns
                .iter()
                .map(|c| {
                    c.entries.len() * std::mem::size_of::<EntryAt>()
                        + c.parsed.get().map_or(0, |p| p.len() * entry)
                })
                .sum::<usize>()
    }
}

/// Two directories are equal when they describe the same stripe the same way (whichever
/// entries each has made so far).
impl PartialEq for StripeDirectory {
    fn eq(&self, o: &StripeDirectory) -> bool {
        self.row_count == o.row_count
            && self.data_start == o.data_start
            && self.total_len == o.total_len
            && self.row_positions == o.row_positions
            && self.columns.len() == o.columns.len()
            && (0..self.columns.len()).all(|c| {
                let (a, b) = (&self.columns[c], &o.columns[c]);
                a.fsst == b.fsst && a.dictionary == b.dictionary && self.vectors(c) == o.vectors(c)
            })
    }
}

/// What a directory says of one column's contexts and NULLs, found by
/// [`outline_column`] without parsing the other columns' entries.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ColumnOutline {
    pub fsst: Option<ContextEntry>,
    pub dictionary: Option<ContextEntry>,
    pub null_count: usize,
}

/// The outline of column `column` (0-based) of the directory in `bytes` (as for
/// [`StripeDirectory::parse`]), `None` if the stripe has fewer columns. It walks the entries
/// before the column's only as far as their lengths, to find where its contexts lie: a
/// reader that wants one column's shared dictionary then need not parse every vector's
/// entry. The entries walked are checked as far as their lengths and zone forms; what
/// [`StripeDirectory::parse`] refuses beyond that (an unknown encoding, a NULL count above
/// the rows) this may accept, and the context it locates is checked by its checksum.
pub fn outline_column(bytes: &[u8], column: usize) -> DecodeResult<Option<ColumnOutline>> {
    let mut r = ByteReader::new(bytes);
    let (column_count, row_count, _, directory_len) = read_header(&mut r)?;
    if column >= column_count {
        return Ok(None);
    }
    let mut r = ByteReader::new(r.take(directory_len, "stripe directory")?);
    let vector_count = row_count.div_ceil(MAX_ROWS);
    let mut offset = HEADER_LEN + directory_len;
    for c in 0..=column {
        let mut context = |offset: &mut usize| -> DecodeResult<Option<ContextEntry>> {
            let length = r.u32("context length")? as usize;
            let checksum = r.u32("context checksum")?;
            let entry = (length > 0).then_some(ContextEntry {
                offset: *offset,
                length,
                checksum,
            });
            *offset += length;
            Ok(entry)
        };
        let fsst = context(&mut offset)?;
        let dictionary = context(&mut offset)?;
        let mut null_count = 0;
        for _ in 0..vector_count {
            offset += r.u32("vector length")? as usize;
            r.take(1, "vector encoding")?;
            null_count += r.u16("vector null count")? as usize;
            r.take(4, "vector checksum")?;
            StoredZone::check(&mut r)?;
        }
        if c == column {
            return Ok(Some(ColumnOutline {
                fsst,
                dictionary,
                null_count,
            }));
        }
    }
    unreachable!("the loop returns at the column")
}

/// A stripe's zone summary: per column, its NULLs and the union of its vectors' zone maps.
/// The storage keeps it in the stripe's catalog row, so a scan can rule a stripe out
/// without reading its directory.
///
/// ```text
/// summary := column_count:u16 × ( null_count:u32 known:u8 [zone] )
/// ```
///
/// `known` is 0 when the vectors' zones cannot be joined (they are of different forms, which
/// the writer never produces), and then no zone follows. A byte-string union keeps the
/// smallest minimum and the largest maximum, flagged `max_truncated` if any vector's was:
/// every value `v` of the stripe then satisfies `min <= v` and `prefix(v) <= max` (whole
/// maxima bound their values, and a prefix is never greater than its string).
#[derive(Debug, Clone, PartialEq)]
pub struct StripeSummary {
    pub columns: Vec<ColumnSummary>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ColumnSummary {
    pub null_count: u32,
    pub zone: Option<StoredZone>,
}

/// PostgreSQL's float order: NaN above everything, equal to itself.
fn float_less(a: f64, b: f64) -> bool {
    !a.is_nan() && (b.is_nan() || a < b)
}

/// The union of two stored zones, `None` if they cannot be joined.
fn join_zones(a: &StoredZone, b: &StoredZone) -> Option<StoredZone> {
    Some(match (a, b) {
        (StoredZone::Empty, z) | (z, StoredZone::Empty) => z.clone(),
        (StoredZone::Int { min: a0, max: a1 }, StoredZone::Int { min: b0, max: b1 }) => {
            StoredZone::Int {
                min: *a0.min(b0),
                max: *a1.max(b1),
            }
        }
        (StoredZone::Float { min: a0, max: a1 }, StoredZone::Float { min: b0, max: b1 }) => {
            StoredZone::Float {
                min: if float_less(*b0, *a0) { *b0 } else { *a0 },
                max: if float_less(*a1, *b1) { *b1 } else { *a1 },
            }
        }
        (
            StoredZone::Bytes {
                min: a0,
                max: a1,
                max_truncated: at,
            },
            StoredZone::Bytes {
                min: b0,
                max: b1,
                max_truncated: bt,
            },
        ) => StoredZone::Bytes {
            min: *a0.min(b0),
            max: *a1.max(b1),
            max_truncated: *at || *bt,
        },
        _ => return None,
    })
}

impl StripeSummary {
    /// The summary of a stripe, from its directory.
    pub fn of(dir: &StripeDirectory) -> StripeSummary {
        let columns = (0..dir.columns.len())
            .map(|c| {
                let vectors = dir.vectors(c);
                let null_count = vectors.iter().map(|v| v.null_count as u32).sum();
                let zone = vectors
                    .iter()
                    .try_fold(StoredZone::Empty, |acc, v| join_zones(&acc, &v.zone));
                ColumnSummary { null_count, zone }
            })
            .collect();
        StripeSummary { columns }
    }

    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.columns.len() as u16).to_le_bytes());
        for c in &self.columns {
            out.extend_from_slice(&c.null_count.to_le_bytes());
            match &c.zone {
                None => out.push(0),
                Some(z) => {
                    out.push(1);
                    z.write(out);
                }
            }
        }
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write(&mut out);
        out
    }

    pub fn parse(bytes: &[u8]) -> DecodeResult<StripeSummary> {
        let mut r = ByteReader::new(bytes);
        let n = r.u16("summary column count")? as usize;
        // every column takes at least 5 bytes: a count the bytes cannot hold is refused
        // before anything is sized from it
        if n * 5 > bytes.len() {
            return Err(DecodeError::Inconsistent {
                what: "stripe summary (shorter than its column count needs)",
            });
        }
        let mut columns = Vec::with_capacity(n);
        for _ in 0..n {
            let null_count = r.u32("summary null count")?;
            let zone = match r.u8("summary zone flag")? {
                0 => None,
                1 => Some(StoredZone::read(&mut r)?),
                value => {
                    return Err(DecodeError::UnknownTag {
                        what: "summary zone flag",
                        value,
                    })
                }
            };
            columns.push(ColumnSummary { null_count, zone });
        }
        r.finish()?;
        Ok(StripeSummary { columns })
    }
}

fn read_header(r: &mut ByteReader<'_>) -> DecodeResult<(usize, usize, u16, usize)> {
    if r.take(4, "stripe magic")? != MAGIC {
        return Err(DecodeError::Inconsistent {
            what: "stripe magic (not a pg_columnar stripe)",
        });
    }
    let version = r.u16("stripe format version")?;
    if !(crate::OLDEST_READABLE_VERSION..=crate::FORMAT_VERSION).contains(&version) {
        return Err(DecodeError::OutOfRange {
            what: "stripe format version",
            value: version as u64,
            limit: crate::FORMAT_VERSION as u64,
        });
    }
    let column_count = r.u16("stripe column count")? as usize;
    let row_count = r.u32("stripe row count")? as usize;
    let directory_len = r.u32("stripe directory length")? as usize;
    Ok((column_count, row_count, version, directory_len))
}

/// What writing a stripe did, per column: the encoder's report for every vector and whether
/// the column kept an FSST table and a shared dictionary.
#[derive(Debug, Clone)]
pub struct ColumnReport {
    pub vectors: Vec<EncodeReport>,
    pub fsst_table: bool,
    pub shared_dictionary: bool,
    /// The stripe's row period the column was encoded with ([`detect_period`]).
    pub period: Option<u16>,
}

/// The non-null values of rows `start..end` of a column whose non-null values before `start`
/// number `skip`.
fn slice_values<'a>(values: &ValuesRef<'a>, skip: usize, count: usize) -> ValuesRef<'a> {
    let r = skip..skip + count;
    match *values {
        ValuesRef::Int8(v) => ValuesRef::Int8(&v[r]),
        ValuesRef::Int16(v) => ValuesRef::Int16(&v[r]),
        ValuesRef::Int32(v) => ValuesRef::Int32(&v[r]),
        ValuesRef::Int64(v) => ValuesRef::Int64(&v[r]),
        ValuesRef::Float32(v) => ValuesRef::Float32(&v[r]),
        ValuesRef::Float64(v) => ValuesRef::Float64(&v[r]),
        ValuesRef::Bytes(b) => ValuesRef::Bytes(BytesRef {
            offsets: &b.offsets[skip..=skip + count],
            data: b.data,
        }),
        ValuesRef::Fixed { width, data } => {
            let w = width as usize;
            ValuesRef::Fixed {
                width,
                data: &data[skip * w..(skip + count) * w],
            }
        }
    }
}

/// Longest row period [`detect_period`] looks for.
pub const MAX_PERIOD: usize = 512;
/// Values of a column [`detect_period`] examines.
pub const PERIOD_SAMPLE: usize = 4096;

/// Whether values `i` and `j` of `values` are equal (bitwise for floats).
fn same_value(values: &ValuesRef<'_>, i: usize, j: usize) -> bool {
    match values {
        ValuesRef::Int8(v) => v[i] == v[j],
        ValuesRef::Int16(v) => v[i] == v[j],
        ValuesRef::Int32(v) => v[i] == v[j],
        ValuesRef::Int64(v) => v[i] == v[j],
        ValuesRef::Float32(v) => v[i].to_bits() == v[j].to_bits(),
        ValuesRef::Float64(v) => v[i].to_bits() == v[j].to_bits(),
        ValuesRef::Bytes(b) => b.get(i) == b.get(j),
        ValuesRef::Fixed { width, data } => {
            let w = *width as usize;
            data[i * w..(i + 1) * w] == data[j * w..(j + 1) * w]
        }
    }
}

/// The row period of a stripe whose rows interleave series in a fixed order (time-major
/// metrics: one row per host per timestamp, hosts always in the same order): the smallest
/// `p` in 2..=[`MAX_PERIOD`] with which some column without NULLs repeats exactly over its
/// first [`PERIOD_SAMPLE`] values (at least two whole periods), its first `p` values not all
/// equal. Columns are examined in order and the first period found is the stripe's. The
/// encoder then also tries every column's integers and dictionary codes as differences from
/// the value `p` rows before (stride blocks, see `bitpack`).
pub fn detect_period(columns: &[ColumnInput<'_>]) -> Option<u16> {
    columns
        .iter()
        .filter(|c| c.nulls.is_none())
        .find_map(|c| {
            let v = &c.values;
            let n = v.len().min(PERIOD_SAMPLE);
            (2..=MAX_PERIOD.min(n / 2)).find(|&p| {
                same_value(v, p, 0)
                    && (1..p).any(|i| !same_value(v, i, 0))
                    && (p..n).all(|i| same_value(v, i, i - p))
            })
        })
        .map(|p| p as u16)
}

/// Encodes `row_count` rows of `columns` as one stripe appended to `out`. Per column it
/// builds the FSST symbol table and the shared dictionary, encodes every vector with them
/// and the stripe's row period ([`detect_period`]), and keeps each table only if some vector
/// chose it (an unused context changes no vector byte).
pub fn write_stripe(
    columns: &[ColumnInput<'_>],
    row_count: usize,
    out: &mut Vec<u8>,
) -> Result<Vec<ColumnReport>, EncodeError> {
    write_stripe_with(columns, row_count, &WriteOptions::default(), out)
}

/// Choices of [`write_stripe_with`] that the format leaves to the writer.
#[derive(Debug, Clone)]
pub struct WriteOptions {
    /// Look for the row period ([`detect_period`]); off only to perturb the encoder on purpose
    /// (the gate's self-test).
    pub find_period: bool,
    /// Columns (0-based) to sort the rows by ([`crate::sort`]); empty: rows stay in insert
    /// order. A sorted stripe stores its row positions (the stored position of each row, in
    /// insert order).
    pub sort_key: Vec<usize>,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            find_period: true,
            sort_key: Vec::new(),
        }
    }
}

/// [`write_stripe`] with explicit options.
pub fn write_stripe_with(
    columns: &[ColumnInput<'_>],
    row_count: usize,
    options: &WriteOptions,
    out: &mut Vec<u8>,
) -> Result<Vec<ColumnReport>, EncodeError> {
    if columns.len() > u16::MAX as usize {
        return Err(EncodeError(format!(
            "{} columns, at most {}",
            columns.len(),
            u16::MAX
        )));
    }
    if row_count > u32::MAX as usize {
        return Err(EncodeError(format!("{row_count} rows in one stripe")));
    }
    let vector_count = row_count.div_ceil(MAX_ROWS);
    if let Some(&c) = options.sort_key.iter().find(|&&c| c >= columns.len()) {
        return Err(EncodeError(format!(
            "sort key column {} of {}",
            c + 1,
            columns.len()
        )));
    }
    if options.sort_key.len() > u8::MAX as usize
        || (1..options.sort_key.len()).any(|i| options.sort_key[..i].contains(&options.sort_key[i]))
    {
        return Err(EncodeError(format!(
            "sort key {:?}: at most 255 columns, each once",
            options.sort_key
        )));
    }
    let order = crate::sort::sort_order(columns, &options.sort_key, row_count);
    // the period of the rows as they came (a sorted stripe's row positions are encoded with
    // it) and of the rows as stored, from as many of them as it examines
    let input_period = if options.find_period {
        detect_period(columns)
    } else {
        None
    };
    let stride = match (&order, options.find_period) {
        (_, false) => None,
        (None, true) => input_period,
        (Some(order), true) => {
            let head = &order[..order.len().min(PERIOD_SAMPLE)];
            let sorted: Vec<(Option<Vec<u8>>, Values)> = columns
                .iter()
                .map(|c| crate::sort::permute(c, head, row_count))
                .collect();
            detect_period(
                &sorted
                    .iter()
                    .map(|(n, v)| ColumnInput {
                        nulls: n.as_deref(),
                        values: v.as_ref(),
                    })
                    .collect::<Vec<_>>(),
            )
        }
    };
    let mut directory = Vec::new();
    let mut data = Vec::new();
    let mut reports = Vec::with_capacity(columns.len());
    let mut encoded = Vec::new();
    for column in columns {
        // a sorted stripe permutes one column at a time, so at most one column is copied
        let sorted = order
            .as_ref()
            .map(|o| crate::sort::permute(column, o, row_count));
        let column = match &sorted {
            Some((nulls, values)) => &ColumnInput {
                nulls: nulls.as_deref(),
                values: values.as_ref(),
            },
            None => column,
        };
        let values = &column.values;
        let fsst_table: Option<SymbolTable> = match values {
            ValuesRef::Bytes(b) => fsst::decide_and_build(b.iter()),
            _ => None,
        };
        // A shared dictionary's entries are stored once per stripe, outside every vector, so
        // the chooser cannot weigh their cost: it would pick the dictionary even for unique
        // strings and store them all uncompressed. Build one only where each entry is used
        // at least SHARED_DICTIONARY_MIN_USES times on average.
        let dictionary = SharedDictionary::build(values)
            .filter(|d| d.len() * SHARED_DICTIONARY_MIN_USES <= values.len());
        let ctx = ColumnContext {
            fsst: fsst_table.as_ref(),
            dictionary: dictionary.as_ref(),
            stride,
        };

        encoded.clear();
        let mut entries = Vec::with_capacity(vector_count);
        let mut vector_reports = Vec::with_capacity(vector_count);
        let (mut used_fsst, mut used_dictionary) = (false, false);
        let mut skip = 0;
        for v in 0..vector_count {
            let start = v * MAX_ROWS;
            let rows = (row_count - start).min(MAX_ROWS);
            let nulls = column
                .nulls
                .map(|b| &b[start / 8..(start + rows).div_ceil(8)]);
            let null_count = nulls.map_or(0, |b| count_nulls(b, rows));
            let count = rows - null_count;
            let vector = crate::VectorRef {
                rows,
                nulls,
                values: slice_values(values, skip, count),
            };
            skip += count;
            let before = encoded.len();
            let report = encode_vector(&vector, &ctx, &mut encoded)?;
            let bytes = &encoded[before..];
            used_fsst |= report.chosen == Some(Encoding::Fsst);
            used_dictionary |=
                report.chosen == Some(Encoding::Dictionary) && report.shared_dictionary;
            entries.push(VectorEntry {
                offset: 0,
                length: bytes.len(),
                encoding: report.chosen,
                null_count,
                checksum: checksum32(bytes),
                zone: StoredZone::from_report(&report.zone_map, &vector.values),
            });
            vector_reports.push(report);
        }
        if skip != values.len() {
            return Err(EncodeError(format!(
                "{} values for {} non-null rows",
                values.len(),
                skip
            )));
        }

        let mut context = |present: bool, serialize: &dyn Fn(&mut Vec<u8>)| {
            let before = data.len();
            if present {
                serialize(&mut data);
            }
            let bytes = &data[before..];
            directory.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
            directory.extend_from_slice(
                &(if bytes.is_empty() {
                    0
                } else {
                    checksum32(bytes)
                })
                .to_le_bytes(),
            );
        };
        context(used_fsst, &|o| fsst_table.as_ref().unwrap().serialize(o));
        context(used_dictionary, &|o| {
            dictionary.as_ref().unwrap().serialize(o)
        });
        for e in &entries {
            e.write(&mut directory);
        }
        data.extend_from_slice(&encoded);
        reports.push(ColumnReport {
            vectors: vector_reports,
            fsst_table: used_fsst,
            shared_dictionary: used_dictionary,
            period: stride,
        });
    }
    if let Some(order) = &order {
        // the row positions: per vector of stored rows, the insert offset of each (int32,
        // encoded like any column's vector, with the input's row period), after every column
        let ctx = ColumnContext {
            stride: input_period,
            ..ColumnContext::default()
        };
        directory.push(options.sort_key.len() as u8);
        for &c in &options.sort_key {
            directory.extend_from_slice(&(c as u16).to_le_bytes());
        }
        for v in 0..vector_count {
            let start = v * MAX_ROWS;
            let rows = (row_count - start).min(MAX_ROWS);
            let positions: Vec<i32> = order[start..start + rows]
                .iter()
                .map(|&p| p as i32)
                .collect();
            let vector = crate::VectorRef {
                rows,
                nulls: None,
                values: ValuesRef::Int32(&positions),
            };
            let before = data.len();
            let report = encode_vector(&vector, &ctx, &mut data)?;
            let bytes = &data[before..];
            VectorEntry {
                offset: 0,
                length: bytes.len(),
                encoding: report.chosen,
                null_count: 0,
                checksum: checksum32(bytes),
                zone: StoredZone::from_report(&report.zone_map, &vector.values),
            }
            .write(&mut directory);
        }
    }
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&crate::FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&(columns.len() as u16).to_le_bytes());
    out.extend_from_slice(&(row_count as u32).to_le_bytes());
    out.extend_from_slice(&(directory.len() as u32).to_le_bytes());
    out.extend_from_slice(&directory);
    out.extend_from_slice(&data);
    Ok(reports)
}

/// Appends to `out` the values of a row-position vector (`bytes`, already checked against its
/// entry's checksum) of `rows` rows of a stripe of `row_count` rows: insert offsets or stored
/// positions ([`RowPositionValues`]), each below `row_count`. They are a permutation only if
/// all are distinct ([`RowPositions::orders`] checks that).
pub fn decode_row_positions(
    bytes: &[u8],
    rows: usize,
    row_count: usize,
    out: &mut Vec<u32>,
) -> DecodeResult<()> {
    let v = crate::decode_vector(bytes, &ColumnContext::default())?;
    let Values::Int32(positions) = v.values else {
        return Err(DecodeError::Inconsistent {
            what: "row position vector (not of int32 positions)",
        });
    };
    if v.rows != rows || v.nulls.is_some() || positions.len() != rows {
        return Err(DecodeError::Inconsistent {
            what: "row position vector (not one position per row)",
        });
    }
    if let Some(&p) = positions
        .iter()
        .find(|&&p| p < 0 || p as usize >= row_count)
    {
        return Err(DecodeError::OutOfRange {
            what: "row position",
            value: p as u32 as u64,
            limit: row_count as u64 - 1,
        });
    }
    out.extend(positions.iter().map(|&p| p as u32));
    Ok(())
}

/// Checks `bytes` against a directory checksum and returns them, or says what is wrong.
pub fn verified<'a>(bytes: &'a [u8], checksum: u32, what: &'static str) -> DecodeResult<&'a [u8]> {
    if checksum32(bytes) != checksum {
        return Err(DecodeError::Inconsistent { what });
    }
    Ok(bytes)
}

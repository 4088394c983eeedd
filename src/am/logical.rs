//! Logical decoding of a pg_columnar table's changes, through a WAL resource manager of the
//! extension's own.
//!
//! A pg_columnar table's pages are logged as generic WAL and its deletions are rows of the
//! catalog `pgcol.row_mark`; neither says which rows a statement inserted, updated or
//! deleted. So, beside them, every INSERT, COPY, UPDATE and DELETE (and an `INSERT ... ON
//! CONFLICT`'s row once it is kept) logs one record of this resource manager naming the
//! table and holding the rows as heap tuples: the inserted rows, each updated row's new
//! version, and the old key (per `REPLICA IDENTITY`) of each deleted row and of each updated
//! row whose key changed, as heap logs them. Decoding (`rm_decode`) turns a record into the
//! insert, update and delete changes heap's records decode to, so pgoutput, test_decoding and
//! wal2json read a pg_columnar table like a heap table. Redo does nothing: the pages are
//! restored by their own WAL. TRUNCATE needs nothing here: PostgreSQL logs it for decoding
//! whatever the access method.
//!
//! What logs nothing: a table rewrite's rows (VACUUM's merges, VACUUM FULL, CLUSTER write
//! stripes without these callbacks; ALTER TABLE and SET ACCESS METHOD insert into a transient
//! table, which heap's decoding skips too), temporary and unlogged tables, and everything
//! while `wal_level` is below `logical` (on 19: while no logical slot turns it on).
//!
//! The resource manager exists only when the library is in `shared_preload_libraries`
//! (PostgreSQL registers resource managers at start-up alone). Without it, no record is
//! written and `am::publication` keeps refusing what would need one. With it, every server
//! that replays this WAL (crash recovery, a standby, point-in-time recovery) must load the
//! library too: PostgreSQL stops at a record of a resource manager it does not know.
//!
//! The record (docs/FORMAT.md): the table's file locator (tablespace, database, file number;
//! three u32), then changes to the end of the record, each a kind byte (1 inserted rows, 2
//! update, 3 delete) and a byte of flags (1: an old tuple follows, 2: a new one follows).
//! Updates and deletes hold their tuples as heap's WAL has one: the data length after the
//! header (u32), the header's `t_infomask2` (u16) and `t_infomask` (u16) and `t_hoff` (u8),
//! then the null bitmap, padding and values (the server's heap tuple layout). Inserted rows
//! come as one packed batch per statement's call (`codec::rowpack`: each row XORed with the
//! one before, zero runs folded), about a third of their tuples' bytes for TSBS rows: a
//! COPY under `wal_level = logical` writes that much more WAL than under `replica`. The
//! record's own numbers are little-endian.

use pg_columnar_codec::rowpack::{unpack_rows, RowPacker};
use pgrx::pg_sys;
use std::ffi::CStr;
use std::sync::atomic::{AtomicBool, Ordering};

/// The resource manager's id. Custom ids are 128–255; 128 is for development, and the
/// PostgreSQL wiki (CustomWALResourceManagers) lists the ones extensions use, which this one
/// avoids as of writing (137, 144 and 149 among them). Frozen: WAL written with it must
/// decode with it.
pub const RMGR_ID: u8 = 211;
const RMGR_NAME: &CStr = c"pg_columnar";
/// `xl_info` of the one kind of record.
const XLOG_PGCOL_CHANGES: u8 = 0x00;

const KIND_INSERT: u8 = 1;
const KIND_UPDATE: u8 = 2;
const KIND_DELETE: u8 = 3;
const HAS_OLD: u8 = 1;
const HAS_NEW: u8 = 2;

/// The locator's bytes at the start of a record.
const LOCATOR_LEN: usize = 12;
/// A heap tuple header's size up to its null bitmap (`SizeofHeapTupleHeader`).
const HEAP_HEADER_LEN: usize = std::mem::offset_of!(pg_sys::HeapTupleHeaderData, t_bits);
/// A record is written once its changes pass this many bytes (a COPY's batch of rows may
/// hold large values; WAL records are limited to about 1 GB).
const RECORD_TARGET_BYTES: usize = 8 << 20;

/// Whether this process registered the resource manager (in the postmaster, while it loads
/// `shared_preload_libraries`; its children inherit the flag).
static REGISTERED: AtomicBool = AtomicBool::new(false);

/// Registers the resource manager if the library is being loaded by
/// `shared_preload_libraries`, the only time PostgreSQL allows it.
pub fn register() {
    // SAFETY: a read of PostgreSQL's flag, in `_PG_init`
    if !unsafe { pg_sys::process_shared_preload_libraries_in_progress } {
        return;
    }
    let mut rmgr = pg_sys::RmgrData {
        rm_name: RMGR_NAME.as_ptr(),
        rm_redo: Some(rm_redo),
        rm_desc: Some(rm_desc),
        rm_identify: Some(rm_identify),
        rm_startup: None,
        rm_cleanup: None,
        rm_mask: None,
        rm_decode: Some(rm_decode),
    };
    // SAFETY: called from `_PG_init` while shared_preload_libraries loads (checked above);
    // PostgreSQL copies the struct, whose name is a static string
    unsafe { pg_sys::RegisterCustomRmgr(RMGR_ID, &mut rmgr) };
    REGISTERED.store(true, Ordering::Relaxed);
}

/// Whether a pg_columnar table's changes can be logically decoded on this server: the
/// resource manager is registered and `wal_level` allows decoding.
pub fn decodes() -> bool {
    REGISTERED.load(Ordering::Relaxed) && crate::compat::logical_decoding_possible()
}

/// Whether changes of `rel` are logged for decoding now. Assigns the transaction an id
/// first: the records carry it, and on 19 whether logical WAL is on is only settled then.
fn logged(rel: pg_sys::Relation) -> bool {
    if !decodes() {
        return false;
    }
    // SAFETY: `rel` is an open relation (every caller's)
    let (persistence, rewrite) =
        unsafe { ((*(*rel).rd_rel).relpersistence, (*(*rel).rd_rel).relrewrite) };
    if persistence as u8 != pg_sys::RELPERSISTENCE_PERMANENT || rewrite != pg_sys::InvalidOid {
        return false;
    }
    // SAFETY: in a transaction that writes `rel`
    unsafe { pg_sys::GetCurrentTransactionId() };
    crate::compat::logical_info_active()
}

/// The changes of one table being gathered into records.
struct Record {
    bytes: Vec<u8>,
    changes: usize,
}

impl Record {
    fn new(rel: pg_sys::Relation) -> Self {
        let mut bytes = Vec::with_capacity(256);
        for n in crate::compat::relation_locator(rel) {
            bytes.extend_from_slice(&n.to_le_bytes());
        }
        Record { bytes, changes: 0 }
    }

    /// Adds the rows `packer` holds as one change of inserted rows (the packer is empty
    /// after); writes the record first if it is full.
    fn add_inserts(&mut self, packer: &mut RowPacker) {
        if packer.rows() == 0 {
            return;
        }
        if self.bytes.len() >= RECORD_TARGET_BYTES {
            self.write();
        }
        self.bytes.extend_from_slice(&[KIND_INSERT, 0]);
        let head = self.bytes.len();
        self.bytes.extend_from_slice(&[0; 12]);
        let (rows, unpacked) = packer.finish(&mut self.bytes);
        let packed = self.bytes.len() - head - 12;
        for (k, n) in [rows, unpacked, packed].into_iter().enumerate() {
            self.bytes[head + 4 * k..head + 4 * k + 4].copy_from_slice(&(n as u32).to_le_bytes());
        }
        self.changes += 1;
    }

    /// Adds an update or a delete; writes the record first if it is full.
    fn add(&mut self, kind: u8, old: Option<&Tuple>, new: Option<&Tuple>) {
        if self.bytes.len() >= RECORD_TARGET_BYTES {
            self.write();
        }
        let flags =
            if old.is_some() { HAS_OLD } else { 0 } | if new.is_some() { HAS_NEW } else { 0 };
        self.bytes.extend_from_slice(&[kind, flags]);
        for t in old.into_iter().chain(new) {
            t.append_to(&mut self.bytes);
        }
        self.changes += 1;
    }

    /// Writes the changes added so far as one record.
    fn write(&mut self) {
        if self.changes == 0 {
            return;
        }
        // SAFETY: in a transaction with an id (`logged` assigned it); the data stays alive
        // and unchanged until XLogInsert, which copies it
        unsafe {
            pg_sys::XLogBeginInsert();
            pg_sys::XLogSetRecordFlags(pg_sys::XLOG_INCLUDE_ORIGIN as u8);
            crate::compat::xlog_register_data(&self.bytes);
            pg_sys::XLogInsert(RMGR_ID, XLOG_PGCOL_CHANGES);
        }
        self.bytes.truncate(LOCATOR_LEN);
        self.changes = 0;
    }
}

/// A heap tuple formed for a record, freed when dropped.
struct Tuple(pg_sys::HeapTuple);

impl Tuple {
    /// The row in `slot` (a slot of `rel`'s descriptor holding a row) as a heap tuple whose
    /// values are all in line (out-of-line ones fetched), with only the columns `keep` marks
    /// (all if None) and the others NULL.
    ///
    /// # Safety
    ///
    /// `rel` is open and `slot` a slot of its descriptor holding a row.
    unsafe fn of_slot(
        rel: pg_sys::Relation,
        slot: *mut pg_sys::TupleTableSlot,
        keep: Option<&[bool]>,
    ) -> Self {
        // SAFETY: `rel` and `slot` are valid (this function's contract): after
        // slot_getallattrs the slot's arrays hold `natts` deformed values; a varlena value is
        // a valid pointer, which detoast_external_attr reads (returning it if in line)
        unsafe {
            pg_sys::slot_getallattrs(slot);
            let desc = (*rel).rd_att;
            let natts = (*desc).natts as usize;
            let mut values = Vec::with_capacity(natts);
            let mut nulls = Vec::with_capacity(natts);
            // copies of out-of-line values, freed once the tuple holds them
            let mut fetched = Vec::new();
            for i in 0..natts {
                let attr = &*crate::compat::tuple_desc_attr(desc, i);
                let null =
                    *(*slot).tts_isnull.add(i) || attr.attisdropped || keep.is_some_and(|k| !k[i]);
                let mut value = *(*slot).tts_values.add(i);
                if !null && attr.attlen == -1 {
                    let inline = pg_sys::detoast_external_attr(value.cast_mut_ptr());
                    if inline != value.cast_mut_ptr() {
                        fetched.push(inline);
                    }
                    value = pg_sys::Datum::from(inline);
                }
                values.push(if null {
                    pg_sys::Datum::from(0usize)
                } else {
                    value
                });
                nulls.push(null);
            }
            let tuple = pg_sys::heap_form_tuple(desc, values.as_mut_ptr(), nulls.as_mut_ptr());
            for p in fetched {
                pg_sys::pfree(p.cast());
            }
            Tuple(tuple)
        }
    }

    /// The tuple as a row of a packed batch of inserts: `t_infomask2` (u16), `t_infomask`
    /// (u16), `t_hoff` (u8), then the tuple from its null bitmap on.
    fn row(&self, out: &mut Vec<u8>) {
        out.clear();
        self.append_row(out);
    }

    /// The tuple as heap's WAL holds one: the length of the data after the header (u32),
    /// then [`row`](Self::row)'s bytes.
    fn append_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.data().len() as u32).to_le_bytes());
        self.append_row(out);
    }

    fn append_row(&self, out: &mut Vec<u8>) {
        // SAFETY: a tuple heap_form_tuple made, whose header is valid
        let h = unsafe { &*(*self.0).t_data };
        out.extend_from_slice(&h.t_infomask2.to_le_bytes());
        out.extend_from_slice(&h.t_infomask.to_le_bytes());
        out.push(h.t_hoff);
        out.extend_from_slice(self.data());
    }

    /// The tuple from its null bitmap on.
    fn data(&self) -> &[u8] {
        // SAFETY: a tuple heap_form_tuple made: `t_len` bytes at `t_data`, a header first
        unsafe {
            let t = &*self.0;
            std::slice::from_raw_parts(
                (t.t_data as *const u8).add(HEAP_HEADER_LEN),
                t.t_len as usize - HEAP_HEADER_LEN,
            )
        }
    }
}

impl Drop for Tuple {
    fn drop(&mut self) {
        // SAFETY: made by heap_form_tuple, freed once
        unsafe { pg_sys::heap_freetuple(self.0) };
    }
}

/// Logs the rows of `slots` as inserted into `rel`, if its changes are logged.
///
/// # Safety
///
/// `rel` is an open pg_columnar relation and `slots` slots of its descriptor holding rows.
pub(super) unsafe fn log_inserts(rel: pg_sys::Relation, slots: &[*mut pg_sys::TupleTableSlot]) {
    if slots.is_empty() || !logged(rel) {
        return;
    }
    let mut record = Record::new(rel);
    let mut packer = RowPacker::new();
    let mut row = Vec::new();
    for &slot in slots {
        // SAFETY: as this function's contract says
        let new = unsafe { Tuple::of_slot(rel, slot, None) };
        new.row(&mut row);
        packer.push(&row);
        if packer.unpacked_len() >= RECORD_TARGET_BYTES {
            record.add_inserts(&mut packer);
        }
    }
    record.add_inserts(&mut packer);
    record.write();
}

/// The columns `rel`'s old key holds per its `REPLICA IDENTITY` (None: no old key is logged,
/// as with `NOTHING`, or `DEFAULT` without a primary key), and whether it is the whole row
/// (`FULL`).
///
/// # Safety
///
/// `rel` is an open relation.
unsafe fn identity(rel: pg_sys::Relation) -> Option<(Vec<bool>, bool)> {
    // SAFETY: `rel` is open (this function's contract); the bitmap is a copy, freed here
    unsafe {
        let natts = (*(*rel).rd_att).natts as usize;
        match (*(*rel).rd_rel).relreplident as u8 {
            b'f' => Some((vec![true; natts], true)),
            b'n' => None,
            _ => {
                let bits = pg_sys::RelationGetIndexAttrBitmap(
                    rel,
                    pg_sys::IndexAttrBitmapKind::INDEX_ATTR_BITMAP_IDENTITY_KEY,
                );
                // (an identity index holds user columns only)
                let keep = super::slot::columns_of(bits, natts).unwrap_or_default();
                pg_sys::bms_free(bits);
                keep.iter().any(|&k| k).then_some((keep, false))
            }
        }
    }
}

/// The row at `tid` of `rel` (whatever its visibility: the caller has just marked it) in a
/// new slot, or None if it cannot be read.
///
/// # Safety
///
/// `rel` is an open pg_columnar relation and `tid` a valid TID.
unsafe fn old_row(rel: pg_sys::Relation, tid: pg_sys::ItemPointer) -> Option<OwnedSlot> {
    // SAFETY: `rel` is open (this function's contract); the slot is dropped by OwnedSlot
    let slot = OwnedSlot(unsafe { pg_sys::table_slot_create(rel, std::ptr::null_mut()) });
    let any = std::ptr::addr_of_mut!(pg_sys::SnapshotAnyData);
    // SAFETY: `rel` and `tid` are valid (this function's contract), the slot is of `rel`,
    // and `any` is PostgreSQL's static SnapshotAny
    unsafe { super::fetch::fetch_row_version(rel, tid, any, slot.0) }.then_some(slot)
}

struct OwnedSlot(*mut pg_sys::TupleTableSlot);

impl Drop for OwnedSlot {
    fn drop(&mut self) {
        // SAFETY: made by table_slot_create, dropped once
        unsafe { pg_sys::ExecDropSingleTupleTableSlot(self.0) };
    }
}

/// Logs the deletion of the row at `tid` of `rel` (with its old key), if its changes are
/// logged. Called once the row is marked deleted.
///
/// # Safety
///
/// `rel` is an open pg_columnar relation and `tid` the valid TID of a row of it.
pub(super) unsafe fn log_delete(rel: pg_sys::Relation, tid: pg_sys::ItemPointer) {
    if !logged(rel) {
        return;
    }
    // SAFETY: `rel` and `tid` are valid (this function's contract)
    let old = unsafe {
        match identity(rel) {
            Some((keep, _)) => match old_row(rel, tid) {
                Some(slot) => Some(Tuple::of_slot(rel, slot.0, Some(&keep))),
                None => unreadable(rel),
            },
            None => None,
        }
    };
    let mut record = Record::new(rel);
    record.add(KIND_DELETE, old.as_ref(), None);
    record.write();
}

/// Logs the update of the row at `otid` of `rel` to the new version in `slot`, if its
/// changes are logged: the old key goes with it if the identity is `FULL` (the whole old
/// row) or the update changed a column of the key, as heap decides.
///
/// # Safety
///
/// `rel` is an open pg_columnar relation, `otid` the valid TID of a row of it, and `slot` a
/// slot of its descriptor holding the new version.
pub(super) unsafe fn log_update(
    rel: pg_sys::Relation,
    otid: pg_sys::ItemPointer,
    slot: *mut pg_sys::TupleTableSlot,
) {
    if !logged(rel) {
        return;
    }
    // SAFETY: `rel`, `otid` and `slot` are valid (this function's contract)
    let (old, new) = unsafe {
        let old = match identity(rel) {
            Some((keep, full)) => match old_row(rel, otid) {
                Some(old) => (full || !super::slot::same_values(rel, old.0, slot, &keep))
                    .then(|| Tuple::of_slot(rel, old.0, Some(&keep))),
                None => unreadable(rel),
            },
            None => None,
        };
        (old, Tuple::of_slot(rel, slot, None))
    };
    let mut record = Record::new(rel);
    record.add(KIND_UPDATE, old.as_ref(), Some(&new));
    record.write();
}

#[cold]
fn unreadable(rel: pg_sys::Relation) -> ! {
    pgrx::error!(
        "pg_columnar: the row of \"{}\" just changed cannot be read back for logical decoding",
        crate::storage::relation_name(rel)
    )
}

/// Redo: nothing (the pages come back through their own WAL).
///
/// # Safety
///
/// Only PostgreSQL calls it, as the resource manager's `rm_redo`.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn rm_redo(_record: *mut pg_sys::XLogReaderState) {}

/// The main data of a record being read.
///
/// # Safety
///
/// `record` is the reader state of a decoded record, valid while the slice is used.
unsafe fn main_data<'a>(record: *mut pg_sys::XLogReaderState) -> &'a [u8] {
    // SAFETY: as the contract says: the decoded record's main data is `main_data_len` bytes
    unsafe {
        let d = (*record).record;
        if (*d).main_data_len == 0 {
            return &[];
        }
        std::slice::from_raw_parts((*d).main_data as *const u8, (*d).main_data_len as usize)
    }
}

/// A record's contents, read back with every length checked against the bytes there are.
struct Reader<'a> {
    bytes: &'a [u8],
}

/// One tuple of a record, as written by [`Tuple::append_to`] or [`Tuple::row`].
struct TupleBytes<'a> {
    infomask2: u16,
    infomask: u16,
    hoff: u8,
    data: &'a [u8],
}

impl<'a> TupleBytes<'a> {
    fn checked(
        infomask2: u16,
        infomask: u16,
        hoff: u8,
        data: &'a [u8],
    ) -> Result<Self, &'static str> {
        if (hoff as usize) < HEAP_HEADER_LEN || hoff as usize > HEAP_HEADER_LEN + data.len() {
            return Err("a tuple's header length is out of range");
        }
        Ok(TupleBytes {
            infomask2,
            infomask,
            hoff,
            data,
        })
    }

    /// A row of a packed batch of inserts.
    fn of_row(row: &'a [u8]) -> Result<Self, &'static str> {
        if row.len() < 5 {
            return Err("a packed row is shorter than its header");
        }
        let u16_at = |k: usize| u16::from_le_bytes([row[k], row[k + 1]]);
        Self::checked(u16_at(0), u16_at(2), row[4], &row[5..])
    }
}

/// A change of a record.
enum Change<'a> {
    /// Inserted rows, packed ([`RowPacker`]): their count, unpacked length and tokens.
    Inserts {
        rows: usize,
        unpacked: usize,
        packed: &'a [u8],
    },
    Update {
        old: Option<TupleBytes<'a>>,
        new: TupleBytes<'a>,
    },
    Delete {
        old: Option<TupleBytes<'a>>,
    },
}

/// The most bytes a packed batch may unpack to (a record is at most about 1 GB).
const UNPACKED_LIMIT: usize = 1 << 30;

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], &'static str> {
        if self.bytes.len() < n {
            return Err("a record ends inside a change");
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }

    fn u32(&mut self) -> Result<u32, &'static str> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }

    fn u16(&mut self) -> Result<u16, &'static str> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().unwrap()))
    }

    fn locator(&mut self) -> Result<[u32; 3], &'static str> {
        Ok([self.u32()?, self.u32()?, self.u32()?])
    }

    fn tuple(&mut self) -> Result<TupleBytes<'a>, &'static str> {
        let len = self.u32()? as usize;
        let infomask2 = self.u16()?;
        let infomask = self.u16()?;
        let hoff = self.take(1)?[0];
        TupleBytes::checked(infomask2, infomask, hoff, self.take(len)?)
    }

    fn change(&mut self) -> Result<Option<Change<'a>>, &'static str> {
        if self.bytes.is_empty() {
            return Ok(None);
        }
        let head = self.take(2)?;
        let (kind, flags) = (head[0], head[1]);
        let old = |r: &mut Self| -> Result<Option<TupleBytes<'a>>, &'static str> {
            if flags & HAS_OLD != 0 {
                r.tuple().map(Some)
            } else {
                Ok(None)
            }
        };
        Ok(Some(match (kind, flags) {
            (KIND_INSERT, 0) => {
                let rows = self.u32()? as usize;
                let unpacked = self.u32()? as usize;
                let packed = self.u32()? as usize;
                Change::Inserts {
                    rows,
                    unpacked,
                    packed: self.take(packed)?,
                }
            }
            (KIND_UPDATE, HAS_NEW | 3) => Change::Update {
                old: old(self)?,
                new: self.tuple()?,
            },
            (KIND_DELETE, 0 | HAS_OLD) => Change::Delete { old: old(self)? },
            _ => return Err("a change of an unknown kind, or with the wrong tuples for its kind"),
        }))
    }
}

/// Reads a whole record (for `rm_desc`: rows inserted, updated and deleted; the inserted rows
/// are counted as their batches say, not unpacked).
fn counts(bytes: &[u8]) -> Result<([u32; 3], [usize; 3]), &'static str> {
    let mut r = Reader { bytes };
    let locator = r.locator()?;
    let mut n = [0; 3];
    while let Some(c) = r.change()? {
        match c {
            Change::Inserts { rows, .. } => n[0] += rows,
            Change::Update { .. } => n[1] += 1,
            Change::Delete { .. } => n[2] += 1,
        }
    }
    Ok((locator, n))
}

/// `rm_desc`: what pg_waldump prints of a record.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the resource manager's `rm_desc`, with a StringInfo and the
/// reader state of one of its records.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn rm_desc(buf: pg_sys::StringInfo, record: *mut pg_sys::XLogReaderState) {
    // SAFETY: PostgreSQL's reader state of one of our records
    let text = match counts(unsafe { main_data(record) }) {
        Ok(([spc, db, rel], [i, u, d])) => {
            format!("rel {spc}/{db}/{rel}: {i} inserted, {u} updated, {d} deleted")
        }
        Err(fault) => format!("damaged: {fault}"),
    };
    let text = std::ffi::CString::new(text).expect("no NUL in the description");
    // SAFETY: `buf` is PostgreSQL's StringInfo; the string is copied
    unsafe { pg_sys::appendStringInfoString(buf, text.as_ptr()) };
}

/// `rm_identify`: the record's kind by name.
///
/// # Safety
///
/// Only PostgreSQL calls it, as the resource manager's `rm_identify`.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn rm_identify(info: u8) -> *const std::ffi::c_char {
    if info & !(pg_sys::XLR_INFO_MASK as u8) == XLOG_PGCOL_CHANGES {
        c"CHANGES".as_ptr()
    } else {
        std::ptr::null()
    }
}

/// `rm_decode`: a record's changes into the reorder buffer, as heap's decoding queues its
/// insert, update and delete records' (the same checks, in the same order).
///
/// # Safety
///
/// Only PostgreSQL calls it, as the resource manager's `rm_decode`, with its decoding context
/// and the buffer of one of the resource manager's records.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn rm_decode(
    ctx: *mut pg_sys::LogicalDecodingContext,
    buf: *mut pg_sys::XLogRecordBuffer,
) {
    // SAFETY: PostgreSQL's decoding context and the buffer of one of our records, valid for
    // the call; the reorder buffer takes the changes queued
    unsafe {
        let record = (*buf).record;
        let decoded = (*record).record;
        let xid = (*decoded).header.xl_xid;
        let lsn = (*buf).origptr;
        let rb = (*ctx).reorder;
        pg_sys::ReorderBufferProcessXid(rb, xid, lsn);
        let builder = (*ctx).snapshot_builder;
        if pg_sys::SnapBuildCurrentState(builder) < pg_sys::SnapBuildState::SNAPBUILD_FULL_SNAPSHOT
            || (*ctx).fast_forward
        {
            return;
        }
        let mut reader = Reader {
            bytes: main_data(record),
        };
        let locator = reader.locator().unwrap_or_else(|f| damaged(lsn, f));
        if locator[1] != u32::from((*(*ctx).slot).data.database) {
            return;
        }
        let origin = (*decoded).record_origin;
        if (*ctx).callbacks.filter_by_origin_cb.is_some()
            && pg_sys::filter_by_origin_cb_wrapper(ctx, origin)
        {
            return;
        }
        if !pg_sys::SnapBuildProcessChange(builder, xid, lsn) {
            return;
        }
        let queue = |action, old: Option<&TupleBytes>, new: Option<&TupleBytes>| {
            let change = crate::compat::reorder_change(rb);
            (*change).action = action;
            (*change).origin_id = origin;
            crate::compat::set_change_locator(change, locator);
            if let Some(t) = old {
                (*change).data.tp.oldtuple = reorder_tuple(rb, t);
            }
            if let Some(t) = new {
                (*change).data.tp.newtuple = reorder_tuple(rb, t);
            }
            (*change).data.tp.clear_toast_afterwards = true;
            pg_sys::ReorderBufferQueueChange(rb, xid, lsn, change, false);
        };
        use pg_sys::ReorderBufferChangeType as Action;
        while let Some(c) = reader.change().unwrap_or_else(|f| damaged(lsn, f)) {
            match c {
                Change::Inserts {
                    rows,
                    unpacked,
                    packed,
                } => {
                    let (bytes, ranges) = unpack_rows(packed, rows, unpacked, UNPACKED_LIMIT)
                        .unwrap_or_else(|e| damaged(lsn, &e.to_string()));
                    for r in ranges {
                        let t = TupleBytes::of_row(&bytes[r]).unwrap_or_else(|f| damaged(lsn, f));
                        queue(Action::REORDER_BUFFER_CHANGE_INSERT, None, Some(&t));
                    }
                }
                Change::Update { old, new } => queue(
                    Action::REORDER_BUFFER_CHANGE_UPDATE,
                    old.as_ref(),
                    Some(&new),
                ),
                Change::Delete { old } => {
                    queue(Action::REORDER_BUFFER_CHANGE_DELETE, old.as_ref(), None)
                }
            }
        }
    }
}

/// A reorder-buffer tuple rebuilt from a record's bytes: a zeroed header with the logged
/// fields, then the data.
///
/// # Safety
///
/// `rb` is the decoding context's reorder buffer, during decoding.
unsafe fn reorder_tuple(
    rb: *mut pg_sys::ReorderBuffer,
    t: &TupleBytes,
) -> crate::compat::ReorderTuple {
    // SAFETY: the buffer has room for a header and `t.data.len()` bytes after it
    // (`reorder_tuple`'s contract), which are written here
    unsafe {
        let (value, tuple) = crate::compat::reorder_tuple(rb, t.data.len());
        (*tuple).t_len = (HEAP_HEADER_LEN + t.data.len()) as u32;
        // an invalid TID (ItemPointerSetInvalid)
        (*tuple).t_self = pg_sys::ItemPointerData {
            ip_blkid: pg_sys::BlockIdData {
                bi_hi: 0xffff,
                bi_lo: 0xffff,
            },
            ip_posid: 0,
        };
        (*tuple).t_tableOid = pg_sys::InvalidOid;
        let header = (*tuple).t_data;
        std::ptr::write_bytes(header as *mut u8, 0, HEAP_HEADER_LEN);
        (*header).t_infomask2 = t.infomask2;
        (*header).t_infomask = t.infomask;
        (*header).t_hoff = t.hoff;
        std::ptr::copy_nonoverlapping(
            t.data.as_ptr(),
            (header as *mut u8).add(HEAP_HEADER_LEN),
            t.data.len(),
        );
        value
    }
}

#[cold]
fn damaged(lsn: pg_sys::XLogRecPtr, fault: &str) -> ! {
    pgrx::error!(
        "pg_columnar: the change record at {:X}/{:X} is damaged: {fault}",
        lsn >> 32,
        lsn & 0xffff_ffff
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tuple's bytes before its data: length, `t_infomask2`, `t_infomask`, `t_hoff`.
    const TUPLE_HEAD_LEN: usize = 4 + 2 + 2 + 1;

    fn tuple(out: &mut Vec<u8>, data: &[u8]) {
        out.extend_from_slice(&(data.len() as u32).to_le_bytes());
        out.extend_from_slice(&3u16.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out.push(HEAP_HEADER_LEN as u8 + 1);
        out.extend_from_slice(data);
    }

    /// Two inserted rows as [`Tuple::row`] writes them, packed.
    fn inserts() -> Vec<u8> {
        let mut packer = RowPacker::new();
        for data in [
            &[0u8, 1, 2, 3, 4, 5, 6, 7, 8][..],
            &[0, 1, 2, 3, 9, 9, 9, 9, 8],
        ] {
            let mut row = vec![3, 0, 0, 0, HEAP_HEADER_LEN as u8 + 1];
            row.extend_from_slice(data);
            packer.push(&row);
        }
        let mut packed = Vec::new();
        let (rows, unpacked) = packer.finish(&mut packed);
        let mut change = vec![KIND_INSERT, 0];
        for n in [rows, unpacked, packed.len()] {
            change.extend_from_slice(&(n as u32).to_le_bytes());
        }
        change.extend_from_slice(&packed);
        change
    }

    /// A record of two inserted rows, an update with its old key and a delete without one.
    fn record() -> (Vec<u8>, usize) {
        let mut r = Vec::new();
        for n in [1663u32, 5, 16384] {
            r.extend_from_slice(&n.to_le_bytes());
        }
        r.extend_from_slice(&inserts());
        let inserts_end = r.len();
        r.extend_from_slice(&[KIND_UPDATE, HAS_OLD | HAS_NEW]);
        tuple(&mut r, &[1, 9, 9, 9]);
        tuple(&mut r, &[0, 1, 2, 3, 4, 5, 6, 7, 8]);
        r.extend_from_slice(&[KIND_DELETE, 0]);
        (r, inserts_end)
    }

    #[test]
    fn a_record_reads_back() {
        let (r, _) = record();
        assert_eq!(counts(&r), Ok(([1663, 5, 16384], [2, 1, 1])));
        // the packed rows come back as the tuples written
        let mut reader = Reader {
            bytes: &r[LOCATOR_LEN..],
        };
        let Ok(Some(Change::Inserts {
            rows,
            unpacked,
            packed,
        })) = reader.change()
        else {
            panic!("no inserts first");
        };
        let (bytes, ranges) = unpack_rows(packed, rows, unpacked, UNPACKED_LIMIT).unwrap();
        let datas: Vec<&[u8]> = ranges
            .into_iter()
            .map(|range| TupleBytes::of_row(&bytes[range]).unwrap().data)
            .collect();
        assert_eq!(
            datas,
            [
                &[0u8, 1, 2, 3, 4, 5, 6, 7, 8][..],
                &[0, 1, 2, 3, 9, 9, 9, 9, 8]
            ]
        );
    }

    #[test]
    fn every_cut_of_a_record_is_an_error_or_a_shorter_record() {
        let (r, inserts_end) = record();
        // cuts between changes read fewer changes; every other cut is an error
        let ends = [
            LOCATOR_LEN,
            inserts_end,
            inserts_end + 2 + 2 * TUPLE_HEAD_LEN + 4 + 9,
        ];
        for cut in 0..r.len() {
            let got = counts(&r[..cut]);
            assert_eq!(got.is_ok(), ends.contains(&cut), "cut {cut}: {got:?}");
        }
    }

    #[test]
    fn damaged_fields_are_errors() {
        let (r, inserts_end) = record();
        let damaged = |at: usize, bytes: &[u8]| {
            let mut d = r.clone();
            d[at..at + bytes.len()].copy_from_slice(bytes);
            counts(&d)
        };
        assert!(damaged(LOCATOR_LEN, &[9]).is_err(), "an unknown kind");
        assert!(
            damaged(LOCATOR_LEN + 1, &[HAS_NEW]).is_err(),
            "inserts with flags"
        );
        assert!(
            damaged(inserts_end + 1, &[HAS_OLD]).is_err(),
            "an update without its new tuple"
        );
        assert!(
            damaged(r.len() - 1, &[HAS_NEW]).is_err(),
            "a delete with a new tuple"
        );
        // a packed length past the record's end
        assert!(damaged(LOCATOR_LEN + 10, &u32::MAX.to_le_bytes()).is_err());
        // a tuple's data length past the record's end, and its t_hoff inside the fixed header
        assert!(damaged(inserts_end + 2, &u32::MAX.to_le_bytes()).is_err());
        assert!(damaged(inserts_end + 2 + 8, &[3]).is_err());
        // a packed row shorter than its header, and one whose t_hoff is past its data
        assert!(TupleBytes::of_row(&[3, 0, 0, 0]).is_err());
        assert!(TupleBytes::of_row(&[3, 0, 0, 0, HEAP_HEADER_LEN as u8 + 2, 7]).is_err());
    }
}

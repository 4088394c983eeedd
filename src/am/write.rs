//! The write path. Rows are buffered per relation in columnar form and written as a stripe
//! when the buffer is full (`pg_columnar.stripe_row_limit` rows, or [`STRIPE_BYTE_LIMIT`]
//! bytes of values), before this backend reads the relation, at the end of every statement
//! (executor end, or utility command end for COPY), and at commit or prepare.
//!
//! Writing at statement end means no rows are buffered when a savepoint or an exception
//! block starts a subtransaction between statements, so every stripe's catalog row belongs
//! to the (sub)transaction that inserted its rows and a rollback to a savepoint takes exactly
//! its own rows. The one case left, a subtransaction started inside a statement that reads
//! the table while the statement's rows are still buffered, is refused with an error rather
//! than risk losing rows. A stripe is encoded by the codec, written as new pages with
//! generic WAL, and published by one catalog row: until that row is committed no other
//! snapshot sees the rows.
//!
//! While a statement goes on inserting, a full buffer is encoded on a helper thread (the
//! codec is pure Rust and touches nothing of PostgreSQL), so on a bulk load encoding one
//! stripe overlaps parsing the next; the backend itself writes the encoded stripe's pages and
//! catalog row before it writes the next stripe of that relation, and at every flush point
//! above. `pg_columnar.encode_in_background = off` encodes in the backend instead.
//!
//! Row numbers (hence TIDs) are handed out at insert time, because the executor inserts index
//! entries right after `tuple_insert` returns. A buffer reserves them from the metapage in
//! chunks that double in size (1, 2, 4, … up to the stripe's remaining room), so a one-row
//! transaction wastes none and a bulk load updates the metapage a few dozen times per stripe.
//! A stripe covers one contiguous range of row numbers: if another writer took the numbers
//! after ours, the buffer is written out and a new stripe starts.

use std::cell::RefCell;

use pg_columnar_codec::stripe::{self, ColumnInput};
use pgrx::pg_sys;

use super::datum::{column_types, ColumnBuffer};
use crate::storage::{self, catalog, meta, pages};

/// Rows per stripe (the setting `pg_columnar.stripe_row_limit`).
pub static STRIPE_ROW_LIMIT: pgrx::GucSetting<i32> = pgrx::GucSetting::<i32>::new(131_072);
/// Encode full stripes on a helper thread (the setting `pg_columnar.encode_in_background`).
pub static ENCODE_IN_BACKGROUND: pgrx::GucSetting<bool> = pgrx::GucSetting::<bool>::new(true);
/// A stripe is written early once its buffered values reach this many bytes, so a load of
/// wide or huge values holds at most about this much (plus one value) in memory.
pub const STRIPE_BYTE_LIMIT: usize = 256 << 20;
/// Largest row-number chunk reserved at once.
const MAX_RESERVATION: u64 = 16_384;

struct WriteBuffer {
    /// Relation, transaction level, command and rows: what the stripe's catalog row needs.
    /// `origin.relfile` is the relation file the rows belong to; a buffer whose relation has
    /// since been given a new file (TRUNCATE, rewrite) is discarded.
    origin: StripeOrigin,
    /// Row numbers reserved: `origin.first_row..reserved_end`.
    reserved_end: u64,
    /// Size of the last reservation (the next one doubles it).
    last_chunk: u64,
    bytes: usize,
    columns: Vec<ColumnBuffer>,
    /// Scratch memory context for detoasted copies, reset after every row.
    scratch: pg_sys::MemoryContext,
}

/// What a stripe's catalog row needs besides the image.
#[derive(Clone, Copy)]
struct StripeOrigin {
    relid: pg_sys::Oid,
    relfile: u32,
    level: i32,
    cid: pg_sys::CommandId,
    storage_id: u64,
    first_row: u64,
    rows: u64,
}

/// A full buffer being encoded on a helper thread.
struct InFlight {
    origin: StripeOrigin,
    handle: std::thread::JoinHandle<Result<Vec<u8>, String>>,
}

thread_local! {
    static BUFFERS: RefCell<Vec<WriteBuffer>> = const { RefCell::new(Vec::new()) };
    static IN_FLIGHT: RefCell<Vec<InFlight>> = const { RefCell::new(Vec::new()) };
}


/// Test-only perturbation (`pg_columnar.gate_ignore_row_period`, superuser): the stripe
/// writer does not look for a row period, which changes encoding decisions. The gate's
/// self-test uses it to prove it notices.
pub static IGNORE_ROW_PERIOD: pgrx::GucSetting<bool> = pgrx::GucSetting::<bool>::new(false);

/// Encodes buffered columns as a stripe image (pure Rust: runs on any thread).
fn encode_columns(columns: &[ColumnBuffer], rows: usize, options: stripe::WriteOptions) -> Result<Vec<u8>, String> {
    let inputs: Vec<ColumnInput> = columns
        .iter()
        .map(|c| ColumnInput { nulls: c.has_nulls.then_some(&c.nulls[..]), values: c.values.as_ref() })
        .collect();
    let mut image = Vec::new();
    stripe::write_stripe_with(&inputs, rows, &options, &mut image).map_err(|e| e.to_string())?;
    Ok(image)
}

fn write_options() -> stripe::WriteOptions {
    stripe::WriteOptions { find_period: !IGNORE_ROW_PERIOD.get() }
}

/// Runs `f` on a new thread with every signal blocked (PostgreSQL's signal handlers must run
/// on the backend's own thread); `None` if no thread can be started.
fn spawn_encoder<F>(f: F) -> Option<std::thread::JoinHandle<Result<Vec<u8>, String>>>
where
    F: FnOnce() -> Result<Vec<u8>, String> + Send + 'static,
{
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_BLOCK, &all, &mut old);
        let handle = std::thread::Builder::new().name("pg_columnar encode".into()).spawn(f);
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        handle.ok()
    }
}

/// Refuses to write rows buffered by an enclosing (sub)transaction from inside a deeper one.
fn check_level(rel: pg_sys::Relation, level: i32) {
    if level < unsafe { pg_sys::GetCurrentTransactionNestLevel() } {
        let name = storage::relation_name(rel);
        pgrx::ereport!(
            ERROR,
            pgrx::PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            format!("pg_columnar: cannot read \"{name}\" inside a subtransaction while the enclosing statement's rows are not yet written"),
            "Insert the rows in a separate statement before the subtransaction reads them."
        );
    }
}

/// Writes an encoded stripe's pages and inserts its catalog row.
fn write_image(rel: pg_sys::Relation, origin: &StripeOrigin, image: &[u8]) {
    let prefix_length = stripe::StripeDirectory::prefix_len(image).expect("a stripe just written parses");
    let first_block = pages::append(rel, image);
    let row = catalog::StripeRow {
        storage_id: origin.storage_id,
        first_row: origin.first_row,
        row_count: origin.rows,
        first_block,
        byte_length: image.len() as u64,
        prefix_length: prefix_length as u64,
        prefix_checksum: xxhash_rust::xxh3::xxh3_64(&image[..prefix_length]),
    };
    catalog::insert(&row, origin.cid);
}

/// Waits for the oldest stripe of `rel` being encoded and writes it; false if there is none.
fn finish_oldest(rel: pg_sys::Relation) -> bool {
    let relid = unsafe { (*rel).rd_id };
    let Some(f) = IN_FLIGHT.with(|v| {
        let mut v = v.borrow_mut();
        let i = v.iter().position(|f| f.origin.relid == relid)?;
        Some(v.remove(i))
    }) else {
        return false;
    };
    let image = match f.handle.join() {
        Ok(Ok(image)) => image,
        Ok(Err(e)) => pgrx::error!("pg_columnar: cannot encode a stripe of \"{}\": {e}", storage::relation_name(rel)),
        Err(_) => pgrx::error!("pg_columnar: encoding a stripe of \"{}\" failed", storage::relation_name(rel)),
    };
    if f.origin.relfile == relfile_of(rel) {
        check_level(rel, f.origin.level);
        write_image(rel, &f.origin, &image);
    }
    true
}

/// Writes every stripe of `rel` being encoded, oldest first (stripes go to disk in row order).
fn finish_in_flight(rel: pg_sys::Relation) {
    while finish_oldest(rel) {}
}

fn in_flight_count(relid: pg_sys::Oid) -> usize {
    IN_FLIGHT.with(|v| v.borrow().iter().filter(|f| f.origin.relid == relid).count())
}

/// Hands a buffer to a helper thread. At most `keep` stripes of the relation stay in flight:
/// the oldest are written (by this backend) while the new one encodes.
fn start_encoding(rel: pg_sys::Relation, w: WriteBuffer, keep: usize) {
    if !ENCODE_IN_BACKGROUND.get() {
        flush_buffer(rel, w);
        return;
    }
    check_level(rel, w.origin.level);
    let origin = w.origin;
    let rows = w.origin.rows as usize;
    unsafe { pg_sys::MemoryContextDelete(w.scratch) };
    let columns = w.columns;
    let options = write_options();
    // the columns move to the thread; if none can be started, encode here
    let shared = std::sync::Arc::new(std::sync::Mutex::new(Some(columns)));
    let for_thread = shared.clone();
    let handle = spawn_encoder(move || {
        let columns = for_thread.lock().map_err(|_| "poisoned".to_string())?.take().ok_or("no columns")?;
        encode_columns(&columns, rows, options)
    });
    match handle {
        Some(handle) => {
            IN_FLIGHT.with(|v| v.borrow_mut().push(InFlight { origin, handle }));
            while in_flight_count(origin.relid) > keep {
                finish_oldest(rel);
            }
        }
        None => {
            finish_in_flight(rel);
            let columns = shared.lock().ok().and_then(|mut c| c.take()).expect("the thread never started");
            let image = encode_columns(&columns, rows, options)
                .unwrap_or_else(|e| pgrx::error!("pg_columnar: cannot encode a stripe of \"{}\": {e}", storage::relation_name(rel)));
            write_image(rel, &origin, &image);
        }
    }
}

fn relfile_of(rel: pg_sys::Relation) -> u32 {
    crate::compat::relfile_number(rel)
}

fn take_buffer(relid: pg_sys::Oid) -> Option<WriteBuffer> {
    BUFFERS.with(|b| {
        let mut b = b.borrow_mut();
        let i = b.iter().position(|w| w.origin.relid == relid)?;
        Some(b.swap_remove(i))
    })
}

fn put_buffer(w: WriteBuffer) {
    BUFFERS.with(|b| b.borrow_mut().push(w));
}

fn free(w: WriteBuffer) {
    if !w.scratch.is_null() {
        unsafe { pg_sys::MemoryContextDelete(w.scratch) };
    }
}

fn stripe_row_limit() -> u64 {
    STRIPE_ROW_LIMIT.get().max(1) as u64
}

fn new_buffer(rel: pg_sys::Relation, cid: pg_sys::CommandId) -> WriteBuffer {
    let columns = column_types(unsafe { (*rel).rd_att }).into_iter().map(ColumnBuffer::new).collect();
    let scratch = unsafe {
        pg_sys::AllocSetContextCreateExtended(
            pg_sys::TopMemoryContext,
            c"pg_columnar write".as_ptr(),
            pg_sys::ALLOCSET_DEFAULT_MINSIZE as usize,
            pg_sys::ALLOCSET_DEFAULT_INITSIZE as usize,
            pg_sys::ALLOCSET_DEFAULT_MAXSIZE as usize,
        )
    };
    WriteBuffer {
        origin: StripeOrigin {
            relid: unsafe { (*rel).rd_id },
            relfile: relfile_of(rel),
            level: unsafe { pg_sys::GetCurrentTransactionNestLevel() },
            cid,
            storage_id: 0,
            first_row: 0,
            rows: 0,
        },
        reserved_end: 0,
        last_chunk: 0,
        bytes: 0,
        columns,
        scratch,
    }
}

/// Makes room for one more row: reserves row numbers if the buffer has none left, writing
/// the buffer out first if it is full or the new numbers do not follow on.
fn prepare_row(rel: pg_sys::Relation, mut w: WriteBuffer, wanted: u64) -> WriteBuffer {
    if w.origin.rows > 0 && (w.origin.rows >= stripe_row_limit() || w.bytes >= STRIPE_BYTE_LIMIT) {
        let cid = w.origin.cid;
        // one stripe encodes while the statement fills the next
        start_encoding(rel, w, 1);
        w = new_buffer(rel, cid);
    }
    if w.origin.first_row + w.origin.rows < w.reserved_end {
        return w;
    }
    let room = stripe_row_limit() - w.origin.rows;
    let chunk = (w.last_chunk * 2).max(wanted).clamp(1, MAX_RESERVATION).min(room).max(1);
    let (m, start) = meta::reserve_rows(rel, chunk);
    if w.origin.rows > 0 && start != w.reserved_end {
        let cid = w.origin.cid;
        flush_buffer(rel, w);
        w = new_buffer(rel, cid);
    }
    if w.origin.rows == 0 {
        w.origin.first_row = start;
        w.origin.storage_id = m.storage_id;
    }
    w.reserved_end = start + chunk;
    w.last_chunk = chunk;
    w
}

/// Buffers the rows of `slots` and sets each slot's TID.
pub fn insert(rel: pg_sys::Relation, slots: &[*mut pg_sys::TupleTableSlot], cid: pg_sys::CommandId) {
    let relid = unsafe { (*rel).rd_id };
    let mut w = match take_buffer(relid) {
        Some(w) if w.origin.relfile == relfile_of(rel) => w,
        Some(stale) => {
            free(stale);
            new_buffer(rel, cid)
        }
        None => new_buffer(rel, cid),
    };
    w.origin.cid = cid;
    let total = slots.len() as u64;
    for (i, &slot) in slots.iter().enumerate() {
        w = prepare_row(rel, w, total - i as u64);
        unsafe {
            pg_sys::slot_getallattrs(slot);
            let old = pg_sys::MemoryContextSwitchTo(w.scratch);
            let natts = w.columns.len();
            let values = std::slice::from_raw_parts((*slot).tts_values, natts);
            let nulls = std::slice::from_raw_parts((*slot).tts_isnull, natts);
            for (c, column) in w.columns.iter_mut().enumerate() {
                w.bytes += column.push(values[c], nulls[c]);
            }
            pg_sys::MemoryContextSwitchTo(old);
            pg_sys::MemoryContextReset(w.scratch);
            (*slot).tts_tid = super::tid::to_tid(w.origin.first_row + w.origin.rows);
            (*slot).tts_tableOid = relid;
        }
        w.origin.rows += 1;
    }
    put_buffer(w);
}

/// Writes the relation's stripe being encoded, then encodes and writes the buffer.
fn flush_buffer(rel: pg_sys::Relation, w: WriteBuffer) {
    finish_in_flight(rel);
    if w.origin.rows == 0 {
        free(w);
        return;
    }
    let origin = w.origin;
    let result = encode_columns(&w.columns, w.origin.rows as usize, write_options());
    free(w);
    check_level(rel, origin.level);
    match result {
        Ok(image) => write_image(rel, &origin, &image),
        Err(e) => pgrx::error!("pg_columnar: cannot encode a stripe of \"{}\": {e}", storage::relation_name(rel)),
    }
}

/// Writes out this backend's buffered rows of `rel`, so a scan of it sees them.
pub fn flush_relation(rel: pg_sys::Relation) {
    match take_buffer(unsafe { (*rel).rd_id }) {
        Some(w) if w.origin.relfile == relfile_of(rel) && w.origin.rows > 0 => {
            // the last stripe encodes beside the one still in flight; then both are written
            start_encoding(rel, w, usize::MAX);
            finish_in_flight(rel);
        }
        Some(stale) => {
            free(stale);
            finish_in_flight(rel);
        }
        None => finish_in_flight(rel),
    }
}

/// Drops this backend's buffered rows of relation `relid` (it is being truncated or dropped).
pub fn discard_relation(relid: pg_sys::Oid) {
    if let Some(w) = take_buffer(relid) {
        free(w);
    }
    // a detached encoder thread finishes on its own and its result is dropped
    IN_FLIGHT.with(|v| v.borrow_mut().retain(|f| f.origin.relid != relid));
}

/// Buffered rows of `rel` not yet written (for size estimates).
pub fn pending_rows(rel: pg_sys::Relation) -> u64 {
    let relid = unsafe { (*rel).rd_id };
    let buffered: u64 = BUFFERS.with(|b| b.borrow().iter().filter(|w| w.origin.relid == relid).map(|w| w.origin.rows).sum());
    let encoding: u64 = IN_FLIGHT.with(|v| v.borrow().iter().filter(|f| f.origin.relid == relid).map(|f| f.origin.rows).sum());
    buffered + encoding
}

/// Whether any rows are buffered.
pub fn any_pending() -> bool {
    BUFFERS.with(|b| !b.borrow().is_empty()) || IN_FLIGHT.with(|v| !v.borrow().is_empty())
}

/// Writes out every buffer and stripe being encoded (statement end, commit, prepare).
pub fn flush_all() {
    loop {
        let next = BUFFERS
            .with(|b| b.borrow().last().map(|w| w.origin.relid))
            .or_else(|| IN_FLIGHT.with(|v| v.borrow().last().map(|f| f.origin.relid)));
        let Some(relid) = next else { break };
        unsafe {
            let rel = pg_sys::try_table_open(relid, pg_sys::NoLock as pg_sys::LOCKMODE);
            if rel.is_null() {
                discard_relation(relid);
                continue;
            }
            flush_relation(rel);
            pg_sys::table_close(rel, pg_sys::NoLock as pg_sys::LOCKMODE);
        }
    }
}

/// Forgets every buffer (transaction abort).
pub fn discard_all() {
    while let Some(w) = BUFFERS.with(|b| b.borrow_mut().pop()) {
        free(w);
    }
    IN_FLIGHT.with(|v| v.borrow_mut().clear());
}

/// A subtransaction ended: its buffers become the parent's (commit) or are dropped (abort).
pub fn end_subtransaction(level: i32, committed: bool) {
    let dropped: Vec<WriteBuffer> = BUFFERS.with(|b| {
        let mut b = b.borrow_mut();
        let mut dropped = Vec::new();
        let mut i = 0;
        while i < b.len() {
            if b[i].origin.level >= level {
                if committed {
                    b[i].origin.level = level - 1;
                    i += 1;
                } else {
                    dropped.push(b.swap_remove(i));
                }
            } else {
                i += 1;
            }
        }
        dropped
    });
    dropped.into_iter().for_each(free);
    IN_FLIGHT.with(|v| {
        let mut v = v.borrow_mut();
        if committed {
            v.iter_mut().filter(|f| f.origin.level >= level).for_each(|f| f.origin.level = level - 1);
        } else {
            v.retain(|f| f.origin.level < level);
        }
    });
}

#[pgrx::pg_guard]
pub unsafe extern "C-unwind" fn xact_callback(event: pg_sys::XactEvent::Type, _arg: *mut std::ffi::c_void) {
    use pg_sys::XactEvent::*;
    match event {
        XACT_EVENT_PRE_COMMIT | XACT_EVENT_PARALLEL_PRE_COMMIT | XACT_EVENT_PRE_PREPARE => flush_all(),
        XACT_EVENT_ABORT | XACT_EVENT_PARALLEL_ABORT | XACT_EVENT_COMMIT | XACT_EVENT_PARALLEL_COMMIT
        | XACT_EVENT_PREPARE => discard_all(),
        _ => {}
    }
}

#[pgrx::pg_guard]
pub unsafe extern "C-unwind" fn subxact_callback(
    event: pg_sys::SubXactEvent::Type,
    _my: pg_sys::SubTransactionId,
    _parent: pg_sys::SubTransactionId,
    _arg: *mut std::ffi::c_void,
) {
    use pg_sys::SubXactEvent::*;
    let level = pg_sys::GetCurrentTransactionNestLevel();
    match event {
        SUBXACT_EVENT_COMMIT_SUB => end_subtransaction(level, true),
        SUBXACT_EVENT_ABORT_SUB => end_subtransaction(level, false),
        _ => {}
    }
}

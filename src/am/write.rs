//! The write path. Rows are buffered per relation and (sub)transaction level in columnar
//! form and written as a stripe when the buffer is full (`pg_columnar.stripe_row_limit` rows,
//! or [`STRIPE_BYTE_LIMIT`] bytes of values), before this backend reads the relation, when
//! the statement that inserted them ends (executor end, or utility command end for COPY),
//! and at commit or prepare.
//!
//! **Subtransactions.** A stripe becomes visible through one catalog row, and that row
//! belongs to the (sub)transaction that inserts it. So rows are buffered per nesting level:
//! a row inserted inside an exception block or savepoint goes to a buffer of that level,
//! never to an enclosing statement's buffer, and a rollback of the level drops exactly its
//! buffers. A buffer is written at its statement's end, at its own level. The one case where
//! a deeper level must write rows of an enclosing one is a read: a function called by an
//! INSERT reads the table inside an exception block, and must see the rows inserted so far.
//! The stripe is then written, and remembered as *written on behalf of* its rows' level
//! ([`Deep`]); if the deeper level rolls back, its catalog row goes with it and is inserted
//! again once the rollback is over ([`ORPHANS`], before anything of this backend reads the
//! table again, and at the latest at statement end or commit). MVCC stays the only
//! visibility rule; the pages were written without a transaction and stay valid.
//!
//! **Nothing is dropped on an error.** A buffer leaves [`BUFFERS`] only as a stripe being
//! written ([`IN_FLIGHT`]), which leaves that list only once its catalog row is inserted: an
//! ERROR caught by an exception block in between leaves the rows queued, to be written
//! later. Buffers and stripes of a level that rolls back are dropped by the subtransaction
//! callback, never by the error itself.
//!
//! While a statement goes on inserting, a full buffer is encoded on a helper thread (the
//! codec is pure Rust and touches nothing of PostgreSQL), so on a bulk load encoding one
//! stripe overlaps parsing the next; the backend itself writes the encoded stripe's pages and
//! catalog row before it writes the next stripe of that relation, and at every flush point
//! above. `pg_columnar.encode_in_background = off` encodes in the backend instead, and so
//! does a stripe of fewer than [`BACKGROUND_MIN_ROWS`] rows (a thread costs more than it).
//!
//! Row numbers (hence TIDs) are handed out at insert time, because the executor inserts index
//! entries right after `tuple_insert` returns. A buffer reserves them from the metapage in
//! chunks that double in size (1, 2, 4, … up to the stripe's remaining room), so a one-row
//! transaction wastes none and a bulk load updates the metapage a few dozen times per stripe.
//! A stripe covers one contiguous range of row numbers: if another writer (or another
//! buffer of this backend) took the numbers after ours, the buffer is written out and a new
//! stripe starts. On a table with a unique index every reservation is also recorded in
//! `pgcol.row_reservation` (`storage::reservations`), so that another session's unique check
//! that meets the index entry of a row still buffered here waits for this transaction.

use std::cell::RefCell;

use pg_columnar_codec::stripe::{self, ColumnInput};
use pgrx::pg_sys;

use super::datum::{column_types, ColumnBuffer};
use crate::storage::{self, catalog, meta, pages, reservations};

/// Rows per stripe (the setting `pg_columnar.stripe_row_limit`).
pub static STRIPE_ROW_LIMIT: pgrx::GucSetting<i32> = pgrx::GucSetting::<i32>::new(131_072);
/// Encode full stripes on a helper thread (the setting `pg_columnar.encode_in_background`).
pub static ENCODE_IN_BACKGROUND: pgrx::GucSetting<bool> = pgrx::GucSetting::<bool>::new(true);
/// A stripe is written early once its buffered values reach this many bytes, so a load of
/// wide or huge values holds at most about this much (plus one value) in memory.
pub(super) const STRIPE_BYTE_LIMIT: usize = 256 << 20;
/// Bytes of buffered values, all relations and levels of this backend together, past which
/// the largest buffer is written early (the setting `pg_columnar.write_buffer_memory`, in
/// kB): a load into many partitions at once would otherwise hold a stripe's worth of rows
/// per partition.
pub static WRITE_BUFFER_MEMORY: pgrx::GucSetting<i32> = pgrx::GucSetting::<i32>::new(128 * 1024);
/// Stripes of fewer rows are encoded in the backend even with `encode_in_background` on.
const BACKGROUND_MIN_ROWS: usize = 4 * pg_columnar_codec::MAX_ROWS;
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
    /// The relation has a unique index or an exclusion constraint: reservations are recorded
    /// in `pgcol.row_reservation`, so other sessions' checks can wait for these rows.
    announce: bool,
    bytes: usize,
    columns: Vec<ColumnBuffer>,
    /// Scratch memory context for detoasted copies, reset after every row; deleted with the
    /// buffer (also when an ERROR unwinds past a buffer being filled).
    scratch: pg_sys::MemoryContext,
}

impl Drop for WriteBuffer {
    fn drop(&mut self) {
        if !self.scratch.is_null() {
            // SAFETY: `scratch` is the buffer's own context (made in `new_buffer`, a child of
            // TopMemoryContext), deleted only here, once
            unsafe { pg_sys::MemoryContextDelete(self.scratch) };
        }
    }
}

/// What a stripe's catalog row needs besides the image.
#[derive(Clone, Copy)]
struct StripeOrigin {
    relid: pg_sys::Oid,
    relfile: u32,
    /// Transaction nesting level the rows belong to.
    level: i32,
    /// The latest command that buffered rows into it: the catalog row is inserted as this
    /// command, so the statements that inserted the rows do not see them, and every later
    /// one does. No statement's snapshot falls between two commands of one buffer: every
    /// read writes the buffer first, and a later command's rows never join a buffer of an
    /// earlier one's (it is written first: [`insert_rows`]). An earlier command's rows may
    /// join a later one's (an enclosing INSERT goes on after a function it called inserted),
    /// and no statement that runs before both have ended reads between them.
    cid: pg_sys::CommandId,
    /// The first command that buffered rows into it (commands only grow, so every row's is
    /// `first_cid..=cid`).
    first_cid: pg_sys::CommandId,
    storage_id: u64,
    first_row: u64,
    rows: u64,
    /// Rows a table rewrite copies: their inserter in the table rewritten
    /// (`catalog::StripeRow::original_xid`).
    original_xid: Option<pg_sys::TransactionId>,
}

enum Image {
    Encoding(std::thread::JoinHandle<Result<Vec<u8>, String>>),
    Encoded(std::rc::Rc<Vec<u8>>),
    /// Taken out while being joined.
    Taken,
}

/// A stripe whose rows left their buffer and whose catalog row is not inserted yet.
struct InFlight {
    id: u64,
    origin: StripeOrigin,
    image: Image,
    /// Bytes of values the stripe's buffer held (counted against
    /// `pg_columnar.write_buffer_memory` until the stripe is written).
    bytes: usize,
}

/// A stripe whose catalog row was inserted by a deeper (sub)transaction (`writer`) than the
/// one its rows belong to (`owner`), because the deeper level read the table.
#[derive(Clone)]
struct Deep {
    relid: pg_sys::Oid,
    relfile: u32,
    row: catalog::StripeRow,
    /// The stripe's zone summary, as its catalog row stores it.
    zones: std::rc::Rc<[u8]>,
    cid: pg_sys::CommandId,
    owner: i32,
    writer: i32,
}

thread_local! {
    static BUFFERS: RefCell<Vec<WriteBuffer>> = const { RefCell::new(Vec::new()) };
    /// Stripes being written, oldest first.
    static IN_FLIGHT: RefCell<Vec<InFlight>> = const { RefCell::new(Vec::new()) };
    static NEXT_ID: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    static DEEP: RefCell<Vec<Deep>> = const { RefCell::new(Vec::new()) };
    /// Catalog rows of stripes this backend has inserted so far (see [`published_stripes`]).
    static PUBLISHED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Stripes of `DEEP` whose writer rolled back while their owner goes on: their catalog
    /// rows must be inserted again.
    static ORPHANS: RefCell<Vec<Deep>> = const { RefCell::new(Vec::new()) };
}

/// Test-only perturbation (`pg_columnar.gate_ignore_row_period`, superuser): the stripe
/// writer does not look for a row period, which changes encoding decisions. The gate's
/// self-test uses it to prove it notices.
pub static IGNORE_ROW_PERIOD: pgrx::GucSetting<bool> = pgrx::GucSetting::<bool>::new(false);

/// Test-only (`pg_columnar.test_row_number_gap`, superuser): every reservation of row numbers
/// first skips this many, so a test reaches row numbers (virtual blocks) of a table of tens of
/// millions of rows with a handful of rows.
pub static ROW_NUMBER_GAP: pgrx::GucSetting<i32> = pgrx::GucSetting::<i32>::new(0);

fn current_level() -> i32 {
    // SAFETY: reads this backend's transaction state; called only inside a transaction
    unsafe { pg_sys::GetCurrentTransactionNestLevel() }
}

/// Encodes buffered columns as a stripe image (pure Rust: runs on any thread).
fn encode_columns(
    columns: &[ColumnBuffer],
    rows: usize,
    options: stripe::WriteOptions,
) -> Result<Vec<u8>, String> {
    let inputs: Vec<ColumnInput> = columns
        .iter()
        .map(|c| ColumnInput {
            nulls: c.has_nulls.then_some(&c.nulls[..]),
            values: c.values.as_ref(),
        })
        .collect();
    let mut image = Vec::new();
    stripe::write_stripe_with(&inputs, rows, &options, &mut image).map_err(|e| e.to_string())?;
    Ok(image)
}

fn write_options(rel: pg_sys::Relation) -> stripe::WriteOptions {
    stripe::WriteOptions {
        find_period: !IGNORE_ROW_PERIOD.get(),
        sort_key: super::options::sort_key(rel),
    }
}

/// Runs `f` on a new thread with every signal blocked (PostgreSQL's signal handlers must run
/// on the backend's own thread); `None` if no thread can be started.
fn spawn_encoder<F>(f: F) -> Option<std::thread::JoinHandle<Result<Vec<u8>, String>>>
where
    F: FnOnce() -> Result<Vec<u8>, String> + Send + 'static,
{
    // SAFETY: sigset_t is plain data, filled by sigfillset before use; the mask changed is
    // this thread's, restored from `old` before the block ends
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_BLOCK, &all, &mut old);
        let handle = std::thread::Builder::new()
            .name("pg_columnar encode".into())
            .spawn(f);
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        handle.ok()
    }
}

fn encode_error(rel: pg_sys::Relation, e: impl std::fmt::Display) -> ! {
    pgrx::error!(
        "pg_columnar: cannot encode a stripe of \"{}\": {e}",
        storage::relation_name(rel)
    )
}

/// The catalog row of stripe image `image` holding rows `first_row..first_row + row_count`
/// of storage `storage_id`, written at `first_block`, and its zone summary.
pub(super) fn catalog_row(
    image: &[u8],
    storage_id: u64,
    first_row: u64,
    row_count: u64,
    first_block: u32,
) -> (catalog::StripeRow, std::rc::Rc<[u8]>) {
    let prefix_length =
        stripe::StripeDirectory::prefix_len(image).expect("a stripe just written parses");
    let dir = stripe::StripeDirectory::parse(&image[..prefix_length])
        .expect("a stripe just written parses");
    let zones: std::rc::Rc<[u8]> = stripe::StripeSummary::of(&dir).to_bytes().into();
    let row = catalog::StripeRow {
        storage_id,
        first_row,
        row_count,
        first_block,
        byte_length: image.len() as u64,
        prefix_length: prefix_length as u64,
        prefix_checksum: xxhash_rust::xxh3::xxh3_64(&image[..prefix_length]),
        xmin: pg_sys::InvalidTransactionId,
        cmin: pg_sys::FirstCommandId,
        running_inserter: None,
        vacuumed: false,
        absent: catalog::Absent::from([]),
        original_xid: None,
    };
    (row, zones)
}

/// Writes an encoded stripe's pages and inserts its catalog row; a stripe written below its
/// rows' level is remembered (see the module comment).
fn write_image(rel: pg_sys::Relation, origin: &StripeOrigin, image: &[u8]) {
    let first_block = pages::append(rel, image);
    let (mut row, zones) = catalog_row(
        image,
        origin.storage_id,
        origin.first_row,
        origin.rows,
        first_block,
    );
    row.cmin = origin.cid;
    row.original_xid = origin.original_xid;
    publish(Deep {
        relid: origin.relid,
        relfile: origin.relfile,
        row,
        zones,
        cid: origin.cid,
        owner: origin.level,
        writer: 0,
    });
    super::ssi::check_insert(rel);
}

/// Rows gathered into a stripe image of a relation outside the insert path (VACUUM's
/// rewrites, `am::vacuum`), encoded in the backend with the relation's options.
pub(super) struct ImageBuilder {
    desc: pg_sys::TupleDesc,
    columns: Vec<ColumnBuffer>,
    rows: usize,
}

impl ImageBuilder {
    pub fn new(rel: pg_sys::Relation) -> ImageBuilder {
        // SAFETY: `rel` is an open relation of the caller's (a safe fn over a raw pointer: not
        // checked); its descriptor lives while it is open, as the builder does
        let desc = unsafe { (*rel).rd_att };
        ImageBuilder {
            desc,
            columns: column_types(desc)
                .into_iter()
                .map(ColumnBuffer::new)
                .collect(),
            rows: 0,
        }
    }

    /// Appends the row `tuple` (of the relation's row type). Detoasted copies are made in the
    /// current memory context.
    ///
    /// # Safety
    /// `tuple` must be a valid heap tuple of the relation's descriptor.
    pub(super) unsafe fn push_tuple(&mut self, tuple: pg_sys::HeapTuple) {
        let natts = self.columns.len();
        let mut values = vec![pg_sys::Datum::from(0); natts];
        let mut nulls = vec![true; natts];
        // SAFETY: `tuple` is a heap tuple of `desc` (this function's contract), whose `natts`
        // attributes fill the two arrays of that length; each value is then of its column's
        // type, as `push` wants
        unsafe {
            pg_sys::heap_deform_tuple(tuple, self.desc, values.as_mut_ptr(), nulls.as_mut_ptr());
            for (c, column) in self.columns.iter_mut().enumerate() {
                column.push(values[c], nulls[c]);
            }
        }
        self.rows += 1;
    }

    pub fn encode(self, rel: pg_sys::Relation) -> Vec<u8> {
        encode_columns(&self.columns, self.rows, write_options(rel))
            .unwrap_or_else(|e| encode_error(rel, e))
    }
}

/// Inserts the catalog row of `stripe` as the current (sub)transaction, and remembers it if
/// that is deeper than the level its rows belong to.
fn publish(mut stripe: Deep) {
    catalog::insert(&stripe.row, Some(&stripe.zones), stripe.cid);
    PUBLISHED.with(|p| p.set(p.get() + 1));
    stripe.writer = current_level();
    if stripe.owner < stripe.writer {
        DEEP.with(|d| d.borrow_mut().push(stripe));
    }
}

/// Inserts again the catalog rows of `rel`'s stripes whose writer rolled back.
fn publish_orphans(rel: pg_sys::Relation) {
    // SAFETY: `rel` is an open relation of the caller's (a safe fn over a raw pointer:
    // not checked)
    let relid = unsafe { (*rel).rd_id };
    let relfile = relfile_of(rel);
    loop {
        let Some(orphan) = ORPHANS.with(|o| o.borrow().iter().find(|x| x.relid == relid).cloned())
        else {
            break;
        };
        let first_row = orphan.row.first_row;
        if orphan.relfile == relfile {
            publish(orphan);
        }
        // removed only once its row is in: an ERROR above leaves it to be published later
        ORPHANS.with(|o| {
            let mut o = o.borrow_mut();
            if let Some(i) = o
                .iter()
                .position(|x| x.relid == relid && x.row.first_row == first_row)
            {
                o.remove(i);
            }
        });
    }
}

/// Writes the oldest stripe of `rel` that `matches` (waiting for its encoding); false if
/// there is none.
fn write_oldest(rel: pg_sys::Relation, matches: &dyn Fn(&StripeOrigin) -> bool) -> bool {
    // SAFETY: `rel` is an open relation of the caller's (a safe fn over a raw pointer:
    // not checked)
    let relid = unsafe { (*rel).rd_id };
    let Some((id, origin, image)) = IN_FLIGHT.with(|v| {
        let mut v = v.borrow_mut();
        let f = v
            .iter_mut()
            .find(|f| f.origin.relid == relid && matches(&f.origin))?;
        Some((
            f.id,
            f.origin,
            std::mem::replace(&mut f.image, Image::Taken),
        ))
    }) else {
        return false;
    };
    let remove = || IN_FLIGHT.with(|v| v.borrow_mut().retain(|f| f.id != id));
    let image = match image {
        Image::Encoded(image) => image,
        Image::Encoding(handle) => match handle.join() {
            Ok(Ok(image)) => std::rc::Rc::new(image),
            Ok(Err(e)) => {
                remove();
                encode_error(rel, e)
            }
            Err(_) => {
                remove();
                encode_error(rel, "the encoder thread failed")
            }
        },
        Image::Taken => unreachable!("a stripe is written by one caller at a time"),
    };
    if origin.relfile != relfile_of(rel) {
        remove();
        return true;
    }
    // put the image back, so that an ERROR while writing leaves the stripe queued
    IN_FLIGHT.with(|v| {
        if let Some(f) = v.borrow_mut().iter_mut().find(|f| f.id == id) {
            f.image = Image::Encoded(image.clone());
        }
    });
    write_image(rel, &origin, &image);
    remove();
    true
}

fn in_flight_count(relid: pg_sys::Oid) -> usize {
    IN_FLIGHT.with(|v| {
        v.borrow()
            .iter()
            .filter(|f| f.origin.relid == relid)
            .count()
    })
}

/// Turns a buffer into a stripe being written: encoding starts on a helper thread (or here).
/// At most `keep` stripes of the relation stay in flight: the oldest are written (by this
/// backend) while the new one encodes.
fn queue_stripe(rel: pg_sys::Relation, mut w: WriteBuffer, keep: usize) {
    if w.origin.rows == 0 {
        return;
    }
    let origin = w.origin;
    let bytes = w.bytes;
    let rows = origin.rows as usize;
    let columns = std::mem::take(&mut w.columns);
    drop(w);
    let options = write_options(rel);
    encoding_memory_available(bytes);
    // a small stripe is encoded here: starting a thread costs more than encoding it (a
    // single-row INSERT's stripe spent most of its time creating and switching to a thread)
    let image = if ENCODE_IN_BACKGROUND.get() && rows >= BACKGROUND_MIN_ROWS {
        // the columns move to the thread; if none can be started, encode here
        let shared = std::sync::Arc::new(std::sync::Mutex::new(Some(columns)));
        let for_thread = shared.clone();
        let thread_options = options.clone();
        let handle = spawn_encoder(move || {
            let columns = for_thread
                .lock()
                .map_err(|_| "poisoned".to_string())?
                .take()
                .ok_or("no columns")?;
            encode_columns(&columns, rows, thread_options)
        });
        match handle {
            Some(handle) => Image::Encoding(handle),
            None => {
                let columns = shared
                    .lock()
                    .ok()
                    .and_then(|mut c| c.take())
                    .expect("the thread never started");
                Image::Encoded(std::rc::Rc::new(
                    encode_columns(&columns, rows, options)
                        .unwrap_or_else(|e| encode_error(rel, e)),
                ))
            }
        }
    } else {
        Image::Encoded(std::rc::Rc::new(
            encode_columns(&columns, rows, options).unwrap_or_else(|e| encode_error(rel, e)),
        ))
    };
    let id = NEXT_ID.with(|n| {
        n.set(n.get() + 1);
        n.get()
    });
    IN_FLIGHT.with(|v| {
        v.borrow_mut().push(InFlight {
            id,
            origin,
            image,
            bytes,
        })
    });
    while in_flight_count(origin.relid) > keep {
        write_oldest(rel, &|_| true);
    }
}

/// Raises PostgreSQL's "out of memory" ERROR unless the memory that encoding a stripe of
/// `bytes` bytes of values may take (twice that: the image and one column's working copies)
/// can be allocated now. The codec's own allocations are not fallible, and one that fails
/// aborts the process (on the helper thread too), so the backend asks first; under strict
/// overcommit (`vm.overcommit_memory = 2`, as PostgreSQL's documentation advises) or an
/// address-space limit that is where an allocation fails. Memory taken by others between
/// the question and the encoding can still make it fail.
fn encoding_memory_available(bytes: usize) {
    let want = bytes.saturating_mul(2).saturating_add(1 << 20);
    let mut probe: Vec<u8> = Vec::new();
    if probe.try_reserve_exact(want).is_err() {
        storage::out_of_memory(want, "to encode a stripe");
    }
    // the allocation itself is the question: kept from being optimised away
    std::hint::black_box(&mut probe);
}

fn relfile_of(rel: pg_sys::Relation) -> u32 {
    crate::compat::relfile_number(rel)
}

/// Takes the first buffer of `relid` that `matches` out of the list.
fn take_buffer(relid: pg_sys::Oid, matches: &dyn Fn(&StripeOrigin) -> bool) -> Option<WriteBuffer> {
    BUFFERS.with(|b| {
        let mut b = b.borrow_mut();
        let i = b
            .iter()
            .position(|w| w.origin.relid == relid && matches(&w.origin))?;
        Some(b.remove(i))
    })
}

fn put_buffer(w: WriteBuffer) {
    BUFFERS.with(|b| b.borrow_mut().push(w));
}

pub fn stripe_row_limit() -> u64 {
    STRIPE_ROW_LIMIT.get().max(1) as u64
}

/// Whether `rel` has a unique index (other sessions' checks of it must find the rows this
/// backend holds in memory: `storage::reservations`), and whether it has an exclusion
/// constraint's index (whose checks compare those rows' values: `fetch::fetch_dirty`).
pub(super) fn constraint_indexes(rel: pg_sys::Relation) -> (bool, bool) {
    let (mut unique, mut exclusion) = (false, false);
    // SAFETY: `rel` is an open relation of the caller's (not checked by this safe fn); each
    // index is opened (non-null: it exists) and closed here
    unsafe {
        if !(*(*rel).rd_rel).relhasindex {
            return (false, false);
        }
        let list = pgrx::PgList::<pg_sys::Oid>::from_pg(pg_sys::RelationGetIndexList(rel));
        for oid in list.iter_oid() {
            // the executor holds the table's indexes open and locked while it inserts
            let index = pg_sys::RelationIdGetRelation(oid);
            if index.is_null() {
                continue;
            }
            unique |= (*(*index).rd_index).indisunique;
            exclusion |= (*(*index).rd_index).indisexclusion;
            pg_sys::RelationClose(index);
        }
    }
    (unique, exclusion)
}

fn new_buffer(
    rel: pg_sys::Relation,
    cid: pg_sys::CommandId,
    original_xid: Option<pg_sys::TransactionId>,
) -> WriteBuffer {
    // SAFETY: `rel` is the open relation being inserted into (every caller's, not checked)
    let columns = column_types(unsafe { (*rel).rd_att })
        .into_iter()
        .map(ColumnBuffer::new)
        .collect();
    let (unique, exclusion) = constraint_indexes(rel);
    // SAFETY: a new context under TopMemoryContext with a static name; the buffer deletes it
    // (`WriteBuffer::drop`)
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
            // SAFETY: `rel` is open, as above
            relid: unsafe { (*rel).rd_id },
            relfile: relfile_of(rel),
            level: current_level(),
            cid,
            first_cid: cid,
            storage_id: 0,
            first_row: 0,
            rows: 0,
            original_xid,
        },
        reserved_end: 0,
        last_chunk: 0,
        announce: unique || exclusion,
        bytes: 0,
        columns,
        scratch,
    }
}

/// Makes room for one more row: reserves row numbers if the buffer has none left, writing
/// the buffer out first if it is full or the new numbers do not follow on.
fn prepare_row(rel: pg_sys::Relation, mut w: WriteBuffer, wanted: u64) -> WriteBuffer {
    let original_xid = w.origin.original_xid;
    if w.origin.rows > 0 && (w.origin.rows >= stripe_row_limit() || w.bytes >= STRIPE_BYTE_LIMIT) {
        let cid = w.origin.cid;
        // one stripe encodes while the statement fills the next
        queue_stripe(rel, w, 1);
        w = new_buffer(rel, cid, original_xid);
    }
    if w.origin.first_row + w.origin.rows < w.reserved_end {
        return w;
    }
    let room = stripe_row_limit() - w.origin.rows;
    let chunk = (w.last_chunk * 2)
        .max(wanted)
        .clamp(1, MAX_RESERVATION)
        .min(room)
        .max(1);
    if ROW_NUMBER_GAP.get() > 0 {
        meta::reserve_rows(rel, ROW_NUMBER_GAP.get() as u64);
    }
    let (m, start) = meta::reserve_rows(rel, chunk);
    if w.announce {
        reservations::insert(m.storage_id, start, chunk, w.origin.cid);
    }
    if w.origin.rows > 0 && start != w.reserved_end {
        let cid = w.origin.cid;
        queue_stripe(rel, w, 1);
        w = new_buffer(rel, cid, original_xid);
    }
    if w.origin.rows == 0 {
        w.origin.first_row = start;
        w.origin.storage_id = m.storage_id;
    }
    w.reserved_end = start + chunk;
    w.last_chunk = chunk;
    w
}

/// Buffers the rows of `slots` and sets each slot's TID. The rows go to the relation's buffer
/// of the current transaction level (a new one if there is none). (A buffer keeps what it
/// learned of the table's indexes when it was made: an index created since, in this
/// transaction, holds a lock that keeps other sessions' inserts, hence their checks, out
/// until it ends; a concurrent build lists its index, unique or not, before it waits for
/// every transaction that had the table open, and those buffers go with them.)
pub fn insert(
    rel: pg_sys::Relation,
    slots: &[*mut pg_sys::TupleTableSlot],
    cid: pg_sys::CommandId,
) {
    insert_rows(rel, slots, cid, None);
}

/// [`insert`] of the row of `slot` that a table rewrite copies into its new relation `rel`,
/// inserted in the table rewritten by `original` (FrozenTransactionId: a row every snapshot
/// saw): its stripe records that (`catalog::StripeRow::original_xid`), and holds no rows of
/// another original transaction.
pub fn insert_copy(
    rel: pg_sys::Relation,
    slot: *mut pg_sys::TupleTableSlot,
    cid: pg_sys::CommandId,
    original: pg_sys::TransactionId,
) {
    insert_rows(rel, &[slot], cid, Some(original));
}

fn insert_rows(
    rel: pg_sys::Relation,
    slots: &[*mut pg_sys::TupleTableSlot],
    cid: pg_sys::CommandId,
    original_xid: Option<pg_sys::TransactionId>,
) {
    // SAFETY: `rel` is an open relation of the caller's (a safe fn over a raw pointer:
    // not checked)
    let relid = unsafe { (*rel).rd_id };
    let level = current_level();
    let relfile = relfile_of(rel);
    // buffers of a file the relation no longer has are dropped
    BUFFERS.with(|b| {
        b.borrow_mut()
            .retain(|w| w.origin.relid != relid || w.origin.relfile == relfile)
    });
    let mut w = match take_buffer(relid, &|o| o.level == level) {
        Some(w)
            if w.origin.original_xid == original_xid
                && (w.origin.rows == 0 || cid <= w.origin.cid) =>
        {
            w
        }
        other => {
            // a buffer of rows of another original transaction becomes a stripe of its own,
            // and so does one of an earlier command's rows: a statement nested in that
            // command (a function it calls) that inserts and then reads the table must see
            // them, and a stripe is visible from the command after its own
            if let Some(other) = other {
                queue_stripe(rel, other, usize::MAX);
            }
            new_buffer(rel, cid, original_xid)
        }
    };
    w.origin.cid = w.origin.cid.max(cid);
    let total = slots.len() as u64;
    for (i, &slot) in slots.iter().enumerate() {
        w = prepare_row(rel, w, total - i as u64);
        w.origin.cid = w.origin.cid.max(cid);
        // SAFETY: each of `slots` is a valid slot of `rel` holding a row (the callers'); the
        // buffer has a column per attribute; the scratch context is switched back and reset
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
            (*slot).tts_tid = crate::storage::tid::to_tid(w.origin.first_row + w.origin.rows);
            (*slot).tts_tableOid = relid;
            // for RETURNING xmin, cmin, xmax (a heap tuple just inserted has them)
            super::slot::set_origin(slot, pg_sys::GetCurrentTransactionId(), cid);
            super::slot::set_xmax(slot, pg_sys::InvalidTransactionId);
        }
        w.origin.rows += 1;
    }
    put_buffer(w);
    keep_within_memory();
}

/// Bytes of values this backend holds for rows not yet written: in buffers, and in stripes
/// being encoded or waiting for their pages.
fn buffered_bytes() -> usize {
    BUFFERS.with(|b| b.borrow().iter().map(|w| w.bytes).sum::<usize>())
        + IN_FLIGHT.with(|v| v.borrow().iter().map(|f| f.bytes).sum::<usize>())
}

/// Writes stripes early while the rows held in memory pass `pg_columnar.write_buffer_memory`:
/// first the stripes being encoded (waiting for them), then the largest buffer, of whatever
/// relation. A buffer written early becomes a stripe as a full one does.
fn keep_within_memory() {
    let budget = (WRITE_BUFFER_MEMORY.get().max(1) as usize).saturating_mul(1024);
    while buffered_bytes() > budget {
        let in_flight = IN_FLIGHT.with(|v| v.borrow().first().map(|f| f.origin.relid));
        let largest = || {
            BUFFERS.with(|b| {
                b.borrow()
                    .iter()
                    .filter(|w| w.origin.rows > 0)
                    .max_by_key(|w| w.bytes)
                    .map(|w| (w.origin.relid, w.origin.level))
            })
        };
        let wrote = match (in_flight, largest()) {
            (Some(relid), _) => with_relation(relid, |rel| {
                write_oldest(rel, &|_| true);
            }),
            (None, Some((relid, level))) => with_relation(relid, |rel| {
                if let Some(w) = take_buffer(relid, &|o| o.level == level) {
                    queue_stripe(rel, w, 0);
                }
            }),
            (None, None) => break,
        };
        if !wrote {
            discard_relation(
                in_flight
                    .or(largest().map(|l| l.0))
                    .expect("a relation was chosen"),
            );
        }
    }
}

/// Runs `f` with relation `relid` open (its writer holds its lock); false if it is gone.
fn with_relation(relid: pg_sys::Oid, f: impl FnOnce(pg_sys::Relation)) -> bool {
    // SAFETY: the relation is used only between its open (non-null: it exists) and its
    // close here; the lock its writer holds keeps it from being dropped meanwhile
    unsafe {
        let rel = pg_sys::try_table_open(relid, pg_sys::NoLock as pg_sys::LOCKMODE);
        if rel.is_null() {
            return false;
        }
        f(rel);
        pg_sys::table_close(rel, pg_sys::NoLock as pg_sys::LOCKMODE);
        true
    }
}

/// Writes this backend's rows of `rel` that `matches`: buffers become stripes, and stripes in
/// flight are written, oldest first. Orphaned catalog rows of `rel` are inserted again first.
fn write_relation(rel: pg_sys::Relation, matches: &dyn Fn(&StripeOrigin) -> bool) {
    publish_orphans(rel);
    // SAFETY: `rel` is an open relation of the caller's (a safe fn over a raw pointer:
    // not checked)
    let relid = unsafe { (*rel).rd_id };
    let relfile = relfile_of(rel);
    while let Some(w) = take_buffer(relid, matches) {
        if w.origin.relfile == relfile {
            // the last stripes encode beside the ones still in flight; then all are written
            queue_stripe(rel, w, usize::MAX);
        }
    }
    while write_oldest(rel, matches) {}
}

/// Writes out this backend's buffered rows of `rel`, whatever their level, so a scan of it
/// sees them.
pub fn flush_relation(rel: pg_sys::Relation) {
    write_relation(rel, &|_| true);
}

/// Counts the stripes this backend has made visible (inserted a catalog row for), in any
/// relation: a cached list of a relation's stripes under a fixed snapshot is complete while
/// this count stays the same, since other transactions' stripes that such a snapshot sees
/// were all there when it was taken.
pub(super) fn published_stripes() -> u64 {
    PUBLISHED.with(|p| p.get())
}

/// Writes out this backend's rows of `rel` that a read under `snapshot` must see: under an
/// MVCC snapshot, those buffered by commands before the snapshot's (rows of its own command
/// and later ones stay buffered: it cannot see them, and a nested loop that scans a table
/// it updates would otherwise write a stripe per outer row); under any other kind, all.
pub(super) fn flush_for_snapshot(rel: pg_sys::Relation, snapshot: pg_sys::Snapshot) {
    // SAFETY: `snapshot` is a valid snapshot of the caller's (a safe fn over a raw pointer:
    // not checked)
    unsafe {
        if (*snapshot).snapshot_type == pg_sys::SnapshotType::SNAPSHOT_MVCC {
            let curcid = (*snapshot).curcid;
            write_relation(rel, &|o| o.first_cid < curcid);
        } else {
            flush_relation(rel);
        }
    }
}

/// Drops this backend's buffered rows of relation `relid` (it is being truncated or dropped).
pub(super) fn discard_relation(relid: pg_sys::Oid) {
    BUFFERS.with(|b| b.borrow_mut().retain(|w| w.origin.relid != relid));
    // a detached encoder thread finishes on its own and its result is dropped
    IN_FLIGHT.with(|v| v.borrow_mut().retain(|f| f.origin.relid != relid));
    DEEP.with(|d| d.borrow_mut().retain(|x| x.relid != relid));
    ORPHANS.with(|o| o.borrow_mut().retain(|x| x.relid != relid));
}

/// Writes out this backend's unwritten rows of `rel` (buffered, being encoded, or waiting for
/// their catalog row) if row `row` is among them, so a fetch of it finds it; true if it did.
pub(super) fn flush_if_holding(rel: pg_sys::Relation, row: u64) -> bool {
    let holds = holds_row(rel, row);
    if holds {
        flush_relation(rel);
    }
    holds
}

/// Stores in `slot` the values of row `row` of `rel` if it is in one of this backend's
/// buffers; false otherwise. The row is this transaction's, inserted by command `cid` of the
/// buffer or before. A unique or exclusion check that meets a row of this statement (a batch
/// with duplicates, `ON CONFLICT DO NOTHING`; every row's exclusion check meets the row
/// itself) reads it here instead of writing the buffer out as a stripe per duplicate.
///
/// # Safety
/// `slot` must be a valid slot of `rel`'s descriptor.
pub(super) unsafe fn read_buffered(
    rel: pg_sys::Relation,
    row: u64,
    slot: *mut pg_sys::TupleTableSlot,
) -> bool {
    // SAFETY: `rel` is an open relation (this function's contract: `slot` is one of its)
    let relid = unsafe { (*rel).rd_id };
    BUFFERS.with(|b| {
        let buffers = b.borrow();
        let Some(w) = buffers.iter().find(|w| {
            w.origin.relid == relid
                && w.origin.first_row <= row
                && row < w.origin.first_row + w.origin.rows
        }) else {
            return false;
        };
        let at = (row - w.origin.first_row) as usize;
        // SAFETY: `slot` is a valid slot of `rel`'s descriptor (this function's contract),
        // with a value per column of the buffer; `at` is below the buffer's row count (found
        // above); the scratch context is switched back before the copy into the slot's memory
        unsafe {
            pg_sys::ExecClearTuple(slot);
            // by-reference values are copied into the scratch context, then into the slot's own
            // memory by materialize; the first copies go with the reset
            let old = pg_sys::MemoryContextSwitchTo(w.scratch);
            for (c, column) in w.columns.iter().enumerate() {
                let value = column.datum_at(at);
                *(*slot).tts_values.add(c) = value.unwrap_or(pg_sys::Datum::from(0));
                *(*slot).tts_isnull.add(c) = value.is_none();
            }
            pg_sys::MemoryContextSwitchTo(old);
            pg_sys::ExecStoreVirtualTuple(slot);
            super::slot::own_values(slot);
            pg_sys::MemoryContextReset(w.scratch);
            (*slot).tts_tid = crate::storage::tid::to_tid(row);
            (*slot).tts_tableOid = relid;
            super::slot::set_origin(slot, pg_sys::GetCurrentTransactionIdIfAny(), w.origin.cid);
        }
        true
    })
}

/// Whether row `row` of `rel` is among this backend's rows not yet written.
fn holds_row(rel: pg_sys::Relation, row: u64) -> bool {
    // SAFETY: `rel` is an open relation of the caller's (a safe fn over a raw pointer:
    // not checked)
    let relid = unsafe { (*rel).rd_id };
    let within = |first: u64, count: u64| first <= row && row < first + count;
    BUFFERS.with(|b| {
        b.borrow()
            .iter()
            .any(|w| w.origin.relid == relid && within(w.origin.first_row, w.origin.rows))
    }) || IN_FLIGHT.with(|v| {
        v.borrow()
            .iter()
            .any(|f| f.origin.relid == relid && within(f.origin.first_row, f.origin.rows))
    }) || ORPHANS.with(|o| {
        o.borrow()
            .iter()
            .any(|x| x.relid == relid && within(x.row.first_row, x.row.row_count))
    })
}

/// Buffered rows of `rel` not yet written (for size estimates).
pub(super) fn pending_rows(rel: pg_sys::Relation) -> u64 {
    // SAFETY: `rel` is an open relation of the caller's (a safe fn over a raw pointer:
    // not checked)
    let relid = unsafe { (*rel).rd_id };
    let buffered: u64 = BUFFERS.with(|b| {
        b.borrow()
            .iter()
            .filter(|w| w.origin.relid == relid)
            .map(|w| w.origin.rows)
            .sum()
    });
    let encoding: u64 = IN_FLIGHT.with(|v| {
        v.borrow()
            .iter()
            .filter(|f| f.origin.relid == relid)
            .map(|f| f.origin.rows)
            .sum()
    });
    let orphaned: u64 = ORPHANS.with(|o| {
        o.borrow()
            .iter()
            .filter(|x| x.relid == relid)
            .map(|x| x.row.row_count)
            .sum()
    });
    buffered + encoding + orphaned
}

/// Whether any rows are buffered or waiting for a catalog row.
pub fn any_pending() -> bool {
    BUFFERS.with(|b| !b.borrow().is_empty())
        || IN_FLIGHT.with(|v| !v.borrow().is_empty())
        || ORPHANS.with(|o| !o.borrow().is_empty())
}

/// The next relation with rows that `matches` (or orphaned catalog rows).
fn next_relation(matches: &dyn Fn(&StripeOrigin) -> bool) -> Option<pg_sys::Oid> {
    BUFFERS
        .with(|b| {
            b.borrow()
                .iter()
                .find(|w| matches(&w.origin))
                .map(|w| w.origin.relid)
        })
        .or_else(|| {
            IN_FLIGHT.with(|v| {
                v.borrow()
                    .iter()
                    .find(|f| matches(&f.origin))
                    .map(|f| f.origin.relid)
            })
        })
        .or_else(|| ORPHANS.with(|o| o.borrow().first().map(|x| x.relid)))
}

/// Writes every relation's rows that `matches`.
fn write_matching(matches: &dyn Fn(&StripeOrigin) -> bool) {
    while let Some(relid) = next_relation(matches) {
        if !with_relation(relid, |rel| write_relation(rel, matches)) {
            discard_relation(relid);
        }
    }
}

/// Writes out every buffer and stripe being encoded (commit, prepare).
pub(super) fn flush_all() {
    write_matching(&|_| true);
}

/// A statement that started at command `first_cid` ended: writes the rows it (or anything it
/// called at its level or deeper) buffered. Rows of an enclosing statement, which has a lower
/// command id, or of an enclosing transaction level, stay buffered until that statement ends.
pub fn flush_statement(first_cid: pg_sys::CommandId) {
    let level = current_level();
    write_matching(&|o| o.level >= level && o.cid >= first_cid);
}

/// Forgets every buffer (transaction end).
pub(super) fn discard_all() {
    BUFFERS.with(|b| b.borrow_mut().clear());
    IN_FLIGHT.with(|v| v.borrow_mut().clear());
    DEEP.with(|d| d.borrow_mut().clear());
    ORPHANS.with(|o| o.borrow_mut().clear());
}

/// A subtransaction at `level` ended: its buffers and stripes become the parent's (commit) or
/// are dropped (abort); stripes it wrote for an enclosing level are orphaned on abort.
pub(super) fn end_subtransaction(level: i32, committed: bool) {
    let parent = level - 1;
    if committed {
        BUFFERS.with(|b| {
            b.borrow_mut()
                .iter_mut()
                .filter(|w| w.origin.level >= level)
                .for_each(|w| w.origin.level = parent)
        });
        IN_FLIGHT.with(|v| {
            v.borrow_mut()
                .iter_mut()
                .filter(|f| f.origin.level >= level)
                .for_each(|f| f.origin.level = parent)
        });
        DEEP.with(|d| {
            let mut d = d.borrow_mut();
            for x in d.iter_mut() {
                x.writer = x.writer.min(parent);
                x.owner = x.owner.min(parent);
            }
            d.retain(|x| x.owner < x.writer);
        });
        ORPHANS.with(|o| {
            o.borrow_mut()
                .iter_mut()
                .for_each(|x| x.owner = x.owner.min(parent))
        });
    } else {
        BUFFERS.with(|b| b.borrow_mut().retain(|w| w.origin.level < level));
        IN_FLIGHT.with(|v| v.borrow_mut().retain(|f| f.origin.level < level));
        ORPHANS.with(|o| o.borrow_mut().retain(|x| x.owner < level));
        let orphaned: Vec<Deep> = DEEP.with(|d| {
            let mut d = d.borrow_mut();
            let (gone, kept): (Vec<Deep>, Vec<Deep>) = d.drain(..).partition(|x| x.writer >= level);
            *d = kept;
            gone.into_iter().filter(|x| x.owner < level).collect()
        });
        ORPHANS.with(|o| o.borrow_mut().extend(orphaned));
    }
}

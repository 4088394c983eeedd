//! The metapage: block 0 of the main fork. It is written by the first stripe write, so a
//! relation with no blocks is an empty table (a new, truncated, or crash-reset unlogged
//! table) and needs no catalog rows. A block 0 that is new (all zeros: the file was extended
//! and a crash, or a concurrent first writer, left it uninitialised) is the same: no
//! metapage yet. The first writer initialises it under the buffer's exclusive lock.
//!
//! Layout after the standard page header, little-endian: `magic u32 = "PGCM"`,
//! `storage_version u32`, `storage_id u64` (unique across the cluster's history, from the
//! sequence `pgcol.storage_id_seq`, so catalog rows of a dropped or truncated storage can
//! never be mistaken for a new one's), `next_row u64` (row numbers handed out so far),
//! `checksum u32` (low 32 bits of xxh3-64 of the 24 bytes before it).

use pgrx::pg_sys;

use super::pages::{BLCKSZ, PAGE_HEADER};
use super::{corrupt, relation_name};

const MAGIC: [u8; 4] = *b"PGCM";
/// Version of the storage layout (pages, metapage, catalog rows). A reader refuses others.
pub(super) const STORAGE_VERSION: u32 = 1;
const FIELDS_LEN: usize = 4 + 4 + 8 + 8;
const META_LEN: usize = FIELDS_LEN + 4;
const NEXT_ROW_AT: usize = PAGE_HEADER + 16;

/// Writes the checksum of the metapage fields in `page`.
fn seal(page: &mut [u8]) {
    let sum = pg_columnar_codec::stripe::checksum32(&page[PAGE_HEADER..PAGE_HEADER + FIELDS_LEN]);
    page[PAGE_HEADER + FIELDS_LEN..PAGE_HEADER + META_LEN].copy_from_slice(&sum.to_le_bytes());
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    pub storage_id: u64,
    pub next_row: u64,
}

/// Why block 0 cannot be used.
enum MetaError {
    Corrupt(&'static str),
    Version(u32),
}

fn parse(page: &[u8]) -> Result<Meta, MetaError> {
    let b = &page[PAGE_HEADER..PAGE_HEADER + META_LEN];
    if b[0..4] != MAGIC {
        return Err(MetaError::Corrupt("block 0 is not a pg_columnar metapage"));
    }
    let sum = u32::from_le_bytes(b[FIELDS_LEN..META_LEN].try_into().unwrap());
    if pg_columnar_codec::stripe::checksum32(&b[..FIELDS_LEN]) != sum {
        return Err(MetaError::Corrupt("metapage checksum mismatch"));
    }
    let version = u32::from_le_bytes(b[4..8].try_into().unwrap());
    if version != STORAGE_VERSION {
        return Err(MetaError::Version(version));
    }
    Ok(Meta {
        storage_id: u64::from_le_bytes(b[8..16].try_into().unwrap()),
        next_row: u64::from_le_bytes(b[16..24].try_into().unwrap()),
    })
}

fn raise(rel: pg_sys::Relation, e: MetaError) -> ! {
    match e {
        MetaError::Corrupt(what) => corrupt(rel, what),
        MetaError::Version(version) => {
            pgrx::ereport!(
                ERROR,
                pgrx::PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
                format!(
                    "pg_columnar relation \"{}\" has storage format version {version}; this build reads version {STORAGE_VERSION}",
                    relation_name(rel)
                )
            );
        }
    }
}

/// The bytes of `buffer`'s page.
///
/// # Safety
///
/// `buffer` must be a valid buffer this backend has pinned and content-locked; the slice may
/// be used only while both are held (whatever `'a` the caller picks), and written only under
/// the exclusive lock.
unsafe fn page_bytes<'a>(buffer: pg_sys::Buffer) -> &'a mut [u8] {
    // SAFETY: a pinned buffer's page is `BLCKSZ` bytes of shared memory that stay in place
    // while the pin is held; the lock that guards their use is the caller's (the contract).
    unsafe { std::slice::from_raw_parts_mut(pg_sys::BufferGetPage(buffer) as *mut u8, BLCKSZ) }
}

/// Whether a page has never been initialised (all zeros in its header: a page the file was
/// extended by and that was not written yet, or that a crash left as the extension made it).
/// Read as bytes: the page may be a `Vec`'s, aligned for bytes only; a page too short to hold
/// the field is not new.
fn page_is_new(page: &[u8]) -> bool {
    let at = std::mem::offset_of!(pg_sys::PageHeaderData, pd_upper);
    page.get(at..at + 2)
        .is_some_and(|b| u16::from_ne_bytes([b[0], b[1]]) == 0)
}

/// Blocks of the main fork, as the file has them.
fn nblocks(rel: pg_sys::Relation) -> u32 {
    // SAFETY: callers pass a relation they hold open.
    unsafe { pg_sys::RelationGetNumberOfBlocksInFork(rel, pg_sys::ForkNumber::MAIN_FORKNUM) }
}

/// Reads block 0: `Ok(None)` if the relation has no blocks or block 0 is new (an empty
/// table, as heap treats a new page), else the parsed metapage.
fn read_checked(rel: pg_sys::Relation) -> Result<Option<Meta>, MetaError> {
    if nblocks(rel) == 0 {
        return Ok(None);
    }
    // SAFETY: `rel` is open (callers') and has a block 0 (checked above), read under a pin
    // and share lock, copied, then released.
    let copy = unsafe {
        let buffer = pg_sys::ReadBuffer(rel, 0);
        crate::compat::lock_buffer(buffer, false);
        let copy = page_bytes(buffer)[..PAGE_HEADER + META_LEN].to_vec();
        pg_sys::UnlockReleaseBuffer(buffer);
        copy
    };
    if page_is_new(&copy) {
        return Ok(None);
    }
    parse(&copy).map(Some)
}

/// The metapage, or `None` if there is none yet (the table is empty). A block 0 that is
/// neither new nor a metapage is an ERROR naming the relation.
pub fn read(rel: pg_sys::Relation) -> Option<Meta> {
    read_checked(rel).unwrap_or_else(|e| raise(rel, e))
}

/// The storage id in the metapage (`None`: no metapage, the table is empty). Found ids are
/// kept for the backend by relation and file (a DELETE, an UPDATE and a unique check ask per
/// row, and reading block 0 also asks the file's size): a file's metapage keeps its storage id
/// for the file's life, but for a truncation in place ([`forget_storage_id`]). A kept id is
/// forgotten on a relcache invalidation of its relation or of all relations (DROP among
/// them, as a later relation may be given the same OID and file number).
pub fn storage_id(rel: pg_sys::Relation) -> Option<u64> {
    // SAFETY: callers pass a relation they hold open.
    let key = unsafe { ((*rel).rd_id, crate::compat::relfile_number(rel)) };
    if let Some(id) =
        STORAGE_IDS.with_borrow(|kept| kept.iter().find(|(k, _)| *k == key).map(|&(_, id)| id))
    {
        return Some(id);
    }
    let id = read(rel)?.storage_id;
    static REGISTERED: std::sync::Once = std::sync::Once::new();
    // SAFETY: the callback is a `pg_guard`ed fn with a static lifetime, registered once per
    // backend (the `Once`), from inside a transaction.
    REGISTERED.call_once(|| unsafe {
        pg_sys::CacheRegisterRelcacheCallback(Some(forget_on_invalidation), pg_sys::Datum::from(0))
    });
    STORAGE_IDS.with_borrow_mut(|kept| {
        if kept.len() == KEPT_STORAGE_IDS {
            kept.remove(0);
        }
        kept.push((key, id));
    });
    Some(id)
}

/// How many relations' storage ids [`storage_id`] keeps (the latest).
const KEPT_STORAGE_IDS: usize = 64;

thread_local! {
    /// What [`storage_id`] found, by relation and file number, oldest first.
    static STORAGE_IDS: std::cell::RefCell<Vec<((pg_sys::Oid, u32), u64)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Forgets the kept storage id of relation `relid` (`InvalidOid`: of every relation).
pub fn forget_storage_id(relid: pg_sys::Oid) {
    STORAGE_IDS.with_borrow_mut(|kept| {
        kept.retain(|((r, _), _)| relid != pg_sys::InvalidOid && *r != relid)
    });
}

/// The relcache invalidation callback [`storage_id`] registers.
///
/// # Safety
///
/// Called by PostgreSQL's invalidation processing only; it dereferences nothing.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn forget_on_invalidation(_arg: pg_sys::Datum, relid: pg_sys::Oid) {
    forget_storage_id(relid);
}

/// Reads block 0 inside a subtransaction, so that a page PostgreSQL itself refuses to read
/// (its header fails the buffer manager's checks) is reported here instead of raising: the
/// pattern of a PL/pgSQL exception block (the subtransaction releases the buffer and its I/O
/// state on the way out).
fn read_guarded(rel: pg_sys::Relation) -> Result<Option<Meta>, String> {
    // SAFETY: `rel` is open (callers'); the subtransaction begun here is released or rolled
    // back on each path of the try, and the memory context and resource owner are restored.
    unsafe {
        let context = pg_sys::CurrentMemoryContext;
        let owner = pg_sys::CurrentResourceOwner;
        pg_sys::BeginInternalSubTransaction(std::ptr::null());
        pg_sys::MemoryContextSwitchTo(context);
        let result = pg_sys::PgTryBuilder::new(|| {
            let read = read_checked(rel);
            pg_sys::ReleaseCurrentSubTransaction();
            read.map_err(|e| match e {
                MetaError::Corrupt(what) => what.to_string(),
                MetaError::Version(v) => format!("storage format version {v}"),
            })
        })
        .catch_others(|e| {
            pg_sys::MemoryContextSwitchTo(context);
            pg_sys::RollbackAndReleaseCurrentSubTransaction();
            Err(match e {
                pg_sys::panic::CaughtError::PostgresError(r)
                | pg_sys::panic::CaughtError::ErrorReport(r) => r.message().to_string(),
                pg_sys::panic::CaughtError::RustPanic { ereport, .. } => {
                    ereport.message().to_string()
                }
            })
        })
        .execute();
        pg_sys::MemoryContextSwitchTo(context);
        pg_sys::CurrentResourceOwner = owner;
        result
    }
}

/// The metapage if it can be read; `None` also for an unreadable one (DROP and TRUNCATE must
/// work whatever block 0 holds). Warns when block 0 is damaged: that storage's catalog rows
/// cannot be found and stay behind, harmless, as no other storage has its id.
pub fn read_for_drop(rel: pg_sys::Relation) -> Option<Meta> {
    if nblocks(rel) == 0 {
        return None;
    }
    match read_guarded(rel) {
        Ok(m) => m,
        Err(what) => {
            pgrx::warning!("pg_columnar: block 0 of \"{}\" is unreadable ({what}); its catalog rows stay behind", relation_name(rel));
            None
        }
    }
}

thread_local! {
    /// Storage ids taken when a relation was given a new file, by (relation, file number):
    /// the first write of that file uses it. CREATE TABLE AS may write its first stripe in
    /// parallel mode, where no sequence may be advanced.
    static RESERVED_IDS: std::cell::RefCell<Vec<(pg_sys::Oid, u32, u64)>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn next_storage_id() -> u64 {
    let seq = super::required_pgcol_relation(c"storage_id_seq");
    // SAFETY: `seq` is the oid of an existing sequence (found just above); `nextval_internal`
    // checks the transaction may advance it, raising an ERROR (a panic through pgrx) if not.
    unsafe { pg_sys::nextval_internal(seq, false) as u64 }
}

/// Takes a storage id now for the file `relfile` that relation `relid` was just given, where
/// a sequence may be advanced (not in a read-only or parallel operation).
pub fn reserve_storage_id(relid: pg_sys::Oid, relfile: u32) {
    // SAFETY: reads of this backend's transaction state, in its one thread.
    unsafe {
        if pg_sys::XactReadOnly || pg_sys::IsInParallelMode() || pg_sys::RecoveryInProgress() {
            return;
        }
    }
    let id = next_storage_id();
    RESERVED_IDS.with(|r| r.borrow_mut().push((relid, relfile, id)));
}

/// Forgets the ids reserved in this transaction (its end).
pub fn forget_reserved_ids() {
    RESERVED_IDS.with(|r| r.borrow_mut().clear());
}

fn storage_id_for(rel: pg_sys::Relation) -> u64 {
    // SAFETY: callers pass a relation they hold open.
    let key = (unsafe { (*rel).rd_id }, crate::compat::relfile_number(rel));
    let reserved = RESERVED_IDS.with(|r| {
        let mut r = r.borrow_mut();
        let i = r
            .iter()
            .position(|&(relid, file, _)| (relid, file) == key)?;
        Some(r.swap_remove(i).2)
    });
    reserved.unwrap_or_else(next_storage_id)
}

/// Block 0, pinned and exclusively locked, extending the relation if it has no blocks.
///
/// # Safety
///
/// `rel` must be an open pg_columnar relation, locked for writing; the caller releases the
/// buffer returned (`UnlockReleaseBuffer`).
unsafe fn lock_block0(rel: pg_sys::Relation) -> pg_sys::Buffer {
    // SAFETY: `rel` is open and locked (the contract); the extension lock is held only around
    // the read, and the buffer, pinned by it, is locked once and released on the ERROR path.
    unsafe {
        pg_sys::LockRelationForExtension(rel, pg_sys::ExclusiveLock as pg_sys::LOCKMODE);
        let buffer = if nblocks(rel) == 0 {
            pg_sys::ReadBufferExtended(
                rel,
                pg_sys::ForkNumber::MAIN_FORKNUM,
                pg_sys::InvalidBlockNumber,
                pg_sys::ReadBufferMode::RBM_NORMAL,
                std::ptr::null_mut(),
            )
        } else {
            pg_sys::ReadBuffer(rel, 0)
        };
        pg_sys::UnlockRelationForExtension(rel, pg_sys::ExclusiveLock as pg_sys::LOCKMODE);
        crate::compat::lock_buffer(buffer, true);
        if pg_sys::BufferGetBlockNumber(buffer) != 0 {
            pg_sys::UnlockReleaseBuffer(buffer);
            pgrx::error!(
                "pg_columnar: metapage of \"{}\" not at block 0",
                relation_name(rel)
            );
        }
        buffer
    }
}

/// The metapage's buffer, pinned and exclusively locked, and its contents. A relation with no
/// blocks, or whose block 0 is new, gets its metapage now, under the buffer lock (so two first
/// writers, or a first writer and a reader, cannot see a half-made one). The storage id comes
/// first: no other lock may be waited for while the buffer lock is held.
fn locked_metapage(rel: pg_sys::Relation) -> (pg_sys::Buffer, Meta) {
    let mut storage_id = None;
    loop {
        // SAFETY: `rel` is open and locked for writing (callers'); block 0 is pinned and locked
        // exclusively, released on every path but the return, and written through its WAL image.
        unsafe {
            let buffer = lock_block0(rel);
            let page = page_bytes(buffer);
            if !page_is_new(page) {
                match parse(page) {
                    Ok(m) => return (buffer, m),
                    Err(e) => {
                        pg_sys::UnlockReleaseBuffer(buffer);
                        raise(rel, e)
                    }
                }
            }
            let Some(id) = storage_id else {
                pg_sys::UnlockReleaseBuffer(buffer);
                storage_id = Some(storage_id_for(rel));
                continue;
            };
            let state = pg_sys::GenericXLogStart(rel);
            let page = pg_sys::GenericXLogRegisterBuffer(
                state,
                buffer,
                pg_sys::GENERIC_XLOG_FULL_IMAGE as i32,
            );
            pg_sys::PageInit(page, BLCKSZ, 0);
            let bytes = std::slice::from_raw_parts_mut(page as *mut u8, BLCKSZ);
            let m = &mut bytes[PAGE_HEADER..PAGE_HEADER + META_LEN];
            m[0..4].copy_from_slice(&MAGIC);
            m[4..8].copy_from_slice(&STORAGE_VERSION.to_le_bytes());
            m[8..16].copy_from_slice(&id.to_le_bytes());
            m[16..24].copy_from_slice(&0u64.to_le_bytes());
            seal(bytes);
            (*(page as *mut pg_sys::PageHeaderData)).pd_lower = (PAGE_HEADER + META_LEN) as u16;
            pg_sys::GenericXLogFinish(state);
            return (
                buffer,
                Meta {
                    storage_id: id,
                    next_row: 0,
                },
            );
        }
    }
}

/// Hands out `count` consecutive row numbers (writing the metapage first if needed) and
/// returns the first, with the storage id. Not transactional: numbers of an aborted
/// transaction are simply never used.
pub fn reserve_rows(rel: pg_sys::Relation, count: u64) -> (Meta, u64) {
    let (buffer, meta) = locked_metapage(rel);
    // SAFETY: `buffer` is the metapage, pinned and exclusively locked by `locked_metapage` and
    // released on both paths; it is written through generic WAL's `BLCKSZ`-byte image of it.
    unsafe {
        let next = meta
            .next_row
            .checked_add(count)
            .filter(|&n| n <= super::tid::MAX_ROWS);
        let Some(next) = next else {
            pg_sys::UnlockReleaseBuffer(buffer);
            pgrx::ereport!(
                ERROR,
                pgrx::PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
                format!(
                    "pg_columnar relation \"{}\" has used all its row numbers",
                    relation_name(rel)
                ),
                "VACUUM FULL rewrites the table and numbers its rows afresh."
            );
        };
        let state = pg_sys::GenericXLogStart(rel);
        let page = pg_sys::GenericXLogRegisterBuffer(state, buffer, 0);
        let bytes = std::slice::from_raw_parts_mut(page as *mut u8, BLCKSZ);
        bytes[NEXT_ROW_AT..NEXT_ROW_AT + 8].copy_from_slice(&next.to_le_bytes());
        seal(bytes);
        pg_sys::GenericXLogFinish(state);
        pg_sys::UnlockReleaseBuffer(buffer);
        (
            Meta {
                next_row: next,
                ..meta
            },
            meta.next_row,
        )
    }
}

//! The metapage: block 0 of the main fork. It is written by the first stripe write, so a
//! relation with no blocks is an empty table (a new, truncated, or crash-reset unlogged
//! table) and needs no catalog rows.
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
pub const STORAGE_VERSION: u32 = 1;
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

fn parse(rel: pg_sys::Relation, page: &[u8]) -> Meta {
    let b = &page[PAGE_HEADER..PAGE_HEADER + META_LEN];
    if b[0..4] != MAGIC {
        corrupt(rel, "block 0 is not a pg_columnar metapage");
    }
    let sum = u32::from_le_bytes(b[FIELDS_LEN..META_LEN].try_into().unwrap());
    if pg_columnar_codec::stripe::checksum32(&b[..FIELDS_LEN]) != sum {
        corrupt(rel, "metapage checksum mismatch");
    }
    let version = u32::from_le_bytes(b[4..8].try_into().unwrap());
    if version != STORAGE_VERSION {
        pgrx::ereport!(
            ERROR,
            pgrx::PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            format!(
                "pg_columnar relation \"{}\" has storage format version {version}; this build reads version {STORAGE_VERSION}",
                relation_name(rel)
            )
        );
    }
    Meta {
        storage_id: u64::from_le_bytes(b[8..16].try_into().unwrap()),
        next_row: u64::from_le_bytes(b[16..24].try_into().unwrap()),
    }
}

unsafe fn page_bytes<'a>(buffer: pg_sys::Buffer) -> &'a mut [u8] {
    std::slice::from_raw_parts_mut(pg_sys::BufferGetPage(buffer) as *mut u8, BLCKSZ)
}

fn nblocks(rel: pg_sys::Relation) -> u32 {
    unsafe { pg_sys::RelationGetNumberOfBlocksInFork(rel, pg_sys::ForkNumber::MAIN_FORKNUM) }
}

/// The metapage, or `None` if the relation has no blocks (it is empty).
pub fn read(rel: pg_sys::Relation) -> Option<Meta> {
    if nblocks(rel) == 0 {
        return None;
    }
    unsafe {
        let buffer = pg_sys::ReadBuffer(rel, 0);
        crate::compat::lock_buffer(buffer, false);
        let copy = page_bytes(buffer).to_vec();
        pg_sys::UnlockReleaseBuffer(buffer);
        Some(parse(rel, &copy))
    }
}

fn next_storage_id() -> u64 {
    let seq = super::required_pgcol_relation(c"storage_id_seq");
    unsafe { pg_sys::nextval_internal(seq, false) as u64 }
}

/// Writes the metapage if the relation has none yet.
fn ensure(rel: pg_sys::Relation) {
    if nblocks(rel) > 0 {
        return;
    }
    // no other lock may be taken while the extension lock is held, so the id (a sequence
    // lookup) comes first; a writer that loses the race below wastes one id
    let storage_id = next_storage_id();
    unsafe {
        pg_sys::LockRelationForExtension(rel, pg_sys::ExclusiveLock as pg_sys::LOCKMODE);
        if nblocks(rel) == 0 {
            let buffer = pg_sys::ReadBufferExtended(
                rel,
                pg_sys::ForkNumber::MAIN_FORKNUM,
                pg_sys::InvalidBlockNumber,
                pg_sys::ReadBufferMode::RBM_NORMAL,
                std::ptr::null_mut(),
            );
            crate::compat::lock_buffer(buffer, true);
            if pg_sys::BufferGetBlockNumber(buffer) != 0 {
                pgrx::error!("pg_columnar: metapage of \"{}\" not at block 0", relation_name(rel));
            }
            let state = pg_sys::GenericXLogStart(rel);
            let page = pg_sys::GenericXLogRegisterBuffer(state, buffer, pg_sys::GENERIC_XLOG_FULL_IMAGE as i32);
            pg_sys::PageInit(page, BLCKSZ, 0);
            let bytes = std::slice::from_raw_parts_mut(page as *mut u8, BLCKSZ);
            let m = &mut bytes[PAGE_HEADER..PAGE_HEADER + META_LEN];
            m[0..4].copy_from_slice(&MAGIC);
            m[4..8].copy_from_slice(&STORAGE_VERSION.to_le_bytes());
            m[8..16].copy_from_slice(&storage_id.to_le_bytes());
            m[16..24].copy_from_slice(&0u64.to_le_bytes());
            seal(bytes);
            (*(page as *mut pg_sys::PageHeaderData)).pd_lower = (PAGE_HEADER + META_LEN) as u16;
            pg_sys::GenericXLogFinish(state);
            pg_sys::UnlockReleaseBuffer(buffer);
        }
        pg_sys::UnlockRelationForExtension(rel, pg_sys::ExclusiveLock as pg_sys::LOCKMODE);
    }
}

/// Hands out `count` consecutive row numbers (writing the metapage first if needed) and
/// returns the first, with the storage id. Not transactional: numbers of an aborted
/// transaction are simply never used.
pub fn reserve_rows(rel: pg_sys::Relation, count: u64) -> (Meta, u64) {
    ensure(rel);
    unsafe {
        let buffer = pg_sys::ReadBuffer(rel, 0);
        crate::compat::lock_buffer(buffer, true);
        let meta = parse(rel, page_bytes(buffer));
        let next = meta.next_row.checked_add(count).filter(|&n| n <= crate::am::tid::MAX_ROWS);
        let Some(next) = next else {
            pg_sys::UnlockReleaseBuffer(buffer);
            pgrx::ereport!(
                ERROR,
                pgrx::PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
                format!("pg_columnar relation \"{}\" has used all its row numbers", relation_name(rel)),
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
        (Meta { next_row: next, ..meta }, meta.next_row)
    }
}

//! Row numbers and TIDs. Row `n` of a relation has the TID
//! `(n / ROWS_PER_BLOCK, n % ROWS_PER_BLOCK + 1)`: the block part is virtual (it is not a
//! page of the relation), and offsets stay within what heap TIDs allow, so indexes, TID
//! bitmaps and `ctid` accept them.

use pgrx::pg_sys;

/// MaxHeapTuplesPerPage for the build's block size: the largest offset a TID may carry.
pub const ROWS_PER_BLOCK: u64 = ((pg_sys::BLCKSZ as usize - super::pages::PAGE_HEADER)
    / (24 + std::mem::size_of::<pg_sys::ItemIdData>())) as u64;
/// Row numbers available to one relation (block numbers stop below InvalidBlockNumber).
pub const MAX_ROWS: u64 = ROWS_PER_BLOCK * pg_sys::InvalidBlockNumber as u64;

/// What `ItemPointerSetInvalid` stores.
pub const INVALID: pg_sys::ItemPointerData = pg_sys::ItemPointerData {
    ip_blkid: pg_sys::BlockIdData {
        bi_hi: 0xffff,
        bi_lo: 0xffff,
    },
    ip_posid: pg_sys::InvalidOffsetNumber,
};

pub fn to_tid(row: u64) -> pg_sys::ItemPointerData {
    let block = (row / ROWS_PER_BLOCK) as u32;
    let offset = (row % ROWS_PER_BLOCK + 1) as u16;
    pg_sys::ItemPointerData {
        ip_blkid: pg_sys::BlockIdData {
            bi_hi: (block >> 16) as u16,
            bi_lo: block as u16,
        },
        ip_posid: offset,
    }
}

/// Heap's TID for "the row moved to another partition" (`ItemPointerSetMovedPartitions`),
/// which the executor turns into its serialization error.
pub fn moved_partitions() -> pg_sys::ItemPointerData {
    pg_sys::ItemPointerData {
        ip_posid: pg_sys::MovedPartitionsOffsetNumber as u16,
        ..INVALID
    }
}

pub fn is_moved_partitions(tid: &pg_sys::ItemPointerData) -> bool {
    block_of(tid) == pg_sys::InvalidBlockNumber
        && tid.ip_posid == pg_sys::MovedPartitionsOffsetNumber as u16
}

pub fn block_of(tid: &pg_sys::ItemPointerData) -> u32 {
    ((tid.ip_blkid.bi_hi as u32) << 16) | tid.ip_blkid.bi_lo as u32
}

/// The row number a TID names, or `None` for a TID no row can have.
pub fn from_tid(tid: &pg_sys::ItemPointerData) -> Option<u64> {
    from_parts(block_of(tid), tid.ip_posid)
}

/// The row number of a TID in the int8 form `itemptr_encode` gives it (block << 16 | offset;
/// a concurrent index build's validation sorts the index's TIDs so), or `None`.
pub fn from_encoded(encoded: i64) -> Option<u64> {
    from_parts(
        u32::try_from(encoded >> 16).ok()?,
        (encoded & 0xffff) as u16,
    )
}

fn from_parts(block: u32, offset: u16) -> Option<u64> {
    let offset = offset as u64;
    if block == pg_sys::InvalidBlockNumber || offset == 0 || offset > ROWS_PER_BLOCK {
        return None;
    }
    Some(block as u64 * ROWS_PER_BLOCK + offset - 1)
}

//! Data pages: a stripe's bytes are cut into consecutive pages of the main fork, each with a
//! standard page header followed by up to [`PAYLOAD`] bytes of the stripe (`pd_lower` marks
//! the end of the bytes used). New pages are written whole with generic WAL, which logs
//! nothing for unlogged and temporary relations.

use pgrx::pg_sys;

use super::corrupt;

pub(super) const BLCKSZ: usize = pg_sys::BLCKSZ as usize;
pub(super) const PAGE_HEADER: usize =
    std::mem::size_of::<pg_sys::PageHeaderData>() - std::mem::size_of::<pg_sys::ItemIdData>();
/// Stripe bytes per data page.
pub(super) const PAYLOAD: usize = BLCKSZ - PAGE_HEADER;

/// Pages a stripe of `len` bytes occupies.
pub fn pages_for(len: usize) -> u32 {
    len.div_ceil(PAYLOAD).max(1) as u32
}

/// Appends `bytes` to the relation as new consecutive pages; returns the first block.
/// Holding the relation extension lock makes the pages consecutive even with concurrent
/// writers. The pages go through a small ring of buffers (the bulk-write strategy, as heap's
/// COPY uses), so a load does not evict the rest of shared buffers; except in an autovacuum
/// worker (merging stripes), for which PostgreSQL's I/O statistics (16 on) have no bulk-write
/// row: assertion builds stop there, so it writes through shared buffers as heap's VACUUM does.
pub fn append(rel: pg_sys::Relation, bytes: &[u8]) -> u32 {
    // SAFETY: callers pass an open, locked `rel`; each new buffer is pinned and locked exclusively
    // as `fill_page` needs, and the extension lock taken here is released below.
    unsafe {
        let strategy = if pg_sys::MyBackendType == pg_sys::BackendType::B_AUTOVAC_WORKER {
            std::ptr::null_mut()
        } else {
            pg_sys::GetAccessStrategy(pg_sys::BufferAccessStrategyType::BAS_BULKWRITE)
        };
        pg_sys::LockRelationForExtension(rel, pg_sys::ExclusiveLock as pg_sys::LOCKMODE);
        let mut first = None;
        let mut expected = 0;
        for chunk in bytes
            .chunks(PAYLOAD)
            .chain(bytes.is_empty().then_some(&[][..]))
        {
            let buffer = pg_sys::ReadBufferExtended(
                rel,
                pg_sys::ForkNumber::MAIN_FORKNUM,
                pg_sys::InvalidBlockNumber,
                pg_sys::ReadBufferMode::RBM_NORMAL,
                strategy,
            );
            crate::compat::lock_buffer(buffer, true);
            let block = pg_sys::BufferGetBlockNumber(buffer);
            if let Some(f) = first {
                if block != f + expected {
                    pgrx::error!(
                        "pg_columnar: relation extended out of order (block {block}, expected {})",
                        f + expected
                    );
                }
            } else {
                first = Some(block);
            }
            expected += 1;
            fill_page(rel, buffer, chunk);
        }
        pg_sys::UnlockRelationForExtension(rel, pg_sys::ExclusiveLock as pg_sys::LOCKMODE);
        // (a null strategy is allowed)
        pg_sys::FreeAccessStrategy(strategy);
        first.expect("at least one page")
    }
}

/// Writes `chunk` as the whole content of the exclusively locked `buffer` (a new page header,
/// then the bytes; generic WAL logs the full image), and releases it.
///
/// # Safety
///
/// `rel` must be open and `buffer` one of its pages, pinned and locked exclusively by this
/// backend, whose old contents may be lost; `chunk` holds at most [`PAYLOAD`] bytes. The
/// buffer is released here.
unsafe fn fill_page(rel: pg_sys::Relation, buffer: pg_sys::Buffer, chunk: &[u8]) {
    // SAFETY: `buffer` is `rel`'s page, pinned and exclusively locked (the contract), and
    // `page` its `BLCKSZ`-byte generic-WAL image, into which `chunk` (<= PAYLOAD) fits.
    unsafe {
        let state = pg_sys::GenericXLogStart(rel);
        let page = pg_sys::GenericXLogRegisterBuffer(
            state,
            buffer,
            pg_sys::GENERIC_XLOG_FULL_IMAGE as i32,
        );
        pg_sys::PageInit(page, BLCKSZ, 0);
        let base = page as *mut u8;
        std::ptr::copy_nonoverlapping(chunk.as_ptr(), base.add(PAGE_HEADER), chunk.len());
        (*(page as *mut pg_sys::PageHeaderData)).pd_lower = (PAGE_HEADER + chunk.len()) as u16;
        pg_sys::GenericXLogFinish(state);
        pg_sys::UnlockReleaseBuffer(buffer);
    }
}

/// Writes `bytes` over the existing pages `first_block..` (VACUUM fills pages no snapshot
/// reads any more: `am::vacuum`). Their old contents are not read.
pub fn write_at(rel: pg_sys::Relation, first_block: u32, bytes: &[u8]) {
    // SAFETY: callers pass an open, locked `rel` whose pages from `first_block` no snapshot
    // reads; `RBM_ZERO_AND_LOCK` returns each pinned and exclusively locked, as `fill_page` needs.
    unsafe {
        for (k, chunk) in bytes
            .chunks(PAYLOAD)
            .chain(bytes.is_empty().then_some(&[][..]))
            .enumerate()
        {
            let buffer = pg_sys::ReadBufferExtended(
                rel,
                pg_sys::ForkNumber::MAIN_FORKNUM,
                first_block + k as u32,
                pg_sys::ReadBufferMode::RBM_ZERO_AND_LOCK,
                std::ptr::null_mut(),
            );
            fill_page(rel, buffer, chunk);
        }
    }
}

/// Reads stripe bytes: reads `bytes` of data pages `first_block..` from stripe offset
/// `offset` into `out` (replacing its contents). Checks that every page exists and holds
/// the bytes asked for.
pub struct PageReader {
    rel: pg_sys::Relation,
    nblocks: u32,
    strategy: pg_sys::BufferAccessStrategy,
    /// Stripe bytes read so far (EXPLAIN ANALYZE reports them).
    pub bytes_read: u64,
    /// For each column a scan decodes whole vectors of ([`PageReader::bytes`]), a copy of
    /// the payload (up to `pd_lower`) of the data page it read last, with its number. A
    /// column's vectors lie side by side, about ten to a page, so the column's next vector
    /// is most often on that page: it is served from the copy, without pinning, locking
    /// and copying again. Only the current stripe's pages are kept
    /// ([`PageReader::forget_pages`] when a scan leaves a stripe or ends). Stripe pages do
    /// not change while a snapshot that reads them lives (VACUUM reuses a stripe's blocks
    /// only once no snapshot sees it).
    kept: Vec<Option<(u64, Vec<u8>)>>,
}

/// Columns past this many are read without a kept page.
const KEPT_COLUMNS: usize = 64;

impl PageReader {
    pub fn new(rel: pg_sys::Relation, bulk: bool) -> PageReader {
        // SAFETY: callers pass a relation they hold open for the reader's life; the strategy
        // is freed once, in `drop`.
        unsafe {
            let nblocks =
                pg_sys::RelationGetNumberOfBlocksInFork(rel, pg_sys::ForkNumber::MAIN_FORKNUM);
            let strategy = if bulk {
                pg_sys::GetAccessStrategy(pg_sys::BufferAccessStrategyType::BAS_BULKREAD)
            } else {
                std::ptr::null_mut()
            };
            PageReader {
                rel,
                nblocks,
                strategy,
                bytes_read: 0,
                kept: Vec::new(),
            }
        }
    }

    pub fn rel(&self) -> pg_sys::Relation {
        self.rel
    }

    pub fn read(&mut self, first_block: u32, offset: usize, len: usize, out: &mut Vec<u8>) {
        out.clear();
        if out.try_reserve(len).is_err() {
            super::out_of_memory(len, "to read a stripe");
        }
        self.bytes_read += len as u64;
        let mut pos = offset;
        let end = offset + len;
        while pos < end {
            let block = first_block as u64 + (pos / PAYLOAD) as u64;
            let in_page = pos % PAYLOAD;
            let take = (PAYLOAD - in_page).min(end - pos);
            self.copy_page(block, in_page, take, false, out);
            pos += take;
        }
    }

    /// The bytes [`read`](Self::read) gives, for a whole vector of `column`: where they lie
    /// on one page, a slice of the column's kept copy of that page (read and kept now if it
    /// is another page); else read into `buf`.
    pub fn bytes<'a>(
        &'a mut self,
        first_block: u32,
        offset: usize,
        len: usize,
        buf: &'a mut Vec<u8>,
        column: usize,
    ) -> &'a [u8] {
        let in_page = offset % PAYLOAD;
        if len == 0 || in_page + len > PAYLOAD || column >= KEPT_COLUMNS {
            self.read(first_block, offset, len, buf);
            return buf;
        }
        self.bytes_read += len as u64;
        let block = first_block as u64 + (offset / PAYLOAD) as u64;
        if self.kept.len() <= column {
            self.kept.resize_with(column + 1, || None);
        }
        if self.kept[column].as_ref().is_none_or(|(b, _)| *b != block) {
            let mut copy = self.kept[column].take().map(|(_, c)| c).unwrap_or_default();
            copy.clear();
            self.copy_page(block, 0, in_page + len, true, &mut copy);
            self.kept[column] = Some((block, copy));
        }
        let (_, page) = self.kept[column].as_ref().expect("kept just above");
        &page[in_page..in_page + len]
    }

    /// Drops the kept pages (a scan leaving a stripe or ending: the next stripe's vectors
    /// lie on other pages).
    pub fn forget_pages(&mut self) {
        self.kept.clear();
    }

    /// Appends to `out` the bytes `at..at + need` of data page `block`'s payload (`whole`:
    /// from `at` up to `pd_lower`), checking that the page exists and holds them.
    fn copy_page(&mut self, block: u64, at: usize, need: usize, whole: bool, out: &mut Vec<u8>) {
        if block >= self.nblocks as u64 {
            // the relation may have grown since this reader was made
            // SAFETY: `self.rel` stays open for the reader's life (see `new`).
            self.nblocks = unsafe {
                pg_sys::RelationGetNumberOfBlocksInFork(self.rel, pg_sys::ForkNumber::MAIN_FORKNUM)
            };
            if block >= self.nblocks as u64 {
                corrupt(
                    self.rel,
                    format!(
                        "stripe data at block {block} is past the end of the relation ({} blocks)",
                        self.nblocks
                    ),
                );
            }
        }
        // SAFETY: `block` exists (checked above); its page is read under a pin and share
        // lock, only up to `pd_lower` (checked), and released on both paths.
        unsafe {
            let buffer = pg_sys::ReadBufferExtended(
                self.rel,
                pg_sys::ForkNumber::MAIN_FORKNUM,
                block as u32,
                pg_sys::ReadBufferMode::RBM_NORMAL,
                self.strategy,
            );
            crate::compat::lock_buffer(buffer, false);
            let page = pg_sys::BufferGetPage(buffer) as *const u8;
            let lower = (*(page as *const pg_sys::PageHeaderData)).pd_lower as usize;
            if lower < PAGE_HEADER + at + need || lower > BLCKSZ {
                pg_sys::UnlockReleaseBuffer(buffer);
                corrupt(
                    self.rel,
                    format!(
                        "data page {block} holds {} bytes, a stripe needs {}",
                        lower.saturating_sub(PAGE_HEADER),
                        at + need
                    ),
                );
            }
            let len = if whole {
                lower - PAGE_HEADER - at
            } else {
                need
            };
            out.extend_from_slice(std::slice::from_raw_parts(page.add(PAGE_HEADER + at), len));
            pg_sys::UnlockReleaseBuffer(buffer);
        }
    }
}

impl Drop for PageReader {
    fn drop(&mut self) {
        if !self.strategy.is_null() {
            // SAFETY: `strategy` came from `GetAccessStrategy` in `new` and is freed only here.
            unsafe { pg_sys::FreeAccessStrategy(self.strategy) };
        }
    }
}

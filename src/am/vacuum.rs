//! VACUUM of a pg_columnar table (not VACUUM FULL, which rewrites the whole table: `life`).
//!
//! 1. **Removing rows and merging stripes.** Only stripes whose catalog rows every snapshot
//!    sees (*settled*) are touched, and only rows whose deletion every snapshot sees (their
//!    delete marks are settled) are removed. A stripe with such rows gets a new catalog row
//!    that lists them as *absent* (docs/FORMAT.md), over the same image and pages; a run of
//!    small stripes (fewer live rows than [`SMALL_STRIPE_ROWS`] each) is encoded again as one
//!    stripe of at most `pg_columnar.stripe_row_limit` row numbers, and the numbers between
//!    them that no committed row has are absent too. Rows keep their numbers, so index
//!    entries stay right; a removed row keeps its values in the image (masked: no reader
//!    returns it, and the image packs as before), a number between merged stripes holds a
//!    copy of a neighbouring row. The removed rows' marks are deleted, and their index
//!    entries (with those of rolled-back inserts between merged stripes) are removed by the
//!    indexes' bulk deletion. Old catalog rows are deleted and new ones inserted in VACUUM's
//!    own transaction, so MVCC decides which version a snapshot reads; an old stripe's pages
//!    stay until no snapshot can see its catalog row.
//! 2. **Reusing space.** Pages that no catalog row a snapshot may still read points at are
//!    free (left by replaced stripes, and by aborted loads anywhere in the file). New stripes
//!    of step 1 go into the lowest free run of pages that holds them, and the stripes at the
//!    end of the file are moved down into free pages, so that a later VACUUM can give the end
//!    back.
//! 3. **Truncating.** The pages after the last one any snapshot may read are given back to
//!    the file system, when no one else is using the table.
//!
//! Before the writes that need it, a VACUUM logs the newest deleter of what it removes (of
//! the rows, before its first write; of the catalog rows whose pages it writes again, before
//! it writes into them), so that a hot standby cancels the queries that could still read
//! them first (`standby`).
//!
//! Which pages are free can only be known while no writer is between writing a stripe's
//! pages and inserting its catalog row (or holds the pages of a stripe whose catalog row a
//! rolled-back subtransaction took along, `write`). So steps 2 and 3, and merging across row
//! numbers no stripe has (which a running writer might still fill), happen only when VACUUM
//! gets a lock that excludes writers for a moment (`ShareLock`, without waiting; readers are
//! not excluded). Writers only ever append pages, so the free pages found then stay free.

use pgrx::pg_sys;

use super::scan::{RowScan, StripeReader};
use super::standby::Conflict;
use super::write;
use crate::storage::catalog::{self, StripeRow, VacuumRow};
use crate::storage::tid;
use crate::storage::{marks, meta, pages};

/// A stripe with fewer live rows than this (less than one full vector: each stripe costs a
/// directory and a partial vector per column) is merged with its small neighbours. A fixed
/// number, not a fraction of `pg_columnar.stripe_row_limit`: autovacuum runs with the
/// server's setting, and stripes a load made smaller on purpose are not small.
pub(super) const SMALL_STRIPE_ROWS: u64 = pg_columnar_codec::MAX_ROWS as u64;

/// What one VACUUM did (`pgcol.last_vacuum()`, and the server log at DEBUG1).
#[derive(Clone, Copy, Default, Debug)]
pub struct VacuumReport {
    /// Whether it could tell free pages and dead row numbers (no writer was running).
    pub quiet: bool,
    /// Stripes written again (new catalog rows), the stripes they replaced, and the images
    /// encoded for them (a merge; a single stripe keeps its image).
    pub stripes_written: u64,
    pub stripes_replaced: u64,
    pub images_encoded: u64,
    /// Rows removed (deleted for every snapshot), and row numbers between merged stripes.
    pub rows_removed: u64,
    pub gap_rows: u64,
    /// Stripes moved down into free pages.
    pub stripes_moved: u64,
    /// Pages given back to the file system.
    pub pages_truncated: u64,
    /// Index entries the indexes' bulk deletion removed (all indexes together).
    pub index_entries_removed: u64,
    /// Rows whose deletion has committed but that it could not remove (a snapshot may still
    /// see them, or their stripe was not written again): the table's dead rows after it.
    pub deleted_rows_left: u64,
}

thread_local! {
    static LAST: std::cell::Cell<VacuumReport> = const { std::cell::Cell::new(VacuumReport {
        quiet: false, stripes_written: 0, stripes_replaced: 0, images_encoded: 0, rows_removed: 0, gap_rows: 0, stripes_moved: 0, pages_truncated: 0,
        index_entries_removed: 0, deleted_rows_left: 0,
    }) };
}

/// What the last VACUUM of a pg_columnar table in this backend did.
pub fn last_report() -> VacuumReport {
    LAST.with(|l| l.get())
}

/// Free pages: ascending, disjoint runs `(first_block, pages)`.
struct FreePages(Vec<(u32, u32)>);

impl FreePages {
    /// The blocks `1..nblocks` that no range of `occupied` covers.
    fn between(occupied: &[(u32, u32)], nblocks: u32) -> FreePages {
        let mut runs = Vec::new();
        let mut next = 1u32.min(nblocks);
        for &(first, count) in occupied {
            if first > next {
                runs.push((next, first.min(nblocks) - next));
            }
            next = next.max(first + count);
        }
        if next < nblocks {
            runs.push((next, nblocks - next));
        }
        FreePages(runs)
    }

    /// Takes the lowest run of `count` free pages that starts below `below`.
    fn take(&mut self, count: u32, below: u32) -> Option<u32> {
        let i = self
            .0
            .iter()
            .position(|&(first, n)| n >= count && first < below)?;
        let (first, n) = self.0[i];
        if n == count {
            self.0.remove(i);
        } else {
            self.0[i] = (first + count, n - count);
        }
        Some(first)
    }

    fn pages(&self) -> u64 {
        self.0.iter().map(|&(_, n)| n as u64).sum()
    }
}

/// What VACUUM was asked to do.
#[derive(Clone, Copy)]
pub struct Options {
    /// `INDEX_CLEANUP` not off: rows whose index entries must go may be removed (deleted
    /// rows, numbers between merged stripes). Off: only stripes whose row numbers follow on
    /// are merged, and nothing is removed.
    pub index_cleanup: bool,
    /// `TRUNCATE` not off: the end of the file may be given back.
    pub truncate: bool,
}

/// `relation_vacuum`.
///
/// # Safety
///
/// As the callback is called: `rel` an open pg_columnar relation, locked by VACUUM
/// (ShareUpdateExclusiveLock), in VACUUM's transaction; `strategy` VACUUM's (or null).
pub unsafe fn vacuum(
    rel: pg_sys::Relation,
    options: Options,
    strategy: pg_sys::BufferAccessStrategy,
) {
    // SAFETY: a backend's clock
    let start = unsafe { pg_sys::GetCurrentTimestamp() };
    let mut report = VacuumReport::default();
    let dead = match meta::read(rel) {
        // SAFETY: `rel` is open and locked by VACUUM (this function's contract)
        Some(m) => unsafe { rewrite(rel, m.storage_id, options, &mut report) },
        None => Vec::new(),
    };
    if options.truncate {
        // SAFETY: `rel` is open and locked by VACUUM (this function's contract)
        report.pages_truncated = unsafe { truncate(rel) };
    }
    // SAFETY: `rel` is open and locked by VACUUM, in VACUUM's transaction (this function's
    // contract)
    let (pages, tuples) = unsafe { super::life::counted_size(rel) };
    // SAFETY: `rel` is open and locked by VACUUM, in VACUUM's transaction, and `strategy`
    // is VACUUM's (this function's contract)
    report.index_entries_removed = unsafe { remove_index_entries(rel, &dead, strategy, tuples) };
    LAST.with(|l| l.set(report));
    pgrx::debug1!(
        "pg_columnar: VACUUM of \"{}\": {report:?}",
        crate::storage::relation_name(rel)
    );
    // the counts autovacuum decides its next visit by, as heap's VACUUM reports them
    // SAFETY: `rel` is open and locked by VACUUM, in VACUUM's transaction (this function's
    // contract)
    unsafe {
        crate::compat::update_relstats(rel, pages, tuples);
        let dead = report.deleted_rows_left;
        crate::compat::report_vacuum(rel, tuples as i64 - dead as i64, dead as i64, start);
    }
}

/// A run of stripes (indexes into the list) written again as one.
struct Group {
    members: std::ops::Range<usize>,
}

/// Steps 1 and 2 of the module comment; returns the row-number ranges (ascending,
/// half-open) whose index entries must go.
///
/// # Safety
///
/// `rel` is an open pg_columnar relation of storage `storage_id`, locked by VACUUM, in
/// VACUUM's transaction.
unsafe fn rewrite(
    rel: pg_sys::Relation,
    storage_id: u64,
    options: Options,
    report: &mut VacuumReport,
) -> Vec<(u64, u64)> {
    // A moment without writers: every row number below `next_row` is in a committed stripe
    // or dead, and no page off the catalog is being filled. Writers that start later only
    // append pages and take row numbers from `next_row` on.
    let mut free = None;
    let mut dead_below = None;
    // SAFETY: `rel` is open (this function's contract)
    if unsafe { pg_sys::ConditionalLockRelation(rel, pg_sys::ShareLock as pg_sys::LOCKMODE) } {
        // SAFETY: `rel` is open (this function's contract)
        let nblocks = unsafe {
            pg_sys::RelationGetNumberOfBlocksInFork(rel, pg_sys::ForkNumber::MAIN_FORKNUM)
        };
        free = Some(FreePages::between(&catalog::occupied(storage_id), nblocks));
        dead_below = meta::read(rel)
            .map(|m| m.next_row)
            .filter(|_| options.index_cleanup);
        // SAFETY: releases the lock taken just above
        unsafe { pg_sys::UnlockRelation(rel, pg_sys::ShareLock as pg_sys::LOCKMODE) };
    }
    report.quiet = free.is_some();
    // Reading under the lazy VACUUM's flag is safe: the catalog rows this reads are deleted
    // only by VACUUM (this one) and by TRUNCATE and DROP (kept out by its lock), so no other
    // backend's pruning can take one that this snapshot still sees. The flag goes before the
    // first write (`write_group`, `move_down`), and only if there is one.
    // SAFETY: in VACUUM's transaction (this function's contract); unregistered below
    let snapshot = unsafe { pg_sys::RegisterSnapshot(pg_sys::GetLatestSnapshot()) };
    let stripes = catalog::for_vacuum(storage_id, snapshot);
    let marks = marks::for_vacuum(storage_id, snapshot);
    // rows deleted for every snapshot, and every settled mark on them (a lock mark there is
    // met by no writer: no snapshot sees the row)
    let mut removable_rows: Vec<u64> = marks
        .iter()
        .filter(|m| options.index_cleanup && m.settled && m.mode.deletes())
        .map(|m| m.row)
        .collect();
    removable_rows.sort_unstable();
    removable_rows.dedup();
    let mut deleted_rows: Vec<u64> = marks
        .iter()
        .filter(|m| m.mode.deletes())
        .map(|m| m.row)
        .collect();
    deleted_rows.sort_unstable();
    deleted_rows.dedup();
    let mut removable: Vec<(u64, pg_sys::ItemPointerData)> = marks
        .iter()
        .filter(|m| m.settled && removable_rows.binary_search(&m.row).is_ok())
        .map(|m| (m.row, m.tid))
        .collect();
    removable.sort_by_key(|r| r.0);
    // a standby's queries that may still see these rows, or read the pages of stripes
    // replaced for every snapshot here, are cancelled before the writes that need it
    let mut conflict = Conflict::new(storage_id);
    for m in marks
        .iter()
        .filter(|m| m.settled && m.mode.deletes() && removable_rows.binary_search(&m.row).is_ok())
    {
        m.maker
            .into_iter()
            .for_each(|xid| conflict.remove_row_deleted_by(xid));
    }
    let groups = plan(&stripes, &removable_rows, dead_below);
    let mut dead: Vec<(u64, u64)> = Vec::new();
    // SAFETY: in VACUUM's transaction (this function's contract)
    let cid = unsafe { pg_sys::GetCurrentCommandId(true) };
    // SAFETY: a child of the current context, with a static name; deleted below (or with its
    // parent on an ERROR)
    let context = unsafe {
        pg_sys::AllocSetContextCreateExtended(
            pg_sys::CurrentMemoryContext,
            c"pg_columnar vacuum".as_ptr(),
            pg_sys::ALLOCSET_DEFAULT_MINSIZE as usize,
            pg_sys::ALLOCSET_DEFAULT_INITSIZE as usize,
            pg_sys::ALLOCSET_DEFAULT_MAXSIZE as usize,
        )
    };
    for group in &groups {
        // SAFETY: `rel` is open and locked by VACUUM (this function's contract), the group's
        // stripes are settled ones of its storage; `context` is switched back before its reset
        unsafe {
            let old = pg_sys::MemoryContextSwitchTo(context);
            write_group(
                rel,
                storage_id,
                &stripes[group.members.clone()],
                &removable,
                free.as_mut(),
                cid,
                &mut conflict,
                &mut dead,
                report,
            );
            pg_sys::MemoryContextSwitchTo(old);
            pg_sys::MemoryContextReset(context);
        }
    }
    if let Some(free) = free.as_mut() {
        let mut rewritten = vec![false; stripes.len()];
        groups
            .iter()
            .flat_map(|g| g.members.clone())
            .for_each(|i| rewritten[i] = true);
        // SAFETY: `rel` is open and locked by VACUUM (this function's contract); `free` was
        // counted while no writer ran
        unsafe { move_down(rel, &stripes, &rewritten, free, cid, &mut conflict, report) };
    }
    // SAFETY: the context and the snapshot were made above and are not used after
    unsafe {
        pg_sys::MemoryContextDelete(context);
        pg_sys::UnregisterSnapshot(snapshot);
    }
    if report.stripes_written + report.stripes_replaced + report.stripes_moved > 0 {
        // SAFETY: in VACUUM's transaction (this function's contract)
        unsafe { pg_sys::CommandCounterIncrement() };
    }
    report.deleted_rows_left = (deleted_rows.len() as u64).saturating_sub(report.rows_removed);
    dead.sort_unstable();
    dead
}

/// The runs of stripes to write again (see the module comment). `dead_below`: row numbers
/// below it that no stripe holds are dead (no writer can still fill them), so stripes with
/// such a gap between them may be merged.
fn plan(stripes: &[VacuumRow], removable: &[u64], dead_below: Option<u64>) -> Vec<Group> {
    let limit = write::stripe_row_limit();
    let small = SMALL_STRIPE_ROWS;
    let removed_in = |s: &StripeRow| {
        marks::rows_in(removable, s.first_row, s.row_count)
            .iter()
            .filter(|&&r| super::read::stripe_index_of(std::slice::from_ref(s), r).is_some())
            .count() as u64
    };
    let live = |s: &StripeRow| s.row_count - catalog::absent_count(s) - removed_in(s);
    // its catalog row gets the removed rows as absent, its marks go
    let worth_alone = |s: &StripeRow| removed_in(s) > 0;
    let mut groups = Vec::new();
    let mut i = 0;
    while i < stripes.len() {
        let s = &stripes[i];
        if !s.settled {
            i += 1;
            continue;
        }
        // a run of small settled stripes, each following the last without a gap (or with a
        // dead one), within one stripe's row numbers
        let mut end = i + 1;
        if live(&s.row) < small {
            while end < stripes.len() {
                let (prev, next) = (&stripes[end - 1].row, &stripes[end]);
                let follows = next.row.first_row == prev.first_row + prev.row_count
                    || dead_below.is_some_and(|n| next.row.first_row <= n);
                let span = next.row.first_row + next.row.row_count - s.row.first_row;
                if !next.settled || !follows || live(&next.row) >= small || span > limit {
                    break;
                }
                end += 1;
            }
        }
        if end - i > 1 || worth_alone(&s.row) {
            groups.push(Group { members: i..end });
        }
        i = end;
    }
    groups
}

/// Replaces the stripes `old` (settled, consecutive) by one whose absent rows are theirs,
/// the rows of `removable` (each with a mark's TID: the marks go too) and the row numbers
/// between them; records the row numbers that became absent in `dead`. One stripe keeps its
/// image and pages (only its catalog row changes); several are encoded again as one, every
/// stored row as it was (a removed row keeps its values, so the image packs as before) and a
/// placeholder at each number between them.
///
/// # Safety
///
/// `rel` is an open pg_columnar relation of storage `storage_id`, locked by VACUUM, and `old`
/// are stripes of it; `free`, if given, its free pages counted while no writer ran.
#[allow(clippy::too_many_arguments)]
unsafe fn write_group(
    rel: pg_sys::Relation,
    storage_id: u64,
    old: &[VacuumRow],
    removable: &[(u64, pg_sys::ItemPointerData)],
    free: Option<&mut FreePages>,
    cid: pg_sys::CommandId,
    conflict: &mut Conflict,
    dead: &mut Vec<(u64, u64)>,
    report: &mut VacuumReport,
) {
    let first_row = old[0].row.first_row;
    let last = &old[old.len() - 1].row;
    let span = last.first_row + last.row_count - first_row;
    let stripes: Vec<StripeRow> = old.iter().map(|v| v.row.clone()).collect();
    let lo = removable.partition_point(|r| r.0 < first_row);
    let hi = removable.partition_point(|r| r.0 < first_row + span);
    let mut removed: Vec<u64> = removable[lo..hi].iter().map(|r| r.0).collect();
    removed.dedup();
    let forget: Vec<pg_sys::ItemPointerData> = removable[lo..hi].iter().map(|r| r.1).collect();

    // the row numbers that hold no row from now on (absent), and those of them that held one
    // or were between the old stripes (dead: their index entries go)
    let in_old_range = |r: u64| {
        let i = stripes.partition_point(|s| s.first_row <= r);
        i > 0 && r < stripes[i - 1].first_row + stripes[i - 1].row_count
    };
    let mut absent: Vec<(u32, u32)> = Vec::new();
    let (mut absent_from, mut dead_from) = (None, None);
    let mut absent_total = 0;
    for offset in 0..=span {
        let row = first_row + offset;
        let (gone, newly) = if offset < span {
            let held = super::read::stripe_index_of(&stripes, row).is_some();
            let removed_now = held && removed.binary_search(&row).is_ok();
            let between = !in_old_range(row);
            report.rows_removed += removed_now as u64;
            report.gap_rows += between as u64;
            (!held || removed_now, removed_now || between)
        } else {
            (false, false)
        };
        if gone {
            absent_total += 1;
        }
        match (gone, absent_from) {
            (true, None) => absent_from = Some(offset),
            (false, Some(from)) => {
                absent.push((from as u32, (offset - from) as u32));
                absent_from = None;
            }
            _ => {}
        }
        match (newly, dead_from) {
            (true, None) => dead_from = Some(row),
            (false, Some(from)) => {
                dead.push((from, row));
                dead_from = None;
            }
            _ => {}
        }
    }

    conflict.before_write(rel, false);
    // SAFETY: only clears this backend's lazy-VACUUM flag, before its first write
    unsafe { crate::compat::leave_lazy_vacuum_mode() };
    let old_tids: Vec<pg_sys::ItemPointerData> = old.iter().map(|v| v.tid).collect();
    if absent_total < span {
        let (mut row, zones) = if let [only] = old {
            // the same image and pages under a new catalog row: its zone summary may cover
            // values of rows now absent, which only makes it looser
            (
                only.row.clone(),
                only.zones.as_deref().map(std::rc::Rc::<[u8]>::from),
            )
        } else {
            // SAFETY: `rel` is open and `stripes` are consecutive stripes of it (this
            // function's contract)
            let image = unsafe { merged_image(rel, &stripes, first_row, span) };
            report.images_encoded += 1;
            let first_block =
                match free.and_then(|f| f.take(pages::pages_for(image.len()), u32::MAX)) {
                    Some(block) => {
                        conflict.before_write(rel, true);
                        pages::write_at(rel, block, &image);
                        block
                    }
                    None => pages::append(rel, &image),
                };
            let (row, zones) = write::catalog_row(&image, storage_id, first_row, span, first_block);
            (row, Some(zones))
        };
        row.vacuumed = true;
        // (a rewrite's copy written again is no longer one: the old catalog row stays
        // for the snapshots that do not see this VACUUM)
        row.original_xid = None;
        row.absent = absent.into();
        catalog::insert(&row, zones.as_deref(), cid);
        report.stripes_written += 1;
    }
    catalog::delete_rows(&old_tids);
    marks::forget(&forget);
    report.stripes_replaced += old.len() as u64;
}

/// The image of one stripe over row numbers `first_row..first_row + span` holding every
/// stored row of `stripes` (consecutive, of `rel`) at its number, and at each number between
/// them a copy of a neighbouring row: the next one if it lies in the same vector of 1024
/// numbers and the previous one does not, else the previous one. Rows are copied as heap
/// tuples into the current memory context.
///
/// # Safety
///
/// `rel` is an open pg_columnar relation, locked, and `stripes` are consecutive stripes of it.
unsafe fn merged_image(
    rel: pg_sys::Relation,
    stripes: &[StripeRow],
    first_row: u64,
    span: u64,
) -> Vec<u8> {
    let mut scan = RowScan::new(
        StripeReader::of_stripes(rel, stripes.to_vec()),
        std::ptr::null(),
    );
    // SAFETY: `rel` is open (this function's contract); the slot is dropped below
    let slot = unsafe { pg_sys::MakeSingleTupleTableSlot((*rel).rd_att, &pg_sys::TTSOpsVirtual) };
    let mut rows: Vec<(u64, pg_sys::HeapTuple)> = Vec::new();
    while scan.next(true, slot) {
        // SAFETY: `slot` is the slot made above, holding the row just scanned
        let row =
            tid::from_tid(unsafe { &(*slot).tts_tid }).expect("a scanned row has a row number");
        // SAFETY: `slot` holds the row just scanned; the copy is made in the current context
        rows.push((row, unsafe { pg_sys::ExecCopySlotHeapTuple(slot) }));
    }
    // SAFETY: made above, not used after
    unsafe { pg_sys::ExecDropSingleTupleTableSlot(slot) };
    drop(scan);
    // a sorted stripe gives its rows in stored order
    rows.sort_unstable_by_key(|r| r.0);
    let mut builder = write::ImageBuilder::new(rel);
    let vector = |r: u64| (r - first_row) / pg_columnar_codec::MAX_ROWS as u64;
    let mut next = 0usize;
    for offset in 0..span {
        let row = first_row + offset;
        if next < rows.len() && rows[next].0 == row {
            // SAFETY: a heap tuple copied above from a slot of `rel`'s descriptor, the
            // builder's, in the current context, which lives to the end of this function
            unsafe { builder.push_tuple(rows[next].1) };
            next += 1;
            continue;
        }
        let before = next.checked_sub(1).map(|i| rows[i]);
        let after = rows.get(next).copied();
        let source = match (before, after) {
            (Some(b), Some(a)) if vector(b.0) != vector(row) && vector(a.0) == vector(row) => a,
            (Some(b), _) => b,
            (None, Some(a)) => a,
            (None, None) => unreachable!("the stripes store rows"),
        };
        // SAFETY: `source` is one of the heap tuples copied above from a slot of `rel`'s
        // descriptor, the builder's, in the current context
        unsafe { builder.push_tuple(source.1) };
    }
    builder.encode(rel)
}

/// Moves stripes from the end of the file into free pages below them (copying their images
/// as they are), from the last one down, as long as the last one can move (it is settled and
/// a free run below it holds it): a later VACUUM can then give the end back. Only when at
/// least a sixteenth of the file (and 8 pages) is free, as heap's truncation asks.
///
/// # Safety
///
/// `rel` is an open pg_columnar relation, locked by VACUUM, `stripes` its stripes, and `free`
/// its free pages counted while no writer ran.
unsafe fn move_down(
    rel: pg_sys::Relation,
    stripes: &[VacuumRow],
    rewritten: &[bool],
    free: &mut FreePages,
    cid: pg_sys::CommandId,
    conflict: &mut Conflict,
    report: &mut VacuumReport,
) {
    // SAFETY: `rel` is open (this function's contract)
    let nblocks =
        unsafe { pg_sys::RelationGetNumberOfBlocksInFork(rel, pg_sys::ForkNumber::MAIN_FORKNUM) };
    if free.pages() < 8 || free.pages() * 16 < nblocks as u64 {
        return;
    }
    let mut order: Vec<usize> = (0..stripes.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(stripes[i].row.first_block));
    let mut reader = pages::PageReader::new(rel, true);
    let mut image = Vec::new();
    for i in order {
        let v = &stripes[i];
        if !v.settled || rewritten[i] {
            break;
        }
        let count = pages::pages_for(v.row.byte_length as usize);
        // a free run holds it only below its own pages, which are occupied
        let Some(block) = free.take(count, v.row.first_block) else {
            break;
        };
        reader.read(v.row.first_block, 0, v.row.byte_length as usize, &mut image);
        if xxhash_rust::xxh3::xxh3_64(&image[..v.row.prefix_length as usize])
            != v.row.prefix_checksum
        {
            crate::storage::corrupt(
                rel,
                format!(
                    "stripe at row {} (block {}): directory checksum mismatch",
                    v.row.first_row, v.row.first_block
                ),
            );
        }
        conflict.before_write(rel, true);
        // SAFETY: only clears this backend's lazy-VACUUM flag, before its first write
        unsafe { crate::compat::leave_lazy_vacuum_mode() };
        pages::write_at(rel, block, &image);
        let mut row = v.row.clone();
        row.first_block = block;
        row.vacuumed = true;
        row.original_xid = None;
        catalog::insert(&row, v.zones.as_deref(), cid);
        catalog::delete_rows(&[v.tid]);
        report.stripes_moved += 1;
    }
}

/// Bulk deletion of the index entries of the row-number ranges `dead` (ascending,
/// half-open), then each index's cleanup, told the table's `rows`; returns how many entries
/// went.
///
/// # Safety
///
/// `rel` is an open pg_columnar relation, locked by VACUUM, in VACUUM's transaction;
/// `strategy` is VACUUM's (or null).
unsafe fn remove_index_entries(
    rel: pg_sys::Relation,
    dead: &[(u64, u64)],
    strategy: pg_sys::BufferAccessStrategy,
    rows: f64,
) -> u64 {
    // SAFETY: `rel` is open (this function's contract)
    if dead.is_empty() || !unsafe { (*(*rel).rd_rel).relhasindex } {
        return 0;
    }
    /// The bulk deletion's callback: whether the entry for `tid` goes.
    ///
    /// # Safety
    ///
    /// `tid` is a valid TID and `state` the `Vec<(u64, u64)>` given with this callback.
    // Not #[pg_guard]: it cannot raise an ERROR or panic (a binary search over a Vec, and
    // arithmetic that cannot overflow), so nothing unwinds into PostgreSQL.
    unsafe extern "C-unwind" fn is_dead(
        tid: pg_sys::ItemPointer,
        state: *mut std::ffi::c_void,
    ) -> bool {
        // SAFETY: `state` is `dead` below, passed with this callback to index_bulk_delete,
        // which calls it only while `dead` lives; `tid` is a valid TID (the index's entry)
        let (dead, tid) = unsafe { (&*(state as *const Vec<(u64, u64)>), &*tid) };
        let Some(row) = tid::from_tid(tid) else {
            return false;
        };
        let i = dead.partition_point(|&(a, _)| a <= row);
        i > 0 && row < dead[i - 1].1
    }
    let dead: Vec<(u64, u64)> = dead.to_vec();
    let mut nindexes = 0;
    let mut indexes: *mut pg_sys::Relation = std::ptr::null_mut();
    // SAFETY: `rel` is open (this function's contract); the indexes are closed below
    unsafe {
        pg_sys::vac_open_indexes(
            rel,
            pg_sys::RowExclusiveLock as pg_sys::LOCKMODE,
            &mut nindexes,
            &mut indexes,
        )
    };
    let mut removed = 0.0;
    for k in 0..nindexes as usize {
        // SAFETY: `indexes` holds the `nindexes` indexes opened above; `dead` outlives the
        // bulk deletion that calls `is_dead` with it; the stats returned are palloc'd, freed
        // here after the cleanup
        unsafe {
            let index = *indexes.add(k);
            let mut info = crate::compat::index_vacuum_info(index, rel, strategy, rows);
            let stats = pg_sys::index_bulk_delete(
                &mut info,
                std::ptr::null_mut(),
                Some(is_dead),
                &dead as *const _ as *mut std::ffi::c_void,
            );
            if !stats.is_null() {
                removed += (*stats).tuples_removed;
            }
            let stats = pg_sys::index_vacuum_cleanup(&mut info, stats);
            if !stats.is_null() {
                pg_sys::pfree(stats.cast());
            }
        }
    }
    // SAFETY: the indexes opened above, closed once; their locks are kept to the end of the
    // transaction
    unsafe { pg_sys::vac_close_indexes(nindexes, indexes, pg_sys::NoLock as pg_sys::LOCKMODE) };
    removed as u64
}

/// Step 3: gives back the pages after the last one a snapshot may read, when no one else is
/// using the table; returns how many.
///
/// # Safety
///
/// `rel` is an open pg_columnar relation, locked by VACUUM, in VACUUM's transaction.
unsafe fn truncate(rel: pg_sys::Relation) -> u64 {
    // SAFETY: `rel` is open (this function's contract)
    if !unsafe {
        pg_sys::ConditionalLockRelation(rel, pg_sys::AccessExclusiveLock as pg_sys::LOCKMODE)
    } {
        return 0;
    }
    // SAFETY: `rel` is open (this function's contract)
    let nblocks =
        unsafe { pg_sys::RelationGetNumberOfBlocksInFork(rel, pg_sys::ForkNumber::MAIN_FORKNUM) };
    let used = match meta::read(rel) {
        Some(m) => catalog::occupied(m.storage_id)
            .iter()
            .map(|&(first, count)| first + count)
            .max()
            .unwrap_or(1),
        None => nblocks.min(1),
    };
    let truncated = if used < nblocks {
        // SAFETY: `rel` is open and locked exclusively (taken above), so no other backend
        // reads the pages given back
        unsafe { pg_sys::RelationTruncate(rel, used) };
        (nblocks - used) as u64
    } else {
        0
    };
    // SAFETY: releases the lock taken above
    unsafe { pg_sys::UnlockRelation(rel, pg_sys::AccessExclusiveLock as pg_sys::LOCKMODE) };
    truncated
}

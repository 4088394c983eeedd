//! Table rewrites that keep what every snapshot sees: VACUUM FULL and CLUSTER
//! (`relation_copy_for_cluster`).
//!
//! PostgreSQL gives the table a new, empty file and asks the access method to copy the rows
//! into it; the old file goes at commit. Heap's rewrite keeps each tuple's `xmin` and `xmax`,
//! so a transaction whose snapshot is older than the rewrite reads the same rows after it as
//! before. Here a stripe's rows are visible through its catalog row, which the rewrite
//! inserts, and a row's deletion through its mark: both would be the rewrite's own, invisible
//! to those older snapshots (they would find the table empty). So the copies record the
//! transaction they stand for (`original_xid` of `pgcol.stripe` and `pgcol.row_mark`), which
//! the older snapshots go by (`storage::scan_catalog`):
//!
//! * a row is copied unless its deletion is *settled* (its deleter committed before the
//!   rewrite's horizon `OldestXmin`, so no snapshot can still see the row) or the row was
//!   taken back by its own `INSERT ... ON CONFLICT`;
//! * the rows of a stripe whose inserter every snapshot sees go into stripes standing for
//!   FrozenTransactionId; the rows of a stripe some snapshot does not see yet go into
//!   stripes of their own standing for that inserter (rows of one original transaction per
//!   stripe);
//! * a copied row whose deletion is not settled (recently dead, as heap says) gets a copy of
//!   its delete mark standing for the deleter, with an UPDATE's successor renumbered.
//!
//! The rewrite holds an AccessExclusiveLock, so no other transaction writing the table is
//! running: every stripe and mark it reads is committed. CLUSTER orders the rows by an
//! index, through PostgreSQL's cluster sort (`tuplesort_begin_cluster`) or an index scan, as
//! the planner chose for heap; rows standing for a transaction some snapshot does not see
//! yet are written after all the others (each stripe holds one original transaction's
//! rows), in the same order.

use std::collections::HashMap;

use pgrx::pg_sys;

use super::read::stripe_index_of;
use super::scan::{RowScan, StripeReader};
use super::write;
use crate::storage::catalog::StripeRow;
use crate::storage::marks::{self, Mode, Successor};
use crate::storage::tid;

/// What one rewrite did, for PostgreSQL's report (VACUUM VERBOSE) and statistics.
#[derive(Default)]
pub(super) struct RewriteCounts {
    /// Rows written, the recently dead among them.
    pub written: f64,
    pub recently_dead: f64,
    /// Rows left behind: dead to every snapshot.
    pub removed: f64,
}

/// A deletion the new table must keep: its mode, an UPDATE's new version (the old row
/// number), and the transaction it stands for.
#[derive(Clone, Copy)]
struct KeptDeletion {
    mode: Mode,
    successor: Option<Successor>,
    deleter: pg_sys::TransactionId,
}

/// What the old storage's catalogs say of its rows.
struct OldRows {
    /// Stripes in row order, and the transaction each one's rows stand for.
    stripes: Vec<StripeRow>,
    stand_for: Vec<pg_sys::TransactionId>,
    /// Rows no snapshot sees any more, ascending.
    dead: Vec<u64>,
    /// Rows some snapshot still sees that others see deleted.
    recently_dead: HashMap<u64, KeptDeletion>,
}

/// The transaction a copy of something `xid` made stands for (`None`: a frozen catalog
/// tuple's): FrozenTransactionId once every snapshot sees `xid` (it precedes the rewrite's
/// horizon; FrozenTransactionId itself precedes every normal id), else `xid`.
fn standing_for(
    xid: Option<pg_sys::TransactionId>,
    oldest_xmin: pg_sys::TransactionId,
) -> pg_sys::TransactionId {
    match xid {
        // SAFETY: a comparison of two transaction ids, reading no shared state
        Some(x) if unsafe { !pg_sys::TransactionIdPrecedes(x, oldest_xmin) } => x,
        _ => pg_sys::FrozenTransactionId,
    }
}

impl OldRows {
    /// What the catalogs say of the rows of `scan`, a scan of the old table under SnapshotAny
    /// (its stripes: every one no aborted transaction wrote, as no writer runs).
    fn read(scan: &StripeReader, storage_id: u64, oldest_xmin: pg_sys::TransactionId) -> OldRows {
        // a stripe's catalog row reports its rows' inserter (the original one for an earlier
        // rewrite's copy, FrozenTransactionId for VACUUM's)
        let stripes = scan.stripes.clone();
        let stand_for = stripes
            .iter()
            .map(|s| standing_for(Some(s.xmin), oldest_xmin))
            .collect();
        // SAFETY: SnapshotData is plain C data, for which all zeroes is a valid value (and,
        // with its type set below, the dirty snapshot InitDirtySnapshot makes)
        let mut dirty: pg_sys::SnapshotData = unsafe { std::mem::zeroed() };
        dirty.snapshot_type = pg_sys::SnapshotType::SNAPSHOT_DIRTY;
        let mut dead = Vec::new();
        let mut recently_dead = HashMap::new();
        for m in marks::for_vacuum(storage_id, &mut dirty) {
            if !m.mode.deletes() {
                // a lock's mark: its transaction has ended
                continue;
            }
            let deleter = standing_for(m.original.or(m.maker), oldest_xmin);
            if m.mode == Mode::Killed || deleter == pg_sys::FrozenTransactionId {
                dead.push(m.row);
            } else {
                recently_dead.insert(
                    m.row,
                    KeptDeletion {
                        mode: m.mode,
                        successor: m.successor,
                        deleter,
                    },
                );
            }
        }
        dead.sort_unstable();
        dead.dedup();
        OldRows {
            stripes,
            stand_for,
            dead,
            recently_dead,
        }
    }

    /// The transaction the copy of row `row` stands for.
    fn stands_for(&self, row: u64) -> pg_sys::TransactionId {
        stripe_index_of(&self.stripes, row)
            .map_or(pg_sys::FrozenTransactionId, |i| self.stand_for[i])
    }

    /// Whether some stripe's rows stand for a transaction that not every snapshot sees.
    fn any_recent(&self) -> bool {
        self.stand_for
            .iter()
            .any(|&x| x != pg_sys::FrozenTransactionId)
    }
}

/// Where the rows come from, in the order they are written.
enum Source {
    /// The old table in row order (VACUUM FULL).
    Table(Box<RowScan>),
    /// The old table through an index, in its order (CLUSTER by index scan).
    Index(*mut pg_sys::IndexScanDescData),
    /// The old table sorted by an index's key (CLUSTER by sort), rows in `heap_slot`.
    Sorted(*mut pg_sys::Tuplesortstate),
}

/// Copies the rows of `old` that some snapshot still sees into `new` (see the module
/// comment), ordered by `old_index` if it is not null (through a sort if `use_sort`).
///
/// # Safety
/// `old` and `new` are open pg_columnar relations of one row type, `old_index` null or an
/// index of `old`, as `relation_copy_for_cluster` gives them.
pub(super) unsafe fn copy_for_cluster(
    old: pg_sys::Relation,
    new: pg_sys::Relation,
    old_index: pg_sys::Relation,
    use_sort: bool,
    oldest_xmin: pg_sys::TransactionId,
) -> RewriteCounts {
    let mut counts = RewriteCounts::default();
    let any = std::ptr::addr_of_mut!(pg_sys::SnapshotAnyData);
    let scan = Box::new(RowScan::new(
        StripeReader::visible(old, any, true),
        std::ptr::null(),
    ));
    let Some(storage_id) = scan.reader.storage_id else {
        return counts;
    };
    let rows = OldRows::read(&scan.reader, storage_id, oldest_xmin);
    // SAFETY: `old` is open (this function's contract); both slots are dropped below
    let slot = unsafe { pg_sys::table_slot_create(old, std::ptr::null_mut()) };
    // SAFETY: `old` is open (this function's contract), its descriptor valid; TTSOpsHeapTuple
    // is PostgreSQL's constant table of slot operations
    let heap_slot =
        unsafe { pg_sys::MakeSingleTupleTableSlot((*old).rd_att, &pg_sys::TTSOpsHeapTuple) };
    let mut source = if old_index.is_null() {
        Source::Table(scan)
    } else if use_sort {
        // SAFETY: `old` and its index `old_index` are open (this function's contract), and
        // `slot` is a slot of `old` made above
        Source::Sorted(unsafe { sorted_rows(old, old_index, scan, &rows, slot) })
    } else {
        drop(scan);
        // SAFETY: `old_index` is an open index of `old` (this function's contract); `any` is
        // PostgreSQL's static SnapshotAny; the scan is ended below
        unsafe {
            let index_scan = crate::compat::index_beginscan(old, old_index, any, 0);
            pg_sys::index_rescan(index_scan, std::ptr::null_mut(), 0, std::ptr::null_mut(), 0);
            Source::Index(index_scan)
        }
    };
    // SAFETY: inside the rewrite's transaction, which can use its command id
    let cid = unsafe { pg_sys::GetCurrentCommandId(true) };
    // the new numbers of the rows recently dead rows were updated to
    let wanted: std::collections::HashSet<u64> = rows
        .recently_dead
        .values()
        .filter_map(|d| match d.successor {
            Some(Successor::Row(r)) => Some(r),
            _ => None,
        })
        .collect();
    let mut renumbered: HashMap<u64, u64> = HashMap::new();
    let mut kept: Vec<(u64, KeptDeletion)> = Vec::new();
    // an ordered copy writes the rows every snapshot sees first, then the others: each
    // stripe stands for one transaction, and an order that alternates would cut stripes
    let passes: &[Option<bool>] = match (&source, rows.any_recent()) {
        (Source::Table(_), _) | (_, false) => &[None],
        _ => &[Some(true), Some(false)],
    };
    for (pass, &settled_only) in passes.iter().enumerate() {
        if pass > 0 {
            // SAFETY: `source` was begun above and not ended; only the ordered sources are
            // passed over twice (`passes`)
            unsafe { restart(&mut source) };
        }
        // SAFETY: `source` was begun above, `slot` is a slot of `old`, `heap_slot` a heap
        // tuple slot of its row type, all live until the end below
        while let Some(row_slot) = unsafe { next_row(&mut source, slot, heap_slot) } {
            pgrx::check_for_interrupts!();
            // SAFETY: `row_slot` is `slot` or `heap_slot`, both live
            let Some(row) = tid::from_tid(unsafe { &(*row_slot).tts_tid }) else {
                continue;
            };
            if rows.dead.binary_search(&row).is_ok() {
                if pass == 0 {
                    counts.removed += 1.0;
                }
                continue;
            }
            let stands_for = rows.stands_for(row);
            if settled_only
                .is_some_and(|settled| settled != (stands_for == pg_sys::FrozenTransactionId))
            {
                continue;
            }
            write::insert_copy(new, row_slot, cid, stands_for);
            // SAFETY: `row_slot` is `slot` or `heap_slot`, both live
            let new_row = tid::from_tid(unsafe { &(*row_slot).tts_tid })
                .expect("a row just written has a row number");
            if wanted.contains(&row) {
                renumbered.insert(row, new_row);
            }
            if let Some(&d) = rows.recently_dead.get(&row) {
                kept.push((new_row, d));
                counts.recently_dead += 1.0;
            }
            counts.written += 1.0;
        }
    }
    // SAFETY: the source and the two slots were made above, are ended here once, and are not
    // used after
    unsafe {
        match source {
            Source::Table(scan) => drop(scan),
            Source::Index(scan) => pg_sys::index_endscan(scan),
            Source::Sorted(sort) => pg_sys::tuplesort_end(sort),
        }
        pg_sys::ExecDropSingleTupleTableSlot(heap_slot);
        pg_sys::ExecDropSingleTupleTableSlot(slot);
    }
    write::flush_relation(new);
    if !kept.is_empty() {
        let new_storage = crate::storage::meta::storage_id(new)
            .expect("a table with rows written has a storage id");
        for (new_row, d) in kept {
            let successor = match d.successor {
                // (a new version no snapshot sees any more: an UPDATE whose deleter every
                // snapshot sees, so no one follows this row to it)
                Some(Successor::Row(r)) => renumbered.get(&r).map(|&n| Successor::Row(n)),
                other => other,
            };
            marks::insert_copy(new_storage, new_row, d.mode, successor, d.deleter, cid);
        }
    }
    counts
}

/// Feeds every row of `scan` (of `old` under SnapshotAny: every row no aborted transaction
/// inserted) into a cluster sort on `index`'s key, and sorts; random access, for a second
/// pass, if there will be one.
///
/// # Safety
///
/// `old` and its index `index` are open and locked, and `slot` is a slot of `old`.
unsafe fn sorted_rows(
    old: pg_sys::Relation,
    index: pg_sys::Relation,
    mut scan: Box<RowScan>,
    rows: &OldRows,
    slot: *mut pg_sys::TupleTableSlot,
) -> *mut pg_sys::Tuplesortstate {
    let sortopt = if rows.any_recent() {
        pg_sys::TUPLESORT_RANDOMACCESS as i32
    } else {
        pg_sys::TUPLESORT_NONE as i32
    };
    // SAFETY: `old` and `index` are open (this function's contract); `maintenance_work_mem`
    // is a setting only this backend's thread writes
    let sort = unsafe {
        pg_sys::tuplesort_begin_cluster(
            (*old).rd_att,
            index,
            pg_sys::maintenance_work_mem,
            std::ptr::null_mut(),
            sortopt,
        )
    };
    while scan.next(true, slot) {
        pgrx::check_for_interrupts!();
        let mut should_free = false;
        // SAFETY: `slot` (a slot of `old`, this function's contract) holds the row just
        // scanned; `tuple` is its heap form, copied by the sort and freed here if made for it
        unsafe {
            let tuple = pg_sys::ExecFetchSlotHeapTuple(slot, false, &mut should_free);
            // the sort keeps a tuple's TID: the row number it came from
            (*tuple).t_self = (*slot).tts_tid;
            pg_sys::tuplesort_putheaptuple(sort, tuple);
            if should_free {
                pg_sys::heap_freetuple(tuple);
            }
        }
    }
    // SAFETY: `sort` was begun above; the caller ends it
    unsafe { pg_sys::tuplesort_performsort(sort) };
    sort
}

/// The next row of `source` in a slot (`slot` or `heap_slot`) whose TID is its row number in
/// the old table, or `None` at the end.
///
/// # Safety
///
/// `source` is begun and not ended, `slot` is a slot of the old table and `heap_slot` a heap
/// tuple slot of its row type.
unsafe fn next_row(
    source: &mut Source,
    slot: *mut pg_sys::TupleTableSlot,
    heap_slot: *mut pg_sys::TupleTableSlot,
) -> Option<*mut pg_sys::TupleTableSlot> {
    match source {
        Source::Table(scan) => scan.next(true, slot).then_some(slot),
        // SAFETY: an index scan begun and not ended, and a slot of its table (this function's
        // contract)
        Source::Index(scan) => unsafe {
            pg_sys::index_getnext_slot(*scan, pg_sys::ScanDirection::ForwardScanDirection, slot)
        }
        .then_some(slot),
        Source::Sorted(sort) => {
            // SAFETY: a sort performed and not ended (this function's contract); forward
            // reads return tuples the sort owns, valid until the next read
            let tuple = unsafe { pg_sys::tuplesort_getheaptuple(*sort, true) };
            if tuple.is_null() {
                return None;
            }
            // SAFETY: `tuple` is not null and of the old table's row type, which `heap_slot`
            // has (this function's contract); not freed by the slot (the sort owns it)
            unsafe {
                pg_sys::ExecStoreHeapTuple(tuple, heap_slot, false);
                (*heap_slot).tts_tid = (*tuple).t_self;
            }
            Some(heap_slot)
        }
    }
}

/// Starts `source` again from its first row.
///
/// # Safety
///
/// `source` is begun and not ended; a sort was begun with random access.
unsafe fn restart(source: &mut Source) {
    match source {
        Source::Table(_) => unreachable!("a copy in the table's order makes one pass"),
        // SAFETY: an index scan begun and not ended (this function's contract)
        Source::Index(scan) => unsafe {
            pg_sys::index_rescan(*scan, std::ptr::null_mut(), 0, std::ptr::null_mut(), 0)
        },
        // SAFETY: a sort performed with random access, not ended (this function's contract)
        Source::Sorted(sort) => unsafe { pg_sys::tuplesort_rescan(*sort) },
    }
}

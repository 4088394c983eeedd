//! A scan's delete mask: which rows of each stripe its snapshot finds deleted (their delete
//! marks, `storage::marks`) or absent (removed by VACUUM, `catalog::absent_rows`).
//!
//! Read a stripe at a time, when the scan first asks about one: a scan that reads a few
//! stripes (one the zone maps skip to, a bitmap scan's few rows) reads the marks and absent
//! rows of those, not of the whole table, whose deletions may be many until VACUUM
//! removes them. Each read covers the stripe asked about and the ones after it that have
//! not been read, twice as many as the read before (1, 2, 4, ...), so a scan of every
//! stripe reads the mark catalog about log2(stripes) times, not once per stripe.
//!
//! The scan's snapshot stays the same for its life (the executor's, registered while the
//! scan runs), so what a later read finds is what a read at the start would have found for
//! an MVCC snapshot; for the others (SnapshotSelf, dirty), as heap, a row is judged when the
//! scan reaches it.

use pgrx::pg_sys;

use crate::storage::catalog::{self, StripeRow};
use crate::storage::marks;

thread_local! {
    /// Reads of scans' delete masks so far, and the stripes they covered (`pgcol.kept_stripes`).
    static READS: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) };
}

/// Reads of scans' delete masks so far in this backend, and the stripes they covered.
pub fn reads() -> (u64, u64) {
    READS.with(|r| r.get())
}

pub struct DeleteMask {
    /// Where marks are read: the table's storage id, the snapshot and the table (whose
    /// serializable readers check their conflicts as they read); `None` masks nothing (a
    /// fetch's scan, which asks about each row itself, and VACUUM's read of every stored
    /// row).
    source: Option<(u64, pg_sys::Snapshot, pg_sys::Relation)>,
    /// Deleted and absent rows of each stripe (by index in the scan's stripes), ascending,
    /// once read.
    stripes: Vec<Option<Vec<u64>>>,
    /// Stripes the next read covers at most.
    batch: usize,
}

impl DeleteMask {
    /// The mask of `stripes` stripes of `rel` under `snapshot`, marks of `storage_id` (none
    /// without one: the table has no rows, or none of them can be deleted).
    pub fn new(
        rel: pg_sys::Relation,
        storage_id: Option<u64>,
        snapshot: pg_sys::Snapshot,
        stripes: usize,
    ) -> DeleteMask {
        DeleteMask {
            source: storage_id.map(|id| (id, snapshot, rel)),
            stripes: vec![None; stripes],
            batch: 1,
        }
    }

    /// A mask that hides no row.
    pub fn none(stripes: usize) -> DeleteMask {
        DeleteMask {
            source: None,
            stripes: vec![Some(Vec::new()); stripes],
            batch: 1,
        }
    }

    /// The mask of a scan whose stripe `at` was just listed, before the one there (a scan
    /// that lists the stripes of the rows it is asked for, `StripeReader::stripe_of_row`).
    pub fn stripe_listed(&mut self, at: usize) {
        self.stripes.insert(
            at,
            if self.source.is_some() {
                None
            } else {
                Some(Vec::new())
            },
        );
    }

    /// The same mask for `stripes` stripes listed afresh, none of them read yet.
    pub fn relisted(&self, stripes: usize) -> DeleteMask {
        let unread = if self.source.is_some() {
            None
        } else {
            Some(Vec::new())
        };
        DeleteMask {
            source: self.source,
            stripes: vec![unread; stripes],
            batch: 1,
        }
    }

    /// The deleted and absent rows of stripe `i` of `stripes` (the scan's, sorted by first
    /// row), ascending.
    pub fn of_stripe(&mut self, stripes: &[StripeRow], i: usize) -> &[u64] {
        if self.stripes[i].is_none() {
            self.read_from(stripes, i);
        }
        self.stripes[i].as_deref().expect("just read")
    }

    /// Whether row `row` of stripe `i` is deleted or absent.
    pub fn hides(&mut self, stripes: &[StripeRow], i: usize, row: u64) -> bool {
        self.of_stripe(stripes, i).binary_search(&row).is_ok()
    }

    /// Reads stripe `i` and the unread ones after it, up to `batch` stripes.
    fn read_from(&mut self, stripes: &[StripeRow], i: usize) {
        let end = (i..stripes.len())
            .take(self.batch)
            .take_while(|&j| self.stripes[j].is_none())
            .last()
            .map_or(i + 1, |j| j + 1);
        self.batch = self.batch.saturating_mul(2);
        let (lo, hi) = (
            stripes[i].first_row,
            stripes[end - 1].first_row + stripes[end - 1].row_count,
        );
        let deleted = match self.source {
            Some((id, snapshot, rel)) => {
                READS.with(|r| r.set((r.get().0 + 1, r.get().1 + (end - i) as u64)));
                marks::deleted_among(id, lo..hi, snapshot, rel)
            }
            None => Vec::new(),
        };
        for (j, s) in stripes.iter().enumerate().take(end).skip(i) {
            let mut rows = marks::rows_in(&deleted, s.first_row, s.row_count).to_vec();
            if !s.absent.is_empty() {
                rows.extend(catalog::absent_rows(s));
                rows.sort_unstable();
                rows.dedup();
            }
            self.stripes[j] = Some(rows);
        }
    }
}

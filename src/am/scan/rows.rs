//! Row at a time, forward or backward, over every stripe a [`StripeReader`] lists: the table
//! access method's sequential and TID-range scans, index builds, rewrites and VACUUM's read
//! of the stripes it merges. A parallel scan's workers take whole stripes from a shared
//! counter. Rows deleted for the reader's snapshot are passed over.

use std::sync::atomic::AtomicU64;

use pgrx::pg_sys;

use super::reader::{self, StripeReader};

/// A scan row at a time over a [`StripeReader`].
pub struct RowScan {
    pub reader: StripeReader,
    /// The stripe counter the workers of a parallel scan share; null for a serial scan.
    parallel: *const AtomicU64,
    /// Position: stripe index and row within the stripe of the row last returned; `None`
    /// before the first row.
    pos: Option<(usize, u64)>,
    /// Inclusive row-number bounds of a TID range scan.
    range: Option<(u64, u64)>,
}

impl RowScan {
    /// A scan of the stripes `reader` lists; `parallel`: the stripe counter of the parallel
    /// scan this one is part of (null: a serial scan).
    pub fn new(reader: StripeReader, parallel: *const AtomicU64) -> RowScan {
        RowScan {
            reader,
            parallel,
            pos: None,
            range: None,
        }
    }

    /// Starts again before the first row.
    pub fn restart(&mut self) {
        self.pos = None;
    }

    /// Returns only the rows numbered `lo..=hi` (a TID range scan), from the start.
    pub(super) fn set_range(&mut self, lo: u64, hi: u64) {
        self.range = Some((lo, hi));
        self.restart();
    }

    /// Whether the row stripe `i` stores at `r` is in the TID range.
    fn in_range(&mut self, i: usize, r: u64) -> bool {
        let Some((lo, hi)) = self.range else {
            return true;
        };
        let n = self.reader.stripes[i].first_row + self.reader.offset_of(i, r);
        lo <= n && n <= hi
    }

    /// Moves to the next row (forward or backward) and returns its position.
    fn step(&mut self, forward: bool) -> Option<(usize, u64)> {
        loop {
            let next = if forward {
                match self.pos {
                    Some((i, r)) if r + 1 < self.reader.stripes[i].row_count => Some((i, r + 1)),
                    Some((i, _)) => {
                        reader::next_stripe(self.parallel, Some(i), self.reader.stripes.len())
                            .map(|j| (j, 0))
                    }
                    None => reader::next_stripe(self.parallel, None, self.reader.stripes.len())
                        .map(|j| (j, 0)),
                }
            } else {
                match self.pos {
                    Some((i, r)) if r > 0 => Some((i, r - 1)),
                    Some((0, _)) => None,
                    Some((i, _)) => Some((i - 1, self.reader.stripes[i - 1].row_count - 1)),
                    None => self
                        .reader
                        .stripes
                        .len()
                        .checked_sub(1)
                        .map(|j| (j, self.reader.stripes[j].row_count - 1)),
                }
            };
            // Off either end the position is "outside the table", as heap's `rs_inited = false`:
            // a step back after running off the end starts at the last row, not the one before.
            let Some((i, r)) = next else {
                self.pos = None;
                return None;
            };
            self.pos = Some((i, r));
            if self.reader.stripes[i].row_count == 0 {
                continue;
            }
            if let Some((lo, hi)) = self.range {
                let s = self.reader.stripes[i].clone();
                // skip whole stripes outside the range
                if s.first_row + s.row_count <= lo || s.first_row > hi {
                    self.pos = Some((i, if forward { s.row_count - 1 } else { 0 }));
                    if !forward && i == 0 {
                        self.pos = None;
                        return None;
                    }
                    continue;
                }
                if !self.in_range(i, r) {
                    continue;
                }
            }
            if self.reader.stored_row_deleted(i, r) {
                continue;
            }
            return Some((i, r));
        }
    }

    /// Stores the next row (forward or backward) into `slot`; false, with `slot` cleared, at
    /// the end.
    pub fn next(&mut self, forward: bool, slot: *mut pg_sys::TupleTableSlot) -> bool {
        match self.step(forward) {
            Some((i, r)) => {
                self.reader.store(i, r, slot);
                true
            }
            None => {
                // SAFETY: the caller's slot, valid for the call
                unsafe { pg_sys::ExecClearTuple(slot) };
                false
            }
        }
    }
}

//! ANALYZE's sample: PostgreSQL picks blocks among the relation's, and each block stands for
//! an equal share of the stored rows of the visible stripes, by ordinal; rows deleted for the
//! snapshot are passed over and counted dead.

use pgrx::pg_sys;

use super::reader::StripeReader;

pub struct AnalyzeScan {
    pub reader: StripeReader,
    /// Rows of the current sample block still to return, by ordinal.
    block: Option<std::ops::Range<u64>>,
    /// Total rows of the visible stripes.
    total_rows: u64,
    /// Ordinal (among the stored rows of visible stripes) of each stripe's first row.
    first_ordinals: Vec<u64>,
}

impl AnalyzeScan {
    pub fn new(reader: StripeReader) -> AnalyzeScan {
        let first_ordinals: Vec<u64> = reader
            .stripes
            .iter()
            .scan(0, |next, s| {
                let first = *next;
                *next += s.row_count;
                Some(first)
            })
            .collect();
        AnalyzeScan {
            total_rows: reader.total_rows(),
            reader,
            block: None,
            first_ordinals,
        }
    }

    /// Block `block` of `nblocks` stands for an equal share of the visible rows.
    pub fn set_block(&mut self, block: u32, nblocks: u32) {
        let n = nblocks.max(1) as u64;
        let lo = self.total_rows * block as u64 / n;
        let hi = self.total_rows * (block as u64 + 1) / n;
        self.block = Some(lo..hi);
    }

    /// The next row of the current sample block (by ordinal among stored rows).
    /// Rows deleted for the snapshot are passed over (and counted in `dead`).
    pub fn next(&mut self, slot: *mut pg_sys::TupleTableSlot, dead: &mut f64) -> bool {
        loop {
            let Some(range) = self.block.as_mut() else {
                return false;
            };
            let Some(ordinal) = range.next() else {
                return false;
            };
            if ordinal >= self.total_rows {
                return false;
            }
            // the stripe holding the ordinal-th stored row: the last one starting at or before
            // it (a stripe of no rows starts where the next does, and partition_point passes it)
            let i = self
                .first_ordinals
                .partition_point(|&first| first <= ordinal)
                - 1;
            let position = ordinal - self.first_ordinals[i];
            if self.reader.stored_row_deleted(i, position) {
                *dead += 1.0;
                continue;
            }
            self.reader.store(i, position, slot);
            return true;
        }
    }
}

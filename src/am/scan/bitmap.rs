//! The table access method's bitmap heap scans and TABLESAMPLE: both take the rows of one TID
//! block at a time (a block's rows are [`tid::ROWS_PER_BLOCK`] consecutive row numbers, as
//! its offsets), those the reader's snapshot sees, and return them in order.

use std::collections::VecDeque;

use pgrx::pg_sys;

use super::reader::StripeReader;
use crate::storage::tid;

/// Rows of a block to return, as stripe index and insert offset within the stripe.
type BlockRows = VecDeque<(usize, u64)>;

/// Takes into `out` the rows of TID block `block` at `offsets` (every offset if `None`, a
/// lossy page) that `reader`'s snapshot sees.
fn take_block(
    reader: &mut StripeReader,
    block: u32,
    offsets: Option<&[pg_sys::OffsetNumber]>,
    snapshot: pg_sys::Snapshot,
    out: &mut BlockRows,
) {
    out.clear();
    let base = block as u64 * tid::ROWS_PER_BLOCK;
    let rows: Vec<u64> = match offsets {
        Some(offsets) => offsets
            .iter()
            .filter(|&&o| o >= 1 && o as u64 <= tid::ROWS_PER_BLOCK)
            .map(|&o| base + o as u64 - 1)
            .collect(),
        None => (0..tid::ROWS_PER_BLOCK).map(|o| base + o).collect(),
    };
    // every stripe listed first: listing one moves the indexes of those after it
    for &row in &rows {
        reader.stripe_of_row(row, snapshot);
    }
    for row in rows {
        if let Some(i) = crate::am::read::stripe_index_of(&reader.stripes, row) {
            if !reader.hides(i, row) {
                out.push_back((i, row - reader.stripes[i].first_row));
            }
        }
    }
}

/// A bitmap heap scan: the executor (or, from PostgreSQL 18, the access method walking the
/// bitmap's iterator) hands it one TID-bitmap block at a time, then asks for its rows.
pub struct BitmapScan {
    pub reader: StripeReader,
    /// Visible rows of the current block still to return.
    rows: BlockRows,
}

impl BitmapScan {
    pub fn new(reader: StripeReader) -> BitmapScan {
        BitmapScan {
            reader,
            rows: BlockRows::new(),
        }
    }

    /// Takes the rows of TID block `block` at `offsets` (every offset if `None`, a lossy
    /// page) that this scan's snapshot sees; returns whether there are any.
    pub fn block(
        &mut self,
        block: u32,
        offsets: Option<&[pg_sys::OffsetNumber]>,
        snapshot: pg_sys::Snapshot,
    ) -> bool {
        take_block(&mut self.reader, block, offsets, snapshot, &mut self.rows);
        !self.rows.is_empty()
    }

    /// Stores the next row of the current block into `slot`; false when there is none.
    pub fn next(&mut self, slot: *mut pg_sys::TupleTableSlot) -> bool {
        let Some((i, offset)) = self.rows.pop_front() else {
            return false;
        };
        self.reader.store_offset(i, offset, slot);
        true
    }

    /// Forgets the rows of the current block (a rescan starts from a new bitmap).
    pub fn restart(&mut self) {
        self.rows.clear();
    }
}

/// A TABLESAMPLE scan: its sampling method picks blocks among those the visible stripes'
/// row numbers reach into, and offsets within each.
pub struct SampleScan {
    pub reader: StripeReader,
    /// Visible rows of the current block not passed yet.
    rows: BlockRows,
    /// The block whose rows [`next_row`](Self::next_row) picks from.
    block: Option<u32>,
    /// Whether the blocks are done.
    done: bool,
}

impl SampleScan {
    pub fn new(reader: StripeReader) -> SampleScan {
        SampleScan {
            reader,
            rows: BlockRows::new(),
            block: None,
            done: false,
        }
    }

    /// Starts again before the first block.
    pub fn restart(&mut self) {
        self.block = None;
        self.done = false;
    }

    /// The TID blocks the visible stripes' row numbers reach into, from block 0:
    /// what a sampling method picks blocks among (a block's rows are consecutive row numbers,
    /// [`tid::ROWS_PER_BLOCK`] of them, as its offsets).
    fn blocks(&self) -> u32 {
        let end = self
            .reader
            .stripes
            .iter()
            .map(|s| s.first_row + s.row_count)
            .max()
            .unwrap_or(0);
        end.div_ceil(tid::ROWS_PER_BLOCK)
            .min(pg_sys::InvalidBlockNumber as u64) as u32
    }

    /// Moves to the next block the sampling method of `state` picks (SYSTEM's
    /// hash of the block number, for one), or, for a method that picks rows only (BERNOULLI),
    /// the next block in order; takes the rows of it this scan's snapshot sees. False when
    /// there are no more blocks.
    ///
    /// # Safety
    /// `state` is the sample scan's node, with its method's routine.
    pub unsafe fn next_block(&mut self, state: *mut pg_sys::SampleScanState) -> bool {
        let nblocks = self.blocks();
        // SAFETY: `state` is the sample scan's node with its method's routine (this function's
        // contract), whose NextSampleBlock takes that node
        let block = match unsafe { (*(*state).tsmroutine).NextSampleBlock } {
            Some(next) => {
                // SAFETY: the method's NextSampleBlock, given its own node
                Some(unsafe { next(state, nblocks) }).filter(|&b| b != pg_sys::InvalidBlockNumber)
            }
            None if self.done => None,
            None => Some(self.block.map_or(0, |b| b + 1)).filter(|&b| b < nblocks),
        };
        self.block = block;
        self.done = block.is_none();
        match block {
            Some(b) => {
                // SAFETY: the node's executor state, live while the node runs
                let snapshot = unsafe { (*(*state).ss.ps.state).es_snapshot };
                take_block(&mut self.reader, b, None, snapshot, &mut self.rows);
                true
            }
            None => {
                self.rows.clear();
                false
            }
        }
    }

    /// Stores the next row of the current block that the sampling method picks
    /// (it names offsets, ascending; an offset with no visible row is passed over, as heap
    /// passes over a dead tuple); false when it picks no more in this block.
    ///
    /// # Safety
    /// As [`next_block`](Self::next_block); `slot` a slot of the relation.
    pub unsafe fn next_row(
        &mut self,
        state: *mut pg_sys::SampleScanState,
        slot: *mut pg_sys::TupleTableSlot,
    ) -> bool {
        let Some(block) = self.block else {
            return false;
        };
        // SAFETY: as in `next_block` (this function's contract)
        let next = unsafe { (*(*state).tsmroutine).NextSampleTuple }
            .expect("a sampling method picks rows");
        loop {
            // SAFETY: the method's NextSampleTuple, given its node and the block it picked
            let offset = unsafe { next(state, block, tid::ROWS_PER_BLOCK as pg_sys::OffsetNumber) };
            if offset == pg_sys::InvalidOffsetNumber || offset as u64 > tid::ROWS_PER_BLOCK {
                // SAFETY: a slot of the relation (this function's contract)
                unsafe { pg_sys::ExecClearTuple(slot) };
                return false;
            }
            let row = block as u64 * tid::ROWS_PER_BLOCK + offset as u64 - 1;
            // the block's visible rows are in offset order: those before `row` were not picked
            while let Some(&(i, o)) = self.rows.front() {
                let r = self.reader.stripes[i].first_row + o;
                if r > row {
                    break;
                }
                self.rows.pop_front();
                if r == row {
                    self.reader.store_offset(i, o, slot);
                    return true;
                }
            }
        }
    }
}

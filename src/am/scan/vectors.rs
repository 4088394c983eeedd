//! The vector-at-a-time scan of the custom nodes (`crate::exec`): a [`VectorScan`] walks the
//! stripes (in order, in an order a node gives, or taking whole stripes from the counter a
//! parallel scan's workers share), and a [`VectorSkip`] decides, per stripe from its catalog
//! summary and then per vector from the directory, which vectors can hold a wanted row; a
//! [`VectorFilter`] selects the rows of each vector read from its filter columns, and only
//! the selected rows are laid out and returned ([`VectorScan::next_selected`]) or handed to
//! an aggregate as vectors ([`VectorScan::next_batch`]). Rows deleted for the snapshot are
//! taken out of each vector's selection, and a stripe or vector holding one is never answered
//! from its metadata.

use std::sync::atomic::AtomicU64;

use pg_columnar_codec::aggregate::ColumnFacts;
use pg_columnar_codec::filter::Selection;
use pg_columnar_codec::stripe::{StripeDirectory, StripeSummary};
use pg_columnar_codec::{ColumnContext, Unpacked};
use pgrx::pg_sys;

use super::reader::{self, StripeReader};
use crate::am::read::LoadedStripe;

/// The unpacked vectors of one vector's columns, by column, with the contexts they were
/// unpacked with.
pub type ColumnLookup<'v> = dyn Fn(usize) -> Option<(&'v Unpacked, ColumnContext<'v>)> + 'v;

/// What a directory knows of column `c` of vector `v` (`None` for a column the stripe does
/// not store).
fn column_facts_of_vector(dir: &StripeDirectory, v: usize, c: usize) -> Option<ColumnFacts<'_>> {
    let e = &dir.stored_vectors(c)?[v];
    Some(ColumnFacts {
        nulls: e.null_count,
        zone: Some(&e.zone),
    })
}

/// The [`ColumnLookup`] of vectors unpacked from `stripe` (a column the stripe does not store
/// has no context).
fn lookup_in<'a>(
    stripe: &'a LoadedStripe,
    unpacked: &'a [(usize, Unpacked)],
) -> impl Fn(usize) -> Option<(&'a Unpacked, ColumnContext<'a>)> + 'a {
    let stored = stripe.dir.columns.len();
    move |c| {
        let ctx = if c < stored {
            stripe.loaded_context(c)
        } else {
            ColumnContext::default()
        };
        unpacked
            .iter()
            .find(|(k, _)| *k == c)
            .map(|(_, u)| (u, ctx))
    }
}

/// Evaluates quals over whole decoded vectors (`exec::filter`).
pub trait VectorFilter {
    /// The columns (0-based) whose vectors [`select`](Self::select) reads.
    fn columns(&self) -> &[usize];
    /// The rows of a vector of `rows` rows that satisfy the quals, given the unpacked vectors
    /// of [`columns`](Self::columns), the contexts they were unpacked with and the serial
    /// number of their stripe's load (which names its shared dictionaries); `None` if a
    /// vector is not of the form its predicate reads (a corrupt stripe: the kind of every
    /// vector is checked against the column's).
    fn select<'v>(
        &mut self,
        vector: &ColumnLookup<'v>,
        stripe: u64,
        rows: usize,
    ) -> Option<Selection>;
}

/// Decides from a stripe's directory (zone maps, null counts) whether a vector may hold a
/// wanted row. `false` must be a proof that it holds none; the scan then never reads it.
/// Also decides whether every row of a vector is wanted: `true` must be a proof.
pub trait VectorSkip {
    fn may_match(&mut self, dir: &StripeDirectory, vector: usize) -> bool;
    /// The same question for a whole stripe of `rows` rows, from its catalog summary.
    fn may_match_stripe(&mut self, summary: &StripeSummary, rows: usize) -> bool;
    fn covers(&mut self, dir: &StripeDirectory, vector: usize) -> bool;
    fn covers_stripe(&mut self, summary: &StripeSummary, rows: usize) -> bool;
}

/// Two skips at once: a vector may match if both say it may (the second is asked only then),
/// and every row is wanted if both say so.
struct BothSkips(Box<dyn VectorSkip>, Box<dyn VectorSkip>);

impl VectorSkip for BothSkips {
    fn may_match(&mut self, dir: &StripeDirectory, vector: usize) -> bool {
        self.0.may_match(dir, vector) && self.1.may_match(dir, vector)
    }
    fn may_match_stripe(&mut self, summary: &StripeSummary, rows: usize) -> bool {
        self.0.may_match_stripe(summary, rows) && self.1.may_match_stripe(summary, rows)
    }
    fn covers(&mut self, dir: &StripeDirectory, vector: usize) -> bool {
        self.0.covers(dir, vector) && self.1.covers(dir, vector)
    }
    fn covers_stripe(&mut self, summary: &StripeSummary, rows: usize) -> bool {
        self.0.covers_stripe(summary, rows) && self.1.covers_stripe(summary, rows)
    }
}

/// Answers for rows an aggregate over the scan need not read: every one of them is
/// selected, and `facts` gives what the metadata knows of each column (`None`: nothing).
/// True if it took them (the scan then reads nothing of them), false to have them read.
pub trait MetadataAnswer {
    fn answer<'f>(&mut self, rows: usize, facts: &dyn Fn(usize) -> Option<ColumnFacts<'f>>)
        -> bool;
}

/// What a scan did, for EXPLAIN ANALYZE.
#[derive(Debug, Default, Clone)]
pub struct ScanCounters {
    pub stripes: u64,
    pub stripes_skipped: u64,
    /// Of the skipped stripes, those ruled out by their catalog summary, whose directory
    /// was not read either.
    pub stripes_unread: u64,
    pub vectors: u64,
    pub vectors_skipped: u64,
    /// Vectors read in which the filter selected no row.
    pub vectors_filtered: u64,
    /// Vectors read whose zone maps prove that the filter selects every row (it was not
    /// evaluated, nor its columns decoded for it).
    pub vectors_covered: u64,
    /// Rows of the vectors read that the filter did not select.
    pub rows_filtered: u64,
    /// Stripes and vectors whose rows an aggregate took from their metadata (counted
    /// neither as skipped nor as read).
    pub stripes_answered: u64,
    pub vectors_answered: u64,
}

/// A scan vector at a time over a [`StripeReader`]: which stripes it reads and in what order,
/// what it skips and filters, and where it is.
pub struct VectorScan {
    pub reader: StripeReader,
    /// The stripe counter the workers of a parallel scan share; null for a serial scan.
    parallel: *const AtomicU64,
    skip: Option<Box<dyn VectorSkip>>,
    filter: Option<Box<dyn VectorFilter>>,
    /// The stripes a serial scan reads, in order, and each stripe's position in that order
    /// (`usize::MAX`: not read); see [`VectorScan::set_order`].
    order: Option<(Vec<usize>, Vec<usize>)>,
    /// The stripe being read and the vector being returned.
    vector_cursor: Option<StripeCursor>,
    row_cursor: Option<RowCursor>,
    pub counters: ScanCounters,
}

/// A stripe a vector-at-a-time scan is in: which of its vectors to read, and the next one.
struct StripeCursor {
    stripe: usize,
    survivors: Vec<bool>,
    next: usize,
}

/// A vector a vector-at-a-time scan is returning rows of.
struct RowCursor {
    stripe: usize,
    vector: usize,
    selection: Selection,
    next: usize,
    /// Names the selection in the decoded vector's key (`read::VectorKey`).
    id: u64,
}

/// A vector of `rows` rows of column `c`'s default (a column added after the stripe was
/// written), in the codec's form, from the missing-attribute value the slot's descriptor
/// gives.
///

impl VectorScan {
    /// A scan of the stripes `reader` lists; `parallel`: the stripe counter of the parallel
    /// scan this one is part of (null: a serial scan).
    pub fn new(reader: StripeReader, parallel: *const AtomicU64) -> VectorScan {
        VectorScan {
            reader,
            parallel,
            skip: None,
            filter: None,
            order: None,
            vector_cursor: None,
            row_cursor: None,
            counters: ScanCounters::default(),
        }
    }

    /// Reads only the vectors `skip` lets through ([`next_selected`](Self::next_selected)).
    pub fn set_skip(&mut self, skip: Box<dyn VectorSkip>) {
        self.skip = Some(skip);
    }

    /// Reads every vector again.
    pub fn clear_skip(&mut self) {
        self.skip = None;
    }

    /// Reads only the vectors that `skip` also lets through.
    pub fn add_skip(&mut self, skip: Box<dyn VectorSkip>) {
        self.skip = Some(match self.skip.take() {
            Some(first) => Box::new(BothSkips(first, skip)),
            None => skip,
        });
    }

    /// Returns only the rows `filter` selects ([`next_selected`](Self::next_selected)).
    pub fn set_filter(&mut self, filter: Box<dyn VectorFilter>) {
        self.filter = Some(filter);
    }

    /// The stripe counter of the parallel scan this one is part of (null: a serial scan).
    pub fn set_parallel(&mut self, shared: *const AtomicU64) {
        self.parallel = shared;
    }

    /// Starts again from the first stripe.
    pub fn restart(&mut self) {
        self.vector_cursor = None;
        self.row_cursor = None;
    }

    /// A serial vector-at-a-time scan reads only the stripes of `order` (indexes into
    /// [`stripes`](Self::stripes)), in that order; `None`: every stripe in storage order.
    /// Restarts the scan.
    pub fn set_order(&mut self, order: Option<Vec<usize>>) {
        self.order = order.map(|order| {
            let mut rank = vec![usize::MAX; self.reader.stripes.len()];
            for (p, &i) in order.iter().enumerate() {
                rank[i] = p;
            }
            (order, rank)
        });
        self.restart();
    }

    /// The stripe the last vector given came from.
    pub fn current_stripe(&self) -> Option<usize> {
        self.vector_cursor.as_ref().map(|c| c.stripe)
    }

    /// The next stripe to read after stripe `after`: in [`set_order`](Self::set_order)'s
    /// order if given, else as [`reader::next_stripe`].
    fn next_stripe(&self, after: Option<usize>) -> Option<usize> {
        if let Some((order, rank)) = &self.order {
            let p = after.map_or(0, |i| rank[i] + 1);
            return order.get(p).copied();
        }
        reader::next_stripe(self.parallel, after, self.reader.stripes.len())
    }

    /// Enters stripe `i` of a vector-at-a-time scan: counts it, and with a [`VectorSkip`]
    /// decides which of its vectors to read (from the catalog summary alone if that rules the
    /// whole stripe out, else from the directory).
    fn enter_stripe(&mut self, i: usize) -> StripeCursor {
        let vectors = self.reader.stripes[i]
            .row_count
            .div_ceil(pg_columnar_codec::MAX_ROWS as u64);
        self.counters.stripes += 1;
        self.counters.vectors += vectors;
        let mut survivors = vec![true; vectors as usize];
        if let Some(skip) = self.skip.as_mut() {
            if let Some(summary) = self.reader.summary(i) {
                if !skip.may_match_stripe(summary, self.reader.stripes[i].row_count as usize) {
                    self.counters.stripes_skipped += 1;
                    self.counters.stripes_unread += 1;
                    self.counters.vectors_skipped += vectors;
                    return StripeCursor {
                        stripe: i,
                        survivors: Vec::new(),
                        next: 0,
                    };
                }
            }
            self.reader.load(i);
            let dir = &self.reader.loaded().dir;
            let skip = self.skip.as_mut().unwrap();
            for (v, s) in survivors.iter_mut().enumerate() {
                *s = skip.may_match(dir, v);
            }
            let skipped = survivors.iter().filter(|&&s| !s).count() as u64;
            self.counters.vectors_skipped += skipped;
            if skipped == vectors {
                self.counters.stripes_skipped += 1;
            }
        }
        StripeCursor {
            stripe: i,
            survivors,
            next: 0,
        }
    }

    /// The next vector (stripe index, vector index) a vector-at-a-time scan reads.
    /// The next vector to read; with `answer`, stripes and vectors whose every row the
    /// quals select are offered to it first, and not read if it takes them.
    fn next_vector<'a>(
        &mut self,
        mut answer: Option<&mut (dyn MetadataAnswer + 'a)>,
    ) -> Option<(usize, usize)> {
        loop {
            let next = self.vector_cursor.as_mut().and_then(|c| {
                while c.next < c.survivors.len() {
                    c.next += 1;
                    if c.survivors[c.next - 1] {
                        return Some((c.stripe, c.next - 1));
                    }
                }
                None
            });
            if let Some((i, v)) = next {
                if answer
                    .as_deref_mut()
                    .is_some_and(|a| self.answer_vector(i, v, a))
                {
                    continue;
                }
                return Some((i, v));
            }
            let Some(i) = self.next_stripe(self.vector_cursor.as_ref().map(|c| c.stripe)) else {
                self.reader.forget_pages();
                return None;
            };
            if self.reader.stripes[i].row_count == 0 {
                self.vector_cursor = Some(StripeCursor {
                    stripe: i,
                    survivors: Vec::new(),
                    next: 0,
                });
                continue;
            }
            if let Some(a) = answer.as_deref_mut() {
                if self.answer_stripe(i, a) {
                    self.vector_cursor = Some(StripeCursor {
                        stripe: i,
                        survivors: Vec::new(),
                        next: 0,
                    });
                    continue;
                }
            }
            let cursor = self.enter_stripe(i);
            if answer.is_some() && cursor.survivors.contains(&true) {
                // the directory, for the vectors' metadata
                self.reader.load(i);
            }
            self.vector_cursor = Some(cursor);
        }
    }

    /// Offers vector `v` of stripe `i` (the loaded one) to `answer` if its directory proves
    /// that the quals select every row and none is deleted; true if it took the vector.
    fn answer_vector(&mut self, i: usize, v: usize, answer: &mut dyn MetadataAnswer) -> bool {
        let loaded = self
            .reader
            .stripe
            .as_ref()
            .is_some_and(|s| s.row.first_row == self.reader.stripes[i].first_row);
        if !loaded || self.reader.vector_has_deleted(i, v) {
            return false;
        }
        let dir = &self.reader.loaded().dir;
        let covered = self.skip.as_mut().is_none_or(|skip| skip.covers(dir, v));
        if covered
            && answer.answer(dir.vector_rows(v), &|col| {
                column_facts_of_vector(dir, v, col)
            })
        {
            self.counters.vectors_answered += 1;
            return true;
        }
        false
    }

    /// Offers stripe `i` to `answer` if its catalog summary proves that the quals select
    /// every row (or there are none); true if it took the stripe.
    fn answer_stripe(&mut self, i: usize, answer: &mut dyn MetadataAnswer) -> bool {
        let rows = self.reader.stripes[i].row_count as usize;
        let covered = match (self.skip.as_mut(), self.reader.summary(i)) {
            (None, _) => true,
            (Some(skip), Some(summary)) => skip.covers_stripe(summary, rows),
            (Some(_), None) => false,
        };
        // (asked after the summary: a stripe the quals do not cover has no deletions read)
        if !covered || !self.reader.deleted_in(i).is_empty() {
            return false;
        }
        let summary = self.reader.summary(i);
        let facts = |c: usize| {
            let col = summary?.columns.get(c)?;
            Some(ColumnFacts {
                nulls: col.null_count as usize,
                zone: col.zone.as_ref(),
            })
        };
        if !answer.answer(rows, &facts) {
            return false;
        }
        let vectors = self.reader.stripes[i]
            .row_count
            .div_ceil(pg_columnar_codec::MAX_ROWS as u64);
        self.counters.stripes += 1;
        self.counters.vectors += vectors;
        self.counters.stripes_answered += 1;
        self.counters.vectors_answered += vectors;
        true
    }

    /// The rows of vector `v` of stripe `i` that the [`VectorFilter`] selects (all rows
    /// without one), and the filter columns' vectors, unpacked (only those are read).
    fn filter_vector(
        &mut self,
        i: usize,
        v: usize,
        slot: *mut pg_sys::TupleTableSlot,
    ) -> (Selection, Vec<(usize, Unpacked)>) {
        self.reader.load(i);
        let rows = self.reader.loaded().dir.vector_rows(v);
        // every filter part is a part of the skip expression too (plan.rs), so where that
        // covers the vector, the filter would select every row
        let covered = self.filter.is_some()
            && self
                .skip
                .as_mut()
                .is_some_and(|skip| skip.covers(&self.reader.loaded().dir, v));
        if covered {
            self.counters.vectors_covered += 1;
        }
        let Some(mut filter) = (if covered { None } else { self.filter.take() }) else {
            let mut selection = Selection::all(rows);
            self.reader.remove_deleted(i, v, &mut selection);
            return (selection, Vec::new());
        };
        let mut unpacked = Vec::new();
        self.reader
            .unpack_columns(i, v, slot, filter.columns(), &mut unpacked);
        let stripe: &LoadedStripe = self.reader.loaded();
        let selection = filter.select(&lookup_in(stripe, &unpacked), stripe.serial, rows);
        self.filter = Some(filter);
        let selection = selection.unwrap_or_else(|| {
            crate::storage::corrupt(
                self.reader.pages.rel(),
                format!(
                    "stripe at row {}: a filter column's vector {v} is not of its type",
                    self.reader.stripes[i].first_row
                ),
            )
        });
        self.counters.rows_filtered += (rows - selection.count()) as u64;
        if selection.is_empty() {
            self.counters.vectors_filtered += 1;
        }
        let mut selection = selection;
        self.reader.remove_deleted(i, v, &mut selection);
        (selection, unpacked)
    }

    /// [`filter_vector`](Self::filter_vector), then the selected rows of the filter columns
    /// laid out as Datums (the other columns are decoded when a row is stored, so a vector
    /// without a selected row costs the filter columns' decoding alone).
    fn select(
        &mut self,
        i: usize,
        v: usize,
        slot: *mut pg_sys::TupleTableSlot,
        id: u64,
    ) -> Selection {
        let (selection, unpacked) = self.filter_vector(i, v, slot);
        if !selection.is_empty() && !unpacked.is_empty() {
            let stripe = self
                .reader
                .stripe
                .as_ref()
                .expect("loaded by filter_vector");
            let stored = stripe.dir.columns.len();
            // hand the filter's vectors to the row store, which would decode them again
            self.reader.decoded.prefill(
                stripe,
                v,
                &self.reader.types,
                unpacked.into_iter().filter(|(c, _)| *c < stored).collect(),
                Some((id, &selection)),
            );
        }
        selection
    }

    /// Vector at a time without rows (an aggregate over the scan): gives `consume` the next
    /// vector's selection (never empty), a lookup of its `columns`, unpacked with their
    /// contexts, and the serial number of the stripe load (which names the stripe's shared
    /// dictionaries); false at the end. `slot` gives the defaults of columns added since a
    /// stripe was written.
    ///
    /// With `answer`, whole stripes and vectors that the quals are proven to select every
    /// row of (by the skip expression, which must then hold every qual of the scan, as it
    /// does when every qual is vectorized) are offered to it first (see [`MetadataAnswer`]).
    pub fn next_batch<'a>(
        &mut self,
        slot: *mut pg_sys::TupleTableSlot,
        columns: &[usize],
        consume: &mut dyn for<'v> FnMut(&Selection, &ColumnLookup<'v>, u64),
        mut answer: Option<&mut (dyn MetadataAnswer + 'a)>,
    ) -> bool {
        loop {
            let Some((i, v)) = self.next_vector(answer.as_deref_mut()) else {
                return false;
            };
            let (selection, mut unpacked) = self.filter_vector(i, v, slot);
            if selection.is_empty() {
                continue;
            }
            self.reader
                .unpack_columns(i, v, slot, columns, &mut unpacked);
            let stripe = self.reader.loaded();
            consume(&selection, &lookup_in(stripe, &unpacked), stripe.serial);
            return true;
        }
    }

    /// For a node that picks the vectors it reads (PgcolTopN): whether stripe `i` may
    /// hold a row the quals select, by its catalog summary. Counts the stripe, and if not,
    /// counts it skipped.
    pub fn stripe_may_match(&mut self, i: usize) -> bool {
        let rows = self.reader.stripes[i].row_count;
        let vectors = rows.div_ceil(pg_columnar_codec::MAX_ROWS as u64);
        self.counters.stripes += 1;
        self.counters.vectors += vectors;
        let summary = self.reader.summary(i);
        let may = rows > 0
            && match (self.skip.as_mut(), summary) {
                (Some(skip), Some(summary)) => skip.may_match_stripe(summary, rows as usize),
                _ => true,
            };
        if !may {
            self.skip_unread(vectors);
        }
        may
    }

    /// Counts a stripe that [`stripe_may_match`](Self::stripe_may_match) let through as
    /// skipped after all, without its directory read, and its `vectors`.
    pub fn skip_unread(&mut self, vectors: u64) {
        self.counters.stripes_skipped += 1;
        self.counters.stripes_unread += 1;
        self.counters.vectors_skipped += vectors;
    }

    /// For a node that picks the vectors it reads: vector `v` of stripe `i`, as
    /// [`next_batch`](Self::next_batch) gives vectors to `consume`; false, without calling
    /// it, if the quals' zone maps rule the vector out or the filter selects no row of it.
    /// Every vector asked for is counted; `skipped` ones (left out by the caller) too.
    pub fn read_vector(
        &mut self,
        i: usize,
        v: usize,
        slot: *mut pg_sys::TupleTableSlot,
        columns: &[usize],
        consume: &mut dyn for<'v> FnMut(&Selection, &ColumnLookup<'v>, u64),
    ) -> bool {
        self.reader.load(i);
        let dir = &self.reader.loaded().dir;
        if let Some(skip) = self.skip.as_mut() {
            if !skip.may_match(dir, v) {
                self.counters.vectors_skipped += 1;
                return false;
            }
        }
        let (selection, mut unpacked) = self.filter_vector(i, v, slot);
        if selection.is_empty() {
            return false;
        }
        self.reader
            .unpack_columns(i, v, slot, columns, &mut unpacked);
        let stripe = self.reader.loaded();
        consume(&selection, &lookup_in(stripe, &unpacked), stripe.serial);
        true
    }

    /// Counts `vectors` of the loaded stripe that a node picking its own vectors left out.
    pub fn skip_vectors(&mut self, vectors: u64) {
        self.counters.vectors_skipped += vectors;
    }

    /// Forward, vector at a time (the custom scan): stores the next row that the skip and
    /// the filter let through into `slot`; false at the end.
    pub fn next_selected(&mut self, slot: *mut pg_sys::TupleTableSlot) -> bool {
        loop {
            if let Some(c) = self.row_cursor.as_mut() {
                if let Some(r) = c.selection.next_from(c.next) {
                    c.next = r + 1;
                    let (i, row) = (
                        c.stripe,
                        (c.vector * pg_columnar_codec::MAX_ROWS + r) as u64,
                    );
                    self.reader.store_chosen(i, row, slot, &c.selection, c.id);
                    return true;
                }
                self.row_cursor = None;
            }
            let Some((i, v)) = self.next_vector(None) else {
                // SAFETY: the node's scan slot, valid for the call
                unsafe { pg_sys::ExecClearTuple(slot) };
                return false;
            };
            let id = self.reader.selection_id();
            let selection = self.select(i, v, slot, id);
            self.row_cursor = Some(RowCursor {
                stripe: i,
                vector: v,
                selection,
                next: 0,
                id,
            });
        }
    }
}

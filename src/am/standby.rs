//! Hot standbys: VACUUM cancels the standby queries that could still read what it removes.
//!
//! VACUUM on the primary removes rows whose deletion every snapshot *there* sees (their
//! index entries with them), and writes into pages that only catalog rows deleted for every
//! snapshot there pointed at. A standby query whose snapshot is older still sees those rows
//! and reads those pages: its index scans would miss the rows, and its scans would meet
//! stripes overwritten. Heap's VACUUM logs a *snapshot conflict horizon* for this: the
//! newest transaction whose deletion it acts on. Replaying that record, the standby waits
//! for (up to `max_standby_streaming_delay`), then cancels, the queries whose snapshots may
//! not see that transaction as committed, before replaying what follows. pg_columnar's own
//! writes are generic WAL, which carries no horizon, so a VACUUM logs one
//! (`compat::log_snapshot_conflict`, from [`Conflict`]): the newest deleter of the rows it
//! removes, before its first write, and that of the catalog rows whose pages are free,
//! before it writes into them.

use pgrx::pg_sys;

use crate::storage::{catalog, newer_xid};

/// What a VACUUM of one table logs before its writes.
pub(super) struct Conflict {
    storage_id: u64,
    /// The newest deleter of the rows it removes.
    rows: Option<pg_sys::TransactionId>,
    /// The newest deleter of the catalog rows whose pages are free, read when first needed.
    pages: Option<Option<pg_sys::TransactionId>>,
    /// The newest horizon logged so far.
    logged: Option<pg_sys::TransactionId>,
}

impl Conflict {
    pub fn new(storage_id: u64) -> Conflict {
        Conflict {
            storage_id,
            rows: None,
            pages: None,
            logged: None,
        }
    }

    /// Counts transaction `xid`'s deletion among those of the rows the VACUUM removes.
    pub(super) fn remove_row_deleted_by(&mut self, xid: pg_sys::TransactionId) {
        self.rows = Some(newer_xid(self.rows, xid));
    }

    /// Before a write of the VACUUM to `rel` (catalog rows, index entries, and pages: free
    /// ones when `into_free_pages`): logs the horizon that write needs, unless one as new has
    /// been logged.
    pub(super) fn before_write(&mut self, rel: pg_sys::Relation, into_free_pages: bool) {
        let mut needed = self.rows;
        if into_free_pages {
            let storage_id = self.storage_id;
            if let Some(xid) = *self
                .pages
                .get_or_insert_with(|| catalog::freed_horizon(storage_id))
            {
                needed = Some(newer_xid(needed, xid));
            }
        }
        let Some(needed) = needed else { return };
        if self
            .logged
            // SAFETY: a comparison of two transaction ids, reading no shared state
            .is_some_and(|logged| !unsafe { pg_sys::TransactionIdFollows(needed, logged) })
        {
            return;
        }
        self.logged = Some(needed);
        // SAFETY: `wal_level` is a setting only this backend's thread writes; `rel` is the open
        // relation VACUUM is writing to (every caller's, not checked by this safe fn)
        unsafe {
            let standbys_read_wal = pg_sys::wal_level >= pg_sys::WalLevel::WAL_LEVEL_REPLICA as i32;
            let permanent = (*(*rel).rd_rel).relpersistence
                == pg_sys::RELPERSISTENCE_PERMANENT as std::ffi::c_char;
            if standbys_read_wal && permanent {
                crate::compat::log_snapshot_conflict(rel, full_xid(needed));
            }
        }
    }
}

/// Transaction `xid` (normal, already assigned) with its epoch, which the record takes.
fn full_xid(xid: pg_sys::TransactionId) -> u64 {
    // SAFETY: takes the shared lock on the transaction counter itself and returns a copy
    let next = unsafe { pg_sys::ReadNextFullTransactionId() }.value;
    let epoch = next >> 32;
    let xid = xid.into_inner();
    // an xid above the next one's low half was assigned in the previous epoch
    let epoch = if xid > next as u32 {
        epoch.saturating_sub(1)
    } else {
        epoch
    };
    epoch << 32 | xid as u64
}

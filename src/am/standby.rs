//! Index paths on a hot standby: rows removed under an old snapshot.
//!
//! VACUUM on the primary removes rows whose deletion every snapshot *there* sees, and their
//! index entries with them. A standby transaction whose snapshot is older than the DELETE
//! still sees those rows: a sequential scan finds them (its snapshot reads the stripes'
//! catalog rows as they were, and the images keep the values), but an index or bitmap scan
//! does not, its entries being gone. Heap's VACUUM logs a snapshot conflict horizon that
//! cancels such queries on the standby before the entries go; pg_columnar's writes log none.
//! So an index or bitmap scan on a standby compares the stripes its snapshot sees with the
//! latest ones replayed, when it starts, and for an index scan at its first fetch and its
//! end: a row its snapshot sees and does not find deleted, which a later VACUUM has made
//! absent, makes the query fail with an ERROR rather than leave the row out. (A VACUUM
//! replayed while an index scan runs that fetches no row at all is not seen. With
//! `hot_standby_feedback = on` the primary removes no such row.)

use pgrx::pg_sys;

use super::read::stripe_index_of;
use crate::storage::catalog::{self, StripeRow};
use crate::storage::{marks, meta};

/// On a standby, fails if an index path of `rel` under `snapshot` (MVCC) could miss a row the
/// snapshot sees (see the module documentation); elsewhere, and for other snapshots, does
/// nothing.
pub fn check_index_path(rel: pg_sys::Relation, snapshot: pg_sys::Snapshot) {
    unsafe {
        if snapshot.is_null() || (*snapshot).snapshot_type != pg_sys::SnapshotType::SNAPSHOT_MVCC || !pg_sys::RecoveryInProgress() {
            return;
        }
    }
    let Some(storage_id) = meta::storage_id(rel) else { return };
    let seen = catalog::stripes(storage_id, snapshot);
    let latest = catalog::stripes(storage_id, unsafe { pg_sys::GetLatestSnapshot() });
    let removed = removed_since(&seen, &latest);
    let (Some(&lo), Some(&hi)) = (removed.first(), removed.last()) else { return };
    let deleted = marks::deleted_among(storage_id, lo..hi + 1, snapshot);
    if let Some(row) = removed.iter().find(|r| deleted.binary_search(r).is_err()) {
        pgrx::ereport!(
            ERROR,
            pgrx::PgSqlErrorCode::ERRCODE_T_R_SERIALIZATION_FAILURE,
            format!(
                "pg_columnar: canceling an index scan of \"{}\" on this standby: VACUUM on the primary removed rows its snapshot still sees (row number {row} among them), and their index entries",
                crate::storage::relation_name(rel)
            ),
            "The transaction's snapshot is older than their deletion. With hot_standby_feedback = on the primary keeps such rows."
        );
    }
}

/// The rows (ascending) that a stripe of `seen` holds and a stripe of `latest` (both sorted
/// by first row) lists as absent. Stripes whose catalog row is the same in both are passed
/// over.
fn removed_since(seen: &[StripeRow], latest: &[StripeRow]) -> Vec<u64> {
    let mut removed = Vec::new();
    for s in latest.iter().filter(|s| !s.absent.is_empty()) {
        let unchanged = seen.binary_search_by_key(&s.first_row, |o| o.first_row).is_ok_and(|i| {
            let o = &seen[i];
            o.row_count == s.row_count && o.absent == s.absent
        });
        if !unchanged {
            removed.extend(catalog::absent_rows(s).filter(|&r| stripe_index_of(seen, r).is_some()));
        }
    }
    removed.sort_unstable();
    removed
}

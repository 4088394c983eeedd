//! Serializable transactions on pg_columnar tables: the predicate (SIREAD) locks reads take
//! and the checks writes make, where heap takes and makes them.
//!
//! PostgreSQL's serializable isolation (SSI) learns a transaction's read/write dependencies
//! from the predicate locks its reads leave on a relation, on its pages or on its tuples,
//! which a concurrent transaction's write then finds (`CheckForSerializableConflictIn`), and
//! from reads that pass over a row version a concurrent transaction made or deleted
//! (`CheckForSerializableConflictOut`). A table access method does both itself. Here:
//!
//! * a scan of the table (sequential, the query engine's, TID range, bitmap) locks the whole
//!   relation, as heap's sequential scan does. Heap's bitmap scan locks the tuples it returns
//!   instead; here the scan reads a stripe's delete marks once for all its rows, before
//!   knowing them, so the lock that covers that read is the relation's.
//! * a row fetched by TID (index scans, TID scans) has its TID locked, as heap's fetch does;
//!   there the delete marks are read per row (`fetch::fetch`).
//! * each lock is taken before the read it covers, and each write is checked once others'
//!   reads can find it: inserted rows once their stripe is in the catalog (against locks on
//!   the relation), a deleted or updated row once its mark is (against locks on its TID, its
//!   virtual block and the relation). Of a read and a concurrent write, either the write
//!   finds the read's lock or the read finds the write.
//! * a read of the stripe and mark catalogs checks the conflicts out with the writers of the
//!   stripes and marks it passes over, and takes no predicate lock on the catalogs
//!   (`storage::scan_catalog`).
//!
//! All of these do nothing outside a serializable transaction, for snapshots other than MVCC
//! and for temporary tables (PostgreSQL decides).

use pgrx::pg_sys;

/// A read of all of `rel` under `snapshot` (a null snapshot: no read to lock).
pub fn lock_relation(rel: pg_sys::Relation, snapshot: pg_sys::Snapshot) {
    if !snapshot.is_null() {
        // SAFETY: `snapshot` is non-null (checked above) and the caller's, and `rel` is an
        // open relation of the caller's (a safe fn over raw pointers: not checked)
        unsafe { pg_sys::PredicateLockRelation(rel, snapshot) };
    }
}

/// A read of the row at `tid` of `rel` under `snapshot`.
pub(super) fn lock_row(
    rel: pg_sys::Relation,
    tid: &pg_sys::ItemPointerData,
    snapshot: pg_sys::Snapshot,
) {
    let mut tid = *tid;
    // (the inserter is not given: a row this transaction wrote is locked too, harmlessly)
    // SAFETY: `tid` is a local copy PostgreSQL may read; `rel` is an open relation and
    // `snapshot` a valid (MVCC) snapshot of the caller's, not checked by this safe fn
    unsafe { pg_sys::PredicateLockTID(rel, &mut tid, snapshot, pg_sys::InvalidTransactionId) };
}

/// Rows inserted into `rel`, now in a stripe others' reads can find.
pub(super) fn check_insert(rel: pg_sys::Relation) {
    // SAFETY: `rel` is an open relation of the caller's (not checked by this safe fn); a null
    // TID with InvalidBlockNumber asks about the relation only
    unsafe {
        pg_sys::CheckForSerializableConflictIn(
            rel,
            std::ptr::null_mut(),
            pg_sys::InvalidBlockNumber,
        )
    };
}

/// The row at `tid` of `rel` deleted (or updated), its mark now in the catalog.
pub(super) fn check_change(rel: pg_sys::Relation, tid: &pg_sys::ItemPointerData) {
    let mut tid = *tid;
    let block = crate::storage::tid::block_of(&tid);
    // SAFETY: `tid` is a local copy PostgreSQL may read; `rel` is an open relation of the
    // caller's (not checked by this safe fn)
    unsafe { pg_sys::CheckForSerializableConflictIn(rel, &mut tid, block) };
}

//! `pgcol.stripe`: one row per stripe, keyed by the relation's storage id. Rows are plain
//! heap tuples, so PostgreSQL's MVCC decides which stripes a snapshot sees: an aborted load
//! leaves pages no snapshot can reach, and a rolled-back savepoint takes its stripes with it.
//! The catalog is a materialized view (see the extension script) so that no publication
//! includes it, and its inserts are not logically decoded.
//!
//! Rows are written with `heap_insert` and an explicit command id (see [`insert`]) and read
//! with `systable_beginscan` under the caller's snapshot, never through SQL, so no role needs
//! privileges on the catalog and no `search_path` is consulted.

use pgrx::pg_sys;

/// One stripe's catalog row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StripeRow {
    pub storage_id: u64,
    /// Row number of the stripe's first row; its rows are `first_row..first_row + row_count`.
    pub first_row: u64,
    pub row_count: u64,
    pub first_block: u32,
    /// Bytes of the stripe image.
    pub byte_length: u64,
    /// Bytes of the image's header and directory, and their xxh3-64.
    pub prefix_length: u64,
    pub prefix_checksum: u64,
    /// The transaction and command that inserted the catalog row, from its tuple header as
    /// read (the raw fields, as heap reports a tuple's `xmin` and `cmin`); ignored by
    /// [`insert`].
    pub xmin: pg_sys::TransactionId,
    pub cmin: pg_sys::CommandId,
    /// Read with a dirty snapshot (see [`stripes`]): the inserting transaction, if another
    /// transaction that was still running then.
    pub running_inserter: Option<pg_sys::TransactionId>,
}

/// Columns of a catalog row: the seven of [`StripeRow`], then the stripe's zone summary
/// (`codec::stripe::StripeSummary`, bytea; NULL: none).
const NATTS: usize = 8;

struct Catalog {
    table: pg_sys::Oid,
    index: pg_sys::Oid,
}

fn catalog() -> Catalog {
    Catalog {
        table: super::required_pgcol_relation(c"stripe"),
        index: super::required_pgcol_relation(c"stripe_storage_first_row"),
    }
}

/// Inserts a stripe row as command `cid` of the current transaction. The writer passes the
/// command that buffered the rows, which can be older than the current one: rows an INSERT
/// buffered are flushed when a later SELECT of the same transaction starts, and must be
/// visible to that SELECT's snapshot.
pub fn insert(row: &StripeRow, zones: &[u8], cid: pg_sys::CommandId) {
    let zones = pgrx::rust_byte_slice_to_bytea(zones).into_pg();
    let c = catalog();
    let mut values: [pg_sys::Datum; NATTS] = [
        pg_sys::Datum::from(row.storage_id as i64),
        pg_sys::Datum::from(row.first_row as i64),
        pg_sys::Datum::from(row.row_count as i64),
        pg_sys::Datum::from(row.first_block as i64),
        pg_sys::Datum::from(row.byte_length as i64),
        pg_sys::Datum::from(row.prefix_length as i64),
        pg_sys::Datum::from(row.prefix_checksum as i64),
        pg_sys::Datum::from(zones),
    ];
    let mut nulls = [false; NATTS];
    super::insert_catalog_row(c.table, c.index, &mut values, &mut nulls, cid);
}

/// Calls `f` with every row of `storage_id` that `snapshot` sees (and its TID in the
/// catalog).
fn scan(
    storage_id: u64,
    snapshot: pg_sys::Snapshot,
    lockmode: u32,
    mut f: impl FnMut(pg_sys::Relation, &pg_sys::ItemPointerData, StripeRow, Option<&[u8]>),
) {
    unsafe {
        let c = catalog();
        let rel = pg_sys::table_open(c.table, lockmode as pg_sys::LOCKMODE);
        let mut key: pg_sys::ScanKeyData = std::mem::zeroed();
        pg_sys::ScanKeyInit(
            &mut key,
            1,
            pg_sys::BTEqualStrategyNumber as u16,
            pg_sys::F_INT8EQ.into(),
            pg_sys::Datum::from(storage_id as i64),
        );
        let scan = pg_sys::systable_beginscan(rel, c.index, true, snapshot, 1, &mut key);
        loop {
            let tuple = pg_sys::systable_getnext(scan);
            if tuple.is_null() {
                break;
            }
            let mut values = [pg_sys::Datum::from(0); NATTS];
            let mut nulls = [false; NATTS];
            pg_sys::heap_deform_tuple(tuple, (*rel).rd_att, values.as_mut_ptr(), nulls.as_mut_ptr());
            if nulls[..7].iter().any(|&n| n) {
                pgrx::error!("pg_columnar: catalog pgcol.stripe has a NULL field for storage {storage_id}");
            }
            let v = |i: usize| values[i].value() as i64;
            let row = StripeRow {
                storage_id: v(0) as u64,
                first_row: v(1) as u64,
                row_count: v(2) as u64,
                first_block: v(3) as u32,
                byte_length: v(4) as u64,
                prefix_length: v(5) as u64,
                prefix_checksum: v(6) as u64,
                xmin: (*(*tuple).t_data).t_choice.t_heap.t_xmin,
                cmin: (*(*tuple).t_data).t_choice.t_heap.t_field3.t_cid,
                // a dirty snapshot's check of the tuple leaves a running inserter in it
                running_inserter: ((*snapshot).snapshot_type == pg_sys::SnapshotType::SNAPSHOT_DIRTY
                    && (*snapshot).xmin != pg_sys::InvalidTransactionId)
                    .then_some((*snapshot).xmin),
            };
            let zones = (!nulls[7]).then(|| {
                pgrx::varlena::varlena_to_byte_slice(pg_sys::pg_detoast_datum_packed(values[7].cast_mut_ptr()))
            });
            f(rel, &(*tuple).t_self, row, zones);
        }
        pg_sys::systable_endscan(scan);
        pg_sys::table_close(rel, lockmode as pg_sys::LOCKMODE);
    }
}

/// The stripes of `storage_id` that a table scan under `snapshot` sees, in row order. What
/// each kind of snapshot means for the stripe catalog is decided here, for every path:
///
/// * MVCC (also historic MVCC): the same snapshot; a stripe is visible exactly when its rows
///   are (registered for the catalog scan, as it may be one just taken).
/// * SnapshotSelf: SnapshotSelf (committed, and this transaction's stripes of any command).
/// * SnapshotAny, SnapshotDirty, SnapshotNonVacuumable and SnapshotToast: every stripe whose
///   inserting transaction has not aborted, i.e. the catalog read with a dirty snapshot. Their
///   callers (index builds, trigger and foreign-key fetches of rows this transaction just
///   inserted, the planner's index probes) want every row that is not dead; the rows of an
///   aborted load are dead, and VACUUM may already have given back their pages.
pub fn stripes(storage_id: u64, snapshot: pg_sys::Snapshot) -> Vec<StripeRow> {
    let mut rows = Vec::new();
    visible(storage_id, snapshot, |row, _| rows.push(row));
    rows.sort_by_key(|r| r.first_row);
    rows
}

/// [`stripes`] with each stripe's zone summary (as stored; `None` where the row has none).
pub fn stripes_with_zones(storage_id: u64, snapshot: pg_sys::Snapshot) -> Vec<(StripeRow, Option<Vec<u8>>)> {
    let mut rows = Vec::new();
    visible(storage_id, snapshot, |row, zones| rows.push((row, zones.map(<[u8]>::to_vec))));
    rows.sort_by_key(|r| r.0.first_row);
    rows
}

/// The catalog scan of [`stripes`]: what each kind of snapshot sees.
fn visible(storage_id: u64, snapshot: pg_sys::Snapshot, mut f: impl FnMut(StripeRow, Option<&[u8]>)) {
    use pg_sys::SnapshotType::*;
    unsafe {
        match (*snapshot).snapshot_type {
            SNAPSHOT_MVCC => {
                let registered = pg_sys::RegisterSnapshot(snapshot);
                scan(storage_id, registered, pg_sys::AccessShareLock, |_, _, row, z| f(row, z));
                pg_sys::UnregisterSnapshot(registered);
            }
            SNAPSHOT_SELF | SNAPSHOT_HISTORIC_MVCC => scan(storage_id, snapshot, pg_sys::AccessShareLock, |_, _, row, z| f(row, z)),
            _ => {
                let mut dirty: pg_sys::SnapshotData = std::mem::zeroed();
                dirty.snapshot_type = SNAPSHOT_DIRTY;
                scan(storage_id, &mut dirty, pg_sys::AccessShareLock, |_, _, row, z| f(row, z));
            }
        }
    }
}

/// Deletes every row of `storage_id` (transactionally: a rollback brings them back). Used
/// when a storage is dropped or truncated, under a lock that excludes its writers.
pub fn delete_storage(storage_id: u64) {
    unsafe {
        let snapshot = std::ptr::addr_of_mut!(pg_sys::SnapshotSelfData);
        let mut tids = Vec::new();
        scan(storage_id, snapshot, pg_sys::RowExclusiveLock, |_, tid, _, _| tids.push(*tid));
        if tids.is_empty() {
            return;
        }
        let rel = pg_sys::table_open(catalog().table, pg_sys::RowExclusiveLock as pg_sys::LOCKMODE);
        for mut tid in tids {
            pg_sys::simple_heap_delete(rel, &mut tid);
        }
        pg_sys::table_close(rel, pg_sys::RowExclusiveLock as pg_sys::LOCKMODE);
        pg_sys::CommandCounterIncrement();
    }
}

/// Whether the catalog exists (it does not while DROP EXTENSION is removing it).
pub fn exists() -> bool {
    super::pgcol_relation(c"stripe").is_some()
}

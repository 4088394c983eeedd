//! What the rest of the crate asks about pg_columnar relations: whether a relation is one,
//! the access method's OID, and the ERROR for a feature a columnar table refuses. A leaf of
//! `am`: the callback table (`routine`) tells it its address when PostgreSQL first asks for
//! it, before any relation can carry it.

use std::sync::atomic::{AtomicPtr, Ordering};

use pgrx::pg_sys;
use pgrx::PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED;

pub(super) fn not_supported(what: &str) -> ! {
    pgrx::ereport!(
        ERROR,
        ERRCODE_FEATURE_NOT_SUPPORTED,
        format!("pg_columnar tables do not support {what}")
    );
}

/// The callback table's address, once PostgreSQL has asked for it (`routine::routine`, called
/// by the handler for every relation whose access method is pg_columnar).
static ROUTINE: AtomicPtr<pg_sys::TableAmRoutine> = AtomicPtr::new(std::ptr::null_mut());

pub(super) fn note_routine(routine: *const pg_sys::TableAmRoutine) {
    ROUTINE.store(routine as *mut _, Ordering::Relaxed);
}

/// The OID of the access method `pg_columnar` in this database (`None`: the extension is
/// not created here), for catalog queries that look for its tables.
pub(super) fn am_oid() -> Option<pg_sys::Oid> {
    // SAFETY: a NUL-terminated literal name; with `missing_ok` an absent access method is
    // InvalidOid, not an ERROR. Its callers run inside a transaction, as the syscache needs.
    let am = unsafe { pg_sys::get_am_oid(c"pg_columnar".as_ptr(), true) };
    (am != pg_sys::InvalidOid).then_some(am)
}

/// The leaf partitions of a partitioned table, at any depth, by access method.
#[derive(Debug, Clone, Copy, Default)]
pub struct PartitionLeaves {
    pub columnar: usize,
    pub other: usize,
}

/// The leaf partitions of `relid` if it is a partitioned table. Reads the catalogs only and
/// locks no partition: the planner hook that asks runs before PostgreSQL locks the
/// partitions a query keeps, and a query must not wait for one it prunes (a partition being
/// converted, say).
///
/// # Safety
/// In a transaction.
pub unsafe fn partition_leaves(relid: pg_sys::Oid) -> Option<PartitionLeaves> {
    let am = am_oid()?;
    // SAFETY: catalog reads in a transaction (this function's contract): the inheritance
    // list without locks, each member's pg_class row through the syscache, released once
    // its kind and access method are read
    unsafe {
        if pg_sys::get_rel_relkind(relid) != pg_sys::RELKIND_PARTITIONED_TABLE as std::ffi::c_char {
            return None;
        }
        let all = pg_sys::find_all_inheritors(
            relid,
            pg_sys::NoLock as pg_sys::LOCKMODE,
            std::ptr::null_mut(),
        );
        let n = if all.is_null() {
            0
        } else {
            (*all).length as usize
        };
        let mut leaves = PartitionLeaves::default();
        for i in 0..n {
            let member = (*(*all).elements.add(i)).oid_value;
            let tuple = pg_sys::SearchSysCache1(
                pg_sys::SysCacheIdentifier::RELOID as i32,
                pg_sys::Datum::from(member),
            );
            if tuple.is_null() {
                continue; // dropped meanwhile
            }
            let form = pg_sys::heap_tuple_get_struct::<pg_sys::FormData_pg_class>(tuple);
            let (kind, relam) = ((*form).relkind, (*form).relam);
            pg_sys::ReleaseSysCache(tuple);
            // (the table itself and partitioned members are not leaves; a partitioned
            // table may name an access method from 17 on)
            if kind == pg_sys::RELKIND_PARTITIONED_TABLE as std::ffi::c_char {
                continue;
            }
            if kind == pg_sys::RELKIND_RELATION as std::ffi::c_char && relam == am {
                leaves.columnar += 1;
            } else {
                leaves.other += 1;
            }
        }
        Some(leaves)
    }
}

/// Whether `rel` is a pg_columnar table.
pub fn is_columnar(rel: pg_sys::Relation) -> bool {
    // a relation carries the table only after the handler gave it (`note_routine`)
    let routine = ROUTINE.load(Ordering::Relaxed);
    // SAFETY: `rel` is non-null (checked just before) and an open relation: every caller
    // passes one (a safe fn over a raw pointer, so this is not checked)
    !routine.is_null() && !rel.is_null() && unsafe { std::ptr::eq((*rel).rd_tableam, routine) }
}

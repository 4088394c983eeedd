//! Utility commands a pg_columnar table refuses, refused before they create anything; and
//! REFRESH of the extension's catalogs (stripes, row marks, row reservations), which would empty them.
//!
//! `CREATE INDEX CONCURRENTLY` and `REINDEX ... CONCURRENTLY` commit a new, invalid index
//! before they validate it, and validation is what a pg_columnar table cannot do (it has no
//! `index_validate_scan`). Refusing in the validation phase would leave that index behind,
//! maintained by every later write, so they are refused here, at the start of the command,
//! for every pg_columnar table they would touch (the leaf partitions of a partitioned table,
//! every table of a schema or database).

use pgrx::pg_sys;
use pgrx::PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED;

use super::routine::is_columnar;

fn refuse_concurrently(what: &str, table: &str) -> ! {
    pgrx::ereport!(
        ERROR,
        ERRCODE_FEATURE_NOT_SUPPORTED,
        format!("pg_columnar tables do not support {what}"),
        format!("\"{table}\" is a pg_columnar table; build its indexes without CONCURRENTLY (that blocks writes to it, not reads, while it runs).")
    );
}

/// Whether the relation `relid` is a pg_columnar table.
unsafe fn relation_is_columnar(relid: pg_sys::Oid) -> bool {
    let rel = pg_sys::RelationIdGetRelation(relid);
    if rel.is_null() {
        return false;
    }
    let columnar = is_columnar(rel);
    pg_sys::RelationClose(rel);
    columnar
}

/// The first pg_columnar table among `relid` and (for a partitioned table) its partitions.
unsafe fn columnar_in_tree(relid: pg_sys::Oid) -> Option<pg_sys::Oid> {
    let list = pg_sys::find_all_inheritors(relid, pg_sys::NoLock as pg_sys::LOCKMODE, std::ptr::null_mut());
    let members = pgrx::PgList::<std::ffi::c_void>::from_pg(list);
    let found = (0..members.len()).map(|i| members.get_oid(i).unwrap_or(pg_sys::InvalidOid)).find(|&oid| relation_is_columnar(oid));
    found
}

unsafe fn rel_name(relid: pg_sys::Oid) -> String {
    let name = pg_sys::get_rel_name(relid);
    if name.is_null() {
        format!("{}", u32::from(relid))
    } else {
        std::ffi::CStr::from_ptr(name).to_string_lossy().into_owned()
    }
}

/// A pg_columnar table with indexes in namespace `nsp` (any namespace if invalid).
fn columnar_with_indexes(nsp: pg_sys::Oid) -> Option<String> {
    let am = super::routine::am_oid()?;
    let query = "SELECT c.oid::regclass::text FROM pg_catalog.pg_class c \
                 WHERE c.relam = $1 AND c.relhasindex AND ($2 = 0 OR c.relnamespace = $2) ORDER BY c.oid LIMIT 1";
    pgrx::Spi::get_one_with_args::<String>(query, &[am.into(), nsp.into()]).ok().flatten()
}

fn has_concurrently(params: *mut pg_sys::List) -> bool {
    let list = unsafe { pgrx::PgList::<pg_sys::DefElem>::from_pg(params) };
    let found = list.iter_ptr().any(|d| unsafe {
        std::ffi::CStr::from_ptr((*d).defname).to_bytes() == b"concurrently" && pg_sys::defGetBoolean(d)
    });
    found
}

/// The data of an event trigger's call, if `fcinfo` is one.
pub unsafe fn event_trigger_data(fcinfo: pg_sys::FunctionCallInfo) -> Option<*mut pg_sys::EventTriggerData> {
    let context = (*fcinfo).context;
    (!context.is_null() && (*context).type_ == pg_sys::NodeTag::T_EventTriggerData).then_some(context as *mut pg_sys::EventTriggerData)
}

/// Refuses, before it runs, a utility command that a pg_columnar table cannot carry out.
pub unsafe fn check_utility(pstmt: *mut pg_sys::PlannedStmt) {
    let stmt = (*pstmt).utilityStmt;
    if stmt.is_null() {
        return;
    }
    match (*stmt).type_ {
        pg_sys::NodeTag::T_IndexStmt => {
            let s = stmt as *mut pg_sys::IndexStmt;
            if !(*s).concurrent {
                return;
            }
            let relid = pg_sys::RangeVarGetRelidExtended((*s).relation, pg_sys::NoLock as pg_sys::LOCKMODE, pg_sys::RVROption::RVR_MISSING_OK, None, std::ptr::null_mut());
            if relid == pg_sys::InvalidOid {
                return;
            }
            if let Some(t) = columnar_in_tree(relid) {
                refuse_concurrently("CREATE INDEX CONCURRENTLY", &rel_name(t));
            }
        }
        pg_sys::NodeTag::T_ReindexStmt => {
            let s = stmt as *mut pg_sys::ReindexStmt;
            if !has_concurrently((*s).params) {
                return;
            }
            use pg_sys::ReindexObjectType::*;
            let found = match (*s).kind {
                REINDEX_OBJECT_INDEX | REINDEX_OBJECT_TABLE => {
                    let relid = pg_sys::RangeVarGetRelidExtended((*s).relation, pg_sys::NoLock as pg_sys::LOCKMODE, pg_sys::RVROption::RVR_MISSING_OK, None, std::ptr::null_mut());
                    if relid == pg_sys::InvalidOid {
                        return;
                    }
                    let table = if (*s).kind == REINDEX_OBJECT_INDEX { pg_sys::IndexGetRelation(relid, true) } else { relid };
                    if table == pg_sys::InvalidOid {
                        return;
                    }
                    columnar_in_tree(table).map(|t| rel_name(t))
                }
                REINDEX_OBJECT_SCHEMA => {
                    let nsp = pg_sys::get_namespace_oid((*s).name, true);
                    if nsp == pg_sys::InvalidOid {
                        return;
                    }
                    columnar_with_indexes(nsp)
                }
                _ => columnar_with_indexes(pg_sys::InvalidOid),
            };
            if let Some(t) = found {
                refuse_concurrently("REINDEX CONCURRENTLY", &t);
            }
        }
        pg_sys::NodeTag::T_RefreshMatViewStmt => {
            let s = stmt as *mut pg_sys::RefreshMatViewStmt;
            let relid = pg_sys::RangeVarGetRelidExtended((*s).relation, pg_sys::NoLock as pg_sys::LOCKMODE, pg_sys::RVROption::RVR_MISSING_OK, None, std::ptr::null_mut());
            let catalogs = [
                (c"stripe", "pgcol.stripe is pg_columnar's stripe catalog", "Refreshing it would forget every stripe of every pg_columnar table."),
                (
                    c"row_mark",
                    "pgcol.row_mark is pg_columnar's catalog of deleted and locked rows",
                    "Refreshing it would bring back every deleted row of every pg_columnar table.",
                ),
                (
                    c"row_reservation",
                    "pgcol.row_reservation is pg_columnar's catalog of row numbers taken by running transactions",
                    "Refreshing it would let unique checks miss rows that are being inserted.",
                ),
            ];
            for (name, what, detail) in catalogs {
                if relid != pg_sys::InvalidOid && Some(relid) == crate::storage::pgcol_relation(name) {
                    pgrx::ereport!(ERROR, pgrx::PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED, format!("{what} and cannot be refreshed"), detail);
                }
            }
        }
        _ => {}
    }
}

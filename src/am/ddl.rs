//! Utility commands refused before they run: REFRESH of the extension's catalogs (stripes,
//! row marks, row reservations), which would empty them.

use pgrx::pg_sys;

/// The data of an event trigger's call, if `fcinfo` is one.
///
/// # Safety
///
/// `fcinfo` is the valid call information of a function PostgreSQL is calling.
pub(super) unsafe fn event_trigger_data(
    fcinfo: pg_sys::FunctionCallInfo,
) -> Option<*mut pg_sys::EventTriggerData> {
    // SAFETY: `fcinfo` is valid (this function's contract); its `context`, when not null, is
    // a node, whose tag is read before it is taken for EventTriggerData
    unsafe {
        let context = (*fcinfo).context;
        (!context.is_null() && (*context).type_ == pg_sys::NodeTag::T_EventTriggerData)
            .then_some(context as *mut pg_sys::EventTriggerData)
    }
}

/// Refuses, before it runs, a utility command that would break pg_columnar's catalogs.
///
/// # Safety
///
/// `pstmt` is the valid utility statement the ProcessUtility hook was given, in a transaction.
pub unsafe fn check_utility(pstmt: *mut pg_sys::PlannedStmt) {
    // SAFETY: `pstmt` is valid (this function's contract)
    let stmt = unsafe { (*pstmt).utilityStmt };
    if stmt.is_null() {
        return;
    }
    // SAFETY: a non-null utility statement is a node, which starts with its tag
    if unsafe { (*stmt).type_ } != pg_sys::NodeTag::T_RefreshMatViewStmt {
        return;
    }
    let s = stmt as *mut pg_sys::RefreshMatViewStmt;
    // SAFETY: the tag above says `s` is a RefreshMatViewStmt, whose `relation` is a RangeVar;
    // with NoLock and RVR_MISSING_OK the lookup takes no lock and a missing name is InvalidOid
    let relid = unsafe {
        pg_sys::RangeVarGetRelidExtended(
            (*s).relation,
            pg_sys::NoLock as pg_sys::LOCKMODE,
            pg_sys::RVROption::RVR_MISSING_OK,
            None,
            std::ptr::null_mut(),
        )
    };
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
            pgrx::ereport!(
                ERROR,
                pgrx::PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
                format!("{what} and cannot be refreshed"),
                detail
            );
        }
    }
}

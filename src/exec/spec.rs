//! What a `PgcolScan` plan tells its executor node beyond the plan's own fields ([`ScanSpec`],
//! kept in the plan's `custom_private` through `super::plan_data`), and the columns a plan's
//! expressions read: written by `plan`, read by `node`.

use pgrx::pg_sys;

use super::quals::SkipExpr;

/// What the executor node is told by its plan beyond the plan's own fields: the skip
/// expression, the vectorized filter (quals the node evaluates itself, taken out of the
/// plan's qual list), and how the plan's `custom_exprs` divide: first `value_count` value
/// expressions, then the `skip_clauses` quals the skip expression came from, then the
/// vectorized quals (the node's recheck and EXPLAIN use them). The columns to decode are
/// not here: they come from the plan's final target list and quals and the filter (see
/// `node`), since the planner may still replace the target list after this plan is made
/// (a projection it moves into the scan).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(super) struct ScanSpec {
    pub value_count: u16,
    pub skip_clauses: u16,
    pub skip: Option<SkipExpr>,
    pub filter: Option<SkipExpr>,
}

/// Attributes (1-based, as `wanted[attno - 1]`) that `nodes` read of relation `relid`; a
/// whole-row reference reads them all.
///
/// # Safety
///
/// Each of `nodes` must be null or a valid expression tree; called in a memory context the
/// set of attributes may be allocated in.
pub(super) unsafe fn wanted_columns(
    nodes: &[*mut pg_sys::Node],
    relid: u32,
    natts: usize,
) -> Vec<bool> {
    let mut set: *mut pg_sys::Bitmapset = std::ptr::null_mut();
    for &n in nodes {
        // SAFETY: `n` is null or a valid expression tree (the contract); `set` is a valid
        // (initially empty) set it adds to.
        unsafe { pg_sys::pull_varattnos(n, relid, &mut set) };
    }
    let mut wanted = vec![false; natts];
    let offset = pg_sys::FirstLowInvalidHeapAttributeNumber;
    // SAFETY: `set` is null (empty) or the set `pull_varattnos` made.
    let mut m = unsafe { pg_sys::bms_next_member(set, -1) };
    while m >= 0 {
        let attno = m + offset;
        if attno == 0 {
            wanted.iter_mut().for_each(|w| *w = true);
        } else if attno > 0 && (attno as usize) <= natts {
            wanted[attno as usize - 1] = true;
        }
        // SAFETY: as above; `set` is not changed while it is walked.
        m = unsafe { pg_sys::bms_next_member(set, m) };
    }
    wanted
}

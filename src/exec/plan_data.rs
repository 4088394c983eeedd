//! The one format of the custom nodes' plan data: a node's spec (what its plan tells the
//! executor node beyond the plan's own fields: `spec::ScanSpec`, `agg::AggPlan`,
//! `topn::TopSpec`) serialized with serde, as JSON, into one bytea Const, the plan's (or
//! path's) `custom_private`. PostgreSQL copies, prints and reads plans (the plan cache,
//! parallel workers), and a Const travels through all of it as bytes.
//!
//! Every spec written is read back at once and compared in debug builds (what
//! `./run-tests` builds), so each plan a test makes checks the round trip of its node's
//! data; a spec that does not read back is an ERROR there, never a different plan.

use pgrx::pg_sys;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::list;

/// The bytes of `spec` (what the Const holds).
pub fn encode<T: Serialize>(spec: &T) -> Result<Vec<u8>, serde_json::Error> {
    serde_json::to_vec(spec)
}

/// The spec in `bytes` (made by [`encode`]).
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, serde_json::Error> {
    serde_json::from_slice(bytes)
}

/// `spec` as a `custom_private` list of one bytea Const.
///
/// # Safety
/// In a backend, in the memory context the plan is made in.
pub(super) unsafe fn to_private<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(
    spec: &T,
) -> *mut pg_sys::List {
    let bytes = encode(spec)
        .unwrap_or_else(|e| pgrx::error!("pg_columnar: a plan's data does not serialize: {e}"));
    if cfg!(debug_assertions) {
        match decode::<T>(&bytes) {
            Ok(back) if &back == spec => {}
            Ok(back) => pgrx::error!("pg_columnar: plan data reads back as {back:?}, not {spec:?}"),
            Err(e) => pgrx::error!("pg_columnar: plan data does not read back ({e}): {spec:?}"),
        }
    }
    // SAFETY: in a backend, in the plan's memory context (the contract): the bytea, the Const
    // that holds it and the list are all allocated there and live as long as the plan.
    unsafe {
        let datum = pgrx::rust_byte_slice_to_bytea(&bytes).into_pg();
        let konst = pg_sys::makeConst(
            pg_sys::BYTEAOID,
            -1,
            pg_sys::InvalidOid,
            -1,
            pg_sys::Datum::from(datum),
            false,
            false,
        );
        list::from_nodes([konst as *mut pg_sys::Node])
    }
}

/// The spec in `private` (made by [`to_private`]) of a plan or path of node `node`; an
/// ERROR naming the node if there is none or it does not read.
///
/// # Safety
/// `private` is a `custom_private` list of a plan or path of `node`.
pub(super) unsafe fn from_private<T: DeserializeOwned>(
    private: *mut pg_sys::List,
    node: &str,
) -> T {
    // SAFETY: `private` is a valid (possibly empty) list of nodes (the contract), read at once.
    let first = unsafe { list::nodes(private).next() };
    let konst = match first {
        // SAFETY: a list of a plan's nodes holds valid nodes (the contract).
        Some(n) if unsafe { pgrx::is_a(n, pg_sys::NodeTag::T_Const) } => n as *mut pg_sys::Const,
        _ => pgrx::error!("pg_columnar: a {node} plan without its data"),
    };
    // SAFETY: `konst` is a valid Const (its tag checked above).
    if unsafe { (*konst).consttype != pg_sys::BYTEAOID || (*konst).constisnull } {
        pgrx::error!("pg_columnar: a {node} plan whose data is not bytes");
    }
    // SAFETY: `konst` holds a non-NULL bytea (checked above), which lives as long as the plan;
    // the slice is read before this returns.
    let bytes = unsafe {
        pgrx::varlena::varlena_to_byte_slice(pg_sys::pg_detoast_datum_packed(
            (*konst).constvalue.cast_mut_ptr(),
        ))
    };
    decode(bytes).unwrap_or_else(|e| {
        pgrx::error!("pg_columnar: the data of a {node} plan does not read: {e}")
    })
}

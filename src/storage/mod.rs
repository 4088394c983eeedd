//! The storage layer: how a pg_columnar relation's bytes live in PostgreSQL.
//!
//! * [`meta`]: block 0 of the main fork, the metapage (format version, storage id, row
//!   numbers handed out so far).
//! * [`pages`]: stripes cut into data pages with standard page headers, written with generic
//!   WAL, and read back as byte ranges.
//! * [`catalog`]: one row per stripe in `pgcol.stripe`, so PostgreSQL's MVCC decides which
//!   stripes a snapshot sees.
//! * [`marks`]: one row per deleted or locked row in `pgcol.row_mark`, so MVCC also decides
//!   which deletions a snapshot sees.
//!
//! The byte layout of a stripe is the codec's (`pg_columnar_codec::stripe`); the layout of
//! pages and metapage is specified in docs/FORMAT.md.

pub mod catalog;
pub mod marks;
pub mod meta;
pub mod pages;

use pgrx::pg_sys;

/// The OID of the extension's relation `pgcol.<name>` (catalog, index, sequence), or `None`
/// if it does not exist (as while DROP EXTENSION removes it).
pub fn pgcol_relation(name: &std::ffi::CStr) -> Option<pg_sys::Oid> {
    unsafe {
        let nsp = pg_sys::get_namespace_oid(c"pgcol".as_ptr(), true);
        if nsp == pg_sys::InvalidOid {
            return None;
        }
        let oid = pg_sys::get_relname_relid(name.as_ptr(), nsp);
        (oid != pg_sys::InvalidOid).then_some(oid)
    }
}

/// [`pgcol_relation`], raising an ERROR when it is missing.
pub fn required_pgcol_relation(name: &std::ffi::CStr) -> pg_sys::Oid {
    pgcol_relation(name).unwrap_or_else(|| {
        pgrx::error!("pg_columnar: pgcol.{} is missing; reinstall the extension", name.to_string_lossy())
    })
}

/// Name of a relation for error messages: `schema.name`.
pub fn relation_name(rel: pg_sys::Relation) -> String {
    unsafe {
        let rd = &*(*rel).rd_rel;
        let name = std::ffi::CStr::from_ptr(rd.relname.data.as_ptr()).to_string_lossy();
        let nsp = pg_sys::get_namespace_name(rd.relnamespace);
        if nsp.is_null() {
            name.into_owned()
        } else {
            format!("{}.{}", std::ffi::CStr::from_ptr(nsp).to_string_lossy(), name)
        }
    }
}

/// Reports stored bytes that fail a check: an ERROR naming the relation, never a panic.
pub fn corrupt(rel: pg_sys::Relation, detail: impl std::fmt::Display) -> ! {
    pgrx::ereport!(
        ERROR,
        pgrx::PgSqlErrorCode::ERRCODE_DATA_CORRUPTED,
        format!("pg_columnar relation \"{}\" is corrupt: {detail}", relation_name(rel))
    );
}

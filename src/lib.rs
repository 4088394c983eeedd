//! pg_columnar: a columnar table access method for PostgreSQL.
//!
//! Layers (see docs/ARCHITECTURE in README): the codec lives in the pgrx-free crate
//! `pg_columnar_codec`; this crate holds the storage and access-method layers and the SQL API.

use pgrx::prelude::*;

::pgrx::pg_module_magic!(name, version);

/// The extension's version and the PostgreSQL major it was built for, e.g.
/// `pg_columnar 0.1.0 (PostgreSQL 15, codec format 1)`.
#[pg_extern(immutable, parallel_safe)]
fn version() -> String {
    format!(
        "pg_columnar {} (PostgreSQL {}, codec format {})",
        env!("CARGO_PKG_VERSION"),
        pg_sys::PG_MAJORVERSION_NUM,
        pg_columnar_codec::FORMAT_VERSION
    )
}

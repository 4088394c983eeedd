//! pg_columnar: a columnar table access method for PostgreSQL.
//!
//! The codec lives in the pgrx-free crate `pg_columnar_codec`; this crate holds the storage
//! and access-method layers and the SQL API. Everything the extension puts into a database
//! lives in the schema `pgcol` (see README, "Names").

::pgrx::pg_module_magic!(name, version);

/// The SQL API. The schema is created by the extension script, so it belongs to the
/// extension and DROP EXTENSION removes it.
#[pgrx::pg_schema]
mod pgcol {
    use pgrx::prelude::*;

    /// The extension's version, the PostgreSQL major it was built for and the codec's
    /// format version, e.g. `pg_columnar 0.1.0 (PostgreSQL 15, codec format 1)`.
    #[pg_extern(immutable, parallel_safe)]
    fn version() -> String {
        format!(
            "pg_columnar {} (PostgreSQL {}, codec format {})",
            env!("CARGO_PKG_VERSION"),
            pg_sys::PG_MAJORVERSION_NUM,
            pg_columnar_codec::FORMAT_VERSION
        )
    }
}

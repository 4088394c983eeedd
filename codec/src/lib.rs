//! pg_columnar's codec: turns one vector (up to 1024 values of one column plus a null
//! mask) into one self-describing encoded byte string and back. Pure Rust: no PostgreSQL,
//! no dependence on host endianness or CPU features for its output.

/// Version of the encoded byte layout specified in docs/FORMAT.md. A reader refuses any
/// other version; a change to any encoder's output bytes must bump it.
pub const FORMAT_VERSION: u16 = 1;

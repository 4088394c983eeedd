//! The table access method `pg_columnar`: the `TableAmRoutine` ([`routine`]) and what its
//! callbacks do, by concern.

pub mod datum;
pub mod ddl;
pub mod fetch;
pub mod life;
pub mod logical;
pub mod mask;
mod modify;
pub mod options;
pub mod publication;
pub mod read;
pub mod relation;
mod rewrite;
pub mod routine;
pub mod scan;
pub mod slot;
pub mod ssi;
mod standby;
pub mod vacuum;
mod versioned;
pub mod write;
pub mod xact;

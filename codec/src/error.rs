//! The one error type of decoding: every way stored bytes can be wrong has a name, so the
//! storage layer can report it (with the relation's name) instead of panicking.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// The input ended before `what` could be read.
    Truncated {
        what: &'static str,
        needed: usize,
        available: usize,
    },
    /// A tag byte holds a value no version of the format defines.
    UnknownTag { what: &'static str, value: u8 },
    /// A field holds a value outside its allowed range.
    OutOfRange {
        what: &'static str,
        value: u64,
        limit: u64,
    },
    /// Bytes were left over after a complete vector.
    TrailingBytes { count: usize },
    /// The vector needs a per-stripe FSST symbol table and none was given.
    MissingSymbolTable,
    /// The vector needs its stripe column's shared dictionary and none was given.
    MissingSharedDictionary,
    /// Fields that must agree do not (for example a dictionary code past the dictionary).
    Inconsistent { what: &'static str },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Truncated {
                what,
                needed,
                available,
            } => {
                write!(
                    f,
                    "truncated {what}: needs {needed} bytes, {available} left"
                )
            }
            DecodeError::UnknownTag { what, value } => write!(f, "unknown {what} {value}"),
            DecodeError::OutOfRange { what, value, limit } => {
                write!(f, "{what} {value} out of range (limit {limit})")
            }
            DecodeError::TrailingBytes { count } => {
                write!(f, "{count} unexpected bytes after the end of the vector")
            }
            DecodeError::MissingSymbolTable => {
                write!(f, "FSST-encoded vector but the stripe has no symbol table")
            }
            DecodeError::MissingSharedDictionary => {
                write!(f, "dictionary-encoded vector refers to a shared dictionary the stripe does not have")
            }
            DecodeError::Inconsistent { what } => write!(f, "inconsistent {what}"),
        }
    }
}

impl std::error::Error for DecodeError {}

pub type DecodeResult<T> = Result<T, DecodeError>;

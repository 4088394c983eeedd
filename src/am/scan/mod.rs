//! Reading a pg_columnar table: a stripe-reading core and a cursor for each way rows are read.
//!
//! * [`reader`]: [`StripeReader`] lists the stripes a snapshot sees (or looks them up one by
//!   one as rows are asked for), masks the rows the snapshot finds deleted (read a stripe at
//!   a time as the scan reaches them), loads a stripe and decodes each vector of every column
//!   it wants once into Datums that the returned slots point into. Decoded memory is reused
//!   from vector to vector, so a scan's memory does not grow with the table. A fetch of one
//!   row by number (`am::fetch`) is a reader and no more.
//! * [`rows`]: [`RowScan`], row at a time forward or backward (sequential and TID-range scans,
//!   index builds, rewrites, VACUUM's merge), parallel workers taking whole stripes from a
//!   shared counter;
//! * [`vectors`]: [`VectorScan`], vector at a time for the custom nodes (`crate::exec`), with
//!   zone-map skipping ([`VectorSkip`]), vectorized filters ([`VectorFilter`]) and answers
//!   from metadata ([`MetadataAnswer`]);
//! * [`bitmap`]: bitmap heap scans and TABLESAMPLE, a TID block at a time;
//! * [`analyze`]: ANALYZE's sample;
//! * [`table`]: the table access method's scan descriptor, which holds one of these by the
//!   scan's flags.
//!
//! Rows deleted for the scan's snapshot, and rows VACUUM removed, are left out by every
//! cursor, and a stripe or vector holding one is never answered from its metadata.

mod analyze;
mod bitmap;
mod reader;
mod rows;
mod table;
mod vectors;

pub use reader::{current_snapshot, row_at_a_time_decodes, visible_stripes, StripeReader};
pub use rows::RowScan;
pub use table::{
    begin, end, getnextslot, parallel_initialize, parallel_reinitialize, parallel_size, rescan,
    set_tidrange, state, TableScan,
};
pub use vectors::{
    ColumnLookup, MetadataAnswer, ScanCounters, VectorFilter, VectorScan, VectorSkip,
};

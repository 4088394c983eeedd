//! Arbitrary bytes as a stripe header and directory: parsing must return Ok or a DecodeError,
//! never panic; a directory that parses describes offsets inside the length it claims.
#![no_main]
use libfuzzer_sys::fuzz_target;
use pg_columnar_codec::stripe::StripeDirectory;

fuzz_target!(|data: &[u8]| {
    let _ = StripeDirectory::prefix_len(data);
    if let Ok(dir) = StripeDirectory::parse(data) {
        for col in &dir.columns {
            assert_eq!(col.vectors.len(), dir.vector_count());
            for e in &col.vectors {
                assert!(e.offset >= dir.data_start && e.offset + e.length <= dir.total_len);
            }
        }
    }
});

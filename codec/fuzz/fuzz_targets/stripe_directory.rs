//! Arbitrary bytes as a stripe header and directory: parsing must return Ok or a DecodeError,
//! never panic; a directory that parses describes offsets inside the length it claims.
#![no_main]
use libfuzzer_sys::fuzz_target;
use pg_columnar_codec::stripe::StripeDirectory;

fuzz_target!(|data: &[u8]| {
    let _ = StripeDirectory::prefix_len(data);
    if let Ok(dir) = StripeDirectory::parse(data) {
        for c in 0..dir.columns.len() {
            assert_eq!(dir.vectors(c).len(), dir.vector_count());
            for (v, e) in dir.vectors(c).iter().enumerate() {
                assert!(e.offset >= dir.data_start && e.offset + e.length <= dir.total_len);
                // (as printed: a zone's bound may be NaN, which equals nothing)
                assert_eq!(format!("{:?}", dir.vector(c, v)), format!("{e:?}"));
            }
        }
    }
});

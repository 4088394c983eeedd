//! Arbitrary bytes as an encoded vector, with and without a stripe context (symbol table,
//! shared dictionary): decoding must return Ok or a DecodeError, never panic or read out
//! of bounds.
#![no_main]
use libfuzzer_sys::fuzz_target;
use pg_columnar_codec::{decode_vector, fsst, ColumnContext, SharedDictionary, SymbolTable, ValuesRef};
use std::sync::OnceLock;

fn table() -> &'static SymbolTable {
    static T: OnceLock<SymbolTable> = OnceLock::new();
    T.get_or_init(|| {
        let s: Vec<String> = (0..500).map(|i| format!("https://example.com/{}/x?y={}", i * 31 % 997, i % 7)).collect();
        let r: Vec<&[u8]> = s.iter().map(|x| x.as_bytes()).collect();
        fsst::build_table(&r)
    })
}

fn dictionary() -> &'static SharedDictionary {
    static D: OnceLock<SharedDictionary> = OnceLock::new();
    D.get_or_init(|| SharedDictionary::build(&ValuesRef::Int64(&(0..300).map(|i| i * i).collect::<Vec<i64>>())).unwrap())
}

fuzz_target!(|data: &[u8]| {
    let _ = decode_vector(data, &ColumnContext::default());
    let ctx = ColumnContext { fsst: Some(table()), dictionary: Some(dictionary()), stride: None };
    if let Ok(v) = decode_vector(data, &ctx) {
        assert!(v.rows <= pg_columnar_codec::MAX_ROWS);
    }
});

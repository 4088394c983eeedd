//! The stripe context (FSST symbol table, shared dictionary) the decode_vector target decodes
//! with; shared with the seed generator (codec/examples/fuzz_seeds.rs), so that seeds encoded
//! with it reach the FSST and shared-dictionary decoders.
use pg_columnar_codec::{fsst, SharedDictionary, SymbolTable, ValuesRef};
use std::sync::OnceLock;

pub fn table() -> &'static SymbolTable {
    static T: OnceLock<SymbolTable> = OnceLock::new();
    T.get_or_init(|| {
        let s: Vec<String> = (0..500)
            .map(|i| format!("https://example.com/{}/x?y={}", i * 31 % 997, i % 7))
            .collect();
        let r: Vec<&[u8]> = s.iter().map(|x| x.as_bytes()).collect();
        fsst::build_table(&r)
    })
}

pub fn dictionary() -> &'static SharedDictionary {
    static D: OnceLock<SharedDictionary> = OnceLock::new();
    D.get_or_init(|| {
        SharedDictionary::build(&ValuesRef::Int64(
            &(0..300).map(|i| i * i).collect::<Vec<i64>>(),
        ))
        .unwrap()
    })
}

//! Arbitrary bytes as a stored FSST symbol table, then the rest as a vector decoded with it.
#![no_main]
use libfuzzer_sys::fuzz_target;
use pg_columnar_codec::{decode_vector, SymbolTable};

fuzz_target!(|data: &[u8]| {
    if data.is_empty() {
        return;
    }
    let split = (data[0] as usize).min(data.len() - 1) + 1;
    if let Ok(t) = SymbolTable::deserialize(&data[1..split]) {
        let mut again = Vec::new();
        t.serialize(&mut again);
        assert_eq!(&again[..], &data[1..split], "a table that parses must serialize to the same bytes");
        let _ = decode_vector(&data[split..], Some(&t));
    }
});

//! Arbitrary bytes as a stored FSST symbol table or shared dictionary (first byte picks),
//! then the rest as a vector decoded with it.
#![no_main]
use libfuzzer_sys::fuzz_target;
use pg_columnar_codec::{decode_vector, ColumnContext, SharedDictionary, SymbolTable};

fuzz_target!(|data: &[u8]| {
    if data.is_empty() {
        return;
    }
    let split = (data[0] as usize >> 1).min(data.len() - 1) + 1;
    let stored = &data[1..split];
    if data[0] & 1 == 0 {
        if let Ok(t) = SymbolTable::deserialize(stored) {
            let mut again = Vec::new();
            t.serialize(&mut again);
            assert_eq!(&again[..], stored, "a table that parses must serialize to the same bytes");
            let _ = decode_vector(&data[split..], &ColumnContext { fsst: Some(&t), dictionary: None, stride: None });
        }
    } else if let Ok(d) = SharedDictionary::deserialize(stored) {
        let mut again = Vec::new();
        d.serialize(&mut again);
        assert_eq!(SharedDictionary::deserialize(&again).as_ref(), Ok(&d), "a dictionary must survive a round trip");
        let _ = decode_vector(&data[split..], &ColumnContext { fsst: None, dictionary: Some(&d), stride: None });
    }
});

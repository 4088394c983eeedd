//! Arbitrary bytes as an encoded vector, with and without a stripe context (symbol table,
//! shared dictionary): decoding must return Ok or a DecodeError, never panic or read out
//! of bounds, and must agree with the reference decoder (codec/tests/reference/decode.rs):
//! the same streams accepted, the same vectors read.
#![no_main]
use libfuzzer_sys::fuzz_target;
use pg_columnar_codec::{decode_vector, ColumnContext};

mod context;
use context::{dictionary, table};
#[path = "../../tests/reference/decode.rs"]
mod reference;

fn agree(data: &[u8], ctx: &ColumnContext<'_>) {
    let fast = decode_vector(data, ctx);
    let oracle = reference::decode_vector(data, ctx.fsst.map(|t| t.symbols()), ctx.dictionary.map(|d| d.entries()));
    match (fast, oracle) {
        (Ok(a), Some(b)) => {
            assert!(a.rows <= pg_columnar_codec::MAX_ROWS);
            assert!(a.rows == b.rows && a.nulls == b.nulls && a.values.bitwise_eq(&b.values), "decoders read different vectors");
        }
        (Err(_), None) => {}
        (fast, _) => panic!("decoders disagree: fast {:?}", fast.map(|v| v.rows)),
    }
}

fuzz_target!(|data: &[u8]| {
    agree(data, &ColumnContext::default());
    agree(data, &ColumnContext { fsst: Some(table()), dictionary: Some(dictionary()), stride: None });
});

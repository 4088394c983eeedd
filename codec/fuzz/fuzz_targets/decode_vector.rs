//! Arbitrary bytes as an encoded vector, with and without a stripe context (symbol table,
//! shared dictionary): decoding must return Ok or a DecodeError, never panic or read out
//! of bounds, and must agree with the reference decoder (codec/tests/reference/decode.rs):
//! the same streams accepted, the same vectors read. Single rows (`unpack_row`) must never
//! panic either, and must read the decoded vector's rows wherever the whole decoder accepts.
#![no_main]
use libfuzzer_sys::fuzz_target;
use pg_columnar_codec::{decode_vector, unpack_row, ColumnContext, Vector};

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
            let mut scratch = Vec::new();
            for row in 0..a.rows {
                let (rows, one) = unpack_row(data, ctx, row, &mut scratch).expect("a row of an accepted vector");
                assert!(rows == a.rows && same_row(&one.materialize(ctx), &a, row), "row {row} read alone differs");
            }
        }
        (Err(_), None) => {
            let mut scratch = Vec::new();
            for row in [0, 1, 100, 1023] {
                let _ = unpack_row(data, ctx, row, &mut scratch);
            }
        }
        (fast, _) => panic!("decoders disagree: fast {:?}", fast.map(|v| v.rows)),
    }
}

/// Whether `one` (a vector of one row) is row `row` of `v`.
fn same_row(one: &Vector, v: &Vector, row: usize) -> bool {
    let index = (0..row).filter(|&r| !v.is_null(r)).count();
    let want = if v.is_null(row) { v.values.as_ref().gather(std::iter::empty::<usize>()) } else { v.values.as_ref().gather(std::iter::once(index)) };
    one.rows == 1 && one.is_null(0) == v.is_null(row) && one.values.bitwise_eq(&want)
}

fuzz_target!(|data: &[u8]| {
    agree(data, &ColumnContext::default());
    agree(data, &ColumnContext { fsst: Some(table()), dictionary: Some(dictionary()), stride: None });
});

//! Arbitrary bytes as an encoded vector, with and without a stripe context (symbol table,
//! shared dictionary): decoding must return Ok or a DecodeError, never panic or read out
//! of bounds, and must agree with the reference decoder (codec/tests/reference/decode.rs):
//! the same streams accepted, the same vectors read. Single rows (`unpack_row`) must never
//! panic either, and must read the decoded vector's rows wherever the whole decoder accepts.
//! Comparisons on the unpacked form (integers, codes, a decimal vector's integers) must
//! select the rows the same comparisons select on the decoded vector.
#![no_main]
use libfuzzer_sys::fuzz_target;
use pg_columnar_codec::filter::{select, select_unpacked, Operand, Predicate};
use pg_columnar_codec::zonemap::Cmp;
use pg_columnar_codec::{decode_vector, unpack_row, unpack_vector, ColumnContext, Values, Vector};

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
            let u = unpack_vector(data, ctx).expect("an accepted vector unpacks");
            for operand in operands(&a) {
                for cmp in [Cmp::Lt, Cmp::Le, Cmp::Eq, Cmp::Ge, Cmp::Gt, Cmp::Ne] {
                    let p = Predicate::Compare(cmp, operand.clone());
                    assert!(select_unpacked(&u, ctx, &p) == select(&a, &p), "{p:?} selects other rows unpacked");
                }
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

/// Constants to compare a numeric vector's values with: its first value and the floats
/// beside it, zeros of both signs, NaN and infinity.
fn operands(v: &Vector) -> Vec<Operand> {
    let first = |x: Option<f64>| x.map_or(vec![], |x| vec![x, x.next_up(), x.next_down()]);
    match &v.values {
        Values::Float64(x) => first(x.first().copied()),
        Values::Float32(x) => first(x.first().map(|&f| f as f64)),
        Values::Int8(x) => return x.first().map(|&i| vec![Operand::Int(i as i64), Operand::Int(0)]).unwrap_or_default(),
        Values::Int16(x) => return x.first().map(|&i| vec![Operand::Int(i as i64), Operand::Int(0)]).unwrap_or_default(),
        Values::Int32(x) => return x.first().map(|&i| vec![Operand::Int(i as i64), Operand::Int(0)]).unwrap_or_default(),
        Values::Int64(x) => return x.first().map(|&i| vec![Operand::Int(i), Operand::Int(0)]).unwrap_or_default(),
        _ => return vec![],
    }
    .into_iter()
    .chain([0.0, -0.0, f64::NAN, f64::INFINITY])
    .map(Operand::Float)
    .collect()
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

//! Arbitrary vectors (kind, nulls, values from the fuzzer's bytes) must encode, and decode
//! back to exactly what was encoded; also with a shared dictionary built from them and, for
//! strings, with a symbol table learnt from them.
#![no_main]
use libfuzzer_sys::fuzz_target;
use pg_columnar_codec::{decode_vector, encode_vector, fsst, ByteStrings, ColumnContext, SharedDictionary, Values, Vector};

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let kind = data[0] % 8;
    let null_every = data[1] as usize; // 0: no nulls
    let body = &data[2..];
    let values = match kind {
        0 => Values::Int8(body.iter().map(|&b| b as i8).collect()),
        1 => Values::Int16(body.chunks_exact(2).map(|c| i16::from_le_bytes([c[0], c[1]])).collect()),
        2 => Values::Int32(body.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect()),
        3 => Values::Int64(body.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect()),
        4 => Values::Float32(body.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()),
        5 => Values::Float64(body.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect()),
        6 => Values::Bytes(body.split(|&b| b == b'|').collect::<ByteStrings>()),
        _ => Values::Fixed { width: 3, data: body[..body.len() / 3 * 3].to_vec() },
    };
    let n = values.len().min(pg_columnar_codec::MAX_ROWS);
    let values = truncate(values, n);
    // rows: a null before every `null_every`-th value while there is room for it
    let room = pg_columnar_codec::MAX_ROWS - n;
    let mut null_rows = Vec::new();
    let mut rows: usize = 0;
    for i in 0..n {
        if null_every > 0 && i % null_every == 0 && null_rows.len() < room {
            null_rows.push(rows);
            rows += 1;
        }
        rows += 1;
    }
    let nulls = if null_rows.is_empty() {
        None
    } else {
        let mut b = vec![0u8; rows.div_ceil(8)];
        for r in null_rows {
            b[r / 8] |= 1 << (r % 8);
        }
        Some(b)
    };
    let v = Vector { rows, nulls, values };
    let table = match &v.values {
        Values::Bytes(b) => Some(fsst::build_table(&b.as_ref().iter().collect::<Vec<_>>())),
        _ => None,
    };
    let shared = SharedDictionary::build(&v.values.as_ref());
    for ctx in [
        ColumnContext::default(),
        ColumnContext { fsst: table.as_ref(), dictionary: None, stride: None },
        ColumnContext { fsst: None, dictionary: shared.as_ref(), stride: None },
        // a row period as the stripe writer may find: stride blocks for integers and codes
        ColumnContext { fsst: None, dictionary: shared.as_ref(), stride: Some(1 + (rows as u16 % 97)) },
    ] {
        let mut out = Vec::new();
        let report = encode_vector(&v.as_ref(), &ctx, &mut out).expect("valid vector");
        assert_eq!(report.encoded_len, out.len());
        let back = decode_vector(&out, &ctx).expect("own output decodes");
        assert_eq!(back.rows, v.rows);
        assert_eq!(back.nulls, v.nulls);
        assert!(back.values.bitwise_eq(&v.values));
    }
});

fn truncate(v: Values, n: usize) -> Values {
    match v {
        Values::Int8(mut x) => { x.truncate(n); Values::Int8(x) }
        Values::Int16(mut x) => { x.truncate(n); Values::Int16(x) }
        Values::Int32(mut x) => { x.truncate(n); Values::Int32(x) }
        Values::Int64(mut x) => { x.truncate(n); Values::Int64(x) }
        Values::Float32(mut x) => { x.truncate(n); Values::Float32(x) }
        Values::Float64(mut x) => { x.truncate(n); Values::Float64(x) }
        Values::Bytes(b) => Values::Bytes(b.as_ref().iter().take(n).collect()),
        Values::Fixed { width, mut data } => { data.truncate(n * width as usize); Values::Fixed { width, data } }
    }
}

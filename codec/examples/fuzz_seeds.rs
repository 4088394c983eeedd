//! Seed corpora for the fuzz targets (codec/fuzz), written from real encoder output, so that
//! fuzzing starts from whole vectors and stripes of every kind and encoding instead of growing
//! them from nothing: `cargo run -p pg_columnar_codec --example fuzz_seeds -- DIR` writes
//! DIR/<target>/<name> for decode_vector, roundtrip, stripe_directory, symbol_table and rowpack
//! (codec/fuzz/run calls it). Deterministic: the same files every time.

#[path = "../fuzz/fuzz_targets/context.rs"]
mod context;
#[path = "../tests/gen/mod.rs"]
mod gen;

use gen::{generate, Nulls, Spec, KINDS};
use pg_columnar_codec::stripe::{write_stripe, ColumnInput};
use pg_columnar_codec::{
    encode_vector, ColumnContext, SharedDictionary, Values, ValuesRef, Vector,
};
use std::path::Path;

fn write(dir: &Path, target: &str, name: &str, bytes: &[u8]) {
    let d = dir.join(target);
    std::fs::create_dir_all(&d).expect("seed directory");
    std::fs::write(d.join(name), bytes).expect("seed file");
}

/// The roundtrip target's input: kind (0..8 in its order), a null spacing, then the values.
fn roundtrip_input(v: &Values, null_every: u8) -> Vec<u8> {
    let mut out = Vec::new();
    let mut body = Vec::new();
    let kind = match v {
        Values::Int8(x) => {
            body.extend(x.iter().map(|&b| b as u8));
            0
        }
        Values::Int16(x) => {
            x.iter().for_each(|v| body.extend(v.to_le_bytes()));
            1
        }
        Values::Int32(x) => {
            x.iter().for_each(|v| body.extend(v.to_le_bytes()));
            2
        }
        Values::Int64(x) => {
            x.iter().for_each(|v| body.extend(v.to_le_bytes()));
            3
        }
        Values::Float32(x) => {
            x.iter().for_each(|v| body.extend(v.to_le_bytes()));
            4
        }
        Values::Float64(x) => {
            x.iter().for_each(|v| body.extend(v.to_le_bytes()));
            5
        }
        Values::Bytes(b) => {
            for (i, s) in b.as_ref().iter().enumerate() {
                if i > 0 {
                    body.push(b'|');
                }
                body.extend(s.iter().filter(|&&c| c != b'|'));
            }
            6
        }
        Values::Fixed { data, .. } => {
            body.extend_from_slice(data);
            7
        }
    };
    out.push(kind);
    out.push(null_every);
    out.extend(body);
    out
}

fn main() {
    let dir = std::env::args().nth(1).expect("usage: fuzz_seeds DIR");
    let dir = Path::new(&dir);
    let (table, dictionary) = (context::table(), context::dictionary());
    let mut seed = 1;
    // vectors of every kind and shape, plain contexts; some with the fuzz target's context
    for kind in KINDS {
        for shape in gen::shapes() {
            for (rows, nulls) in [
                (3, Nulls::None),
                (100, Nulls::Some(20)),
                (1024, Nulls::None),
            ] {
                seed += 1;
                let v = generate(&Spec {
                    kind,
                    shape,
                    rows,
                    nulls,
                    seed,
                });
                let mut bytes = Vec::new();
                encode_vector(&v.as_ref(), &ColumnContext::default(), &mut bytes)
                    .expect("valid vector");
                let name = format!("{kind:?}-{shape:?}-{rows}").replace(['(', ')', ' '], "_");
                write(dir, "decode_vector", &name, &bytes);
                if rows <= 100 {
                    write(
                        dir,
                        "roundtrip",
                        &name,
                        &roundtrip_input(&v.values, if rows == 3 { 0 } else { 5 }),
                    );
                }
            }
        }
    }
    // FSST with the target's table, and codes into its shared dictionary (squares)
    let urls: pg_columnar_codec::ByteStrings = (0..200)
        .map(|i| format!("https://example.com/{}/x?y={}", i * 29 % 997, i % 7))
        .collect();
    let fsst_ctx = ColumnContext {
        fsst: Some(table),
        dictionary: None,
        stride: None,
    };
    let mut bytes = Vec::new();
    encode_vector(
        &Vector {
            rows: 200,
            nulls: None,
            values: Values::Bytes(urls),
        }
        .as_ref(),
        &fsst_ctx,
        &mut bytes,
    )
    .unwrap();
    write(dir, "decode_vector", "fsst-urls", &bytes);
    let squares: Vec<i64> = (0..1024).map(|i| (i % 300) * (i % 300)).collect();
    let shared_ctx = ColumnContext {
        fsst: None,
        dictionary: Some(dictionary),
        stride: Some(300),
    };
    let mut bytes = Vec::new();
    encode_vector(
        &Vector {
            rows: 1024,
            nulls: None,
            values: Values::Int64(squares),
        }
        .as_ref(),
        &shared_ctx,
        &mut bytes,
    )
    .unwrap();
    write(dir, "decode_vector", "shared-squares-stride", &bytes);
    // stripes: TSBS-like columns (time, host, a metric), as the writer lays them out
    for (rows, hosts) in [(1, 1), (2500, 100), (5000, 10)] {
        let t = gen::tsbs::generate(rows, hosts, rows as u64);
        let inputs = [
            ColumnInput {
                nulls: None,
                values: ValuesRef::Int64(&t.time),
            },
            ColumnInput {
                nulls: None,
                values: ValuesRef::Bytes(t.hostname.as_ref()),
            },
            ColumnInput {
                nulls: None,
                values: ValuesRef::Float64(&t.usage_user),
            },
        ];
        let mut image = Vec::new();
        write_stripe(&inputs, rows, &mut image).expect("a stripe");
        let prefix = pg_columnar_codec::stripe::StripeDirectory::prefix_len(&image).unwrap();
        write(
            dir,
            "stripe_directory",
            &format!("tsbs-{rows}"),
            &image[..prefix],
        );
    }
    // a small shared dictionary (first byte: its length times two, plus one for "dictionary"),
    // then a vector coded into it
    let d = SharedDictionary::build(&ValuesRef::Int32(&[5, 7, 9])).unwrap();
    let mut stored = Vec::new();
    d.serialize(&mut stored);
    let mut input = vec![((stored.len() as u8) << 1) | 1];
    input.extend(&stored);
    let ctx = ColumnContext {
        fsst: None,
        dictionary: Some(&d),
        stride: None,
    };
    encode_vector(
        &Vector {
            rows: 6,
            nulls: None,
            values: Values::Int32(vec![5, 9, 7, 7, 5, 9]),
        }
        .as_ref(),
        &ctx,
        &mut input,
    )
    .unwrap();
    write(dir, "symbol_table", "shared-int32", &input);
    // packed batches of rows (the target's first three bytes: the row count and the unpacked
    // length): tuple-like rows sharing most of their bytes, and rows of every length to 40
    let batches: [Vec<Vec<u8>>; 2] = [
        (0..20u8)
            .map(|i| {
                let mut row = vec![14, 0, 3, 8, 32, 0xff, 0x1f, 0, 0, 0, 0, 0, 0];
                row.extend_from_slice(&(1_500_000_000u64 + 10 * i as u64).to_le_bytes());
                row.extend_from_slice(&[
                    i % 7,
                    0,
                    0,
                    0,
                    15,
                    b'h',
                    b'o',
                    b's',
                    b't',
                    b'_',
                    b'0' + i % 7,
                ]);
                row.extend_from_slice(&(i as f64 * 3.0).to_le_bytes());
                row
            })
            .collect(),
        (0..40u8).map(|n| (0..n).collect()).collect(),
    ];
    for (k, batch) in batches.iter().enumerate() {
        let mut packer = pg_columnar_codec::rowpack::RowPacker::new();
        batch.iter().for_each(|r| packer.push(r));
        let mut packed = Vec::new();
        let (rows, unpacked) = packer.finish(&mut packed);
        let mut input = vec![rows as u8];
        input.extend_from_slice(&(unpacked as u16).to_le_bytes());
        input.extend_from_slice(&packed);
        write(dir, "rowpack", &format!("batch-{k}"), &input);
    }
}

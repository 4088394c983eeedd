//! Criterion benches for the codec (pure Rust, no database): `cargo bench -p pg_columnar_codec`.
//! Vectors are TSBS-like (timestamps 10 s apart for 100 interleaved hosts, integer-valued
//! random-walk float metrics, host names) and adversarial (random doubles, high-cardinality
//! strings). Figures and method: docs/BENCHMARKS.md.

#[path = "../codec/tests/gen/mod.rs"]
mod gen;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use pg_columnar_codec::bits::ByteReader;
use pg_columnar_codec::filter::{select, select_unpacked, Operand, Predicate};
use pg_columnar_codec::zonemap::Cmp;
use pg_columnar_codec::{
    bitpack, decode_vector, encode_vector, fsst, gorilla, unpack_vector, ByteStrings,
    ColumnContext, SharedDictionary, SymbolTable, Values, ValuesRef, Vector,
};
use std::hint::black_box;

const N: usize = 1024;

fn tsbs() -> gen::tsbs::TsbsColumns {
    gen::tsbs::generate(N, 100, 7)
}

fn random_doubles() -> Vec<f64> {
    let mut r = gen::Rng(11);
    (0..N).map(|_| f64::from_bits(r.next() >> 2)).collect()
}

/// Slowly drifting non-integral metrics (Gorilla's home ground).
fn drifting_doubles() -> Vec<f64> {
    let mut r = gen::Rng(5);
    let mut x = 20.0f64;
    (0..N)
        .map(|_| {
            x += (r.below(200) as f64 - 100.0) / 64.0;
            x
        })
        .collect()
}

/// A decimal sensor metric (tsbs-gen --sensors' temperature): `hosts` interleaved random
/// walks in hundredths (steps of up to ±0.05), each value the float8 nearest its decimal.
fn decimal_walk(hosts: usize) -> Vec<f64> {
    let mut r = gen::Rng(9);
    let mut walk: Vec<i64> = (0..hosts).map(|_| 1500 + r.below(1500) as i64).collect();
    (0..N)
        .map(|i| {
            let w = &mut walk[i % hosts];
            *w += r.below(11) as i64 - 5;
            *w as f64 / 100.0
        })
        .collect()
}

fn urls() -> ByteStrings {
    (0..N)
        .map(|i| {
            format!(
                "https://example.com/catalog/item/{}/details?lang=en&ref={}",
                (i * 7919) % 100_003,
                i % 13
            )
        })
        .collect()
}

fn random_strings() -> ByteStrings {
    let mut r = gen::Rng(3);
    (0..N)
        .map(|_| {
            (0..8 + r.below(24))
                .map(|_| b'a' + r.below(26) as u8)
                .collect::<Vec<u8>>()
        })
        .collect()
}

fn bench_bitpack(c: &mut Criterion) {
    let mut g = c.benchmark_group("bitpack_decode");
    g.throughput(Throughput::Elements(N as u64));
    // frame-of-reference blocks of random fields at several widths (named by the width)
    let mut blocks: Vec<(String, bitpack::BlockPlan, Vec<i64>)> = [1u32, 7, 8, 24, 33, 64]
        .into_iter()
        .map(|width| {
            let mut r = gen::Rng(width as u64);
            let values: Vec<i64> = (0..N).map(|_| (r.next() >> (64 - width)) as i64).collect();
            (width.to_string(), bitpack::plan_for(&values), values)
        })
        .collect();
    // the blocks the writer chooses for a metric in a stripe sorted by host: Rice, for one
    // host's walk, and for the end of one host's and the start of the next (a jump between
    // them, an escape)
    let walk = |seed| -> Vec<i64> {
        gen::tsbs::generate(N, 1, seed)
            .usage_user
            .iter()
            .map(|&v| v as i64)
            .collect()
    };
    let two_hosts: Vec<i64> = walk(7)[..600]
        .iter()
        .chain(&walk(8)[600..])
        .copied()
        .collect();
    for (name, values) in [("rice_one_host", walk(7)), ("rice_two_hosts", two_hosts)] {
        let plan = bitpack::plan(&values);
        assert_eq!(
            plan.mode,
            bitpack::BlockMode::Rice,
            "{name} packs as a Rice block"
        );
        blocks.push((name.to_string(), plan, values));
    }
    for (name, plan, values) in blocks {
        let mut block = Vec::new();
        bitpack::write_planned(&values, &plan, &mut block);
        let mut out = Vec::with_capacity(N);
        g.bench_with_input(BenchmarkId::from_parameter(name), &block, |b, block| {
            b.iter(|| {
                out.clear();
                bitpack::read_block(&mut ByteReader::new(black_box(block)), N, &mut out).unwrap();
                black_box(&out);
            })
        });
    }
    g.finish();
}

fn bench_gorilla(c: &mut Criterion) {
    for (name, values) in [
        ("drifting", drifting_doubles()),
        ("random", random_doubles()),
    ] {
        let lanes: Vec<u64> = values.iter().map(|x| x.to_bits()).collect();
        let mut enc = Vec::new();
        gorilla::encode(&lanes, 64, &mut enc);
        let mut g = c.benchmark_group("gorilla");
        g.throughput(Throughput::Elements(N as u64));
        g.bench_function(BenchmarkId::new("encode", name), |b| {
            let mut out = Vec::with_capacity(enc.len() + 16);
            b.iter(|| {
                out.clear();
                gorilla::encode(black_box(&lanes), 64, &mut out);
                black_box(&out);
            })
        });
        g.bench_function(BenchmarkId::new("decode", name), |b| {
            b.iter(|| black_box(gorilla::decode(black_box(&enc), N, 64).unwrap()))
        });
        g.finish();
    }
}

fn bench_fsst(c: &mut Criterion) {
    let strings = urls();
    let table: SymbolTable =
        fsst::decide_and_build(strings.as_ref().iter()).expect("URLs get a table");
    let v = Vector {
        rows: N,
        nulls: None,
        values: Values::Bytes(strings.clone()),
    };
    let mut enc = Vec::new();
    let ctx = ColumnContext {
        fsst: Some(&table),
        dictionary: None,
        stride: None,
    };
    let report = encode_vector(&v.as_ref(), &ctx, &mut enc).unwrap();
    assert_eq!(report.chosen, Some(pg_columnar_codec::Encoding::Fsst));
    let mut g = c.benchmark_group("fsst");
    g.throughput(Throughput::Bytes(strings.data.len() as u64));
    g.bench_function("decode_urls", |b| {
        b.iter(|| black_box(decode_vector(black_box(&enc), &ctx).unwrap()))
    });
    g.bench_function("encode_urls", |b| {
        let mut out = Vec::new();
        b.iter(|| {
            out.clear();
            encode_vector(&v.as_ref(), &ctx, &mut out).unwrap();
            black_box(&out);
        })
    });
    g.bench_function("build_table_urls", |b| {
        b.iter(|| black_box(fsst::decide_and_build(strings.as_ref().iter())))
    });
    g.finish();
}

/// The whole chooser, encode and decode, per column.
fn bench_chooser(c: &mut Criterion) {
    let t = tsbs();
    let strings = urls();
    let table = fsst::decide_and_build(strings.as_ref().iter());
    let hosts = SharedDictionary::build(&ValuesRef::Bytes(t.hostname.as_ref()));
    let none = ColumnContext::default();
    let period = ColumnContext {
        fsst: None,
        dictionary: None,
        stride: Some(100),
    };
    let columns: Vec<(&str, Values, ColumnContext)> = vec![
        ("tsbs_time", Values::Int64(t.time.clone()), none),
        (
            "tsbs_usage_user",
            Values::Float64(t.usage_user.clone()),
            none,
        ),
        ("tsbs_hostname", Values::Bytes(t.hostname.clone()), none),
        (
            "tsbs_hostname_shared",
            Values::Bytes(t.hostname.clone()),
            ColumnContext {
                fsst: None,
                dictionary: hosts.as_ref(),
                stride: None,
            },
        ),
        // what the stripe writer gives TSBS columns: the 100-host period, and the shared
        // dictionary for host names
        ("tsbs_time_period", Values::Int64(t.time.clone()), period),
        (
            "tsbs_usage_user_period",
            Values::Float64(t.usage_user.clone()),
            period,
        ),
        // one host's series, as a stripe sorted by host stores it
        (
            "tsbs_usage_user_one_host",
            Values::Float64(gen::tsbs::generate(N, 1, 7).usage_user),
            none,
        ),
        (
            "tsbs_hostname_shared_period",
            Values::Bytes(t.hostname.clone()),
            ColumnContext {
                fsst: None,
                dictionary: hosts.as_ref(),
                stride: Some(100),
            },
        ),
        // decimals: float-as-integer (one host's walk; 100 hosts with the period)
        (
            "sensor_decimal_one_host",
            Values::Float64(decimal_walk(1)),
            none,
        ),
        (
            "sensor_decimal_period",
            Values::Float64(decimal_walk(100)),
            period,
        ),
        ("random_doubles", Values::Float64(random_doubles()), none),
        ("random_strings", Values::Bytes(random_strings()), none),
        (
            "urls_fsst",
            Values::Bytes(strings.clone()),
            ColumnContext {
                fsst: table.as_ref(),
                dictionary: None,
                stride: None,
            },
        ),
    ];
    let mut g = c.benchmark_group("chooser");
    g.throughput(Throughput::Elements(N as u64));
    for (name, values, ctx) in &columns {
        let v = Vector {
            rows: N,
            nulls: None,
            values: values.clone(),
        };
        let mut enc = Vec::new();
        encode_vector(&v.as_ref(), ctx, &mut enc).unwrap();
        g.bench_function(BenchmarkId::new("encode", name), |b| {
            let mut out = Vec::with_capacity(enc.len());
            b.iter(|| {
                out.clear();
                black_box(encode_vector(black_box(&v.as_ref()), ctx, &mut out).unwrap());
            })
        });
        g.bench_function(BenchmarkId::new("decode", name), |b| {
            b.iter(|| black_box(decode_vector(black_box(&enc), ctx).unwrap()))
        });
    }
    g.finish();
}

/// The scan's filter kernels on vectors as the stripe writer encodes TSBS columns: unpack
/// and select (what a vectorized filter costs per vector), against decode and select on the
/// materialized values.
fn bench_filter(c: &mut Criterion) {
    let t = tsbs();
    let hosts = SharedDictionary::build(&ValuesRef::Bytes(t.hostname.as_ref()));
    let period = ColumnContext {
        fsst: None,
        dictionary: None,
        stride: Some(100),
    };
    let shared = ColumnContext {
        fsst: None,
        dictionary: hosts.as_ref(),
        stride: Some(100),
    };
    let host = |i: usize| Operand::Bytes(t.hostname.as_ref().get(i).to_vec());
    let cases: Vec<(&str, Values, ColumnContext, Predicate)> = vec![
        (
            "usage_user_gt_90",
            Values::Float64(t.usage_user.clone()),
            period,
            Predicate::Compare(Cmp::Gt, Operand::Float(90.0)),
        ),
        (
            "sensor_temperature_gt_25",
            Values::Float64(decimal_walk(100)),
            period,
            Predicate::Compare(Cmp::Gt, Operand::Float(25.0)),
        ),
        (
            "hostname_in_8",
            Values::Bytes(t.hostname.clone()),
            shared,
            Predicate::Any(Cmp::Eq, (0..8).map(host).collect()),
        ),
    ];
    let mut g = c.benchmark_group("filter");
    g.throughput(Throughput::Elements(N as u64));
    for (name, values, ctx, p) in &cases {
        let v = Vector {
            rows: N,
            nulls: None,
            values: values.clone(),
        };
        let mut enc = Vec::new();
        encode_vector(&v.as_ref(), ctx, &mut enc).unwrap();
        g.bench_function(BenchmarkId::new("unpacked", name), |b| {
            b.iter(|| {
                black_box(
                    select_unpacked(&unpack_vector(black_box(&enc), ctx).unwrap(), ctx, p).unwrap(),
                )
            })
        });
        g.bench_function(BenchmarkId::new("decoded", name), |b| {
            b.iter(|| black_box(select(&decode_vector(black_box(&enc), ctx).unwrap(), p).unwrap()))
        });
    }
    g.finish();
}

/// A COPY batch of TSBS rows as logical decoding logs them (`codec::rowpack`): each row a
/// heap tuple's data, here the time, the host name as a short varlena, its 8-byte alignment
/// and ten integer-valued metrics (the one TSBS-like walk, rotated per metric).
fn bench_rowpack(c: &mut Criterion) {
    use pg_columnar_codec::rowpack::{unpack_rows, RowPacker};
    let t = tsbs();
    let mut packer = RowPacker::new();
    let mut row = Vec::new();
    for i in 0..N {
        row.clear();
        row.extend_from_slice(&t.time[i].to_le_bytes());
        let host = t.hostname.as_ref().get(i);
        row.push(((host.len() + 1) << 1 | 1) as u8);
        row.extend_from_slice(host);
        row.resize(row.len().next_multiple_of(8), 0);
        for m in 0..10 {
            row.extend_from_slice(&t.usage_user[(i + m * 97) % N].to_le_bytes());
        }
        packer.push(&row);
    }
    let mut packed = Vec::new();
    let (rows, unpacked) = packer.finish(&mut packed);
    let mut g = c.benchmark_group("rowpack");
    g.throughput(Throughput::Elements(rows as u64));
    g.bench_function("unpack_tsbs", |b| {
        b.iter(|| black_box(unpack_rows(black_box(&packed), rows, unpacked, usize::MAX).unwrap()))
    });
    g.finish();
}

criterion_group!(
    benches,
    bench_bitpack,
    bench_gorilla,
    bench_fsst,
    bench_chooser,
    bench_filter,
    bench_rowpack
);
criterion_main!(benches);

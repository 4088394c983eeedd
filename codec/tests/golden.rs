//! Golden bytes: for a fixed set of inputs the encoded vectors are committed in
//! tests/golden/vectors.txt, and any byte change fails here. A deliberate format change
//! regenerates the file with PG_COLUMNAR_UPDATE_GOLDEN=1 and says why in its commit.

mod gen;

use gen::{generate, GenKind, Nulls, Shape, Spec, KINDS};
use pg_columnar_codec::{encode_vector, ByteStrings, ColumnContext, Values, Vector};
use std::fmt::Write;

fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .fold(String::with_capacity(2 * bytes.len()), |mut s, b| {
            write!(s, "{b:02x}").unwrap();
            s
        })
}

fn golden_inputs() -> Vec<(String, Vector)> {
    let mut v = Vec::new();
    let mut seed = 1000;
    for kind in KINDS {
        for shape in [
            Shape::Random,
            Shape::Constant,
            Shape::Ramp,
            Shape::Specials,
            Shape::Walk,
            Shape::Drift,
            Shape::Width(0),
            Shape::Width(9),
            Shape::Width(33),
            Shape::Width(64),
            Shape::Distinct(2),
            Shape::Distinct(100),
        ] {
            for (rows, nulls) in [
                (100, Nulls::None),
                (77, Nulls::Some(20)),
                (9, Nulls::All),
                (0, Nulls::None),
            ] {
                seed += 1;
                let spec = Spec {
                    kind,
                    shape,
                    rows,
                    nulls,
                    seed,
                };
                v.push((
                    format!("{kind:?}/{shape:?}/{rows}/{nulls:?}"),
                    generate(&spec),
                ));
            }
        }
    }
    // shapes added with patched blocks (format 2), seeded apart so the entries above keep
    // their inputs
    let mut seed = 5000;
    for kind in KINDS {
        for shape in [Shape::Runs, Shape::Outliers] {
            for (rows, nulls) in [
                (100, Nulls::None),
                (77, Nulls::Some(20)),
                (1024, Nulls::None),
            ] {
                seed += 1;
                let spec = Spec {
                    kind,
                    shape,
                    rows,
                    nulls,
                    seed,
                };
                v.push((
                    format!("{kind:?}/{shape:?}/{rows}/{nulls:?}"),
                    generate(&spec),
                ));
            }
        }
    }
    // full TSBS-like vectors
    let t = gen::tsbs::generate(2048, 100, 42);
    for (i, range) in [(0, 0..1024), (1, 1024..2048)] {
        v.push((
            format!("tsbs/time/{i}"),
            Vector {
                rows: 1024,
                nulls: None,
                values: Values::Int64(t.time[range.clone()].to_vec()),
            },
        ));
        v.push((
            format!("tsbs/usage_user/{i}"),
            Vector {
                rows: 1024,
                nulls: None,
                values: Values::Float64(t.usage_user[range.clone()].to_vec()),
            },
        ));
        let names: ByteStrings = range
            .clone()
            .map(|r| t.hostname.as_ref().get(r).to_vec())
            .collect();
        v.push((
            format!("tsbs/hostname/{i}"),
            Vector {
                rows: 1024,
                nulls: None,
                values: Values::Bytes(names),
            },
        ));
    }
    // Rice delta blocks (format 3): one host's metric, as a stripe sorted by host stores it
    let host = gen::tsbs::generate(1024, 1, 42);
    v.push((
        "tsbs/usage_user/one_host".to_string(),
        Vector {
            rows: 1024,
            nulls: None,
            values: Values::Float64(host.usage_user),
        },
    ));
    let _ = GenKind::Int8;
    v
}

/// Vectors encoded with a stripe context, and the context's stored bytes themselves.
fn golden_with_context(now: &mut String) {
    use pg_columnar_codec::{fsst, SharedDictionary, ValuesRef};
    let t = gen::tsbs::generate(2048, 100, 42);
    let d = SharedDictionary::build(&ValuesRef::Bytes(t.hostname.as_ref())).unwrap();
    let mut bytes = Vec::new();
    d.serialize(&mut bytes);
    writeln!(now, "tsbs/hostname/shared-dictionary\t-\t{}", hex(&bytes)).unwrap();
    let names: ByteStrings = (1024..2048)
        .map(|r| t.hostname.as_ref().get(r).to_vec())
        .collect();
    let v = Vector {
        rows: 1024,
        nulls: None,
        values: Values::Bytes(names),
    };
    let ctx = ColumnContext {
        fsst: None,
        dictionary: Some(&d),
        stride: None,
    };
    let mut out = Vec::new();
    let r = encode_vector(&v.as_ref(), &ctx, &mut out).unwrap();
    writeln!(
        now,
        "tsbs/hostname/1/shared\t{}\t{}",
        r.chosen.unwrap().name(),
        hex(&out)
    )
    .unwrap();

    let urls: Vec<String> = (0..4096)
        .map(|i| {
            format!(
                "https://example.com/catalog/item/{}/details?lang=en&ref={}",
                (i * 7919) % 100_003,
                i % 13
            )
        })
        .collect();
    let table = fsst::decide_and_build(urls.iter().map(|u| u.as_bytes())).unwrap();
    let mut bytes = Vec::new();
    table.serialize(&mut bytes);
    writeln!(now, "urls/fsst-table\t-\t{}", hex(&bytes)).unwrap();
    let v = Vector {
        rows: 200,
        nulls: None,
        values: Values::Bytes(urls[..200].iter().collect()),
    };
    let ctx = ColumnContext {
        fsst: Some(&table),
        dictionary: None,
        stride: None,
    };
    let mut out = Vec::new();
    let r = encode_vector(&v.as_ref(), &ctx, &mut out).unwrap();
    writeln!(
        now,
        "urls/200/fsst\t{}\t{}",
        r.chosen.unwrap().name(),
        hex(&out)
    )
    .unwrap();

    // stride blocks: TSBS vectors encoded with the stripe's row period (100 hosts)
    let stride = Some(100);
    let ctx = ColumnContext {
        fsst: None,
        dictionary: Some(&d),
        stride,
    };
    let names: ByteStrings = (0..1024)
        .map(|r| t.hostname.as_ref().get(r).to_vec())
        .collect();
    for (name, values) in [
        ("time", Values::Int64(t.time[..1024].to_vec())),
        ("usage_user", Values::Float64(t.usage_user[..1024].to_vec())),
        ("hostname", Values::Bytes(names)),
    ] {
        let v = Vector {
            rows: 1024,
            nulls: None,
            values,
        };
        let mut out = Vec::new();
        let r = encode_vector(&v.as_ref(), &ctx, &mut out).unwrap();
        writeln!(
            now,
            "tsbs/{name}/0/stride100\t{}\t{}",
            r.chosen.unwrap().name(),
            hex(&out)
        )
        .unwrap();
    }
}

#[test]
fn encoded_bytes_match_the_committed_golden_file() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/vectors.txt");
    let mut now = String::new();
    for (name, vector) in golden_inputs() {
        let mut out = Vec::new();
        let r = encode_vector(&vector.as_ref(), &ColumnContext::default(), &mut out).unwrap();
        let chosen = r.chosen.map_or("-", |e| e.name());
        writeln!(now, "{name}\t{chosen}\t{}", hex(&out)).unwrap();
    }
    golden_with_context(&mut now);
    if std::env::var_os("PG_COLUMNAR_UPDATE_GOLDEN").is_some() {
        std::fs::write(path, &now).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(path)
        .expect("golden file (regenerate with PG_COLUMNAR_UPDATE_GOLDEN=1)");
    let (c, n): (Vec<&str>, Vec<&str>) = (committed.lines().collect(), now.lines().collect());
    assert_eq!(c.len(), n.len(), "number of golden vectors changed");
    for (a, b) in c.iter().zip(&n) {
        assert!(
            a == b,
            "encoded bytes changed:\n committed {}\n now       {}",
            &a[..a.len().min(300)],
            &b[..b.len().min(300)]
        );
    }
}

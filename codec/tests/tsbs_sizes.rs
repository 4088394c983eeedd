//! Encoded size of TSBS-like columns, in bits per value, with the stripe context a stripe
//! writer would build (a shared dictionary per column, an FSST table where the decide rule
//! builds one). The size of the shared dictionary and table is counted in the column's
//! total when a vector uses it. Targets from the codec's brief: timestamps under 4 bits per
//! value, integer-valued metrics and host names under 8. Run with `--nocapture` to see the
//! figures.

mod gen;

use pg_columnar_codec::{
    encode_vector, fsst, ByteStrings, ColumnContext, SharedDictionary, Values, ValuesRef, Vector,
};

const ROWS: usize = 102_400; // one stripe of 100 full vectors
const HOSTS: usize = 100;

/// Bits per value of a whole stripe column, and how many vectors chose each encoding.
fn stripe_bits(column: &Values) -> (f64, Vec<(String, usize)>) {
    let all = column.as_ref();
    let shared = SharedDictionary::build(&all);
    let table = match &all {
        ValuesRef::Bytes(b) => fsst::decide_and_build(b.iter()),
        _ => None,
    };
    let ctx = ColumnContext {
        fsst: table.as_ref(),
        dictionary: shared.as_ref(),
        stride: None,
    };
    let (mut bytes, mut used_shared, mut used_fsst) = (0usize, false, false);
    let mut chosen = std::collections::BTreeMap::new();
    for start in (0..ROWS).step_by(1024) {
        let values = slice(column, start, start + 1024);
        let v = Vector {
            rows: 1024,
            nulls: None,
            values,
        };
        let mut out = Vec::new();
        let r = encode_vector(&v.as_ref(), &ctx, &mut out).unwrap();
        bytes += out.len();
        used_shared |=
            r.shared_dictionary && r.chosen == Some(pg_columnar_codec::Encoding::Dictionary);
        used_fsst |= r.chosen == Some(pg_columnar_codec::Encoding::Fsst);
        let name = format!(
            "{}{}",
            r.chosen.unwrap().name(),
            if r.shared_dictionary && r.chosen == Some(pg_columnar_codec::Encoding::Dictionary) {
                " (shared)"
            } else {
                ""
            }
        );
        *chosen.entry(name).or_insert(0) += 1;
    }
    let mut stored = Vec::new();
    if used_shared {
        shared.as_ref().unwrap().serialize(&mut stored);
    }
    if used_fsst {
        table.as_ref().unwrap().serialize(&mut stored);
    }
    (
        (bytes + stored.len()) as f64 * 8.0 / ROWS as f64,
        chosen.into_iter().collect(),
    )
}

/// Bytes a stripe column takes: its vectors and its stored contexts.
fn stored_bytes(dir: &pg_columnar_codec::stripe::StripeDirectory, c: usize) -> usize {
    let col = &dir.columns[c];
    dir.vectors(c).iter().map(|e| e.length).sum::<usize>()
        + col.fsst.map_or(0, |e| e.length)
        + col.dictionary.map_or(0, |e| e.length)
}

fn slice(v: &Values, a: usize, b: usize) -> Values {
    match v {
        Values::Int64(x) => Values::Int64(x[a..b].to_vec()),
        Values::Float64(x) => Values::Float64(x[a..b].to_vec()),
        Values::Bytes(s) => {
            Values::Bytes((a..b).map(|i| s.as_ref().get(i)).collect::<ByteStrings>())
        }
        _ => unreachable!(),
    }
}

#[test]
fn tsbs_columns_meet_their_size_targets() {
    let t = gen::tsbs::generate(ROWS, HOSTS, 2016);
    let columns = [
        ("time", Values::Int64(t.time), 4.0),
        ("usage_user", Values::Float64(t.usage_user), 8.0),
        ("hostname", Values::Bytes(t.hostname), 8.0),
    ];
    for (name, column, target) in columns {
        let (bits, chosen) = stripe_bits(&column);
        println!("{name:12} {bits:6.2} bits/value  (target < {target})  vectors: {chosen:?}");
        assert!(
            bits < target,
            "{name}: {bits:.2} bits per value, target < {target}"
        );
    }
}

/// The whole stripe writer on the three columns together: it finds the 100-host period in
/// the host names and packs metrics, timestamps and host codes as stride deltas. Bits per
/// value counted from the stripe directory (vectors plus each column's stored contexts).
#[test]
fn stripe_writer_finds_the_host_period_and_uses_it() {
    use pg_columnar_codec::stripe::{self, ColumnInput, StripeDirectory};
    let t = gen::tsbs::generate(ROWS, HOSTS, 2016);
    let columns = [
        ("time", Values::Int64(t.time.clone()), 0.5, true),
        // the host codes are one ramp per period: delta blocks patched at each period's
        // end pack them as small as stride blocks do, so the period need not help here
        ("hostname", Values::Bytes(t.hostname.clone()), 1.0, false),
        (
            "usage_user",
            Values::Float64(t.usage_user.clone()),
            5.0,
            true,
        ),
    ];
    let inputs: Vec<ColumnInput> = columns
        .iter()
        .map(|(_, v, _, _)| ColumnInput {
            nulls: None,
            values: v.as_ref(),
        })
        .collect();
    assert_eq!(stripe::detect_period(&inputs), Some(HOSTS as u16));
    let mut image = Vec::new();
    stripe::write_stripe(&inputs, ROWS, &mut image).unwrap();
    let dir = StripeDirectory::parse(&image).unwrap();
    for (c, (name, column, target, helps)) in columns.iter().enumerate() {
        let bits = stored_bytes(&dir, c) as f64 * 8.0 / ROWS as f64;
        let (without, _) = stripe_bits(column);
        println!("{name:12} {bits:6.2} bits/value with the period, {without:6.2} without (target < {target})");
        assert!(
            bits < *target,
            "{name}: {bits:.2} bits per value, target < {target}"
        );
        assert!(
            bits < without || !helps && bits <= without,
            "{name}: the period did not help ({bits:.2} vs {without:.2})"
        );
    }
    // control: a column that is not periodic yields no period
    let noise: Vec<i64> = (0..4096)
        .map(|i: i64| i.wrapping_mul(2654435761) % 1000)
        .collect();
    assert_eq!(
        stripe::detect_period(&[ColumnInput {
            nulls: None,
            values: ValuesRef::Int64(&noise)
        }]),
        None
    );
}

/// The same columns in one stripe of 131,072 rows (the table's default stripe), written
/// time-major and sorted by host then time (`pg_columnar.sort_key = 'hostname, time'`).
/// Sorted, a host's run (1,310.72 rows) ends inside most vectors; patched blocks keep the
/// jump at the run's end from widening every delta, so each column, and the stripe with
/// its row positions, is smaller sorted than time-major.
#[test]
fn a_stripe_sorted_by_host_is_smaller_than_time_major() {
    use pg_columnar_codec::stripe::{self, ColumnInput, StripeDirectory, WriteOptions};
    const STRIPE: usize = 131_072;
    let t = gen::tsbs::generate(STRIPE, HOSTS, 2016);
    let columns = [
        Values::Int64(t.time),
        Values::Bytes(t.hostname),
        Values::Float64(t.usage_user),
    ];
    let inputs: Vec<ColumnInput> = columns
        .iter()
        .map(|v| ColumnInput {
            nulls: None,
            values: v.as_ref(),
        })
        .collect();
    let sizes = |sort_key: Vec<usize>| {
        let mut image = Vec::new();
        stripe::write_stripe_with(
            &inputs,
            STRIPE,
            &WriteOptions {
                find_period: true,
                sort_key,
            },
            &mut image,
        )
        .unwrap();
        let dir = StripeDirectory::parse(&image).unwrap();
        let per_column: Vec<f64> = (0..dir.columns.len())
            .map(|c| stored_bytes(&dir, c) as f64 * 8.0 / STRIPE as f64)
            .collect();
        (per_column, image.len() as f64 * 8.0 / STRIPE as f64)
    };
    let (time_major, whole_tm) = sizes(vec![]);
    let (sorted, whole_sorted) = sizes(vec![1, 0]);
    for (name, (a, b)) in ["time", "hostname", "usage_user"]
        .iter()
        .zip(time_major.iter().zip(&sorted))
    {
        println!("{name:12} {a:6.2} bits/value time-major, {b:6.2} sorted by host");
    }
    println!("stripe       {whole_tm:6.2} bits/row time-major, {whole_sorted:6.2} sorted (row positions included)");
    for (name, (a, b)) in ["time", "hostname", "usage_user"]
        .iter()
        .zip(time_major.iter().zip(&sorted))
    {
        assert!(
            b <= a,
            "{name}: {b:.2} bits per value sorted, {a:.2} time-major"
        );
    }
    assert!(
        whole_sorted < whole_tm,
        "{whole_sorted:.2} against {whole_tm:.2}"
    );
}

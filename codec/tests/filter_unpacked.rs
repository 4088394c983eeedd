//! Filters on vectors that are not materialized (`filter::select_unpacked`: integers of a
//! bitpack vector, codes of a dictionary vector, a decimal float-as-integer vector's integers) against the same filters on the decoded
//! vector (`filter::select`, itself tested against a row-by-row reference in the codec): the
//! selections must be identical on every vector the real encoder writes.

mod gen;

use std::cell::RefCell;

use gen::{generate, GenKind, Nulls, Spec, KINDS, ROWS};
use pg_columnar_codec::filter::{
    select, select_unpacked, select_unpacked_cached, EntryCache, Operand, OperandSet, Predicate,
    SET_MIN_OPERANDS,
};
use pg_columnar_codec::zonemap::Cmp;
use pg_columnar_codec::{
    encode_vector, unpack_vector, ColumnContext, Form, SharedDictionary, Values, Vector,
};
use proptest::prelude::*;

const CMPS: [Cmp; 6] = [Cmp::Lt, Cmp::Le, Cmp::Eq, Cmp::Ge, Cmp::Gt, Cmp::Ne];

/// Constants to compare with: some of the vector's own values (and their neighbours), and
/// the edges of each domain.
fn operands(v: &Vector, seed: u64) -> Vec<Operand> {
    let mut rng = gen::Rng(seed | 1);
    let mut out = Vec::new();
    let n = v.values.len();
    let pick = |rng: &mut gen::Rng| (n > 0).then(|| rng.below(n as u64) as usize);
    let ints: Option<Vec<i64>> = match &v.values {
        Values::Int8(x) => Some(
            (0..3)
                .filter_map(|_| pick(&mut rng))
                .map(|k| x[k] as i64)
                .collect(),
        ),
        Values::Int16(x) => Some(
            (0..3)
                .filter_map(|_| pick(&mut rng))
                .map(|k| x[k] as i64)
                .collect(),
        ),
        Values::Int32(x) => Some(
            (0..3)
                .filter_map(|_| pick(&mut rng))
                .map(|k| x[k] as i64)
                .collect(),
        ),
        Values::Int64(x) => Some(
            (0..3)
                .filter_map(|_| pick(&mut rng))
                .map(|k| x[k])
                .collect(),
        ),
        _ => None,
    };
    if let Some(own) = ints {
        for c in own {
            out.extend([c, c.wrapping_add(1), c.wrapping_sub(1)].map(Operand::Int));
        }
        out.extend([i64::MIN, -1, 0, 1, i64::MAX, 1 << 40].map(Operand::Int));
        return out;
    }
    let floats: Vec<f64> = match &v.values {
        Values::Float32(x) => (0..3)
            .filter_map(|_| pick(&mut rng))
            .map(|k| x[k] as f64)
            .collect(),
        Values::Float64(x) => (0..3)
            .filter_map(|_| pick(&mut rng))
            .map(|k| x[k])
            .collect(),
        _ => Vec::new(),
    };
    if matches!(v.values, Values::Float32(_) | Values::Float64(_)) {
        for c in floats {
            out.extend([c, c + 0.5, c - 0.5, c.next_up(), c.next_down()].map(Operand::Float));
        }
        let two63 = 9_223_372_036_854_775_808.0f64;
        for c in [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            0.0,
            -0.0,
            0.5,
            -0.5,
            two63,
            -two63,
            -two63 - 4096.0,
            1e300,
            9_007_199_254_740_993.0,
        ] {
            out.push(Operand::Float(c));
        }
        return out;
    }
    if let Values::Bytes(b) = &v.values {
        let b = b.as_ref();
        for _ in 0..3 {
            if let Some(k) = pick(&mut rng) {
                let s = b.get(k).to_vec();
                let mut longer = s.clone();
                longer.push(0);
                out.push(Operand::Bytes(s[..s.len() / 2].to_vec()));
                out.push(Operand::Bytes(s));
                out.push(Operand::Bytes(longer));
            }
        }
        out.extend([Operand::Bytes(Vec::new()), Operand::Bytes(vec![0xff; 3])]);
    }
    out
}

/// Which forms the tests met, so a test that never reaches a form fails (see below).
#[derive(Default, Debug)]
struct Seen {
    values: u64,
    integers: u64,
    integer_floats: u64,
    codes: u64,
    shared_codes: u64,
    scaled: u64,
}

thread_local! {
    static SEEN: RefCell<Seen> = RefCell::new(Seen::default());
}

fn check(v: &Vector, ctx: &ColumnContext<'_>, seed: u64) {
    let mut out = Vec::new();
    encode_vector(&v.as_ref(), ctx, &mut out).expect("valid vector");
    let u = unpack_vector(&out, ctx).expect("unpacks");
    SEEN.with(|s| {
        let mut s = s.borrow_mut();
        match &u.form {
            Form::Values(_) => s.values += 1,
            Form::Integers { kind, .. } if kind.is_float() => s.integer_floats += 1,
            Form::Integers { .. } => s.integers += 1,
            Form::Codes { inline: None, .. } => s.shared_codes += 1,
            Form::Codes { .. } => s.codes += 1,
            Form::Scaled(_) => s.scaled += 1,
        }
    });
    let decoded = u.clone().materialize(ctx);
    assert_eq!(decoded.rows, v.rows);
    assert!(decoded.values.bitwise_eq(&v.values));
    let ops = operands(v, seed);
    let mut preds = vec![
        Predicate::IsNull,
        Predicate::IsNotNull,
        Predicate::All,
        Predicate::Nothing,
    ];
    for (i, o) in ops.iter().enumerate() {
        let cmp = CMPS[i % CMPS.len()];
        for cmp in [cmp, CMPS[(i + 3) % CMPS.len()]] {
            preds.push(Predicate::Compare(cmp, o.clone()));
        }
    }
    if ops.len() >= 3 {
        preds.push(Predicate::Any(Cmp::Eq, ops[..3].to_vec()));
        preds.push(Predicate::Any(Cmp::Lt, ops[1..].to_vec()));
        preds.push(Predicate::AllOf(Cmp::Ne, ops[..3].to_vec()));
        preds.push(Predicate::AllOf(Cmp::Ge, ops[ops.len() - 2..].to_vec()));
    }
    if !ops.is_empty() {
        // `= ANY` over many operands (duplicates among them) as a set lookup: the same rows
        // as comparing with each operand
        let many: Vec<Operand> = ops
            .iter()
            .cycle()
            .take(ops.len().max(SET_MIN_OPERANDS) + 1)
            .cloned()
            .collect();
        let set = Predicate::any(Cmp::Eq, many.clone());
        if OperandSet::of(&many).is_some() {
            assert!(matches!(set, Predicate::InSet(_)), "{set:?}");
        }
        assert_eq!(
            select(&decoded, &set),
            select(&decoded, &Predicate::Any(Cmp::Eq, many)),
            "{set:?}"
        );
        preds.push(set);
    }
    for p in &preds {
        let want = select(&decoded, p);
        let got = select_unpacked(&u, ctx, p);
        assert_eq!(got, want, "{p:?} on {:?}", u.form);
        // through a cache: filled by the first call, read by the second; a cache left by
        // another dictionary under another key is not read
        let mut cache = EntryCache::default();
        let other = Vector {
            rows: 1,
            nulls: None,
            values: values_like(&v.values),
        };
        if let Some(d) = SharedDictionary::build(&other.values.as_ref()) {
            let octx = ColumnContext {
                fsst: None,
                dictionary: Some(&d),
                stride: None,
            };
            let mut enc = Vec::new();
            encode_vector(&other.as_ref(), &octx, &mut enc).unwrap();
            let ou = unpack_vector(&enc, &octx).unwrap();
            let _ = select_unpacked_cached(&ou, &octx, p, &mut cache, 1);
        }
        for _ in 0..2 {
            assert_eq!(
                select_unpacked_cached(&u, ctx, p, &mut cache, 2),
                want,
                "{p:?} through the cache"
            );
        }
    }
}

/// A one-value vector of the same kind as `values` (its own first value, changed), for a
/// dictionary other than the one under test.
fn values_like(values: &Values) -> Values {
    match values {
        Values::Int8(x) => Values::Int8(vec![x.first().map_or(1, |v| v.wrapping_add(1))]),
        Values::Int16(x) => Values::Int16(vec![x.first().map_or(1, |v| v.wrapping_add(1))]),
        Values::Int32(x) => Values::Int32(vec![x.first().map_or(1, |v| v.wrapping_add(1))]),
        Values::Int64(x) => Values::Int64(vec![x.first().map_or(1, |v| v.wrapping_add(1))]),
        Values::Float32(x) => Values::Float32(vec![x.first().map_or(1.0, |v| v + 1.0)]),
        Values::Float64(x) => Values::Float64(vec![x.first().map_or(1.0, |v| v + 1.0)]),
        Values::Bytes(b) => Values::Bytes(
            [b.as_ref()
                .iter()
                .next()
                .map_or(b"x".to_vec(), |v| [v, b"x"].concat())]
            .into_iter()
            .collect(),
        ),
        Values::Fixed { width, .. } => Values::Fixed {
            width: *width,
            data: vec![7; *width as usize],
        },
    }
}

fn spec_strategy() -> impl Strategy<Value = Spec> {
    // fixed-width values take no operands; they are covered by the decode tests
    let kind = prop::sample::select(
        KINDS
            .iter()
            .copied()
            .filter(|k| *k != GenKind::Fixed)
            .collect::<Vec<_>>(),
    );
    let shape = prop::sample::select(gen::shapes());
    let rows = prop_oneof![prop::sample::select(ROWS.to_vec()), 0usize..=1024];
    let nulls = prop_oneof![
        Just(Nulls::None),
        Just(Nulls::All),
        (1u64..99).prop_map(Nulls::Some)
    ];
    (kind, shape, rows, nulls, any::<u64>()).prop_map(|(kind, shape, rows, nulls, seed)| Spec {
        kind,
        shape,
        rows,
        nulls,
        seed,
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    #[test]
    fn unpacked_selections_equal_the_decoded_ones(spec in spec_strategy(), shared in any::<bool>(), lag in prop_oneof![Just(None), (1u16..200).prop_map(Some)], seed in any::<u64>()) {
        let v = generate(&spec);
        let d = if shared { SharedDictionary::build(&v.values.as_ref()) } else { None };
        check(&v, &ColumnContext { fsst: None, dictionary: d.as_ref(), stride: lag }, seed);
    }
}

/// Runs after the property test in the same thread only by luck, so it generates its own
/// cases: every form is met, integer-valued floats included (the TSBS shape).
#[test]
fn every_form_is_engaged() {
    let mut seed = 7u64;
    for kind in [
        GenKind::Int32,
        GenKind::Float64,
        GenKind::Float32,
        GenKind::Bytes,
    ] {
        for shape in gen::shapes() {
            for shared in [false, true] {
                seed += 1;
                let v = generate(&Spec {
                    kind,
                    shape,
                    rows: 1024,
                    nulls: Nulls::Some(5),
                    seed,
                });
                let d = if shared {
                    SharedDictionary::build(&v.values.as_ref())
                } else {
                    None
                };
                check(
                    &v,
                    &ColumnContext {
                        fsst: None,
                        dictionary: d.as_ref(),
                        stride: Some(100),
                    },
                    seed,
                );
            }
        }
    }
    SEEN.with(|s| {
        let s = s.borrow();
        assert!(
            s.values > 0
                && s.integers > 0
                && s.integer_floats > 0
                && s.codes > 0
                && s.shared_codes > 0
                && s.scaled > 0,
            "{s:?}"
        );
    });
}

//! Aggregates over unpacked vectors (`aggregate::State::add`: integers of a bitpack vector,
//! dictionary codes, values) against a row-by-row reference over the decoded vectors, with
//! random selections, across several vectors in a row: the same outputs, floats bit for bit,
//! and the same overflow errors; and the grouped path (`aggregate::GroupStates`), rows spread
//! over groups at random, against one reference per group.

mod gen;

use gen::{generate, GenKind, Nulls, Spec, ROWS};
use pg_columnar_codec::aggregate::{
    FloatOverflow, Function, GroupRuns, GroupStates, Output, State,
};
use pg_columnar_codec::filter::Selection;
use pg_columnar_codec::{
    encode_vector, unpack_vector, ColumnContext, Form, Kind, SharedDictionary, Values, Vector,
};
use proptest::prelude::*;

/// The reference: PostgreSQL's transition functions written out plainly, one row at a time.
#[derive(Default)]
struct Reference {
    rows: i64,
    n: i64,
    int_sum: i128,
    f8: f64,
    f4: f32,
    acc: (f64, f64, f64),
    best: Option<Value>,
    overflow: bool,
    /// `count(DISTINCT)`: every non-NULL value met.
    seen: Vec<Value>,
}

/// How many distinct values, by PostgreSQL's equality: sorted and deduplicated, floats
/// compared as numbers (`-0` equals `0`) and every NaN equal to every other.
fn distinct_count(values: &[Value]) -> i64 {
    let mut keys: Vec<(bool, f64, i64)> = values
        .iter()
        .map(|v| {
            let float = |x: f64| {
                if x.is_nan() {
                    (true, 0.0, 0)
                } else {
                    (false, x + 0.0, 0)
                }
            };
            match *v {
                Value::I(x) => (false, 0.0, x),
                Value::F8(x) => float(x),
                Value::F4(x) => float(x as f64),
            }
        })
        .collect();
    keys.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)).then(a.2.cmp(&b.2)));
    keys.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1 && a.2 == b.2);
    keys.len() as i64
}

#[derive(Clone, Copy, Debug)]
enum Value {
    I(i64),
    F8(f64),
    F4(f32),
}

fn pg_order(a: f64, b: f64) -> std::cmp::Ordering {
    pg_columnar_codec::filter::float_order(a, b)
}

impl Reference {
    fn row(&mut self, f: Function, v: Option<Value>) {
        self.rows += 1;
        let Some(v) = v else { return };
        if f == Function::CountDistinct {
            self.seen.push(v);
            return;
        }
        if self.overflow {
            return;
        }
        self.n += 1;
        match (f, v) {
            (Function::Sum | Function::Avg, Value::I(x)) => self.int_sum += x as i128,
            // the first value is the sum (float8pl has no initial state)
            (Function::Sum, Value::F8(x)) if self.n == 1 => self.f8 = x,
            (Function::Sum, Value::F4(x)) if self.n == 1 => self.f4 = x,
            (Function::Sum, Value::F8(x)) => {
                let s = self.f8 + x;
                self.overflow |= s.is_infinite() && !self.f8.is_infinite() && !x.is_infinite();
                self.f8 = s;
            }
            (Function::Sum, Value::F4(x)) => {
                let s = self.f4 + x;
                self.overflow |= s.is_infinite() && !self.f4.is_infinite() && !x.is_infinite();
                self.f4 = s;
            }
            (Function::Avg, Value::F8(_) | Value::F4(_)) => {
                let x = match v {
                    Value::F8(x) => x,
                    Value::F4(x) => x as f64,
                    Value::I(_) => unreachable!(),
                };
                let (n, sx, sxx) = self.acc;
                let (n1, sx1) = (n + 1.0, sx + x);
                let mut sxx1 = sxx;
                if n > 0.0 {
                    let t = x * n1 - sx1;
                    sxx1 += t * t / (n1 * n);
                    if sx1.is_infinite() || sxx1.is_infinite() {
                        if !sx.is_infinite() && !x.is_infinite() {
                            self.overflow = true;
                        }
                        sxx1 = f64::NAN;
                    }
                } else if x.is_nan() || x.is_infinite() {
                    sxx1 = f64::NAN;
                }
                self.acc = (n1, sx1, sxx1);
            }
            (Function::Min | Function::Max, v) => {
                let keep = match (self.best, v) {
                    (None, _) => false,
                    (Some(Value::I(a)), Value::I(b)) => {
                        if f == Function::Max {
                            a > b
                        } else {
                            a < b
                        }
                    }
                    (Some(Value::F8(a)), Value::F8(b)) => {
                        pg_order(a, b)
                            == if f == Function::Max {
                                std::cmp::Ordering::Greater
                            } else {
                                std::cmp::Ordering::Less
                            }
                    }
                    (Some(Value::F4(a)), Value::F4(b)) => {
                        pg_order(a as f64, b as f64)
                            == if f == Function::Max {
                                std::cmp::Ordering::Greater
                            } else {
                                std::cmp::Ordering::Less
                            }
                    }
                    _ => unreachable!(),
                };
                if !keep {
                    self.best = Some(v);
                }
            }
            _ => {}
        }
    }

    fn output(&self, f: Function, kind: Kind) -> Result<Output, FloatOverflow> {
        if self.overflow {
            return Err(FloatOverflow);
        }
        Ok(match f {
            Function::CountStar => Output::Int8(self.rows),
            Function::Count => Output::Int8(self.n),
            Function::CountDistinct => Output::Int8(distinct_count(&self.seen)),
            _ if self.n == 0 => Output::Null,
            Function::Sum => match kind {
                Kind::Int64 => Output::Numeric(self.int_sum),
                Kind::Float64 => Output::Float8(self.f8),
                Kind::Float32 => Output::Float4(self.f4),
                _ => Output::Int8(self.int_sum as i64),
            },
            Function::Avg => match kind {
                Kind::Int64 => Output::NumericRatio(self.int_sum, self.n),
                Kind::Float64 | Kind::Float32 => Output::Float8(self.acc.1 / self.acc.0),
                _ => Output::NumericRatio(self.int_sum as i64 as i128, self.n),
            },
            Function::Min | Function::Max => match (self.best.unwrap(), kind) {
                (Value::I(v), Kind::Int16) => Output::Int2(v as i16),
                (Value::I(v), Kind::Int32) => Output::Int4(v as i32),
                (Value::I(v), _) => Output::Int8(v),
                (Value::F8(v), _) => Output::Float8(v),
                (Value::F4(v), _) => Output::Float4(v),
            },
        })
    }
}

fn value_at(v: &Vector, k: usize) -> Value {
    match &v.values {
        Values::Int16(x) => Value::I(x[k] as i64),
        Values::Int32(x) => Value::I(x[k] as i64),
        Values::Int64(x) => Value::I(x[k]),
        Values::Float64(x) => Value::F8(x[k]),
        Values::Float32(x) => Value::F4(x[k]),
        _ => unreachable!(),
    }
}

/// Floats bit for bit, except that any NaN equals any NaN: which NaN operand's payload an
/// addition passes on depends on the compiler's operand order (addition commutes for it),
/// in PostgreSQL's C as here, so payloads are not part of the contract.
fn same(a: &Output, b: &Output) -> bool {
    match (a, b) {
        (Output::Float8(x), Output::Float8(y)) => {
            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
        }
        (Output::Float4(x), Output::Float4(y)) => {
            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
        }
        _ => a == b,
    }
}

const FUNCTIONS: [Function; 7] = [
    Function::CountStar,
    Function::Count,
    Function::Sum,
    Function::Avg,
    Function::Min,
    Function::Max,
    Function::CountDistinct,
];

fn kind_of(k: GenKind) -> Kind {
    match k {
        GenKind::Int16 => Kind::Int16,
        GenKind::Int32 => Kind::Int32,
        GenKind::Int64 => Kind::Int64,
        GenKind::Float32 => Kind::Float32,
        _ => Kind::Float64,
    }
}

/// Each vector encoded with `ctx` as the writer chooses, and unpacked.
fn encoded(
    vectors: &[(Vector, Selection)],
    ctx: &ColumnContext<'_>,
) -> Vec<pg_columnar_codec::Unpacked> {
    vectors
        .iter()
        .map(|(v, _)| {
            let mut enc = Vec::new();
            encode_vector(&v.as_ref(), ctx, &mut enc).unwrap();
            unpack_vector(&enc, ctx).unwrap()
        })
        .collect()
}

/// Counts the unpacked forms met: plain values, bitpacked integers, dictionary codes,
/// decimal floats' integers.
fn count_forms(unpacked: &[pg_columnar_codec::Unpacked], forms: &mut [u32; 4]) {
    for u in unpacked {
        forms[match u.form {
            Form::Values(_) => 0,
            Form::Integers { .. } => 1,
            Form::Codes { .. } => 2,
            Form::Scaled(_) => 3,
        }] += 1;
    }
}

/// Runs every function over `vectors` (encoded with `ctx`, each with a selection) through
/// the states and through the reference; returns which forms were met.
fn check(
    kind: Kind,
    vectors: &[(Vector, Selection)],
    ctx: &ColumnContext<'_>,
    forms: &mut [u32; 4],
) {
    let unpacked = encoded(vectors, ctx);
    count_forms(&unpacked, forms);
    for f in FUNCTIONS {
        let mut state = State::new(f, kind).unwrap();
        let mut reference = Reference::default();
        let mut got = Ok(());
        for ((v, sel), u) in vectors.iter().zip(&unpacked) {
            if f == Function::CountStar {
                state.add_rows(sel.count());
            } else if got.is_ok() {
                got = state.add(u, ctx, sel).unwrap();
            }
            let mut k = 0;
            for r in 0..v.rows {
                let null = v.is_null(r);
                if sel.contains(r) {
                    reference.row(f, (!null).then(|| value_at(v, k)));
                }
                if !null {
                    k += 1;
                }
            }
        }
        let got = got.map(|()| state.finish(f, kind));
        let want = reference.output(f, kind);
        match (&got, &want) {
            (Ok(a), Ok(b)) => assert!(same(a, b), "{f:?} on {kind:?}: {a:?} against {b:?}"),
            _ => assert_eq!(got, want, "{f:?} on {kind:?}"),
        }
    }
    // where every value lies within the bound, avg without Sxx is float8_accum's avg
    let within = |x: f64| x.abs() <= pg_columnar_codec::aggregate::AVG_BOUND;
    let bounded = vectors.iter().all(|(v, _)| match &v.values {
        Values::Float64(x) => x.iter().all(|&x| within(x)),
        Values::Float32(x) => x.iter().all(|&x| within(x as f64)),
        _ => false,
    });
    if bounded {
        let (mut full, mut avg) = (
            State::new(Function::Avg, kind).unwrap(),
            State::bounded_avg(),
        );
        for ((_, sel), u) in vectors.iter().zip(&unpacked) {
            full.add(u, ctx, sel).unwrap().unwrap();
            avg.add(u, ctx, sel).unwrap().unwrap();
        }
        let (a, b) = (
            full.finish(Function::Avg, kind),
            avg.finish(Function::Avg, kind),
        );
        assert!(same(&a, &b), "bounded avg on {kind:?}: {b:?} against {a:?}");
    }
    check_grouped(kind, vectors, &unpacked, ctx);
}

/// The rows of `vectors` spread over three groups, row by row at random and in runs of one
/// group (a sorted table's vectors, which the states add a run at a time): each group's
/// state equals a reference fed that group's rows, and an overflow in any group is the error.
fn check_grouped(
    kind: Kind,
    vectors: &[(Vector, Selection)],
    unpacked: &[pg_columnar_codec::Unpacked],
    ctx: &ColumnContext<'_>,
) {
    const GROUPS: usize = 3;
    let mut rng = gen::Rng(0x5eed);
    for longest_run in [1, 300] {
        let groups: Vec<Vec<u32>> = vectors
            .iter()
            .map(|(v, _)| {
                let (mut g, mut left) = (0, 0);
                (0..v.rows)
                    .map(|_| {
                        if left == 0 {
                            g = rng.below(GROUPS as u64) as u32;
                            left = 1 + rng.below(longest_run);
                        }
                        left -= 1;
                        g
                    })
                    .collect()
            })
            .collect();
        check_groups(kind, vectors, unpacked, ctx, &groups);
    }
}

/// [`check_grouped`] for one assignment of rows to groups.
fn check_groups(
    kind: Kind,
    vectors: &[(Vector, Selection)],
    unpacked: &[pg_columnar_codec::Unpacked],
    ctx: &ColumnContext<'_>,
    groups: &[Vec<u32>],
) {
    const GROUPS: usize = 3;
    for f in FUNCTIONS {
        let mut states = GroupStates::new(f, kind).unwrap();
        states.resize(GROUPS);
        let mut references: Vec<Reference> = (0..GROUPS).map(|_| Reference::default()).collect();
        let mut got = Ok(());
        for (((v, sel), u), g) in vectors.iter().zip(unpacked).zip(groups) {
            if f == Function::CountStar {
                states.count_rows(sel, g, &GroupRuns::of_selected(g, sel));
            } else if got.is_ok() {
                got = states
                    .add(u, ctx, sel, g, &GroupRuns::of_selected(g, sel))
                    .unwrap();
            }
            let mut k = 0;
            for r in 0..v.rows {
                let null = v.is_null(r);
                if sel.contains(r) {
                    references[g[r] as usize].row(f, (!null).then(|| value_at(v, k)));
                }
                if !null {
                    k += 1;
                }
            }
        }
        let wants: Vec<_> = references.iter().map(|r| r.output(f, kind)).collect();
        if got.is_err() || wants.iter().any(|w| w.is_err()) {
            assert_eq!(
                got.is_err(),
                wants.iter().any(|w| w.is_err()),
                "grouped {f:?} on {kind:?}: overflow"
            );
            continue;
        }
        for (g, want) in wants.iter().enumerate() {
            let (a, b) = (states.state(g).finish(f, kind), want.clone().unwrap());
            assert!(
                same(&a, &b),
                "grouped {f:?} on {kind:?}: {a:?} against {b:?}"
            );
        }
    }
}

/// Rows picked at random, `density` in 100 of them; above 100, one range of rows instead (a
/// sorted stripe's vector that a time window cuts, which the states add as a range).
fn selection(rows: usize, seed: u64, density: u64) -> Selection {
    let mut r = gen::Rng(seed | 1);
    if density > 100 {
        let start = r.below(rows as u64 + 1) as usize;
        let end = start + r.below((rows - start) as u64 + 1) as usize;
        return Selection::of_range(rows, start..end);
    }
    let mut s = Selection::none(rows);
    for i in 0..rows {
        if r.below(100) < density {
            s.set(i);
        }
    }
    s
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

    #[test]
    fn states_equal_the_row_by_row_reference(
        kind in prop::sample::select(vec![GenKind::Int16, GenKind::Int32, GenKind::Int64, GenKind::Float32, GenKind::Float64]),
        shape in prop::sample::select(gen::shapes()),
        rows in prop_oneof![prop::sample::select(ROWS.to_vec()), 0usize..=1024],
        nulls in prop_oneof![Just(Nulls::None), Just(Nulls::All), (1u64..99).prop_map(Nulls::Some)],
        density in prop_oneof![Just(100u64), Just(0u64), 1u64..100, Just(101u64)],
        shared in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let vectors: Vec<(Vector, Selection)> = (0..3)
            .map(|i| {
                let v = generate(&Spec { kind, shape, rows, nulls, seed: seed.wrapping_add(i) });
                let s = selection(v.rows, seed ^ i, density);
                (v, s)
            })
            .collect();
        let d = if shared { SharedDictionary::build(&vectors[0].0.values.as_ref()) } else { None };
        let mut forms = [0; 4];
        check(kind_of(kind), &vectors, &ColumnContext { fsst: None, dictionary: d.as_ref(), stride: Some(100) }, &mut forms);
    }
}

/// Every form is met, and the float edge cases: overflow of a sum, of Sxx alone, NaN, -0.0.
#[test]
fn every_form_and_the_float_edges() {
    let mut forms = [0; 4];
    let mut seed = 1;
    for kind in [
        GenKind::Int32,
        GenKind::Int64,
        GenKind::Float64,
        GenKind::Float32,
    ] {
        for shape in gen::shapes() {
            seed += 1;
            let v = generate(&Spec {
                kind,
                shape,
                rows: 1024,
                nulls: Nulls::Some(3),
                seed,
            });
            let s = selection(1024, seed, 60);
            let d = SharedDictionary::build(&v.values.as_ref());
            check(
                kind_of(kind),
                &[(v.clone(), s)],
                &ColumnContext {
                    fsst: None,
                    dictionary: d.as_ref(),
                    stride: Some(100),
                },
                &mut forms,
            );
            check(
                kind_of(kind),
                &[(v, s)],
                &ColumnContext::default(),
                &mut forms,
            );
        }
    }
    assert!(forms.iter().all(|&n| n > 0), "{forms:?}");
    let edges = [
        vec![f64::MAX, f64::MAX],
        vec![1e200, -1e200],
        vec![f64::NAN, 1.0, -0.0, 0.0],
        vec![0.0, -0.0],
        vec![-0.0],
        vec![-0.0, -0.0],
        vec![-0.0, 3.0, -3.0],
        vec![9_007_199_254_740_992.0, 1.0, 1.0],
        vec![9_007_199_254_740_991.0, 1.0, 1.0, -4.0],
        vec![f64::INFINITY, f64::NEG_INFINITY],
    ];
    for e in edges {
        let v = Vector {
            rows: e.len(),
            nulls: None,
            values: Values::Float64(e.clone()),
        };
        let s = Selection::all(e.len());
        check(
            Kind::Float64,
            &[(v, s)],
            &ColumnContext::default(),
            &mut forms,
        );
        let v = Vector {
            rows: e.len(),
            nulls: None,
            values: Values::Float32(e.iter().map(|&x| x as f32).collect()),
        };
        check(
            Kind::Float32,
            &[(v, Selection::all(e.len()))],
            &ColumnContext::default(),
            &mut forms,
        );
    }
}

/// Decimal vectors (integers over a power of ten, a few exceptions with more decimals), of
/// both float kinds, without specials, so that the bounded avg runs on them too: float4's
/// values are rounded as float4 before they are widened and added.
#[test]
fn decimal_vectors_of_both_kinds() {
    let mut rng = gen::Rng(0xdec);
    for kind in [Kind::Float32, Kind::Float64] {
        let mut forms = [0; 4];
        for case in 0..20u64 {
            let mut w = rng.below(20_000) as i64 - 10_000;
            let vectors: Vec<(Vector, Selection)> = (0..4u64)
                .map(|v| {
                    let rows = 1 + rng.below(1024) as usize;
                    let x: Vec<f64> = (0..rows)
                        .map(|_| {
                            w += rng.below(61) as i64 - 30;
                            if rng.below(100) == 0 {
                                w as f64 / 1000.0 + 0.00037
                            } else {
                                w as f64 / 100.0
                            }
                        })
                        .collect();
                    let values = match kind {
                        Kind::Float32 => Values::Float32(
                            x.iter().map(|&x| format!("{x}").parse().unwrap()).collect(),
                        ),
                        _ => Values::Float64(x),
                    };
                    let sel = selection(rows, case * 7 + v, [100, 60, 5, 101][v as usize % 4]);
                    (
                        Vector {
                            rows,
                            nulls: None,
                            values,
                        },
                        sel,
                    )
                })
                .collect();
            check(kind, &vectors, &ColumnContext::default(), &mut forms);
        }
        assert!(forms[3] > 0, "{kind:?}: {forms:?}");
    }
}

/// `avg` without Sxx (`State::FloatAvg`, `GroupStates::bounded_avg`) over floats within
/// ±AVG_BOUND, the bound itself included, gives float8_accum's result bit for bit, and
/// float8_accum raises no overflow on them (what the bound's proof says).
#[test]
fn bounded_avg_is_float8_accum_avg() {
    use pg_columnar_codec::aggregate::AVG_BOUND;
    let mut rng = gen::Rng(0xa76);
    let ctx = ColumnContext::default();
    let mut integer_vectors = 0;
    for case in 0..60 {
        let scale = [1.0, 1e10, 1e50, AVG_BOUND][case % 4];
        // every third case integers, which are added in integers where that is exact: small
        // ones, and ones near 2^51 whose sums pass 2^53 (added one by one from there)
        let integers = [None, None, Some(100), None, None, Some(1i64 << 51)][case % 6];
        let vectors: Vec<(Vector, Selection)> = (0..6)
            .map(|v| {
                let rows = 1 + rng.below(1024) as usize;
                let values: Vec<f64> = (0..rows)
                    .map(|_| match (integers, rng.below(10)) {
                        (Some(size), _) => {
                            (size - 100 + rng.below(200) as i64) as f64
                                * [1.0, -1.0][rng.below(2) as usize]
                        }
                        (None, 0) => AVG_BOUND,
                        (None, 1) => -AVG_BOUND,
                        (None, 2) => -0.0,
                        _ => (rng.below(2_000_001) as f64 - 1e6) / 1e6 * scale,
                    })
                    .collect();
                let vector = Vector {
                    rows,
                    nulls: None,
                    values: Values::Float64(values),
                };
                (
                    vector,
                    selection(
                        rows,
                        case as u64 * 31 + v,
                        [100, 60, 5, 101][v as usize % 4],
                    ),
                )
            })
            .collect();
        let unpacked = encoded(&vectors, &ctx);
        integer_vectors += unpacked
            .iter()
            .filter(|u| matches!(u.form, pg_columnar_codec::Form::Integers { .. }))
            .count();
        let (mut full, mut bounded) = (
            State::new(Function::Avg, Kind::Float64).unwrap(),
            State::bounded_avg(),
        );
        let (mut full_g, mut bounded_g) = (
            GroupStates::new(Function::Avg, Kind::Float64).unwrap(),
            GroupStates::bounded_avg(),
        );
        full_g.resize(4);
        bounded_g.resize(4);
        for ((v, sel), u) in vectors.iter().zip(&unpacked) {
            // rows of random groups, or runs of one group (a sorted table's vectors), which
            // the bounded average adds a run at a time
            let run = [1, 1 + rng.below(300) as usize][rng.below(2) as usize];
            let mut g = 0;
            let groups: Vec<u32> = (0..v.rows)
                .map(|r| {
                    if r % run == 0 {
                        g = rng.below(4) as u32;
                    }
                    g
                })
                .collect();
            full.add(u, &ctx, sel)
                .unwrap()
                .expect("no overflow within the bound");
            bounded.add(u, &ctx, sel).unwrap().unwrap();
            full_g
                .add(u, &ctx, sel, &groups, &GroupRuns::of_selected(&groups, sel))
                .unwrap()
                .expect("no overflow within the bound");
            bounded_g
                .add(u, &ctx, sel, &groups, &GroupRuns::of_selected(&groups, sel))
                .unwrap()
                .unwrap();
        }
        let (a, b) = (
            full.finish(Function::Avg, Kind::Float64),
            bounded.finish(Function::Avg, Kind::Float64),
        );
        assert!(same(&a, &b), "case {case}: {a:?} against {b:?}");
        for g in 0..4 {
            let (a, b) = (
                full_g.state(g).finish(Function::Avg, Kind::Float64),
                bounded_g.state(g).finish(Function::Avg, Kind::Float64),
            );
            assert!(same(&a, &b), "case {case}, group {g}: {a:?} against {b:?}");
        }
    }
    assert!(
        integer_vectors >= 20,
        "{integer_vectors} vectors of integers"
    );
}

/// `min`/`max` of byte strings (plain, FSST and dictionary vectors, NULLs, sparse
/// selections), ungrouped and grouped, against the bytewise least and greatest of the
/// selected non-NULL rows of the decoded vectors.
#[test]
fn bytes_min_max_against_reference() {
    use pg_columnar_codec::ByteStrings;
    let mut rng = gen::Rng(0xb7e5);
    let mut forms = [0u32; 4];
    for case in 0..60 {
        let distinct = [3u64, 40, 5000][case % 3];
        let vectors: Vec<(Vector, Selection)> = (0..5)
            .map(|v| {
                let rows = 1 + rng.below(1024) as usize;
                let mut nulls = vec![0u8; rows.div_ceil(8)];
                let mut values = ByteStrings::new();
                for r in 0..rows {
                    if rng.below(9) == 0 {
                        nulls[r / 8] |= 1 << (r % 8);
                    } else {
                        let x = rng.below(distinct);
                        // shared prefixes, an empty string, bytes above 0x7f
                        let s = match x % 4 {
                            0 => String::new(),
                            1 => format!("host_{x}"),
                            2 => format!("host_{x}_\u{e9}"),
                            _ => format!("h{}", x * 7919 % 1000),
                        };
                        values.push(s.as_bytes());
                    }
                }
                let any = nulls.iter().any(|&b| b != 0);
                let vector = Vector {
                    rows,
                    nulls: any.then_some(nulls),
                    values: Values::Bytes(values),
                };
                (
                    vector,
                    selection(
                        rows,
                        case as u64 * 17 + v,
                        [100, 50, 3, 101][v as usize % 4],
                    ),
                )
            })
            .collect();
        let ctx = ColumnContext::default();
        let unpacked = encoded(&vectors, &ctx);
        count_forms(&unpacked, &mut forms);
        // count(DISTINCT): a sorted, deduplicated list of the selected strings
        {
            let f = Function::CountDistinct;
            let mut state = State::new(f, Kind::Bytes).unwrap();
            let mut grouped = GroupStates::new(f, Kind::Bytes).unwrap();
            grouped.resize(3);
            let (mut all, mut per): (Vec<Vec<u8>>, Vec<Vec<Vec<u8>>>) =
                (Vec::new(), vec![Vec::new(); 3]);
            for ((v, sel), u) in vectors.iter().zip(&unpacked) {
                let groups: Vec<u32> = (0..v.rows).map(|_| rng.below(3) as u32).collect();
                state.add(u, &ctx, sel).unwrap().unwrap();
                grouped
                    .add(u, &ctx, sel, &groups, &GroupRuns::of_selected(&groups, sel))
                    .unwrap()
                    .unwrap();
                let Values::Bytes(b) = &v.values else {
                    unreachable!()
                };
                let mut k = 0;
                for r in 0..v.rows {
                    if v.is_null(r) {
                        continue;
                    }
                    let value = b.as_ref().get(k).to_vec();
                    k += 1;
                    if sel.contains(r) {
                        all.push(value.clone());
                        per[groups[r] as usize].push(value);
                    }
                }
            }
            let count = |mut x: Vec<Vec<u8>>| {
                x.sort();
                x.dedup();
                Output::Int8(x.len() as i64)
            };
            assert_eq!(
                state.finish(f, Kind::Bytes),
                count(all),
                "case {case} count(DISTINCT)"
            );
            for (g, p) in per.into_iter().enumerate() {
                assert_eq!(
                    grouped.state(g).finish(f, Kind::Bytes),
                    count(p),
                    "case {case} group {g}"
                );
            }
        }
        for f in [Function::Min, Function::Max] {
            let mut state = State::new(f, Kind::Bytes).unwrap();
            let mut grouped = GroupStates::new(f, Kind::Bytes).unwrap();
            grouped.resize(3);
            let mut want: Option<Vec<u8>> = None;
            let mut want_g: Vec<Option<Vec<u8>>> = vec![None; 3];
            let better = |b: &Option<Vec<u8>>, v: &[u8]| {
                b.as_deref()
                    .is_none_or(|b| if f == Function::Max { v > b } else { v < b })
            };
            for ((v, sel), u) in vectors.iter().zip(&unpacked) {
                let groups: Vec<u32> = (0..v.rows).map(|_| rng.below(3) as u32).collect();
                state.add(u, &ctx, sel).unwrap().unwrap();
                grouped
                    .add(u, &ctx, sel, &groups, &GroupRuns::of_selected(&groups, sel))
                    .unwrap()
                    .unwrap();
                let Values::Bytes(b) = &v.values else {
                    unreachable!()
                };
                let mut k = 0;
                for r in 0..v.rows {
                    if v.is_null(r) {
                        continue;
                    }
                    let value = b.as_ref().get(k);
                    k += 1;
                    if sel.contains(r) {
                        if better(&want, value) {
                            want = Some(value.to_vec());
                        }
                        if better(&want_g[groups[r] as usize], value) {
                            want_g[groups[r] as usize] = Some(value.to_vec());
                        }
                    }
                }
            }
            let out = |w: Option<Vec<u8>>| w.map_or(Output::Null, Output::Bytes);
            assert_eq!(state.finish(f, Kind::Bytes), out(want), "case {case} {f:?}");
            for g in 0..3 {
                assert_eq!(
                    grouped.state(g).finish(f, Kind::Bytes),
                    out(want_g[g].clone()),
                    "case {case} {f:?} group {g}"
                );
            }
        }
    }
    // plain and dictionary vectors were both met
    assert!(forms[0] > 0 && forms[2] > 0, "forms met: {forms:?}");
}

//! The fast codec against the reference encoders: byte-identical output on every generated
//! vector, and decode inverting encode.

mod gen;
mod reference;

use gen::{generate, GenKind, Nulls, Shape, Spec, DISTINCTS, KINDS, ROWS, WIDTHS};
use pg_columnar_codec::{
    decode_vector, encode_vector, unpack_row, ColumnContext, Encoding, FsstDecision,
    SharedDictionary, SymbolTable, Values, Vector,
};
use proptest::prelude::*;

/// Encodes `v`, compares with the reference, decodes and compares with `v`.
fn check(v: &Vector) -> pg_columnar_codec::EncodeReport {
    check_with(v, None)
}

fn check_with(v: &Vector, table: Option<&SymbolTable>) -> pg_columnar_codec::EncodeReport {
    check_ctx(
        v,
        &ColumnContext {
            fsst: table,
            dictionary: None,
            stride: None,
        },
    )
}

fn check_ctx(v: &Vector, ctx: &ColumnContext<'_>) -> pg_columnar_codec::EncodeReport {
    let table = ctx.fsst;
    let mut out = Vec::new();
    let report = encode_vector(&v.as_ref(), ctx, &mut out).expect("valid vector");
    let expected = reference::encode_vector(v, ctx);
    assert_eq!(
        out, expected,
        "fast and reference encoders differ ({report:?})"
    );
    assert_eq!(report.encoded_len, out.len());
    assert_eq!(
        report.tried(Encoding::Fsst),
        report.fsst == FsstDecision::Tried
    );
    if table.is_some() && report.chosen != Some(Encoding::Fsst) {
        // a table that does not win changes nothing
        let mut without = Vec::new();
        encode_vector(
            &v.as_ref(),
            &ColumnContext { fsst: None, ..*ctx },
            &mut without,
        )
        .unwrap();
        assert_eq!(out, without, "an unused symbol table changed the bytes");
    }
    if ctx.dictionary.is_some() && !report.shared_dictionary {
        // a shared dictionary that is not used changes nothing
        let mut without = Vec::new();
        encode_vector(
            &v.as_ref(),
            &ColumnContext {
                dictionary: None,
                ..*ctx
            },
            &mut without,
        )
        .unwrap();
        assert_eq!(
            out, without,
            "an unused shared dictionary changed the bytes"
        );
    }
    let back = decode_vector(&out, ctx).expect("decodes");
    assert_eq!(back.rows, v.rows);
    assert_eq!(back.nulls, v.nulls, "null bitmap");
    assert!(
        back.values.bitwise_eq(&v.values),
        "values differ after round trip"
    );
    let oracle =
        reference_decode(&out, ctx).expect("the reference decoder reads what the encoder wrote");
    assert!(
        same_vector(&oracle, v),
        "the reference decoder reads another vector"
    );
    rows_agree(&out, ctx, v, 0..v.rows);
    assert!(
        unpack_row(&out, ctx, v.rows, &mut Vec::new()).is_err(),
        "a row past the vector's"
    );
    report
}

/// Row `row` of `v` as a vector of one row: what [`unpack_row`] must read.
fn row_of(v: &Vector, row: usize) -> Vector {
    if v.is_null(row) {
        let empty = v.values.as_ref().gather(std::iter::empty::<usize>());
        return Vector {
            rows: 1,
            nulls: Some(vec![1]),
            values: empty,
        };
    }
    let index = (0..row).filter(|&r| !v.is_null(r)).count();
    Vector {
        rows: 1,
        nulls: None,
        values: v.values.as_ref().gather(std::iter::once(index)),
    }
}

/// Each of `rows` read alone from `bytes` (a vector decoding to `v`) is that row of `v`.
fn rows_agree(
    bytes: &[u8],
    ctx: &ColumnContext<'_>,
    v: &Vector,
    rows: impl Iterator<Item = usize>,
) {
    let mut scratch = Vec::new();
    for row in rows {
        let (rows, one) = unpack_row(bytes, ctx, row, &mut scratch)
            .unwrap_or_else(|e| panic!("row {row} of a vector that decodes: {e}"));
        assert_eq!(rows, v.rows, "the vector's row count");
        assert!(
            same_vector(&one.materialize(ctx), &row_of(v, row)),
            "row {row} read alone differs from the decoded vector's"
        );
    }
}

fn reference_decode(bytes: &[u8], ctx: &ColumnContext<'_>) -> Option<Vector> {
    reference::decode::decode_vector(
        bytes,
        ctx.fsst.map(|t| t.symbols()),
        ctx.dictionary.map(|d| d.entries()),
    )
}

fn same_vector(a: &Vector, b: &Vector) -> bool {
    a.rows == b.rows && a.nulls == b.nulls && a.values.bitwise_eq(&b.values)
}

/// The fast decoder and the reference decoder accept exactly the same streams and read the
/// same vectors from them; returns whether they accepted it.
fn decoders_agree(bytes: &[u8], ctx: &ColumnContext<'_>) -> bool {
    match (decode_vector(bytes, ctx), reference_decode(bytes, ctx)) {
        (Ok(a), Some(b)) => {
            assert!(
                same_vector(&a, &b),
                "decoders read different vectors from {:02x?}",
                &bytes[..bytes.len().min(48)]
            );
            // a stream both accept reads the same rows one at a time
            rows_agree(
                bytes,
                ctx,
                &a,
                [0, a.rows / 2, a.rows.saturating_sub(1)]
                    .into_iter()
                    .filter(|&r| r < a.rows),
            );
            true
        }
        (Err(_), None) => {
            // refused whole; a row alone may still read (the other rows' values are not
            // looked at), but never panics
            let mut scratch = Vec::new();
            for row in [0, 1, 7, 500, 1023] {
                let _ = unpack_row(bytes, ctx, row, &mut scratch);
            }
            false
        }
        (fast, oracle) => panic!(
            "decoders disagree on {:02x?}: fast {:?}, reference {}",
            &bytes[..bytes.len().min(48)],
            fast.map(|v| v.rows),
            if oracle.is_some() {
                "accepts"
            } else {
                "refuses"
            }
        ),
    }
}

/// Valid but unusual streams and invalid ones: every vector the sweep encodes (with a table,
/// a shared dictionary and a row period where they apply), then each with one byte changed
/// at many places and in three ways, and cut short at many lengths. Both decoders must agree
/// on every one.
#[test]
fn fast_and_reference_decoders_agree_on_altered_streams() {
    let mut seed = 11;
    let mut streams = 0;
    let (mut accepted, mut refused) = (0, 0);
    for kind in KINDS {
        for shape in gen::shapes() {
            for (rows, nulls) in [
                (1, Nulls::None),
                (9, Nulls::Some(30)),
                (300, Nulls::None),
                (1024, Nulls::Some(5)),
            ] {
                seed += 1;
                let v = generate(&Spec {
                    kind,
                    shape,
                    rows,
                    nulls,
                    seed,
                });
                let table = match &v.values {
                    Values::Bytes(b) if !b.is_empty() => Some(own_table(&v)),
                    _ => None,
                };
                let shared = SharedDictionary::build(&v.values.as_ref());
                for ctx in [
                    ColumnContext::default(),
                    ColumnContext {
                        fsst: table.as_ref(),
                        dictionary: shared.as_ref(),
                        stride: None,
                    },
                    ColumnContext {
                        fsst: None,
                        dictionary: shared.as_ref(),
                        stride: Some(7),
                    },
                ] {
                    let mut bytes = Vec::new();
                    encode_vector(&v.as_ref(), &ctx, &mut bytes).unwrap();
                    assert!(decoders_agree(&bytes, &ctx));
                    let step = (bytes.len() / 40).max(1);
                    for p in (0..bytes.len()).step_by(step) {
                        for pattern in [0x01u8, 0x80, 0xff] {
                            let mut altered = bytes.clone();
                            altered[p] ^= pattern;
                            if decoders_agree(&altered, &ctx) {
                                accepted += 1
                            } else {
                                refused += 1
                            }
                        }
                        if decoders_agree(&bytes[..p], &ctx) {
                            accepted += 1
                        } else {
                            refused += 1
                        }
                    }
                    streams += 1;
                }
            }
        }
    }
    assert!(streams > 100, "only {streams} streams");
    // both answers were given many times: altered streams that still decode (a changed value)
    // and ones that are refused
    assert!(
        accepted > 1000 && refused > 1000,
        "accepted {accepted}, refused {refused}"
    );
}

fn spec_strategy() -> impl Strategy<Value = Spec> {
    let kind = prop::sample::select(KINDS.to_vec());
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
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    /// Every vector with a row period given, with and without a shared dictionary: the stride
    /// block is tried for integers and dictionary codes and must match the reference.
    #[test]
    fn stride_matches_reference_and_round_trips(
        spec in spec_strategy(),
        lag in prop_oneof![prop::sample::select(vec![1u16, 2, 3, 7, 100, 511, 512, 1023, 1024, 1500]), 1u16..1100],
        shared in any::<bool>(),
    ) {
        let v = generate(&spec);
        let d = if shared { SharedDictionary::build(&v.values.as_ref()) } else { None };
        check_ctx(&v, &ColumnContext { fsst: None, dictionary: d.as_ref(), stride: Some(lag) });
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn fast_encoder_matches_reference_and_round_trips(spec in spec_strategy()) {
        check(&generate(&spec));
    }

    /// Strings with a symbol table learnt from the vector itself, so FSST is sized wherever
    /// the 25% rule lets it.
    #[test]
    fn fsst_matches_reference_and_round_trips(
        shape in prop::sample::select(gen::shapes()),
        rows in 0usize..=1024,
        nulls in prop_oneof![Just(Nulls::None), (1u64..99).prop_map(Nulls::Some)],
        seed in any::<u64>(),
    ) {
        let v = generate(&Spec { kind: GenKind::Bytes, shape, rows, nulls, seed });
        let table = own_table(&v);
        check_with(&v, Some(&table));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    /// A shared dictionary built from a column that this vector is part of (so it holds every
    /// value) or from an unrelated one (so it usually does not).
    #[test]
    fn shared_dictionary_matches_reference_and_round_trips(spec in spec_strategy(), own in any::<bool>(), other_seed in any::<u64>()) {
        let v = generate(&spec);
        let source = if own { v.clone() } else { generate(&Spec { seed: other_seed, nulls: Nulls::None, ..spec }) };
        if let Some(d) = SharedDictionary::build(&source.values.as_ref()) {
            let r = check_ctx(&v, &ColumnContext { fsst: None, dictionary: Some(&d), stride: None });
            // round trip of the stored dictionary itself
            let mut ser = Vec::new();
            d.serialize(&mut ser);
            prop_assert_eq!(&SharedDictionary::deserialize(&ser).unwrap(), &d);
            let _ = r;
        }
    }
}

/// TSBS host names: 100 hosts interleaved, so a vector's own dictionary repeats the 100
/// names in every vector; the shared one stores them once per stripe and each vector only
/// its 7-bit codes. The control: with the value set changed so a host is missing, the
/// vector falls back to its inline dictionary.
#[test]
fn shared_dictionary_wins_on_tsbs_host_names() {
    let t = gen::tsbs::generate(4096, 100, 1);
    let d =
        SharedDictionary::build(&pg_columnar_codec::ValuesRef::Bytes(t.hostname.as_ref())).unwrap();
    assert_eq!(d.len(), 100);
    let names: pg_columnar_codec::ByteStrings =
        (1024..2048).map(|r| t.hostname.as_ref().get(r)).collect();
    let v = Vector {
        rows: 1024,
        nulls: None,
        values: Values::Bytes(names),
    };
    let r = check_ctx(
        &v,
        &ColumnContext {
            fsst: None,
            dictionary: Some(&d),
            stride: None,
        },
    );
    assert!(r.shared_dictionary && r.chosen == Some(Encoding::Dictionary));
    let bits = r.encoded_len as f64 * 8.0 / 1024.0;
    assert!(bits < 8.0, "{bits} bits per host name");
    let inline = check(&v);
    assert!(!inline.shared_dictionary && inline.encoded_len > r.encoded_len);

    let mut other: Vec<Vec<u8>> = (1024..2048)
        .map(|r| t.hostname.as_ref().get(r).to_vec())
        .collect();
    other[5] = b"host_new".to_vec();
    let v = Vector {
        rows: 1024,
        nulls: None,
        values: Values::Bytes(other.iter().collect()),
    };
    let r = check_ctx(
        &v,
        &ColumnContext {
            fsst: None,
            dictionary: Some(&d),
            stride: None,
        },
    );
    assert!(!r.shared_dictionary && r.chosen == Some(Encoding::Dictionary));
}

/// Gorilla's sizing stops once it cannot win: on TSBS metrics (bitpack at 7 bits per value
/// is far ahead) it stops early; on drifting fractional values it is sized to the end and
/// wins. Both branches must happen, and the bytes match the reference (which always sizes
/// fully) either way.
/// Interleaved series (100 random walks, one value each per period): the stride block wins
/// when the period is known, and the control without it packs the same values wider.
#[test]
fn stride_wins_on_interleaved_series_and_only_with_the_period() {
    let t = gen::tsbs::generate(1024, 100, 7);
    for values in [
        Values::Float64(t.usage_user.clone()),
        Values::Int64(t.time.clone()),
    ] {
        let v = Vector {
            rows: 1024,
            nulls: None,
            values,
        };
        let with = check_ctx(
            &v,
            &ColumnContext {
                fsst: None,
                dictionary: None,
                stride: Some(100),
            },
        );
        let without = check_ctx(&v, &ColumnContext::default());
        let mut bytes = Vec::new();
        encode_vector(
            &v.as_ref(),
            &ColumnContext {
                fsst: None,
                dictionary: None,
                stride: Some(100),
            },
            &mut bytes,
        )
        .unwrap();
        // header: kind, rows (2), null mode, encoding; then the block's mode byte
        assert_eq!(with.chosen, Some(Encoding::Bitpack));
        let mode = bytes[5];
        assert_eq!(mode, 2, "stride block chosen");
        assert!(
            with.encoded_len < without.encoded_len,
            "{} vs {}",
            with.encoded_len,
            without.encoded_len
        );
    }
}

/// Patched blocks: runs of ramps (a vector of a stripe sorted by host, then time) and a walk
/// with outliers are packed with exceptions, matching the reference, in every vector of the
/// sample; the control, one ramp, is packed without.
#[test]
fn patched_blocks_win_on_runs_and_outliers_and_not_on_one_ramp() {
    let patched = |spec: Spec| {
        let v = generate(&spec);
        let r = check(&v);
        let mut bytes = Vec::new();
        encode_vector(&v.as_ref(), &ColumnContext::default(), &mut bytes).unwrap();
        // header: kind, rows (2), null mode, encoding; then the block's mode byte
        r.chosen == Some(Encoding::Bitpack) && bytes[5] & 0x80 != 0
    };
    for seed in 0..50 {
        for shape in [Shape::Runs, Shape::Outliers] {
            let spec = Spec {
                kind: GenKind::Int64,
                shape,
                rows: 1024,
                nulls: Nulls::None,
                seed,
            };
            assert!(patched(spec), "{shape:?} seed {seed}: no patched block");
        }
        let ramp = Spec {
            kind: GenKind::Int64,
            shape: Shape::Ramp,
            rows: 1024,
            nulls: Nulls::None,
            seed,
        };
        assert!(!patched(ramp), "ramp seed {seed}: patched");
    }
}

/// Rice delta blocks: one host's metric (a rounded random walk, as a stripe sorted by host
/// stores it) is Rice-coded, matching the reference, smaller than 3 bits a value, and
/// round-trips; the controls, 100 interleaved hosts (steps too wide) and a ramp (steps all
/// equal), are not.
#[test]
fn rice_blocks_win_on_one_hosts_walk_and_not_on_interleaved_hosts_or_a_ramp() {
    let rice = |v: &Vector| {
        check(v);
        let mut bytes = Vec::new();
        let r = encode_vector(&v.as_ref(), &ColumnContext::default(), &mut bytes).unwrap();
        // header: kind, rows (2), null mode, encoding; then the block's mode byte
        (
            r.chosen == Some(Encoding::Bitpack) && bytes[5] == 3,
            bytes.len(),
        )
    };
    for seed in 0..20 {
        let host = gen::tsbs::generate(1024, 1, seed);
        let (chosen, len) = rice(&Vector {
            rows: 1024,
            nulls: None,
            values: Values::Float64(host.usage_user),
        });
        assert!(chosen, "seed {seed}: one host's walk not Rice-coded");
        assert!(len * 8 < 3 * 1024, "seed {seed}: {len} bytes");
        // every byte altered in three ways, and cut short at every length: the decoders agree
        let v = Vector {
            rows: 1024,
            nulls: None,
            values: Values::Float64(gen::tsbs::generate(1024, 1, seed).usage_user),
        };
        let mut bytes = Vec::new();
        encode_vector(&v.as_ref(), &ColumnContext::default(), &mut bytes).unwrap();
        let (mut accepted, mut refused) = (0, 0);
        for p in 0..bytes.len() {
            for pattern in [0x01u8, 0x10, 0xff] {
                let mut altered = bytes.clone();
                altered[p] ^= pattern;
                if decoders_agree(&altered, &ColumnContext::default()) {
                    accepted += 1
                } else {
                    refused += 1
                }
            }
            assert!(
                !decoders_agree(&bytes[..p], &ColumnContext::default()),
                "cut at {p} accepted"
            );
        }
        assert!(
            accepted > 100 && refused > 100,
            "accepted {accepted}, refused {refused}"
        );
        let hosts = gen::tsbs::generate(1024, 100, seed);
        assert!(
            !rice(&Vector {
                rows: 1024,
                nulls: None,
                values: Values::Float64(hosts.usage_user)
            })
            .0,
            "seed {seed}: interleaved hosts"
        );
        let ramp = Spec {
            kind: GenKind::Int64,
            shape: Shape::Ramp,
            rows: 1024,
            nulls: Nulls::None,
            seed,
        };
        assert!(!rice(&generate(&ramp)).0, "ramp seed {seed}");
    }
}

/// Rice blocks with escapes (two hosts' walks, a jump between them) and with low bits
/// (wider steps): every bit of the unary codes, and of the bytes around them, flipped one at
/// a time, and a byte added after the codes (a zero byte is padding past the last code, a one
/// byte a code too many): the decoders agree on every stream.
#[test]
fn rice_unary_codes_altered_bit_by_bit() {
    let mut r = gen::Rng(41);
    let mut ks = std::collections::BTreeSet::new();
    let mut escapes_seen = 0;
    for case in 0..9 {
        // a walk of steps of geometric size (mostly small, scaled by `scale`, so that k
        // varies), a second host from row `cut` far away (an escape)
        let scale = [1u32, 2, 4][case / 3];
        let cut = [1000, 600, 300][case % 3];
        let mut x = 50i64;
        let values: Vec<f64> = (0..1024)
            .map(|i| {
                let size = (r.next().trailing_zeros().min(3) * scale + r.below(scale as u64) as u32)
                    as i64;
                x += if r.below(2) == 0 { size } else { -size };
                if i == cut {
                    x += 150 * scale as i64;
                }
                x as f64
            })
            .collect();
        let v = Vector {
            rows: 1024,
            nulls: None,
            values: Values::Float64(values),
        };
        let ctx = ColumnContext::default();
        let mut bytes = Vec::new();
        encode_vector(&v.as_ref(), &ctx, &mut bytes).unwrap();
        // header: kind, rows (2), null mode, encoding; the block: mode, k, first, centre,
        // unary length (u32), escape count (u32), escape width, low bits, unary codes
        assert_eq!(bytes[5], 3, "case {case}: a Rice block");
        let k = bytes[6] as u32;
        let unary_len = u32::from_le_bytes(bytes[23..27].try_into().unwrap()) as usize;
        escapes_seen += u32::from_le_bytes(bytes[27..31].try_into().unwrap());
        ks.insert(k);
        let unary = 32 + pg_columnar_codec::bits::packed_len(1023, k);
        assert!(decoders_agree(&bytes, &ctx));
        for p in unary - 1..(unary + unary_len + 1).min(bytes.len()) {
            for bit in 0..8 {
                let mut altered = bytes.clone();
                altered[p] ^= 1 << bit;
                decoders_agree(&altered, &ctx);
            }
        }
        for extra in [0u8, 1, 0x80] {
            let mut longer = bytes.clone();
            longer[23..27].copy_from_slice(&(unary_len as u32 + 1).to_le_bytes());
            longer.insert(unary + unary_len, extra);
            assert!(
                !decoders_agree(&longer, &ctx),
                "case {case}: byte {extra:#x} after the codes accepted"
            );
        }
    }
    assert!(ks.len() >= 3 && ks.contains(&0), "k taken: {ks:?}");
    assert!(escapes_seen > 0, "no escape in any case");
}

#[test]
fn float_sizing_stops_only_when_a_candidate_has_lost() {
    let t = gen::tsbs::generate(1024, 100, 3);
    let v = Vector {
        rows: 1024,
        nulls: None,
        values: Values::Float64(t.usage_user),
    };
    let r = check(&v);
    assert_eq!(r.chosen, Some(Encoding::Bitpack));
    assert!(
        matches!(
            r.candidates[Encoding::Gorilla as usize],
            pg_columnar_codec::Sizing::MoreThan(_)
        ),
        "{r:?}"
    );
    // integer-valued floats are bitpacked as integers already: float_int is not sized
    assert_eq!(
        r.candidates[Encoding::FloatInt as usize],
        pg_columnar_codec::Sizing::NotTried,
        "{r:?}"
    );
    // steps of 1/8 are three decimal digits: float_int is sized and wins
    let v = generate(&Spec {
        kind: GenKind::Float64,
        shape: Shape::Drift,
        rows: 1024,
        nulls: Nulls::None,
        seed: 4,
    });
    let r = check(&v);
    assert_eq!(r.chosen, Some(Encoding::FloatInt), "{r:?}");
    let v = generate(&Spec {
        kind: GenKind::Float64,
        shape: Shape::FineDrift,
        rows: 1024,
        nulls: Nulls::None,
        seed: 4,
    });
    let r = check(&v);
    assert_eq!(r.chosen, Some(Encoding::Gorilla));
    // no decimal scale holds steps of 2^-40: float_int is not a candidate
    assert_eq!(
        r.candidates[Encoding::FloatInt as usize],
        pg_columnar_codec::Sizing::NotTried,
        "{r:?}"
    );
    assert!(
        matches!(
            r.candidates[Encoding::Gorilla as usize],
            pg_columnar_codec::Sizing::Exact(_)
        ),
        "{r:?}"
    );
}

/// A table trained on the vector's own strings (always built, whatever the decision rule).
fn own_table(v: &Vector) -> SymbolTable {
    let Values::Bytes(b) = &v.values else {
        unreachable!()
    };
    let sample: Vec<&[u8]> = b.as_ref().iter().collect();
    pg_columnar_codec::fsst::build_table(&sample)
}

/// Text where neither dictionary nor plain saves 25%: FSST is tried and wins. Text a
/// dictionary handles: FSST is skipped by the 25% rule. Without a table: not tried. The
/// control makes sure both sides of the rule happen.
#[test]
fn fsst_25_percent_rule_both_ways() {
    let urls: pg_columnar_codec::ByteStrings = (0..1024)
        .map(|i| {
            format!(
                "https://example.com/catalog/item/{}/details?lang=en",
                (i * 7919) % 100_003
            )
        })
        .collect();
    let v = Vector {
        rows: 1024,
        nulls: None,
        values: Values::Bytes(urls),
    };
    let table = own_table(&v);
    let r = check_with(&v, Some(&table));
    assert_eq!(r.fsst, FsstDecision::Tried);
    assert_eq!(r.chosen, Some(Encoding::Fsst));
    let r = check_with(&v, None);
    assert_eq!(r.fsst, FsstDecision::NoSymbolTable);
    assert_eq!(r.chosen, Some(Encoding::Plain));

    let hosts: pg_columnar_codec::ByteStrings =
        (0..1024).map(|i| format!("host_{}", i % 100)).collect();
    let v = Vector {
        rows: 1024,
        nulls: None,
        values: Values::Bytes(hosts),
    };
    let r = check_with(&v, Some(&own_table(&v)));
    assert_eq!(r.fsst, FsstDecision::SkippedBySavings);
    assert_eq!(r.chosen, Some(Encoding::Dictionary));
}

/// Every kind × shape × edge row count, without nulls and with some: the deterministic sweep
/// behind the random one.
#[test]
fn sweep_kinds_shapes_and_row_counts() {
    let mut seed = 1;
    for kind in KINDS {
        for shape in gen::shapes() {
            for rows in ROWS {
                for nulls in [Nulls::None, Nulls::Some(30), Nulls::All] {
                    seed += 1;
                    check(&generate(&Spec {
                        kind,
                        shape,
                        rows,
                        nulls,
                        seed,
                    }));
                }
            }
        }
    }
}

/// Each listed bit width is actually produced by the bitpack encoder, and it is the width
/// stored in the block header (the mechanism the width sweep is meant to engage).
#[test]
fn bitpack_widths_are_engaged() {
    for w in WIDTHS {
        let v = generate(&Spec {
            kind: GenKind::Int64,
            shape: Shape::Width(w),
            rows: 1024,
            nulls: Nulls::None,
            seed: w as u64,
        });
        let mut out = Vec::new();
        encode_vector(&v.as_ref(), &ColumnContext::default(), &mut out).unwrap();
        // random values have more than 512 distinct values for w >= 10, so bitpack wins;
        // below that the dictionary may win, so look at the bitpack block directly
        let ints = match &v.values {
            pg_columnar_codec::Values::Int64(x) => x.clone(),
            _ => unreachable!(),
        };
        let plan = pg_columnar_codec::bitpack::plan_for(&ints);
        assert_eq!(plan.width, w, "shape Width({w}) gave width {}", plan.width);
        check(&v);
    }
}

/// The dictionary cap: at 512 distinct values a dictionary is sized, at 513 it is not.
#[test]
fn dictionary_cap_both_sides() {
    for (d, expect_tried) in [(511, true), (512, true), (513, false)] {
        assert!(DISTINCTS.contains(&d));
        let v = generate(&Spec {
            kind: GenKind::Bytes,
            shape: Shape::Distinct(d),
            rows: 1024,
            nulls: Nulls::None,
            seed: 9,
        });
        let r = check(&v);
        assert_eq!(
            r.tried(Encoding::Dictionary),
            expect_tried,
            "{d} distinct values"
        );
    }
}

/// Every encoding that exists without a symbol table wins somewhere in the sweep, on every
/// kind it applies to.
#[test]
fn every_encoding_wins_somewhere() {
    use std::collections::HashSet;
    let mut won: HashSet<(String, Encoding)> = HashSet::new();
    let mut seed = 100;
    for kind in KINDS {
        for shape in gen::shapes() {
            seed += 1;
            let r = check(&generate(&Spec {
                kind,
                shape,
                rows: 1024,
                nulls: Nulls::Some(10),
                seed,
            }));
            won.insert((format!("{kind:?}"), r.chosen.unwrap()));
        }
    }
    let expect: &[(&str, &[Encoding])] = &[
        ("Int8", &[Encoding::Dictionary, Encoding::Bitpack]),
        ("Int16", &[Encoding::Dictionary, Encoding::Bitpack]),
        (
            "Int32",
            &[Encoding::Plain, Encoding::Dictionary, Encoding::Bitpack],
        ),
        (
            "Int64",
            &[Encoding::Plain, Encoding::Dictionary, Encoding::Bitpack],
        ),
        (
            "Float32",
            &[
                Encoding::Plain,
                Encoding::Dictionary,
                Encoding::Bitpack,
                Encoding::Gorilla,
                Encoding::FloatInt,
            ],
        ),
        (
            "Float64",
            &[
                Encoding::Plain,
                Encoding::Dictionary,
                Encoding::Bitpack,
                Encoding::Gorilla,
                Encoding::FloatInt,
            ],
        ),
        ("Bytes", &[Encoding::Plain, Encoding::Dictionary]),
        ("Fixed", &[Encoding::Plain, Encoding::Dictionary]),
    ];
    for (kind, encs) in expect {
        for e in *encs {
            assert!(
                won.contains(&(kind.to_string(), *e)),
                "{e:?} never won for {kind}: {won:?}"
            );
        }
    }
}

/// Frozen ids: the numbers are in every stored vector; changing one breaks every table.
#[test]
fn encoding_and_kind_ids_are_frozen() {
    assert_eq!(Encoding::Plain as u8, 0);
    assert_eq!(Encoding::Dictionary as u8, 1);
    assert_eq!(Encoding::Bitpack as u8, 2);
    assert_eq!(Encoding::Fsst as u8, 3);
    assert_eq!(Encoding::Gorilla as u8, 4);
    assert_eq!(Encoding::FloatInt as u8, 5);
    use pg_columnar_codec::Kind;
    let kinds = [
        Kind::Int8,
        Kind::Int16,
        Kind::Int32,
        Kind::Int64,
        Kind::Float32,
        Kind::Float64,
        Kind::Bytes,
        Kind::Fixed,
    ];
    for (i, k) in kinds.iter().enumerate() {
        assert_eq!(*k as u8, i as u8 + 1);
    }
    assert_eq!(
        pg_columnar_codec::bitpack::BlockMode::FrameOfReference as u8,
        0
    );
    assert_eq!(pg_columnar_codec::bitpack::BlockMode::Delta as u8, 1);
    assert_eq!(
        pg_columnar_codec::dictionary::MAX_ENTRIES,
        reference::DICTIONARY_CAP
    );
}

/// A 1 MB string and an empty one in the same vector.
#[test]
fn megabyte_and_empty_strings() {
    let mut s = pg_columnar_codec::ByteStrings::new();
    let big: Vec<u8> = (0..1 << 20)
        .map(|i: u32| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    s.push(&big);
    s.push(b"");
    s.push(&big);
    let v = Vector {
        rows: 3,
        nulls: None,
        values: pg_columnar_codec::Values::Bytes(s),
    };
    let r = check(&v);
    assert_eq!(r.chosen, Some(Encoding::Dictionary));
}

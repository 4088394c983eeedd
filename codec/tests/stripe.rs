//! The stripe image: what write_stripe lays out, StripeDirectory::parse reads back exactly,
//! and every vector decodes to the rows that went in.

use pg_columnar_codec::stripe::{self, ColumnInput, StoredZone, StripeDirectory};
use pg_columnar_codec::{
    decode_vector, ByteStrings, ColumnContext, Encoding, SharedDictionary, SymbolTable, Values,
    ValuesRef,
};

struct Column {
    nulls: Option<Vec<u8>>,
    values: Values,
}

fn columns(rows: usize) -> Vec<Column> {
    let mut nulls = vec![0u8; rows.div_ceil(8)];
    let mut ints = Vec::new();
    for r in 0..rows {
        if r % 7 == 3 {
            nulls[r / 8] |= 1 << (r % 8);
        } else {
            ints.push(r as i64 * 10 - 5000);
        }
    }
    let hosts: ByteStrings = (0..rows).map(|r| format!("host_{}", r % 100)).collect();
    let text: ByteStrings = (0..rows)
        .map(|r| {
            format!(
                "free text number {} with some words {}",
                r * 7919 % 10007,
                r
            )
        })
        .collect();
    let floats: Vec<f64> = (0..rows).map(|r| ((r * 37) % 101) as f64 + 0.25).collect();
    vec![
        Column {
            nulls: Some(nulls),
            values: Values::Int64(ints),
        },
        Column {
            nulls: None,
            values: Values::Bytes(hosts),
        },
        Column {
            nulls: None,
            values: Values::Bytes(text),
        },
        Column {
            nulls: None,
            values: Values::Float64(floats),
        },
        Column {
            nulls: Some(vec![0xff; rows.div_ceil(8)]),
            values: Values::Int32(vec![]),
        },
    ]
}

fn roundtrip(rows: usize) -> Vec<stripe::ColumnReport> {
    let cols = columns(rows);
    let inputs: Vec<ColumnInput> = cols
        .iter()
        .map(|c| ColumnInput {
            nulls: c.nulls.as_deref(),
            values: c.values.as_ref(),
        })
        .collect();
    let mut image = Vec::new();
    let reports = stripe::write_stripe(&inputs, rows, &mut image).unwrap();
    let prefix = StripeDirectory::prefix_len(&image[..stripe::HEADER_LEN]).unwrap();
    let dir = StripeDirectory::parse(&image[..prefix]).unwrap();
    assert_eq!(dir.total_len, image.len());
    assert_eq!(dir.row_count, rows);
    assert_eq!(dir.columns.len(), cols.len());
    // one column's outline, found without parsing the others, is what the parse says
    for (c, col) in dir.columns.iter().enumerate() {
        let outline = stripe::outline_column(&image[..prefix], c)
            .unwrap()
            .unwrap();
        assert_eq!(
            (outline.fsst, outline.dictionary),
            (col.fsst, col.dictionary),
            "column {c}"
        );
        assert_eq!(
            outline.null_count,
            dir.vectors(c).iter().map(|v| v.null_count).sum::<usize>()
        );
    }
    assert_eq!(
        stripe::outline_column(&image[..prefix], cols.len()).unwrap(),
        None
    );
    for (c, col) in dir.columns.iter().enumerate() {
        let table = col.fsst.map(|e| {
            SymbolTable::deserialize(
                stripe::verified(&image[e.offset..e.offset + e.length], e.checksum, "fsst")
                    .unwrap(),
            )
            .unwrap()
        });
        let dict = col.dictionary.map(|e| {
            SharedDictionary::deserialize(
                stripe::verified(&image[e.offset..e.offset + e.length], e.checksum, "dict")
                    .unwrap(),
            )
            .unwrap()
        });
        assert_eq!(table.is_some(), reports[c].fsst_table);
        assert_eq!(dict.is_some(), reports[c].shared_dictionary);
        let ctx = ColumnContext {
            fsst: table.as_ref(),
            dictionary: dict.as_ref(),
            stride: None,
        };
        let mut row = 0;
        let mut value_index = 0;
        for (v, e) in dir.vectors(c).iter().enumerate() {
            // an entry made alone is the one made with its column's
            assert_eq!(
                &StripeDirectory::parse(&image[..prefix])
                    .unwrap()
                    .vector(c, v),
                e
            );
            let bytes =
                stripe::verified(&image[e.offset..e.offset + e.length], e.checksum, "vector")
                    .unwrap();
            let decoded = decode_vector(bytes, &ctx).unwrap();
            assert_eq!(decoded.rows, dir.vector_rows(v));
            assert_eq!(e.encoding, reports[c].vectors[v].chosen);
            let nonnull = decoded.values.len();
            assert_eq!(e.null_count, decoded.rows - nonnull);
            for r in 0..decoded.rows {
                let expect_null = cols[c]
                    .nulls
                    .as_ref()
                    .is_some_and(|b| b[(row + r) / 8] >> ((row + r) % 8) & 1 == 1);
                assert_eq!(
                    decoded.is_null(r),
                    expect_null,
                    "column {c} row {}",
                    row + r
                );
            }
            // the values are the column's next `nonnull` values, and the zone map bounds them
            match (&decoded.values, &cols[c].values, &e.zone) {
                (Values::Int64(d), Values::Int64(all), StoredZone::Int { min, max }) => {
                    assert_eq!(d[..], all[value_index..value_index + nonnull]);
                    assert_eq!(
                        (*min, *max),
                        (*d.iter().min().unwrap(), *d.iter().max().unwrap())
                    );
                }
                (Values::Float64(d), Values::Float64(all), StoredZone::Float { min, max }) => {
                    assert_eq!(d[..], all[value_index..value_index + nonnull]);
                    assert_eq!(*min, d.iter().cloned().fold(f64::INFINITY, f64::min));
                    assert_eq!(*max, d.iter().cloned().fold(f64::NEG_INFINITY, f64::max));
                }
                (
                    Values::Bytes(d),
                    Values::Bytes(all),
                    StoredZone::Bytes {
                        min,
                        max,
                        max_truncated,
                    },
                ) => {
                    let expect: Vec<&[u8]> = (value_index..value_index + nonnull)
                        .map(|i| all.as_ref().get(i))
                        .collect();
                    let got: Vec<&[u8]> = d.as_ref().iter().collect();
                    assert_eq!(got, expect);
                    let (lo, hi) = (expect.iter().min().unwrap(), expect.iter().max().unwrap());
                    assert_eq!(&min[..], &lo[..lo.len().min(stripe::ZONE_BYTES)]);
                    assert_eq!(&max[..], &hi[..hi.len().min(stripe::ZONE_BYTES)]);
                    assert_eq!(*max_truncated, hi.len() > stripe::ZONE_BYTES);
                }
                (_, _, StoredZone::Empty) => assert_eq!(nonnull, 0),
                other => panic!("unexpected column {c}: {other:?}"),
            }
            value_index += nonnull;
            row += decoded.rows;
        }
        assert_eq!(row, rows);
    }
    reports
}

#[test]
fn stripes_of_edge_sizes_read_back_exactly() {
    for rows in [0, 1, 7, 1023, 1024, 1025, 5000] {
        roundtrip(rows);
    }
}

#[test]
fn contexts_are_kept_only_when_chosen() {
    let reports = roundtrip(5000);
    // host names repeat: the shared dictionary is chosen; the free text is FSST territory
    assert!(reports[1].shared_dictionary);
    assert!(reports[1]
        .vectors
        .iter()
        .all(|r| r.chosen == Some(Encoding::Dictionary)));
    assert!(reports[2].fsst_table);
    assert!(!reports[2].shared_dictionary);
    // control: integers never have an FSST table; distinct integers get no shared dictionary
    assert!(!reports[0].fsst_table);
    assert!(!reports[0].shared_dictionary);
}

#[test]
fn every_truncation_and_flipped_header_byte_is_refused_or_inconsistent() {
    let cols = columns(2100);
    let inputs: Vec<ColumnInput> = cols
        .iter()
        .map(|c| ColumnInput {
            nulls: c.nulls.as_deref(),
            values: c.values.as_ref(),
        })
        .collect();
    let mut image = Vec::new();
    stripe::write_stripe(&inputs, 2100, &mut image).unwrap();
    let prefix = StripeDirectory::prefix_len(&image).unwrap();
    for cut in 0..prefix {
        assert!(
            StripeDirectory::parse(&image[..cut]).is_err(),
            "prefix of {cut} bytes parsed"
        );
        assert!(
            stripe::outline_column(&image[..cut], 4).is_err(),
            "prefix of {cut} bytes outlined"
        );
    }
    // a directory that parses after a flipped byte must still describe a consistent stripe;
    // the vector checksums catch what it cannot
    for i in 0..prefix {
        let mut bad = image.clone();
        bad[i] ^= 0x5a;
        if let Ok(dir) = StripeDirectory::parse(&bad[..prefix.min(bad.len())]) {
            assert_ne!(
                dir,
                StripeDirectory::parse(&image).unwrap(),
                "flip at {i} changed nothing"
            );
        }
    }
    let _ = ValuesRef::Int8(&[]);
}

/// The zone summary bounds every value of its column, in the order the scan assumes (NaN
/// greatest, bytes bytewise with a truncated maximum bounding prefixes only), counts the
/// column's NULLs, and reads back exactly; a truncated or extended summary is refused.
#[test]
fn stripe_summary_bounds_every_value_and_reads_back() {
    use stripe::StripeSummary;
    let rows = 5000;
    let mut cols = columns(rows);
    // a float column with NaN in one vector and a long string to truncate the maximum
    cols.push(Column {
        nulls: None,
        values: Values::Float64(
            (0..rows)
                .map(|r| if r == 4000 { f64::NAN } else { r as f64 - 2.5 })
                .collect(),
        ),
    });
    cols.push(Column {
        nulls: None,
        values: Values::Bytes(
            (0..rows)
                .map(|r| {
                    if r == 10 {
                        "z".repeat(50)
                    } else {
                        format!("a{r}")
                    }
                })
                .collect(),
        ),
    });
    let inputs: Vec<ColumnInput> = cols
        .iter()
        .map(|c| ColumnInput {
            nulls: c.nulls.as_deref(),
            values: c.values.as_ref(),
        })
        .collect();
    let mut image = Vec::new();
    stripe::write_stripe(&inputs, rows, &mut image).unwrap();
    let prefix = StripeDirectory::prefix_len(&image[..stripe::HEADER_LEN]).unwrap();
    let dir = StripeDirectory::parse(&image[..prefix]).unwrap();
    let summary = StripeSummary::of(&dir);
    assert_eq!(summary.columns.len(), cols.len());
    for (c, col) in cols.iter().enumerate() {
        let s = &summary.columns[c];
        let nulls = col.nulls.as_ref().map_or(0, |b| {
            (0..rows).filter(|r| b[r / 8] >> (r % 8) & 1 == 1).count()
        });
        assert_eq!(s.null_count as usize, nulls, "column {c}");
        match (&col.values, s.zone.as_ref().unwrap()) {
            (Values::Int64(v), StoredZone::Int { min, max }) => {
                assert_eq!(
                    (*min, *max),
                    (*v.iter().min().unwrap(), *v.iter().max().unwrap())
                );
            }
            (Values::Float64(v), StoredZone::Float { min, max }) => {
                let finite: Vec<f64> = v.iter().cloned().filter(|x| !x.is_nan()).collect();
                assert_eq!(*min, finite.iter().cloned().fold(f64::INFINITY, f64::min));
                if v.iter().any(|x| x.is_nan()) {
                    assert!(max.is_nan());
                } else {
                    assert_eq!(
                        *max,
                        finite.iter().cloned().fold(f64::NEG_INFINITY, f64::max)
                    );
                }
            }
            (
                Values::Bytes(b),
                StoredZone::Bytes {
                    min,
                    max,
                    max_truncated,
                },
            ) => {
                for v in b.as_ref().iter() {
                    assert!(&min[..] <= v);
                    let p = &v[..v.len().min(stripe::ZONE_BYTES)];
                    assert!(p <= &max[..], "{v:?} above {max:?}");
                    assert!(*max_truncated || v <= &max[..]);
                }
            }
            (Values::Int32(v), StoredZone::Empty) => assert!(v.is_empty()),
            other => panic!("column {c}: {other:?}"),
        }
    }
    assert!(matches!(
        summary.columns[6].zone,
        Some(StoredZone::Bytes {
            max_truncated: true,
            ..
        })
    ));
    let bytes = summary.to_bytes();
    // compared as bytes: NaN bounds are not equal to themselves
    assert_eq!(StripeSummary::parse(&bytes).unwrap().to_bytes(), bytes);
    for cut in 0..bytes.len() {
        assert!(StripeSummary::parse(&bytes[..cut]).is_err(), "cut at {cut}");
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(StripeSummary::parse(&longer).is_err());
}

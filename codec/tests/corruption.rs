//! Corrupt stored bytes must give a DecodeError: never a panic, never an out-of-bounds read.
//! Deterministic and quick; the fuzz targets (codec/fuzz) go further.

mod gen;

use gen::{generate, Nulls, Spec, KINDS};
use pg_columnar_codec::{
    decode_vector, encode_vector, unpack_row, ByteStrings, ColumnContext, Encoding, SymbolTable,
    Values, Vector,
};

/// The symbol table used for FSST samples, trained on URL-like strings (built once).
fn table() -> SymbolTable {
    static TABLE: std::sync::OnceLock<SymbolTable> = std::sync::OnceLock::new();
    TABLE
        .get_or_init(|| {
            let urls: Vec<String> = (0..300)
                .map(|i| format!("https://example.com/a/{}/b?c={}", i * 31 % 997, i % 7))
                .collect();
            let refs: Vec<&[u8]> = urls.iter().map(|u| u.as_bytes()).collect();
            pg_columnar_codec::fsst::build_table(&refs)
        })
        .clone()
}

fn fsst_sample() -> Vec<u8> {
    let urls: ByteStrings = (0..40)
        .map(|i| format!("https://example.com/a/{}/b?c={}", i * 37 % 991, i % 5))
        .collect();
    let v = Vector {
        rows: 40,
        nulls: None,
        values: Values::Bytes(urls),
    };
    let mut bytes = Vec::new();
    let r = encode_vector(
        &v.as_ref(),
        &ColumnContext {
            fsst: Some(&table()),
            dictionary: None,
            stride: None,
        },
        &mut bytes,
    )
    .unwrap();
    assert_eq!(r.chosen, Some(Encoding::Fsst));
    bytes
}

fn samples() -> Vec<Vec<u8>> {
    let mut out = vec![fsst_sample()];
    let mut seed = 7;
    for kind in KINDS {
        for shape in gen::shapes() {
            for (rows, nulls) in [(37, Nulls::None), (64, Nulls::Some(25)), (5, Nulls::All)] {
                seed += 1;
                let v = generate(&Spec {
                    kind,
                    shape,
                    rows,
                    nulls,
                    seed,
                });
                let mut bytes = Vec::new();
                encode_vector(&v.as_ref(), &ColumnContext::default(), &mut bytes).unwrap();
                out.push(bytes);
            }
        }
    }
    out
}

/// Whether `bytes` decode; the decoder, and the reader of single rows on a few rows (which
/// may accept what the whole decoder refuses: it reads less), must not panic.
fn decode_no_panic(bytes: &[u8]) -> bool {
    static T: std::sync::OnceLock<SymbolTable> = std::sync::OnceLock::new();
    let t = T.get_or_init(table);
    let ctx = ColumnContext {
        fsst: Some(t),
        dictionary: None,
        stride: None,
    };
    let rows = std::panic::catch_unwind(|| {
        [0, 1, 4, 36, 63].map(|row| unpack_row(bytes, &ctx, row, &mut Vec::new()).is_ok())
    });
    assert!(
        rows.is_ok(),
        "the single-row reader panicked on {:02x?}",
        &bytes[..bytes.len().min(64)]
    );
    match std::panic::catch_unwind(|| decode_vector(bytes, &ctx)) {
        Ok(r) => r.is_ok(),
        Err(_) => panic!("decoder panicked on {:02x?}", &bytes[..bytes.len().min(64)]),
    }
}

#[test]
fn every_truncation_is_an_error() {
    for s in samples() {
        assert!(decode_no_panic(&s));
        for len in 0..s.len() {
            assert!(
                !decode_no_panic(&s[..len]),
                "a {len}-byte prefix of a {}-byte vector decoded",
                s.len()
            );
        }
    }
}

#[test]
fn appended_bytes_are_an_error() {
    for mut s in samples() {
        s.push(0);
        assert!(!decode_no_panic(&s));
    }
}

#[test]
fn flipped_bytes_never_panic() {
    for s in samples() {
        for i in 0..s.len() {
            for flip in [0x01u8, 0x80, 0xff, 0x10] {
                let mut c = s.clone();
                c[i] ^= flip;
                decode_no_panic(&c);
            }
        }
    }
}

#[test]
fn lying_header_fields_are_errors() {
    let v = generate(&Spec {
        kind: gen::GenKind::Int32,
        shape: gen::Shape::Width(9),
        rows: 100,
        nulls: Nulls::None,
        seed: 1,
    });
    let mut s = Vec::new();
    let r = encode_vector(&v.as_ref(), &ColumnContext::default(), &mut s).unwrap();
    assert_eq!(r.chosen, Some(pg_columnar_codec::Encoding::Bitpack));
    // layout: kind, rows u16, null mode, encoding, block mode, block width, ...
    let mut too_many_rows = s.clone();
    too_many_rows[1..3].copy_from_slice(&1025u16.to_le_bytes());
    assert!(!decode_no_panic(&too_many_rows));
    let mut width_65 = s.clone();
    width_65[6] = 65;
    assert!(!decode_no_panic(&width_65));
    let mut bad_kind = s.clone();
    bad_kind[0] = 0;
    assert!(!decode_no_panic(&bad_kind));
    let mut bad_encoding = s.clone();
    bad_encoding[4] = 200;
    assert!(!decode_no_panic(&bad_encoding));
    let mut bad_null_mode = s;
    bad_null_mode[3] = 3;
    assert!(!decode_no_panic(&bad_null_mode));
}

#[test]
fn fsst_vectors_need_their_table_and_tables_are_checked() {
    assert_eq!(
        decode_vector(&fsst_sample(), &ColumnContext::default()),
        Err(pg_columnar_codec::DecodeError::MissingSymbolTable)
    );
    let mut ser = Vec::new();
    table().serialize(&mut ser);
    assert_eq!(SymbolTable::deserialize(&ser).unwrap(), table());
    for len in 0..ser.len() {
        assert!(SymbolTable::deserialize(&ser[..len]).is_err());
    }
    for i in 0..ser.len() {
        let mut c = ser.clone();
        c[i] ^= 0x41;
        let _ = std::panic::catch_unwind(|| SymbolTable::deserialize(&c)).expect("no panic");
    }
}

#[test]
fn a_shared_dictionary_with_repeated_entries_is_refused() {
    use pg_columnar_codec::{DecodeError, SharedDictionary};
    // Int64, two entries, one frame-of-reference block of width 0 and base 5: both are 5
    let repeated = [4u8, 2, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0];
    assert_eq!(
        SharedDictionary::deserialize(&repeated),
        Err(DecodeError::Inconsistent {
            what: "shared dictionary with repeated entries"
        })
    );
    // the control: the same layout with width 1 and fields 0, 1 gives entries 5, 6
    let distinct = [4u8, 2, 0, 0, 1, 5, 0, 0, 0, 0, 0, 0, 0, 0b10];
    assert_eq!(SharedDictionary::deserialize(&distinct).unwrap().len(), 2);
}

/// A dictionary vector whose few long entries are repeated by every code must not expand
/// past MAX_VECTOR_BYTES: crafted from a real two-row dictionary vector of one 2 MiB string
/// (codes of width 0 take no bytes), claiming 1024 rows instead, which would need 2 GiB.
#[test]
fn a_dictionary_cannot_expand_without_bound() {
    let long = vec![b'x'; 2 << 20];
    let v = Vector {
        rows: 2,
        nulls: None,
        values: Values::Bytes([&long[..], &long[..]].into_iter().collect()),
    };
    let mut bytes = Vec::new();
    let r = encode_vector(&v.as_ref(), &ColumnContext::default(), &mut bytes).unwrap();
    assert_eq!(r.chosen, Some(Encoding::Dictionary));
    assert_eq!(
        decode_vector(&bytes, &ColumnContext::default())
            .unwrap()
            .rows,
        2
    );
    // the row count follows the kind byte
    bytes[1..3].copy_from_slice(&1024u16.to_le_bytes());
    match decode_vector(&bytes, &ColumnContext::default()) {
        Err(pg_columnar_codec::DecodeError::OutOfRange { what, value, limit }) => {
            assert_eq!(what, "decoded bytes of a dictionary vector");
            assert_eq!(
                (value, limit),
                (1024 * (2 << 20), pg_columnar_codec::MAX_VECTOR_BYTES)
            );
        }
        other => panic!(
            "expected the expansion to be refused, got {:?}",
            other.map(|v| v.rows)
        ),
    }
    // the control: the longest entry times the rows passes the limit too, but the codes
    // name it once, so the exact sum of their lengths fits and the vector decodes
    let short = [b'y'];
    let rows: Vec<&[u8]> = (0..1024)
        .map(|i| if i == 7 { &long[..] } else { &short[..] })
        .collect();
    let v = Vector {
        rows: 1024,
        nulls: None,
        values: Values::Bytes(rows.into_iter().collect()),
    };
    let mut bytes = Vec::new();
    let r = encode_vector(&v.as_ref(), &ColumnContext::default(), &mut bytes).unwrap();
    assert_eq!(r.chosen, Some(Encoding::Dictionary));
    assert_eq!(decode_vector(&bytes, &ColumnContext::default()).unwrap(), v);
}

/// A stripe header's column and row counts are checked against the directory's length
/// before anything is sized from them: a 32-byte header claiming 65535 columns of 4 billion
/// rows asks for no memory, and is an error.
#[test]
fn a_stripe_header_cannot_size_the_directory() {
    use pg_columnar_codec::stripe::{StripeDirectory, MAGIC};
    let mut h = Vec::new();
    h.extend_from_slice(&MAGIC);
    h.extend_from_slice(&pg_columnar_codec::FORMAT_VERSION.to_le_bytes());
    h.extend_from_slice(&u16::MAX.to_le_bytes());
    h.extend_from_slice(&u32::MAX.to_le_bytes());
    h.extend_from_slice(&16u32.to_le_bytes());
    h.extend_from_slice(&[0u8; 16]);
    assert_eq!(h.len(), 32);
    match StripeDirectory::parse(&h) {
        Err(pg_columnar_codec::DecodeError::Inconsistent { what }) => {
            assert!(what.starts_with("stripe directory"), "{what}")
        }
        other => panic!("expected an inconsistent directory, got {other:?}"),
    }
}

/// A dictionary code past the entries is an error naming it: a real vector of three
/// strings whose last codes (width 2, the block's last byte) are turned into 3.
#[test]
fn a_dictionary_code_past_the_entries_is_refused() {
    let names: [&[u8]; 3] = [b"alpha", b"beta", b"gamma"];
    let rows: Vec<&[u8]> = (0..1024).map(|i| names[i % 3]).collect();
    let v = Vector {
        rows: 1024,
        nulls: None,
        values: Values::Bytes(rows.into_iter().collect()),
    };
    let mut bytes = Vec::new();
    let r = encode_vector(&v.as_ref(), &ColumnContext::default(), &mut bytes).unwrap();
    assert_eq!(r.chosen, Some(Encoding::Dictionary));
    assert_eq!(decode_vector(&bytes, &ColumnContext::default()).unwrap(), v);
    *bytes.last_mut().unwrap() = 0xff;
    match decode_vector(&bytes, &ColumnContext::default()) {
        Err(pg_columnar_codec::DecodeError::OutOfRange { what, value, limit }) => {
            assert_eq!((what, value, limit), ("dictionary code", 3, 2));
        }
        other => panic!(
            "expected the code to be refused, got {:?}",
            other.map(|v| v.rows)
        ),
    }
}

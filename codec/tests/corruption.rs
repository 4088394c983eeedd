//! Corrupt stored bytes must give a DecodeError: never a panic, never an out-of-bounds read.
//! Deterministic and quick; the fuzz targets (codec/fuzz) go further.

mod gen;

use gen::{generate, Nulls, Spec, KINDS};
use pg_columnar_codec::{decode_vector, encode_vector};

fn samples() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut seed = 7;
    for kind in KINDS {
        for shape in gen::shapes() {
            for (rows, nulls) in [(37, Nulls::None), (64, Nulls::Some(25)), (5, Nulls::All)] {
                seed += 1;
                let v = generate(&Spec { kind, shape, rows, nulls, seed });
                let mut bytes = Vec::new();
                encode_vector(&v.as_ref(), &mut bytes).unwrap();
                out.push(bytes);
            }
        }
    }
    out
}

fn decode_no_panic(bytes: &[u8]) -> bool {
    match std::panic::catch_unwind(|| decode_vector(bytes)) {
        Ok(r) => r.is_ok(),
        Err(_) => panic!("decoder panicked on {:02x?}", &bytes[..bytes.len().min(64)]),
    }
}

#[test]
fn every_truncation_is_an_error() {
    for s in samples() {
        assert!(decode_no_panic(&s));
        for len in 0..s.len() {
            assert!(!decode_no_panic(&s[..len]), "a {len}-byte prefix of a {}-byte vector decoded", s.len());
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
    let v = generate(&Spec { kind: gen::GenKind::Int32, shape: gen::Shape::Width(9), rows: 100, nulls: Nulls::None, seed: 1 });
    let mut s = Vec::new();
    let r = encode_vector(&v.as_ref(), &mut s).unwrap();
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

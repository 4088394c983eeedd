//! Arbitrary bytes as a packed batch of rows (the first three bytes: the row count and the
//! unpacked length), read with a 1 MiB limit; and the same bytes cut into rows, packed and
//! read back.
#![no_main]
use libfuzzer_sys::fuzz_target;
use pg_columnar_codec::rowpack::{unpack_rows, RowPacker};

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let rows = data[0] as usize;
    let len = u16::from_le_bytes([data[1], data[2]]) as usize;
    if let Ok((bytes, ranges)) = unpack_rows(&data[3..], rows, len, 1 << 20) {
        assert_eq!(ranges.len(), rows);
        assert!(ranges.iter().all(|r| r.end <= bytes.len()));
    }
    let mut packer = RowPacker::new();
    let cut: Vec<&[u8]> = data[3..].split(|&b| b == data[0]).collect();
    cut.iter().for_each(|r| packer.push(r));
    let mut packed = Vec::new();
    let (n, unpacked) = packer.finish(&mut packed);
    let (bytes, ranges) = unpack_rows(&packed, n, unpacked, usize::MAX).expect("a packed batch reads back");
    let back: Vec<&[u8]> = ranges.into_iter().map(|r| &bytes[r]).collect();
    assert_eq!(back, cut);
});

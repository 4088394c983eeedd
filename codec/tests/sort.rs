//! Sorted stripes (`WriteOptions::sort_key`): the order against a reference sort, the
//! stored rows against the input rows through the stored row order, and the cases where
//! nothing is sorted.

mod gen;

use std::cmp::Ordering;

use gen::Rng;

use pg_columnar_codec::stripe::{self, ColumnInput, StripeDirectory, WriteOptions};
use pg_columnar_codec::{
    decode_vector, sort, ByteStrings, ColumnContext, SharedDictionary, SymbolTable, Values,
};

/// One value of a row, as the reference compares it.
#[derive(Debug, Clone, PartialEq)]
enum Cell {
    Null,
    Int(i64),
    Float(f64),
    Bytes(Vec<u8>),
}

/// The reference order of two cells: NULLs last, floats as PostgreSQL orders them (-0 = 0,
/// NaN after everything and equal to NaN), bytes bytewise.
fn compare(a: &Cell, b: &Cell) -> Ordering {
    match (a, b) {
        (Cell::Null, Cell::Null) => Ordering::Equal,
        (Cell::Null, _) => Ordering::Greater,
        (_, Cell::Null) => Ordering::Less,
        (Cell::Int(x), Cell::Int(y)) => x.cmp(y),
        (Cell::Float(x), Cell::Float(y)) => match (x.is_nan(), y.is_nan()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            _ => x.partial_cmp(y).unwrap(),
        },
        (Cell::Bytes(x), Cell::Bytes(y)) => x.cmp(y),
        _ => unreachable!("cells of one column are of one kind"),
    }
}

struct Column {
    nulls: Option<Vec<u8>>,
    values: Values,
}

impl Column {
    fn input(&self) -> ColumnInput<'_> {
        ColumnInput {
            nulls: self.nulls.as_deref(),
            values: self.values.as_ref(),
        }
    }
}

/// A column from cells (all of one kind, or NULL).
fn column(cells: &[Cell], kind: &Values) -> Column {
    let mut nulls = vec![0u8; cells.len().div_ceil(8)];
    let mut values = match kind {
        Values::Int64(_) => Values::Int64(Vec::new()),
        Values::Int16(_) => Values::Int16(Vec::new()),
        Values::Float64(_) => Values::Float64(Vec::new()),
        Values::Float32(_) => Values::Float32(Vec::new()),
        Values::Bytes(_) => Values::Bytes(ByteStrings::new()),
        Values::Fixed { width, .. } => Values::Fixed {
            width: *width,
            data: Vec::new(),
        },
        _ => unreachable!(),
    };
    for (r, c) in cells.iter().enumerate() {
        match (c, &mut values) {
            (Cell::Null, _) => nulls[r / 8] |= 1 << (r % 8),
            (Cell::Int(x), Values::Int64(v)) => v.push(*x),
            (Cell::Int(x), Values::Int16(v)) => v.push(*x as i16),
            (Cell::Float(x), Values::Float64(v)) => v.push(*x),
            (Cell::Float(x), Values::Float32(v)) => v.push(*x as f32),
            (Cell::Bytes(x), Values::Bytes(v)) => v.push(x),
            (Cell::Bytes(x), Values::Fixed { data, .. }) => data.extend_from_slice(x),
            _ => unreachable!(),
        }
    }
    let any = cells.iter().any(|c| *c == Cell::Null);
    Column {
        nulls: any.then_some(nulls),
        values,
    }
}

/// The cells of a decoded vector.
fn cells_of(v: &pg_columnar_codec::Vector) -> Vec<Cell> {
    let mut k = 0;
    (0..v.rows)
        .map(|r| {
            if v.nulls
                .as_ref()
                .is_some_and(|b| b[r / 8] >> (r % 8) & 1 == 1)
            {
                return Cell::Null;
            }
            k += 1;
            let i = k - 1;
            match &v.values {
                Values::Int64(x) => Cell::Int(x[i]),
                Values::Int16(x) => Cell::Int(x[i] as i64),
                Values::Float64(x) => Cell::Float(x[i]),
                Values::Float32(x) => Cell::Float(x[i] as f64),
                Values::Bytes(b) => Cell::Bytes(b.as_ref().get(i).to_vec()),
                Values::Fixed { width, data } => {
                    Cell::Bytes(data[i * *width as usize..(i + 1) * *width as usize].to_vec())
                }
                other => unreachable!("{other:?}"),
            }
        })
        .collect()
}

/// Rows of five columns: a host name (few values), a time, a float with NaN, ±0 and NULLs,
/// a small int with NULLs, a fixed-width value.
fn table(rng: &mut Rng, rows: usize) -> Vec<Vec<Cell>> {
    let specials = [
        f64::NAN,
        -0.0,
        0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        1.5,
        -2.25,
    ];
    let mut cols = vec![Vec::with_capacity(rows); 5];
    for r in 0..rows {
        cols[0].push(match rng.below(20) {
            0 => Cell::Null,
            _ => Cell::Bytes(format!("host_{}", rng.below(30)).into_bytes()),
        });
        cols[1].push(Cell::Int(
            1_000_000 + (r as i64 / 30) * 10 - rng.below(3) as i64,
        ));
        cols[2].push(match rng.below(10) {
            0 => Cell::Null,
            1..=3 => Cell::Float(specials[rng.below(specials.len() as u64) as usize]),
            _ => Cell::Float((rng.below(1000) as f64) / 8.0 - 60.0),
        });
        cols[3].push(if rng.below(4) == 0 {
            Cell::Null
        } else {
            Cell::Int(rng.below(7) as i64 - 3)
        });
        cols[4].push(Cell::Bytes((rng.below(5) as u32).to_be_bytes().to_vec()));
    }
    cols
}

const KINDS: [fn() -> Values; 5] = [
    || Values::Bytes(ByteStrings::new()),
    || Values::Int64(Vec::new()),
    || Values::Float64(Vec::new()),
    || Values::Int16(Vec::new()),
    || Values::Fixed {
        width: 4,
        data: Vec::new(),
    },
];

/// Equal cells, a NaN equal to any NaN.
fn same_cell(a: &Cell, b: &Cell) -> bool {
    a == b || matches!((a, b), (Cell::Float(x), Cell::Float(y)) if x.is_nan() && y.is_nan())
}

/// The reference: insert positions sorted by the key columns' cells, ties by position.
fn reference_order(cells: &[Vec<Cell>], key: &[usize], rows: usize) -> Vec<u32> {
    let mut order: Vec<u32> = (0..rows as u32).collect();
    order.sort_by(|&a, &b| {
        key.iter()
            .map(|&c| compare(&cells[c][a as usize], &cells[c][b as usize]))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
            .then(a.cmp(&b))
    });
    order
}

/// Writes a stripe, parses it and returns its rows as stored and its row order.
fn write_and_read(
    columns: &[Column],
    rows: usize,
    key: &[usize],
) -> (Vec<u8>, Vec<Vec<Cell>>, Option<Vec<u32>>) {
    let inputs: Vec<ColumnInput> = columns.iter().map(Column::input).collect();
    let mut image = Vec::new();
    stripe::write_stripe_with(
        &inputs,
        rows,
        &WriteOptions {
            find_period: true,
            sort_key: key.to_vec(),
        },
        &mut image,
    )
    .unwrap();
    let (stored, order) = read(&image, rows, key);
    (image, stored, order)
}

/// Parses a stripe image of `rows` rows sorted by `key` (empty: none) and returns its rows
/// as stored and its row order (the insert offset of each stored row).
fn read(image: &[u8], rows: usize, key: &[usize]) -> (Vec<Vec<Cell>>, Option<Vec<u32>>) {
    let prefix = StripeDirectory::prefix_len(&image[..stripe::HEADER_LEN]).unwrap();
    let dir = StripeDirectory::parse(&image[..prefix]).unwrap();
    assert_eq!(dir.total_len, image.len());
    let stored = (0..dir.columns.len())
        .map(|c| {
            let col = &dir.columns[c];
            let table = col
                .fsst
                .map(|e| SymbolTable::deserialize(&image[e.offset..e.offset + e.length]).unwrap());
            let dict = col.dictionary.map(|e| {
                SharedDictionary::deserialize(&image[e.offset..e.offset + e.length]).unwrap()
            });
            let ctx = ColumnContext {
                fsst: table.as_ref(),
                dictionary: dict.as_ref(),
                stride: None,
            };
            dir.vectors(c)
                .iter()
                .flat_map(|e| {
                    let bytes = stripe::verified(
                        &image[e.offset..e.offset + e.length],
                        e.checksum,
                        "vector",
                    )
                    .unwrap();
                    cells_of(&decode_vector(bytes, &ctx).unwrap())
                })
                .collect()
        })
        .collect();
    let order = dir.row_positions.as_ref().map(|positions| {
        assert_eq!(positions.key, key, "the directory names the key");
        let mut values = Vec::new();
        for (v, e) in positions.vectors.iter().enumerate() {
            let bytes = stripe::verified(
                &image[e.offset..e.offset + e.length],
                e.checksum,
                "row positions",
            )
            .unwrap();
            stripe::decode_row_positions(bytes, dir.vector_rows(v), rows, &mut values).unwrap();
        }
        let (position, order) = positions
            .orders(values)
            .expect("the row positions are a permutation");
        assert_eq!(sort::invert(&order).unwrap(), position);
        order
    });
    (stored, order)
}

/// Stripes written by format 1 (the build before patched blocks, which stored a sorted
/// stripe's row order as each insert offset's stored position) read back as they were
/// written: the images in tests/golden were made from this table by that build.
#[test]
fn format_1_stripes_read_back() {
    let rows = 3000;
    let cells = table(&mut Rng(0x5057_5631), rows);
    for (name, key) in [("sorted", &[0usize, 1][..]), ("unsorted", &[][..])] {
        let hex = std::fs::read_to_string(format!(
            "{}/tests/golden/stripe_v1_{name}.hex",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        let hex: Vec<u8> = hex.bytes().filter(u8::is_ascii_hexdigit).collect();
        let image: Vec<u8> = hex
            .chunks(2)
            .map(|c| u8::from_str_radix(std::str::from_utf8(c).unwrap(), 16).unwrap())
            .collect();
        assert_eq!(
            u16::from_le_bytes([image[4], image[5]]),
            1,
            "a format 1 image"
        );
        let (stored, order) = read(&image, rows, key);
        let expected = reference_order(&cells, key, rows);
        assert_eq!(order.is_some(), !key.is_empty());
        assert_eq!(
            order.unwrap_or_else(|| (0..rows as u32).collect()),
            expected,
            "{name}"
        );
        for (c, col) in stored.iter().enumerate() {
            for (s, cell) in col.iter().enumerate() {
                let want = &cells[c][expected[s] as usize];
                assert!(same_cell(cell, want), "{name}: column {c} row {s}");
            }
        }
    }
}

#[test]
fn sorted_stripes_store_the_reference_order() {
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let keys: [&[usize]; 6] = [&[0, 1], &[1], &[2], &[3, 2, 0], &[4, 3], &[2, 4, 1]];
    for (round, &rows) in [2usize, 3, 1023, 1024, 1025, 5000].iter().enumerate() {
        let cells = table(&mut rng, rows);
        let columns: Vec<Column> = cells
            .iter()
            .zip(KINDS)
            .map(|(c, k)| column(c, &k()))
            .collect();
        for key in keys {
            let expected = reference_order(&cells, key, rows);
            assert_eq!(
                sort::sort_order(
                    &columns.iter().map(Column::input).collect::<Vec<_>>(),
                    key,
                    rows
                )
                .unwrap_or_else(|| (0..rows as u32).collect()),
                expected,
                "round {round}, key {key:?}"
            );
            let (image, stored, order) = write_and_read(&columns, rows, key);
            let identity = expected.iter().enumerate().all(|(s, &o)| s as u32 == o);
            assert_eq!(
                order.is_none(),
                identity,
                "row positions are stored exactly when the rows moved"
            );
            let order = order.unwrap_or_else(|| (0..rows as u32).collect());
            assert_eq!(order, expected);
            // every stored row is the input row its order names, in every column
            for (c, col) in stored.iter().enumerate() {
                for (s, cell) in col.iter().enumerate() {
                    let want = &cells[c][order[s] as usize];
                    assert!(same_cell(cell, want), "column {c} row {s}");
                }
            }
            // the inverse names each row's stored position
            let position = sort::invert(&order).unwrap();
            assert!(position
                .iter()
                .enumerate()
                .all(|(o, &s)| order[s as usize] == o as u32));
            // the same rows and key give the same bytes
            assert_eq!(write_and_read(&columns, rows, key).0, image);
        }
    }
}

/// Rows already in key order, no key, or fewer than two rows: the stripe is the one
/// written without a key, byte for byte (the control that the key is what moves rows).
#[test]
fn rows_in_key_order_are_written_as_they_came() {
    let rows = 3000;
    let hosts: Vec<Cell> = (0..rows)
        .map(|r| Cell::Bytes(format!("host_{:03}", r / 30).into_bytes()))
        .collect();
    let times: Vec<Cell> = (0..rows).map(|r| Cell::Int(r as i64 % 30)).collect();
    let columns = vec![
        column(&hosts, &Values::Bytes(ByteStrings::new())),
        column(&times, &Values::Int64(Vec::new())),
    ];
    let (plain, _, none) = write_and_read(&columns, rows, &[]);
    assert!(none.is_none());
    let (sorted, _, order) = write_and_read(&columns, rows, &[0, 1]);
    assert!(order.is_none());
    assert_eq!(sorted, plain);
    // sorted by time first, the rows move, and the image differs
    let (by_time, _, order) = write_and_read(&columns, rows, &[1, 0]);
    assert!(order.is_some());
    assert_ne!(by_time, plain);
    let one = vec![column(&hosts[..1], &Values::Bytes(ByteStrings::new()))];
    assert!(write_and_read(&one, 1, &[0]).2.is_none());
}

/// TSBS's layout (time-major, one row per host per time) sorted by host then time: the
/// rows that came one period (100 hosts) apart lie one apart once sorted, so the stored rows'
/// insert offsets step by the period inside a host's run, and a vector's row positions are a
/// delta block of width 0 patched where a host's run ends: under half a bit per row here.
#[test]
fn a_time_major_load_sorted_by_host_has_small_row_positions() {
    let (hosts, rows) = (100, 1024 * 16);
    let host: Vec<Cell> = (0..rows)
        .map(|r| Cell::Bytes(format!("host_{}", r % hosts).into_bytes()))
        .collect();
    let time: Vec<Cell> = (0..rows)
        .map(|r| Cell::Int((r / hosts) as i64 * 10_000_000))
        .collect();
    let columns = vec![
        column(&host, &Values::Bytes(ByteStrings::new())),
        column(&time, &Values::Int64(Vec::new())),
    ];
    let inputs: Vec<ColumnInput> = columns.iter().map(Column::input).collect();
    let mut image = Vec::new();
    stripe::write_stripe_with(
        &inputs,
        rows,
        &WriteOptions {
            find_period: true,
            sort_key: vec![0, 1],
        },
        &mut image,
    )
    .unwrap();
    let prefix = StripeDirectory::prefix_len(&image[..stripe::HEADER_LEN]).unwrap();
    let dir = StripeDirectory::parse(&image[..prefix]).unwrap();
    let bytes: usize = dir
        .row_positions
        .as_ref()
        .unwrap()
        .vectors
        .iter()
        .map(|e| e.length)
        .sum();
    assert!(
        bytes * 8 * 2 < rows,
        "row positions take {bytes} bytes for {rows} rows"
    );
}

/// Row positions that are not a permutation, or name a row past the stripe, are refused.
#[test]
fn a_bad_row_order_is_refused() {
    assert_eq!(sort::invert(&[2, 0, 1]), Some(vec![1, 2, 0]));
    assert_eq!(sort::invert(&[0, 0, 1]), None);
    assert_eq!(sort::invert(&[0, 3, 1]), None);
    let mut image = Vec::new();
    let positions = [0i32, 1, 5];
    let v = pg_columnar_codec::VectorRef {
        rows: 3,
        nulls: None,
        values: pg_columnar_codec::ValuesRef::Int32(&positions),
    };
    pg_columnar_codec::encode_vector(&v, &ColumnContext::default(), &mut image).unwrap();
    let mut out = Vec::new();
    assert!(matches!(
        stripe::decode_row_positions(&image, 3, 3, &mut out),
        Err(pg_columnar_codec::DecodeError::OutOfRange {
            what: "row position",
            value: 5,
            limit: 2
        })
    ));
    assert!(stripe::decode_row_positions(&image, 3, 6, &mut out).is_ok());
    assert!(stripe::decode_row_positions(&image, 2, 6, &mut out).is_err());
}

/// A sorted stripe's directory cut short anywhere is an error, and a key naming a column
/// past the stripe's is refused.
#[test]
fn a_sorted_directory_cut_short_or_naming_a_bad_column_is_refused() {
    let rows = 2000;
    let host: Vec<Cell> = (0..rows)
        .map(|r| Cell::Bytes(format!("host_{}", r % 10).into_bytes()))
        .collect();
    let time: Vec<Cell> = (0..rows).map(|r| Cell::Int(r as i64)).collect();
    let columns = vec![
        column(&host, &Values::Bytes(ByteStrings::new())),
        column(&time, &Values::Int64(Vec::new())),
    ];
    let (image, _, order) = write_and_read(&columns, rows, &[0, 1]);
    assert!(order.is_some());
    let prefix = StripeDirectory::prefix_len(&image[..stripe::HEADER_LEN]).unwrap();
    for k in 0..prefix {
        assert!(StripeDirectory::parse(&image[..k]).is_err(), "cut at {k}");
    }
    // the key follows the columns' entries: find it by the parse of the unsorted stripe's
    // directory, whose length is where the sorted one's key begins
    let (plain, _, _) = write_and_read(&columns, rows, &[]);
    let at = StripeDirectory::prefix_len(&plain[..stripe::HEADER_LEN]).unwrap();
    assert_eq!(image[at], 2, "two key columns");
    let mut bad = image[..prefix].to_vec();
    bad[at + 1..at + 3].copy_from_slice(&2u16.to_le_bytes());
    assert!(matches!(
        StripeDirectory::parse(&bad),
        Err(pg_columnar_codec::DecodeError::Inconsistent { .. })
    ));
    bad[at + 1..at + 3].copy_from_slice(&1u16.to_le_bytes());
    assert!(
        matches!(
            StripeDirectory::parse(&bad),
            Err(pg_columnar_codec::DecodeError::Inconsistent { .. })
        ),
        "a column named twice"
    );
}

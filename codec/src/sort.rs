//! Sorting a stripe's rows by a key (the table option `pg_columnar.sort_key`).
//!
//! The order is a total order on rows, so the sorted image depends only on the rows and the
//! key: key columns compared in turn, NULLs after every value, ties broken by insert order.
//! Values compare by their stored form: integers as signed numbers, floats in PostgreSQL's
//! order (-0 equal to 0, NaN after every number), byte strings and fixed-width values
//! bytewise (which for text is the C collation's order: it clusters, it is not the
//! database's collation).

use std::collections::HashMap;

use crate::stripe::ColumnInput;
use crate::vector::{Values, ValuesRef};

/// For each stored position of the sorted stripe, the row's position in insert order;
/// `None` when the rows are already in key order (the stripe is written as it came).
pub fn sort_order(columns: &[ColumnInput<'_>], key: &[usize], rows: usize) -> Option<Vec<u32>> {
    if key.is_empty() || rows < 2 {
        return None;
    }
    // each row's key as 2 words per key column: NULL flag (NULLs last), ordered value
    let width = 2 * key.len();
    let mut words = vec![0u64; rows * width];
    for (k, &c) in key.iter().enumerate() {
        let column = &columns[c];
        let ordered = ordered_words(&column.values);
        let mut value = 0;
        for r in 0..rows {
            let w = &mut words[r * width + 2 * k..r * width + 2 * k + 2];
            if is_null(column.nulls, r) {
                w[0] = 1;
            } else {
                w[1] = ordered[value];
                value += 1;
            }
        }
    }
    let key_of = |r: u32| &words[r as usize * width..(r as usize + 1) * width];
    let in_order = (1..rows as u32).all(|r| key_of(r - 1) <= key_of(r));
    if in_order {
        return None;
    }
    let mut order: Vec<u32> = (0..rows as u32).collect();
    // (keys equal: insert order, so the sort is total and the image deterministic)
    order.sort_unstable_by(|&a, &b| key_of(a).cmp(key_of(b)).then(a.cmp(&b)));
    Some(order)
}

fn is_null(nulls: Option<&[u8]>, r: usize) -> bool {
    nulls.is_some_and(|b| b[r / 8] >> (r % 8) & 1 == 1)
}

/// Each value as a word whose unsigned order is the values' order.
fn ordered_words(values: &ValuesRef<'_>) -> Vec<u64> {
    let int = |v: i64| (v as u64) ^ (1 << 63);
    match values {
        ValuesRef::Int8(v) => v.iter().map(|&x| int(x as i64)).collect(),
        ValuesRef::Int16(v) => v.iter().map(|&x| int(x as i64)).collect(),
        ValuesRef::Int32(v) => v.iter().map(|&x| int(x as i64)).collect(),
        ValuesRef::Int64(v) => v.iter().map(|&x| int(x)).collect(),
        ValuesRef::Float32(v) => v.iter().map(|&x| float_word(x as f64)).collect(),
        ValuesRef::Float64(v) => v.iter().map(|&x| float_word(x)).collect(),
        ValuesRef::Bytes(b) => ranks((0..b.len()).map(|i| b.get(i)), b.len()),
        ValuesRef::Fixed { width, data } => {
            let w = (*width as usize).max(1);
            ranks(data.chunks(w), data.len() / w)
        }
    }
}

/// A float's word in PostgreSQL's order: -0 and 0 are one value, every NaN is one value
/// after +infinity. (f32 widens to f64 exactly, keeping its order.)
fn float_word(x: f64) -> u64 {
    if x.is_nan() {
        return u64::MAX;
    }
    let bits = if x == 0.0 { 0 } else { x.to_bits() };
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    }
}

/// Each value's rank among the distinct values, bytewise.
fn ranks<'a>(values: impl Iterator<Item = &'a [u8]> + Clone, count: usize) -> Vec<u64> {
    let mut distinct: HashMap<&[u8], u64> = HashMap::new();
    for v in values.clone() {
        distinct.entry(v).or_insert(0);
    }
    let mut sorted: Vec<&[u8]> = distinct.keys().copied().collect();
    sorted.sort_unstable();
    for (rank, v) in sorted.into_iter().enumerate() {
        distinct.insert(v, rank as u64);
    }
    let mut out = Vec::with_capacity(count);
    out.extend(values.map(|v| distinct[v]));
    out
}

/// The rows `order` names (stored positions from [`sort_order`], or a prefix of them) of a
/// column of `row_count` rows: their null bitmap (`None`: the column has no NULLs) and
/// non-null values.
pub fn permute(
    column: &ColumnInput<'_>,
    order: &[u32],
    row_count: usize,
) -> (Option<Vec<u8>>, Values) {
    let rows = order.len();
    // each row's value index (valid for non-null rows)
    let value_of: Vec<u32> = match column.nulls {
        None => Vec::new(),
        Some(b) => {
            let mut next = 0u32;
            (0..row_count)
                .map(|r| {
                    let v = next;
                    next += !is_null(Some(b), r) as u32;
                    v
                })
                .collect()
        }
    };
    let picks: Vec<usize> = match column.nulls {
        None => order.iter().map(|&o| o as usize).collect(),
        Some(b) => order
            .iter()
            .filter(|&&o| !is_null(Some(b), o as usize))
            .map(|&o| value_of[o as usize] as usize)
            .collect(),
    };
    let nulls = column.nulls.map(|b| {
        let mut out = vec![0u8; rows.div_ceil(8)];
        for (s, &o) in order.iter().enumerate() {
            if is_null(Some(b), o as usize) {
                out[s / 8] |= 1 << (s % 8);
            }
        }
        out
    });
    (nulls, column.values.gather(picks.into_iter()))
}

/// The inverse of a stored order: for each row in insert order, its stored position.
/// `None` if `order` is not a permutation of `0..order.len()`.
pub fn invert(order: &[u32]) -> Option<Vec<u32>> {
    let mut position = vec![u32::MAX; order.len()];
    for (s, &o) in order.iter().enumerate() {
        let slot = position.get_mut(o as usize)?;
        if *slot != u32::MAX {
            return None;
        }
        *slot = s as u32;
    }
    Some(position)
}

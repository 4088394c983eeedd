//! The first rows by one integer ordering value, overall (`ORDER BY o LIMIT n`) or in each
//! group (`DISTINCT ON (g) ... ORDER BY g, o`), and the rank below which no row can enter
//! any more, so that a reader can leave out the vectors whose zone maps stay below it.
//!
//! Rows are ranked by their value in the query's direction, NULL first or last as the query
//! says; rows of equal value by their position, the later one first. PostgreSQL leaves the
//! order of such ties unspecified; breaking them by position makes the result independent
//! of the order in which vectors are read.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::filter::Selection;
use crate::group::KeyColumn;

/// The ordering of `ORDER BY o [ASC | DESC] [NULLS FIRST | LAST]` over an integer column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Order {
    pub descending: bool,
    pub nulls_first: bool,
}

/// A row's place in the order: a greater rank comes first. Values take the ranks of i64
/// (negated when ascending); NULL the greatest rank or the least.
pub type Rank = i128;

impl Order {
    pub fn rank(self, v: Option<i64>) -> Rank {
        match v {
            None if self.nulls_first => Rank::MAX,
            None => Rank::MIN,
            Some(v) if self.descending => v as Rank,
            Some(v) => -(v as Rank),
        }
    }

    /// The value of a rank [`Order::rank`] gave (`None`: NULL).
    pub fn value_of(self, rank: Rank) -> Option<i64> {
        match rank {
            Rank::MAX | Rank::MIN => None,
            r if self.descending => Some(r as i64),
            r => Some((-r) as i64),
        }
    }

    /// The greatest rank among rows whose values lie in `range` (least, greatest; `None`:
    /// no row has a value), with NULLs among them or not. `None`: there are no rows.
    pub fn best_possible(self, range: Option<(i64, i64)>, nulls: bool) -> Option<Rank> {
        let values = range.map(|(lo, hi)| self.rank(Some(if self.descending { hi } else { lo })));
        let null = nulls.then(|| self.rank(None));
        values.max(null)
    }
}

/// A row: its rank and its position (a row number: later rows have greater ones).
type Entry = (Rank, u64);

/// The first `keep` rows of each group seen.
#[derive(Debug)]
pub struct TopRows {
    order: Order,
    keep: usize,
    /// Per group, its first rows so far with the last of them on top.
    groups: Vec<BinaryHeap<Reverse<Entry>>>,
}

impl TopRows {
    pub fn new(order: Order, keep: usize) -> TopRows {
        assert!(keep > 0, "keeping no rows");
        TopRows {
            order,
            keep,
            groups: Vec::new(),
        }
    }

    pub fn order(&self) -> Order {
        self.order
    }

    pub fn groups(&self) -> usize {
        self.groups.len()
    }

    /// Offers the selected rows of a vector whose first row is at `first_position`, with the
    /// ordering values `values` and each row's group in `groups` (`None`: all in group 0).
    /// Groups are numbered densely from 0 (as `group::GroupTable` numbers them); a number
    /// not seen before makes a group.
    pub fn add(
        &mut self,
        groups: Option<&[u32]>,
        values: &KeyColumn,
        selection: &Selection,
        first_position: u64,
    ) {
        for r in selection.iter() {
            let value = (!values.is_null(r)).then(|| values.part(r));
            let entry = (self.order.rank(value), first_position + r as u64);
            let g = groups.map_or(0, |gs| gs[r] as usize);
            if g >= self.groups.len() {
                self.groups.resize_with(g + 1, BinaryHeap::new);
            }
            let heap = &mut self.groups[g];
            if heap.len() < self.keep {
                heap.push(Reverse(entry));
            } else if entry > heap.peek().unwrap().0 {
                heap.pop();
                heap.push(Reverse(entry));
            }
        }
    }

    /// The rank a row of one of `groups` must exceed to enter: the least, over them, of the
    /// rank of the last row each keeps; `None` if one of them is not full (any row enters
    /// it) or has not been seen. Rows of greater position enter at equal rank, so only rows
    /// of lesser rank are certain to stay out.
    pub fn threshold_of(&self, groups: &[u32]) -> Option<Rank> {
        let mut least: Option<Rank> = None;
        for &g in groups {
            let heap = self.groups.get(g as usize)?;
            if heap.len() < self.keep {
                return None;
            }
            let r = heap.peek().unwrap().0 .0;
            least = Some(least.map_or(r, |l| l.min(r)));
        }
        least
    }

    /// The rows kept, as (group, rank, position), by group and in the order's sequence
    /// within each group.
    pub fn into_rows(self) -> Vec<(u32, Rank, u64)> {
        let mut out = Vec::new();
        for (g, heap) in self.groups.into_iter().enumerate() {
            let mut rows: Vec<Entry> = heap.into_iter().map(|Reverse(e)| e).collect();
            rows.sort_unstable_by(|a, b| b.cmp(a));
            out.extend(rows.into_iter().map(|(rank, pos)| (g as u32, rank, pos)));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Rng;

    /// The reference: every row ranked, sorted within its group, the first `keep` taken.
    fn reference(
        order: Order,
        keep: usize,
        rows: &[(u32, Option<i64>, u64)],
    ) -> Vec<(u32, Rank, u64)> {
        let mut ranked: Vec<(u32, Rank, u64)> = rows
            .iter()
            .map(|&(g, v, p)| (g, order.rank(v), p))
            .collect();
        ranked.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)).then(b.2.cmp(&a.2)));
        let mut out = Vec::new();
        for (i, r) in ranked.iter().enumerate() {
            let before = ranked[..i].iter().rev().take_while(|o| o.0 == r.0).count();
            if before < keep {
                out.push(*r);
            }
        }
        out
    }

    #[test]
    fn ranks() {
        let desc = Order {
            descending: true,
            nulls_first: true,
        };
        let asc = Order {
            descending: false,
            nulls_first: false,
        };
        assert!(desc.rank(None) > desc.rank(Some(i64::MAX)));
        assert!(desc.rank(Some(5)) > desc.rank(Some(-5)));
        assert!(asc.rank(Some(i64::MIN)) > asc.rank(Some(i64::MAX)));
        assert!(asc.rank(None) < asc.rank(Some(i64::MAX)));
        assert_eq!(desc.best_possible(Some((1, 9)), false), Some(9));
        assert_eq!(asc.best_possible(Some((1, 9)), true), Some(-1));
        assert_eq!(desc.best_possible(Some((1, 9)), true), Some(Rank::MAX));
        assert_eq!(desc.best_possible(None, false), None);
        for order in [desc, asc] {
            for v in [
                None,
                Some(i64::MIN),
                Some(-1),
                Some(0),
                Some(7),
                Some(i64::MAX),
            ] {
                assert_eq!(order.value_of(order.rank(v)), v);
            }
        }
    }

    /// Random vectors (groups, values with NULLs, sparse selections) read in a random order,
    /// each vector left out when the rule a reader applies allows it: its best possible
    /// rank below the threshold of the groups it holds. The rows kept must be the
    /// reference's, and some vectors must have been left out (or the rule was not tried).
    #[test]
    fn against_reference_with_skipping() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut skipped_total = 0;
        for case in 0..300 {
            let order = Order {
                descending: rng.below(2) == 0,
                nulls_first: rng.below(2) == 0,
            };
            let keep = [1, 1, 2, 5, 40][rng.below(5) as usize];
            let groups = [1, 3, 100][rng.below(3) as usize];
            let vectors = 1 + rng.below(12) as usize;
            let spread = [5, 1000, i64::MAX as u64][rng.below(3) as usize];
            // rising values with noise, like timestamps of a time-major load
            let mut all = Vec::new();
            let mut data = Vec::new();
            for v in 0..vectors {
                let n = 1 + rng.below(300) as usize;
                let values: Vec<Option<i64>> = (0..n)
                    .map(|r| {
                        (rng.below(20) != 0).then(|| match spread {
                            s if s == i64::MAX as u64 => {
                                [i64::MIN, i64::MAX, 0, -1][rng.below(4) as usize]
                            }
                            s => (v * 300 + r) as i64 / 7 + rng.below(s) as i64 - (s / 2) as i64,
                        })
                    })
                    .collect();
                let gs: Vec<u32> = (0..n).map(|_| rng.below(groups) as u32).collect();
                let mut selection = Selection::none(n);
                for r in 0..n {
                    if rng.below(4) != 0 {
                        selection.set(r);
                    }
                }
                let first = (v * 1024) as u64;
                for r in selection.iter() {
                    all.push((gs[r], values[r], first + r as u64));
                }
                data.push((values, gs, selection, first));
            }
            let mut read_order: Vec<usize> = (0..vectors).collect();
            for i in (1..vectors).rev() {
                read_order.swap(i, rng.below(i as u64 + 1) as usize);
            }
            let single = groups == 1 && case % 2 == 0;
            let mut top = TopRows::new(order, keep);
            for &v in &read_order {
                let (values, gs, selection, first) = &data[v];
                let mut present: Vec<u32> = selection.iter().map(|r| gs[r]).collect();
                present.sort_unstable();
                present.dedup();
                let range = selection.iter().filter_map(|r| values[r]).fold(
                    None,
                    |acc: Option<(i64, i64)>, x| {
                        Some(acc.map_or((x, x), |(lo, hi)| (lo.min(x), hi.max(x))))
                    },
                );
                let nulls = selection.iter().any(|r| values[r].is_none());
                let best = order.best_possible(range, nulls);
                if let (Some(t), Some(b)) = (top.threshold_of(&present), best) {
                    if b < t {
                        skipped_total += 1;
                        continue;
                    }
                }
                top.add(
                    (!single).then_some(gs.as_slice()),
                    &KeyColumn::of_rows(values),
                    selection,
                    *first,
                );
            }
            let expected = reference(
                order,
                keep,
                &all.iter()
                    .map(|&(g, v, p)| (if single { 0 } else { g }, v, p))
                    .collect::<Vec<_>>(),
            );
            // groups numbered as seen here are the generator's numbers; map both by number
            let mut got = top.into_rows();
            got.sort();
            let mut expected = expected;
            expected.sort();
            assert_eq!(got, expected, "case {case}");
        }
        assert!(
            skipped_total > 100,
            "the skipping rule was hardly exercised ({skipped_total})"
        );
    }
}

//! Time buckets as PostgreSQL computes them, in integer arithmetic on its timestamp
//! representation (microseconds since 2000-01-01 00:00): `date_trunc(unit, timestamp)` and
//! `date_bin(stride, ts, origin)`. `date_trunc(unit, timestamptz)` is [`trunc`] on the local
//! time: the caller shifts by the zone's offset where that offset is fixed.
//!
//! Each function answers only where its arithmetic is certainly PostgreSQL's: `None` outside
//! that range (infinities, timestamps near the ends of the valid range, strides or origins
//! that could overflow). The caller then asks PostgreSQL itself for that value, which returns
//! the same result or raises the same error.

pub const USECS_PER_SEC: i64 = 1_000_000;
pub const USECS_PER_DAY: i64 = 86_400 * USECS_PER_SEC;

/// The timestamps computed here: from about 2567 BC to about 148,000 AD, inside PostgreSQL's
/// valid range (4713 BC to 294276 AD) with room for a year's truncation and a day's offset.
const LOW: i64 = -(1 << 57);
const HIGH: i64 = 1 << 62;

/// The units of `date_trunc` computed here. Decade, century and millennium (which count from
/// year 1 and treat BC years apart) are left to PostgreSQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum TruncUnit {
    Microseconds,
    Milliseconds,
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Quarter,
    Year,
}

/// Every unit, for the tests that try each.
#[cfg(test)]
const UNITS: [TruncUnit; 10] = [
    TruncUnit::Microseconds,
    TruncUnit::Milliseconds,
    TruncUnit::Second,
    TruncUnit::Minute,
    TruncUnit::Hour,
    TruncUnit::Day,
    TruncUnit::Week,
    TruncUnit::Month,
    TruncUnit::Quarter,
    TruncUnit::Year,
];

impl TruncUnit {
    /// The unit a `date_trunc` unit name means, for the spellings PostgreSQL's unit table
    /// (`deltatktbl`) gives these units, compared without case as it does. `None` for every
    /// other spelling (abbreviations included), which the caller leaves to PostgreSQL.
    pub fn parse(name: &str) -> Option<TruncUnit> {
        Some(match name.to_ascii_lowercase().as_str() {
            "microseconds" => TruncUnit::Microseconds,
            "milliseconds" => TruncUnit::Milliseconds,
            "second" | "seconds" => TruncUnit::Second,
            "minute" | "minutes" => TruncUnit::Minute,
            "hour" | "hours" => TruncUnit::Hour,
            "day" | "days" => TruncUnit::Day,
            "week" | "weeks" => TruncUnit::Week,
            "month" | "months" => TruncUnit::Month,
            "quarter" => TruncUnit::Quarter,
            "year" | "years" => TruncUnit::Year,
            _ => return None,
        })
    }

    /// About how long a bucket of this unit is, in microseconds (a month 30 days, a quarter
    /// 91, a year 365): for estimating how many buckets a range of time holds.
    pub fn typical_width(self) -> i64 {
        match self {
            TruncUnit::Microseconds => 1,
            TruncUnit::Milliseconds => 1000,
            TruncUnit::Second => USECS_PER_SEC,
            TruncUnit::Minute => 60 * USECS_PER_SEC,
            TruncUnit::Hour => 3600 * USECS_PER_SEC,
            TruncUnit::Day => USECS_PER_DAY,
            TruncUnit::Week => 7 * USECS_PER_DAY,
            TruncUnit::Month => 30 * USECS_PER_DAY,
            TruncUnit::Quarter => 91 * USECS_PER_DAY,
            TruncUnit::Year => 365 * USECS_PER_DAY,
        }
    }

    /// The length of every bucket of this unit, in microseconds, for the units whose buckets
    /// are all one length (not months, quarters and years).
    pub fn fixed_width(self) -> Option<i64> {
        match self {
            TruncUnit::Month | TruncUnit::Quarter | TruncUnit::Year => None,
            unit => Some(unit.typical_width()),
        }
    }

    /// Whether truncating to this unit resets the time of day (PostgreSQL then recomputes the
    /// zone's offset for the truncated local time; below a day it keeps the original one).
    pub fn reaches_days(self) -> bool {
        matches!(
            self,
            TruncUnit::Day
                | TruncUnit::Week
                | TruncUnit::Month
                | TruncUnit::Quarter
                | TruncUnit::Year
        )
    }
}

/// Days since 2000-01-01 of a proleptic Gregorian date (astronomical year numbering, as
/// PostgreSQL's `date2j` uses).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    // 730425: days from 0000-03-01 (the start of an era) to 2000-01-01
    era * 146_097 + doe - 730_425
}

/// The (year, month) of a day counted from 2000-01-01.
fn civil_from_days(days: i64) -> (i64, i64) {
    let z = days + 730_425;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + (month <= 2) as i64;
    (year, month)
}

/// `date_trunc(unit, t)` of a timestamp without time zone; `None` outside the range computed
/// here.
pub fn trunc(unit: TruncUnit, t: i64) -> Option<i64> {
    if !(LOW..HIGH).contains(&t) {
        return None;
    }
    let floor = |step: i64| t.div_euclid(step) * step;
    Some(match unit {
        TruncUnit::Microseconds => t,
        TruncUnit::Milliseconds => floor(1000),
        TruncUnit::Second => floor(USECS_PER_SEC),
        TruncUnit::Minute => floor(60 * USECS_PER_SEC),
        TruncUnit::Hour => floor(3600 * USECS_PER_SEC),
        TruncUnit::Day => floor(USECS_PER_DAY),
        TruncUnit::Week => {
            // 2000-01-01 was a Saturday: a day's distance from the Monday before it is
            // (days + 5) mod 7 (ISO weeks start on Monday)
            let days = t.div_euclid(USECS_PER_DAY);
            (days - (days + 5).rem_euclid(7)) * USECS_PER_DAY
        }
        TruncUnit::Month | TruncUnit::Quarter | TruncUnit::Year => {
            let (year, month) = civil_from_days(t.div_euclid(USECS_PER_DAY));
            let first = match unit {
                TruncUnit::Month => month,
                TruncUnit::Quarter => (month - 1) / 3 * 3 + 1,
                _ => 1,
            };
            days_from_civil(year, first, 1) * USECS_PER_DAY
        }
    })
}

/// `date_trunc(unit, t)` of a timestamptz in a zone whose offset is fixed at `gmtoff`
/// seconds east of UTC: truncated in local time, shifted back by the same offset.
pub fn trunc_at_offset(unit: TruncUnit, t: i64, gmtoff: i64) -> Option<i64> {
    let shift = gmtoff
        .checked_mul(USECS_PER_SEC)
        .filter(|s| s.abs() < USECS_PER_DAY)?;
    if !(LOW..HIGH).contains(&t) {
        return None;
    }
    Some(trunc(unit, t + shift)? - shift)
}

/// `date_bin(stride, t, origin)` with a stride of `stride` microseconds (its days and time
/// part; a stride with months is refused by PostgreSQL and never reaches here), for
/// timestamp and timestamptz alike: the start of the bin of width `stride` aligned on
/// `origin` that holds `t`. `None` where an intermediate could leave the range computed here.
pub fn bin(stride: i64, t: i64, origin: i64) -> Option<i64> {
    if !(1..HIGH).contains(&stride) || !(LOW..HIGH).contains(&t) || !(LOW..HIGH).contains(&origin) {
        return None;
    }
    // PostgreSQL: diff = t - origin; result = origin + (diff - diff % stride), one stride
    // less when the remainder is negative (C's % truncates toward zero, as Rust's does)
    let diff = t - origin;
    let modulo = diff % stride;
    let mut result = origin + (diff - modulo);
    if modulo < 0 {
        result -= stride;
    }
    (LOW..HIGH).contains(&result).then_some(result)
}

/// The values that [`trunc`] and [`trunc_at_offset`] (to a unit of
/// [`fixed_width`](TruncUnit::fixed_width) `width`) or [`bin`] (of stride `width`) put in the
/// bucket `b` they gave one of them: `[b, b + width)`, cut to a day inside the range computed
/// here, where no offset or origin takes a value out of it. A caller bucketing values in
/// order (a time series) computes one bucket per span, not one per value.
pub fn span(b: i64, width: i64) -> (i64, i64) {
    (
        b.max(LOW + USECS_PER_DAY),
        b.saturating_add(width).min(HIGH - USECS_PER_DAY),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A day-by-day reference: the (year, month, day) of a day counted from 2000-01-01, found
    /// by walking whole years and months from 2000 with the Gregorian leap rule.
    fn reference_civil(mut days: i64) -> (i64, i64, i64) {
        let leap = |y: i64| (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        let year_len = |y: i64| if leap(y) { 366 } else { 365 };
        let month_len = |y: i64, m: i64| match m {
            2 if leap(y) => 29,
            2 => 28,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        };
        let mut y = 2000;
        while days < 0 {
            y -= 1;
            days += year_len(y);
        }
        while days >= year_len(y) {
            days -= year_len(y);
            y += 1;
        }
        let mut m = 1;
        while days >= month_len(y, m) {
            days -= month_len(y, m);
            m += 1;
        }
        (y, m, days + 1)
    }

    fn reference_days(y: i64, m: i64, d: i64) -> i64 {
        // invert by search around the estimate
        let mut guess = (y - 2000) * 365 + (y - 2000) / 4;
        loop {
            let (gy, gm, gd) = reference_civil(guess);
            match (gy, gm, gd).cmp(&(y, m, d)) {
                std::cmp::Ordering::Equal => return guess,
                std::cmp::Ordering::Less => guess += 1.max(((y - gy) * 360 + (m - gm) * 28).abs()),
                std::cmp::Ordering::Greater => {
                    guess -= 1.max(((gy - y) * 360 + (gm - m) * 28).abs())
                }
            }
        }
    }

    fn reference_trunc(unit: TruncUnit, t: i64) -> i64 {
        let days = t.div_euclid(USECS_PER_DAY);
        let (y, m, _) = reference_civil(days);
        let floor = |step: i64| t.div_euclid(step) * step;
        match unit {
            TruncUnit::Microseconds => t,
            TruncUnit::Milliseconds => floor(1000),
            TruncUnit::Second => floor(USECS_PER_SEC),
            TruncUnit::Minute => floor(60_000_000),
            TruncUnit::Hour => floor(3_600_000_000),
            TruncUnit::Day => days * USECS_PER_DAY,
            TruncUnit::Week => {
                // walk back to a Monday; 2000-01-03 was one
                let mut d = days;
                while (d - 2).rem_euclid(7) != 0 {
                    d -= 1;
                }
                d * USECS_PER_DAY
            }
            TruncUnit::Month => reference_days(y, m, 1) * USECS_PER_DAY,
            TruncUnit::Quarter => reference_days(y, (m - 1) / 3 * 3 + 1, 1) * USECS_PER_DAY,
            TruncUnit::Year => reference_days(y, 1, 1) * USECS_PER_DAY,
        }
    }

    #[test]
    fn civil_round_trip_and_reference() {
        for days in (-1_600_000..2_000_000).step_by(997).chain(-800..800) {
            let (y, m) = civil_from_days(days);
            let (ry, rm, rd) = reference_civil(days);
            assert_eq!((y, m), (ry, rm), "day {days}");
            assert_eq!(days_from_civil(ry, rm, rd), days);
        }
    }

    /// The tests' generator from `seed` (not 0), as a closure.
    fn xorshift(seed: u64) -> impl FnMut() -> u64 {
        let mut rng = crate::testing::Rng(seed);
        move || rng.next()
    }

    #[test]
    fn trunc_matches_the_reference() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        for _ in 0..4_000 {
            // mostly within a few centuries of 2000, some across the whole range
            let r = next();
            let t = if r % 4 == 0 {
                LOW + (r >> 2) as i64 % (HIGH / 4 - LOW)
            } else {
                (r as i64) % (300 * 365 * USECS_PER_DAY)
            };
            for unit in UNITS {
                assert_eq!(
                    trunc(unit, t),
                    Some(reference_trunc(unit, t)),
                    "{unit:?} of {t}"
                );
            }
        }
        // the ends of the range, and edges of days before 2000
        assert_eq!(trunc(TruncUnit::Day, -1), Some(-USECS_PER_DAY));
        assert_eq!(trunc(TruncUnit::Second, -1), Some(-USECS_PER_SEC));
        assert_eq!(trunc(TruncUnit::Year, HIGH), None);
        assert_eq!(trunc(TruncUnit::Year, LOW - 1), None);
        assert_eq!(trunc(TruncUnit::Hour, i64::MAX), None);
        assert_eq!(trunc(TruncUnit::Hour, i64::MIN), None);
        // 2016-01-12 11:28:37.5 → 11:28 and the Monday 2016-01-11
        let t = reference_days(2016, 1, 12) * USECS_PER_DAY
            + (11 * 3600 + 28 * 60 + 37) * USECS_PER_SEC
            + 500_000;
        assert_eq!(
            trunc(TruncUnit::Minute, t),
            Some(t - 37 * USECS_PER_SEC - 500_000)
        );
        assert_eq!(
            trunc(TruncUnit::Week, t),
            Some(reference_days(2016, 1, 11) * USECS_PER_DAY)
        );
    }

    /// Every value of a bucket's span gets that bucket, from trunc, trunc_at_offset and bin,
    /// and the values just outside it (where the span is the whole bucket) do not.
    #[test]
    fn a_span_holds_the_values_of_its_bucket() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        let m = 60 * USECS_PER_SEC;
        for i in 0..3_000 {
            let r = next();
            // mostly near 2000, some near the ends of the range
            let t = match i % 10 {
                0 => LOW + (r % (3 * USECS_PER_DAY as u64)) as i64,
                1 => HIGH - 1 - (r % (3 * USECS_PER_DAY as u64)) as i64,
                _ => (r as i64) % (300 * 365 * USECS_PER_DAY),
            };
            let offset = [0, 19_800, -36_000, 86_399][(next() % 4) as usize];
            let origin = (next() % (1 << 40)) as i64 - (1 << 39);
            let stride = [m, 15 * m, 7 * USECS_PER_DAY + 5][(next() % 3) as usize];
            let mut cases: Vec<(Box<dyn Fn(i64) -> Option<i64>>, i64)> =
                vec![(Box::new(move |v| bin(stride, v, origin)), stride)];
            for unit in UNITS.into_iter().filter(|u| u.fixed_width().is_some()) {
                let width = unit.fixed_width().unwrap();
                cases.push((Box::new(move |v| trunc(unit, v)), width));
                cases.push((Box::new(move |v| trunc_at_offset(unit, v, offset)), width));
            }
            for (f, width) in &cases {
                let Some(b) = f(t) else { continue };
                let (lo, hi) = span(b, *width);
                if lo >= hi {
                    continue; // a bucket entirely in the day cut off at an end
                }
                let inside = lo + (next() % (hi - lo) as u64) as i64;
                for v in [lo, hi - 1, inside] {
                    assert_eq!(f(v), Some(b), "{v} in the span [{lo}, {hi}) of {b}");
                }
                if lo == b && f(lo - 1).is_some() {
                    assert_ne!(f(lo - 1), Some(b));
                }
                if hi == b + width && f(hi).is_some() {
                    assert_ne!(f(hi), Some(b));
                }
            }
        }
        assert_eq!(TruncUnit::Month.fixed_width(), None);
        assert_eq!(TruncUnit::Hour.fixed_width(), Some(3600 * USECS_PER_SEC));
    }

    #[test]
    fn offsets() {
        // +05:30: 2000-01-01 20:00 UTC is 01:30 the next day locally
        let t = 20 * 3600 * USECS_PER_SEC;
        let ist = 5 * 3600 + 1800;
        assert_eq!(
            trunc_at_offset(TruncUnit::Day, t, ist),
            Some(USECS_PER_DAY - ist * USECS_PER_SEC)
        );
        assert_eq!(
            trunc_at_offset(TruncUnit::Hour, t, ist),
            Some(t - 1800 * USECS_PER_SEC)
        );
        assert_eq!(
            trunc_at_offset(TruncUnit::Hour, t, 0),
            trunc(TruncUnit::Hour, t)
        );
        assert_eq!(trunc_at_offset(TruncUnit::Hour, t, 90_000), None);
    }

    #[test]
    fn bins() {
        // the bin of width 15 minutes from origin 2000-01-01 00:02, either side of the origin
        let (m, o) = (60 * USECS_PER_SEC, 2 * 60 * USECS_PER_SEC);
        assert_eq!(bin(15 * m, o + 16 * m, o), Some(o + 15 * m));
        assert_eq!(bin(15 * m, o, o), Some(o));
        assert_eq!(bin(15 * m, o - 1, o), Some(o - 15 * m));
        assert_eq!(bin(15 * m, o - 15 * m, o), Some(o - 15 * m));
        // against a loop
        for t in (-100 * m..100 * m).step_by(7_777_777) {
            let mut start = o;
            while start > t {
                start -= 15 * m;
            }
            while start + 15 * m <= t {
                start += 15 * m;
            }
            assert_eq!(bin(15 * m, t, o), Some(start), "{t}");
        }
        assert_eq!(bin(0, 0, 0), None);
        assert_eq!(bin(-5, 0, 0), None);
        assert_eq!(bin(m, i64::MAX, 0), None);
        assert_eq!(bin(m, 0, i64::MIN), None);
    }
}

//! TSBS cpu-only-like columns for the codec's tests and benches: rows in time-major order,
//! `hosts` hosts reporting every 10 s from 2016-01-01, integer-valued clamped random-walk
//! metrics in float8. (The full TSBS generator for the database benchmark lives in benches/.)

#![allow(dead_code)]

use super::Rng;
use pg_columnar_codec::ByteStrings;

/// 2016-01-01 00:00:00 UTC in PostgreSQL's timestamp representation (µs since 2000-01-01).
pub const START_US: i64 = 504_921_600_000_000;
pub const STEP_US: i64 = 10_000_000;

pub struct TsbsColumns {
    pub time: Vec<i64>,
    pub hostname: ByteStrings,
    pub usage_user: Vec<f64>,
}

/// A standard normal deviate (Box–Muller) from two uniforms.
fn normal(rng: &mut Rng) -> f64 {
    let u1 = ((rng.next() >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
    let u2 = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

pub fn generate(rows: usize, hosts: usize, seed: u64) -> TsbsColumns {
    let mut rng = Rng(seed);
    let mut walk: Vec<f64> = (0..hosts).map(|_| (rng.next() % 100) as f64).collect();
    let mut cols = TsbsColumns {
        time: Vec::with_capacity(rows),
        hostname: ByteStrings::new(),
        usage_user: Vec::with_capacity(rows),
    };
    for i in 0..rows {
        let host = i % hosts;
        cols.time.push(START_US + (i / hosts) as i64 * STEP_US);
        cols.hostname.push(format!("host_{host}").as_bytes());
        walk[host] = (walk[host] + normal(&mut rng)).clamp(0.0, 100.0);
        cols.usage_user.push(walk[host].round());
    }
    cols
}

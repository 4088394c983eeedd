//! A TSBS cpu-only generator (our own code, modelled on TSBS's `cpu-only` use case): `hosts`
//! hosts, each reporting one row every 10 s from 2016-01-01 00:00:00 UTC, with TSBS's tag
//! set and ten CPU metrics that follow a clamped random walk (start uniform in [0, 100),
//! step N(0, 1), clamped to [0, 100]) and are emitted as integers. Rows are in time-major
//! order (all hosts at t, then all at t + 10 s), as TSBS writes them. Deterministic for a
//! seed. Output: CSV for COPY into the TimescaleDB-style schema, see [`SCHEMA_SQL`].
//! Beside it, a decimal sensor table ([`write_sensors`], [`SENSORS_SCHEMA_SQL`]): the same
//! hosts and times with four metrics that carry 1 to 3 decimals.

use std::io::{self, Write};

pub const METRICS: [&str; 10] = [
    "usage_user",
    "usage_system",
    "usage_idle",
    "usage_nice",
    "usage_iowait",
    "usage_irq",
    "usage_softirq",
    "usage_steal",
    "usage_guest",
    "usage_guest_nice",
];

const REGIONS: [&str; 9] = [
    "us-east-1",
    "us-west-1",
    "us-west-2",
    "eu-west-1",
    "eu-central-1",
    "ap-southeast-1",
    "ap-southeast-2",
    "ap-northeast-1",
    "sa-east-1",
];
const OSES: [&str; 3] = ["Ubuntu16.10", "Ubuntu16.04LTS", "Ubuntu15.10"];
const ARCHES: [&str; 2] = ["x64", "x86"];
const TEAMS: [&str; 4] = ["SF", "NYC", "LON", "CHI"];
const ENVIRONMENTS: [&str; 3] = ["production", "staging", "test"];

/// The TimescaleDB-style schema the CSVs load into (table access method left to the caller).
pub const SCHEMA_SQL: &str = "\
CREATE TABLE tags (id int PRIMARY KEY, hostname text, region text, datacenter text, rack text, \
os text, arch text, team text, service text, service_version text, service_environment text);
CREATE TABLE cpu (time timestamptz, tags_id int, hostname text, usage_user float8, \
usage_system float8, usage_idle float8, usage_nice float8, usage_iowait float8, usage_irq float8, \
usage_softirq float8, usage_steal float8, usage_guest float8, usage_guest_nice float8, \
additional_tags jsonb)";

/// 2016-01-01 00:00:00 UTC as Unix seconds.
pub const START_UNIX: i64 = 1_451_606_400;
pub const STEP_SECONDS: i64 = 10;

/// splitmix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Standard normal (Box–Muller).
    fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.unit(); // (0, 1]
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

pub struct Host {
    pub id: usize,
    pub tags: [String; 10],
}

/// The hosts and their tags (tags_id = host index + 1).
pub fn hosts(count: usize, seed: u64) -> Vec<Host> {
    let mut r = Rng(seed ^ 0x7A65);
    (0..count)
        .map(|i| {
            let region = REGIONS[r.below(REGIONS.len() as u64) as usize];
            let datacenter = format!("{region}{}", (b'a' + r.below(3) as u8) as char);
            Host {
                id: i + 1,
                tags: [
                    format!("host_{i}"),
                    region.to_string(),
                    datacenter,
                    r.below(100).to_string(),
                    OSES[r.below(3) as usize].to_string(),
                    ARCHES[r.below(2) as usize].to_string(),
                    TEAMS[r.below(4) as usize].to_string(),
                    r.below(20).to_string(),
                    r.below(2).to_string(),
                    ENVIRONMENTS[r.below(3) as usize].to_string(),
                ],
            }
        })
        .collect()
}

/// Writes the tags CSV (one line per host).
pub fn write_tags(hosts: &[Host], out: &mut impl Write) -> io::Result<()> {
    for h in hosts {
        write!(out, "{}", h.id)?;
        for t in &h.tags {
            write!(out, ",{t}")?;
        }
        out.write_all(b"\n")?;
    }
    Ok(())
}

/// `YYYY-MM-DD HH:MM:SS+00` for Unix seconds (proleptic Gregorian, days-from-civil inverse).
pub fn format_utc(unix: i64, out: &mut Vec<u8>) {
    let days = unix.div_euclid(86_400);
    let secs = unix.rem_euclid(86_400);
    // civil_from_days (H. Hinnant)
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + (m <= 2) as i64;
    let _ = write!(
        out,
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}+00",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    );
}

/// Streams `rows` cpu rows (time-major over `hosts`) as CSV to `out`; `progress` is called
/// with the number of rows written after every batch.
pub fn write_cpu(
    hosts: &[Host],
    rows: u64,
    seed: u64,
    out: &mut impl Write,
    progress: impl FnMut(u64),
) -> io::Result<()> {
    let mut r = Rng(seed);
    let n = hosts.len() as u64;
    let mut walk: Vec<[f64; 10]> = (0..n)
        .map(|_| std::array::from_fn(|_| 100.0 * r.unit()))
        .collect();
    time_major(hosts.len(), rows, out, progress, |h, line| {
        let host = &hosts[h];
        let _ = write!(line, ",{},{}", host.id, host.tags[0]);
        for v in walk[h].iter_mut() {
            *v = (*v + r.normal()).clamp(0.0, 100.0);
            let _ = write!(line, ",{}", v.round() as i64);
        }
        line.extend_from_slice(b",\n"); // additional_tags: NULL
    })
}

/// Streams `rows` CSV rows in time-major order over `hosts` hosts (all hosts at t, then all
/// at t + 10 s, from 2016-01-01): each line is the time, then what `fields` writes for the
/// host (its index) after it, the newline included. `progress` is called with the number of
/// rows written after every million and at the end.
fn time_major(
    hosts: usize,
    rows: u64,
    out: &mut impl Write,
    mut progress: impl FnMut(u64),
    mut fields: impl FnMut(usize, &mut Vec<u8>),
) -> io::Result<()> {
    let n = hosts as u64;
    let mut line = Vec::with_capacity(256);
    let mut time = Vec::with_capacity(32);
    for row in 0..rows {
        let h = (row % n) as usize;
        if h == 0 {
            time.clear();
            format_utc(START_UNIX + (row / n) as i64 * STEP_SECONDS, &mut time);
        }
        line.clear();
        line.extend_from_slice(&time);
        fields(h, &mut line);
        out.write_all(&line)?;
        if row % 1_000_000 == 999_999 {
            progress(row + 1);
        }
    }
    if rows % 1_000_000 != 0 {
        progress(rows);
    }
    Ok(())
}

/// The decimal sensor table (`--sensors`): what real sensors, prices and meters send, where
/// TSBS's metrics are whole numbers.
pub const SENSORS_SCHEMA_SQL: &str = "\
CREATE TABLE sensors (time timestamptz, host_id int, temperature float8, humidity float8, \
price float8, voltage float8)";

/// The sensor metrics: (decimals, first value's range in units of the last decimal, step's
/// standard deviation in those units, clamp range in those units).
const SENSORS: [(u32, (i64, i64), f64, (i64, i64)); 4] = [
    (2, (1_500, 3_000), 3.0, (-4_000, 6_000)), // temperature, °C: 21.37
    (1, (300, 700), 2.0, (0, 1_000)),          // humidity, %: 54.8
    (2, (1_000, 50_000), 5.0, (1, 10_000_000)), // price: 123.45
    (3, (228_000, 232_000), 20.0, (200_000, 260_000)), // voltage, V: 230.934
];

/// Streams `rows` sensor rows (time-major over `hosts` hosts, one row each every 10 s from
/// 2016-01-01, host_id 1..hosts) as CSV to `out`. Each metric is a random walk in units of
/// its last decimal (a normal step, clamped), printed as the shortest decimal that reads
/// back as the same float8: what a sensor's or an application's decimal value is once
/// stored. `progress` as for [`write_cpu`]. Deterministic for a seed.
pub fn write_sensors(
    hosts: usize,
    rows: u64,
    seed: u64,
    out: &mut impl Write,
    progress: impl FnMut(u64),
) -> io::Result<()> {
    let mut r = Rng(seed ^ 0x5E45);
    let mut walk: Vec<[i64; 4]> = (0..hosts)
        .map(|_| {
            std::array::from_fn(|m| {
                let (lo, hi) = SENSORS[m].1;
                lo + r.below((hi - lo) as u64) as i64
            })
        })
        .collect();
    let scale: [f64; 4] = std::array::from_fn(|m| 10f64.powi(SENSORS[m].0 as i32));
    time_major(hosts, rows, out, progress, |h, line| {
        let _ = write!(line, ",{}", h + 1);
        for (m, v) in walk[h].iter_mut().enumerate() {
            let (_, _, sd, (lo, hi)) = SENSORS[m];
            *v = (*v + (sd * r.normal()).round() as i64).clamp(lo, hi);
            // the integer over a power of ten, one correctly rounded division: the float8
            // nearest the decimal, which Display prints as that decimal
            let _ = write!(line, ",{}", *v as f64 / scale[m]);
        }
        line.push(b'\n');
    })
}

/// How the queries reach hosts.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum HostForm {
    /// Through the table's own `hostname` column: `hostname IN ('host_7')`.
    Constant,
    /// As TSBS's TimescaleDB queries do by default (`--use-tags`): through the `tags` table,
    /// `tags_id IN (SELECT id FROM tags WHERE hostname IN ('host_7'))`; double-groupby joins
    /// its per-`tags_id` averages to `tags` for the hostname, and lastpoint takes each tag's
    /// last row through a LATERAL subquery.
    Tags,
}

/// The TSBS cpu-only query set, in its TimescaleDB SQL form adapted to a table named `table`
/// (`time_bucket` becomes `date_trunc`, and every query orders its whole result so results
/// of two engines can be compared row by row), reaching hosts as `form` says. Hosts and time
/// windows are drawn from `seed` within the data `rows` rows over `hosts` hosts cover, as
/// TSBS draws them at random; both forms draw the same.
pub fn queries(
    table: &str,
    hosts: usize,
    rows: u64,
    seed: u64,
    form: HostForm,
) -> Vec<(&'static str, String)> {
    let mut r = Rng(seed ^ 0x9E3);
    let span = (rows / hosts.max(1) as u64) as i64 * STEP_SECONDS; // seconds of data
    let window = |hours: i64, r: &mut Rng| -> (String, String) {
        let len = hours * 3600;
        let room = (span - len).max(0) / 60; // whole minutes the window may start at
        let start = START_UNIX + 60 * (r.next() % (room as u64 + 1)) as i64;
        let (mut a, mut b) = (Vec::new(), Vec::new());
        format_utc(start, &mut a);
        format_utc(start + len, &mut b);
        (String::from_utf8(a).unwrap(), String::from_utf8(b).unwrap())
    };
    // the condition that selects `n` hosts drawn at random
    let pick_hosts = |n: usize, r: &mut Rng| -> String {
        let mut chosen: Vec<usize> = Vec::new();
        while chosen.len() < n.min(hosts) {
            let h = r.below(hosts as u64) as usize;
            if !chosen.contains(&h) {
                chosen.push(h);
            }
        }
        let names = chosen
            .iter()
            .map(|h| format!("'host_{h}'"))
            .collect::<Vec<_>>()
            .join(", ");
        match form {
            HostForm::Constant => format!("hostname IN ({names})"),
            HostForm::Tags => {
                format!("tags_id IN (SELECT id FROM tags WHERE hostname IN ({names}))")
            }
        }
    };
    let maxes = |m: usize| {
        METRICS[..m]
            .iter()
            .map(|c| format!("max({c}) AS max_{c}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let avgs = |m: usize| {
        METRICS[..m]
            .iter()
            .map(|c| format!("avg({c}) AS mean_{c}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = Vec::new();
    for (name, metrics, nhosts, hours) in [
        ("single-groupby-1-1-1", 1, 1, 1),
        ("single-groupby-1-1-12", 1, 1, 12),
        ("single-groupby-1-8-1", 1, 8, 1),
        ("single-groupby-5-1-1", 5, 1, 1),
        ("single-groupby-5-1-12", 5, 1, 12),
        ("single-groupby-5-8-1", 5, 8, 1),
    ] {
        let (a, b) = window(hours, &mut r);
        let hs = pick_hosts(nhosts, &mut r);
        out.push((
            name,
            format!(
                "SELECT date_trunc('minute', time) AS minute, {} FROM {table} WHERE {hs} \
             AND time >= '{a}' AND time < '{b}' GROUP BY minute ORDER BY minute",
                maxes(metrics)
            ),
        ));
    }
    for (name, nhosts) in [("cpu-max-all-1", 1), ("cpu-max-all-8", 8)] {
        let (a, b) = window(8, &mut r);
        let hs = pick_hosts(nhosts, &mut r);
        out.push((
            name,
            format!(
                "SELECT date_trunc('hour', time) AS hour, {} FROM {table} WHERE {hs} \
             AND time >= '{a}' AND time < '{b}' GROUP BY hour ORDER BY hour",
                maxes(10)
            ),
        ));
    }
    for (name, metrics) in [
        ("double-groupby-1", 1),
        ("double-groupby-5", 5),
        ("double-groupby-all", 10),
    ] {
        let (a, b) = window(12, &mut r);
        let sql = match form {
            HostForm::Constant => format!(
                "SELECT date_trunc('hour', time) AS hour, hostname, {} FROM {table} \
                 WHERE time >= '{a}' AND time < '{b}' GROUP BY hour, hostname ORDER BY hour, hostname",
                avgs(metrics)
            ),
            HostForm::Tags => format!(
                "WITH cpu_avg AS (SELECT date_trunc('hour', time) AS hour, tags_id, {} FROM {table} \
                 WHERE time >= '{a}' AND time < '{b}' GROUP BY hour, tags_id) \
                 SELECT hour, tags.hostname, {} FROM cpu_avg JOIN tags ON cpu_avg.tags_id = tags.id \
                 ORDER BY hour, tags.hostname",
                avgs(metrics),
                METRICS[..metrics]
                    .iter()
                    .map(|c| format!("mean_{c}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        out.push((name, sql));
    }
    let (a, b) = window(12, &mut r);
    out.push(("high-cpu-all", format!(
        "SELECT * FROM {table} WHERE usage_user > 90.0 AND time >= '{a}' AND time < '{b}' ORDER BY time, hostname")));
    let (a, b) = window(12, &mut r);
    let h = pick_hosts(1, &mut r);
    out.push(("high-cpu-1", format!(
        "SELECT * FROM {table} WHERE usage_user > 90.0 AND time >= '{a}' AND time < '{b}' AND {h} ORDER BY time")));
    out.push((
        "lastpoint",
        match form {
            HostForm::Constant => {
                format!("SELECT DISTINCT ON (hostname) * FROM {table} ORDER BY hostname, time DESC")
            }
            HostForm::Tags => format!(
                "SELECT DISTINCT ON (t.hostname) * FROM tags t INNER JOIN LATERAL \
                 (SELECT * FROM {table} c WHERE c.tags_id = t.id ORDER BY time DESC LIMIT 1) AS b \
                 ON true ORDER BY t.hostname, b.time DESC"
            ),
        },
    ));
    let (_, b) = window(1, &mut r);
    out.push(("groupby-orderby-limit", format!(
        "SELECT date_trunc('minute', time) AS minute, max(usage_user) FROM {table} WHERE time < '{b}' \
         GROUP BY minute ORDER BY minute DESC LIMIT 5")));
    out
}

/// Queries that reach the `tags` dimension the way dashboards and reports do, beyond TSBS's
/// set, over a 12-hour window drawn from `seed` as [`queries`] draws its windows: a join
/// filtered on a tags attribute (one region), the same as `EXISTS`, and
/// `count(DISTINCT hostname)`.
pub fn dimension_queries(
    table: &str,
    hosts: usize,
    rows: u64,
    seed: u64,
) -> Vec<(&'static str, String)> {
    let mut r = Rng(seed ^ 0x7A65);
    let span = (rows / hosts.max(1) as u64) as i64 * STEP_SECONDS;
    let len = 12 * 3600;
    let room = (span - len).max(0) / 60;
    let start = START_UNIX + 60 * (r.next() % (room as u64 + 1)) as i64;
    let (mut a, mut b) = (Vec::new(), Vec::new());
    format_utc(start, &mut a);
    format_utc(start + len, &mut b);
    let (a, b) = (String::from_utf8(a).unwrap(), String::from_utf8(b).unwrap());
    let region = REGIONS[r.below(REGIONS.len() as u64) as usize];
    vec![
        (
            "join-region-12",
            format!(
                "SELECT tags.hostname, max(usage_user) AS max_usage_user, avg(usage_system) AS mean_usage_system \
                 FROM {table} JOIN tags ON {table}.tags_id = tags.id WHERE tags.region = '{region}' \
                 AND time >= '{a}' AND time < '{b}' GROUP BY tags.hostname ORDER BY tags.hostname"
            ),
        ),
        (
            "exists-region-12",
            format!(
                "SELECT date_trunc('hour', time) AS hour, max(usage_user) AS max_usage_user FROM {table} \
                 WHERE EXISTS (SELECT 1 FROM tags WHERE tags.id = {table}.tags_id AND tags.region = '{region}') \
                 AND time >= '{a}' AND time < '{b}' GROUP BY hour ORDER BY hour"
            ),
        ),
        (
            "count-distinct-hosts-12",
            format!(
                "SELECT count(DISTINCT hostname) FROM {table} WHERE time >= '{a}' AND time < '{b}'"
            ),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu(rows: u64, hosts_n: usize, seed: u64) -> String {
        let h = hosts(hosts_n, seed);
        let mut out = Vec::new();
        write_cpu(&h, rows, seed, &mut out, |_| {}).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn timestamps_are_utc_and_exact() {
        let mut b = Vec::new();
        format_utc(START_UNIX, &mut b);
        assert_eq!(b, b"2016-01-01 00:00:00+00");
        b.clear();
        format_utc(START_UNIX + 59 * 86_400 + 3_661, &mut b); // leap year: Feb 29
        assert_eq!(b, b"2016-02-29 01:01:01+00");
        b.clear();
        format_utc(951_782_400, &mut b);
        assert_eq!(b, b"2000-02-29 00:00:00+00");
    }

    #[test]
    fn rows_are_time_major_deterministic_and_in_range() {
        let a = cpu(1000, 100, 7);
        assert_eq!(a, cpu(1000, 100, 7), "same seed, same bytes");
        assert_ne!(a, cpu(1000, 100, 8), "another seed, other data");
        let lines: Vec<&str> = a.lines().collect();
        assert_eq!(lines.len(), 1000);
        for (i, l) in lines.iter().enumerate() {
            let f: Vec<&str> = l.split(',').collect();
            assert_eq!(f.len(), 14, "{l}");
            assert_eq!(f[2], format!("host_{}", i % 100));
            assert_eq!(f[1], (i % 100 + 1).to_string());
            let mut t = Vec::new();
            format_utc(START_UNIX + (i / 100) as i64 * 10, &mut t);
            assert_eq!(f[0].as_bytes(), &t[..]);
            for v in &f[3..13] {
                let x: i64 = v.parse().unwrap();
                assert!((0..=100).contains(&x), "{v}");
            }
            assert_eq!(f[13], "");
        }
    }

    #[test]
    fn walks_move_by_small_steps() {
        // consecutive readings of one host differ by a N(0,1) step: after rounding, almost
        // always by at most 3
        let a = cpu(100 * 200, 100, 1);
        let rows: Vec<Vec<i64>> = a
            .lines()
            .map(|l| {
                l.split(',')
                    .skip(3)
                    .take(10)
                    .map(|v| v.parse().unwrap())
                    .collect()
            })
            .collect();
        let mut big = 0;
        for i in 100..rows.len() {
            for m in 0..10 {
                if (rows[i][m] - rows[i - 100][m]).abs() > 3 {
                    big += 1;
                }
            }
        }
        assert!(big < rows.len() * 10 / 500, "{big} large steps");
    }

    #[test]
    fn the_query_set_is_complete_and_deterministic() {
        let q = queries("cpu", 100, 1_000_000, 5, HostForm::Constant);
        let names: Vec<&str> = q.iter().map(|(n, _)| *n).collect();
        assert_eq!(names.len(), 15);
        for n in [
            "single-groupby-1-1-1",
            "cpu-max-all-8",
            "double-groupby-all",
            "high-cpu-1",
            "lastpoint",
            "groupby-orderby-limit",
        ] {
            assert!(names.contains(&n), "{n}");
        }
        assert_eq!(q, queries("cpu", 100, 1_000_000, 5, HostForm::Constant));
        assert_ne!(q, queries("cpu", 100, 1_000_000, 6, HostForm::Constant));
        // windows stay inside the data: 1 M rows of 100 hosts span 100,000 s from the start
        for (_, sql) in &q {
            for part in sql
                .split('\'')
                .skip(1)
                .step_by(2)
                .filter(|p| p.starts_with("2016"))
            {
                assert!(
                    part.as_bytes() <= b"2016-01-02 03:46:40+00".as_slice(),
                    "{part} in {sql}"
                );
            }
        }
        assert!(q[2].1.matches("'host_").count() == 8);
    }

    #[test]
    fn the_tags_form_draws_the_same_hosts_and_windows() {
        let c = queries("cpu", 100, 1_000_000, 5, HostForm::Constant);
        let t = queries("cpu", 100, 1_000_000, 5, HostForm::Tags);
        assert_eq!(c.len(), t.len());
        let quoted = |sql: &str| -> Vec<String> {
            sql.split('\'')
                .skip(1)
                .step_by(2)
                .map(str::to_string)
                .collect()
        };
        for ((name, a), (name_t, b)) in c.iter().zip(&t) {
            assert_eq!(name, name_t);
            assert_eq!(quoted(a), quoted(b), "{name}");
            if a.contains("hostname IN (") {
                assert!(
                    b.contains("tags_id IN (SELECT id FROM tags WHERE hostname IN ("),
                    "{b}"
                );
            }
        }
        for n in ["double-groupby-1", "lastpoint"] {
            let (_, b) = t.iter().find(|(x, _)| *x == n).unwrap();
            assert!(b.contains("JOIN tags") || b.contains("FROM tags"), "{b}");
        }
    }

    #[test]
    fn tags_cover_every_host() {
        let h = hosts(100, 3);
        let mut out = Vec::new();
        write_tags(&h, &mut out).unwrap();
        let s = String::from_utf8(out).unwrap();
        assert_eq!(s.lines().count(), 100);
        assert!(s.lines().all(|l| l.split(',').count() == 11));
    }
}

//! tsbs-gen --rows N [--hosts H] [--seed S] [--sensors] --out DIR
//! Writes DIR/tags.csv and DIR/cpu.csv (TSBS cpu-only, see the library docs), or with
//! `--sensors` DIR/sensors.csv (the decimal sensor table). Progress goes to stderr. `--schema` prints the tables to load them into; `--queries TABLE` prints the
//! TSBS query set against TABLE for that data (one `-- name` line, then the query); with
//! `--tags`, in TSBS's TimescaleDB form that reaches hosts through the `tags` table, followed
//! by three queries of the dimension (a join on a region, the same as EXISTS, count(DISTINCT)).

use pg_columnar_tsbs::{
    dimension_queries, hosts, queries, write_cpu, write_sensors, write_tags, HostForm, SCHEMA_SQL,
    SENSORS_SCHEMA_SQL,
};
use std::io::{BufWriter, Write};
use std::time::Instant;

fn main() {
    let mut rows: u64 = 1_000_000;
    let mut hosts_n: usize = 100;
    let mut seed: u64 = 2016;
    let mut out_dir: Option<String> = None;
    let mut queries_for: Option<String> = None;
    let mut form = HostForm::Constant;
    let mut sensors = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || {
            args.next()
                .unwrap_or_else(|| usage(&format!("{a} needs a value")))
        };
        match a.as_str() {
            "--rows" => {
                rows = value()
                    .parse()
                    .unwrap_or_else(|_| usage("--rows takes a number"))
            }
            "--hosts" => {
                hosts_n = value()
                    .parse()
                    .unwrap_or_else(|_| usage("--hosts takes a number"))
            }
            "--seed" => {
                seed = value()
                    .parse()
                    .unwrap_or_else(|_| usage("--seed takes a number"))
            }
            "--out" => out_dir = Some(value()),
            "--queries" => queries_for = Some(value()),
            "--tags" => form = HostForm::Tags,
            "--sensors" => sensors = true,
            "--schema" => {
                println!("{SCHEMA_SQL};\n{SENSORS_SCHEMA_SQL};");
                return;
            }
            _ => usage(&format!("unknown argument {a}")),
        }
    }
    if hosts_n == 0 {
        usage("--hosts must be at least 1");
    }
    if let Some(table) = queries_for {
        for (name, sql) in queries(&table, hosts_n, rows, seed, form) {
            println!("-- {name}\n{sql};");
        }
        if form == HostForm::Tags {
            for (name, sql) in dimension_queries(&table, hosts_n, rows, seed) {
                println!("-- {name}\n{sql};");
            }
        }
        return;
    }
    let dir = out_dir.unwrap_or_else(|| usage("--out DIR is required"));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| fail(&format!("{dir}: {e}")));
    let create = |name: &str| {
        let p = format!("{dir}/{name}");
        BufWriter::with_capacity(
            1 << 20,
            std::fs::File::create(&p).unwrap_or_else(|e| fail(&format!("{p}: {e}"))),
        )
    };
    let t0 = Instant::now();
    let report = |done: u64| {
        let secs = t0.elapsed().as_secs_f64();
        eprint!(
            "\rtsbs-gen: {done}/{rows} rows ({:.0}%, {:.1} M rows/s)",
            100.0 * done as f64 / rows.max(1) as f64,
            done as f64 / secs.max(1e-9) / 1e6
        );
    };
    if sensors {
        let mut out = create("sensors.csv");
        write_sensors(hosts_n, rows, seed, &mut out, report)
            .and_then(|_| out.flush())
            .unwrap_or_else(|e| fail(&e.to_string()));
        eprintln!();
        return;
    }
    let h = hosts(hosts_n, seed);
    let mut tags = create("tags.csv");
    write_tags(&h, &mut tags)
        .and_then(|_| tags.flush())
        .unwrap_or_else(|e| fail(&e.to_string()));
    let mut cpu = create("cpu.csv");
    write_cpu(&h, rows, seed, &mut cpu, report)
        .and_then(|_| cpu.flush())
        .unwrap_or_else(|e| fail(&e.to_string()));
    eprintln!();
}

fn usage(msg: &str) -> ! {
    eprintln!("tsbs-gen: {msg}\nusage: tsbs-gen --rows N [--hosts H] [--seed S] ([--sensors] --out DIR | --queries TABLE [--tags]) | --schema");
    std::process::exit(2)
}

fn fail(msg: &str) -> ! {
    eprintln!("tsbs-gen: {msg}");
    std::process::exit(1)
}

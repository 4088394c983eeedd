#!/usr/bin/env python3
"""A load into many partitions at once: the TSBS CSV COPYed into `cpu` partitioned by hash of
hostname into 64 partitions, every partition heap, or every partition pg_columnar.

Run by benches/run --partitions (release build, fresh cluster, default settings); this script
only talks to the server through psql.

Method: each load is one psql \\copy in a new session into freshly created tables; the
backend's peak private memory (RssAnon, sampled every 10 ms) and peak RSS (VmHWM) are read
from /proc (tsbs_bench.session_peak_kib), and the load is timed by the client's clock around
the \\copy. Engines alternate round by round; medians of --runs rounds. pg_columnar runs twice:
with the default pg_columnar.write_buffer_memory, and with it at its maximum, which holds
every partition's rows until a stripe is full or the statement ends (the writer's behaviour
before the setting existed).
"""
import time

from tsbs_bench import cpu_schema, median, parse_args, psql, scalar, session_peak_kib, write_markdown

PARTITIONS = 64
ENGINES = {
    "heap": None,
    "pg_columnar": None,
    "pg_columnar, write_buffer_memory unlimited": "SET pg_columnar.write_buffer_memory = 2147483647;",
}


def create(args, engine, schema):
    ddl = schema.replace("CREATE TABLE cpu ", "CREATE TABLE pcpu ").rstrip().rstrip(";") + " PARTITION BY HASH (hostname);\n"
    using = "" if engine == "heap" else " USING pg_columnar"
    parts = "".join(
        f"CREATE TABLE pcpu_{i} PARTITION OF pcpu FOR VALUES WITH (MODULUS {PARTITIONS}, REMAINDER {i}){using};\n"
        for i in range(PARTITIONS))
    psql(args, "DROP TABLE IF EXISTS pcpu;\n" + ddl + parts + "CHECKPOINT;\n")


def load(args, engine, schema):
    create(args, engine, schema)
    setting = ENGINES[engine] or ""
    t0 = time.monotonic()
    anon, hwm = session_peak_kib(args, setting + f"\\copy pcpu FROM '{args.data}/cpu.csv' (FORMAT csv)")
    seconds = time.monotonic() - t0
    stripes = 0 if engine == "heap" else int(scalar(
        args, "SELECT count(*) FROM pg_inherits i, pgcol.stripes(i.inhrelid) WHERE i.inhparent = 'pcpu'::regclass"))
    size = int(scalar(args, "SELECT sum(pg_total_relation_size(inhrelid)) FROM pg_inherits WHERE inhparent = 'pcpu'::regclass"))
    rows = int(scalar(args, "SELECT count(*) FROM pcpu"))
    if rows != args.rows:
        raise SystemExit(f"{engine}: {rows} rows loaded, {args.rows} expected")
    return {"anon": anon, "hwm": hwm, "seconds": seconds, "stripes": stripes, "size": size}


def main():
    args = parse_args()
    schema = cpu_schema(args)
    results = {e: [] for e in ENGINES}
    names = list(ENGINES)
    for r in range(args.runs):
        for e in (names if r % 2 == 0 else names[::-1]):
            results[e].append(load(args, e, schema))
    md = [f"| {args.rows:,} rows into {PARTITIONS} hash partitions, one \\copy, median of {args.runs} | "
          "peak private memory (RssAnon), MiB | peak RSS (VmHWM), MiB | seconds | stripes | size (bytes) |",
          "|---|---|---|---|---|---|"]
    for e in names:
        m = {k: median([x[k] for x in results[e]]) for k in results[e][0]}
        stripes = "" if e == "heap" else f"{m['stripes']:.0f}"
        md.append(f"| {e} | {m['anon'] / 1024:.0f} | {m['hwm'] / 1024:.0f} | {m['seconds']:.2f} | {stripes} | {m['size']:,.0f} |")
    psql(args, "DROP TABLE IF EXISTS pcpu;\n")
    write_markdown(args, md)


if __name__ == "__main__":
    main()

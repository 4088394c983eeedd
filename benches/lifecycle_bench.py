#!/usr/bin/env python3
"""The time-series lifecycle (benches/run --lifecycle): TSBS cpu-only in 12-hour range
partitions on `time`, all but the newest two converted to pg_columnar by
pgcol.convert_partitions, against the same rows in one pg_columnar table.

Run by benches/run --lifecycle (release build, fresh cluster, default settings); this script
only talks to the server through psql.

Tables, all loaded from the same CSV by one \\copy each (timed by the server's clock after a
CHECKPOINT):
  * cpu_sorted: one pg_columnar table with the sort key (tags_id, time);
  * cpu_life: partitioned by range on time, 12-hour partitions (the last one filled in
    part), every partition heap when loaded; then one CALL of pgcol.convert_partitions
    converts all but the newest two with the same sort key (timed);
  * cpu_heapparts: the same partitions, all heap (the control for the UPDATE).
Every table has the primary key (tags_id, time), as a lifecycle's row-wise partitions need one
for late corrections, and TSBS's index (hostname, time DESC) for the host name in the table;
cpu_life and cpu_sorted get them before the conversion.

Measured, engines alternating round by round, medians of --runs rounds:
  1. Queries: the 15 TSBS cpu-only queries in both forms (constants, and TSBS's own through
     `tags`) on cpu_life and on cpu_sorted, as benches/tsbs_bench.py times them (the second
     run in a new session; results compared row for row first). Issue #47's target: each
     within 1.5x of the one table.
  2. Conversion of one 12-hour partition against a COPY of the same rows: the newest full
     partition's rows are written to a CSV once; a round converts that partition with one
     CALL of pgcol.convert_partitions (server's clock, after a CHECKPOINT) and turns it back
     into heap (untimed), and COPYs the CSV into a fresh pg_columnar table with the same sort
     key and indexes (server's clock, after a CHECKPOINT). Target: no slower than the COPY.
  3. UPDATE of 1,000 rows of the newest full partition (heap on both; 10 hosts x 100
     consecutive rows, found through the primary key),
     in a transaction that rolls back, on cpu_life and on cpu_heapparts. Target: within 1.2x.
"""
import math

import tsbs_bench as tb
from tsbs_bench import copy_seconds, median, psql, scalar, server_seconds

HOURS = 12
START = "2016-01-01 00:00:00+00"
SORT_KEY = "tags_id, time"
PRIMARY_KEY = "tags_id, time"
# TSBS's own index when the host name is in the table (its loader's partition index with
# --in-table-partition-tag): DISTINCT ON (hostname) ... ORDER BY hostname, time DESC reads it
HOST_INDEX = "hostname, time DESC"
TABLES = {"one table": "cpu_sorted", "partitions": "cpu_life"}


def bound(i):
    return f"'{START}'::timestamptz + interval '{i * HOURS} hours'"


def partitioned(args, schema, name, parts):
    ddl = schema.replace("CREATE TABLE cpu ", f"CREATE TABLE {name} ").rstrip().rstrip(";") + " PARTITION BY RANGE (time);\n"
    ps = "".join(f"CREATE TABLE {name}_p{i:02} PARTITION OF {name} FOR VALUES FROM ({bound(i)}) TO ({bound(i + 1)});\n"
                 for i in range(parts))
    psql(args, f"DROP TABLE IF EXISTS {name};\n" + ddl + ps)


def convert_call(parts_before_cutoff):
    """The CALL converting every partition whose upper bound is at most the end of partition
    `parts_before_cutoff - 1` (older_than: now() minus that bound)."""
    return (f"CALL pgcol.convert_partitions('cpu_life', now() - ({bound(parts_before_cutoff)}), '{SORT_KEY}');\n")


def main():
    args = tb.parse_args()
    schema = tb.cpu_schema(args)
    seconds = args.rows / 100 * 10
    parts = math.ceil(seconds / (HOURS * 3600))
    newest_full = parts - 2 if seconds % (HOURS * 3600) else parts - 1
    csv = f"{args.data}/cpu.csv"

    psql(args, f"DROP TABLE IF EXISTS cpu_sorted;\n" + schema.replace("CREATE TABLE cpu ", "CREATE TABLE cpu_sorted ") +
         f"ALTER TABLE cpu_sorted SET ACCESS METHOD pg_columnar;\nALTER TABLE cpu_sorted SET (pg_columnar.sort_key = '{SORT_KEY}');\n")
    load = {"one table": copy_seconds(args, "cpu_sorted", csv)}
    partitioned(args, schema, "cpu_life", parts)
    load["partitions (heap)"] = copy_seconds(args, "cpu_life", csv)
    print(f"loaded: {load}", flush=True)
    # the primary key a lifecycle's row-wise partitions keep late corrections fast with; the
    # one table gets the same, so that the comparison is about the partitions alone
    psql(args, f"ALTER TABLE cpu_life ADD PRIMARY KEY ({PRIMARY_KEY});\n"
               f"ALTER TABLE cpu_sorted ADD PRIMARY KEY ({PRIMARY_KEY});\n"
               f"CREATE INDEX ON cpu_life ({HOST_INDEX});\n"
               f"CREATE INDEX ON cpu_sorted ({HOST_INDEX});\n")
    convert_all = server_seconds(args, convert_call(parts - 2))
    print(f"converted {parts - 2} partitions in {convert_all:.1f} s", flush=True)
    psql(args, "VACUUM ANALYZE cpu_sorted; VACUUM ANALYZE cpu_life;")
    layout = psql(args, "SELECT access_method, count(*), sum(rows), sum(bytes) FROM pgcol.partitions('cpu_life') "
                        "GROUP BY 1 ORDER BY 1;").split()
    sizes = {t: int(scalar(args, f"SELECT sum(pg_total_relation_size(relid)) FROM "
                              f"(SELECT relid FROM pg_partition_tree('{t}') UNION SELECT '{t}'::regclass) tree"))
             for t in TABLES.values()}

    # 1. queries
    engines = list(TABLES)
    rows_q = []
    for tags in (False, True):
        if tags:
            schema_all = tb.subprocess.run([args.tsbs_gen, "--schema"], capture_output=True, text=True, check=True).stdout
            tags_schema = "\n".join(l for l in schema_all.splitlines() if l.startswith("CREATE TABLE tags ")) + "\n"
            psql(args, "DROP TABLE IF EXISTS tags;\n" + tags_schema)
            psql(args, "", session_cmds=f"\\copy tags FROM '{args.data}/tags.csv' (FORMAT csv)\nANALYZE tags;\n")
        for name, sql in tb.queries(args, tags=tags):
            label = name + (" (tags)" if tags else "")
            med, _, sc = tb.interleaved(args, label, {e: sql.replace("TABLE", TABLES[e]) for e in engines}, engines)
            rows_q.append((label, med, sc))
            print(f"{label:32} one table {med['one table']:9.1f} ms   partitions {med['partitions']:9.1f} ms   "
                  f"ratio {med['partitions'] / med['one table']:.2f}   self-check {sc['one table']:.2f}/{sc['partitions']:.2f}",
                  flush=True)

    # 2. converting one partition against a COPY of its rows
    part = f"cpu_life_p{newest_full:02}"
    part_csv = f"{args.data}/lifecycle_partition.csv"
    psql(args, "", session_cmds=f"\\copy (SELECT * FROM {part}) TO '{part_csv}' (FORMAT csv)\n")
    part_rows = int(scalar(args, f"SELECT count(*) FROM {part}"))
    conv, copy = [], []
    for r in range(args.runs):
        for what in (("convert", "copy") if r % 2 == 0 else ("copy", "convert")):
            if what == "convert":
                conv.append(server_seconds(args, convert_call(newest_full + 1)))
                am = scalar(args, f"SELECT amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE c.oid = '{part}'::regclass")
                if am != "pg_columnar":
                    raise SystemExit(f"{part} was not converted ({am})")
                psql(args, f"ALTER TABLE {part} SET ACCESS METHOD heap;\n")
            else:
                psql(args, "DROP TABLE IF EXISTS part_copy;\n" +
                     schema.replace("CREATE TABLE cpu ", "CREATE TABLE part_copy ") +
                     f"ALTER TABLE part_copy SET ACCESS METHOD pg_columnar;\n"
                     f"ALTER TABLE part_copy SET (pg_columnar.sort_key = '{SORT_KEY}');\n"
                     f"ALTER TABLE part_copy ADD PRIMARY KEY ({PRIMARY_KEY});\n"
                     f"CREATE INDEX ON part_copy ({HOST_INDEX});\n")
                copy.append(copy_seconds(args, "part_copy", part_csv))
        print(f"round {r + 1}: convert {conv[-1]:.2f} s, copy {copy[-1]:.2f} s", flush=True)
    psql(args, "DROP TABLE part_copy;")

    # 3. UPDATE of 1,000 rows of the newest full partition (heap), against all-heap partitions
    partitioned(args, schema, "cpu_heapparts", parts)
    load["partitions, all heap"] = copy_seconds(args, "cpu_heapparts", csv)
    psql(args, f"ALTER TABLE cpu_heapparts ADD PRIMARY KEY ({PRIMARY_KEY});\n"
               f"CREATE INDEX ON cpu_heapparts ({HOST_INDEX});\n"
               "VACUUM ANALYZE cpu_heapparts;\n")
    lo = f"{bound(newest_full)} + interval '1 hour'"
    update = lambda t: (f"UPDATE {t} SET usage_user = usage_user + 1 "
                        f"WHERE tags_id <= 10 AND time >= {lo} AND time < {lo} + interval '1000 seconds';\n")
    changed = int(scalar(args, f"SELECT count(*) FROM cpu_life WHERE tags_id <= 10 AND time >= {lo} AND time < {lo} + interval '1000 seconds'"))
    upd = {"partitions": [], "heap": []}
    names = {"partitions": "cpu_life", "heap": "cpu_heapparts"}
    for r in range(args.runs * 3):
        for e in (("partitions", "heap") if r % 2 == 0 else ("heap", "partitions")):
            out = psql(args, "", session_cmds=(
                "\\o /dev/null\nBEGIN;\n" + update(names[e]) + "ROLLBACK;\nBEGIN;\n"  # a first run fills the session's caches
                "SELECT extract(epoch FROM clock_timestamp()) AS t0 \\gset\n" + update(names[e]) +
                "SELECT extract(epoch FROM clock_timestamp()) - :t0 AS elapsed \\gset\n"
                "ROLLBACK;\n\\o\nSELECT :elapsed;\n"))
            upd[e].append(float(out.split()[-1]) * 1000)
    psql(args, "DROP TABLE cpu_heapparts;")

    md = [f"{parts} partitions of {HOURS} hours; {parts - 2} converted to pg_columnar with the sort key ({SORT_KEY}), "
          f"the newest two heap (access method, partitions, rows, bytes: {' / '.join(layout)}). "
          f"One table: {sizes['cpu_sorted']:,} bytes; partitions: {sizes['cpu_life']:,} bytes.",
          "",
          "| load and conversion | seconds |", "|---|---|"]
    md += [f"| COPY {args.rows:,} rows: {k} | {v:.2f} |" for k, v in load.items()]
    md.append(f"| pgcol.convert_partitions of {parts - 2} partitions, one CALL | {convert_all:.2f} |")
    c, p = median(conv), median(copy)
    md += ["", f"| one {HOURS}-hour partition, {part_rows:,} rows, median of {args.runs} | seconds |", "|---|---|",
           f"| pgcol.convert_partitions (SET ACCESS METHOD, sort key) | {c:.2f} |",
           f"| COPY of its rows into a fresh pg_columnar table with the sort key and both indexes | {p:.2f} |",
           f"| conversion / COPY | {c / p:.2f} |"]
    u, h = median(upd["partitions"]), median(upd["heap"])
    md += ["", f"| UPDATE of {changed:,} rows of the newest full partition (heap), median of {args.runs * 3} | ms |", "|---|---|",
           f"| partitions, the older ones pg_columnar | {u:.2f} |", f"| the same partitions, all heap | {h:.2f} |",
           f"| ratio | {u / h:.2f} |"]
    md += ["", "| query | one pg_columnar table (ms) | partitions (ms) | partitions / one table | self-check one table / partitions |",
           "|---|---|---|---|---|"]
    for label, med, sc in rows_q:
        md.append(f"| {label} | {med['one table']:.1f} | {med['partitions']:.1f} | {med['partitions'] / med['one table']:.2f} | "
                  f"{sc['one table']:.2f} / {sc['partitions']:.2f} |")
    worst = max(rows_q, key=lambda x: x[1]["partitions"] / x[1]["one table"])
    md += ["", f"Slowest against the one table: {worst[0]}, {worst[1]['partitions'] / worst[1]['one table']:.2f}×."]
    psql(args, "DROP TABLE cpu_life; DROP TABLE cpu_sorted;")
    tb.write_markdown(args, md)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The decimal sensor table (benches/run --sensors): floats with decimals, heap against
pg_columnar, unsorted and sorted by (host_id, time).

Run by benches/run --sensors (release build, fresh cluster, default settings), which writes
sensors.csv with tsbs-gen --sensors (100 hosts every 10 s; temperature with 2 decimals,
humidity with 1, a price with 2, a voltage with 3, each a random walk); this script only
talks to the server through psql.

Measured:
  * Load: the CSV COPYed into a fresh table of each engine, engines alternating round by
    round, timed by the server's clock after a CHECKPOINT; medians of --runs rounds.
  * Size: pg_total_relation_size per row, and per float column its stored bits per value
    and the encodings its vectors chose (pgcol.columns).
  * Full-column scans in one process: a filter on one decimal column, sum() of it, and of all
    four (rounded to whole numbers: the order of the additions differs between tables), timed as
    benches/tsbs_bench.py times queries (the second run in a new session, engines
    alternating; results compared first); values per second = rows x columns / time.
"""
import tsbs_bench as tb
from tsbs_bench import median, psql, scalar

ENGINES = ["heap", "pg_columnar", "sorted"]
TABLES = {"heap": "sensors_heap", "pg_columnar": "sensors_columnar", "sorted": "sensors_sorted"}
SORT_KEY = "host_id, time"
FLOATS = ["temperature", "humidity", "price", "voltage"]


def schema(args):
    out = tb.subprocess.run([args.tsbs_gen, "--schema"], capture_output=True, text=True, check=True).stdout
    return "\n".join(l for l in out.splitlines() if l.startswith("CREATE TABLE sensors ")) + "\n"


def load(args, engine, ddl):
    """Seconds for one COPY into a fresh table (`tsbs_bench.copy_seconds`)."""
    t = TABLES[engine]
    psql(args, f"DROP TABLE IF EXISTS {t};\n" + ddl.replace("CREATE TABLE sensors ", f"CREATE TABLE {t} ") +
         ("" if engine == "heap" else f"ALTER TABLE {t} SET ACCESS METHOD pg_columnar;\n") +
         (f"ALTER TABLE {t} SET (pg_columnar.sort_key = '{SORT_KEY}');\n" if engine == "sorted" else ""))
    return tb.copy_seconds(args, t, f"{args.data}/sensors.csv")


def main():
    args = tb.parse_args()
    ddl = schema(args)
    loads = {e: [] for e in ENGINES}
    for r in range(args.runs):
        for e in (ENGINES if r % 2 == 0 else ENGINES[::-1]):
            loads[e].append(load(args, e, ddl))
        print(f"load round {r + 1}: " + ", ".join(f"{e} {loads[e][-1]:.2f} s" for e in ENGINES), flush=True)
    psql(args, "".join(f"VACUUM ANALYZE {t}; " for t in TABLES.values()))
    rows = int(scalar(args, "SELECT count(*) FROM sensors_heap"))
    size = {e: int(scalar(args, f"SELECT pg_total_relation_size('{TABLES[e]}')")) for e in ENGINES}
    columns = {}
    for e in ("pg_columnar", "sorted"):
        for line in psql(args, f"SELECT a.attname, c.stored_bytes, c.rows - c.nulls, c.dictionary, c.bitpack, "
                               f"c.gorilla, c.float_int, c.plain FROM pgcol.columns('{TABLES[e]}') c "
                               f"JOIN pg_attribute a ON a.attrelid = '{TABLES[e]}'::regclass AND a.attnum = c.attnum "
                               f"ORDER BY c.attnum;").splitlines():
            name, stored, values, *counts = line.split("|")
            columns[(e, name)] = (8 * int(stored) / max(int(values), 1), [int(c) for c in counts])
    for e in ENGINES:
        print(f"size: {e:12} {size[e] / rows:6.2f} bytes/row", flush=True)

    # sums rounded to whole numbers, so that the order rows are added in (another in a sorted
    # table, or in a parallel plan) does not change the result compared
    scans = [("count(*) WHERE temperature > 25", "SELECT count(*) FROM TABLE WHERE temperature > 25", 1),
             ("sum(temperature)", "SELECT round(sum(temperature)::numeric) FROM TABLE", 1),
             ("sum of the four decimal columns",
              "SELECT " + ", ".join(f"round(sum({c})::numeric)" for c in FLOATS) + " FROM TABLE", len(FLOATS))]
    scan_rows = []
    for name, sql, ncols in scans:
        med, _, sc = tb.interleaved(args, name, {e: tb.SERIAL + sql.replace("TABLE", TABLES[e]) for e in ENGINES}, ENGINES)
        scan_rows.append((name, ncols, med, sc))
        print(f"{name:32} " + "   ".join(f"{e} {med[e]:8.1f} ms" for e in ENGINES) +
              "   self-check " + "/".join(f"{sc[e]:.2f}" for e in ENGINES), flush=True)

    md = [f"tsbs-gen --sensors; sorted: pg_columnar with the sort key ({SORT_KEY}).", "",
          "| | heap | pg_columnar | sorted |", "|---|---:|---:|---:|",
          "| COPY (s, median of %d) | %s |" % (args.runs, " | ".join(f"{median(loads[e]):.2f}" for e in ENGINES)),
          "| bytes/row | %s |" % " | ".join(f"{size[e] / rows:.2f}" for e in ENGINES)]
    for c in FLOATS:
        md.append(f"| {c}: bits/value (encodings) | | " + " | ".join(
            f"{columns[(e, c)][0]:.1f} ({encodings(columns[(e, c)][1])})" for e in ("pg_columnar", "sorted")) + " |")
    for name, ncols, med, sc in scan_rows:
        md.append(f"| {name} (ms; M values/s) | " + " | ".join(
            f"{med[e]:.1f}; {rows * ncols / med[e] / 1e3:,.0f}" for e in ENGINES) + " |")
    md.append("")
    md.append("Scans in one process (`max_parallel_workers_per_gather = 0`): values per second are per core. "
              "Self-checks (odd over even rounds): " + "; ".join(
        f"{name}: " + "/".join(f"{sc[e]:.2f}" for e in ENGINES) for name, _, _, sc in scan_rows) + ".")
    tb.write_markdown(args, md)


def encodings(counts):
    names = ["dictionary", "bitpack", "gorilla", "float_int", "plain"]
    total = max(sum(counts), 1)
    return ", ".join(f"{n} {100 * c / total:.0f}%" for n, c in zip(names, counts) if c)


if __name__ == "__main__":
    main()

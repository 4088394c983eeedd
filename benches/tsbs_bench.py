#!/usr/bin/env python3
"""The TSBS cpu-only benchmark: heap against pg_columnar on one running server.

Run by benches/run, which builds and installs the release extension, starts the bench
cluster and generates the data; this script only talks to the server through psql.

Method:
  * Load: the same CSV is COPYed (psql \\copy) into a fresh table of each engine, engines
    alternating round by round (H C, then C H, ...), each load in a new session, timed by the
    server's clock after a CHECKPOINT; the median of 5 is reported. Then one more load per engine in a session of its
    own, whose backend's peak private memory (RssAnon, sampled every 10 ms) and peak RSS
    (VmHWM, which also counts the shared buffers it touched) are read from /proc; likewise
    for a full scan of every column. Sizes: pg_total_relation_size, plus for
    pg_columnar its rows in the catalog pgcol.stripe.
  * Queries: the 15 TSBS cpu-only queries (tsbs-gen --queries), in two forms: reaching hosts
    through the table's hostname column, and as TSBS's TimescaleDB queries do by default,
    through the `tags` table (tsbs-gen --queries --tags; `tags` is a heap table loaded from
    tags.csv, with its primary key, analyzed). Each is first run once per engine
    (warm-up, and results compared row for row: they must be identical), then RUNS rounds,
    engines alternating, timed by psql. A round runs the query twice in a new session: the
    median of the second runs is reported (a session that has run queries, like the
    persistent connections of TSBS's own query runner), and beside it that of the first
    runs, which also pay for the session's first use of the table. The same-engine self-check
    compares the medians of the odd and the even rounds of one engine: a ratio far from 1.00
    means the machine was too noisy to read a difference of that size.
"""
import argparse, hashlib, re, statistics, subprocess, sys

# "sorted": pg_columnar with the sort key (tags_id, time): each host's rows together in every stripe
ENGINES = ["heap", "pg_columnar", "sorted"]
SORT_KEY = "tags_id, time"

def psql(args, sql, capture=True, session_cmds=None):
    cmd = args.psql + ["-d", args.db, "-v", "ON_ERROR_STOP=1", "-A", "-t"]
    inp = (session_cmds or "") + sql
    r = subprocess.run(cmd, input=inp, text=True, capture_output=True)
    if r.returncode != 0:
        sys.exit(f"psql failed: {r.stderr.strip()}\n--- SQL ---\n{sql[:500]}")
    return r.stdout

def scalar(args, sql):
    return psql(args, sql if sql.rstrip().endswith(";") else sql + ";").strip().splitlines()[-1].strip()

def table(engine):
    return {"heap": "cpu_heap", "pg_columnar": "cpu_columnar", "sorted": "cpu_sorted"}[engine]

def create(args, engine, schema):
    t = table(engine)
    psql(args, f"DROP TABLE IF EXISTS {t};\n" + schema.replace("CREATE TABLE cpu ", f"CREATE TABLE {t} ") +
         ("" if engine == "heap" else f"ALTER TABLE {t} SET ACCESS METHOD pg_columnar;\n") +
         (f"ALTER TABLE {t} SET (pg_columnar.sort_key = '{SORT_KEY}');\n" if engine == "sorted" else ""))

def server_seconds(args, commands):
    """Seconds by the server's clock for psql `commands` run in a new session, after a
    CHECKPOINT, so that they do not pay for the WAL of what ran before."""
    psql(args, "CHECKPOINT;")
    out = psql(args, "", session_cmds=(
        "SELECT extract(epoch FROM clock_timestamp()) AS t0 \\gset\n" + commands +
        "SELECT extract(epoch FROM clock_timestamp()) - :t0;\n"))
    return float(out.split()[-1])

def copy_seconds(args, table, source):
    """Seconds by the server's clock for one \\copy of the CSV `source` into `table`."""
    return server_seconds(args, f"\\copy {table} FROM '{source}' (FORMAT csv)\n")

def load(args, engine, schema):
    """Seconds for one COPY into a fresh table (`copy_seconds`)."""
    create(args, engine, schema)
    return copy_seconds(args, table(engine), f"{args.data}/cpu.csv")

def session_peak_kib(args, command):
    """Runs one psql command in a fresh session; returns its backend's peak private memory
    (RssAnon, sampled every 10 ms) and peak RSS (VmHWM: that plus the shared buffers and other
    shared memory it touched), in KiB."""
    import threading, time
    p = subprocess.Popen(args.psql + ["-d", args.db, "-v", "ON_ERROR_STOP=1", "-A", "-t"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    p.stdin.write("SELECT 'pid=' || pg_backend_pid();\n"); p.stdin.flush()
    line = ""
    while "pid=" not in line:
        line = p.stdout.readline()
        if not line:
            sys.exit("psql session ended early: " + p.stderr.read())
    pid = int(line.split("pid=")[1])
    anon = [0]
    done = threading.Event()
    def sample():
        while not done.is_set():
            with open(f"/proc/{pid}/status") as f:
                anon[0] = max(anon[0], int(re.search(r"RssAnon:\s+(\d+)", f.read()).group(1)))
            time.sleep(0.01)
    sampler = threading.Thread(target=sample); sampler.start()
    p.stdin.write(command + "\nSELECT 'done';\n"); p.stdin.flush()
    while "done" not in line and line:
        line = p.stdout.readline()
    done.set(); sampler.join()
    with open(f"/proc/{pid}/status") as f:
        hwm = int(re.search(r"VmHWM:\s+(\d+)", f.read()).group(1))
    p.stdin.close(); p.wait()
    return anon[0], hwm

def peak_rss_kib(args, engine, schema):
    """Peak RSS of a backend doing one COPY into a fresh table (the table is kept)."""
    create(args, engine, schema)
    return session_peak_kib(args, f"\\copy {table(engine)} FROM '{args.data}/cpu.csv' (FORMAT csv)")

def catalog_bytes(args, engine):
    """Bytes of the catalog rows of the table just loaded (its storage is the newest)."""
    if engine == "heap":
        return 0
    return int(scalar(args, f"SELECT coalesce(sum(pg_column_size(s.*)) + count(*) * (4 + 16), 0) FROM pgcol.stripe s "
                            f"WHERE storage_id = (SELECT storage_id FROM pgcol.stripe ORDER BY storage_id DESC LIMIT 1)"))

def sizes(args, engine, catalog):
    return int(scalar(args, f"SELECT pg_total_relation_size('{table(engine)}')")), catalog

def queries(args, tags=False):
    out = subprocess.run([args.tsbs_gen, "--queries", "TABLE", "--out", args.data] + (["--tags"] if tags else []),
                         capture_output=True, text=True, check=True).stdout
    qs, name = [], None
    for line in out.splitlines():
        if line.startswith("-- "):
            name = line[3:].strip()
        elif line.strip():
            qs.append((name, line.strip()))
    return qs

# The scan table: single-process scans (no parallel workers), so rows per second are per core.
# The data starts 2016-01-01 00:00 UTC; the hour is 1 of 278 at 10 M rows.
SCAN_QUERIES = [
    ("count(*) WHERE usage_user > 90", "SELECT count(*) FROM TABLE WHERE usage_user > 90"),
    ("sum(usage_user)", "SELECT sum(usage_user) FROM TABLE"),
    ("one-hour window", "SELECT count(*), max(usage_user) FROM TABLE WHERE time >= '2016-01-06 00:00:00+00' AND time < '2016-01-06 01:00:00+00'"),
    ("count(*)", "SELECT count(*) FROM TABLE"),
    ("GROUP BY hostname, avg(usage_user)", "SELECT hostname, avg(usage_user) FROM TABLE GROUP BY 1 ORDER BY 1"),
]
SERIAL = "SET max_parallel_workers_per_gather = 0; "

def time_query(args, sql):
    """Runs `sql` twice in a new session: the times of the first run (which pays for the
    session's first use of the table: pg_columnar's library is loaded then, catalog caches
    are filled) and of the second (a session that has run queries before, as TSBS's query
    runner's persistent connections are)."""
    sql = sql.rstrip().rstrip(";") + ";\n"
    out = psql(args, sql + sql, session_cmds="\\timing on\n\\o /dev/null\n")
    times = [float(t) for t in re.findall(r"Time: ([0-9.]+) ms", out)]
    return times[len(times) // 2 - 1], times[-1]

def result_digest(args, sql):
    return hashlib.sha256(psql(args, sql).encode()).hexdigest()

def median(xs):
    return statistics.median(xs)

def interleaved(args, name, per, engines=ENGINES):
    """Runs the engines' versions of one query (`per`: engine -> SQL): once each as warm-up,
    their results compared, then `args.runs` rounds in alternating order; returns the median
    per engine of the second runs in a session and of the first runs (see `time_query`),
    and the self-check of the second runs (odd rounds' median over even rounds')."""
    digests = {e: result_digest(args, per[e]) for e in engines}
    if len(set(digests.values())) != 1:
        sys.exit(f"{name}: results differ between engines")
    times, firsts = {e: [] for e in engines}, {e: [] for e in engines}
    for r in range(args.runs):
        for e in (engines if r % 2 == 0 else engines[::-1]):
            first, again = time_query(args, per[e])
            firsts[e].append(first)
            times[e].append(again)
    med = {e: median(times[e]) for e in engines}
    first = {e: median(firsts[e]) for e in engines}
    selfcheck = {e: median(times[e][0::2]) / median(times[e][1::2]) for e in engines}
    return med, first, selfcheck

def parse_args(extra=lambda ap: None):
    """The arguments benches/run passes (`extra` adds a script's own), psql split into words."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--psql", required=True)
    ap.add_argument("--db", default="bench")
    ap.add_argument("--data", required=True)
    ap.add_argument("--tsbs-gen", required=True)
    ap.add_argument("--rows", type=int, required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--markdown", required=True)
    extra(ap)
    args = ap.parse_args()
    args.psql = args.psql.split()
    return args

def cpu_schema(args):
    """tsbs-gen's CREATE TABLE cpu statement."""
    schema = subprocess.run([args.tsbs_gen, "--schema"], capture_output=True, text=True, check=True).stdout
    return "\n".join(l for l in schema.splitlines() if l.startswith("CREATE TABLE cpu ")) + "\n"

def write_markdown(args, md):
    """Writes the table lines `md` to --markdown (for benches/run --write) and prints them."""
    with open(args.markdown, "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))

def main():
    args = parse_args(lambda ap: ap.add_argument("--load-runs", type=int, default=5))
    schema = cpu_schema(args)

    loads = {e: [] for e in ENGINES}
    for r in range(args.load_runs):
        for e in (ENGINES if r % 2 == 0 else ENGINES[::-1]):
            s = load(args, e, schema)
            loads[e].append(s)
            print(f"load round {r + 1}: {e:12} {s:6.2f} s", flush=True)
    rss, catalog = {}, {}
    for e in ENGINES:  # a last load of each engine, in a session of its own: peak memory
        rss[e] = peak_rss_kib(args, e, schema)
        catalog[e] = catalog_bytes(args, e)
        print(f"load: {e:12} peak private {rss[e][0] / 1024:.0f} MiB, peak RSS {rss[e][1] / 1024:.0f} MiB", flush=True)
    psql(args, "".join(f"VACUUM ANALYZE {table(e)}; " for e in ENGINES))
    scan_rss = {}
    for e in ENGINES:  # a full scan of every column: the backend must not grow with the table
        scan_rss[e] = session_peak_kib(args, f"SELECT count(*), max(time), sum(tags_id), max(hostname), sum(usage_user), "
                                             f"sum(usage_guest_nice), count(additional_tags) FROM {table(e)};")
        print(f"full scan: {e:12} peak private {scan_rss[e][0] / 1024:.0f} MiB, peak RSS {scan_rss[e][1] / 1024:.0f} MiB", flush=True)
    size = {e: sizes(args, e, catalog[e]) for e in ENGINES}

    rows_q = []
    for name, sql in queries(args):
        med, first, selfcheck = interleaved(args, name, {e: sql.replace("TABLE", table(e)) for e in ENGINES})
        rows_q.append((name, med, first, selfcheck))
        print(f"{name:24} heap {med['heap']:9.1f} ms   pg_columnar {med['pg_columnar']:9.1f} ms   sorted {med['sorted']:9.1f} ms   "
              f"self-check {'/'.join(f'{selfcheck[e]:.2f}' for e in ENGINES)}", flush=True)

    # TSBS's own form: hosts through the tags table
    schema_all = subprocess.run([args.tsbs_gen, "--schema"], capture_output=True, text=True, check=True).stdout
    tags_schema = "\n".join(l for l in schema_all.splitlines() if l.startswith("CREATE TABLE tags ")) + "\n"
    psql(args, "DROP TABLE IF EXISTS tags;\n" + tags_schema.rstrip().rstrip(";") + ";\n",
         session_cmds=None)
    psql(args, "", session_cmds=f"\\copy tags FROM '{args.data}/tags.csv' (FORMAT csv)\nANALYZE tags;\n")
    rows_t = []
    for name, sql in queries(args, tags=True):
        med, first, selfcheck = interleaved(args, name + " (tags)", {e: sql.replace("TABLE", table(e)) for e in ENGINES})
        rows_t.append((name, med, first, selfcheck))
        print(f"tags {name:19} heap {med['heap']:9.1f} ms   pg_columnar {med['pg_columnar']:9.1f} ms   sorted {med['sorted']:9.1f} ms   "
              f"self-check {'/'.join(f'{selfcheck[e]:.2f}' for e in ENGINES)}", flush=True)

    rows_s = []
    for name, sql in SCAN_QUERIES:
        med, _, selfcheck = interleaved(args, f"scan {name}", {e: SERIAL + sql.replace("TABLE", table(e)) for e in ENGINES})
        rows_s.append((name, med, selfcheck))
        print(f"scan {name:30} heap {med['heap']:9.1f} ms   pg_columnar {med['pg_columnar']:9.1f} ms   sorted {med['sorted']:9.1f} ms", flush=True)

    h_load, c_load, s_load = (median(loads[e]) for e in ENGINES)
    (h_size, _), (c_size, c_cat), (s_size, s_cat) = (size[e] for e in ENGINES)
    md = []
    md.append(f"| | heap | pg_columnar | ratio | pg_columnar, sort key {SORT_KEY} | ratio |")
    md.append(f"|---|---|---|---|---|---|")
    md.append(f"| COPY {args.rows:,} rows, median of {len(loads['heap'])} (s) | {h_load:.2f} | {c_load:.2f} | {c_load / h_load:.2f} | {s_load:.2f} | {s_load / h_load:.2f} |")
    mem = lambda d, e: f"{d[e][0] / 1024:.0f} / {d[e][1] / 1024:.0f}"
    md.append(f"| backend memory during COPY, MiB: peak private (RssAnon) / peak RSS (VmHWM) | {mem(rss, 'heap')} | {mem(rss, 'pg_columnar')} | | {mem(rss, 'sorted')} | |")
    md.append(f"| backend memory during a full scan, MiB: private / RSS | {mem(scan_rss, 'heap')} | {mem(scan_rss, 'pg_columnar')} | | {mem(scan_rss, 'sorted')} | |")
    md.append(f"| size (bytes) | {h_size:,} | {c_size + c_cat:,} ({c_cat:,} in pgcol.stripe) | {(c_size + c_cat) / h_size:.3f} | {s_size + s_cat:,} ({s_cat:,} in pgcol.stripe) | {(s_size + s_cat) / h_size:.3f} |")
    md.append(f"| bytes per row | {h_size / args.rows:.1f} | {(c_size + c_cat) / args.rows:.2f} | | {(s_size + s_cat) / args.rows:.2f} | |")
    md.append("")
    md.append(f"Ratios are heap's time over pg_columnar's (× faster). Each round runs a query twice in a new")
    md.append(f"session; the main columns time the second run (a session that has run queries, as TSBS's")
    md.append(f"runner's persistent connections are), the last but one the first (which also loads")
    md.append(f"pg_columnar's library, about 1 ms, unless it is in `shared_preload_libraries`).")
    md.append("")
    md.append(f"| query | heap (ms) | pg_columnar (ms) | × heap | with sort key (ms) | × heap | first run in a session: heap / pg_columnar / sorted (ms) | self-check heap / pg_columnar / sorted |")
    md.append(f"|---|---|---|---|---|---|---|---|")
    for name, med, first, sc in rows_q:
        md.append(f"| {name} | {med['heap']:.1f} | {med['pg_columnar']:.1f} | {med['heap'] / med['pg_columnar']:.1f} | {med['sorted']:.1f} | {med['heap'] / med['sorted']:.1f} | {' / '.join(f'{first[e]:.1f}' for e in ENGINES)} | {' / '.join(f'{sc[e]:.2f}' for e in ENGINES)} |")
    md.append("")
    md.append(f"The same queries in TSBS's own form (its TimescaleDB default, `--use-tags`): hosts through the `tags` table,")
    md.append(f"`tags_id IN (SELECT id FROM tags WHERE hostname IN (...))`; double-groupby joins its averages to `tags`,")
    md.append(f"lastpoint takes each tag's last row through LATERAL; the last three are the dimension as dashboards use it")
    md.append(f"(a 12-hour window joined to `tags` on one region, the same as EXISTS, count(DISTINCT hostname)). The last columns: the tags form's time over the")
    md.append(f"constant form's above (1.0: as fast).")
    md.append("")
    md.append(f"| query, tags form | heap (ms) | pg_columnar (ms) | × heap | with sort key (ms) | × heap | tags / constant form: pg_columnar / sorted | self-check heap / pg_columnar / sorted |")
    md.append(f"|---|---|---|---|---|---|---|---|")
    const = {name: med for name, med, _, _ in rows_q}
    for name, med, first, sc in rows_t:
        c = const.get(name)
        vs = f"{med['pg_columnar'] / c['pg_columnar']:.2f} / {med['sorted'] / c['sorted']:.2f}" if c else "(no constant form)"
        md.append(f"| {name} | {med['heap']:.1f} | {med['pg_columnar']:.1f} | {med['heap'] / med['pg_columnar']:.1f} | {med['sorted']:.1f} | {med['heap'] / med['sorted']:.1f} | {vs} | {' / '.join(f'{sc[e]:.2f}' for e in ENGINES)} |")
    md.append("")
    md.append(f"Scans in one process (`max_parallel_workers_per_gather = 0`); rows per second count the table's {args.rows:,} rows.")
    md.append("")
    md.append(f"| scan | heap (ms) | pg_columnar (ms) | speed-up | with sort key (ms) | speed-up | heap / pg_columnar / sorted M rows/s | self-check |")
    md.append(f"|---|---|---|---|---|---|---|---|")
    for name, med, sc in rows_s:
        rate = lambda e: args.rows / med[e] / 1000
        md.append(f"| {name} | {med['heap']:.1f} | {med['pg_columnar']:.1f} | {med['heap'] / med['pg_columnar']:.1f}× | {med['sorted']:.1f} | {med['heap'] / med['sorted']:.1f}× | {rate('heap'):.0f} / {rate('pg_columnar'):.0f} / {rate('sorted'):.0f} | {' / '.join(f'{sc[e]:.2f}' for e in ENGINES)} |")
    write_markdown(args, md)

if __name__ == "__main__":
    main()

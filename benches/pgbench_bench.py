#!/usr/bin/env python3
"""Concurrent row changes: heap against pg_columnar through pgbench.

Run by `benches/run --pgbench`, which builds and installs the release extension and starts the
bench cluster; this script talks to the server through psql and pgbench (the pgbench of the
same PostgreSQL, found beside psql).

Method: two workloads, each run in rounds that alternate the engines (H C, then C H, ...); a
round starts from freshly initialized tables, so that no round inherits another's dead rows
or stripes. The median of RUNS rounds' tps is reported with a same-engine self-check (median
of the odd rounds over that of the even ones) and the failed transactions of all rounds
(pgbench counts a transaction that ends in a serialization failure or a deadlock as failed;
heap has neither on these workloads).

  * TPC-B: pgbench's built-in TPC-B-like script (`-i -s 2`: 200,000 accounts, 2 branches,
    20 tellers), 6 clients on 2 threads for DURATION seconds. The four tables are made
    pg_columnar by `default_table_access_method` during `pgbench -i`; the primary keys
    pgbench makes are kept. Two branches for six clients: every transaction updates one of
    two branch rows, so the clients queue on those rows as on a hot counter.
  * contended UPDATE: 8 clients on 2 threads for DURATION seconds, each transaction one
    `UPDATE hot SET v = v + 1 WHERE id = :id` of a random id among 50 (a primary key).
"""
import os, re, subprocess, sys

from tsbs_bench import median, parse_args, psql, write_markdown

ENGINES = ["heap", "pg_columnar"]


def pgbench_cmd(args):
    """pgbench beside psql, with psql's connection options."""
    words = args.psql
    binary = os.path.join(os.path.dirname(words[0]), "pgbench")
    conn = [w for w in words[1:] if w not in ("-X", "-q")]
    return [binary] + conn


def pgbench(args, db, engine, extra, env_am=False):
    env = dict(os.environ)
    if env_am:
        env["PGOPTIONS"] = env.get("PGOPTIONS", "") + f" -c default_table_access_method={engine}"
    r = subprocess.run(pgbench_cmd(args) + extra + [db], text=True, capture_output=True, env=env)
    if r.returncode != 0:
        sys.exit(f"pgbench failed ({engine}): {r.stderr.strip()[-2000:]}")
    return r.stdout + r.stderr


def tps_and_failed(out):
    tps = float(re.search(r"tps = ([0-9.]+)", out).group(1))
    m = re.search(r"number of failed transactions: (\d+)", out)
    return tps, int(m.group(1)) if m else 0


def db_of(engine):
    return {"heap": "pgb_heap", "pg_columnar": "pgb_columnar"}[engine]


def tpcb_round(args, engine):
    db = db_of(engine)
    pgbench(args, db, engine, ["-i", "-q", "-s", "2"], env_am=True)
    psql_db(args, db, "CHECKPOINT;")
    return tps_and_failed(pgbench(args, db, engine, ["-c", "6", "-j", "2", "-T", str(args.duration)]))


def hot_round(args, engine, script):
    db = db_of(engine)
    psql_db(args, db, "DROP TABLE IF EXISTS hot;\n"
                      f"CREATE TABLE hot (id int PRIMARY KEY, v bigint NOT NULL) USING {engine};\n"
                      "INSERT INTO hot SELECT g, 0 FROM generate_series(1, 50) g;\nVACUUM ANALYZE hot;\nCHECKPOINT;\n")
    out = pgbench(args, db, engine, ["-n", "-f", script, "-c", "8", "-j", "2", "-T", str(args.duration)])
    # every update took effect once: the counters add up to the transactions pgbench counted
    done = int(re.search(r"number of transactions actually processed: (\d+)", out).group(1))
    total = int(psql_db(args, db, "SELECT sum(v) FROM hot;").strip())
    if total != done:
        sys.exit(f"contended UPDATE on {engine}: the counters sum to {total}, pgbench processed {done}")
    return tps_and_failed(out)


def psql_db(args, db, sql):
    saved = args.db
    args.db = db
    try:
        return psql(args, sql)
    finally:
        args.db = saved


def rounds(args, run):
    """`args.runs` rounds, engines alternating; per engine its tps list and failed count."""
    tps = {e: [] for e in ENGINES}
    failed = {e: 0 for e in ENGINES}
    for i in range(args.runs):
        for e in (ENGINES if i % 2 == 0 else ENGINES[::-1]):
            t, f = run(e)
            tps[e].append(t)
            failed[e] += f
            print(f"  round {i + 1} {e}: {t:.1f} tps, {f} failed", flush=True)
    return tps, failed


def main():
    args = parse_args(lambda ap: ap.add_argument("--duration", type=int, default=20))
    for e in ENGINES:
        psql(args, f"DROP DATABASE IF EXISTS {db_of(e)};\nCREATE DATABASE {db_of(e)};\n")
        psql_db(args, db_of(e), "CREATE EXTENSION IF NOT EXISTS pg_columnar;")
    script = os.path.join(os.path.dirname(args.markdown), "pgbench_hot.sql")
    with open(script, "w") as f:
        f.write("\\set id random(1, 50)\nUPDATE hot SET v = v + 1 WHERE id = :id;\n")
    md = ["| workload | heap tps | pg_columnar tps | pg_columnar / heap | failed (heap / pg_columnar) | self-check heap / pg_columnar |",
          "|---|---|---|---|---|---|"]
    for name, run in [(f"TPC-B, scale 2, 6 clients, {args.duration} s", lambda e: tpcb_round(args, e)),
                      (f"UPDATE of 1 row of 50, 8 clients, {args.duration} s", lambda e: hot_round(args, e, script))]:
        print(name, flush=True)
        tps, failed = rounds(args, run)
        med = {e: median(tps[e]) for e in ENGINES}
        check = {e: median(tps[e][0::2]) / median(tps[e][1::2]) if len(tps[e]) > 1 else 1.0 for e in ENGINES}
        md.append(f"| {name} | {med['heap']:,.0f} | {med['pg_columnar']:,.0f} | {med['pg_columnar'] / med['heap']:.1%} | "
                  f"{failed['heap']} / {failed['pg_columnar']} | {check['heap']:.2f} / {check['pg_columnar']:.2f} |")
    os.unlink(script)
    for e in ENGINES:
        psql(args, f"DROP DATABASE IF EXISTS {db_of(e)};")
    write_markdown(args, md)


if __name__ == "__main__":
    main()

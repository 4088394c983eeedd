#!/usr/bin/env python3
"""Randomized changes applied to a heap table and two pg_columnar twins, compared after every step.

Run by tests/random/run, which gives the psql command line; this script writes one psql script
from a seeded generator, runs it in one session, and compares what the three tables answered.

The tables: `h` (heap), `c` (pg_columnar) and `s` (pg_columnar with the sort key `host, t`),
`(id bigint PRIMARY KEY, host text, v int, t timestamptz, f float8, note text)`, each with a
btree on `t`, a btree on `(host, v)` and a hash index on `note` (BRIN is refused on
pg_columnar tables: README). Stripes
are cut at 2,500 rows (three vectors, the last partial) at first, and at 1,024 (one vector),
2,500 or 6,000 rows from time to time after, so a few thousand rows span many
stripes.

Each step is one change, the same statement for each table: INSERT of literal rows, of
generated rows and of rows copied from the table itself; COPY; UPDATE of values, of the sort
key's columns and of the primary key; DELETE (now and then of a third of the rows); DELETE and UPDATE with RETURNING (what they
return is compared); MERGE; INSERT ... ON CONFLICT DO NOTHING and DO UPDATE (with and without
a WHERE); a statement that violates the primary key (caught by a savepoint, or failing alone
outside a transaction); a DO block with an exception handler that runs changes and rolls them
back, or not; VACUUM, VACUUM FULL, ANALYZE and REINDEX between transactions. Steps are grouped
into transactions (READ COMMITTED or REPEATABLE READ) ending in COMMIT or ROLLBACK, with
savepoints rolled back to or released in between; steps outside them run alone.

After every step, each table's rows are compared (id, host and v; every column after every
tenth step, at the end of each transaction and at the end), and one query drawn at random:
aggregates (count, sum, min, max: answered from stripe metadata where the scan can), the
same under a filter, grouped by host or by hour, ORDER BY ... LIMIT and DISTINCT ON (the
TopN node), index, bitmap and TID scans, a parallel plan, and the plain scan with the custom
scans off. Values include NULLs, NaN, infinities, -0.0 and long text.

The only ERROR allowed is the primary key violation the test makes on purpose, as many times
for each table. Exit status 1 on any mismatch or other error; the step and statements of the
first mismatches are printed, with the seed to replay them.
"""
import argparse
import collections
import random
import subprocess
import sys

TABLES = ["h", "c", "s"]
COLUMNS = "id, host, v, t, f, note"
T0 = "2016-01-01 00:00:00+00"


def lit(x):
    if x is None:
        return "NULL"
    if isinstance(x, str):
        return "'" + x.replace("'", "''") + "'"
    return str(x)


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)
        # every id handed out so far is below `high`; new ids are taken from above it
        self.high = 1

    def fresh(self, n):
        first = self.high
        self.high += n
        return first

    def some_id(self):
        return self.r.randrange(0, self.high)

    # values of one column, NULL now and then
    def host(self):
        return None if self.r.random() < 0.04 else f"host_{self.r.randrange(12)}"

    def v(self):
        return None if self.r.random() < 0.05 else self.r.randrange(-1000, 1000)

    def t(self):
        if self.r.random() < 0.04:
            return None
        return f"'{T0}'::timestamptz + interval '{self.r.randrange(0, 3 * 8640) * 10} seconds'"

    def f(self):
        x = self.r.random()
        if x < 0.04:
            return None
        if x < 0.1:
            return self.r.choice(["'NaN'::float8", "'Infinity'::float8", "'-Infinity'::float8", "'-0'::float8", "0::float8"])
        return repr(round(self.r.uniform(-100, 100), self.r.choice([0, 1, 3, 9]))) + "::float8"

    def note(self):
        x = self.r.random()
        if x < 0.05:
            return None
        if x < 0.08:
            return lit("long " + "ab' ü " * self.r.randrange(200, 800))
        return lit(self.r.choice(["a", "b", "note", "x y", "ünï", ""]) + str(self.r.randrange(30)))

    def row(self, id_):
        return f"({id_}, {lit(self.host())}, {lit(self.v())}, {self.t() or 'NULL'}, {self.f() or 'NULL'}, {self.note() or 'NULL'})"

    def copy_row(self, id_):
        def c(x):
            return "\\N" if x is None else x
        host = self.host()
        v = self.v()
        t = None if self.r.random() < 0.04 else f"2016-01-0{1 + self.r.randrange(3)} {self.r.randrange(24):02}:{self.r.randrange(60):02}:{self.r.randrange(6) * 10:02}+00"
        f = self.r.choice([None, "NaN", "-0", "Infinity", repr(round(self.r.uniform(-50, 50), 2)), repr(self.r.randrange(100))])
        note = self.r.choice([None, "copied", "tab\\tin", "back\\\\slash", "c" + str(self.r.randrange(9))])
        return "\t".join([str(id_), c(host), c(None if v is None else str(v)), c(t), c(f), c(note)])

    def pred(self):
        r = self.r
        lo = self.some_id()
        ps = [
            f"id BETWEEN {lo} AND {lo + r.randrange(1, 400)}",
            f"id % {r.randrange(2, 40)} = {r.randrange(2)}",
            f"host = 'host_{r.randrange(12)}'",
            "host IS NULL",
            f"v < {r.randrange(-1000, 1000)}",
            "v IS NULL",
            f"t >= '{T0}'::timestamptz + interval '{r.randrange(0, 72)} hours' AND t < '{T0}'::timestamptz + interval '{r.randrange(0, 80)} hours'",
            "note LIKE 'a%'",
            "f > 0",
            "f = 'NaN'",
        ]
        p = r.choice(ps)
        if r.random() < 0.3:
            p = f"({p}) AND ({r.choice(ps)})"
        return p

    def moving_pred(self, pred):
        """A predicate on an id range of width w, and an offset that moves it above every id."""
        w = self.r.randrange(1, 600)
        lo = self.some_id()
        offset = self.fresh(w + 1) - lo
        return f"id BETWEEN {lo} AND {lo + w} AND ({pred})", offset

    def source_rows(self, n):
        """n distinct ids, about half of them existing ones, with a value and a note."""
        ids = set()
        while len(ids) < n:
            ids.add(self.some_id() if self.r.random() < 0.6 else self.fresh(1))
        return [(i, self.r.randrange(-500, 500), self.r.choice(["m", "merged", "up"]) + str(self.r.randrange(9))) for i in sorted(ids)]

    # one change: a statement template ({t} is the table, {check} a RETURNING check's tag);
    # `top` says the step runs outside a transaction block
    def change(self, top):
        r = self.r
        kinds = ["values", "bulk", "copy", "self", "update", "update_key", "update_sort", "delete",
                 "delete_returning", "update_returning", "merge", "upsert", "upsert_nothing",
                 "duplicate", "do_block", "trim"]
        weights = [6, 6, 4, 3, 8, 3, 4, 8, 2, 2, 4, 4, 3, 2, 3, 2]
        if top:
            kinds += ["vacuum", "vacuum_full", "cluster", "analyze", "reindex", "reindex_concurrently"]
            weights += [5, 1, 1, 1, 1, 1]
        kind = r.choices(kinds, weights)[0]
        if kind == "values":
            n = r.randrange(1, 20)
            first = self.fresh(n)
            rows = ", ".join(self.row(first + i) for i in range(n))
            return kind, f"INSERT INTO {{t}} ({COLUMNS}) VALUES {rows};"
        if kind == "bulk":
            n = r.randrange(50, 1000)
            first = self.fresh(n)
            hosts = r.randrange(1, 13)
            return kind, (
                f"INSERT INTO {{t}} ({COLUMNS}) SELECT {first} + g, 'host_' || (g % {hosts}), "
                f"CASE WHEN g % 17 = 0 THEN NULL ELSE (g * 7) % 2000 - 1000 END, "
                f"'{T0}'::timestamptz + (g / {hosts}) * interval '10 seconds' + interval '{r.randrange(60)} hours', "
                f"CASE WHEN g % 23 = 0 THEN 'NaN' ELSE g / 8.0 END, 'bulk' || (g % 5) FROM generate_series(0, {n - 1}) g;")
        if kind == "copy":
            n = r.randrange(1, 500)
            first = self.fresh(n)
            data = "\n".join(self.copy_row(first + i) for i in range(n))
            return kind, f"COPY {{t}} ({COLUMNS}) FROM STDIN;\n{data}\n\\."
        if kind == "self":
            pred, offset = self.moving_pred(self.pred())
            return kind, f"INSERT INTO {{t}} ({COLUMNS}) SELECT id + {offset}, host, v + 1, t, f, 'self ' || coalesce(note, '') FROM {{t}} WHERE {pred};"
        if kind == "update":
            return kind, f"UPDATE {{t}} SET v = v + 1, f = f * 2, note = left(note || 'u', 40) WHERE {self.pred()};"
        if kind == "update_key":
            pred, offset = self.moving_pred(self.pred())
            return kind, f"UPDATE {{t}} SET id = id + {offset} WHERE {pred};"
        if kind == "update_sort":
            return kind, f"UPDATE {{t}} SET host = 'host_{r.randrange(14)}', t = t - interval '{r.randrange(1, 50)} hours' WHERE {self.pred()};"
        if kind == "delete":
            return kind, f"DELETE FROM {{t}} WHERE {self.pred()};"
        if kind == "trim":
            # keeps the tables at a few thousand rows
            return kind, f"DELETE FROM {{t}} WHERE id % 3 = {r.randrange(3)};"
        if kind == "delete_returning":
            return kind, f"WITH x AS (DELETE FROM {{t}} WHERE {self.pred()} RETURNING *) SELECT {{check}}, count(*), md5(coalesce(string_agg(x::text, ';' ORDER BY id), '')) FROM x;"
        if kind == "update_returning":
            return kind, f"WITH x AS (UPDATE {{t}} SET v = -v WHERE {self.pred()} RETURNING id, v, host) SELECT {{check}}, count(*), md5(coalesce(string_agg(x::text, ';' ORDER BY id), '')) FROM x;"
        if kind == "merge":
            src = ", ".join(f"({i}, {v}, {lit(n)})" for i, v, n in self.source_rows(r.randrange(1, 60)))
            return kind, (
                f"MERGE INTO {{t}} AS d USING (VALUES {src}) AS s(id, v, note) ON d.id = s.id "
                f"WHEN MATCHED AND s.v % 3 = 0 THEN DELETE "
                f"WHEN MATCHED THEN UPDATE SET v = s.v, note = s.note "
                f"WHEN NOT MATCHED THEN INSERT ({COLUMNS}) VALUES (s.id, 'merged', s.v, '{T0}'::timestamptz + s.v * interval '1 minute', 0.5, s.note);")
        if kind in ("upsert", "upsert_nothing"):
            src = ", ".join(f"({i}, 'host_{abs(v) % 12}', {v}, '{T0}'::timestamptz + interval '{abs(v)} minutes', {v}.25, {lit(n)})"
                            for i, v, n in self.source_rows(r.randrange(1, 80)))
            insert = f"INSERT INTO {{t}} ({COLUMNS}) VALUES {src} ON CONFLICT "
            if kind == "upsert_nothing":
                return kind, insert + "DO NOTHING;"
            where = r.choice(["", " WHERE {t}.v IS NULL OR {t}.v > 0"])
            return kind, insert + "(id) DO UPDATE SET v = coalesce({t}.v, 0) + EXCLUDED.v, note = EXCLUDED.note, t = EXCLUDED.t" + where + ";"
        if kind == "duplicate":
            stmt = r.choice([
                f"INSERT INTO {{t}} SELECT * FROM {{t}} ORDER BY id LIMIT 1;",
                f"UPDATE {{t}} SET id = (SELECT min(id) FROM {{t}}) WHERE id = (SELECT max(id) FROM {{t}});",
            ])
            return kind, stmt
        if kind == "do_block":
            inner = []
            for _ in range(r.randrange(1, 4)):
                inner.append(r.choice([
                    f"DELETE FROM {{t}} WHERE {self.pred()};",
                    f"UPDATE {{t}} SET v = v - 3, note = 'in block' WHERE {self.pred()};",
                    f"INSERT INTO {{t}} ({COLUMNS}) VALUES {self.row(self.fresh(1))};",
                ]))
            undo = r.random() < 0.5
            body = " ".join(inner) + (" RAISE SQLSTATE 'P0002';" if undo else "")
            return kind, f"DO $blk$ BEGIN {body} EXCEPTION WHEN no_data_found THEN NULL; END $blk$;"
        if kind == "vacuum":
            return kind, "VACUUM {t};"
        if kind == "vacuum_full":
            return kind, "VACUUM FULL {t};"
        if kind == "cluster":
            return kind, f"CLUSTER {{t}} USING {{t}}_{r.choice(['t', 'hv'])};"
        if kind == "reindex_concurrently":
            return kind, "REINDEX TABLE CONCURRENTLY {t};"
        if kind == "analyze":
            return kind, "ANALYZE {t};"
        return kind, "REINDEX TABLE {t};"

    def check_query(self):
        """A query whose whole answer is compared across the tables: its rows in order."""
        r = self.r
        p = self.pred()
        # min and max of floats: of -0.0 and 0.0, PostgreSQL keeps the later in scan order,
        # which is not the same in a heap table and its twin; adding 0 makes both 0.0
        aggs = "count(*), count(v), sum(v), min(v), max(v), min(t), max(t), count(f), min(f) + 0, max(f) + 0, sum(id), min(id), max(id), count(note), max(host)"
        qs = [
            ("aggregates", "", f"SELECT {aggs} FROM {{t}}"),
            ("filtered aggregates", "", f"SELECT {aggs} FROM {{t}} WHERE {p}"),
            ("grouped by host", "", f"SELECT host, count(*), sum(v), max(t), min(f) + 0, max(id) FROM {{t}} WHERE {p} GROUP BY host ORDER BY host"),
            ("grouped by hour", "", f"SELECT date_trunc('hour', t) AS hour, count(*), max(v), min(v), count(f) FROM {{t}} GROUP BY hour ORDER BY hour"),
            ("order by limit", "", f"SELECT t FROM {{t}} WHERE {p} ORDER BY t DESC NULLS LAST LIMIT {r.randrange(1, 40)}"),
            ("order by v limit", "", f"SELECT v FROM {{t}} ORDER BY v NULLS FIRST LIMIT {r.randrange(1, 40)}"),
            ("distinct on", "", "SELECT DISTINCT ON (host) host, t FROM {t} ORDER BY host, t DESC"),
            ("index scan", "SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off;",
             f"SELECT {COLUMNS} FROM {{t}} WHERE id BETWEEN {self.some_id()} AND {self.high} ORDER BY id LIMIT 300"),
            ("index scan on host, v", "SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off;",
             f"SELECT id, v FROM {{t}} WHERE host = 'host_{r.randrange(12)}' AND v > {r.randrange(-1000, 1000)} ORDER BY id"),
            ("bitmap scan", "SET LOCAL enable_seqscan = off; SET LOCAL enable_indexscan = off;",
             f"SELECT id, t FROM {{t}} WHERE t BETWEEN '{T0}'::timestamptz + interval '{r.randrange(72)} hours' AND '{T0}'::timestamptz + interval '{r.randrange(72)} hours' ORDER BY id"),
            ("hash index", "SET LOCAL enable_seqscan = off;", f"SELECT id FROM {{t}} WHERE note = 'note{r.randrange(30)}' ORDER BY id"),
            ("tid scan", "", f"SELECT id, v FROM {{t}} WHERE ctid = ANY (ARRAY(SELECT ctid FROM {{t}} WHERE id BETWEEN {(lo := self.some_id())} AND {lo + 50})) ORDER BY id"),
            ("parallel", "SET LOCAL max_parallel_workers_per_gather = 2; SET LOCAL parallel_setup_cost = 0; SET LOCAL parallel_tuple_cost = 0; SET LOCAL min_parallel_table_scan_size = 0;",
             f"SELECT count(*), sum(v), max(t) FROM {{t}} WHERE {p}"),
            ("custom scans off", "SET LOCAL pg_columnar.enable_custom_scan = off;", f"SELECT {aggs} FROM {{t}} WHERE {p}"),
        ]
        return r.choice(qs)


def rows_digest(step, what, t, cols=COLUMNS):
    """A check answering the count and a digest of the rows of `t`, in id order. The order is
    by `id + 0` so that it comes from a sort after a scan, not from the primary key: from 16
    on, PostgreSQL would read an ordered aggregate's input by that index, one fetch per row,
    which in a debug build takes most of the test's time."""
    return f"SELECT 'chk', {step}, '{what}', '{t}', count(*), md5(coalesce(string_agg(x::text, ';' ORDER BY id + 0), '')) FROM (SELECT {cols} FROM {t}) x;"


def script(args):
    g = Gen(args.seed)
    out = [
        "SET client_min_messages = warning;",
        "SET pg_columnar.stripe_row_limit = 2500;",
        "SET extra_float_digits = 1;",
        "SET TimeZone = 'UTC';",
    ]
    for t in TABLES:
        using = {"h": "", "c": " USING pg_columnar", "s": " USING pg_columnar WITH (pg_columnar.sort_key = 'host, t')"}[t]
        out.append(f"DROP TABLE IF EXISTS {t};")
        out.append(f"CREATE TABLE {t} (id bigint PRIMARY KEY, host text, v int, t timestamptz, f float8, note text){using};")
        out.append(f"CREATE INDEX {t}_t ON {t} (t); CREATE INDEX {t}_hv ON {t} (host, v); "
                   f"CREATE INDEX {t}_note ON {t} USING hash (note);")
    steps = []  # (step, kind, statement template, (check query name, its SQL)) for the report
    in_tx = False
    savepoints = 0
    for step in range(1, args.steps + 1):
        if not in_tx and g.r.random() < 0.35:
            out.append(g.r.choice(["BEGIN;", "BEGIN;", "BEGIN ISOLATION LEVEL REPEATABLE READ;"]))
            in_tx, savepoints = True, 0
        elif in_tx and g.r.random() < 0.15:
            out.append(f"SAVEPOINT s{savepoints};")
            savepoints += 1
        if g.r.random() < 0.05:
            out.append(f"SET pg_columnar.stripe_row_limit = {g.r.choice([1024, 2500, 6000])};")
        kind, template = g.change(top=not in_tx)
        for t in TABLES:
            s = template.replace("{t}", t).replace("{check}", f"'chk', {step}, 'r', '{t}'")
            if kind == "duplicate":
                # fails whenever the table has a row (or two); inside a transaction the
                # savepoint keeps the failure from aborting it
                s = f"SAVEPOINT dup; {s} ROLLBACK TO SAVEPOINT dup;" if in_tx else s
            out.append(s)
        name, setup, q = g.check_query()
        steps.append((step, kind, template[:2000], (name, q)))
        for t in TABLES:
            # every row's id, host and v after every step; every column every tenth step (and
            # at transaction ends, and at the end): reading the long notes of every row after
            # every step would take most of the test's time in a debug build
            cols = COLUMNS if step % 10 == 0 else "id, host, v"
            whole = rows_digest(step, "w", t, cols)
            one = f"SELECT 'chk', {step}, 'q', '{t}', count(*), md5(coalesce(string_agg(x::text, ';'), '')) FROM ({q.replace('{t}', t)}) x;"
            if setup:
                # SET LOCAL needs a transaction: a block of its own outside one; inside, a
                # savepoint rolled back to, which undoes the settings
                one = (f"SAVEPOINT q; {setup} {one} ROLLBACK TO SAVEPOINT q; RELEASE SAVEPOINT q;" if in_tx
                       else f"BEGIN; {setup} {one} COMMIT;")
            out.append(whole)
            out.append(one)
        if in_tx:
            x = g.r.random()
            if savepoints and x < 0.15:
                k = g.r.randrange(savepoints)
                out.append(g.r.choice([f"ROLLBACK TO SAVEPOINT s{k};", f"RELEASE SAVEPOINT s{k};"]))
                savepoints = k if "ROLLBACK" not in out[-1] else k + 1
            elif x < 0.3:
                out.append(g.r.choice(["COMMIT;", "COMMIT;", "ROLLBACK;"]))
                in_tx = False
                # the state after the end is compared too
                for t in TABLES:
                    out.append(rows_digest(step, "e", t))
    if in_tx:
        out.append("COMMIT;")
    for t in TABLES:
        out.append(rows_digest(args.steps + 1, "w", t))
    # the table pgcol.verify walks decodes every vector
    out.append("SELECT 'verified', sum(rows) FROM pgcol.verify('c'); SELECT 'verified', sum(rows) FROM pgcol.verify('s');")
    return "\n".join(out) + "\n", steps


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--seed", type=int, default=20261204)
    ap.add_argument("--keep", help="write the generated psql script here")
    ap.add_argument("psql", nargs=argparse.REMAINDER, help="the psql command line (after --)")
    args = ap.parse_args()
    psql = [a for a in args.psql if a != "--"]
    text, steps = script(args)
    if args.keep:
        with open(args.keep, "w") as f:
            f.write(text)
    p = subprocess.run(psql + ["-A", "-t", "-F", "|", "-v", "ON_ERROR_STOP=0", "-f", "-"], input=text, capture_output=True, text=True)
    answers = collections.defaultdict(dict)  # (step, what) -> table -> answer
    verified = []
    for line in p.stdout.splitlines():
        parts = line.split("|")
        if parts[0] == "chk":
            answers[(int(parts[1]), parts[2])][parts[3]] = "|".join(parts[4:])
        elif parts[0] == "verified":
            verified.append(parts[1])
    failures = []
    errors = collections.Counter()
    for line in p.stderr.splitlines():
        if "ERROR:" in line or "FATAL:" in line or "PANIC:" in line or "server closed" in line or "connection to server" in line:
            if "duplicate key value violates unique constraint" in line:
                errors[line.split('"')[1]] += 1
            else:
                failures.append(f"unexpected: {line}")
    if len(set(errors[f"{t}_pkey"] for t in TABLES)) != 1:
        failures.append(f"primary key violations differ between the tables: {dict(errors)}")
    for (step, what), by_table in sorted(answers.items()):
        if set(by_table) != set(TABLES):
            failures.append(f"step {step} ({what}): answers from {sorted(by_table)} only")
            continue
        if len(set(by_table.values())) != 1:
            info = steps[step - 1] if step <= len(steps) else (step, "end", "", ("whole table", ""))
            what_name = {"w": "table rows", "e": "table rows after the transaction's end", "r": "RETURNING rows", "q": f"query '{info[3][0]}': {info[3][1]}"}[what]
            failures.append(f"step {step} after {info[1]} ({info[2][:300]}): {what_name} differs: {by_table}")
    whole_checks = sum(1 for (_, w) in answers if w == "w")
    if whole_checks != args.steps + 1:
        failures.append(f"{whole_checks} whole-table comparisons answered, {args.steps + 1} expected (psql stopped early?)")
    if len(verified) != 2:
        failures.append(f"pgcol.verify answered {len(verified)} of 2 times")
    kinds = collections.Counter(k for _, k, *_ in steps)
    print(f"random dml: seed {args.seed}, {args.steps} steps ({', '.join(f'{k} {n}' for k, n in sorted(kinds.items()))}), "
          f"{len(answers)} comparisons, {errors['h_pkey']} primary key violations per table, final rows {answers.get((args.steps + 1, 'w'), {}).get('h', '?')}")
    if failures or p.returncode != 0:
        print(f"random dml FAILED (replay: --seed {args.seed} --steps {args.steps} --keep FILE):")
        for f in failures[:10]:
            print("  " + f)
        if p.returncode != 0:
            print(f"  psql exited with {p.returncode}: {p.stderr[-2000:]}")
        sys.exit(1)
    print("random dml: all answers equal")


if __name__ == "__main__":
    main()

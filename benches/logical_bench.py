"""The cost of logical decoding of pg_columnar tables (benches/run --logical).

The server loads pg_columnar through shared_preload_libraries throughout. Each round restarts
it with wal_level = replica and with wal_level = logical (in alternating order) and, at each
level, loads the TSBS cpu rows with COPY into a fresh heap table and a fresh pg_columnar table
(timed by the server's clock after a CHECKPOINT, as benches/tsbs_bench.py's loads). At the
logical level a pgoutput slot and a publication of the table exist before the COPY, and the
time to decode the whole COPY from the slot (pg_logical_slot_get_binary_changes, the
statement's time) is measured too. Reports medians over the rounds, the ratio logical /
replica of each COPY, and pg_columnar's decoding time over heap's, with a same-build
self-check (odd rounds' median over even rounds') of the logical COPY of pg_columnar.
"""
import subprocess, sys
import tsbs_bench as tb

ENGINES = ["heap", "pg_columnar"]
LEVELS = ["replica", "logical"]


def restart(args, level):
    """Restarts the benchmark's cluster with `wal_level = level`, pg_columnar preloaded."""
    settings = f"-c shared_preload_libraries=pg_columnar -c wal_level={level}"
    subprocess.run(["bash", "-c", '. "$1/gate/lib.sh"; cluster_stop "$2" bench; cluster_start "$2" bench "$3" "$4"',
                    "_", args.repo, args.pg, args.port, settings], check=True)


def load_and_decode(args, engine, schema, logical):
    """One COPY into a fresh table of `engine` (seconds), and at the logical level the time to
    decode it through a pgoutput slot (seconds) and the number of messages decoded."""
    t = tb.table(engine)
    tb.psql(args, "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots;\n"
                  "DROP PUBLICATION IF EXISTS bench_pub;\n")
    tb.create(args, engine, schema)
    if logical:
        tb.psql(args, f"CREATE PUBLICATION bench_pub FOR TABLE {t};\n"
                      "SELECT 'slot' FROM pg_create_logical_replication_slot('bench_slot', 'pgoutput');\n")
    tb.psql(args, "CHECKPOINT;")
    out = tb.psql(args, "", session_cmds=(
        "SELECT extract(epoch FROM clock_timestamp()) AS t0 \\gset\n"
        f"\\copy {t} FROM '{args.data}/cpu.csv' (FORMAT csv)\n"
        "SELECT extract(epoch FROM clock_timestamp()) - :t0;\n"))
    copy = float(out.split()[-1])
    if not logical:
        return copy, None, None
    out = tb.psql(args, "", session_cmds=(
        "SELECT extract(epoch FROM clock_timestamp()) AS t0 \\gset\n"
        "SELECT count(*) FROM pg_logical_slot_get_binary_changes('bench_slot', NULL, NULL, "
        "'proto_version', '1', 'publication_names', 'bench_pub');\n"
        "SELECT extract(epoch FROM clock_timestamp()) - :t0;\n"))
    messages, seconds = out.split()[-2:]
    # (a slot left behind would keep the server from starting at wal_level = replica)
    tb.psql(args, "SELECT pg_drop_replication_slot('bench_slot');\nDROP PUBLICATION bench_pub;\n")
    return copy, float(seconds), int(messages)


def main():
    args = tb.parse_args(lambda ap: (ap.add_argument("--repo", required=True), ap.add_argument("--pg", required=True),
                                     ap.add_argument("--port", required=True)))
    schema = tb.cpu_schema(args)
    copies = {(e, l): [] for e in ENGINES for l in LEVELS}
    decodes = {e: [] for e in ENGINES}
    messages = {}
    for r in range(args.runs):
        for level in (LEVELS if r % 2 == 0 else LEVELS[::-1]):
            restart(args, level)
            for e in (ENGINES if r % 2 == 0 else ENGINES[::-1]):
                copy, decode, n = load_and_decode(args, e, schema, level == "logical")
                copies[(e, level)].append(copy)
                if decode is not None:
                    decodes[e].append(decode)
                    messages[e] = n
                print(f"round {r + 1}: {level}, {e}: COPY {copy:.2f} s" +
                      (f", decoding {decode:.2f} s ({n} messages)" if decode is not None else ""), file=sys.stderr)
    if messages["heap"] != messages["pg_columnar"]:
        sys.exit(f"decoding gave {messages['pg_columnar']} messages for pg_columnar, {messages['heap']} for heap")
    med = {k: tb.median(v) for k, v in copies.items()}
    dec = {e: tb.median(v) for e, v in decodes.items()}
    xs = copies[("pg_columnar", "logical")]
    selfcheck = tb.median(xs[0::2]) / tb.median(xs[1::2]) if len(xs) > 1 else float("nan")
    md = [f"Medians of {args.runs} rounds, seconds; pg_columnar preloaded at both levels; {messages['heap']:,} pgoutput messages decoded per COPY.",
          "",
          "| | COPY, wal_level = replica | COPY, wal_level = logical | logical / replica | decoding the COPY (pgoutput) |",
          "|---|---|---|---|---|"]
    for e in ENGINES:
        md.append(f"| {e} | {med[(e, 'replica')]:.2f} | {med[(e, 'logical')]:.2f} | "
                  f"{med[(e, 'logical')] / med[(e, 'replica')]:.2f} | {dec[e]:.2f} |")
    md.append("")
    md.append(f"pg_columnar's decoding over heap's: {dec['pg_columnar'] / dec['heap']:.2f}; self-check of "
              f"pg_columnar's logical COPY (odd rounds over even): {selfcheck:.2f}.")
    tb.write_markdown(args, md)


if __name__ == "__main__":
    main()

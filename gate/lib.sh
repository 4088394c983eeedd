# gate/lib.sh: shared shell definitions for the project's scripts (sourced, not run).
#
# Where things live (all outside the work tree, so fresh clones and CI reuse them):
#   $PGC_CACHE                 /var/cache/pg_columnar unless PG_COLUMNAR_CACHE is set.
#                              Not under $HOME: /root is mode 0700 and the server runs as
#                              an unprivileged user that must be able to exec the binaries.
#   $PGC_CACHE/pg/NN           PostgreSQL 16..19 (15 is Debian's, under /usr/lib/postgresql/15),
#                              and pg/18-cassert when gate/install-pg was asked for it
#   $PGC_CACHE/cargo-pgrx-V    cargo-pgrx, installed by gate/setup
#   $PGC_CACHE/pgrx-home       PGRX_HOME (cargo-pgrx's config.toml)
#   $PGC_CACHE/target          CARGO_TARGET_DIR for the scripts' builds
#   $PGC_CACHE/logs            build and install logs

PGC_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PGC_CACHE=${PG_COLUMNAR_CACHE:-/var/cache/pg_columnar}
PGC_PGRX_VERSION=0.19.4
PGC_MAJORS=(15 16 17 18 19)
# What ./run-tests builds and tests by default: every major, and 18 with assertions enabled
# (assertions have caught lock, snapshot and parallel-scan mistakes no release build shows).
PGC_TEST_TARGETS=("${PGC_MAJORS[@]}" 18-cassert)
# The unprivileged user that owns test clusters (initdb refuses to run as root).
PGC_PG_USER=${PG_COLUMNAR_PG_USER:-postgres}
# psql used as the client for every major: one client means one output format, so the
# regression tests' expected files are the same on 15..19.
PGC_PSQL=/usr/lib/postgresql/15/bin/psql

export PGRX_HOME=$PGC_CACHE/pgrx-home
export CARGO_TARGET_DIR=${PG_COLUMNAR_TARGET:-$PGC_CACHE/target}
export CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-$(nproc)}
export PATH=$PGC_CACHE/cargo-pgrx-$PGC_PGRX_VERSION/bin:$PATH
# rustup's cargo, where a minimal environment (cron, CI) lacks it on PATH
if ! command -v cargo >/dev/null && [ -x "${HOME:-/root}/.cargo/bin/cargo" ]; then
  export PATH=${HOME:-/root}/.cargo/bin:$PATH
fi

log() { printf '[%s %s] %s\n' "$(basename "$0")" "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# --- rustc 1.95 workaround -------------------------------------------------------------
# pgrx 0.19.4 declares rust-version = 1.96; this machine has rustc 1.95, on which it builds
# without errors or warnings. cargo-pgrx appends PGRX_BUILD_FLAGS to the cargo call that
# compiles the extension; gate/setup installs cargo-pgrx with PGC_IGNORE_RUST_VERSION.
# Delete this block and that one use once rustc >= 1.96.
rustc_1_95_workaround() {
  local minor
  minor=$(rustc --version | sed -E 's/^rustc 1\.([0-9]+).*/\1/')
  if [ "$minor" -lt 96 ]; then
    export PGRX_BUILD_FLAGS="--ignore-rust-version"
    PGC_IGNORE_RUST_VERSION=--ignore-rust-version
  else
    PGC_IGNORE_RUST_VERSION=
  fi
}
rustc_1_95_workaround
# ----------------------------------------------------------------------------------------

# apt_install PKG...: install the Debian packages that are missing (never touches sources).
apt_install() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "apt-get install ${missing[*]}"
  apt-get -o DPkg::Lock::Timeout=900 update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq "${missing[@]}" >/dev/null
}

# pg_config_path NN: the pg_config for major NN (empty if that major is not installed).
pg_config_path() {
  local p
  case "$1" in
    15) p=/usr/lib/postgresql/15/bin/pg_config ;;
    *) p=$PGC_CACHE/pg/$1/bin/pg_config ;;
  esac
  [ -x "$p" ] && [ -f "$PGC_CACHE/pg/$1/.installed" -o "$1" = 15 ] && echo "$p"
}

# installed_majors: the majors that gate/install-pg has put in place, in order.
installed_majors() {
  local nn
  for nn in "${PGC_MAJORS[@]}"; do
    [ -n "$(pg_config_path "$nn")" ] && echo "$nn"
  done
  return 0
}

# PostgreSQL 19 runs in a Debian sid root (its binaries need glibc 2.43); see gate/install-pg.
pg19_root() { echo "$PGC_CACHE/pg/19/root"; }

# pg_run NN TOOL ARGS...: run a server-side tool (initdb, pg_ctl, postgres) of major NN as
# the unprivileged cluster owner. For 19 it runs inside the sid root, where paths are the
# root's own (callers pass directories from cluster_dir).
pg_run() {
  local nn=$1 tool=$2; shift 2
  if [ "$nn" = 19 ]; then
    local r; r=$(pg19_root)
    mountpoint -q "$r/proc" || mount -t proc proc "$r/proc"
    mkdir -p "$r/dev/shm"; mountpoint -q "$r/dev/shm" || mount -t tmpfs -o mode=1777 tmpfs "$r/dev/shm"
    chroot "$r" runuser -u postgres -- /usr/lib/postgresql/19/bin/"$tool" "$@"
  else
    runuser -u "$PGC_PG_USER" -- "$(dirname "$(pg_config_path "$nn")")/$tool" "$@"
  fi
}

# cluster_dir NN NAME: the directory of cluster NAME of major NN, as the server sees it
# (first line) and as the host sees it (second line). It holds data/ and server.log and is
# owned by the cluster owner. 15..18 use $PGC_REPO/.run when the owner can reach it, else
# /var/tmp; 19's must be inside its root.
cluster_dir() {
  local nn=$1 name=$2 base
  if [ "$nn" = 19 ]; then
    echo "/var/lib/pg_columnar/$name-19"
    echo "$(pg19_root)/var/lib/pg_columnar/$name-19"
    return
  fi
  base=$PGC_REPO/.run
  mkdir -p "$base"
  if ! runuser -u "$PGC_PG_USER" -- test -x "$base"; then
    base=/var/tmp/pg_columnar-$(printf '%s' "$PGC_REPO" | md5sum | cut -c1-8)
  fi
  echo "$base/$name-$nn"
  echo "$base/$name-$nn"
}

# cluster_port NN SLOT: the loopback port of a cluster. Slots: 1 tests, 2 demo, 3 gate, 4 bench,
# 5 a subscriber (tests/replication), 6 crash, 7 out of memory (tests/oom), 8 and 9 a primary
# and its standby (tests/standby), 10 to 12 a publisher that decodes pg_columnar tables, its
# subscriber and its standby (tests/logical), 13 pg_partman and pg_cron (tests/lifecycle).
# 24000 + 100*slot + major (+50 for a variant
# such as 18-cassert): far from 5432/55432 and from pgrx's 32200+NN, and below Linux's
# ephemeral range (32768-60999 here): a port inside it can be held by any outgoing
# connection's local end, which made a server's bind fail with "Address already in use"
# while no server listened there (CI, gate-18 on 47318).
cluster_port() {
  local major=${1%%-*} variant=0
  [ "$1" = "$major" ] || variant=50
  echo $((24000 + 100 * $2 + major + variant))
}

# cluster_start NN NAME PORT [SETTINGS]: initdb (first time) and start a throwaway cluster
# listening on 127.0.0.1:PORT only (no Unix socket). SETTINGS are extra postgres options
# ("-c name=value ..."). Idempotent: a running cluster is left as it is.
cluster_start() {
  local nn=$1 name=$2 port=$3 settings=${4:-} dirs srv host
  dirs=$(cluster_dir "$nn" "$name"); srv=$(sed -n 1p <<<"$dirs"); host=$(sed -n 2p <<<"$dirs")
  if [ ! -f "$host/data/PG_VERSION" ]; then
    rm -rf "$host"; mkdir -p "$host"; chown "$(cluster_owner "$nn")" "$host"
    pg_run "$nn" initdb -D "$srv/data" -A trust -U postgres --no-locale -E UTF8 >"$host/initdb.log" 2>&1 \
      || { cat "$host/initdb.log" >&2; die "initdb failed for $name-$nn"; }
  fi
  if pg_run "$nn" pg_ctl -D "$srv/data" status >/dev/null 2>&1; then return 0; fi
  pg_run "$nn" pg_ctl -D "$srv/data" -l "$srv/server.log" -w -t 60 \
    -o "-p $port -c listen_addresses=127.0.0.1 -k '' $settings" start >/dev/null \
    || { tail -20 "$host/server.log" >&2
         ss -ltnp 2>/dev/null | grep ":$port " >&2 && echo "(another server holds port $port: stop it, e.g. a cluster left running by another checkout)" >&2
         die "could not start $name-$nn on port $port"; }
}

# standby_make NN NAME PRIMARY_PORT: a fresh cluster NAME, copied by pg_basebackup (a fast
# checkpoint) from the server at 127.0.0.1:PRIMARY_PORT and set to stream from it as a
# standby; cluster_start starts it. Not pg_basebackup -R: the connection string it writes can
# name options the server's libpq lacks, as when PostgreSQL 16-18 run with Debian's libpq of 15.
standby_make() {
  local nn=$1 name=$2 pport=$3 dirs srv host
  cluster_remove "$nn" "$name"
  dirs=$(cluster_dir "$nn" "$name"); srv=$(sed -n 1p <<<"$dirs"); host=$(sed -n 2p <<<"$dirs")
  mkdir -p "$host"; chown "$(cluster_owner "$nn")" "$host"
  pg_run "$nn" pg_basebackup -h 127.0.0.1 -p "$pport" -U postgres -D "$srv/data" -X stream -c fast >/dev/null 2>&1 \
    || return 1
  echo "primary_conninfo = 'host=127.0.0.1 port=$pport user=postgres'" >>"$host/data/postgresql.auto.conf"
  touch "$host/data/standby.signal"; chown "$(cluster_owner "$nn")" "$host/data/standby.signal"
}

# cluster_stop NN NAME: stop the cluster if it runs.
cluster_stop() {
  local srv; srv=$(cluster_dir "$1" "$2" | sed -n 1p)
  pg_run "$1" pg_ctl -D "$srv/data" status >/dev/null 2>&1 || return 0
  # a server busy with crash recovery may not stop in time: then stop it immediately
  pg_run "$1" pg_ctl -D "$srv/data" -m fast -w -t 30 stop >/dev/null 2>&1 \
    || pg_run "$1" pg_ctl -D "$srv/data" -m immediate -w stop >/dev/null
}

# cluster_remove NN NAME: stop the cluster if it runs and delete its directory, so the next
# cluster_start begins from a fresh initdb (no state, stale lock file or old settings).
cluster_remove() {
  cluster_stop "$1" "$2" || true
  rm -rf "$(cluster_dir "$1" "$2" | sed -n 2p)"
}

# cluster_owner NN: user:group that owns data directories of major NN, as the host names them.
cluster_owner() {
  if [ "$1" = 19 ]; then
    local r; r=$(pg19_root)
    echo "$(chroot "$r" id -u postgres):$(chroot "$r" id -g postgres)"
  else
    echo "$PGC_PG_USER:$(id -gn "$PGC_PG_USER")"
  fi
}

# psql_at PORT ARGS...: the common client against a local cluster.
psql_at() {
  local port=$1; shift
  PGTZ=UTC PGDATESTYLE='ISO, MDY' "$PGC_PSQL" -X -q -h 127.0.0.1 -p "$port" -U postgres "$@"
}

# install_extension NN [PROFILE [SOURCE]]: build the extension (from SOURCE, default this checkout)
# for major NN and install it into that
# major's directories (pg_config decides where). PROFILE is debug (default) or release.
install_extension() {
  local nn=$1 profile=${2:-debug} src=${3:-$PGC_REPO} pgc flags=()
  pgc=$(pg_config_path "$nn") || true
  [ -n "$pgc" ] || die "PostgreSQL $nn is not installed (gate/install-pg $nn)"
  [ "$profile" = release ] && flags+=(--release)
  mkdir -p "$PGC_CACHE/logs"
  local logf=$PGC_CACHE/logs/install-extension-$nn-$profile.log
  (cd "$src" && cargo pgrx install "${flags[@]}" --no-default-features --features "pg${nn%%-*}" \
     --pg-config "$pgc") >"$logf" 2>&1 \
    || { tail -40 "$logf" >&2; die "building the extension for PostgreSQL $nn failed (log: $logf)"; }
}

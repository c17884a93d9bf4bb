#!/usr/bin/env bash
# issue27.sh: one set of the README's performance table, every line
# against the anchor that ran beside it, ending with each line's medians
# and ratio:
#
#	cd bench && IMAGEGEN_TEST_REDIS=redis://127.0.0.1:6379/15 \
#	  IMAGEGEN_TEST_POSTGRES='postgres://postgres@127.0.0.1:5432/test?sslmode=disable' \
#	  NICE=-15 ./issue27.sh
#
# It runs, in turn (about six minutes on a 2-core machine):
#   - HTTP: httpratio.sh (serve against the bare net/http handler);
#   - Redis and PostgreSQL: this module's benchmarks against asynq and
#     River, three runs each (the table's medians of 3);
#   - Redis CPU a task: cmd/imagegen's BenchmarkServerCPU/redis, this
#     tree's test binary and 1d579fa's alternating, ROUNDS rounds;
#   - the PostgreSQL limiter: ratelimit/postgres's AllowHotKeys, this
#     tree's and 276ffcd's alternating, ROUNDS rounds.
# The two anchors are built from this repository's history (git archive:
# a shallow clone lacks them), the limiter's with this tree's benchmark
# copied in, as docs/performance.md's "How the figures are taken" says.
# Each run's raw lines go to OUT (default: a temporary directory, named
# at the end). NICE=-15 runs everything at that niceness (root only);
# ROUNDS (default 3) sets the alternating rounds; SKIP_HTTP=1 leaves
# out the HTTP line (it needs wrk). The Redis CPU benchmark starts
# redis-server processes of its own (redis-server on PATH).
set -euo pipefail
cd "$(dirname "$0")"
source ./median.sh
: "${IMAGEGEN_TEST_REDIS:?set IMAGEGEN_TEST_REDIS (a Redis database the benchmarks may write to)}"
: "${IMAGEGEN_TEST_POSTGRES:?set IMAGEGEN_TEST_POSTGRES (a PostgreSQL database the benchmarks may write to)}"
export IMAGEGEN_TEST_REDIS IMAGEGEN_TEST_POSTGRES
ROUNDS=${ROUNDS:-3}
nice=(nice -n "${NICE:-0}")
root=$(cd .. && pwd)
work=$(mktemp -d)
OUT=${OUT:-$work/out}
mkdir -p "$OUT"
trap 'rm -rf "$work/src" "$work"/*.test' EXIT

# anchor REV DIR: REV's tree extracted into DIR.
anchor() {
	if ! git -C "$root" cat-file -e "$1^{commit}" 2>/dev/null; then
		echo "issue27.sh: commit $1 is not in this clone's history (a shallow clone?): git fetch --unshallow" >&2
		exit 1
	fi
	mkdir -p "$2"
	git -C "$root" archive "$1" | tar -x -C "$2"
}
echo "building the anchors and this tree's test binaries in $work"
anchor 1d579fa "$work/src/1d579fa"
anchor 276ffcd "$work/src/276ffcd"
lim=$work/src/276ffcd/ratelimit/postgres
sed -e 's#internal/testenv/pgtest#internal/pgtest#' -e '/defer lim.Close()/d' \
	"$root/ratelimit/postgres/bench_test.go" >"$lim/bench_test.go" # 276ffcd's limiter has no Close
(cd "$work/src/1d579fa/cmd/imagegen" && go test -c -o "$work/cpu-1d579fa.test" .)
(cd "$lim" && go test -c -o "$work/lim-276ffcd.test" .)
(cd "$root/cmd/imagegen" && go test -c -o "$work/cpu-main.test" .)
(cd "$root/ratelimit/postgres" && go test -c -o "$work/lim-main.test" .)

if [[ -z ${SKIP_HTTP:-} ]]; then
	echo "HTTP (httpratio.sh)"
	ROUNDS=6 DURATION=2s NICE=${NICE:-0} ./httpratio.sh >"$OUT/http.txt"
fi
echo "Redis against asynq"
"${nice[@]}" go test -run '^$' -bench 'RedisSubmit/(store|asynq|asynq-charged)$|RedisPipeline' \
	-benchtime 20000x -count 3 >"$OUT/redis.txt"
echo "PostgreSQL against River"
"${nice[@]}" go test -run '^$' -bench 'Postgres(Submit|Pipeline)/(postgres-store|river|river-insert)$' \
	-benchtime 3000x -count 3 >"$OUT/postgres.txt"
# alternate DIR BIN ANCHOR_DIR ANCHOR_BIN BENCH BENCHTIME OUT: ROUNDS
# rounds of BENCH, this tree's test binary BIN then the anchor's, each
# run from its own package directory (BenchmarkServerCPU builds serve
# from there), their lines marked "main" and "anchor" in OUT.
alternate() {
	for _ in $(seq 1 "$ROUNDS"); do
		(cd "$1" && "${nice[@]}" "$2" -test.run '^$' -test.bench "$5" -test.benchtime "$6") | sed -n 's/^Benchmark/main Benchmark/p' >>"$7"
		(cd "$3" && "${nice[@]}" "$4" -test.run '^$' -test.bench "$5" -test.benchtime "$6") | sed -n 's/^Benchmark/anchor Benchmark/p' >>"$7"
	done
}
echo "Redis CPU a task and the PostgreSQL limiter, $ROUNDS alternating rounds"
alternate "$root/cmd/imagegen" "$work/cpu-main.test" "$work/src/1d579fa/cmd/imagegen" "$work/cpu-1d579fa.test" \
	'ServerCPU/redis$' 10000x "$OUT/cpu.txt"
alternate "$root/ratelimit/postgres" "$work/lim-main.test" "$lim" "$work/lim-276ffcd.test" \
	'AllowHotKeys/Accepted' 4000x "$OUT/limiter.txt"

# medianOf FILE NAME UNIT [WHO]: the median of the values before UNIT
# on FILE's lines of benchmark NAME (its name without the -GOMAXPROCS
# suffix), and with WHO first ("main" or "anchor") when given.
medianOf() {
	awk -v name="Benchmark$2" -v unit="$3" -v who="${4:-}" '
		who != "" && $1 != who {next}
		{
			f = (who != "") ? 2 : 1
			n = $f
			sub(/-[0-9]+$/, "", n)
			if (n != name) next
			for (i = f + 1; i <= NF; i++) if ($i == unit) print $(i - 1)
		}' "$1" | median
}
# line LABEL TARGET OURS ANCHOR HOW: a summary line; HOW is "time" (lower
# is better: the ratio is anchor/ours) or "rate" (ours/anchor).
line() {
	awk -v l="$1" -v t="$2" -v o="$3" -v a="$4" -v how="$5" 'BEGIN {
		if (o + 0 == 0 || a + 0 == 0) { printf "%-40s %-12s %12s %12s %9s\n", l, t, o, a, "n/a"; exit }
		r = (how == "time") ? a / o : o / a
		printf "%-40s %-12s %12.1f %12.1f %8.2fx\n", l, t, o, a, r }'
}
echo
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) cores; raw lines in $OUT"
printf "%-40s %-12s %12s %12s %9s\n" line target ours anchor ratio
if [[ -f $OUT/http.txt ]]; then
	grep 'over .* rounds' "$OUT/http.txt"
fi
r=$OUT/redis.txt p=$OUT/postgres.txt
line "Redis submit vs asynq (ns/op)" "≥ 1.2x" "$(medianOf "$r" RedisSubmit/store ns/op)" "$(medianOf "$r" RedisSubmit/asynq ns/op)" time
line "Redis submit vs asynq-charged (ns/op)" "–" "$(medianOf "$r" RedisSubmit/store ns/op)" "$(medianOf "$r" RedisSubmit/asynq-charged ns/op)" time
line "Redis pipeline vs asynq (tasks/s)" "≥ 1.5x" "$(medianOf "$r" RedisPipeline/imagegen tasks/s)" "$(medianOf "$r" RedisPipeline/asynq tasks/s)" rate
line "PostgreSQL pipeline vs River (tasks/s)" "≥ 1.5x" "$(medianOf "$p" PostgresPipeline/postgres-store tasks/s)" "$(medianOf "$p" PostgresPipeline/river tasks/s)" rate
line "PostgreSQL submit vs River (ns/op)" "≥ 3x" "$(medianOf "$p" PostgresSubmit/postgres-store ns/op)" "$(medianOf "$p" PostgresSubmit/river-insert ns/op)" time
# The Redis CPU a task is each round's submit plus completion.
awk '{for (i = 3; i <= NF; i++) if ($i == "cpu-µs/submit" || $i == "cpu-µs/complete") s += $(i - 1); print $1, $2, s, "µs"; s = 0}' \
	"$OUT/cpu.txt" >"$OUT/cpu-sums.txt"
c=$OUT/cpu-sums.txt l=$OUT/limiter.txt
line "Redis CPU a task, µs (ours/1d579fa)" "≤ 100 µs" "$(medianOf "$c" ServerCPU/redis µs main)" "$(medianOf "$c" ServerCPU/redis µs anchor)" rate
line "PostgreSQL limiter, ns/op (vs 276ffcd)" "≥ 4x" "$(medianOf "$l" AllowHotKeys/Accepted ns/op main)" "$(medianOf "$l" AllowHotKeys/Accepted ns/op anchor)" time
printf "%-40s %-12s %12s\n" "PostgreSQL limiter, WAL B a check" "≤ 300 B" "$(medianOf "$l" AllowHotKeys/Accepted WAL-B/op main)"

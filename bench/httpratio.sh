#!/usr/bin/env bash
# httpratio.sh: submit and poll through `imagegen serve` (memory store,
# its default request log at info to a file, metrics on the admin
# listener, request ids) beside the bare net/http baseline (barehttp),
# under wrk on loopback, interleaved in one run: ROUNDS rounds of
# bare-then-serve for each endpoint, each wrk run DURATION long with
# CONNS connections. Prints each run's requests/s, the server process's
# own CPU time per request (utime+stime from /proc/PID/stat around the
# run) and how often wrk went to sleep per request (see run), and each
# round's ratios: the rate ratio is what wrk sees, the CPU ratio moves
# less when other processes share the cores.
# It ends with each endpoint's medians of the rounds' two ratios (and
# the baseline's, with BASELINE).
#
#	cd bench && ./httpratio.sh             # ROUNDS=3 DURATION=5s CONNS=32
#
# With BASELINE=/path/to/imagegen (a binary built from another commit),
# a second serve runs that binary on the same flags, and each round runs
# bare, then this tree's serve, then the baseline's, so that the two
# commits are measured in the same run. NICE=-15 runs the servers and wrk
# at that niceness (root only), which keeps other processes on a shared
# machine from taking their turns. ENDPOINTS=submit (or poll) runs one
# endpoint only. FRESH=1 starts the servers anew before each round, so
# that each round's serve holds only that round's tasks: with no
# workers, every submit leaves a pending task in the memory store, and
# the collector's work marking them grows with the run.
#
# Needs wrk (Debian package wrk). Listens on 127.0.0.1:18090-18092 (and
# 18093-18094 with BASELINE) and
# stops the servers it started, by their PIDs, when it exits.
set -euo pipefail
cd "$(dirname "$0")"
source ./median.sh
ROUNDS=${ROUNDS:-3} DURATION=${DURATION:-5s} CONNS=${CONNS:-32} THREADS=${THREADS:-2}
nice=(nice -n "${NICE:-0}")
export KEY=bench-key-0123456789abcdef
dir=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$dir"' EXIT

(cd .. && go build -o "$dir/imagegen" ./cmd/imagegen)
go build -o "$dir/barehttp" ./barehttp

"${nice[@]}" "$dir/barehttp" -addr 127.0.0.1:18090 -key "$KEY" >"$dir/bare-task" &
pids+=($!)
# serve's defaults but for what a load test needs: a rate limit, a grant
# and a cap on pending tasks it will not reach, and no workers (the HTTP
# path alone).
startServe() { # startServe BINARY PORT LOG: starts it, sets served to its PID
	"${nice[@]}" "$1" serve -addr "127.0.0.1:$2" -admin-addr "127.0.0.1:$(($2 + 1))" -demo-key "$KEY" \
		-demo-credits 1000000000000 -rate-limit 1000000000 -max-pending 0 -workers 0 ${SERVE_FLAGS:-} 2>>"$3" &
	served=$!
	pids+=($served)
}
waitFor() { # waitFor PORT...: until each accepts connections
	for port in "$@"; do
		for _ in $(seq 1 100); do
			(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
			sleep 0.1
		done
	done
}
pollTask() { # pollTask PORT: a task submitted to the serve on PORT, to poll
	curl -sf -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
		-d '{"scene":"text-to-image","prompt":"poll me"}' "http://127.0.0.1:$1/api/v1/generate" |
		sed -n 's/.*"task_id":"\([^"]*\)".*/\1/p'
}
# startServes (re)starts this tree's serve and the baseline's, and
# submits the task each polls.
startServes() {
	for p in ${servePID:-} ${basePID:-}; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	startServe "$dir/imagegen" 18091 "$dir/serve.log"
	servePID=$served
	ports=(18091)
	if [[ -n ${BASELINE:-} ]]; then
		startServe "$BASELINE" 18093 "$dir/baseline.log"
		basePID=$served
		ports+=(18093)
	fi
	waitFor "${ports[@]}"
	task=$(pollTask 18091)
	[[ -n ${BASELINE:-} ]] && baselineTask=$(pollTask 18093)
	return 0
}
waitFor 18090
startServes

cputicks() { awk '{print $14 + $15}' "/proc/$1/stat"; } # utime+stime of PID $1, in clock ticks
# run PID URL SCRIPT TASK: one wrk run against the server PID; prints its
# requests/s, the server's CPU time per request in µs, and how often wrk
# went to sleep per request (its voluntary context switches, from GNU
# time when /usr/bin/time is there, else "-"): a server whose answers
# come later leaves wrk idle, and on a machine where waking an idle
# thread is dear the server's writes pay for it.
run() {
	local before after out sleeps=-
	local timed=()
	[[ -x /usr/bin/time ]] && timed=(/usr/bin/time -f %w -o "$dir/wrk-sleeps")
	before=$(cputicks "$1")
	out=$(TASK=$4 "${nice[@]}" "${timed[@]}" wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" -s "wrk/$3.lua" "$2")
	after=$(cputicks "$1")
	if grep -q Non-2xx <<<"$out"; then echo "non-2xx answers from $2: $out" >&2; exit 1; fi
	[[ ${#timed[@]} -gt 0 ]] && sleeps=$(tail -1 "$dir/wrk-sleeps")
	awk -v ticks=$((after - before)) -v hz="$(getconf CLK_TCK)" -v sleeps="$sleeps" '
		/^Requests\/sec/ {rps = $2} /requests in/ {n = $1}
		END {printf "%.0f %.1f %s\n", rps, ticks / hz * 1e6 / n, sleeps == "-" ? "-" : sprintf("%.2f", sleeps / n)}' <<<"$out"
}
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) cores; wrk -t$THREADS -c$CONNS -d$DURATION"
for endpoint in ${ENDPOINTS:-poll submit}; do
	for round in $(seq 1 "$ROUNDS"); do
		if [[ -n ${FRESH:-} && -n ${ranOnce:-} ]]; then startServes; fi
		ranOnce=1
		read -r bare bcpu bsleeps < <(run "${pids[0]}" http://127.0.0.1:18090 "$endpoint" "$(cat "$dir/bare-task")")
		read -r ours ocpu osleeps < <(run "$servePID" http://127.0.0.1:18091 "$endpoint" "$task")
		awk -v e="$endpoint" -v r="$round" -v b="$bare" -v o="$ours" -v bc="$bcpu" -v oc="$ocpu" -v bs="$bsleeps" -v os="$osleeps" 'BEGIN {
			printf "%s round %s: bare %d req/s (%.1f µs CPU each, wrk sleeps %s), serve %d req/s (%.1f µs, %s): %.2fx the rate, %.2fx the CPU per request\n", e, r, b, bc, bs, o, oc, os, o/b, oc/bc }'
		echo "$ours $bare $ocpu $bcpu" >>"$dir/ratios-$endpoint-serve"
		if [[ -n ${BASELINE:-} ]]; then
			read -r base basecpu basesleeps < <(run "$basePID" http://127.0.0.1:18093 "$endpoint" "$baselineTask")
			awk -v e="$endpoint" -v r="$round" -v b="$bare" -v o="$base" -v bc="$bcpu" -v oc="$basecpu" -v os="$basesleeps" 'BEGIN {
				printf "%s round %s: baseline serve %d req/s (%.1f µs, wrk sleeps %s): %.2fx the rate, %.2fx the CPU per request\n", e, r, o, oc, os, o/b, oc/bc }'
			echo "$base $bare $basecpu $bcpu" >>"$dir/ratios-$endpoint-baseline"
		fi
	done
done
for f in "$dir"/ratios-*; do
	[[ -e $f ]] || continue
	name=${f##*/ratios-}
	rate=$(awk '{print $1 / $2}' "$f" | median)
	cpu=$(awk '{print $3 / $4}' "$f" | median)
	printf "%s %s over %d rounds: median %.3fx the rate, %.3fx the CPU per request\n" "${name%-*}" "${name##*-}" "$(wc -l <"$f")" "$rate" "$cpu"
done
echo "serve's log: $(wc -l <"$dir/serve.log") lines"

#!/usr/bin/env bash
# httpratio.sh: submit and poll through `imagegen serve` (memory store,
# its default request log at info to a file, metrics on the admin
# listener, request ids) beside the bare net/http baseline (barehttp),
# under wrk on loopback, interleaved in one run: ROUNDS rounds of
# bare-then-serve for each endpoint, each wrk run DURATION long with
# CONNS connections. Prints each run's requests/s and the server process's
# own CPU time per request (utime+stime from /proc/PID/stat around the
# run), and each round's ratios: the rate ratio is what wrk sees, the CPU
# ratio moves less when other processes share the cores.
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
# requests/s and the server's CPU time per request in µs.
run() {
	local before after out
	before=$(cputicks "$1")
	out=$(TASK=$4 "${nice[@]}" wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" -s "wrk/$3.lua" "$2")
	after=$(cputicks "$1")
	if grep -q Non-2xx <<<"$out"; then echo "non-2xx answers from $2: $out" >&2; exit 1; fi
	awk -v ticks=$((after - before)) -v hz="$(getconf CLK_TCK)" '
		/^Requests\/sec/ {rps = $2} /requests in/ {n = $1}
		END {printf "%.0f %.1f\n", rps, ticks / hz * 1e6 / n}' <<<"$out"
}
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) cores; wrk -t$THREADS -c$CONNS -d$DURATION"
for endpoint in ${ENDPOINTS:-poll submit}; do
	for round in $(seq 1 "$ROUNDS"); do
		if [[ -n ${FRESH:-} && -n ${ranOnce:-} ]]; then startServes; fi
		ranOnce=1
		read -r bare bcpu < <(run "${pids[0]}" http://127.0.0.1:18090 "$endpoint" "$(cat "$dir/bare-task")")
		read -r ours ocpu < <(run "$servePID" http://127.0.0.1:18091 "$endpoint" "$task")
		awk -v e="$endpoint" -v r="$round" -v b="$bare" -v o="$ours" -v bc="$bcpu" -v oc="$ocpu" 'BEGIN {
			printf "%s round %s: bare %d req/s (%.1f µs CPU each), serve %d req/s (%.1f µs): %.2fx the rate, %.2fx the CPU per request\n", e, r, b, bc, o, oc, o/b, oc/bc }'
		if [[ -n ${BASELINE:-} ]]; then
			read -r base basecpu < <(run "$basePID" http://127.0.0.1:18093 "$endpoint" "$baselineTask")
			awk -v e="$endpoint" -v r="$round" -v b="$bare" -v o="$base" -v bc="$bcpu" -v oc="$basecpu" 'BEGIN {
				printf "%s round %s: baseline serve %d req/s (%.1f µs): %.2fx the rate, %.2fx the CPU per request\n", e, r, o, oc, o/b, oc/bc }'
		fi
	done
done
echo "serve's log: $(wc -l <"$dir/serve.log") lines"

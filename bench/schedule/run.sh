#!/usr/bin/env bash
# Real-time figures of issue 24 through `imagegen serve` (docs/scheduling.md),
# on the memory store, and on Redis and PostgreSQL when their URLs are given:
#
#   bench/schedule/run.sh                                    # memory only
#   REDIS=redis://127.0.0.1:6379/12 POSTGRES='postgres://postgres@127.0.0.1:5432/test?sslmode=disable' bench/schedule/run.sh
#
# Every server listens on loopback only and is stopped by its PID. On Redis
# only the store's keys ({imagegen}*) of the given database are deleted,
# before and after; on PostgreSQL the schema the script creates is dropped.
# Timings come from each task's started_at/finished_at (?view=full).
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=$(mktemp -d)/imagegen
go build -o "$bin" ./cmd/imagegen
A=owner-a-key-0123456789 B=owner-b-key-0123456789
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

# start NAME ARGS...: runs serve (or worker) in the background; for serve,
# sets $base once it listens.
start() {
	local log; log=$(mktemp)
	"$bin" "$@" >"$log" 2>&1 &
	pids+=($!)
	if [ "$1" = serve ]; then
		for _ in $(seq 1 200); do
			base=$(grep -o 'api=http://127.0.0.1:[0-9]*' "$log" | head -1 | cut -d= -f2) || true
			[ -n "$base" ] && return
			sleep 0.05
		done
		echo "serve did not start:" >&2; cat "$log" >&2; exit 1
	fi
}
stop_all() { cleanup; for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done; pids=(); }

submit() { # KEY N: submits N tasks at once (16 requests in flight) and prints their ids
	seq 1 "$2" | xargs -P 16 -I{} curl -s -X POST "$base/api/v1/generate" -H "Authorization: Bearer $1" \
		-H "Content-Type: application/json" -d '{"scene":"text-to-image","prompt":"a lighthouse"}' | jq -r .task_id
}
full() { curl -s "$base/api/v1/tasks/$2?view=full" -H "Authorization: Bearer $1"; }
# t is a jq function: an RFC 3339 time with fractions, in seconds.
t='def t: (sub("\\.[0-9]+";"") | fromdate) + ((capture("\\.(?<f>[0-9]+)").f // "0") | ("0." + .) | tonumber);'
credits() { curl -s "$base/api/v1/credits" -H "Authorization: Bearer $1" | jq .credits_remaining; }
wait_done() { # KEY ID
	for _ in $(seq 1 600); do
		s=$(full "$1" "$2" | jq -r .status)
		[ "$s" = success ] || [ "$s" = failed ] && return
		sleep 0.1
	done
}
# runs KEY IDS...: prints "start_epoch finish_epoch KEY" per task
runs() {
	local key=$1; shift
	for id in "$@"; do
		wait_done "$key" "$id"
		full "$key" "$id" | jq -r --arg k "$key" "$t"' [(.started_at|t), (.finished_at|t), $k, .status] | @tsv'
	done
}
most_at_once() { # reads "start finish ..." lines; prints the largest overlap
	awk '{s[NR]=$1; f[NR]=$2} END {m=0; for(i=1;i<=NR;i++){n=0; for(j=1;j<=NR;j++) if (s[j]<=s[i] && f[j]>s[i]) n++; if(n>m)m=n}; print m}'
}

measure() { # STORE-NAME STORE-FLAGS...
	local name=$1; shift
	local common=(-demo-key "$A" -demo-key "$B" -demo-credits 200 -rate-limit 1000000 "$@")

	start serve "${common[@]}" -addr 127.0.0.1:0 -workers 2 -placeholder-delay 1s
	ids=$(submit "$A" 30)
	b=$(submit "$B" 1)
	wait_done "$B" "$b"
	wait_b=$(full "$B" "$b" | jq -r "$t"' (.started_at|t) - (.created_at|t) | . * 100 | round / 100')
	echo "$name: 2 workers, 1 s generations: b's task started ${wait_b} s after its submit, behind a's 30"
	for id in $ids; do wait_done "$A" "$id"; done
	stop_all

	start serve "${common[@]}" -addr 127.0.0.1:0 -workers 2 -placeholder-delay 500ms
	ia=$(submit "$A" 20); ib=$(submit "$B" 20)
	all=$( (runs "$A" $ia; runs "$B" $ib) | sort -n)
	ofb=$(echo "$all" | head -10 | grep -c "$B" || true)
	ok=$(echo "$all" | grep -c success || true)
	echo "$name: 2 workers, 0.5 s generations, 20+20 backlogged (a's first): b got $ofb of the first 10 starts; $ok of 40 succeeded"
	stop_all

	if [ "$name" != memory ]; then
		start serve "${common[@]}" -addr 127.0.0.1:0 -workers 4 -placeholder-delay 200ms -model-concurrency placeholder=1
		start worker "$@" -workers 4 -placeholder-delay 200ms -model-concurrency placeholder=1
		ia=$(submit "$A" 10); ib=$(submit "$B" 10)
		most=$( (runs "$A" $ia; runs "$B" $ib) | most_at_once)
		echo "$name: -model-concurrency placeholder=1, 4 workers in serve + 4 in a worker process: at most $most placeholder generation(s) at once"
		stop_all
	fi

	start serve "${common[@]}" -addr 127.0.0.1:0 -workers 4 -placeholder-delay 300ms -owner-concurrency 1
	ia=$(submit "$A" 8); ib=$(submit "$B" 8)
	ra=$(runs "$A" $ia); rb=$(runs "$B" $ib)
	echo "$name: -owner-concurrency 1, 4 workers: a at most $(echo "$ra" | most_at_once), b at most $(echo "$rb" | most_at_once) running at once; both owners together at most $(printf '%s\n%s\n' "$ra" "$rb" | most_at_once)"
	stop_all

	start serve "${common[@]}" -addr 127.0.0.1:0 -workers 0 -max-pending 5
	before=$(credits "$A")
	submit "$A" 5 >/dev/null
	code=$(curl -s -o /tmp/sched-6th.json -w '%{http_code}' -X POST "$base/api/v1/generate" -H "Authorization: Bearer $A" -H "Content-Type: application/json" -d '{"scene":"text-to-image","prompt":"sixth"}')
	charged=$((before - $(credits "$A")))
	other=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$base/api/v1/generate" -H "Authorization: Bearer $B" -H "Content-Type: application/json" -d '{"scene":"text-to-image","prompt":"mine"}')
	echo "$name: -max-pending 5: a's 6th is $code $(jq -r .error.code /tmp/sched-6th.json) ($(jq -r .error.message /tmp/sched-6th.json)); $charged credits charged for the 6 submits; b's submit is $other"
	stop_all
}

measure memory
if [ -n "${REDIS:-}" ]; then
	wipe() { redis-cli -u "$REDIS" --scan --pattern '{imagegen}*' | xargs -r redis-cli -u "$REDIS" DEL >/dev/null; }
	wipe
	measure redis -redis "$REDIS"
	wipe
fi
if [ -n "${POSTGRES:-}" ]; then
	schema=imagegen_sched_$$
	"$bin" migrate -postgres "$POSTGRES" -schema "$schema" >/dev/null
	measure postgres -postgres "$POSTGRES" -schema "$schema"
	psql "$POSTGRES" -qc "SET client_min_messages = warning; DROP SCHEMA \"$schema\" CASCADE" >/dev/null
fi

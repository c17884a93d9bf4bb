#!/usr/bin/env bash
# rediscpu.sh: Redis CPU per end-to-end task. It starts a redis-server of
# its own (the machine's binary, on a free loopback port, nothing saved,
# so that no other client's work is counted) and `imagegen serve` on it
# with serve's defaults (the Redis rate limiter, request logs, workers,
# the placeholder model with no delay drawing 16-pixel images, so that
# the run measures the service rather than PNG encoding, their bytes kept
# in Redis), then:
#
#   1. reads the server's own CPU time (INFO cpu: used_cpu_user +
#      used_cpu_sys, which are the redis-server process's getrusage) while
#      idle for IDLE seconds, to know what an idle server with its clients
#      spends;
#   2. submits through HTTP with wrk for DURATION (POST /api/v1/generate:
#      key lookup, rate-limit check, submit), every answer 201;
#   3. waits until every task has ended (queue stats once a second), and
#      reads the CPU time again.
#
# Redis CPU per task = (CPU used - idle rate x elapsed) / tasks. Prints
# the parts; COMMANDSTATS=1 adds Redis's own time per command and task
# (INFO commandstats, reset at the start). Needs redis-server and wrk (Debian packages redis-server,
# wrk). Stops what it started, by PID, when it exits.
#
#	cd bench && ./rediscpu.sh        # DURATION=5s CONNS=32 WORKERS=8 IDLE=3
set -euo pipefail
cd "$(dirname "$0")"
DURATION=${DURATION:-5s} CONNS=${CONNS:-32} WORKERS=${WORKERS:-8} IDLE=${IDLE:-3}
export KEY=bench-key-0123456789abcdef
dir=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$dir"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --bind 127.0.0.1 --port "$port" --save "" --appendonly no --dir "$dir" >"$dir/redis.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
(cd .. && go build -o "$dir/imagegen" ./cmd/imagegen)
url="redis://127.0.0.1:$port/0"
"$dir/imagegen" serve -addr 127.0.0.1:18111 -redis "$url" -demo-key "$KEY" -demo-credits 1000000000 \
	-rate-limit 1000000000 -workers "$WORKERS" -placeholder-delay 0s -placeholder-size 16 -console=false ${SERVE_FLAGS:-} 2>"$dir/serve.log" &
pids+=($!)
for _ in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/18111) 2>/dev/null && break; sleep 0.1; done

cpu() { redis-cli -p "$port" info cpu | awk -F: '/^used_cpu_(user|sys):/ {s += $2} END {printf "%.6f\n", s}'; }
pending() { "$dir/imagegen" inspect stats -redis "$url" 2>/dev/null | awk '/pending|processing/ {s += $NF} END {print s + 0}'; }

redis-cli -p "$port" config resetstat >/dev/null
c0=$(cpu); sleep "$IDLE"; c1=$(cpu)
idle_rate=$(awk -v a="$c0" -v b="$c1" -v t="$IDLE" 'BEGIN {print (b - a) / t}')
t0=$(date +%s.%N); c2=$(cpu)
out=$(wrk -t2 -c"$CONNS" -d"$DURATION" -s wrk/submit.lua http://127.0.0.1:18111)
if grep -q Non-2xx <<<"$out"; then echo "non-2xx answers: $out" >&2; exit 1; fi
tasks=$(awk '/requests in/ {print $1}' <<<"$out")
for _ in $(seq 1 600); do [ "$(pending)" = 0 ] && break; sleep 1; done
c3=$(cpu); t1=$(date +%s.%N)
echo "redis-server $(redis-server --version | awk '{print $3}'), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) cores"
awk -v n="$tasks" -v c="$(awk -v a="$c2" -v b="$c3" 'BEGIN {print b - a}')" -v i="$idle_rate" -v t="$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')" 'BEGIN {
	printf "tasks: %d submitted over HTTP and finished in %.1f s\n", n, t
	printf "Redis CPU: %.3f s in all, idle %.4f s/s, so %.1f us per task\n", c, i, (c - i * t) / n * 1e6 }'
if [ -n "${COMMANDSTATS:-}" ]; then # where the time went, by command (scripts include the commands they call)
	redis-cli -p "$port" info commandstats | tr ':,=' '   ' |
		awk -v n="$tasks" '/^cmdstat_/ {printf "  %-28s %8d calls %8.2f per task %7.1f us per task\n", $1, $3, $3 / n, $5 / n}' | sort -k7 -nr | head -16
fi

#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# http_guest.sh: run in the guest by scripts/bench/bench.sh, after idgen_bench,
# with the module loaded and a lease set: IDs/s through idgen-httpd over
# /dev/idgen at 1000 IDs per request (wrk), against the node's ceiling.
# The server on the second vCPU, wrk on the first.  Prints its section of
# the report.
set -eu

secs=5
log=/tmp/idgen-httpd.log
taskset -c 1 helper/httpd/idgen-httpd --device /dev/idgen --listen 127.0.0.1:0 \
	--clock-check no --threads 1 >"$log" 2>&1 &
pid=$!
port=
for _ in $(seq 1 100); do
	port=$(sed -n 's/.*listening on .* (port \([0-9]*\)).*/\1/p' "$log")
	[ -n "$port" ] && break
	sleep 0.1
done
[ -n "$port" ] || { cat "$log"; exit 1; }
printf 'wrk.method = "POST"\nwrk.body = %s\nwrk.headers["Content-Type"] = "application/json"\n' \
	"'{\"count\":1000}'" >/tmp/count1000.lua
taskset -c 0 wrk -t1 -c8 -d${secs}s -s /tmp/count1000.lua \
	"http://127.0.0.1:$port/v1/ids:next" >/tmp/wrk.out
kill -TERM "$pid"
wait "$pid" || true
awk -v ceiling=4096000 '
/ requests in / { reqs = $1; secs = $4 + 0 }
/Non-2xx/ { bad = $NF }
END {
	ok = (reqs - bad) / secs
	print "## HTTP in the guest: IDs/s with count=1000 (wrk, 8 connections)"
	print ""
	print "| requests/s | answered 200 per s | IDs/s delivered | share of the node ceiling (4096000 IDs/s) |"
	print "|---|---|---|---|"
	printf "| %.0f | %.0f | %.0f | %.1f%% |\n", reqs / secs, ok, ok * 1000,
		100 * ok * 1000 / ceiling
	print ""
	print "idgen-httpd --device /dev/idgen --threads 1 on the second vCPU, wrk on"
	print "the first. idgen-httpd reads through one open file of /dev/idgen, which"
	print "alone may take the whole node. Under TCG the HTTP path is emulated"
	print "too: the host section below says what HTTP costs, and there the"
	print "service delivers the ceiling of the node."
}' /tmp/wrk.out

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# fleet-guest.sh MODULE OWNER ETCD-URL PREFIX PORT: one ID host of
# tests/vm/fleet-test.sh, run as root in a disposable guest
# (tests/vm/run-guest.sh --hostfwd).  It loads idgen.ko, marks the guest's
# clock synchronised (there is no NTP in a guest), runs idgend in etcd mode
# against the host's etcd at ETCD-URL (through QEMU's user network) as
# OWNER, and idgen-httpd on /dev/idgen on 0.0.0.0:PORT, which the host
# reaches through its forward.  Their logs go to the console (each line
# starts with the program's name).
#
# It serves until the key PREFIX/fleet-stop appears in etcd (the host's
# signal that the test is over), then stops idgen-httpd and idgend with
# SIGTERM (idgend releases its number), unloads the module and exits 0 if
# both exited 0 and nothing died before; 1 otherwise.  Never run it outside
# a guest.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
module=${1:?usage: fleet-guest.sh MODULE OWNER ETCD-URL PREFIX PORT}
owner=${2:?} etcd=${3:?} prefix=${4:?} port=${5:?}
idgend=$top/helper/idgend/idgend
httpd=$top/helper/httpd/idgen-httpd
clock_sync=$top/build/idgend-test/clock_sync
# Longest a guest serves without the host's signal (a host that died).
max_serve_s=${FLEET_GUEST_MAX_S:-1200}

if [ "${IDGEN_GUEST:-}" != 1 ]; then
	echo "fleet-guest.sh: refusing to run outside a test guest" >&2
	exit 2
fi

say() { echo "fleet-guest $owner: $*"; }
die() {
	say "FAILED: $*"
	exit 1
}

dpid=
hpid=
# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
	[ -n "$hpid" ] && kill -KILL "$hpid" 2>/dev/null
	[ -n "$dpid" ] && kill -KILL "$dpid" 2>/dev/null
}
trap cleanup EXIT

insmod "$module" || die "insmod $module"
[ -x "$clock_sync" ] || die "no $clock_sync (tests/idgend/run.sh builds it)"
"$clock_sync" sync >/dev/null || die "cannot mark the clock synchronised"

# TCG is slow: a lease of seconds, renewed often; the freeze the host puts
# this guest through may outlast the lease.
"$idgend" --mode etcd --owner "$owner" --endpoints "$etcd" --prefix "$prefix" \
	--runtime-dir /run/idgend --lease-ms 10000 --renew-ms 2000 \
	--timeout-ms 1000 --claim-retry-ms 1000 --start-timeout-ms 120000 2>&1 &
dpid=$!
"$httpd" --listen "0.0.0.0:$port" --device /dev/idgen --ready-margin-ms 2000 2>&1 &
hpid=$!
say "serving on port $port, etcd $etcd"

# The etcd key, base64, for its JSON gateway.
stop_key=$(printf '%s' "$prefix/fleet-stop" | base64 -w0)
stopped() {
	curl -s -m 5 -X POST "$etcd/v3/kv/range" -d "{\"key\":\"$stop_key\"}" |
		grep -q '"count":"[1-9]'
}
alive() { kill -0 "$dpid" 2>/dev/null && kill -0 "$hpid" 2>/dev/null; }

# (SECONDS counts this guest's time: a frozen guest's stands still.)
until stopped; do
	alive || die "idgend or idgen-httpd died"
	((SECONDS < max_serve_s)) || die "no stop signal from the host in ${max_serve_s}s"
	sleep 1
done
say "stop signal seen"

status=0
kill -TERM "$hpid"
wait "$hpid"
rc=$?
hpid=
[ $rc -eq 0 ] || { status=1 && say "idgen-httpd: SIGTERM, exit $rc"; }
kill -TERM "$dpid"
wait "$dpid"
rc=$?
dpid=
[ $rc -eq 0 ] || { status=1 && say "idgend: SIGTERM, exit $rc"; }
rmmod idgen || { status=1 && say "rmmod idgen failed"; }
say "done, status $status"
exit $status

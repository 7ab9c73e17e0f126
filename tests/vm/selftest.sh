#!/usr/bin/env bash
# selftest.sh - a tiny self-check of the VM harness (kernels.sh, run-guest.sh).
#
# Boots each kernel that kernels.sh lists once, then the first kernel five
# more times for exit-status, argument, kernel-problem and network checks. Prints one
# line per check and a final "N passed, N failed"; exits 1 if any failed.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
run_guest=$here/run-guest.sh

passed=0
failed=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/idgen-vm-selftest.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

pass() {
    echo "PASS $*"
    passed=$((passed + 1))
}

fail() { # name reason
    echo "FAIL $1: $2"
    failed=$((failed + 1))
    # The last of the console and the harness's messages, to see why.
    if [[ -s $tmp/out ]]; then tail -n 15 "$tmp/out" | sed 's/^/    out| /'; fi
    if [[ -s $tmp/err ]]; then tail -n 5 "$tmp/err" | sed 's/^/    err| /'; fi
}

# guest KVER COMMAND...: runs run-guest.sh, console in $tmp/out, messages in
# $tmp/err, exit status in $status and wall time in $secs.
guest() {
    local start=$SECONDS
    status=0
    "$run_guest" --timeout 180 "$@" >"$tmp/out" 2>"$tmp/err" || status=$?
    secs=$((SECONDS - start))
}

has_line() { grep -qxF -- "$1" "$tmp/out"; }

if ! kernels=$("$here/kernels.sh"); then
    echo "FAIL kernels.sh: no kernel to test"
    echo "0 passed, 1 failed"
    exit 1
fi
mapfile -t kernels <<<"$kernels"

# 1. Each kernel boots, runs a host program in the right kernel, has a
#    writable /tmp and a wall clock close to the host's.
for k in "${kernels[@]}"; do
    name="boot $k"
    guest "$k" sh -c 'uname -r; ls /tmp; date -u; test -w /tmp'
    if ((status != 0)); then
        fail "$name" "exit status $status, expected 0"
    elif ! has_line "$k"; then
        fail "$name" "uname -r did not print $k"
    else
        pass "$name (${secs}s)"
    fi
    # `date -u` prints e.g. "Sun Nov 29 21:37:20 UTC 2026".
    guest_date=$(grep -aE '^[A-Z][a-z]{2} [A-Z][a-z]{2} [ 0-9]{2} [0-9:]{8} UTC [0-9]{4}$' "$tmp/out" | tail -n 1 || true)
    if [[ -z $guest_date ]]; then
        fail "clock $k" "no date -u output"
    else
        skew=$(($(date -u +%s) - $(date -u -d "$guest_date" +%s)))
        if ((skew < -5 || skew > secs + 5)); then
            fail "clock $k" "guest clock off by ${skew}s from the host"
        else
            pass "clock $k (guest UTC within boot time of the host's)"
        fi
    fi
done

k=${kernels[0]}

# 2. The guest command's exit status is passed through.
guest "$k" sh -c 'exit 3'
if ((status == 3)); then
    pass "exit status 3 passed through ($k, ${secs}s)"
else
    fail "exit status 3 passed through ($k)" "got $status"
fi

# 3. Arguments arrive unsplit and unexpanded, the working directory is the
#    caller's, and a kernel warning fails the run although the command
#    succeeded.
weird="a b 'c' \"d\" \$HOME \`true\` \\n *"
# shellcheck disable=SC2016  # $1 is for the guest shell
guest "$k" sh -c 'pwd; printf "<%s>\n" "$1"; echo "<4>WARNING: idgen selftest" >/dev/kmsg' sh "$weird"
if has_line "$PWD" && has_line "<$weird>"; then
    pass "arguments and working directory ($k)"
else
    fail "arguments and working directory ($k)" "pwd or argument not echoed back intact"
fi
if ((status == 125)) && grep -q 'kernel problem' "$tmp/err"; then
    pass "kernel WARNING fails the run ($k)"
else
    fail "kernel WARNING fails the run ($k)" "exit status $status, expected 125 with a message"
fi

# 4. The network options.  A forward from anywhere but 127.0.0.1 is refused;
#    without --hostfwd the guest has no card; with it, eth0 is 10.0.2.15,
#    the host's loopback answers at 10.0.2.2, nothing beyond 10.0.2.0/24 is
#    routed, and the forward reaches a server in the guest.
guest --hostfwd tcp:0.0.0.0:8080-:8080 "$k" true
if ((status == 2)) && grep -q 'tcp:127.0.0.1:HOSTPORT' "$tmp/err"; then
    pass "--hostfwd off the loopback refused ($k)"
else
    fail "--hostfwd off the loopback refused ($k)" "exit status $status, expected 2"
fi
guest "$k" ls /sys/class/net
if ((status == 0)) && has_line lo && ! has_line eth0; then
    pass "no network card without --hostfwd ($k)"
else
    fail "no network card without --hostfwd ($k)" "status $status, or an eth0"
fi
free_port() {
    local p
    while :; do
        p=$((20000 + RANDOM % 12000))  # below the ephemeral range: see etcd-lib.sh
        (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p" && return; }
    done
}
mkdir -p "$tmp/www" && echo hello-from-the-host >"$tmp/www/hello"
host_port=$(free_port) fwd_port=$(free_port)
python3 -m http.server --bind 127.0.0.1 --directory "$tmp/www" "$host_port" >/dev/null 2>&1 &
server_pid=$!
# shellcheck disable=SC2016  # $1 is for the guest shell
"$run_guest" --timeout 180 --hostfwd "tcp:127.0.0.1:$fwd_port-:8080" "$k" sh -c '
    ip -4 -o addr show eth0 | grep -o "inet [0-9./]*"
    curl -s -m 10 "http://10.0.2.2:$1/hello"
    ip route get 192.0.2.1 >/dev/null 2>&1 || echo "no route beyond"
    echo hello-from-the-guest >/tmp/hello
    cd /tmp && exec timeout 60 python3 -m http.server --bind 0.0.0.0 8080' sh "$host_port" \
    >"$tmp/out" 2>"$tmp/err" &
guest_pid=$!
from_guest=
for ((t = 0; t < 120; t++)); do
    from_guest=$(curl -s -m 2 "http://127.0.0.1:$fwd_port/hello" || true)
    [[ -n $from_guest ]] && break
    kill -0 "$guest_pid" 2>/dev/null || break
    sleep 1
done
kill -TERM "$guest_pid" "$server_pid" 2>/dev/null || true
wait "$guest_pid" "$server_pid" 2>/dev/null || true
if has_line "inet 10.0.2.15/24" && has_line hello-from-the-host &&
    has_line "no route beyond" && [[ $from_guest == hello-from-the-guest ]]; then
    pass "--hostfwd: eth0 10.0.2.15, the host's loopback at 10.0.2.2, no route beyond, the forward in ($k)"
else
    fail "--hostfwd ($k)" "address, host server, route or forward missing (from the guest: '$from_guest')"
fi

echo "$passed passed, $failed failed"
((failed == 0))

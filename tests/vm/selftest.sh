#!/usr/bin/env bash
# selftest.sh - a tiny self-check of the VM harness (kernels.sh, run-guest.sh).
#
# Boots each kernel that kernels.sh lists once, then the first kernel three
# more times for exit-status, argument and kernel-problem checks. Prints one
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

echo "$passed passed, $failed failed"
((failed == 0))

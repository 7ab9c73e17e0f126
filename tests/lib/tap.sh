# SPDX-License-Identifier: GPL-2.0
#
# tap.sh: sourced by the test scripts that print TAP result lines.
#   ok NAME / not_ok NAME   one result; not_ok makes $status 1
#   check NAME CMD...       a result from CMD's exit status
# $n counts the results printed; exit with "$status" at the end.

n=0
status=0

ok() { n=$((n + 1)); echo "ok $n $1"; }
not_ok() { n=$((n + 1)); echo "not ok $n $1"; status=1; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else not_ok "$name"; fi; }

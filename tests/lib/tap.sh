# SPDX-License-Identifier: GPL-2.0
#
# tap.sh: sourced by the test scripts that print TAP result lines.
#   ok NAME / not_ok NAME   one result; not_ok makes $status 1
#   tap_skip NAME [WHY]     one result skipped ("ok N NAME # SKIP WHY")
#   check NAME CMD...       a result from CMD's exit status
#   tap_run PREFIX CMD...   renumber the TAP CMD prints into ours
#   tap_step DESC CMD...    a result from CMD, its output shown on failure
# $n counts the results printed, and $tap_passed, $tap_failed and
# $tap_skipped each kind (for a summary line such as scripts/check.sh's);
# exit with "$status" at the end.

n=0
status=0
tap_passed=0
tap_failed=0
tap_skipped=0

ok() { n=$((n + 1)); tap_passed=$((tap_passed + 1)); echo "ok $n $1"; }
not_ok() { n=$((n + 1)); tap_failed=$((tap_failed + 1)); echo "not ok $n $1"; status=1; }
tap_skip() { n=$((n + 1)); tap_skipped=$((tap_skipped + 1)); echo "ok $n $1 # SKIP${2:+ $2}"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else not_ok "$name"; fi; }

# (Their locals start with _tap_: bash's scoping would hand a plain "out"
# to the functions they run.)
#
# tap_run PREFIX CMD...: run a command that prints TAP and renumber its
# results into ours as "PREFIX: name"; anything else it prints becomes a
# comment.  Its exit status counts too.
tap_run() {
	local prefix=$1 line rc _tap_log
	shift
	_tap_log=$(mktemp) || { not_ok "$prefix: mktemp"; return 1; }
	"$@" >"$_tap_log" 2>&1
	rc=$?
	[ $rc -eq 0 ] || status=1
	while IFS= read -r line; do
		if [[ $line =~ ^(not\ )?ok\ [0-9]+\ ?(-\ )?(.*)$ ]]; then
			n=$((n + 1))
			if [ -n "${BASH_REMATCH[1]}" ]; then
				status=1
				tap_failed=$((tap_failed + 1))
			elif [[ $line == *"# SKIP"* ]]; then
				tap_skipped=$((tap_skipped + 1))
			else
				tap_passed=$((tap_passed + 1))
			fi
			echo "${BASH_REMATCH[1]}ok $n $prefix: ${BASH_REMATCH[3]}"
		elif [[ $line =~ ^1\.\.[0-9]+$ || $line =~ ^TAP\ version ]]; then
			:
		elif [[ $line =~ ^# || -z $line ]]; then
			echo "$line"
		else
			echo "# $line"
		fi
	done <"$_tap_log"
	rm -f "$_tap_log"
	[ $rc -eq 0 ] || echo "# $prefix exited with status $rc"
	return $rc
}

# tap_step DESC CMD...: one result from CMD; its output is shown only when
# it failed.
tap_step() {
	local desc=$1 rc _tap_log
	shift
	_tap_log=$(mktemp) || { not_ok "$desc: mktemp"; return 1; }
	"$@" >"$_tap_log" 2>&1
	rc=$?
	if [ $rc -eq 0 ]; then
		ok "$desc"
	else
		not_ok "$desc"
		sed 's/^/# /' "$_tap_log"
	fi
	rm -f "$_tap_log"
	return $rc
}

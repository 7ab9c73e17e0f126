#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# results-section.sh RESULTS HEADING SECTION: put SECTION (a file whose
# first line is HEADING, a "## " line) into RESULTS (Documentation/bench/
# results.md) in place of the section a run before wrote under HEADING,
# wherever it is, or at the end; every benchmark script writes its figures
# so.  RESULTS is made, with the document's title, if it is missing.
set -euo pipefail

results=$1 heading=$2 section=$3
[ -f "$results" ] || echo "# idgen benchmarks" >"$results"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
# Its own section only: another script's may follow it.
awk -v h="$heading" '$0 == h { skip = 1; next }
	skip && /^## / { skip = 0 } !skip' "$results" >"$tmp"
sed -e :a -e '/^\n*$/{$d;N;ba' -e '}' "$tmp" >"$results"	# no trailing blank lines
{ echo; cat "$section"; } >>"$results"

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# report.sh OUTDIR: the markdown report of scripts/bench/icount.sh's counts in
# OUTDIR: the instructions per call and per ID of every measure, the goals
# in instructions, and, if OUTDIR has kallsyms, where the kernel
# instructions of the 1- and 512-ID reads go, by function.
set -euo pipefail

dir=${1:?usage: report.sh OUTDIR}
counts=$dir/counts.txt console=$dir/console.log
[[ -s $counts && -s $console ]] || { echo "report.sh: no counts in $dir" >&2; exit 1; }

env_line() { grep -a "^ICOUNT-ENV $1 " "$console" | head -n 1 | cut -d' ' -f3- || true; }
cmdline=$(env_line cmdline)
echo "- guest kernel: $(env_line kernel | cut -d' ' -f1), command line with" \
	"$(grep -ow nokaslr <<<"$cmdline" || echo "KASLR (no nokaslr)")"
echo "- $(env_line qemu); the guest sees \"$(env_line cpu)\""
echo "- the benchmark at SCHED_FIFO; each figure the mode of its calls (the"
echo "  most frequent count), instructions executed between two marker"
echo "  instructions, the marker itself included"
echo

# The measures, in the order the benchmark ran them: tag, IDs, bytes, name.
grep -a '^ICOUNT-TAG ' "$console" | cut -d' ' -f2- >"$dir/tags.txt"

awk -F'\t' -v tagfile="$dir/tags.txt" '
	BEGIN {
		while ((getline line < tagfile) > 0) {
			split(line, w, " ")
			t = w[1]; order[++n] = t; ids[t] = w[2]; bytes[t] = w[3]
			sub(/^[^ ]+ [^ ]+ [^ ]+ /, "", line); name[t] = line
		}
	}
	$1 == "C" { calls[$2] = $3; mode[$2] = $4; min[$2] = $5; kmode[$2] = $6; umode[$2] = $8; mean[$2] = $10 }
	END {
		floor = mode[2]
		print "| call | calls | mode | min | kernel | user | mean | per ID (or per 8 B) | mode / 8-byte /dev/zero read |"
		print "|---|---|---|---|---|---|---|---|---|"
		for (i = 1; i <= n; i++) {
			t = order[i]
			if (!(t in mode)) { print "| " name[t] " | no count | | | | | | | |"; continue }
			per = ids[t] ? sprintf("%.1f", mode[t] / ids[t]) : bytes[t] >= 8 && t != 5 ? sprintf("%.1f", mode[t] / (bytes[t] / 8)) : ""
			printf "| %s | %d | %d | %d | %d | %d | %.1f | %s | %.2f |\n", name[t], calls[t], mode[t], min[t], kmode[t], umode[t], mean[t], per, mode[t] / floor
		}
		print ""
		print "## Goals, in instructions"
		print ""
		print "| goal | measured | target | |"
		print "|---|---|---|---|"
		if (!(10 in mode) || !(14 in mode) || !(3 in mode) || !floor) {
			print "| (missing counts) | | | **missed** |"
			exit
		}
		r = mode[10] / floor
		printf "| 1-ID read / 8-byte /dev/zero read | %.2f (%d / %d) | <= 1.30 | %s |\n", r, mode[10], floor, r <= 1.3 ? "met" : "**missed**"
		r = (mode[14] / 512) / (mode[3] / 512)
		printf "| 512-ID read per ID / 4096-byte /dev/zero read per 8 B | %.2f (%.1f / %.1f) | <= 2.00 | %s |\n", r, mode[14] / 512, mode[3] / 512, r <= 2 ? "met" : "**missed**"
	}
' "$counts"

[[ -s $dir/kallsyms ]] || exit 0
echo
echo "## Where the kernel instructions go (mean per call, by function)"
echo
echo "Counted by translation block and named from the guest's /proc/kallsyms;"
echo "means over every counted call, so an interrupt's share is in them; the"
echo "25 biggest functions of each call, from one instruction per call up."
echo
# Symbols and blocks in one stream sorted by address: a block belongs to
# the last symbol before it.
{
	awk '{ printf "%016s S %s%s\n", $1, $3, $4 ? " " $4 : "" }' "$dir/kallsyms"
	awk -F'\t' '$1 == "P" { printf "%016s T %s %s\n", $3, $2, $4 }' "$counts"
} | LC_ALL=C sort -k1,1 -k2,2 | awk -v countfile="$counts" -v tagfile="$dir/tags.txt" '
	BEGIN {
		while ((getline line < countfile) > 0) { split(line, w, "\t"); if (w[1] == "C") calls[w[2]] = w[3] }
		while ((getline line < tagfile) > 0) { t = line; sub(/ .*/, "", t); sub(/^[^ ]+ [^ ]+ [^ ]+ /, "", line); name[t] = line }
	}
	$2 == "S" { sym = $3 ($4 != "" ? " " $4 : ""); next }
	$2 == "T" { by[$3 SUBSEP sym] += $4; tot[$3] += $4 }
	END {
		for (k in by) { split(k, p, SUBSEP); print p[1] "\t" by[k] / calls[p[1]] "\t" p[2] }
		for (t in tot) print t "\t-1\t" tot[t] / calls[t]
	}
' | LC_ALL=C sort -t$'\t' -k1,1n -k2,2gr | awk -F'\t' -v tagfile="$dir/tags.txt" '
	BEGIN { while ((getline line < tagfile) > 0) { t = line; sub(/ .*/, "", t); sub(/^[^ ]+ [^ ]+ [^ ]+ /, "", line); name[t] = line } }
	$2 == -1 { total[$1] = $3; next }
	# Three parts: the module, the time-keeping it calls, all the rest
	# (syscall entry and exit, VFS, security hooks, interrupts).
	{ if ($3 ~ /\[idgen\]$/) mod[$1] += $2; else if ($3 ~ /^(ktime_|read_tsc|__ktime)/) tk[$1] += $2; else rest[$1] += $2 }
	# The 25 biggest; below one instruction per call, only interrupts.
	$2 >= 1 && nrows[$1]++ < 25 { rows[$1] = rows[$1] sprintf("| %s | %.1f |\n", $3, $2) }
	END {
		for (t = 0; t < 256; t++) {
			if (!(t in rows)) continue
			printf "%s: %.1f kernel instructions per call: %.1f in idgen.ko, %.1f in kernel time-keeping (ktime_*, read_tsc), %.1f in the rest (syscall, VFS, security hooks, interrupts)\n\n| function | instructions |\n|---|---|\n%s\n", name[t], total[t], mod[t], tk[t], rest[t], rows[t]
		}
	}
'

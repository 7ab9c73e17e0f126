#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
#
# soak_summary.py FILE [FROM_NS]: what mint_soak's lines say, as shell
# assignments for run.sh to eval (in Python: IDs pass 2^53, which awk's
# doubles do not keep):
#   calls errors dups disorder      answered calls, "# error" lines, IDs
#                                   seen twice, IDs not above their host's
#                                   last one
#   p50_ns p99_ns p999_ns max_ns    call latency
#   late_W                          calls worker W answered at FROM_NS or later
import sys
from collections import Counter

lat, ids, errors, disorder = [], [], 0, 0
last, late = {}, Counter()
start = int(sys.argv[2]) if len(sys.argv) > 2 else 0
with open(sys.argv[1]) as f:
    for line in f:
        if line.startswith("# error"):
            errors += 1
            continue
        if line.startswith("#") or not line.strip():
            continue
        t, ns, i = (int(x) for x in line.split())
        worker = (i >> 12) & 127
        if worker in last and i <= last[worker]:
            disorder += 1
        last[worker] = i
        if t >= start:
            late[worker] += 1
        lat.append(ns)
        ids.append(i)
lat.sort()
n = len(lat)


def pct(p):
    return lat[min(n - 1, int(n * p))] if n else 0


print("calls=%d errors=%d dups=%d disorder=%d" % (n, errors, n - len(set(ids)), disorder))
print("p50_ns=%d p99_ns=%d p999_ns=%d max_ns=%d" % (pct(.5), pct(.99), pct(.999), lat[-1] if n else 0))
for w in range(128):
    print("late_%d=%d" % (w, late[w]))

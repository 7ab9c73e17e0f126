#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""ids_check.py WHAT LOG [ARGS...]: checks over mint_loop.py's LOG.

  unique LOG [MORE...]   no ID twice, across LOG and the files MORE (one
                         ID a line, or "PHASE ID" lines)
  rising LOG             LOG's IDs strictly increasing in the order minted
  minted LOG PHASE       at least one ID minted during PHASE
  no-fail LOG PHASE      no call failed during PHASE
  failed LOG PHASE WHY   some call failed during PHASE with WHY (a
                         substring of "STATUS:error")
Prints what it found as a TAP comment; exits 1 if the check fails.
"""
import sys


def read(path):
    rows = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 1:
                rows.append(("-", parts[0], None))
            elif len(parts) >= 2 and parts[1] == "FAIL":
                rows.append((parts[0], None, " ".join(parts[2:])))
            elif len(parts) == 2:
                rows.append((parts[0], parts[1], None))
    return rows


what, log, *args = sys.argv[1:]
rows = read(log)
ids = [(p, int(i)) for p, i, _ in rows if i is not None]
fails = [(p, w) for p, i, w in rows if i is None]
ok = False
if what == "unique":
    seen = {}
    dup = None
    for path in [log] + args:
        for p, i, _ in (rows if path == log else read(path)):
            if i is None:
                continue
            if i in seen:
                dup = (i, seen[i], f"{path}:{p}")
                break
            seen[i] = f"{path}:{p}"
        if dup:
            break
    ok = dup is None
    print(f"# {len(seen)} IDs" + (f"; {dup[0]} twice: {dup[1]} and {dup[2]}" if dup else ", none twice"))
elif what == "rising":
    bad = [(a, b) for a, b in zip(ids, ids[1:]) if b[1] <= a[1]]
    ok = not bad
    print(f"# {len(ids)} IDs in the order minted" +
          (f"; {bad[0][1][1]} ({bad[0][1][0]}) after {bad[0][0][1]} ({bad[0][0][0]})" if bad else ", each above the one before"))
elif what == "minted":
    n = sum(1 for p, _ in ids if p == args[0])
    ok = n > 0
    print(f"# {n} IDs minted during {args[0]}")
elif what == "no-fail":
    f = [w for p, w in fails if p == args[0]]
    ok = not f
    print(f"# {len(f)} failed calls during {args[0]}" + (f", the first: {f[0]}" if f else ""))
elif what == "failed":
    f = [w for p, w in fails if p == args[0] and args[1] in w]
    ok = bool(f)
    print(f"# {len(f)} calls during {args[0]} failed with {args[1]}")
else:
    sys.exit(f"ids_check.py: unknown check {what}")
sys.exit(0 if ok else 1)

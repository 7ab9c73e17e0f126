#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""fleet-soak-check.py: the checks of tests/vm/fleet-test.sh over one
mint_soak run against two ID hosts, host A frozen for a while.

mint_soak prints one line per call answered, "<ns since its start> <call
latency ns> <id>", "# error <errno> <message>" per call failed and a last
"# stats ..." line.  The freeze is given in the same time base, as the
harness saw it: --freeze-from-ms is taken after QEMU confirmed the stop and
--freeze-to-ms before it was asked to go on, both measured from just before
mint_soak started (so at most its start-up later than its own zero: the
--margin-ms).

Prints TAP results, without a plan (tests/lib/tap.sh's tap_run renumbers
them), and the latency distributions as comments.  Exit status 1 if any
result failed.
"""
import argparse
import sys

ap = argparse.ArgumentParser()
ap.add_argument("soak_output")
ap.add_argument("--worker-a", type=int, required=True, help="the frozen host's worker")
ap.add_argument("--worker-b", type=int, required=True)
ap.add_argument("--region", type=int, default=0)
ap.add_argument("--freeze-from-ms", type=float, required=True)
ap.add_argument("--freeze-to-ms", type=float, required=True)
ap.add_argument("--margin-ms", type=float, default=500)
ap.add_argument("--max-freeze-latency-ms", type=float, default=1000)
ap.add_argument("--rejoin-within-s", type=float, default=30)
a = ap.parse_args()

failed = False
n = 0


def result(good, name, said=()):
    global failed, n
    n += 1
    print("%s %d - %s" % ("ok" if good else "not ok", n, name))
    for line in said:
        print("# " + line)
    if not good:
        failed = True


# Layout 3/7/12 (Documentation/design.md section 2):
# ms << 22 | region << 19 | worker << 12 | seq.
def node(i):
    return (i >> 19) & 7, (i >> 12) & 127


calls = []  # (t_ms, latency_ms, id)
errors = []
stats = None
bad = []
with open(a.soak_output) as f:
    for line in f:
        line = line.rstrip("\n")
        if line.startswith("# error "):
            errors.append(line)
        elif line.startswith("# stats "):
            stats = line[len("# stats "):]
        elif line.startswith("#") or not line:
            continue
        else:
            try:
                t, lat, i = (int(x) for x in line.split())
                calls.append((t / 1e6, lat / 1e6, i))
            except ValueError:
                bad.append(line)

fs, fe, margin = a.freeze_from_ms, a.freeze_to_ms, a.margin_ms
A, B = (a.region, a.worker_a), (a.region, a.worker_b)
print("# %d calls answered; freeze of host A (r%d/w%d) from %.0f ms to %.0f ms; stats: %s"
      % (len(calls), a.region, a.worker_a, fs, fe, stats))

result(stats is not None and not bad,
       "mint_soak's output is whole: its lines parse, and it ends with its stats",
       ["unparsable: " + l for l in bad[:5]] + ([] if stats else ["no '# stats' line"]))
result(not errors, "no call failed (%d errors)" % len(errors), errors[:10])

ids = [c[2] for c in calls]
seen, dups = set(), []
for i in ids:
    if i in seen:
        dups.append(i)
    seen.add(i)
result(calls and not dups,
       "every ID unique across both hosts (%d IDs, %d duplicates)" % (len(ids), len(dups)),
       ["DUPLICATE ID %d (r%d/w%d, ms %d)" % ((d,) + node(d) + (d >> 22,)) for d in dups[:10]])

others = sorted({node(i) for i in ids} - {A, B})
result(not others, "every ID is host A's r%d/w%d or host B's r%d/w%d" % (A + B),
       ["an ID of r%d/w%d" % o for o in others])

order_bad = []
last = {}
for k, (t, lat, i) in enumerate(calls):
    w = node(i)
    if w in last and i <= last[w][1]:
        order_bad.append("call %d at %.1f ms: %d after %d (call %d), r%d/w%d"
                         % (k, t, i, last[w][1], last[w][0], w[0], w[1]))
    last[w] = (k, i)
result(not order_bad, "each host's IDs strictly increasing in call order", order_bad[:10])

# A call is in the freeze if it overlapped it (one begun just before, on A,
# is the one that waits out its per-try timeout); the stop may have taken
# effect up to the margin before the harness saw it confirmed.
before = [c for c in calls if c[0] + c[1] < fs - margin]
during = [c for c in calls if c[0] + c[1] >= fs - margin and c[0] < fe]
after = [c for c in calls if c[0] >= fe]
for name, part in (("before the freeze", before), ("during", during), ("after", after)):
    lats = sorted(c[1] for c in part)
    if lats:
        q = lambda p: lats[min(len(lats) - 1, int(p * len(lats)))]
        print("# latency %-17s %6d calls, p50 %7.2f ms, p99 %7.2f ms, max %7.2f ms"
              % (name, len(lats), q(0.50), q(0.99), lats[-1]))
    else:
        print("# latency %-17s      0 calls" % name)

result(before and {node(c[2]) for c in before} == {A, B},
       "before the freeze both hosts answered (A %d, B %d calls)"
       % (sum(node(c[2]) == A for c in before), sum(node(c[2]) == B for c in before)))

# Calls begun in the freeze, away from its ends (where A may be answering
# before or after this harness's clock says so): none of A's.
frozen = [c for c in during if fs <= c[0] < fe - margin]
from_a = [c for c in frozen if node(c[2]) == A]
result(frozen and not from_a,
       "during the freeze minting went on, from host B only (%d calls, %d from A)"
       % (len(frozen), len(from_a)),
       ["A answered at %.1f ms: %d" % (c[0], c[2]) for c in from_a[:5]])

# The worst call in the freeze: one per-try timeout on A and a fast try on
# B, so well under the bound; but on a host loaded enough that calls were
# that slow before the freeze too, twice the worst of those.
worst_before = max((c[1] for c in before), default=0)
bound = max(a.max_freeze_latency_ms, 2 * worst_before)
worst = max(during, key=lambda c: c[1], default=(float("nan"), float("nan"), 0))
result(worst[1] < bound, "worst call during the freeze %.1f ms (begun at %.0f ms), under %.0f ms"
       % (worst[1], worst[0], bound))

rejoined = next((c for c in after if node(c[2]) == A), None)
if rejoined:
    print("# host A answered again %.0f ms after the thaw" % (rejoined[0] - fe))
result(rejoined is not None and rejoined[0] - fe <= a.rejoin_within_s * 1e3,
       "after the thaw host A answers calls again, within %.0f s" % a.rejoin_within_s)


# A host's clock against the soak's: the ID's millisecond less the call's
# time, at its smallest (the call's latency only adds).  A frozen guest's
# clock stands still with it, so after the thaw it runs behind by about the
# freeze: said here, not asserted (its IDs stay its own and increasing).
def offset(part, w):
    v = [(c[2] >> 22) - c[0] for c in part if node(c[2]) == w]
    return min(v) if v else None


oa0, oa1, ob1 = offset(before, A), offset(after, A), offset(after, B)
if None not in (oa0, oa1, ob1):
    print("# host A's clock: %.0f ms behind where it was before the freeze, "
          "%.0f ms behind host B's, after the thaw" % (oa0 - oa1, ob1 - oa1))

sys.exit(1 if failed else 0)

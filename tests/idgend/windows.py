#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
#
# windows.py GEN.log...: from the logs of simulated generators
# (libidgen's idgen_sim_open(), "sim:FILE"), every lease each one held and the
# milliseconds it could have minted under it; exits 1, naming them, if two
# generators could both have minted one millisecond with the same node
# bits (one number of one layout, or numbers of two layouts, or of two
# region widths, that share them).
#
# A lease starts at a push to a number the generator did not hold (its
# floor F: it mints only above F), moves its fence with each renewal (it
# mints only below the fence U), and ends at a revoke (it minted nothing
# above last L).  Its window is the open interval (F, min(U, L + 1)).  The
# simulation logs a push before it takes effect and a revoke after, so a
# window read from the log is never smaller than what the generator held.
import re
import sys

PUSH = re.compile(r'^(\d+) push r=(\d+) w=(\d+) floor=(\d+) until=(\d+)(?: layout=(\S+))?$')
REVOKE = re.compile(r'^(\d+) revoke last=(\d+)$')
IDLE = re.compile(r'^(\d+) revoke-idle last=(\d+)$')


def leases(path):
    out, cur = [], None
    with open(path) as f:
        for line in f:
            line = line.rstrip('\n')
            m = PUSH.match(line)
            if m:
                r, w, floor, until, layout = (int(m[2]), int(m[3]), int(m[4]),
                                              int(m[5]), m[6])
                if cur and (cur['r'], cur['w'], cur['layout']) == (r, w, layout):
                    cur['floor'] = max(cur['floor'], floor)
                    cur['hi'] = max(cur['hi'], until)
                else:
                    cur = dict(gen=path, r=r, w=w, layout=layout, floor=floor,
                               hi=until)
                    out.append(cur)
                continue
            m = REVOKE.match(line)
            if m:
                if cur:
                    cur['hi'] = min(cur['hi'], int(m[2]) + 1)
                cur = None
                continue
            if IDLE.match(line) or not line:
                continue
            sys.exit('%s: not a simulated generator log line: %r' % (path, line))
    return out


def node_bits(lease):
    """The 22 node and sequence bits a lease mints in: [start, end)."""
    rb, wb, sb = (int(x) for x in (lease['layout'] or '3/7/12').split('/'))
    start = (lease['r'] << (wb + sb)) | (lease['w'] << sb)
    return start, start + (1 << sb)


def same_node_bits(a, b):
    """Whether two leases, of one layout or two, can mint one ID's bits."""
    (a0, a1), (b0, b1) = node_bits(a), node_bits(b)
    return a0 < b1 and b0 < a1


def main():
    all_leases = [l for p in sys.argv[1:] for l in leases(p)]
    bad = 0
    for i, a in enumerate(all_leases):
        for b in all_leases[i + 1:]:
            if a['gen'] == b['gen'] or not same_node_bits(a, b):
                continue
            lo, hi = max(a['floor'], b['floor']), min(a['hi'], b['hi'])
            if lo + 1 < hi:
                bad += 1
                print('# overlap on r%d/w%d: %s (%d, %d) and %s (%d, %d): %d ms'
                      % (a['r'], a['w'], a['gen'], a['floor'], a['hi'],
                         b['gen'], b['floor'], b['hi'], hi - lo - 1))
    for l in all_leases:
        print('# %s: r%d/w%d layout %s, mints in (%d, %d)'
              % (l['gen'].split('/')[-1], l['r'], l['w'], l['layout'],
                 l['floor'], l['hi']))
    sys.exit(1 if bad else 0)


main()

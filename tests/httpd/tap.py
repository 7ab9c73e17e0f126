# SPDX-License-Identifier: GPL-2.0
"""TAP for the Python suites here (tests/lib/tap.sh's, for the shell ones).

ok() numbers each check and prints why a failed one failed; done() prints
the plan after the last check and exits 1 if any failed.  wait_port()
reads idgen-httpd's log for the port it says it listens on.
"""
import re
import sys
import time

n = 0
failed = False


def ok(cond, desc, why=""):
    global n, failed
    n += 1
    if cond:
        print(f"ok {n} {desc}")
    else:
        failed = True
        print(f"not ok {n} {desc}")
        for line in str(why).splitlines():
            print(f"# {line}")
    sys.stdout.flush()
    return cond


def done():
    print(f"1..{n}")
    sys.exit(1 if failed else 0)


def wait_port(log, pattern, proc):
    """The port in the first match of pattern in log, within 10 s; else
    bail out with the log and kill proc."""
    for _ in range(100):
        with open(log) as f:
            m = re.search(pattern, f.read())
        if m:
            return int(m.group(1))
        time.sleep(0.1)
    print("Bail out! idgen-httpd did not start")
    with open(log) as f:
        print(f.read())
    proc.kill()
    sys.exit(1)

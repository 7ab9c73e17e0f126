#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
#
# doc_examples.py IDGENCTL TOP: every example output the documentation
# shows, checked against what idgenctl prints, so the two cannot drift.
# Found in README.md and the man pages by their shapes:
#   - a decode line:  ID  TIME region R worker W seq S layout L
#     (mint's examples too: mint prints what decode prints)
#   - a JSON object:  {"id":"ID",...} as decode --json prints it; "..."
#     elides the fields after it, whose shown ones must still match
#   - "idgenctl min-id-at TIME  # ID" in a shell block
#   - an SQL range after "lo=$(idgenctl min-id-at A)" and "hi=$(... B)":
#     "id >= X AND id < Y" must be min-id-at A and B
# Each file must show at least the examples it has today, so an example
# reworded out of these shapes fails here rather than going unchecked.
# Prints TAP.
import json
import re
import subprocess
import sys

idgenctl, top = sys.argv[1], sys.argv[2]
# file: at least this many examples
FILES = {"README.md": 4, "helper/idgenctl/idgenctl.8": 2, "lib/libidgen.3": 1,
         "helper/httpd/idgen-httpd.8": 1}

n = 0
failed = False


def result(good, name, detail=""):
    global n, failed
    n += 1
    print(("ok" if good else "not ok") + " %d %s" % (n, name))
    if not good:
        failed = True
        for line in detail.splitlines():
            print("#   " + line)


def run(*args):
    p = subprocess.run([idgenctl, *args], capture_output=True, text=True)
    return p.stdout.rstrip("\n") if p.returncode == 0 else "exit %d: %s" % (
        p.returncode, p.stderr.strip())


def plain(text, roff):
    """The text as a reader sees it: roff escapes resolved."""
    if not roff:
        return text
    for esc, ch in ((r"\-", "-"), (r"\(aq", "'"), (r"\(dq", '"'), (r"\e", "\\"),
                    (r"\fB", ""), (r"\fI", ""), (r"\fR", ""), (r"\fP", "")):
        text = text.replace(esc, ch)
    return text


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


DECODE = re.compile(r"\b(\d+)  (\S+Z) region \d+ worker \d+ seq \d+ layout \d+")
JSON_START = re.compile(r'\{"id":"(\d+)"')
MIN_ID = re.compile(r"idgenctl min-id-at (\S+)\s+# (\d+)")
LO_HI = re.compile(r"(lo|hi)=\$\(idgenctl min-id-at (\S+)\)")
SQL = re.compile(r"\bid >= (\d+) AND id < (\d+)")


def json_object(text, start):
    """The object at start, lines joined without their indentation."""
    out, depth, i = [], 0, start
    while i < len(text):
        c = text[i]
        if c == "\n":
            i += 1
            while i < len(text) and text[i] in " \t":
                i += 1
            continue
        out.append(c)
        depth += c == "{"
        depth -= c == "}"
        if not depth:
            break
        i += 1
    return "".join(out)


for name, want in FILES.items():
    with open("%s/%s" % (top, name)) as f:
        text = plain(f.read(), not name.endswith(".md"))
    found = 0
    for m in DECODE.finditer(text):
        found += 1
        got = run("decode", m.group(1))
        result(got == m.group(0), "%s:%d: idgenctl decode %s prints the line shown"
               % (name, line_of(text, m.start()), m.group(1)),
               "shown: %s\nprints: %s" % (m.group(0), got))
    for m in JSON_START.finditer(text):
        found += 1
        shown = json_object(text, m.start())
        out = run("decode", "--json", m.group(1))
        try:
            real = json.loads(out)[0]
        except (ValueError, IndexError, KeyError):
            real = None
        if real is None:
            good = False
        elif "..." in shown:
            # What is shown before the elision, as printed.
            good = json.dumps(real, separators=(",", ":")).startswith(
                shown[:shown.index("...")])
        else:
            good = shown == json.dumps(real, separators=(",", ":"))
        result(good, "%s:%d: the JSON of %s is what decode --json prints"
               % (name, line_of(text, m.start()), m.group(1)),
               "shown: %s\nprints: %s" % (shown, out))
    for m in MIN_ID.finditer(text):
        found += 1
        got = run("min-id-at", m.group(1))
        result(got == m.group(2), "%s:%d: idgenctl min-id-at %s prints %s"
               % (name, line_of(text, m.start()), m.group(1), m.group(2)),
               "prints: %s" % got)
    bounds = dict((m.group(1), m.group(2)) for m in LO_HI.finditer(text))
    for m in SQL.finditer(text):
        found += 1
        good = "lo" in bounds and "hi" in bounds and \
            run("min-id-at", bounds["lo"]) == m.group(1) and \
            run("min-id-at", bounds["hi"]) == m.group(2)
        result(good, "%s:%d: the SQL range is min-id-at of %s and %s"
               % (name, line_of(text, m.start()), bounds.get("lo"), bounds.get("hi")),
               "shown: %s" % m.group(0))
    result(found >= want, "%s: %d examples found (at least %d)" % (name, found, want))

print("1..%d" % n)
sys.exit(1 if failed else 0)

#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""mint_loop.py URL OUT PHASE_FILE STOP_FILE [CA CERT KEY]: mint from
idgen-httpd at URL (http://127.0.0.1:PORT, or https:// trusting CA, as
the client certificate CERT with its key KEY) in a loop, one POST
/v1/ids:next of 16 IDs at a time, until STOP_FILE exists.

Each answer goes to OUT as lines "PHASE ID" in the order minted; a call
that fails as "PHASE FAIL WHY" (WHY: the status and error, or the
connection's failure).  PHASE is PHASE_FILE's content when the call was
made: tests/host/run.sh writes there which fault is under way.  Calls are
one at a time, so OUT's IDs are in the order the host minted them.
"""
import http.client
import json
import os
import ssl
import sys
import time
import urllib.parse

url, out_path, phase_path, stop_path, *tls = sys.argv[1:]
u = urllib.parse.urlsplit(url)
context = None
if u.scheme == "https":
    ca, cert, key = tls
    context = ssl.create_default_context(cafile=ca)
    context.load_cert_chain(cert, key)
body = json.dumps({"count": 16}).encode()


def phase():
    try:
        with open(phase_path) as f:
            return f.read().strip() or "-"
    except OSError:
        return "-"


with open(out_path, "a", buffering=1) as out:
    conn = None
    while not os.path.exists(stop_path):
        p = phase()
        try:
            if conn is None and context is not None:
                conn = http.client.HTTPSConnection(u.hostname, u.port, timeout=3,
                                                   context=context)
            elif conn is None:
                conn = http.client.HTTPConnection(u.hostname, u.port, timeout=3)
            conn.request("POST", "/v1/ids:next", body,
                         {"Content-Type": "application/json"})
            r = conn.getresponse()
            data = r.read()
            if r.status == 200:
                try:
                    ids = [int(i) for i in json.loads(data)["ids"]]
                except (ValueError, KeyError, TypeError):
                    out.write(f"{p} FAIL 200:not-ids\n")
                    continue
                out.write("".join(f"{p} {i}\n" for i in ids))
                time.sleep(0.05)
                continue
            try:
                why = json.loads(data).get("error", "?")
            except ValueError:
                why = "?"
            out.write(f"{p} FAIL {r.status}:{why}\n")
        except (OSError, http.client.HTTPException) as e:
            out.write(f"{p} FAIL {type(e).__name__}\n")
            if conn is not None:
                conn.close()
            conn = None
        time.sleep(0.2)

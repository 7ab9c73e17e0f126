#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
#
# fake_server.py: an idgen-httpd that answers POST /v1/ids:next badly, in
# the way POST /mode/NAME chose last, for libidgen-client's tests.  Its
# IDs carry worker 99, so a test sees whether any of them got through.
# GET /readyz answers 200, so the client keeps coming back to it.  Prints
# "listening on port N" once it listens on 127.0.0.1.
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

EPOCH_MS = 1767225600000
WORKER = 99
mode = "good"
lock = threading.Lock()
seq = 0


def fresh_ids(n, ago_ms=0):
    """n strictly increasing IDs of worker 99, minted ago_ms before now."""
    global seq
    with lock:
        ms = int(time.time() * 1000) - EPOCH_MS - ago_ms
        out = []
        for _ in range(n):
            seq = (seq + 1) % 4096
            out.append((ms << 22) | (WORKER << 12) | seq)
        return out


def answer(n):
    """(status, body) of the mode in force for a request of n IDs."""
    ids = fresh_ids(n + 1)
    s = [str(i) for i in ids[:n]]
    good = {"ids": s, "layout_version": 1}
    if mode == "good":
        return 200, json.dumps(good)
    if mode == "notjson":
        return 200, "ids: " + ",".join(s)
    if mode == "trailing":
        return 200, json.dumps(good) + " x"
    if mode == "numbers":
        return 200, json.dumps({"ids": ids[:n], "layout_version": 1})
    if mode == "duplicate":
        return 200, json.dumps({"ids": [s[0]] * n, "layout_version": 1})
    if mode == "decreasing":
        return 200, json.dumps({"ids": [str(i) for i in reversed(ids[:n])], "layout_version": 1})
    if mode == "short":
        return 200, json.dumps({"ids": s[:-1], "layout_version": 1})
    if mode == "long":
        return 200, json.dumps({"ids": [str(i) for i in ids[:n + 1]], "layout_version": 1})
    if mode == "leadingzero":
        return 200, json.dumps({"ids": ["0" + x for x in s], "layout_version": 1})
    if mode == "toobig":
        return 200, json.dumps({"ids": ["9223372036854775808"] * n, "layout_version": 1})
    if mode == "version2":
        return 200, json.dumps({"ids": s, "layout_version": 2})
    if mode == "versionstring":
        return 200, json.dumps({"ids": s, "layout_version": "1"})
    if mode == "noversion":
        return 200, json.dumps({"ids": s})
    if mode == "array":
        return 200, json.dumps(s)
    if mode == "empty":
        return 200, ""
    if mode == "huge":
        return 200, json.dumps({"ids": s, "layout_version": 1, "pad": "x" * 1000000})
    if mode == "old":
        # Well formed, but minted 3 s ago (a lagging clock, a held answer).
        return 200, json.dumps({"ids": [str(i) for i in fresh_ids(n, 3000)], "layout_version": 1})
    if mode == "status503":
        return 503, json.dumps({"error": {"code": "unavailable", "message": "no lease"}})
    return 500, "unknown mode"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/readyz":
            self.reply(200, '{"ready":true,"reasons":[]}')
        else:
            self.reply(404, "{}")

    def do_POST(self):
        global mode
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path.startswith("/mode/"):
            mode = self.path[len("/mode/"):]
            self.reply(200, "{}")
            return
        try:
            n = json.loads(body).get("count", 1)
        except ValueError:
            n = 1
        self.reply(*answer(n))


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass	# a client that hung up: the client's tests do that on purpose


server = Server(("127.0.0.1", 0), Handler)
print("listening on port %d" % server.server_address[1], flush=True)
server.serve_forever()

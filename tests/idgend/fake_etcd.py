#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
#
# fake_etcd.py PORT: an HTTP server on 127.0.0.1:PORT that answers like a
# broken or minimal etcd v3 gateway, for etcd_test's fake mode.
#
# The scenario is the first path component: the client is given the
# endpoint http://127.0.0.1:PORT/<scenario>, so it POSTs to
# /<scenario>/v3/kv/range or /<scenario>/v3/kv/txn, and each scenario has a
# canned answer per operation.  Stateless, so the test's requests may come
# in any order.  Prints "ready" on stdout once listening.
#
# The endpoint http://127.0.0.1:PORT/via/<member port>/<mode> is a proxy in
# front of a real member on 127.0.0.1:<member port>, in one of these modes:
#   pass         forwards
#   garble       answers 200 with garbage, forwarding nothing
#   fwd-garble   forwards, then answers 200 with garbage: a write is applied
#                and its answer lost
#   between-TAG  forwards; after the first page of a listing (a range with a
#                limit, no revision, and more to come) it writes the range's
#                last key, {"owner": "between", "valid_until_ms": 7}; once
#                per TAG
#   compact-TAG  the same, then compacts the store at that write: the
#                listing's revision is gone; once per TAG
#   compact-always   the same, at every first page
import base64
import http.server
import json
import sys
import threading
import time
import urllib.error
import urllib.request


def b64(s):
    return base64.b64encode(s.encode()).decode()


def kv(key, value=None, mod="5", **extra):
    d = {"key": b64(key), "create_revision": "2", "mod_revision": mod,
         "version": "1"}
    if value is not None:
        d["value"] = b64(value)
    if mod is None:
        del d["mod_revision"]
    d.update(extra)
    return d


HDR = {"cluster_id": "1", "member_id": "2", "revision": "7",
       "raft_term": "2"}
# The test's keys: prefix /f, region 0.
K3 = "/f/r0/w/3"
OURS = json.dumps({"owner": "fake", "valid_until_ms": 1234})


def ok(obj):
    return 200, json.dumps(obj)


def fail_txn(*kvs):
    rr = {"header": {"revision": "7"}}
    if kvs:
        rr["kvs"] = list(kvs)
        rr["count"] = str(len(kvs))
    return ok({"header": HDR, "responses": [{"response_range": rr}]})


ETCD_503 = (503, json.dumps({"error": "etcdserver: request timed out",
                             "code": 14,
                             "message": "etcdserver: request timed out"}))

GARBAGE = (200, "hello, I am not JSON\n")

# scenario -> {"range": (status, body), "txn": (status, body)}; "*" is both.
SCENARIOS = {
    "garbage": {"*": GARBAGE},
    "truncated": {"*": (200, '{"header":{"revision":"7"},"kvs":[{"key":')},
    "empty": {"*": (200, "")},
    "array": {"*": ok([HDR])},
    "trailing": {"*": (200, json.dumps({"header": HDR}) + " x")},
    "two_objects": {"*": (200, json.dumps({"header": HDR}) * 2)},
    "noheader": {"range": ok({"kvs": []}),
                 "txn": ok({"succeeded": True})},
    "header_str": {"*": ok({"header": "yes"})},
    "kvs_string": {"range": ok({"header": HDR, "kvs": "abc"}),
                   "txn": ok({"header": HDR, "responses": [
                       {"response_range": {"kvs": "abc"}}]})},
    "kv_not_object": {"*": ok({"header": HDR, "kvs": ["abc"]})},
    "key_not_b64": {"range": ok({"header": HDR, "kvs": [
                        dict(kv(K3, OURS), key="!not base64!")]}),
                    "txn": fail_txn(dict(kv(K3, OURS), key="L3Yv$"))},
    "key_bad_pad": {"*": ok({"header": HDR, "kvs": [
                        dict(kv(K3, OURS), key="L3Y=L3Y=")]})},
    "value_not_b64": {"*": ok({"header": HDR, "kvs": [
                          dict(kv(K3), value=17)]})},
    "rev_not_number": {"range": ok({"header": dict(HDR, revision="7x")}),
                       "txn": ok({"header": dict(HDR, revision="abc"),
                                  "succeeded": True})},
    "rev_number": {"*": ok({"header": dict(HDR, revision=7)})},
    "rev_negative": {"*": ok({"header": dict(HDR, revision="-7")})},
    "rev_overflow": {"*": ok({"header": dict(
        HDR, revision="9223372036854775808")})},
    "modrev_bad": {"range": ok({"header": HDR, "kvs": [kv(K3, OURS,
                                                           mod="1.5")]}),
                   "txn": fail_txn(kv(K3, OURS, mod=True))},
    "succeeded_str": {"txn": ok({"header": HDR, "succeeded": "true"})},
    "txn_no_responses": {"txn": ok({"header": HDR})},
    "other_key": {"range": ok({"header": HDR, "kvs": [kv("/f/r0/w/4",
                                                          OURS)]}),
                  "txn": fail_txn(kv("/f/r0/w/4", OURS))},
    "outside_range": {"range": ok({"header": HDR, "kvs": [
        kv("/f/r1/w/3", OURS)]})},
    # Everything at its default omitted, as etcd does.
    "minimal": {"range": ok({"header": {"revision": "7"}}),
                "txn": ok({"header": {"revision": "7"}, "responses": [
                    {"response_range": {"header": {"revision": "7"}}}]})},
    "bare_header": {"range": ok({"header": {}}),
                    "txn": ok({"header": {}, "responses": [
                        {"response_range": {}}]})},
    # A record with no value and no mod_revision: present, not ours.
    "kv_defaults": {"range": ok({"header": {"revision": "7"}, "kvs": [
                        {"key": b64(K3)}]}),
                    "txn": fail_txn({"key": b64(K3)})},
    "held": {"range": ok({"header": HDR, "kvs": [kv(K3, OURS)],
                          "count": "1"}),
             "txn": fail_txn(kv(K3, OURS))},
    "txn_ok": {"txn": ok({"header": {"revision": "9"}, "succeeded": True,
                          "responses": [{"response_put": {
                              "header": {"revision": "9"}}}]})},
    # Garbles writes; answers reads with a record no other scenario has,
    # so a test sees which endpoint a read went to.
    "garble_txn": {"range": ok({"header": HDR, "kvs": [kv(
                       K3, json.dumps({"owner": "garbler",
                                       "valid_until_ms": 1}))]}),
                   "txn": GARBAGE},
    "e503": {"*": ETCD_503},
    "e404": {"*": (404, "404 page not found\n")},
    "big": {"*": (200, '{"header":{},"x":"' + "a" * (5 << 20) + '"}')},
}


used_tags = set()
tags_lock = threading.Lock()


def upstream(port, path, body):
    """POSTs to the member: (status, body)."""
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", data=body,
        headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def write_between(port, ask):
    """Writes the last key of the range asked for; returns its revision."""
    _, body = upstream(port, "/v3/kv/range", json.dumps({
        "key": ask["key"], "range_end": ask["range_end"], "limit": "1",
        "sort_order": "DESCEND", "sort_target": "KEY",
        "keys_only": True}).encode())
    last = json.loads(body)["kvs"][0]["key"]
    _, body = upstream(port, "/v3/kv/put", json.dumps({
        "key": last,
        "value": b64(json.dumps({"owner": "between",
                                 "valid_until_ms": 7}))}).encode())
    return json.loads(body)["header"]["revision"]


def once(mode):
    if mode.endswith("-always"):
        return True
    with tags_lock:
        if mode in used_tags:
            return False
        used_tags.add(mode)
        return True


def proxy(port, mode, path, body):
    if mode == "garble":
        return GARBAGE
    status, answer = upstream(port, path, body)
    if mode == "fwd-garble":
        return GARBAGE
    if (mode.startswith(("between-", "compact-")) and
            path.endswith("/range") and status == 200):
        ask = json.loads(body)
        if ("limit" in ask and "revision" not in ask and
                json.loads(answer).get("more") and once(mode)):
            rev = write_between(port, ask)
            if mode.startswith("compact-"):
                upstream(port, "/v3/kv/compaction",
                         json.dumps({"revision": rev}).encode())
    return status, answer


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        req = self.rfile.read(n)
        parts = self.path.strip("/").split("/")
        name, op = parts[0], parts[-1]
        if name == "via":
            self.answer(*proxy(parts[1], parts[2],
                               "/" + "/".join(parts[3:]), req))
            return
        if name == "hang":
            time.sleep(60)
            return
        if name == "close":
            self.close_connection = True
            return
        sc = SCENARIOS.get(name, {})
        self.answer(*sc.get(op, sc.get("*", (404, "no such scenario"))))

    def answer(self, status, body):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        pass    # the client hanging up early is part of the test


def main():
    srv = Server(("127.0.0.1", int(sys.argv[1])), Handler)
    print("ready", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()

#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""grpc_test.py HTTPD WORKDIR

idgen-httpd's gRPC face (Documentation/design.md section 9.2), as TAP,
against --device sim on loopback, through Python's grpcio (Debian's
python3-grpcio): a client no one here wrote, with stubs generated now by
protoc and grpc_python_plugin from the shipped proto/idgen/v1/idgen.proto
and gRPC's own health.proto (grpc-proto) where Debian packages it.
  - every method, and the contract's example decoded field for field
  - MinIdAt and DecodeId agree with the HTTP/JSON API of the same process
  - every bad input of section 9.2 its status, and no ID consumed (the
    simulated generator's count in /metrics before and after)
  - quotas: RESOURCE_EXHAUSTED with grpc-retry-pushback-ms; the
    generator's refusal: UNAVAILABLE with it; a compressed message,
    an unknown method or service: UNIMPLEMENTED; a request over 4 KiB
  - 8 threads over one channel minting 10^6 IDs: all unique, each
    thread's strictly increasing
  - health Check and Watch: SERVING, then NOT_SERVING at the lease's end;
    a service name with a NUL in it is no service
  - /metrics counts the calls by method and grpc_code
  - SIGTERM with calls in flight: each answered whole or refused, never
    cut, a Watch told NOT_SERVING; the process exits 0
  - raw HTTP/2 (h2_client.py, on python3-h2): grpc-timeout passed before the call is
    read, a PING flood, a SETTINGS flood, rapid reset, a header list over
    the bound, a peer that never reads: each cut off, and a second
    connection served all the while
  - a request judged as it arrives: a prefix announcing 1 GiB refused at
    once, what a connection buffers of requests not yet whole bounded;
    the Compressed-Flag and content-type as grpc-go judges them; a
    health Watch ended at its grpc-timeout; a connection with no request
    held for timeout_s only; accept() out of descriptors without a busy
    loop; a peer that reads nothing while it opens streams cut off before
    it costs memory; a connection over a limit told so in a GOAWAY, and
    logged
"""
import resource
import datetime
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.request

import grpc

from tap import done, ok

httpd, work = sys.argv[1], sys.argv[2]
top = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))


# --- stubs, generated from the shipped contract ------------------------------
stubs = os.path.join(work, "grpc-stubs")
shutil.rmtree(stubs, ignore_errors=True)
os.makedirs(os.path.join(stubs, "src/health"))
# The health client from gRPC's own health.proto where Debian packages it
# (grpc-proto, Debian 12), else from the tree's.  Its Python module would
# be grpc.health.v1, which grpcio's own package shadows: generated under
# another path, the same service on the wire.
canonical = "/usr/share/grpc-proto/grpc/health/v1/health.proto"
health_proto = canonical if os.path.exists(canonical) else \
    f"{top}/proto/grpc/health/v1/health.proto"
shutil.copy(health_proto, os.path.join(stubs, "src/health/health.proto"))
r = subprocess.run(["protoc", f"-I{top}/proto", "-I/usr/include", f"-I{stubs}/src",
                    f"--python_out={stubs}", f"--grpc_out={stubs}",
                    "--plugin=protoc-gen-grpc=/usr/bin/grpc_python_plugin",
                    "idgen/v1/idgen.proto", "health/health.proto"],
                   capture_output=True, text=True)
if not ok(r.returncode == 0, "stubs generated from proto/idgen/v1/idgen.proto and "
          f"{health_proto} (protoc, grpc_python_plugin)", r.stderr):
    done()
sys.path.insert(0, stubs)
from google.protobuf import timestamp_pb2  # noqa: E402
from health import health_pb2, health_pb2_grpc  # noqa: E402
from idgen.v1 import idgen_pb2, idgen_pb2_grpc  # noqa: E402

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
EPOCH_S = 1767225600


class Server:
    count = 0
    running = []

    def __init__(self, *args, max_fds=None):
        Server.count += 1
        self.log = os.path.join(work, f"grpc{Server.count}.log")

        def limit():
            if max_fds:
                resource.setrlimit(resource.RLIMIT_NOFILE, (max_fds, max_fds))

        with open(self.log, "w") as f:
            self.p = subprocess.Popen([httpd, "--listen", "127.0.0.1:0",
                                       "--grpc-listen", "127.0.0.1:0",
                                       "--clock-check", "no", *args],
                                      stdout=f, stderr=subprocess.STDOUT,
                                      preexec_fn=limit)
        Server.running.append(self)
        for _ in range(100):
            http = re.search(r"listening on .* \(port (\d+)\)", self.text())
            g = re.search(r"serving gRPC .* \(port (\d+)\)", self.text())
            if http and g:
                self.http = f"http://127.0.0.1:{http.group(1)}"
                self.port = int(g.group(1))
                self.channel = grpc.insecure_channel(f"127.0.0.1:{self.port}")
                self.ids = idgen_pb2_grpc.IdGenStub(self.channel)
                self.health = health_pb2_grpc.HealthStub(self.channel)
                return
            if self.p.poll() is not None:
                break
            time.sleep(0.1)
        raise RuntimeError(f"idgen-httpd {args} did not start:\n{self.text()}")

    def text(self):
        with open(self.log) as f:
            return f.read()

    def get(self, path):
        with urllib.request.urlopen(self.http + path, timeout=10) as r:
            return r.read().decode()

    def status(self, key):
        """A line of /proc/PID/status: VmRSS in KiB, say."""
        with open(f"/proc/{self.p.pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])

    def cpu_s(self):
        with open(f"/proc/{self.p.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def metric(self, name):
        m = re.search(r"^%s (\d+)$" % re.escape(name), self.get("/metrics"), re.M)
        return int(m.group(1)) if m else None

    def minted(self):
        m = re.search(r"^idgen_generator_ids_total (\d+)$", self.get("/metrics"), re.M)
        return int(m.group(1))

    def stop(self):
        Server.running.remove(self)
        self.channel.close()
        self.p.send_signal(signal.SIGTERM)
        try:
            return self.p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            return -1


def status_of(fn, *args, **kw):
    """The call's status code, details and trailing metadata as a dict."""
    try:
        fn(*args, timeout=10, **kw)
        return grpc.StatusCode.OK, "", {}
    except grpc.RpcError as e:
        return e.code(), e.details(), dict(e.trailing_metadata() or ())


def decode(i):
    return {"ms": i >> 22, "region": (i >> 19) & 7, "worker": (i >> 12) & 127,
            "seq": i & 4095}


try:
    s = Server("--device", "sim:43")

    # --- the methods -----------------------------------------------------
    r = s.ids.NextIds(idgen_pb2.NextIdsRequest(count=3, caller="order-service"), timeout=10)
    ids = list(r.ids)
    ok(len(ids) == 3 and ids == sorted(set(ids)) and r.layout_version == 1,
       "NextIds count 3: 3 IDs strictly increasing, layout_version 1", r)
    ok(all(decode(i)["worker"] == 43 and decode(i)["region"] == 0 for i in ids),
       "... each of region 0 and worker 43, the generator's", ids)
    r = s.ids.NextIds(idgen_pb2.NextIdsRequest(), timeout=10)
    ok(len(r.ids) == 1 and r.ids[0] > ids[-1], "NextIds count 0 (unset): one ID, "
       "above those before", r)
    r = s.ids.NextIds(idgen_pb2.NextIdsRequest(count=10000), timeout=30)
    big = list(r.ids)
    ok(len(big) == 10000 and all(a < b for a, b in zip(big, big[1:])),
       "NextIds count 10000 (the bulk lane): exactly 10000, strictly increasing", len(big))

    d = s.ids.DecodeId(idgen_pb2.DecodeIdRequest(id=108421920055775237), timeout=10)
    ok(d.id == 108421920055775237 and d.created_at.seconds == 1793075400 and
       d.created_at.nanos == 123000000 and d.region == 1 and d.worker == 37 and
       d.sequence == 5 and d.layout_version == 1,
       "DecodeId of the contract's example: 2026-10-27T04:30:00.123Z, region 1, "
       "worker 37, sequence 5, layout 1", d)
    d = s.ids.DecodeId(idgen_pb2.DecodeIdRequest(id=big[-1]), timeout=10)
    j = s.get(f"/v1/ids/{big[-1]}")
    ok(f'"worker":{d.worker}' in j and f'"sequence":{d.sequence}' in j and
       f'"unix_ms":{d.created_at.seconds * 1000 + d.created_at.nanos // 1000000}' in j,
       "DecodeId agrees with GET /v1/ids/{id}", f"{d}\n{j}")
    at = timestamp_pb2.Timestamp(seconds=1795000000, nanos=5999999)
    m = s.ids.MinIdAt(idgen_pb2.MinIdAtRequest(at=at), timeout=10)
    when = datetime.datetime.fromtimestamp(at.seconds, datetime.timezone.utc)
    j = s.get("/v1/ids:min?at=" + when.strftime("%Y-%m-%dT%H:%M:%S") + ".005999Z")
    ok(f'"{m.id}"' in j and m.id == (1795000000005 - EPOCH_S * 1000) << 22,
       "MinIdAt agrees with GET /v1/ids:min, the millisecond's smallest ID", f"{m}\n{j}")
    m = s.ids.MinIdAt(idgen_pb2.MinIdAtRequest(
        at=timestamp_pb2.Timestamp(seconds=EPOCH_S)), timeout=10)
    ok(m.id == 0, "MinIdAt of the epoch: 0", m)

    # --- bad input: its status, and no ID consumed ----------------------
    before = s.minted()
    bad = [
        ("count 10001", s.ids.NextIds, idgen_pb2.NextIdsRequest(count=10001)),
        ("count 2^32 - 1", s.ids.NextIds, idgen_pb2.NextIdsRequest(count=4294967295)),
        ("caller with a blank", s.ids.NextIds, idgen_pb2.NextIdsRequest(caller="a b")),
        ("caller of 65 bytes", s.ids.NextIds, idgen_pb2.NextIdsRequest(caller="c" * 65)),
        ("caller not ASCII", s.ids.NextIds, idgen_pb2.NextIdsRequest(caller="caf\u00e9")),
        # protobuf-c's C string would end at the NUL: "ab", or none at all.
        ("caller with a NUL", s.ids.NextIds, idgen_pb2.NextIdsRequest(caller="ab\0cd")),
        ("caller a NUL first", s.ids.NextIds, idgen_pb2.NextIdsRequest(caller="\0ab")),
        ("a negative ID", s.ids.DecodeId, idgen_pb2.DecodeIdRequest(id=-1)),
        ("the smallest sfixed64", s.ids.DecodeId, idgen_pb2.DecodeIdRequest(id=-2**63)),
        ("at missing", s.ids.MinIdAt, idgen_pb2.MinIdAtRequest()),
        ("at before the epoch", s.ids.MinIdAt, idgen_pb2.MinIdAtRequest(
            at=timestamp_pb2.Timestamp(seconds=EPOCH_S - 1, nanos=999999999))),
        ("at before 1970", s.ids.MinIdAt, idgen_pb2.MinIdAtRequest(
            at=timestamp_pb2.Timestamp(seconds=-5))),
        ("at past the time field's end", s.ids.MinIdAt, idgen_pb2.MinIdAtRequest(
            at=timestamp_pb2.Timestamp(seconds=(EPOCH_S * 1000 + 2**41) // 1000 + 1))),
        ("at.nanos negative", s.ids.MinIdAt, idgen_pb2.MinIdAtRequest(
            at=timestamp_pb2.Timestamp(seconds=1795000000, nanos=-1))),
        ("at.nanos 10^9", s.ids.MinIdAt, idgen_pb2.MinIdAtRequest(
            at=timestamp_pb2.Timestamp(seconds=1795000000, nanos=1000000000))),
    ]
    for what, fn, req in bad:
        code, details, _ = status_of(fn, req)
        ok(code == grpc.StatusCode.INVALID_ARGUMENT and details,
           f"{what}: INVALID_ARGUMENT with a message", f"{code} {details}")
    # Not a message of the method's type at all: field 1 as a string.
    raw = s.channel.unary_unary("/idgen.v1.IdGen/NextIds",
                                request_serializer=lambda b: b,
                                response_deserializer=lambda b: b)
    code, details, _ = status_of(raw, b"\x0a\x03abc")
    ok(code == grpc.StatusCode.INVALID_ARGUMENT, "NextIds given bytes that are not a "
       "NextIdsRequest: INVALID_ARGUMENT", f"{code} {details}")
    code, details, _ = status_of(raw, b"\x12" + b"\x7f" * 3 + b"c" * 5000)
    ok(code == grpc.StatusCode.RESOURCE_EXHAUSTED and "4096" in details,
       "a request message over 4096 bytes: RESOURCE_EXHAUSTED", f"{code} {details}")
    for path in ("/idgen.v1.IdGen/NextIdz", "/idgen.v2.IdGen/NextIds", "/x"):
        code, details, _ = status_of(s.channel.unary_unary(path), b"")
        ok(code == grpc.StatusCode.UNIMPLEMENTED, f"{path}: UNIMPLEMENTED", f"{code}")
    ok(s.minted() == before, "none of those consumed an ID",
       f"{before} before, {s.minted()} after")

    # --- the README's Python example, as it is written -------------------
    with open(os.path.join(top, "README.md")) as f:
        example = re.search(r"^python3 - <<'PY'\n(.*?)^PY$", f.read(), re.M | re.S)
    if ok(example, "the README shows a Python client"):
        code = example.group(1).replace("127.0.0.1:9090", f"127.0.0.1:{s.port}")
        r = subprocess.run(["/usr/bin/python3", "-c", code], cwd=stubs,
                           capture_output=True, text=True, timeout=60)
        lines = r.stdout.splitlines()
        ok(r.returncode == 0 and len(lines) == 2 and
           re.fullmatch(r"\[\d+, \d+, \d+\] 1", lines[0]) and lines[1] == "43",
           "... and it runs: 3 IDs, layout 1, decoded to worker 43", r.stdout + r.stderr)

    # --- 8 threads over one channel, 10^6 IDs ------------------------------
    got = [[] for _ in range(8)]
    errors = []

    def mint(k):
        try:
            for _ in range(125):
                got[k].extend(s.ids.NextIds(idgen_pb2.NextIdsRequest(count=1000,
                                                                     caller="t"),
                                            timeout=60).ids)
        except Exception as e:      # noqa: BLE001 (reported below)
            errors.append(repr(e))

    threads = [threading.Thread(target=mint, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    everything = [i for g in got for i in g]
    ok(not errors and len(everything) == 10**6,
       "8 threads over one channel: 10^6 IDs answered", errors[:3])
    ok(len(set(everything)) == len(everything), "... all unique",
       len(everything) - len(set(everything)))
    ok(all(all(a < b for a, b in zip(g, g[1:])) for g in got),
       "... each thread's strictly increasing")

    # 60 large calls at once on one channel, read as they come: every one
    # answered (within grpc_max_streams, what may be owed is no limit).
    futures = [s.ids.NextIds.future(idgen_pb2.NextIdsRequest(count=10000), timeout=60)
               for _ in range(60)]
    codes = []
    for f in futures:
        try:
            codes.append(len(f.result().ids))
        except grpc.RpcError as e:
            codes.append(e.code())
    ok(codes == [10000] * 60, "60 calls of 10000 IDs at once on one channel: all answered",
       [c for c in codes if c != 10000][:5])

    # --- health -----------------------------------------------------------
    for svc in ("", "idgen.v1.IdGen"):
        h = s.health.Check(health_pb2.HealthCheckRequest(service=svc), timeout=10)
        ok(h.status == SERVING, f"health Check '{svc}': SERVING (as /readyz: 200)", h)
    code, _, _ = status_of(s.health.Check, health_pb2.HealthCheckRequest(service="nope"))
    ok(code == grpc.StatusCode.NOT_FOUND, "health Check of a service not served: NOT_FOUND",
       code)
    # A service name with a NUL: protobuf-c's C string would end at it.
    for svc in ("idgen.v1.IdGen\0x", "\0"):
        code, _, _ = status_of(s.health.Check, health_pb2.HealthCheckRequest(service=svc))
        ok(code == grpc.StatusCode.NOT_FOUND, f"health Check of {svc!r}: NOT_FOUND, "
           "not the service before its NUL", code)
    w = s.health.Watch(health_pb2.HealthCheckRequest(service="idgen.v1.IdGen\0x"), timeout=10)
    ok(next(w).status == health_pb2.HealthCheckResponse.SERVICE_UNKNOWN,
       "... and its Watch: SERVICE_UNKNOWN")
    w.cancel()

    # --- /metrics ----------------------------------------------------------
    text = s.get("/metrics")

    def series(method, code):
        m = re.search(r'^idgen_grpc_requests_total\{method="%s",grpc_code="%s"\} (\d+)$'
                      % (re.escape(method), code), text, re.M)
        return int(m.group(1)) if m else None

    # count 3, count 0, count 10000, the README's, the threads' 1000, and 60.
    ok(series("/idgen.v1.IdGen/NextIds", "OK") == 4 + 1000 + 60,
       "/metrics: NextIds OK counted (1064 calls)", series("/idgen.v1.IdGen/NextIds", "OK"))
    ok(series("/idgen.v1.IdGen/MinIdAt", "INVALID_ARGUMENT") == 6 and
       series("/idgen.v1.IdGen/DecodeId", "INVALID_ARGUMENT") == 2,
       "/metrics: INVALID_ARGUMENT counted by method",
       "\n".join(l for l in text.splitlines() if "grpc_requests" in l))
    ok(series("other", "UNIMPLEMENTED") == 3, "/metrics: unknown methods as other, "
       "UNIMPLEMENTED", series("other", "UNIMPLEMENTED"))
    ok(re.search(r'^idgen_grpc_request_duration_seconds_count \d+$', text, re.M) is not None,
       "/metrics: idgen_grpc_request_duration_seconds")
    ok(s.stop() == 0, "SIGTERM: exit 0")

    # --- quotas and refusals ---------------------------------------------
    s = Server("--device", "sim:43", "--callers", "q", "--quotas", "q=1/5")
    ok(len(s.ids.NextIds(idgen_pb2.NextIdsRequest(count=5, caller="q"), timeout=10).ids)
       == 5, "quota q=1/5: 5 IDs at once")
    before = s.minted()
    code, details, md = status_of(s.ids.NextIds, idgen_pb2.NextIdsRequest(caller="q"))
    ok(code == grpc.StatusCode.RESOURCE_EXHAUSTED and
       0 < int(md.get("grpc-retry-pushback-ms", "0")) <= 1000,
       "... then RESOURCE_EXHAUSTED, grpc-retry-pushback-ms within the second",
       f"{code} {details} {md}")
    code, details, _ = status_of(s.ids.NextIds, idgen_pb2.NextIdsRequest(count=6, caller="q"))
    ok(code == grpc.StatusCode.INVALID_ARGUMENT and "burst" in details,
       "... count 6, above the burst: INVALID_ARGUMENT", f"{code} {details}")
    ok(s.minted() == before, "... neither consumed an ID")
    s.stop()

    s = Server("--device", "sim:43", "--sim-lease-ms", "3000", "--ready-margin-ms", "0")
    w = s.health.Watch(health_pb2.HealthCheckRequest(service="idgen.v1.IdGen"), timeout=60)
    seen = []
    for msg in w:
        seen.append(msg.status)
        if msg.status == NOT_SERVING:
            break
    w.cancel()
    ok(seen[:1] == [SERVING] and seen[-1] == NOT_SERVING,
       "health Watch: SERVING, then NOT_SERVING when the lease ends", seen)
    before = s.minted()
    code, details, md = status_of(s.ids.NextIds, idgen_pb2.NextIdsRequest(count=2))
    ok(code == grpc.StatusCode.UNAVAILABLE and md.get("grpc-retry-pushback-ms") == "1000",
       "past the fence: UNAVAILABLE, grpc-retry-pushback-ms 1000", f"{code} {details} {md}")
    ok(s.health.Check(health_pb2.HealthCheckRequest(), timeout=10).status == NOT_SERVING,
       "... health Check NOT_SERVING")
    ok(s.minted() == before, "... nothing minted")
    s.stop()

    # --- SIGTERM with calls in flight ------------------------------------
    s = Server("--device", "sim:43")
    results = []
    stop_minting = threading.Event()

    def mint_on():
        while not stop_minting.is_set():
            try:
                r = s.ids.NextIds(idgen_pb2.NextIdsRequest(count=10000), timeout=30)
                results.append(len(r.ids))
            except grpc.RpcError as e:
                results.append(e.code())
                return

    w = s.health.Watch(health_pb2.HealthCheckRequest(), timeout=60)
    first = next(w).status
    ts = [threading.Thread(target=mint_on) for _ in range(4)]
    for t in ts:
        t.start()
    time.sleep(1)
    s.p.send_signal(signal.SIGTERM)
    watched = [first]
    try:
        for msg in w:
            watched.append(msg.status)
    except grpc.RpcError as e:
        watched.append(e.code())
    stop_minting.set()
    for t in ts:
        t.join()
    rc = s.p.wait(timeout=30)
    Server.running.remove(s)
    whole = [x for x in results if x == 10000]
    ok(whole and all(x == 10000 or x == grpc.StatusCode.UNAVAILABLE for x in results),
       "SIGTERM with NextIds of 10000 in flight: each answered whole or UNAVAILABLE",
       results)
    ok(watched[:1] == [SERVING] and NOT_SERVING in watched and
       watched[-1] == grpc.StatusCode.UNAVAILABLE,
       "... a Watch is told NOT_SERVING, then UNAVAILABLE", watched)
    ok(rc == 0, "... and the process exits 0", rc)

    # --- raw HTTP/2 -------------------------------------------------------
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import h2_client as h2  # noqa: E402
    s = Server("--device", "sim:43", "--timeout-s", "2")
    body = h2.grpc_message(idgen_pb2.NextIdsRequest(count=1).SerializeToString())

    def healthy():
        try:
            return len(s.ids.NextIds(idgen_pb2.NextIdsRequest(), timeout=10).ids) == 1
        except grpc.RpcError:
            return False

    c = h2.Conn(s.port)
    c.request(1, "/idgen.v1.IdGen/NextIds", body, extra=[("grpc-timeout", "1n")])
    hdrs = c.response_headers(1)
    before = s.minted()
    ok(hdrs.get("grpc-status") == "4", "grpc-timeout 1n, passed before the call is "
       "read: DEADLINE_EXCEEDED", hdrs)
    c.request(3, "/idgen.v1.IdGen/NextIds", body, extra=[("grpc-timeout", "1x")])
    hdrs = c.response_headers(3)
    ok(hdrs.get("grpc-status") == "13", "grpc-timeout malformed: INTERNAL", hdrs)
    c.request(5, "/idgen.v1.IdGen/NextIds", body, content_type="application/json")
    hdrs = c.response_headers(5)
    ok(hdrs.get(":status") == "415", "content-type application/json: HTTP 415", hdrs)
    c.request(7, "/idgen.v1.IdGen/NextIds", body + body)
    hdrs = c.response_headers(7)
    ok(hdrs.get("grpc-status") == "3", "two request messages in a unary call: "
       "INVALID_ARGUMENT", hdrs)
    c.request(9, "/idgen.v1.IdGen/NextIds", b"")
    hdrs = c.response_headers(9)
    ok(hdrs.get("grpc-status") == "3", "no request message: INVALID_ARGUMENT", hdrs)
    c.request(11, "/idgen.v1.IdGen/NextIds", body[:-1] + b"")
    hdrs = c.response_headers(11)
    ok(hdrs.get("grpc-status") == "3", "a message shorter than its prefix says: "
       "INVALID_ARGUMENT", hdrs)
    c.request(15, "/idgen.v1.IdGen/NextIds", b"\x01" + body[1:],
              extra=[("grpc-encoding", "gzip")])
    hdrs = c.response_headers(15)
    ok(hdrs.get("grpc-status") == "12" and hdrs.get("grpc-accept-encoding") == "identity",
       "a compressed message (gzip): UNIMPLEMENTED, grpc-accept-encoding identity", hdrs)
    c.request(17, "/idgen.v1.IdGen/NextIds", body,
              extra=[("x-pad%d" % k, "v" * 1000) for k in range(9)])
    ok(c.reset_or_refused(17), "a header list over 8192 bytes: the stream reset")
    ok(s.minted() == before, "none of those consumed an ID")
    ok(c.alive_after_ping(), "... and the connection serves on (PING answered)")
    c.close()

    # A prefix announcing 1 GiB: refused as it arrives, not after 1 GiB.
    c = h2.Conn(s.port)
    c.request(1, "/idgen.v1.IdGen/NextIds", b"\x00\x40\x00\x00\x00" + b"x" * 1000, end=False)
    t0 = time.monotonic()
    hdrs = c.response_headers(1, timeout=3)
    ok(hdrs.get("grpc-status") == "8" and hdrs.get("rst") == 0 and time.monotonic() - t0 < 1,
       "a prefix announcing 1 GiB: RESOURCE_EXHAUSTED as it arrives, and the stream "
       "reset (NO_ERROR), nothing more read", hdrs)
    ok(c.alive_after_ping(), "... and the connection serves on")
    c.close()

    # What a connection buffers: 16 requests of the largest message not
    # yet whole (64 KiB); the 17th is refused at its prefix.
    pad = 4096 - 2 - 2 - 2
    largest = h2.grpc_message(b"\x08\x01" + b"\xa2\x06" + bytes([0x80 | (pad & 0x7f), pad >> 7])
                              + b"p" * pad)
    c = h2.Conn(s.port)
    for k in range(20):     # within HTTP/2's first window of 64 KiB
        c.request(1 + 2 * k, "/idgen.v1.IdGen/NextIds",
                  largest[:4000] if k < 16 else largest[:5], end=False)
    end = time.monotonic() + 1
    while time.monotonic() < end:
        c.pump(0.1)
    codes = [c.headers.get(1 + 2 * k, {}).get("grpc-status") for k in range(20)]
    ok(codes == [None] * 16 + ["8"] * 4, "20 requests of 4096 bytes begun at once: 16 held "
       "(64 KiB), the rest RESOURCE_EXHAUSTED at their prefix", codes)
    for k in range(16):
        c.h2.send_data(1 + 2 * k, largest[4000:], end_stream=True)
    c.flush()
    codes = [c.response_headers(1 + 2 * k).get("grpc-status") for k in range(16)]
    ok(codes == ["0"] * 16, "... and the 16 held, once whole, answered OK", codes)
    c.close()

    # The Compressed-Flag and content-type, as grpc-go's server judges them.
    for what, msg, extra, ctype, want in (
            ("Compressed-Flag 1, no grpc-encoding", b"\x01" + body[1:], [],
             "application/grpc", ("200", "13")),
            ("Compressed-Flag 1, grpc-encoding identity", b"\x01" + body[1:],
             [("grpc-encoding", "identity")], "application/grpc", ("200", "13")),
            ("Compressed-Flag 2", b"\x02" + body[1:], [], "application/grpc", ("200", "13")),
            ("Compressed-Flag 0, grpc-encoding gzip", body, [("grpc-encoding", "gzip")],
             "application/grpc", ("200", "0")),
            ("content-type application/grpc+json", body, [], "application/grpc+json",
             ("415", "13")),
            ("content-type application/grpc+proto", body, [], "application/grpc+proto",
             ("200", "0"))):
        c = h2.Conn(s.port)
        c.request(1, "/idgen.v1.IdGen/NextIds", msg, content_type=ctype, extra=extra)
        hdrs = c.response_headers(1)
        got = (hdrs.get(":status"), hdrs.get("grpc-status"))
        ok(got == want, f"{what}: HTTP {want[0]}, grpc-status {want[1]}", hdrs)
        c.close()

    # A Watch's grpc-timeout: grpcio would end the call itself, so raw.
    c = h2.Conn(s.port)
    c.request(1, "/grpc.health.v1.Health/Watch", h2.grpc_message(b""),
              extra=[("grpc-timeout", "500m")])
    t0 = time.monotonic()
    hdrs = c.response_headers(1, timeout=5)
    ok(hdrs.get("grpc-status") == "4" and c.data.get(1, b"")[:5] == b"\x00\x00\x00\x00\x02",
       "a health Watch with grpc-timeout 500m: SERVING, then DEADLINE_EXCEEDED",
       f"{hdrs} after {time.monotonic() - t0:.1f} s")
    c.close()

    # The handshake's time: a preface and SETTINGS, then nothing.
    c = h2.Conn(s.port)
    c.pump()
    t0 = time.monotonic()
    closed = c.wait_closed(8)
    ok(closed and time.monotonic() - t0 < 5, "a connection that sends its preface and "
       "SETTINGS, then nothing: closed after timeout_s (2), not the idle timeout",
       f"{'closed' if closed else 'open'} after {time.monotonic() - t0:.1f} s")
    c.close()
    c = h2.Conn(s.port)
    c.request(1, "/idgen.v1.IdGen/NextIds", body)
    c.response_headers(1)
    time.sleep(3.5)
    ok(c.alive_after_ping(), "... one that made a call is held past timeout_s (idle timeout)")
    c.close()

    # A peer that reads nothing and opens streams, each refused with a
    # RST_STREAM the server must queue: a million of them.
    rss = s.status("VmRSS")
    raw = socket.socket()
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    raw.connect(("127.0.0.1", s.port))
    raw.settimeout(10)
    flood = h2.unread_streams(10**6)
    sent = 0
    try:
        while sent < len(flood):
            sent += raw.send(flood[sent:sent + (1 << 20)])
    except OSError:
        pass
    grown = (s.status("VmRSS") - rss) // 1024
    ok(sent < len(flood) and grown < 32, "a peer that reads nothing while it opens a "
       "million streams: not read past a bound, the server's memory the same",
       f"{sent} of {len(flood)} bytes taken, {grown} MiB more")
    ok("reads nothing of what it is sent" in s.text(), "... and logged", s.text()[-2000:])
    ok(healthy(), "... another connection served meanwhile")
    raw.close()

    # nghttp2's own rapid-reset bound says INTERNAL_ERROR; ours, ENHANCE_YOUR_CALM.
    # A flood of frames that each want an ACK may be closed on before its
    # GOAWAY is read (the socket reset over the peer's unread bytes).
    for what, flood, want in (
            ("PING", h2.ping_flood, (h2.ENHANCE_YOUR_CALM, h2.CLOSED)),
            ("SETTINGS", h2.settings_flood, (h2.ENHANCE_YOUR_CALM, h2.CLOSED)),
            ("rapid reset (HEADERS, RST_STREAM)", h2.rapid_reset, (h2.INTERNAL_ERROR,))):
        c = h2.Conn(s.port)
        code = flood(c)
        ok(code in want, f"a {what} flood: cut off (GOAWAY {want[0]:#x}, or closed)", code)
        ok(healthy(), f"... another connection served meanwhile")
        c.close()

    # A peer with HTTP/2's default windows (64 KiB) and 20 calls of 10000
    # IDs in flight at once (1.6 MB owed): it reads, so it gets them all.
    c = h2.Conn(s.port)
    big = h2.grpc_message(idgen_pb2.NextIdsRequest(count=10000).SerializeToString())
    for k in range(20):
        c.request(1 + 2 * k, "/idgen.v1.IdGen/NextIds", big)
    # Read nothing for a second (under timeout_s): the answers pile up,
    # and only the WINDOW_UPDATEs that follow can let them out.
    time.sleep(1)
    for k in range(20):
        c.response_headers(1 + 2 * k, timeout=60)
    answers = [c.data.get(1 + 2 * k, b"") for k in range(20)]
    got = []
    for a in answers:
        try:
            got.extend(idgen_pb2.NextIdsResponse.FromString(a[5:]).ids)
        except Exception:   # noqa: BLE001 (cut short: counted below)
            pass
    ok(all(c.headers.get(1 + 2 * k, {}).get("grpc-status") == "0" for k in range(20)) and
       len(got) == 200000 and len(set(got)) == 200000,
       "20 calls of 10000 IDs at once within 64 KiB windows: every one answered whole",
       f"{len(got)} IDs, statuses "
       f"{[c.headers.get(1 + 2 * k, {}).get('grpc-status') for k in range(20)]}")
    c.close()

    # A peer that asks for 10000 IDs and never opens its window.
    c = h2.Conn(s.port, initial_window=0)
    c.request(1, "/idgen.v1.IdGen/NextIds",
              h2.grpc_message(idgen_pb2.NextIdsRequest(count=10000).SerializeToString()))
    t0 = time.monotonic()
    closed = c.wait_closed(30)
    ok(closed, "a peer that never takes its answer: cut off (timeout_s 2)",
       f"after {time.monotonic() - t0:.1f} s")
    ok(healthy(), "... another connection served meanwhile")
    c.close()
    ok(s.stop() == 0, "SIGTERM: exit 0")

    # accept() out of descriptors: no busy loop, a line, a count, and
    # accepting again once there are descriptors.
    s = Server("--device", "sim:43", "--threads", "1", max_fds=48)
    socks = [socket.create_connection(("127.0.0.1", s.port), timeout=10) for _ in range(60)]
    time.sleep(0.5)
    cpu = s.cpu_s()
    time.sleep(2)
    cpu = s.cpu_s() - cpu
    lines = s.text().count("cannot accept connections")
    ok(cpu < 0.5 and 1 <= lines <= 2, "accept() at EMFILE: the listener paused, not a busy "
       "loop", f"{cpu:.2f} s of CPU in 2 s, {lines} log lines")
    for k in socks:
        k.close()
    time.sleep(1)
    try:
        r = s.ids.NextIds(idgen_pb2.NextIdsRequest(), timeout=10)
        served_again = len(r.ids) == 1
    except grpc.RpcError as e:
        served_again = e
    ok(served_again is True, "... accepting again once descriptors are free", served_again)
    paused = s.metric("idgen_accept_paused_total")
    ok(paused and paused >= 1, "... counted in idgen_accept_paused_total", paused)
    ok(s.stop() == 0, "SIGTERM: exit 0")

    # A connection over a limit: a GOAWAY that says which, and a log line.
    for flag, limit, want, code_name in (
            ("--max-connections-per-ip", "max_connections_per_ip", h2.ENHANCE_YOUR_CALM,
             "ENHANCE_YOUR_CALM"),
            ("--max-connections", "max_connections", 0, "NO_ERROR")):
        s = Server("--device", "sim:43", flag, "1")
        first = h2.Conn(s.port)
        first.pump()
        second = h2.Conn(s.port)
        code = second.drain(5)
        ok(code == want and f"{limit} (1) reached".encode() == second.goaway_data,
           f"a second connection past {flag} 1: GOAWAY {code_name}, the limit named "
           "in its debug data", f"{code} {second.goaway_data}")
        ok(f"connection from 127.0.0.1 refused (GOAWAY): {limit} (1) reached" in s.text(),
           "... logged with the client's address", s.text()[-2000:])
        second.close()
        first.close()
        ok(s.stop() == 0, "SIGTERM: exit 0")
finally:
    for srv in list(Server.running):
        srv.p.kill()
        srv.p.wait()

done()

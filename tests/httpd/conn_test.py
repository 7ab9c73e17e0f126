#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""conn_test.py HTTPD WORKDIR [ipv6]

idgen-httpd's connection limits and HTTP framing, as TAP, against
--device sim on loopback, with raw sockets (each client bound to the
source address it is to be counted under):
  - the default configuration serves 64 keep-alive connections from one
    address (no per-address limit by default)
  - a connection over max_connections_per_ip or max_connections gets
    503 with Retry-After and Connection: close, counted by reason in
    /metrics and logged with its address
  - ambiguous framing (two Content-Length, Content-Length with
    Transfer-Encoding, a Transfer-Encoding other than chunked, a
    Content-Length libmicrohttpd does not see as one): 400 in
    the JSON error shape, the connection closed, nothing minted
  - the refusals libmicrohttpd writes itself (431, 400, 413, 505): their
    status, and the connection closed (their body is its HTML)
  - a client that shuts its sending side after its request (nc -N) still
    reads: answered, on the bulk lane (256 IDs and more) as off it; one
    that resets its connection while the lane mints for it loses only
    what was minted for it, every such ID in idgen_ids_lost_total
With "ipv6", in a network namespace of its own (unshare -n: run.sh),
with addresses it adds to its loopback: IPv6 clients counted by their
/64, or whole with ipv6_prefix_per_ip = 128, or by another prefix.
"""
import multiprocessing
import os
import re
import signal
import socket
import subprocess
import struct
import sys
import time
from tap import done, ok

httpd, work = sys.argv[1], sys.argv[2]
ipv6 = len(sys.argv) > 3 and sys.argv[3] == "ipv6"


class Server:
    count = 0
    running = []    # stopped at the end, whatever failed

    def __init__(self, listen, *args):
        Server.count += 1
        self.log = os.path.join(work, f"conn{Server.count}.log")
        with open(self.log, "w") as f:
            self.p = subprocess.Popen([httpd, "--listen", listen, "--device", "sim",
                                       "--clock-check", "no", *args],
                                      stdout=f, stderr=subprocess.STDOUT)
        Server.running.append(self)
        self.port = None
        for _ in range(100):
            m = re.search(r"listening on .* \(port (\d+)\)", self.text())
            if m:
                self.port = int(m.group(1))
                return
            if self.p.poll() is not None:
                break
            time.sleep(0.1)
        raise RuntimeError(f"idgen-httpd {listen} {args} did not start:\n{self.text()}")

    def text(self):
        with open(self.log) as f:
            return f.read()

    def stop(self):
        Server.running.remove(self)
        self.p.send_signal(signal.SIGTERM)
        return self.p.wait(20)


class Conn:
    """One client connection, bound to src, to host:port."""

    def __init__(self, host, port, src):
        fam = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.s = socket.socket(fam, socket.SOCK_STREAM)
        self.s.settimeout(10)
        self.s.bind((src, 0))
        self.s.connect((host, port))
        self.buf = b""

    def send(self, data):
        self.s.sendall(data)

    def request(self, method="GET", path="/livez", body=None, headers=()):
        head = f"{method} {path} HTTP/1.1\r\nHost: t\r\n"
        for h in headers:
            head += h + "\r\n"
        if body is not None:
            head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        try:
            self.send(head.encode() + b"\r\n" + (body or b""))
        except OSError as e:
            return 0, {}, repr(e)
        return self.response()

    def _fill(self):
        b = self.s.recv(65536)
        if not b:
            raise EOFError("closed")
        self.buf += b

    def response(self):
        """(status, {header: value}, body), or (0, {}, why) if none came."""
        try:
            while b"\r\n\r\n" not in self.buf:
                self._fill()
            head, self.buf = self.buf.split(b"\r\n\r\n", 1)
            lines = head.decode("latin1").split("\r\n")
            status = int(lines[0].split()[1])
            hdrs = {}
            for line in lines[1:]:
                k, _, v = line.partition(":")
                hdrs[k.strip().lower()] = v.strip()
            length = int(hdrs.get("content-length", "0"))
            while len(self.buf) < length:
                self._fill()
            body, self.buf = self.buf[:length], self.buf[length:]
            return status, hdrs, body
        except (OSError, EOFError, ValueError, IndexError) as e:
            return 0, {}, repr(e)

    def closed(self, wait=5):
        """True when the server closes the connection (within wait s)."""
        self.s.settimeout(wait)
        try:
            while True:
                b = self.s.recv(65536)
                if not b:
                    return True
        except ConnectionResetError:
            return True     # closed with our data unread: a reset
        except OSError:
            return False

    def close(self):
        self.s.close()


def metric(srv, src, series):
    c = Conn("127.0.0.1", srv.port, src)
    st, _, body = c.request(path="/metrics")
    c.close()
    for line in body.decode().splitlines() if st == 200 else []:
        if line.startswith(series + " "):
            return line.split()[1]
    return None


def metrics(srv, src):
    """One scrape of /metrics: each sample's integer value by its name
    with labels ({} if the scrape failed)."""
    c = Conn("127.0.0.1", srv.port, src)
    st, _, body = c.request(path="/metrics")
    c.close()
    out = {}
    for line in body.decode().splitlines() if st == 200 else []:
        name, _, value = line.rpartition(" ")
        if name and not line.startswith("#") and re.fullmatch(r"-?\d+", value):
            out[name] = int(value)
    return out


def error_503(r, desc):
    st, h, body = r
    ok(st == 503 and h.get("retry-after") == "1" and h.get("connection", "").lower() == "close"
       and h.get("content-type") == "application/json"
       and body.startswith(b'{"error":{"code":"too_many_connections","message":"'),
       desc + ": 503 too_many_connections, Retry-After: 1, Connection: close", r)


def refused_series(reason):
    return f'idgen_connections_refused_total{{reason="{reason}"}}'


def per_ip(host, srcs, other, limit, args, desc):
    """limit connections from srcs[0..limit-1] served, srcs[limit]
    refused, other served."""
    srv = Server(f"[{host}]:0" if ":" in host else f"{host}:0",
                 "--max-connections-per-ip", str(limit), *args)
    held = [Conn(host, srv.port, srcs[i]) for i in range(limit)]
    got = [c.request()[0] for c in held]
    ok(got == [200] * limit, f"{desc}: {limit} connections ({', '.join(srcs[:limit])}) served", got)
    over = Conn(host, srv.port, srcs[limit])
    r = over.request()
    error_503(r, f"{desc}: one more from {srcs[limit]}")
    ok(over.closed(), f"{desc}: ... and that connection closed")
    c = Conn(host, srv.port, other)
    st = c.request()[0]
    ok(st == 200, f"{desc}: a connection from {other} served", st)
    c.close()
    srv.stop()
    return srv, r


def ipv6_tests():
    # A loopback of our own (unshare -n): three addresses of one /64, one
    # of another.
    cmds = [["ip", "link", "set", "lo", "up"]]
    for a in ["2001:db8:1::1", "2001:db8:1::2", "2001:db8:1::3", "2001:db8:2::1"]:
        cmds.append(["ip", "-6", "addr", "add", a + "/64", "dev", "lo", "nodad"])
    for c in cmds:
        r = subprocess.run(c, capture_output=True, text=True)
        if r.returncode:
            print(f"1..0 # SKIP cannot set up addresses ({' '.join(c)}: {r.stderr.strip()})")
            sys.exit(0)
    a1, a2, a3, b1 = "2001:db8:1::1", "2001:db8:1::2", "2001:db8:1::3", "2001:db8:2::1"
    srv, _ = per_ip(a1, [a1, a2, a3], b1, 2, [], "IPv6, per /64 (the default)")
    ok("connection from 2001:db8:1::3/64 refused (503): max_connections_per_ip (2) reached"
       in srv.text(), "IPv6: the refusal logged with the address and its /64", srv.text())
    per_ip(a1, [a1, a1, a1], a2, 2, ["--ipv6-prefix-per-ip", "128"],
           "IPv6, --ipv6-prefix-per-ip 128 (whole addresses)")
    per_ip(a1, [a1, a2, a3], b1, 2, ["--ipv6-prefix-per-ip", "48"],
           "IPv6, --ipv6-prefix-per-ip 48")
    srv, _ = per_ip(a1, [a1, a2, b1], "::1", 2, ["--ipv6-prefix-per-ip", "31"],
                    "IPv6, --ipv6-prefix-per-ip 31 (not on a byte)")


def limit_tests():
    # Issue 28: the defaults serve a load balancer's many connections.
    srv = Server("127.0.0.1:0")
    conns = [Conn("127.0.0.1", srv.port, "127.0.0.1") for _ in range(64)]
    got = []
    for rnd in range(2):
        for c in conns:
            got.append(c.request("POST", "/v1/ids:next", b'{"count":2}')[0])
    ok(got == [200] * 128, "default configuration: 64 keep-alive connections from one "
       "address, 2 requests on each, all 200",
       f"{sum(g == 200 for g in got)} of 128 were 200: {sorted(set(got))}")
    ok(metric(srv, "127.0.0.1", refused_series("max_connections_per_ip")) == "0" and
       metric(srv, "127.0.0.1", refused_series("max_connections")) == "0",
       "... none refused: idgen_connections_refused_total{reason} 0 for both limits")
    for c in conns:
        c.close()
    srv.stop()

    # A per-address limit: the connection past it is told why.
    srv = Server("127.0.0.1:0", "--max-connections-per-ip", "4")
    held = [Conn("127.0.0.1", srv.port, "127.0.0.1") for _ in range(4)]
    got = [c.request()[0] for c in held]
    ok(got == [200] * 4, "--max-connections-per-ip 4: 4 connections from 127.0.0.1 served", got)
    over = Conn("127.0.0.1", srv.port, "127.0.0.1")
    error_503(over.request("POST", "/v1/ids:next", b'{"count":1}'),
              "the 5th connection from 127.0.0.1")
    ok(over.closed(), "... and that connection closed")
    ok(metric(srv, "127.0.0.2", refused_series("max_connections_per_ip")) == "1",
       "... counted in idgen_connections_refused_total{reason=\"max_connections_per_ip\"}")
    ok("connection from 127.0.0.1 refused (503): max_connections_per_ip (4) reached"
       in srv.text(), "... logged with the address", srv.text())
    got = [c.request()[0] for c in held]
    ok(got == [200] * 4, "... while the 4 held keep-alive connections go on being served", got)
    c = Conn("127.0.0.1", srv.port, "127.0.0.2")
    ok(c.request()[0] == 200, "... and another address is served")
    c.close()
    # A refused connection that never sends a request is closed soon.
    idle = Conn("127.0.0.1", srv.port, "127.0.0.1")
    t0 = time.monotonic()
    shut = idle.closed(10)
    ok(shut and time.monotonic() - t0 < 5, "a refused connection that sends nothing is "
       f"closed within a few seconds ({time.monotonic() - t0:.1f} s)")
    held[0].close()
    for _ in range(50):
        c = Conn("127.0.0.1", srv.port, "127.0.0.1")
        st = c.request()[0]
        c.close()
        if st == 200:
            break
        time.sleep(0.1)
    ok(st == 200, "once one of the 4 closes, the address is served again", st)
    for c in held[1:]:
        c.close()
    srv.stop()
    ok("simulated generator: 0 IDs minted" in srv.text(),
       "the refused POST minted nothing", srv.text())

    # The global limit.
    srv = Server("127.0.0.1:0", "--max-connections", "3")
    held = [Conn("127.0.0.1", srv.port, f"127.0.0.{i + 1}") for i in range(3)]
    got = [c.request()[0] for c in held]
    ok(got == [200] * 3, "--max-connections 3: 3 connections from 3 addresses served", got)
    over = Conn("127.0.0.1", srv.port, "127.0.0.4")
    error_503(over.request(), "a 4th, from a 4th address")
    ok(over.closed(), "... and that connection closed")
    for c in held:
        c.close()
    # Until the service sees them closed, the scrape is refused too.
    want = 1
    for _ in range(50):
        val = metric(srv, "127.0.0.5", refused_series("max_connections"))
        if val is not None:
            break
        want += 1
        time.sleep(0.1)
    ok(val == str(want), "... counted in idgen_connections_refused_total{reason=\"max_connections\"}",
       f"{val}, want {want}")
    ok("connection from 127.0.0.4 refused (503): max_connections (3) reached" in srv.text(),
       "... logged with the address", srv.text())
    srv.stop()


def framing_tests():
    srv = Server("127.0.0.1:0")
    body = b'{"count":1}'
    post = (b"POST /v1/ids:next HTTP/1.1\r\nHost: t\r\n"
            b"Content-Type: application/json\r\n")
    cases = [
        ("two Content-Length headers, different",
         post + b"Content-Length: 2\r\nContent-Length: 11\r\n\r\n{}" + body),
        ("two Content-Length headers, equal",
         post + b"Content-Length: 11\r\ncontent-length: 11\r\n\r\n" + body),
        ("Content-Length and Transfer-Encoding: chunked",
         post + b"Content-Length: 16\r\nTransfer-Encoding: chunked\r\n\r\n"
         b"b\r\n" + body + b"\r\n0\r\n\r\n"),
        ("Transfer-Encoding: chunked, then Content-Length",
         post + b"Transfer-Encoding: chunked\r\nContent-Length: 16\r\n\r\n"
         b"b\r\n" + body + b"\r\n0\r\n\r\n"),
        ("Transfer-Encoding: gzip (not chunked: no length)",
         post + b"Transfer-Encoding: gzip\r\n\r\n" + body),
        ("Transfer-Encoding: gzip, chunked",
         post + b"Transfer-Encoding: gzip, chunked\r\n\r\nb\r\n" + body + b"\r\n0\r\n\r\n"),
        ("two Transfer-Encoding headers",
         post + b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"
         b"b\r\n" + body + b"\r\n0\r\n\r\n"),
    ]
    # A framing header libmicrohttpd does not see as one, where a lenient
    # proxy does: the request that follows would reach the service unseen,
    # charged to whatever caller it names.
    inner = (b"POST /v1/ids:next HTTP/1.1\r\nHost: t\r\nContent-Length: 37\r\n\r\n"
             b'{"count":7,"caller":"victim-service"}')
    get = b"GET /livez HTTP/1.1\r\nHost: t\r\n"
    for desc, hdr in [("a space before its colon", b"Content-Length : %d\r\n"),
                      ("a tab before its colon", b"Content-Length\t: %d\r\n"),
                      ("its value on a folded line", b"Content-Length:\r\n %d\r\n")]:
        cases.append((f"Content-Length with {desc}, a request behind it",
                      get + hdr % len(inner) + b"\r\n" + inner))
    for desc, raw in cases:
        c = Conn("127.0.0.1", srv.port, "127.0.0.1")
        c.send(raw)
        r = c.response()
        st, h, b = r
        ok(st == 400 and h.get("connection", "").lower() == "close"
           and h.get("content-type") == "application/json"
           and b.startswith(b'{"error":{"code":"invalid_framing","message":"'),
           f"{desc}: 400 invalid_framing (JSON), Connection: close", r)
        ok(c.closed(), "... and the connection closed, the rest unread")
        c.close()
    # Still served: one chunked body, and one Content-Length.
    c = Conn("127.0.0.1", srv.port, "127.0.0.1")
    c.send(post + b"Transfer-Encoding: Chunked\r\n\r\nb\r\n" + body + b"\r\n0\r\n\r\n")
    st1 = c.response()[0]
    st2 = c.request("POST", "/v1/ids:next", body)[0]
    ok(st1 == 200 and st2 == 200, "Transfer-Encoding: chunked alone, then Content-Length "
       "alone, on one connection: both 200", (st1, st2))
    c.close()
    # libmicrohttpd's own refusals (their body is its HTML).
    own = [
        ("headers over 8 KiB", 431,
         b"GET /livez HTTP/1.1\r\nHost: t\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n"),
        ("Content-Length: abc", 400,
         b"GET /livez HTTP/1.1\r\nHost: t\r\nContent-Length: abc\r\n\r\n"),
        ("Content-Length past 2^64", 413,
         b"GET /livez HTTP/1.1\r\nHost: t\r\nContent-Length: 99999999999999999999999\r\n\r\n"),
        ("HTTP/2.0 as a request line's version", 505,
         b"GET /livez HTTP/2.0\r\nHost: t\r\n\r\n"),
    ]
    for desc, want, raw in own:
        c = Conn("127.0.0.1", srv.port, "127.0.0.1")
        c.send(raw)
        r = c.response()
        ok(r[0] == want and r[1].get("connection", "").lower() == "close" and c.closed(),
           f"{desc}: libmicrohttpd's {want}, and the connection closed", r)
        c.close()
    srv.stop()
    # The first request (two lengths) minted nothing; the chunked and the
    # plain one a single ID each.
    ok("simulated generator: 2 IDs minted" in srv.text(),
       "the refused requests minted nothing (2 IDs for the 2 served)", srv.text())


def post_next(count):
    body = b'{"count":%d}' % count
    return (b"POST /v1/ids:next HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body) + body)


def ids_of(body):
    """The IDs of a POST /v1/ids:next answer, as ints ([] if none)."""
    m = re.match(rb'\{"ids":\[([^\]]*)\]', body)
    return [int(x) for x in re.findall(rb'"(\d+)"', m.group(1))] if m else []


def busy(port, stop, out):
    """Requests of 10000 until stopped: each one's count of IDs, to out."""
    c = Conn("127.0.0.1", port, "127.0.0.1")
    got = []
    while not stop.is_set():
        r = c.request("POST", "/v1/ids:next", b'{"count":10000}')
        got.append(len(ids_of(r[2])) if r[0] == 200 else -r[0])
    c.close()
    out.send(got)


def half_close_tests():
    srv = Server("127.0.0.1:0")
    delivered = 0
    # 255 is minted on the connection's thread, 256 and more on the lane;
    # each 5 times, as the end of stream may come before the request is
    # read, or after.
    for count in (1, 255, 256, 10000):
        bad = []
        for _ in range(5):
            c = Conn("127.0.0.1", srv.port, "127.0.0.1")
            c.send(post_next(count))
            c.s.shutdown(socket.SHUT_WR)
            r = c.response()
            ids = ids_of(r[2]) if r[0] == 200 else []
            if len(ids) != count or ids != sorted(set(ids)):
                bad.append(f"status {r[0]}, {len(ids)} IDs: {r[2][:200]!r}")
            delivered += len(ids)
            c.close()
        ok(not bad, f"count {count}, then shutdown(SHUT_WR), 5 times: 200 with its "
           f"{count} IDs, increasing", "\n".join(bad))
    ok(metric(srv, "127.0.0.1", "idgen_ids_lost_total") == "0",
       "... none of them counted in idgen_ids_lost_total")

    # Clients that reset their connection (SO_LINGER 0) 1 ms after asking
    # for 10000, while four others keep the lane busy taking turns: each
    # is cancelled after a chunk or two, its IDs lost, the rest unminted.
    # The four are processes of their own: a thread of this one, parsing
    # an answer, could hold the interpreter past a reset's 1 ms.  A reset
    # that comes late anyway, its answer sent already (some of it here),
    # is no loss the service can see: such requests are counted apart.
    stop = multiprocessing.Event()
    pipes = [multiprocessing.Pipe(False) for _ in range(4)]
    procs = [multiprocessing.Process(target=busy, args=(srv.port, stop, w)) for _, w in pipes]
    for p in procs:
        p.start()
    time.sleep(0.2)
    resets, late = 20, 0
    for _ in range(resets):
        c = Conn("127.0.0.1", srv.port, "127.0.0.1")
        c.s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        c.send(post_next(10000))
        time.sleep(0.001)
        c.s.setblocking(False)      # no wait for the answer: has it come?
        try:
            late += bool(c.s.recv(1, socket.MSG_PEEK))
        except BlockingIOError:
            pass
        c.close()
        time.sleep(0.002)
    stop.set()
    got = []
    for (r, _), p in zip(pipes, procs):
        got += r.recv()
        p.join()
    ok(got and all(g == 10000 for g in got),
       f"{len(got)} requests of 10000 beside {resets} clients that reset theirs: all answered",
       sorted(set(got)))
    delivered += sum(got)
    # Every request ends (issued or lost) before its connection is
    # counted closed: once the scrape's own is the only one open, the
    # counters are final, and one scrape reads them all together.
    for _ in range(100):
        scrape = metrics(srv, "127.0.0.1")
        if scrape.get("idgen_connections_open") == 1:
            break
        time.sleep(0.1)
    issued = sum(v for k, v in scrape.items() if k.startswith("idgen_ids_issued_total{"))
    lost = scrape.get("idgen_ids_lost_total", -1)
    srv.stop()
    m = re.search(r"simulated generator: (\d+) IDs minted", srv.text())
    minted = int(m.group(1)) if m else -1
    ok(scrape.get("idgen_connections_open") == 1,
       "... and then every connection closed but the scrape's", scrape.get("idgen_connections_open"))
    ok(0 < lost < resets * 10000,
       f"the reset clients lost only what was minted for them: {lost} IDs, "
       f"not the {resets * 10000} they asked for", srv.text())
    # A reset that came after its answer was handed over is an issued
    # answer the client never read: issued is at least what was read.
    ok(minted == issued + lost and issued >= delivered,
       "every ID minted was issued or counted in idgen_ids_lost_total, "
       f"and every ID read was issued ({late} resets seen after their answers)",
       f"minted {minted}, issued {issued}, lost {lost}, read {delivered}")


try:
    if ipv6:
        ipv6_tests()
    else:
        limit_tests()
        framing_tests()
        half_close_tests()
except Exception as e:  # a harness failure is a failed test, not a crash
    ok(False, "the tests ran to their end", repr(e))
finally:
    for srv in Server.running:
        srv.p.kill()
        srv.p.wait()
done()

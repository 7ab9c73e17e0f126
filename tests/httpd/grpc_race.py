#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""grpc_race.py HTTPD WORKDIR

idgen-httpd's gRPC listener against its bulk lane, and against peers that
hold what they are owed, as TAP.  HTTPD is the build under ASan and UBSan
(tests/httpd/Makefile's asan target): any report in its log fails.
  - connections that send four large NextIds and close (half with a
    reset) within 4 ms, from 8 threads for 10 s: the lane's answers meet
    the connections' ends in every order
  - a peer that never opens its window and sends 100 NextIds of 10000:
    what it may be owed is bounded, the rest RESOURCE_EXHAUSTED before a
    single ID is minted for them
  - such a peer that PINGs every half second (not a flood) is cut off
    all the same
  - one that opens its window a byte at a time is cut off all the same
  - an idle connection (past its one call) PINGing every half second is
    sent GOAWAY
  - a connection that never says a word is closed after timeout_s
  - SIGTERM: exit 0, and nothing reported
"""
import os
import random
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h2_client as h2  # noqa: E402
from tap import done, ok  # noqa: E402

httpd, work = sys.argv[1], sys.argv[2]


def varint(v):
    out = b""
    while True:
        b, v = v & 0x7f, v >> 7
        if not v:
            return out + bytes([b])
        out += bytes([b | 0x80])


def next_ids(count):
    return h2.grpc_message(b"\x08" + varint(count))


log = os.path.join(work, "grpc-race.log")
env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:exitcode=99",
           UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
with open(log, "w") as f:
    p = subprocess.Popen([httpd, "--listen", "127.0.0.1:0", "--grpc-listen", "127.0.0.1:0",
                          "--device", "sim:48", "--clock-check", "no", "--timeout-s", "2",
                          "--grpc-max-streams", "200", "--grpc-idle-timeout-s", "3"],
                         stdout=f, stderr=subprocess.STDOUT, env=env)


def text():
    with open(log) as f:
        return f.read()


try:
    port = http = None
    for _ in range(200):
        g = re.search(r"serving gRPC .* \(port (\d+)\)", text())
        h = re.search(r"listening on .* \(port (\d+)\)", text())
        if g and h:
            port, http = int(g.group(1)), f"http://127.0.0.1:{h.group(1)}"
            break
        time.sleep(0.1)
    if not ok(port, "idgen-httpd under ASan and UBSan starts", text()):
        p.kill()
        done()


    def minted():
        with urllib.request.urlopen(http + "/metrics", timeout=30) as r:
            return int(re.search(r"^idgen_generator_ids_total (\d+)$", r.read().decode(),
                                 re.M).group(1))


    # --- connections closing while the lane mints for them ---------------------
    conn = h2.Conn(port)
    for sid in (1, 3, 5, 7):
        conn.request(sid, "/idgen.v1.IdGen/NextIds", next_ids(2000))
    blob = conn.sent
    conn.close()
    stop = time.monotonic() + 10
    count = [0]


    def closer():
        while time.monotonic() < stop:
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=5)
                s.sendall(blob)
                time.sleep(random.random() * 0.004)
                if random.random() < 0.5:      # a reset, not a FIN
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                s.close()
                count[0] += 1
            except OSError:
                time.sleep(0.01)


    threads = [threading.Thread(target=closer) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ok(p.poll() is None and "ERROR: AddressSanitizer" not in text() and
       "runtime error" not in text(),
       f"{count[0]} connections closed while the lane minted for them: no report",
       text()[-4000:])

    if p.poll() is not None:
        done()

    # --- a peer owed more than it reads ------------------------------------------
    before = minted()
    c = h2.Conn(port, initial_window=0)
    for k in range(200):
        c.request(1 + 2 * k, "/idgen.v1.IdGen/NextIds", next_ids(10000))
    end = time.monotonic() + 30
    while time.monotonic() < end and c.pump_no_ack():
        statuses = [c.headers.get(1 + 2 * k, {}).get("grpc-status") for k in range(200)]
        if statuses.count("8") >= 90:
            break
    refused = statuses.count("8")
    took = minted() - before
    ok(refused >= 90 and took <= 105 * 10000,
       "200 NextIds of 10000 on a window never opened: those past 8 MiB owed "
       "RESOURCE_EXHAUSTED, no ID minted for them",
       f"{refused} refused, {took} IDs minted")
    ok(c.wait_closed(30), "... and the peer is cut off after timeout_s")
    c.close()

    def poked_until_cut(c, poke, pump, seconds=30):
        """poke(c), then pump(c), every half second: the seconds until the
        server cut c off (a GOAWAY, or the connection closed), or None."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < seconds:
            try:
                poke(c)
            except h2.h2.exceptions.ProtocolError:
                return time.monotonic() - t0    # the server's GOAWAY came
            c.flush()
            if not pump(c) or c.closed:
                return time.monotonic() - t0
            time.sleep(0.5)
        return None

    # --- PINGs do not keep it alive ----------------------------------------------
    c = h2.Conn(port, initial_window=0)
    for k in range(5):
        c.request(1 + 2 * k, "/idgen.v1.IdGen/NextIds", next_ids(10000))
    cut = poked_until_cut(c, lambda c: c.h2.ping(b"keepaliv"), h2.Conn.pump_no_ack)
    ok(cut is not None and c.goaway != h2.ENHANCE_YOUR_CALM,
       "a peer owed answers it never takes, PINGing all the while: cut off",
       f"cut off after {cut if cut is None else round(cut, 1)} s, GOAWAY {c.goaway}")
    print(f"# cut off after {cut if cut is None else round(cut, 1)} s (GOAWAY {c.goaway})")
    c.close()

    # --- a window opened a byte at a time does not hold its answers ----------------
    def open_a_byte(c):
        c.h2.increment_flow_control_window(1, stream_id=1)
        c.h2.increment_flow_control_window(1)

    c = h2.Conn(port, initial_window=0)
    for k in range(5):
        c.request(1 + 2 * k, "/idgen.v1.IdGen/NextIds", next_ids(10000))
    cut = poked_until_cut(c, open_a_byte, h2.Conn.pump_no_ack)
    ok(cut is not None, "a peer opening its window a byte every half second: cut off "
       "once its answers are held past timeout_s", "still open after 30 s")
    print(f"# cut off after {cut if cut is None else round(cut, 1)} s")
    c.close()

    # --- PINGs do not keep an idle connection -------------------------------------
    # One call first: before it, timeout_s (the handshake's) would end it.
    c = h2.Conn(port)
    c.request(1, "/idgen.v1.IdGen/NextIds", next_ids(1))
    c.response_headers(1)
    cut = poked_until_cut(c, lambda c: c.h2.ping(b"idlepong"),
                          lambda c: c.pump() and c.goaway is None)
    ok((c.goaway is not None or c.closed) and cut is not None and cut > 2.5,
       "a connection with no stream after its call, PINGing every half second: "
       "GOAWAY after grpc_idle_timeout_s", f"cut off after {cut} s")
    print(f"# closed after {cut if cut is None else round(cut, 1)} s")
    c.close()

    # --- a connection that says nothing -------------------------------------------
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    t0 = time.monotonic()
    try:
        while s.recv(65536):   # the server's SETTINGS, then its close
            pass
        closed = True
    except OSError:
        closed = True
    ok(closed and time.monotonic() - t0 < 20, "a connection that never sends its preface: "
       "closed after timeout_s", f"{time.monotonic() - t0:.1f} s")
    s.close()

    p.send_signal(signal.SIGTERM)
    rc = p.wait(timeout=60)
    ok(rc == 0 and "ERROR: AddressSanitizer" not in text() and "runtime error" not in text(),
       "SIGTERM: exit 0, and nothing reported (leaks included)", f"exit {rc}\n{text()[-4000:]}")
finally:
    if p.poll() is None:
        p.kill()
        p.wait()
done()

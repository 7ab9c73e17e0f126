#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""trickle.py PORT SOURCE N MODE LIMIT_S

N connections to 127.0.0.1:PORT from the address SOURCE, each sending a
request one byte every 0.5 s -- MODE "headers": a header that never ends;
"body": a 4000-byte body -- for at most LIMIT_S seconds.  Prints
"connected" once all are open, then the longest time any connection
lasted before the server closed it (LIMIT_S when one never was).
MODE "half": N connections one after another, each sending half a request
line and closing."""
import socket
import sys
import time

port, src, n, mode, limit = (int(sys.argv[1]), sys.argv[2], int(sys.argv[3]),
                             sys.argv[4], float(sys.argv[5]))

def connect():
    s = socket.socket()
    s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    return s

if mode == "half":
    for _ in range(n):
        s = connect()
        s.sendall(b"GET /livez HT")
        s.close()
    sys.exit(0)

if mode == "headers":
    head = b"GET /livez HTTP/1.1\r\nHost: t\r\n"
    drip = b"X-Slow: " + b"a" * 100000
else:
    head = (b"POST /v1/ids:next HTTP/1.1\r\nHost: t\r\n"
            b"Content-Type: application/json\r\nContent-Length: 4000\r\n\r\n")
    drip = b" " * 4000
start = time.monotonic()
socks = []
for _ in range(n):
    s = connect()
    s.sendall(head)
    s.setblocking(False)
    socks.append(s)
print("connected", flush=True)
lasted = {}
i = 0
while len(lasted) < n and time.monotonic() - start < limit:
    for k, s in enumerate(socks):
        if k in lasted:
            continue
        try:
            if s.recv(4096) == b"":
                raise ConnectionResetError
            # An answer: still open until the server closes it.
        except BlockingIOError:
            try:
                s.send(drip[i:i + 1])
                continue
            except BlockingIOError:
                continue
            except OSError:
                pass
        except OSError:
            pass
        lasted[k] = time.monotonic() - start
    i += 1
    time.sleep(0.5)
print("%.1f" % max([lasted.get(k, limit) for k in range(n)]), flush=True)

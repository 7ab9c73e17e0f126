#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The build machine's end of the booted host's command channel.

    guest.py SOCKET [--timeout S] run COMMAND   run COMMAND with bash -c in
        the guest; print its output, exit with its status (124: no answer
        within S seconds, 125: the channel is gone, as when the guest
        powers off or reboots under the command)
    guest.py SOCKET [--timeout S] wait          until the agent answers

SOCKET is the unix socket QEMU serves the guest's second serial port on
(-serial unix:SOCKET,server=on,wait=off); tests/host/agent.sh answers on
the other side.  A request is "ID BASE64\\n", an answer "@@ID RC BASE64@@":
an answer to another ID (a command given up on earlier) is skipped.
"""
import argparse
import base64
import errno
import os
import re
import socket
import sys
import time

ANSWER = re.compile(rb"@@([0-9A-Za-z]+) (-?[0-9]+) ([A-Za-z0-9+/=]*)@@")


# What connect() answers while QEMU has not made the socket yet, or while
# it is between two guests: worth waiting out.  Anything else (a path too
# long for AF_UNIX, a permission) will not change by waiting.
NOT_UP_YET = (errno.ENOENT, errno.ECONNREFUSED, errno.EAGAIN)


def connect(path, deadline):
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
            return s
        except OSError as e:
            s.close()
            if e.errno not in NOT_UP_YET:
                sys.exit(f"guest.py: {path}: {e.strerror or e}")
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.2)


def ask(path, command, deadline, retry_every=None):
    """Send COMMAND; return (rc, output) or (None, reason)."""
    s = connect(path, deadline)
    if s is None:
        return None, "no channel"
    ident = os.urandom(6).hex()
    line = ident.encode() + b" " + base64.b64encode(command.encode()) + b"\n"
    buf = b""
    sent_at = 0.0
    try:
        while True:
            now = time.monotonic()
            if now >= deadline:
                return None, "timeout"
            if sent_at == 0.0 or (retry_every and now - sent_at >= retry_every):
                s.sendall(line)
                sent_at = now
            s.settimeout(min(1.0, deadline - now))
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                continue
            if not chunk:
                return None, "closed"
            buf += chunk
            for m in ANSWER.finditer(buf):
                if m.group(1).decode() == ident:
                    return int(m.group(2)), base64.b64decode(m.group(3))
            # Keep only what may begin an answer still to come: from the
            # last "@@", or a lone "@" the next read may complete.
            cut = buf.rfind(b"@@")
            if cut < 0:
                cut = len(buf) - 1 if buf.endswith(b"@") else len(buf)
            buf = buf[cut:]
    finally:
        s.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("socket")
    p.add_argument("--timeout", type=float, default=120)
    sub = p.add_subparsers(dest="what", required=True)
    r = sub.add_parser("run")
    r.add_argument("command")
    sub.add_parser("wait")
    a = p.parse_args()
    deadline = time.monotonic() + a.timeout
    if a.what == "wait":
        # An agent not up yet drops the line: ask again every 2 s.
        rc, _ = ask(a.socket, "true", deadline, retry_every=2)
        return 0 if rc == 0 else 124
    rc, out = ask(a.socket, a.command, deadline)
    if rc is None:
        print(f"guest.py: {out}", file=sys.stderr)
        return 124 if out == "timeout" else 125
    sys.stdout.buffer.write(out)
    return rc


if __name__ == "__main__":
    sys.exit(main())

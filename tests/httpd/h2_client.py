# SPDX-License-Identifier: GPL-2.0
"""h2_client.py: raw HTTP/2 for grpc_test.py, on Debian's python3-h2.

What a gRPC library never sends: requests with chosen headers and
bodies, and the floods the gRPC listener must cut off (PING, SETTINGS,
rapid reset, streams opened by a peer that reads nothing).  Each flood
returns the GOAWAY error code the server sent, or CLOSED when it only
closed the connection.
"""
import socket
import struct
import time

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings

INTERNAL_ERROR = 0x2
ENHANCE_YOUR_CALM = 0xb
CLOSED = -1


def grpc_message(payload):
    """payload with gRPC's 5-byte prefix, not compressed."""
    return b"\x00" + struct.pack(">I", len(payload)) + payload


class Conn:
    def __init__(self, port, initial_window=None):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sent = b""         # every byte sent, to replay
        self.h2 = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=True, header_encoding="utf-8",
                                      validate_outbound_headers=False,
                                      normalize_outbound_headers=False))
        self.h2.initiate_connection()
        if initial_window is not None:
            self.h2.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE:
                                     initial_window})
            # The connection's own window is not SETTINGS's: never opened.
        self.flush()
        self.headers = {}       # stream -> {name: value}, response and trailers
        self.data = {}          # stream -> the bytes of its DATA frames
        self.ended = set()      # streams reset or ended
        self.goaway = None
        self.goaway_data = b""  # the GOAWAY's debug data
        self.closed = False

    def flush(self):
        data = self.h2.data_to_send()
        if data:
            self.sent += data
            try:
                self.sock.sendall(data)
            except OSError:
                self.closed = True

    def pump(self, timeout=0.5):
        """Read what the server sent for up to timeout; False once closed."""
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            return True
        except OSError:
            data = b""
        if not data:
            self.closed = True
            return False
        try:
            events = self.h2.receive_data(data)
        except h2.exceptions.ProtocolError:
            self.closed = True
            return False
        self.take(events, ack=True)
        self.flush()
        return True

    def take(self, events, ack):
        """The server's events; ack: take DATA (WINDOW_UPDATE) or not."""
        for e in events:
            if isinstance(e, (h2.events.ResponseReceived, h2.events.TrailersReceived)):
                self.headers.setdefault(e.stream_id, {}).update(dict(e.headers))
                if e.stream_ended:
                    self.ended.add(e.stream_id)
            elif isinstance(e, h2.events.StreamEnded):
                self.ended.add(e.stream_id)
            elif isinstance(e, h2.events.StreamReset):
                self.ended.add(e.stream_id)
                self.headers.setdefault(e.stream_id, {})["rst"] = e.error_code
            elif isinstance(e, h2.events.ConnectionTerminated):
                self.goaway = e.error_code
                self.goaway_data = e.additional_data or b""
            elif isinstance(e, h2.events.DataReceived):
                self.data[e.stream_id] = self.data.get(e.stream_id, b"") + e.data
                if ack:
                    self.h2.acknowledge_received_data(e.flow_controlled_length,
                                                      e.stream_id)
                if e.stream_ended:
                    self.ended.add(e.stream_id)

    def request(self, sid, path, body, content_type="application/grpc", extra=(),
                end=True):
        """A request; end=False leaves the stream open after body."""
        hdrs = [(":method", "POST"), (":scheme", "http"), (":path", path),
                (":authority", "localhost"), ("content-type", content_type),
                ("te", "trailers"), *extra]
        self.h2.send_headers(sid, hdrs, end_stream=end and not body)
        if body:
            self.h2.send_data(sid, body, end_stream=end)
        self.flush()

    def response_headers(self, sid, timeout=10):
        end = time.monotonic() + timeout
        while sid not in self.ended and time.monotonic() < end and self.pump():
            pass
        return self.headers.get(sid, {})

    def reset_or_refused(self, sid, timeout=10):
        h = self.response_headers(sid, timeout)
        return "rst" in h or self.goaway is not None

    def alive_after_ping(self, timeout=10):
        self.h2.ping(b"12345678")
        self.flush()
        end = time.monotonic() + timeout
        acked = False
        while time.monotonic() < end and not acked:
            self.sock.settimeout(0.5)
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                continue
            if not data:
                return False
            for e in self.h2.receive_data(data):
                if isinstance(e, h2.events.PingAckReceived):
                    acked = True
            self.flush()
        return acked

    def wait_closed(self, timeout):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if not self.pump_no_ack():
                return True
        return False

    def pump_no_ack(self):
        """As pump(), but never takes the data (no WINDOW_UPDATE)."""
        self.sock.settimeout(0.5)
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            return True
        except OSError:
            return False
        if not data:
            return False
        try:
            self.take(self.h2.receive_data(data), ack=False)
        except h2.exceptions.ProtocolError:
            return False
        return True

    def drain(self, timeout=10):
        """Until the server closes: the GOAWAY's error code, or CLOSED."""
        end = time.monotonic() + timeout
        while time.monotonic() < end and self.pump():
            if self.goaway is not None:
                break
        if self.goaway is not None:
            return self.goaway
        return CLOSED if self.closed else None

    def close(self):
        self.sock.close()


def unread_streams(n, path="/idgen.v1.IdGen/NextIds"):
    """The bytes of a connection that opens n streams, each with its
    headers alone (never whole, so each holds a stream until the server's
    limit refuses the next): the preface, then HEADERS frames made by
    hand once HPACK has every header indexed, so that a million cost
    14 bytes each and no time."""
    c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    c.initiate_connection()
    hdrs = [(":method", "POST"), (":scheme", "http"), (":path", path),
            (":authority", "localhost"), ("content-type", "application/grpc")]
    c.send_headers(1, hdrs)
    start = c.data_to_send()
    c.send_headers(3, hdrs)
    block = c.data_to_send()[9:]        # every field from the table now
    head = struct.pack(">I", len(block))[1:] + b"\x01\x04"   # HEADERS, END_HEADERS
    return start + b"".join(head + struct.pack(">I", sid) + block
                            for sid in range(3, 3 + 2 * (n - 1), 2))


def ping_flood(c, n=20000):
    for k in range(n):
        c.h2.ping(struct.pack(">Q", k))
        if k % 500 == 0:
            c.flush()
    c.flush()
    return c.drain()


def settings_flood(c, n=20000):
    try:
        for _ in range(n):
            c.sock.sendall(b"\x00\x00\x00\x04\x00\x00\x00\x00\x00")  # empty SETTINGS
    except OSError:
        pass
    return c.drain()


def rapid_reset(c, n=20000):
    sid = 1
    try:
        for _ in range(n):
            c.h2.send_headers(sid, [(":method", "POST"), (":scheme", "http"),
                                    (":path", "/idgen.v1.IdGen/NextIds"),
                                    (":authority", "localhost"),
                                    ("content-type", "application/grpc")])
            c.h2.reset_stream(sid)
            sid += 2
            if sid % 200 == 1:
                c.flush()
    except (OSError, h2.exceptions.ProtocolError):
        pass
    c.flush()
    return c.drain()

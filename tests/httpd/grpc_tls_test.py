#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""grpc_tls_test.py HTTPD WORKDIR CERTS

idgen-httpd's gRPC face over TLS with client certificates (issue #37
items 7-9), as TAP, through Python's grpcio (Debian's python3-grpcio) and
grpc.ssl_channel_credentials, with stubs generated from the shipped
proto/idgen/v1/idgen.proto; CERTS from tls-certs.sh.
  - NextIds, DecodeId, health Check over TLS with a SPIFFE certificate;
    ALPN h2 selected
  - the caller is the certificate's: NextIds naming another caller
    PERMISSION_DENIED, nothing minted; naming none or its own, its quota
    and its series in /metrics; a CN's certificate its own caller
  - refused at the handshake: no client certificate, another CA's; an
    insecure (h2c) channel to the TLS port; ALPN http/1.1 or none
  - SIGHUP: new connections of the gRPC listener get the new certificate
"""
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import time
import urllib.request

import grpc

from tap import done, ok, wait_port

httpd, work, certs = sys.argv[1:4]
top = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))


def cert(name):
    return os.path.join(certs, name)


def read(name):
    return open(cert(name), "rb").read()


stubs = os.path.join(work, "grpc-tls-stubs")
shutil.rmtree(stubs, ignore_errors=True)
os.makedirs(stubs)
r = subprocess.run(["protoc", f"-I{top}/proto", "-I/usr/include", f"--python_out={stubs}",
                    f"--grpc_out={stubs}", "--plugin=protoc-gen-grpc=/usr/bin/grpc_python_plugin",
                    "idgen/v1/idgen.proto"], capture_output=True, text=True)
if r.returncode:
    print("Bail out! protoc:", r.stderr)
    sys.exit(1)
sys.path.insert(0, stubs)
from idgen.v1 import idgen_pb2, idgen_pb2_grpc  # noqa: E402

live = os.path.join(work, "grpc-tls")
os.makedirs(live, exist_ok=True)
shutil.copy(cert("server.pem"), os.path.join(live, "server.pem"))
shutil.copy(cert("server.key"), os.path.join(live, "server.key"))
log = os.path.join(work, "grpc-tls.log")
proc = subprocess.Popen(
    [httpd, "--listen", "127.0.0.1:0", "--grpc-listen", "127.0.0.1:0", "--device", "sim:67",
     "--clock-check", "no", "--tls-cert", os.path.join(live, "server.pem"),
     "--tls-key", os.path.join(live, "server.key"), "--tls-client-ca", cert("ca.pem"),
     "--caller-map", cert("callers.map"), "--callers", "order-service billing",
     "--quotas", "order-service=0.001/6"],
    stdout=open(log, "w"), stderr=subprocess.STDOUT)


http_port = wait_port(log, r"listening on .* \(port (\d+)\)", proc)
port = wait_port(log, r"serving gRPC .*\(port (\d+)\)", proc)
print("TAP version 13")
ok("serving gRPC (idgen.v1.IdGen, TLS)" in open(log).read(),
   "its log says the gRPC listener speaks TLS")


def channel(name=None, ca="ca.pem"):
    creds = grpc.ssl_channel_credentials(
        root_certificates=read(ca),
        private_key=read(name + ".key") if name else None,
        certificate_chain=read(name + ".pem") if name else None)
    return grpc.secure_channel(f"localhost:{port}", creds)


def call(ch, method, req):
    stub = idgen_pb2_grpc.IdGenStub(ch)
    try:
        return getattr(stub, method)(req, timeout=10), None
    except grpc.RpcError as e:
        return None, e


def metrics():
    ctx = ssl.create_default_context(cafile=cert("ca.pem"))
    ctx.load_cert_chain(cert("spiffe.pem"), cert("spiffe.key"))
    return urllib.request.urlopen(f"https://localhost:{http_port}/metrics", context=ctx,
                                  timeout=10).read().decode()


def issued(text, caller):
    m = re.search(r'^idgen_ids_issued_total\{caller="%s"\} (\d+)$' % caller, text, re.M)
    return int(m.group(1)) if m else None


orders = channel("spiffe")
res, err = call(orders, "NextIds", idgen_pb2.NextIdsRequest(count=3))
ok(err is None and len(res.ids) == 3 and list(res.ids) == sorted(set(res.ids)),
   "NextIds over TLS (a SPIFFE client certificate): 3 IDs, strictly increasing", err)
res, err = call(orders, "DecodeId", idgen_pb2.DecodeIdRequest(id=108421920055775237))
ok(err is None and res.worker == 37 and res.sequence == 5, "DecodeId over TLS", err)
res, err = call(orders, "NextIds", idgen_pb2.NextIdsRequest(count=1, caller="order-service"))
ok(err is None and len(res.ids) == 1, "NextIds naming its own caller: answered", err)
m0 = metrics()
res, err = call(orders, "NextIds", idgen_pb2.NextIdsRequest(count=1, caller="billing"))
ok(err is not None and err.code() == grpc.StatusCode.PERMISSION_DENIED,
   "NextIds naming another caller: PERMISSION_DENIED", err)
m1 = metrics()
ok(issued(m0, "order-service") == 4 and issued(m1, "order-service") == 4 and
   issued(m1, "billing") == 0, "... nothing minted for it; the 4 IDs counted as order-service's")
res, err = call(orders, "NextIds", idgen_pb2.NextIdsRequest(count=3))
ok(err is not None and err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED,
   "order-service's quota (6) is the certificate's: past it RESOURCE_EXHAUSTED", err)
res, err = call(channel("cn"), "NextIds", idgen_pb2.NextIdsRequest(count=2))
ok(err is None and issued(metrics(), "billing") == 2,
   "a certificate with only CN billing: its caller, billing", err)
ok('idgen_grpc_requests_total{method="/idgen.v1.IdGen/NextIds",grpc_code="PERMISSION_DENIED"} 1'
   in metrics(), "/metrics counts the PERMISSION_DENIED call")

for desc, ch in (("no client certificate", channel(None)),
                 ("a client certificate of another CA", channel("foreign")),
                 ("an insecure channel (h2c) to the TLS port",
                  grpc.insecure_channel(f"127.0.0.1:{port}"))):
    res, err = call(ch, "NextIds", idgen_pb2.NextIdsRequest(count=1))
    ok(err is not None and err.code() == grpc.StatusCode.UNAVAILABLE,
       f"{desc}: refused (UNAVAILABLE)", err)
    ch.close()


def s_client(*args):
    p = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-CAfile",
                        cert("ca.pem"), "-cert", cert("spiffe.pem"), "-key", cert("spiffe.key"),
                        *args], input=b"", capture_output=True, timeout=20)
    return p.stdout.decode(errors="replace") + p.stderr.decode(errors="replace")


out = s_client("-alpn", "h2")
ok("ALPN protocol: h2" in out, "openssl s_client -alpn h2: h2 selected", out[-800:])
out = s_client("-alpn", "http/1.1")
ok("ALPN protocol" not in out and "Verify return code: 0" not in out.split("---")[-1],
   "ALPN http/1.1 alone on the gRPC port: the handshake fails", out[-800:])

# SIGHUP: the gRPC listener's new connections take the new pair too.
shutil.copy(cert("server2.pem"), os.path.join(live, "server.pem.new"))
shutil.copy(cert("server2.key"), os.path.join(live, "server.key.new"))
os.rename(os.path.join(live, "server.key.new"), os.path.join(live, "server.key"))
os.rename(os.path.join(live, "server.pem.new"), os.path.join(live, "server.pem"))
proc.send_signal(signal.SIGHUP)
for _ in range(50):
    if "SIGHUP: TLS reloaded" in open(log).read():
        break
    time.sleep(0.1)
fp = subprocess.run(["openssl", "x509", "-noout", "-fingerprint", "-sha256", "-in",
                     cert("server2.pem")], capture_output=True, text=True).stdout.strip()
served = subprocess.run(["openssl", "x509", "-noout", "-fingerprint", "-sha256"],
                        input=s_client("-alpn", "h2"), capture_output=True, text=True).stdout.strip()
ok(fp and fp == served, "SIGHUP: a new gRPC connection gets the new certificate", served)
res, err = call(orders, "DecodeId", idgen_pb2.DecodeIdRequest(id=1))
ok(err is None, "... while the channel opened before goes on", err)
orders.close()
proc.terminate()
ok(proc.wait(timeout=20) == 0, "SIGTERM: exit 0")
done()

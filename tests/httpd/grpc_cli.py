#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""grpc_cli.py [--tls CA CERT KEY] WORKDIR PORT COMMAND: one gRPC call to
idgen-httpd, for shell suites (tests/vm/httpd-suite.sh, tests/host/run.sh),
through Python's grpcio with stubs generated into WORKDIR from the shipped
.proto on first use.  With --tls, over TLS to 127.0.0.1, trusting CA, as
the client certificate CERT with its key KEY (both empty: none).

  check          print the health of "idgen.v1.IdGen": SERVING, ...
  watch          print each status Watch sends, a line each, flushed
  next N         print N IDs from NextIds, a line each; or the status
                 code's name on stderr and exit 1
"""
import os
import subprocess
import sys

import grpc

argv = sys.argv[1:]
tls = None
if argv[:1] == ["--tls"]:
    tls, argv = argv[1:4], argv[4:]
work, port, cmd, *args = argv
top = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
stubs = os.path.join(work, "grpc-cli-stubs")
if not os.path.isdir(os.path.join(stubs, "idgen")):
    os.makedirs(os.path.join(stubs, "src", "health"), exist_ok=True)
    with open(f"{top}/proto/grpc/health/v1/health.proto") as f, \
            open(os.path.join(stubs, "src", "health", "health.proto"), "w") as g:
        g.write(f.read())
    subprocess.run(["protoc", f"-I{top}/proto", "-I/usr/include", f"-I{stubs}/src",
                    f"--python_out={stubs}", f"--grpc_out={stubs}",
                    "--plugin=protoc-gen-grpc=/usr/bin/grpc_python_plugin",
                    "idgen/v1/idgen.proto", "health/health.proto"], check=True)
sys.path.insert(0, stubs)
from health import health_pb2, health_pb2_grpc  # noqa: E402
from idgen.v1 import idgen_pb2, idgen_pb2_grpc  # noqa: E402

if tls:
    def read(path):
        with open(path, "rb") as f:
            return f.read()
    ca, cert, key = tls
    creds = grpc.ssl_channel_credentials(
        root_certificates=read(ca), certificate_chain=read(cert) if cert else None,
        private_key=read(key) if key else None)
    channel = grpc.secure_channel(f"127.0.0.1:{port}", creds)
else:
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
name = health_pb2.HealthCheckResponse.ServingStatus.Name
try:
    if cmd == "check":
        r = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service="idgen.v1.IdGen"), timeout=30)
        print(name(r.status))
    elif cmd == "watch":
        for r in health_pb2_grpc.HealthStub(channel).Watch(
                health_pb2.HealthCheckRequest(service="idgen.v1.IdGen")):
            print(name(r.status), flush=True)
    elif cmd == "next":
        r = idgen_pb2_grpc.IdGenStub(channel).NextIds(
            idgen_pb2.NextIdsRequest(count=int(args[0])), timeout=30)
        print("\n".join(str(i) for i in r.ids))
    else:
        sys.exit(f"grpc_cli.py: unknown command {cmd}")
except grpc.RpcError as e:
    print(e.code().name, file=sys.stderr)
    sys.exit(1)

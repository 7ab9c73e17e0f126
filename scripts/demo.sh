#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# demo.sh: the main job, from a fresh Debian 12 machine, as root.  Installs
# what it needs, builds idgen.ko and idgenctl, boots a QEMU guest on a
# Debian kernel (this machine's own kernel is never touched), loads the
# module, starts idgend in standalone mode (the embedded default: a fixed
# node and a state file, no etcd), then mints IDs and decodes them, and
# asks idgen-httpd for IDs over HTTP and over gRPC.
#
# IDGEN_SKIP_DEPS=1 skips the package install; IDGEN_KERNEL picks the
# guest kernel (default: the newest supported one installed).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

[ "${IDGEN_SKIP_DEPS:-0}" = 1 ] || scripts/deps.sh
kver=${IDGEN_KERNEL:-$(tests/vm/kernels.sh | tail -n 1)}
scripts/build/build-module.sh "$kver"
make -s -C helper

echo "== booting a $kver guest (software emulation: about 20 s)"
tests/vm/run-guest.sh "$kver" sh -c "
set -e
insmod build/$kver/kmod/idgen.ko
echo '\$ idgend --mode standalone --region 1 --worker 42 --state-file /tmp/idgen/standalone.state &'
helper/idgend/idgend --mode standalone --region 1 --worker 42 --state-file /tmp/idgen/standalone.state &
pid=\$!
until helper/idgenctl/idgenctl lease show 2>/dev/null | grep -q 'lease: in force'; do sleep 0.2; done
echo '\$ idgenctl mint -n 8'
helper/idgenctl/idgenctl mint -n 8
echo '\$ idgenctl decode \$(idgenctl mint --raw)'
helper/idgenctl/idgenctl decode \$(helper/idgenctl/idgenctl mint --raw)
echo '\$ idgenctl lease show'
helper/idgenctl/idgenctl lease show
echo '\$ idgen-httpd --listen 127.0.0.1:8080 --grpc-listen 127.0.0.1:9090 &   # the ID service: HTTP/JSON and gRPC'
helper/httpd/idgen-httpd --listen 127.0.0.1:8080 --grpc-listen 127.0.0.1:9090 2>/tmp/idgen-httpd.log &
hpid=\$!
curl -sf --retry 30 --retry-connrefused --retry-delay 1 http://127.0.0.1:8080/livez >/dev/null
echo \"\\\$ curl -s -X POST -H 'Content-Type: application/json' -d '{\\\"count\\\": 3}' http://127.0.0.1:8080/v1/ids:next\"
curl -s -X POST -H 'Content-Type: application/json' -d '{\"count\": 3}' http://127.0.0.1:8080/v1/ids:next
echo
echo '\$ protoc -I proto -I /usr/include --python_out=/tmp --grpc_out=/tmp --plugin=protoc-gen-grpc=/usr/bin/grpc_python_plugin idgen/v1/idgen.proto'
protoc -I proto -I /usr/include --python_out=/tmp --grpc_out=/tmp --plugin=protoc-gen-grpc=/usr/bin/grpc_python_plugin idgen/v1/idgen.proto
echo '\$ python3   # NextIds over gRPC, through a client generated from the .proto'
cd /tmp && /usr/bin/python3 -c '
import grpc
from idgen.v1 import idgen_pb2, idgen_pb2_grpc
ids = idgen_pb2_grpc.IdGenStub(grpc.insecure_channel(\"127.0.0.1:9090\"))
r = ids.NextIds(idgen_pb2.NextIdsRequest(count=3), timeout=5)
print(\"NextIds:\", list(r.ids), \"layout\", r.layout_version)
print(\"DecodeId:\", ids.DecodeId(idgen_pb2.DecodeIdRequest(id=r.ids[0]), timeout=5))
' && cd - >/dev/null
kill -TERM \$hpid
wait \$hpid
echo '\$ kill -TERM %1   # idgend revokes and stores the last ms'
kill -TERM \$pid
wait \$pid
echo '\$ cat /tmp/idgen/standalone.state'
cat /tmp/idgen/standalone.state
" | grep -av -e '^\[ *[0-9]*\.[0-9]*\]' -e '^SeaBIOS' -e '^Booting from ROM' -e '^IDGEN-VM-'

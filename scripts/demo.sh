#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# demo.sh: the main job, from a fresh Debian 12 machine, as root.  Installs
# what it needs, builds idgen.ko and idgenctl, boots a QEMU guest on a
# Debian kernel (this machine's own kernel is never touched), loads the
# module, gives the host a fixed node with a manual lease (the embedded
# default: no etcd), then mints IDs and decodes them.
#
# IDGEN_SKIP_DEPS=1 skips the package install; IDGEN_KERNEL picks the
# guest kernel (default: the newest supported one installed).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

[ "${IDGEN_SKIP_DEPS:-0}" = 1 ] || scripts/deps.sh
kver=${IDGEN_KERNEL:-$(tests/vm/kernels.sh | tail -n 1)}
scripts/build-module.sh "$kver"
make -s -C helper

echo "== booting a $kver guest (software emulation: about 20 s)"
tests/vm/run-guest.sh "$kver" sh -c "
set -e
insmod build/$kver/kmod/idgen.ko
echo '\$ idgenctl lease set --region 1 --worker 42 --valid-for 600000'
helper/idgenctl lease set --region 1 --worker 42 --valid-for 600000
echo '\$ idgenctl mint -n 8'
helper/idgenctl mint -n 8
echo '\$ idgenctl lease show'
helper/idgenctl lease show
" | grep -av -e '^\[ *[0-9]*\.[0-9]*\]' -e '^SeaBIOS' -e '^Booting from ROM' -e '^IDGEN-VM-'

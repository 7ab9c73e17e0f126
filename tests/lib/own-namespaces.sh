# SPDX-License-Identifier: GPL-2.0
#
# own-namespaces.sh: sourced first by a suite that runs simulated
# generators of fixed workers ("sim:WORKER").  A worker is held on the
# whole host (lib/sim.c): by its state file in /dev/shm, locked, and by an
# abstract socket name, which a network namespace scopes.  A suite that
# took a worker there would fail whenever anything else on the machine ran
# the same worker, and would leave its state behind.  So the suite
# re-executes itself, once, in a mount namespace of its own over an empty
# /dev/shm and a network namespace of its own with only loopback up, and
# its workers are its own.  What it needs from the network (npm's
# packages) scripts/deps.sh installs before.  It needs root (unshare -mn),
# as the suites that source this do.
# shellcheck shell=bash

if [ -z "${IDGEN_OWN_NAMESPACES:-}" ]; then
	if ! unshare --mount --net --propagation private true 2>/dev/null; then
		echo "Bail out! $0: cannot make mount and network namespaces of its own (unshare -mn: run as root)"
		exit 1
	fi
	# shellcheck disable=SC2016 # expanded by the inner shell
	exec env IDGEN_OWN_NAMESPACES=1 unshare --mount --net --propagation private -- \
		bash -c 'ip link set lo up &&
			mount -t tmpfs -o mode=1777,size=256m idgen-shm /dev/shm &&
			exec bash "$0" "$@"' \
		"$0" "$@"
fi

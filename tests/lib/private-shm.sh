# SPDX-License-Identifier: GPL-2.0
#
# private-shm.sh: sourced first by a suite that runs simulated generators
# of fixed workers ("sim:WORKER").  A worker's state and lock are a file
# in /dev/shm (lib/sim.c), one for the whole host: a suite that took a
# worker there would fail whenever anything else on the machine ran the
# same worker, and would leave its state behind.  So the suite re-executes
# itself, once, in a mount namespace of its own over an empty /dev/shm,
# and its workers are its own.  It needs root (unshare -m), as the suites
# that source this do.
# shellcheck shell=bash

if [ -z "${IDGEN_PRIVATE_SHM:-}" ]; then
	if ! unshare --mount --propagation private true 2>/dev/null; then
		echo "Bail out! $0: cannot make a mount namespace of its own (unshare -m: run as root)"
		exit 1
	fi
	# shellcheck disable=SC2016 # expanded by the inner shell
	exec env IDGEN_PRIVATE_SHM=1 unshare --mount --propagation private -- \
		bash -c 'mount -t tmpfs -o mode=1777,size=256m idgen-shm /dev/shm && exec bash "$0" "$@"' \
		"$0" "$@"
fi

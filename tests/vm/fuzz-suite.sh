#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# fuzz-suite.sh [--calls N] [--seconds T] [--seed S] [--trinity N] MODULE:
# fuzz idgen.ko's user interfaces, as root inside a disposable guest
# (tests/vm/run-guest.sh, which fails the run on any kernel splat on the
# console: KASAN, lockdep, UBSAN, WARN, BUG).
#
#   1. tests/fuzz/kfuzz: N calls (default 10^6) of ioctls, reads, poll and
#      netlink requests that know the structs, with wall-clock steps (this
#      guest's clock), checking the contract as it goes (see the comment
#      atop tests/fuzz/kfuzz.c), within T seconds
#      (default: no bound).  It reloads MODULE when a far floor has left
#      the generator unable to mint.
#   2. trinity, as uid 65534, with /dev/idgen as its only victim file and
#      only the syscalls that reach the device, for N syscalls (--trinity,
#      default 10^5; 0 skips it) with seed S.
# Build first: make -C tests/fuzz.  Prints TAP.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../lib/tap.sh
. "$top/tests/lib/tap.sh"

calls=1000000
seconds=0
seed=1
trinity_calls=100000
while [ $# -gt 1 ]; do
	case $1 in
	--calls) calls=$2 ;;
	--seconds) seconds=$2 ;;
	--seed) seed=$2 ;;
	--trinity) trinity_calls=$2 ;;
	*) break ;;
	esac
	shift 2
done
module=${1:?usage: fuzz-suite.sh [--calls N] [--seconds T] [--seed S] [--trinity N] MODULE}

# run-guest.sh sets IDGEN_GUEST=1 in the guest.
if [ "${IDGEN_GUEST:-}" != 1 ]; then
	echo "fuzz-suite.sh: refusing to run outside a test guest" >&2
	exit 2
fi

echo "TAP version 13"
check "insmod $(basename "$module")" insmod "$module"

# kfuzz's own TAP, renumbered; its module path lets it reload.
tap_run "kfuzz" "$top/tests/fuzz/kfuzz" --seed "$seed" --calls "$calls" \
	--seconds "$seconds" --module "$module"

# trinity refuses to run as root; uid 65534 is what any local user could
# do to the device (mode 0444).  The syscalls are those that reach a
# character device's file operations, plus what trinity needs to juggle
# its descriptors.  Its "pseudo" fd source opens the victim path; the
# others (sockets, pipes, inotify, ...) are off, so every fd it passes is
# /dev/idgen's: a blocking read of an inotify fd would hang its children.
# It logs to its cwd: a tmpfs.
trinity_run() {
	local dir out rc syscalls=(read readv pread64 preadv preadv2 ioctl poll ppoll
		select pselect6 epoll_create1 epoll_ctl epoll_wait epoll_pwait
		mmap lseek fcntl newfstat fstatfs fadvise64 splice sendfile close dup dup2
		dup3 flock fsync)
	local args=(-V /dev/idgen -N "$trinity_calls" -s "$seed" -C 2 -q -l off
		"--disable-fds=sockets,pipes,perf,epoll,eventfd,timerfd,testfile,memfd,drm,inotify,userfaultfd,fanotify,bpf")
	local s
	for s in "${syscalls[@]}"; do args+=(-c "$s"); done
	dir=$(mktemp -d /tmp/trinity.XXXXXX) || return 1
	chmod 777 "$dir"
	out=$dir/out
	# Its own output never reaches the console: a fuzzer's log may name
	# what the harness looks for in kernel messages.
	(cd "$dir" && setpriv --reuid=65534 --regid=65534 --clear-groups \
		trinity "${args[@]}") >"$out" 2>&1
	rc=$?
	grep -aE 'Added|Enabled|Ran ' "$out" | tr -d '\033' | sed 's/^/# trinity: /'
	[ "$rc" -eq 0 ] || { tail -n 20 "$out" | tr -d '\033' | sed 's/^/# /'; echo "# trinity exited $rc"; }
	rm -rf "$dir"
	return "$rc"
}
if [ "$trinity_calls" -gt 0 ]; then
	# A lease, so reads mint (kfuzz revoked or changed it).
	"$top/tests/fuzz/kfuzz" --lease >/dev/null 2>&1 || true
	check "trinity: $trinity_calls syscalls on /dev/idgen as uid 65534, seed $seed" trinity_run
fi

check "rmmod at the end" rmmod idgen
exit "$status"

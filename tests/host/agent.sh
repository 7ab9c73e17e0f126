#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# agent.sh: the booted host's end of tests/host/run.sh's command channel
# (tests/host/guest.py is the other).  Not part of idgen: the test puts it
# into the image it boots, as an idgen-test-agent.service of its own, so
# that the build machine can run commands on the guest's second serial port
# (/dev/ttyS1) the way an operator types them into a shell.
#
# A request is one line, "ID BASE64", BASE64 a command for bash -c; the
# answer is one line, "@@ID RC BASE64@@", BASE64 the command's standard
# output and error together.  The port is raw: no echo, no line editing,
# no output processing, so a command or its output may hold any byte.
set -u
tty=${1:-/dev/ttyS1}
stty -F "$tty" raw -echo -ixon -ixoff || exit 1
exec 3<>"$tty"
out=$(mktemp) || exit 1
while IFS=' ' read -r id cmd <&3; do
	[[ $id =~ ^[0-9A-Za-z]+$ ]] || continue
	bash -c "$(base64 -d <<<"$cmd")" </dev/null >"$out" 2>&1
	rc=$?
	printf '@@%s %d %s@@\n' "$id" "$rc" "$(base64 -w 0 "$out")" >&3
done

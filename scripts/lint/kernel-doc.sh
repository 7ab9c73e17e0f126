#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kernel-doc -Wall over the given files (linux-scripts.sh): every
# kernel-doc comment matches what it documents, every member and
# parameter described, every Return: given.  Exits 1 on any warning.
set -euo pipefail

linux=$("$(dirname "$0")/linux-scripts.sh")
out=$("$linux/scripts/kernel-doc" -none -Wall "$@" 2>&1)
[ -z "$out" ] || { printf '%s\n' "$out" >&2; exit 1; }

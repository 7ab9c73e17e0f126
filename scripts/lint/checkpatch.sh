#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# checkpatch.pl --strict over the given files (linux-scripts.sh).
set -euo pipefail

linux=$("$(dirname "$0")/linux-scripts.sh")
exec "$linux/scripts/checkpatch.pl" --strict --no-tree --terse --show-types \
	--ignore FILE_PATH_CHANGES -f "$@"

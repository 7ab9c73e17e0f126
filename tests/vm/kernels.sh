#!/usr/bin/env bash
# kernels.sh - print the installed Debian kernels the VM tests should boot.
#
# Usage: tests/vm/kernels.sh [--series MAJOR.MINOR]
#        tests/vm/kernels.sh --matrix | --matrix-ci
#
# Prints one kernel release per line: the newest installed kernel of each
# series the host's Debian has, that has both /boot/vmlinuz-<ver> and
# headers at /lib/modules/<ver>/build: on Debian 12 (bookworm) 6.1 and 6.12,
# on Debian 13 (trixie) 6.12 (scripts/deps.sh installs them); on another
# release, every installed series.  --expected prints those series
# instead.  With --series, prints only the newest of that series. Nothing
# is hard-coded beyond the series: the Debian ABI number (e.g. 6.1.0-57)
# is discovered from /boot and /lib/modules.  The release is
# VERSION_CODENAME in /etc/os-release, or IDGEN_DEBIAN_RELEASE.
#
# --matrix prints instead the names of the other kernels users run, which
# scripts/build/fetch-kernels.sh downloads into a cache (bookworm-rt, trixie,
# trixie-rt, sid, sid-rt, bookworm-arm64, trixie-arm64, sid-arm64; the
# arm64 ones are cross-built, not booted).  --matrix-ci prints the ones CI
# runs on every change: today all of them; a kernel that cannot pass yet
# is left out of MATRIX_CI, with the reason beside it.  CI builds each
# and boots each amd64 one for a smoke of the device; --matrix runs their
# whole device suite.  Measured on a fresh, busy 2-core machine, the
# matrix adds about 9 minutes to CI (downloads and build roots 6, builds
# and sparse 1.5, smokes 1.2; Documentation/ci-time.md).
# scripts/check.sh --matrix runs them all.
#
# Exit status: 0 if at least one kernel was printed, 1 if none was found,
# 2 on a usage error. A default series that has no kernel is reported on
# stderr but is not fatal as long as another one was found.
#
# BOOT_DIR and MODULES_DIR may be overridden (for testing this script).
set -euo pipefail

BOOT_DIR=${BOOT_DIR:-/boot}
MODULES_DIR=${MODULES_DIR:-/lib/modules}
# shellcheck source=/dev/null
release=${IDGEN_DEBIAN_RELEASE:-$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")}
case $release in
    bookworm) DEFAULT_SERIES=(6.1 6.12) ;;
    trixie) DEFAULT_SERIES=(6.12) ;;
    *) DEFAULT_SERIES=() ;;
esac

usage() {
    echo "usage: $0 [--series MAJOR.MINOR] | --expected | --matrix | --matrix-ci" >&2
    exit 2
}

MATRIX_CI=(bookworm-rt trixie trixie-rt sid sid-rt bookworm-arm64 trixie-arm64 sid-arm64)

series=()
while (($#)); do
    case $1 in
        --matrix)
            exec "$(dirname "$0")/../../scripts/build/fetch-kernels.sh" --list
            ;;
        --expected)
            if ((${#DEFAULT_SERIES[@]})); then
                printf '%s\n' "${DEFAULT_SERIES[@]}"
            fi
            exit 0
            ;;
        --matrix-ci)
            printf '%s\n' "${MATRIX_CI[@]}"
            exit 0
            ;;
        --series)
            (($# >= 2)) || usage
            [[ $2 =~ ^[0-9]+\.[0-9]+$ ]] || {
                echo "$0: --series wants MAJOR.MINOR (e.g. 6.1), got '$2'" >&2
                exit 2
            }
            series+=("$2")
            shift 2
            ;;
        --series=*)
            set -- --series "${1#--series=}" "${@:2}"
            ;;
        -h | --help) usage ;;
        *) usage ;;
    esac
done

# All usable kernel releases: a bootable image plus headers. Only the
# generic Debian flavour (…-amd64); rt and cloud flavours are skipped.
usable_kernels() {
    local img ver
    for img in "$BOOT_DIR"/vmlinuz-*; do
        [[ -f $img ]] || continue
        ver=${img##*/vmlinuz-}
        [[ $ver == *-amd64 && $ver != *-rt-amd64 && $ver != *-cloud-amd64 ]] || continue
        # build is normally a symlink into /usr/src; -f on its Makefile
        # checks that the headers package behind it is really installed.
        [[ -f $MODULES_DIR/$ver/build/Makefile ]] || continue
        printf '%s\n' "$ver"
    done
}

mapfile -t all < <(usable_kernels)

if ((${#series[@]} == 0)); then
    if ((${#DEFAULT_SERIES[@]})); then
        series=("${DEFAULT_SERIES[@]}")
    else
        # A release this script does not know: every series installed.
        mapfile -t series < <(printf '%s\n' "${all[@]}" |
            awk '{ split($0, v, /[.+-]/); print v[1] "." v[2] }' | sort -uV)
    fi
fi

found=0
for s in "${series[@]}"; do
    # Exact MAJOR.MINOR match: 6.1 must not pick up 6.12 and vice versa.
    newest=$(printf '%s\n' "${all[@]}" |
        awk -v s="$s" '{ split($0, v, /[.+-]/); if (v[1] "." v[2] == s) print }' |
        sort -V | tail -n 1)
    if [[ -n $newest ]]; then
        printf '%s\n' "$newest"
        found=$((found + 1))
    else
        echo "$0: no installed $s.* kernel with both $BOOT_DIR/vmlinuz-<ver>" \
            "and $MODULES_DIR/<ver>/build (install linux-image and linux-headers)" >&2
    fi
done

if ((found == 0)); then
    echo "$0: no usable kernel found for series: ${series[*]}" >&2
    exit 1
fi

#!/usr/bin/env bash
# run-guest.sh - run one command inside a throw-away QEMU guest.
#
# Usage:
#   tests/vm/run-guest.sh [--timeout SECS] [--smp N] [--mem MB] [--log FILE]
#                         [--hostfwd tcp:127.0.0.1:HOSTPORT-:GUESTPORT]... [--monitor PATH]
#                         [--cpu MODEL] [--append ARGS] [--plugin SO[,ARG...]]
#                         KVER COMMAND [ARG...]
#
# Boots /boot/vmlinuz-KVER under QEMU (TCG, no KVM) with a small busybox
# initramfs; KVER may also name a kernel of the matrix that
# scripts/build/fetch-kernels.sh unpacked into the cache (sid, trixie-rt, ...): its
# image, and the virtio and 9p modules from its own modules tree. The guest mounts the host's root file system read-only over
# virtio-9p, binds /dev /proc /sys into it, puts tmpfs on /tmp /var/tmp /run
# and /root, brings up loopback, chroots into it and runs COMMAND with its
# arguments exactly as given (no re-splitting), in the directory that is the
# caller's current directory on the host, with stdin from /dev/null and a
# minimal environment (PATH, HOME=/root, TERM=dumb, LANG=C.UTF-8, USER,
# LOGNAME, SHELL, and IDGEN_GUEST=1, which destructive tests require before
# they step the clock or reload modules). Host binaries run unchanged because the root is the host's.
# The host root is all read-only in the guest (write to /tmp); if the caller's
# directory lies under /tmp, /var/tmp, /run or /root it stays visible.
# 9p is mounted cache=loose: host files changed during the run may be stale.
#
# By default the guest has no network card, only its loopback.  With
# --hostfwd (repeatable) it gets one on QEMU's user-mode network: virtio-net
# (its driver added to the initramfs), eth0 at 10.0.2.15/24, and each
# HOSTPORT on the host's 127.0.0.1 forwarded to GUESTPORT of 10.0.2.15 (a
# guest server must listen there, or on 0.0.0.0).  From inside, 10.0.2.2 is
# the host's loopback: a guest reaches a server the host runs on 127.0.0.1
# (etcd, say) at 10.0.2.2:ITS-PORT.  There is no default route: nothing
# outside 10.0.2.0/24 is reachable, so the guest can reach nothing beyond
# the host's loopback.  Only 127.0.0.1 is accepted as the host side.
# --monitor PATH puts QEMU's human monitor on a unix socket at PATH (made
# anew; removed at exit), for a test to freeze ("stop") and thaw ("cont")
# the whole guest.  A --image kernel needs virtio-net built in.
#
# The serial console (carriage returns and terminal escape sequences
# stripped) is streamed to stdout and, with --log, also written to FILE.
#
# Exit status:
#   the guest command's own status, if the guest ran it, printed its exit
#   marker and the console showed no kernel problem; otherwise
#   124  the timeout hit (default 300 s)
#   125  harness or kernel failure: the console showed a kernel problem
#        (BUG:, WARNING:, Oops, KASAN, lockdep, Call Trace, panic, ...)
#        even if the command succeeded; or no exit marker (guest setup
#        failed, QEMU failed, the kernel died)
#   2    usage error
#   130  interrupted (INT/TERM/HUP); QEMU is stopped
# A message saying which is printed on stderr.
#
# --cpu MODEL is QEMU's -cpu (default: QEMU's own, qemu64); --append ARGS adds
# to the kernel command line (say nokaslr); --plugin loads a TCG plugin
# (QEMU's -plugin SO,ARG...).  The instruction counts of scripts/bench/bench.sh
# need all three: a fixed CPU model and kernel layout, and the counting
# plugin (bench/icount/).
#
# Note: the guest command's own output shares the console, so a command
# that prints one of the problem strings (e.g. "WARNING:") fails the run.
#
# The base initramfs is cached in ${XDG_CACHE_HOME:-/var/cache}/idgen-vm/KVER/
# keyed by a hash of the init script, the module list and busybox; the
# command travels in a second, tiny cpio archive appended per run.
set -euo pipefail

prog=${0##*/}
timeout_secs=300
smp=2
mem=1024
log_file=
custom_image=
expect_alloc_failures=
hostfwds=()
monitor_path=
cpu_model=
extra_append=
plugin=

# Strings that mean the kernel is unhappy; any of them on the console fails
# the run. Matched as fixed strings, case-sensitively.
PROBLEM_PATTERNS=(
    'BUG:' 'WARNING:' 'Oops' 'general protection fault' 'KASAN' 'UBSAN'
    'possible recursive locking' 'circular locking' 'kmemleak'
    'unreferenced object' 'Kernel panic' 'Call Trace'
)

# Modules the guest needs for the 9p root: the virtio PCI transport, the 9p
# virtio transport and the 9p file system. Their dependencies are resolved
# from the kernel's modules.dep; built-in ones are skipped.
GUEST_MODULES=(virtio_pci 9pnet_virtio 9p)
# With a network card (--hostfwd): its driver.
NET_MODULES=(virtio_net)

# Bump when the way the initramfs is assembled changes (invalidates caches).
CACHE_FORMAT=1

MARKER=IDGEN-VM-EXIT
GUEST_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

die() {
    echo "$prog: $*" >&2
    exit 125
}

usage() {
    cat >&2 <<EOF
usage: $prog [--timeout SECS] [--smp N] [--mem MB] [--log FILE] [--image BZIMAGE]
       [--expect-alloc-failures] [--hostfwd tcp:127.0.0.1:HOSTPORT-:GUESTPORT]...
       [--monitor PATH] [--cpu MODEL] [--append ARGS] [--plugin SO[,ARG...]]
       KVER COMMAND [ARG...]
Runs COMMAND inside a QEMU guest booted from /boot/vmlinuz-KVER, from the
image of a kernel that scripts/build/fetch-kernels.sh unpacked (KVER is then its
matrix name: sid, trixie-rt, ...), or from BZIMAGE (a kernel with virtio, 9p and its console built in; KVER then only
names it).  --expect-alloc-failures: allocation-failure reports on the
console are expected (fault injection) and do not fail the run.
--hostfwd: a network card on QEMU's user network, eth0 10.0.2.15, the host's
127.0.0.1:HOSTPORT forwarded to its GUESTPORT; the host's loopback is 10.0.2.2
from inside (repeatable).  --monitor PATH: QEMU's monitor on a unix socket.
--cpu: QEMU's -cpu model; --append: more kernel command line;
--plugin: a TCG plugin and its arguments (QEMU's -plugin).
EOF
    exit 2
}

need_int() { # name value
    [[ $2 =~ ^[1-9][0-9]*$ ]] || {
        echo "$prog: $1 wants a positive integer, got '$2'" >&2
        exit 2
    }
}

# ---------------------------------------------------------------- arguments
while (($#)); do
    case $1 in
        --expect-alloc-failures)
            expect_alloc_failures=1
            shift
            ;;
        --timeout | --smp | --mem | --log | --image | --hostfwd | --monitor | --cpu | --append | --plugin)
            (($# >= 2)) || usage
            case $1 in
                --hostfwd)
                    # Host side on loopback only: nothing off this machine
                    # may reach a guest.
                    if ! [[ $2 =~ ^tcp:127\.0\.0\.1:([0-9]{1,5})-:([0-9]{1,5})$ ]] ||
                        ((BASH_REMATCH[1] < 1 || BASH_REMATCH[1] > 65535 ||
                            BASH_REMATCH[2] < 1 || BASH_REMATCH[2] > 65535)); then
                        echo "$prog: --hostfwd wants tcp:127.0.0.1:HOSTPORT-:GUESTPORT, got '$2'" >&2
                        exit 2
                    fi
                    hostfwds+=("$2")
                    ;;
                --monitor) monitor_path=$2 ;;
                --image) custom_image=$2 ;;
                --cpu) cpu_model=$2 ;;
                --append) extra_append+=" $2" ;;
                --plugin) plugin=$2 ;;
                --timeout) need_int "$1" "$2" && timeout_secs=$2 ;;
                --smp) need_int "$1" "$2" && smp=$2 ;;
                --mem) need_int "$1" "$2" && mem=$2 ;;
                --log) log_file=$2 ;;
            esac
            shift 2
            ;;
        --) shift && break ;;
        -h | --help) usage ;;
        -*) echo "$prog: unknown option '$1'" >&2 && usage ;;
        *) break ;;
    esac
done
(($# >= 2)) || usage
kver=$1
shift

# KVER is an installed kernel (/boot, /lib/modules) or a matrix kernel
# unpacked by scripts/build/fetch-kernels.sh (its image and modules in the cache).
modroot=
if [[ -n $custom_image ]]; then
    kernel_image=$custom_image
    moddir=/lib/modules/$kver
else
    env_out=$("$(dirname "$0")/../../scripts/build/kernel-env.sh" "$kver") ||
        die "no kernel $kver to boot"
    eval "$env_out" # sets KVER IMAGE MODDIR MODROOT (and more)
    # shellcheck disable=SC2153
    kernel_image=$IMAGE moddir=$MODDIR modroot=$MODROOT
    [[ $modroot != / ]] || modroot=
    [[ -n $kernel_image ]] || die "kernel $kver has no image to boot (headers only)"
    # The release inside the image, which modprobe -S wants.
    kver_release=$KVER
fi
[[ -r $kernel_image ]] || die "no readable kernel image $kernel_image"
[[ -n $custom_image || -f $moddir/modules.dep ]] ||
    die "no $moddir/modules.dep for kernel $kver"

busybox=$(command -v busybox || true)
[[ -n $busybox ]] || die "busybox not found (apt-get install busybox-static)"
# The guest has no libc before the host root is mounted: busybox must be static.
if LC_ALL=C file -L "$busybox" 2>/dev/null | grep -q 'dynamically linked'; then
    die "$busybox is dynamically linked; install busybox-static"
fi
modprobe=$(command -v modprobe || echo /sbin/modprobe)
for tool in qemu-system-x86_64 cpio timeout sha256sum; do
    command -v "$tool" >/dev/null || die "$tool not found"
done

workdir=$(mktemp -d "${TMPDIR:-/tmp}/idgen-vm.XXXXXX")
qemu_pid=
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    if [[ -n $qemu_pid ]]; then kill -TERM "$qemu_pid" 2>/dev/null || true; fi
    if [[ -n $monitor_path ]]; then rm -f "$monitor_path"; fi
    rm -rf "$workdir"
}
trap cleanup EXIT

# ------------------------------------------------------------- the guest init
# PID 1 in the guest (busybox sh). It must never print the problem strings
# above. A setup failure prints "IDGEN-VM-ERROR: ..." and powers off without
# the exit marker, so the host reports it.
init_script() {
    cat <<'EOF'
#!/bin/busybox sh
# PID 1 of the idgen test VM; generated by tests/vm/run-guest.sh.
export PATH=/bin

fail() {
    echo "IDGEN-VM-ERROR: $*"
    poweroff -f
    sleep 10
    exit 1 # PID 1 exiting panics the kernel; QEMU (-no-reboot) then exits
}

mount -t devtmpfs devtmpfs /dev || fail "cannot mount devtmpfs"
# The kernel opened /dev/console from the archive; reopen it from devtmpfs
# in case the archive had no device node (built without root).
exec </dev/console >/dev/console 2>&1
mount -t proc proc /proc || fail "cannot mount /proc"
mount -t sysfs sysfs /sys || fail "cannot mount /sys"
mkdir -p /dev/pts /dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts || fail "cannot mount devpts"
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /dev/shm || fail "cannot mount /dev/shm"
if [ -d /sys/kernel/debug ]; then
    mount -t debugfs debugfs /sys/kernel/debug || echo "idgen-vm: no debugfs"
fi

# Modules for virtio-pci and 9p, already in modules.dep order.
while read -r mod; do
    insmod "/lib/modules/$mod" || fail "insmod $mod failed"
done </etc/idgen-modules

# The virtio device may still be probing: retry the mount for a few seconds.
# cache=loose: the root is read-only and the guest short-lived, so caching is
# safe (a host file changed while the guest runs may look stale); with
# msize=512000 (QEMU's maximum) it makes reads several times faster.
tries=0
until mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=512000 hostroot /newroot 2>/mount.err; do
    tries=$((tries + 1))
    [ "$tries" -lt 50 ] || fail "cannot mount the host root over 9p: $(cat /mount.err)"
    sleep 0.1
done
echo "IDGEN-VM-UP"

for d in dev proc sys; do
    mount -o rbind "/$d" "/newroot/$d" || fail "cannot bind /$d into the host root"
done
# Sets IDGEN_CWD, IDGEN_CWD_REAL, IDGEN_PATH, IDGEN_NET and the positional
# parameters to the command.
. /idgen-cmd || fail "cannot read the command"

# Writable scratch space inside the read-only host root. If the caller's
# directory lies below one of these (say a checkout under /tmp), keep the
# host's copy of it visible (read-only) on top of the fresh tmpfs.
scratch() { # mode dir
    if [ ! -d "/newroot$2" ]; then
        echo "idgen-vm: no $2 in the host root, no tmpfs there"
        return 0
    fi
    keep=
    case "$IDGEN_CWD_REAL" in "$2"/*) keep=1 ;; esac
    if [ -n "$keep" ]; then
        mkdir -p /keep
        mount -o bind "/newroot$IDGEN_CWD_REAL" /keep || fail "cannot bind $IDGEN_CWD_REAL"
    fi
    mount -t tmpfs -o "mode=$1,nosuid,nodev" tmpfs "/newroot$2" || fail "cannot mount tmpfs on $2"
    if [ -n "$keep" ]; then
        mkdir -p "/newroot$IDGEN_CWD_REAL" &&
            mount -o move /keep "/newroot$IDGEN_CWD_REAL" || fail "cannot keep $IDGEN_CWD_REAL visible"
    fi
}
scratch 1777 /tmp
scratch 1777 /var/tmp
scratch 755 /run
scratch 700 /root
mkdir -p -m 1777 /newroot/run/lock

ip link set lo up || fail "cannot bring up loopback"
# A network card only when the host asked for one (--hostfwd).  QEMU's user
# network answers at 10.0.2.2 (the host's loopback); no default route, so
# nothing beyond 10.0.2.0/24 is reachable.  The driver may still be probing.
if [ -n "$IDGEN_NET" ]; then
    tries=0
    until [ -e /sys/class/net/eth0 ]; do
        tries=$((tries + 1))
        [ "$tries" -lt 50 ] || fail "no eth0: the virtio-net card did not appear"
        sleep 0.1
    done
    ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0 ||
        fail "cannot configure eth0"
fi
hostname idgen-vm

env -i PATH="$IDGEN_PATH" HOME=/root TERM=dumb LANG=C.UTF-8 USER=root \
    LOGNAME=root SHELL=/bin/sh IDGEN_GUEST=1 \
    chroot /newroot /bin/sh -c 'cd "$1" || exit 125; shift; exec "$@"' \
    idgen-vm "$IDGEN_CWD" "$@" </dev/null
status=$?

echo "IDGEN-VM-EXIT: $status"
poweroff -f
sleep 10
exit 1
EOF
}

# -------------------------------------------------------- module resolution
# Prints "RELPATH" for each module file to load, in load order, once each.
# modprobe --show-depends walks modules.dep (and softdeps) of KVER and says
# "builtin NAME" for code built into the kernel.
resolve_modules() {
    local m line path
    declare -A seen=()
    # A custom image has everything the guest needs built in.
    [[ -z $custom_image ]] || return 0
    for m in "${GUEST_MODULES[@]}" ${hostfwds[0]:+"${NET_MODULES[@]}"}; do
        "$modprobe" ${modroot:+-d "$modroot"} -S "${kver_release:-$kver}" --show-depends "$m" >"$workdir/deps" ||
            die "cannot resolve module $m for $kver"
        while read -r line; do
            case $line in
                insmod\ *)
                    path=${line#insmod }
                    path=${path%% *}
                    path=${path#"$moddir"/}
                    if [[ -z ${seen[$path]:-} ]]; then
                        seen[$path]=1
                        printf '%s\n' "$path"
                    fi
                    ;;
                builtin\ *) ;;
                *) die "unexpected modprobe output for $m: $line" ;;
            esac
        done <"$workdir/deps"
    done
}

# Single-quotes a string for sh.
shquote() {
    local s=${1//\'/\'\\\'\'}
    printf "'%s'" "$s"
}

# Writes a newc cpio of the current directory's contents to stdout.
make_cpio() {
    find . -mindepth 1 -print0 | LC_ALL=C sort -z | cpio --null -o -H newc -R 0:0 --quiet
}

# ------------------------------------------------------- cached initramfs
# (Not through a process substitution: a module that cannot be resolved
# must stop the run, not leave a guest without its 9p root.)
resolve_modules >"$workdir/modules"
mapfile -t modules <"$workdir/modules"
# The key: init script, module files (path, size, mtime), busybox, format.
cache_key=$(
    {
        echo "format $CACHE_FORMAT"
        init_script
        for m in "${modules[@]}"; do stat -c '%n %s %Y' "$moddir/$m"; done
        sha256sum <"$busybox"
    } | sha256sum | cut -c1-16
)
cache_dir=${XDG_CACHE_HOME:-/var/cache}/idgen-vm/$kver
base_cpio=$cache_dir/initramfs-$cache_key.cpio

if [[ ! -s $base_cpio ]]; then
    mkdir -p "$cache_dir" || die "cannot create cache directory $cache_dir (set XDG_CACHE_HOME)"
    stage=$workdir/stage
    mkdir -p "$stage"/{bin,dev,etc,lib/modules,newroot,proc,sys,tmp}
    cp "$busybox" "$stage/bin/busybox"
    for applet in $("$busybox" --list); do
        [[ $applet == busybox ]] || ln -s busybox "$stage/bin/$applet"
    done
    # Needs root; without it the init reopens the console from devtmpfs.
    mknod -m 600 "$stage/dev/console" c 5 1 2>/dev/null || true
    init_script >"$stage/init"
    chmod 755 "$stage/init"
    # Busybox insmod cannot read compressed modules: decompress here.
    : >"$stage/etc/idgen-modules"
    for m in "${modules[@]}"; do
        name=${m##*/}
        case $name in
            *.ko.xz) name=${name%.xz} && xz -dc "$moddir/$m" >"$stage/lib/modules/$name" ;;
            *.ko.zst) name=${name%.zst} && zstd -qdc "$moddir/$m" >"$stage/lib/modules/$name" ;;
            *.ko.gz) name=${name%.gz} && gzip -dc "$moddir/$m" >"$stage/lib/modules/$name" ;;
            *.ko) cp "$moddir/$m" "$stage/lib/modules/$name" ;;
            *) die "unknown module file type: $m" ;;
        esac
        printf '%s\n' "$name" >>"$stage/etc/idgen-modules"
    done
    (cd "$stage" && make_cpio) >"$base_cpio.tmp.$$"
    mv -f "$base_cpio.tmp.$$" "$base_cpio" # atomic: concurrent runs are safe
    # Drop archives of older init scripts or module sets after an hour.
    find "$cache_dir" -maxdepth 1 -name 'initramfs-*.cpio*' ! -name "${base_cpio##*/}" \
        -mmin +60 -delete 2>/dev/null || true
    rm -rf "$stage"
fi
# In use: not one of the "older" archives another run's build drops (with
# and without a network card, two archives of one kernel take turns).
touch "$base_cpio" 2>/dev/null || true

# ------------------------------------------------ per-run command archive
# /idgen-cmd is sourced by the init: it sets the working directory and the
# positional parameters, every word single-quoted, so no argument is ever
# re-split or expanded.
mkdir -p "$workdir/cmd"
{
    printf 'IDGEN_CWD=%s\n' "$(shquote "$PWD")"
    printf 'IDGEN_CWD_REAL=%s\n' "$(shquote "$(pwd -P)")"
    printf 'IDGEN_PATH=%s\n' "$(shquote "$GUEST_PATH")"
    printf 'IDGEN_NET=%s\n' "${hostfwds[0]:+1}"
    printf 'set --'
    for arg in "$@"; do printf ' %s' "$(shquote "$arg")"; done
    printf '\n'
} >"$workdir/cmd/idgen-cmd"
# The kernel unpacks concatenated newc archives in order.
(cd "$workdir/cmd" && make_cpio) >"$workdir/initramfs.cpio"
cat "$base_cpio" >>"$workdir/initramfs.cpio"

# ---------------------------------------------------------------- run QEMU
# loglevel=5 shows KERN_WARNING and worse (WARN(), lockdep), hides info.
append="console=ttyS0 edd=off loglevel=5 panic=-1 panic_on_warn=1 oops=panic"
# Under emulation on a loaded host the boot's check that the 8254 timer
# reaches the IO-APIC can miss its window and panic ("IO-APIC + timer
# doesn't work"); virtual machines skip that check.
append+=" no_timer_check"
# Under emulation the clocksource watchdog finds the TSC skewed some
# seconds after boot and switches clocksource, and the switch patches
# kernel text (the timekeeping read path on 7.x) with int3 breakpoints
# while other vCPUs run it: QEMU's TCG can let a vCPU hit such an int3
# after the patch completed, an oops in ktime_get_raw_fast_ns() no real
# CPU would see.  Keep the TSC, unwatched, for the guest's whole life.
append+=" tsc=nowatchdog"
# A debug kernel (KASAN, lockdep) is slow enough under TCG that evaluating
# ACPI's PCI routing (_PRT) can run into the AML loop timeout and leave
# virtio without an interrupt: route PCI interrupts from the BIOS table.
[[ -z $custom_image ]] || append+=" pci=noacpi"
append+=$extra_append
qemu=(
    qemu-system-x86_64 -accel tcg -nographic -no-reboot
    -smp "$smp" -m "$mem"
    -kernel "$kernel_image" -initrd "$workdir/initramfs.cpio"
    -append "$append"
    -rtc base=utc
    -virtfs 'local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap'
)
[[ -z $cpu_model ]] || qemu+=(-cpu "$cpu_model")
[[ -z $plugin ]] || qemu+=(-plugin "$plugin")

# A network card only if asked for: QEMU's user network (no host privileges),
# each forward from the host's loopback.
# (No option ROM: the kernel boots directly, iPXE would only cost time.)
if ((${#hostfwds[@]})); then
    netdev=user,id=net0,ipv6=off
    for fwd in "${hostfwds[@]}"; do netdev+=,hostfwd=$fwd; done
    qemu+=(-netdev "$netdev" -device virtio-net-pci,netdev=net0,romfile=)
else
    qemu+=(-nic none)
fi
if [[ -n $monitor_path ]]; then
    [[ $monitor_path != *,* ]] || die "--monitor: a path without commas, please: $monitor_path"
    qemu+=(-monitor "unix:$monitor_path,server=on,wait=off")
fi

console=$workdir/console.log
mkfifo "$workdir/console.fifo"

# Under TCG a guest can, rarely, hang before the host root is mounted; the
# init prints IDGEN-VM-UP once it is.  Nothing of the command has run in a
# guest that never came up, so its boot is retried, once.
UP_MARKER=IDGEN-VM-UP
boot_timeout=${IDGEN_BOOT_TIMEOUT:-300}

# Boots the guest once; sets qemu_status, and boot_hung if it never came up.
run_qemu() {
    local start=$SECONDS reader_pid
    boot_hung=
    # Reader: strip CRs and terminal control sequences (the firmware clears
    # the screen), stream to stdout, keep a copy (and the --log file).
    sed -u 's/\r//g; s/\x1b\[[0-9;?]*[A-Za-z]//g; s/\x1b[c78]//g' <"$workdir/console.fifo" |
        tee "$console" ${log_file:+"$log_file"} &
    reader_pid=$!

    # QEMU binds the monitor's socket afresh (a retried boot, a stale file).
    if [[ -n $monitor_path ]]; then rm -f "$monitor_path"; fi
    # stdin from /dev/null: nothing from the caller's terminal reaches the guest.
    timeout -k 10 "$timeout_secs" "${qemu[@]}" </dev/null >"$workdir/console.fifo" &
    qemu_pid=$!

    while kill -0 "$qemu_pid" 2>/dev/null && [[ -z $interrupted ]]; do
        grep -aq "$UP_MARKER" "$console" 2>/dev/null && break
        if ((SECONDS - start > boot_timeout)); then
            boot_hung=1
            kill -TERM "$qemu_pid" 2>/dev/null || true
            break
        fi
        sleep 1
    done

    qemu_status=0
    while :; do
        wait "$qemu_pid" && qemu_status=0 || qemu_status=$?
        # A trapped signal interrupts wait with a status > 128: wait again.
        kill -0 "$qemu_pid" 2>/dev/null || break
    done
    qemu_pid=
    wait "$reader_pid" || true
    # Ended (a panic at boot, say) before the host root was mounted:
    # nothing of the command ran, so this too is a boot to retry.
    grep -aq "$UP_MARKER" "$console" 2>/dev/null || boot_hung=1
}

# timeout(1) runs in its own process group, so forward ^C / TERM to it.
interrupted=
trap 'interrupted=1; [[ -z $qemu_pid ]] || kill -TERM "$qemu_pid" 2>/dev/null || true' INT TERM HUP

run_qemu
if [[ -n $boot_hung && -z $interrupted ]]; then
    echo "$prog: the guest did not come up (hung for ${boot_timeout}s, or died while booting); booting it again" >&2
    run_qemu
fi
if [[ -n $boot_hung ]]; then
    echo "$prog: the guest did not come up, twice (kernel $kver): see the console above" >&2
    exit 125
fi

# ------------------------------------------------------------- verdict
# With --expect-alloc-failures (fault injection runs), drops the reports
# the kernel prints when an allocation fails as asked: a warn_alloc header
# and its stack up to </TASK>, and kmemleak's note that it could not
# allocate.  Anything else, a WARNING or BUG among them, still counts.
expected_reports() {
    if [[ -z $expect_alloc_failures ]]; then
        cat
        return
    fi
    awk '
        /vmalloc error:|page allocation failure:/ { skip = 1 }
        /kmemleak: Cannot allocate/ { next }
        skip { if (/<\/TASK>/) skip = 0; next }
        { print }
    '
}

verdict=
problems=$(expected_reports <"$console" |
    grep -aF "${PROBLEM_PATTERNS[@]/#/-e}" | head -n 20 || true)
marker=$(grep -ao "$MARKER: [0-9]*" "$console" | tail -n 1 || true)
guest_error=$(grep -a 'IDGEN-VM-ERROR:' "$console" | head -n 1 || true)

if [[ -n $interrupted ]]; then
    echo "$prog: interrupted; QEMU stopped" >&2
    exit 130
fi
if ((qemu_status == 124 || qemu_status == 137)); then
    echo "$prog: timed out after ${timeout_secs}s (kernel $kver)" >&2
    verdict=124
fi
if [[ -n $problems ]]; then
    {
        echo "$prog: the guest console shows a kernel problem (kernel $kver):"
        printf '%s\n' "$problems" | sed 's/^/    /'
    } >&2
    verdict=${verdict:-125}
fi
if [[ -n $guest_error ]]; then
    echo "$prog: guest setup failed: ${guest_error#*IDGEN-VM-ERROR: }" >&2
    verdict=${verdict:-125}
fi
if [[ -z $marker || -z ${marker#"$MARKER: "} ]]; then
    echo "$prog: no '$MARKER' line on the console: the command did not finish" \
        "(QEMU status $qemu_status, kernel $kver)" >&2
    verdict=${verdict:-125}
fi
if [[ -n $verdict ]]; then exit "$verdict"; fi
exit "${marker#"$MARKER: "}"

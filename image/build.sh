#!/usr/bin/env bash
# Build the Mokka image as an OCI archive without a container engine.
#
#   image/build.sh [OUT] [ARCH]     ARCH amd64 (default) or arm64
#       OUT default: dist/mokka-image.tar (amd64), dist/mokka-image-arm64.tar (arm64)
#   ctr -n k8s.io images import OUT      -> docker.io/library/mokka:<pyproject version>
#
# From Debian bookworm packages (image/packages.txt) with mmdebstrap's extract variant:
# no maintainer script runs, so nothing executes inside the tree and an arm64 image
# builds on an amd64 host. Then image/finish.py lays in the zipapp (./shivfile, its
# wheels for the image's machine and Python), NVIDIA's nvidia-smi (pinned, `dpkg -x`)
# and the users, and image/oci_layout.py writes the archive.
# Reproducible: SOURCE_DATE_EPOCH (default: the last commit's time) fixes every mtime,
# so two builds from the same tree and the same Debian archive give the same bytes.
# Needs root (mmdebstrap keeps the packages' owners), python3.11 and the network (the
# Debian mirror of this machine's apt sources, or MOKKA_DEBIAN_MIRROR; PyPI for arm64).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
PYTHON="${PYTHON:-python3}"

arch="${2:-amd64}"
case "$arch" in
  amd64) default_out="$repo/dist/mokka-image.tar"; platform="" ;;
  arm64) default_out="$repo/dist/mokka-image-arm64.tar"; platform=manylinux2014_aarch64 ;;
  *) echo "build.sh: ARCH must be amd64 or arm64, not '$arch'" >&2; exit 1 ;;
esac
out="${1:-$default_out}"
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
if [ "$(id -u)" != 0 ]; then
  echo "build.sh: run as root: mmdebstrap's root mode keeps the packages' file owners" >&2
  exit 1
fi
if ! command -v mmdebstrap >/dev/null; then
  echo "build.sh: mmdebstrap not found: apt-get install mmdebstrap" >&2
  exit 1
fi
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH="$(git -C "$repo" log -1 --format=%ct 2>/dev/null || echo 0)"
fi
export SOURCE_DATE_EPOCH
revision="$(git -C "$repo" rev-parse HEAD 2>/dev/null || true)"
source_url="${MOKKA_IMAGE_SOURCE:-$(git -C "$repo" remote get-url origin 2>/dev/null || true)}"

work="$(mktemp -d "${TMPDIR:-/tmp}/mokka-image.XXXXXX")"
trap 'rm -rf "$work"' EXIT
started=$SECONDS

# ---- the zipapp, with compiled wheels for the image's machine and Python ------------
python_version="$("$PYTHON" -c 'import sys; sys.path.insert(0, sys.argv[1]); import layout; print(layout.PYTHON_VERSION)' "$here")"
# Both machines' native libraries, as the image has always carried them (tests/image).
MOKKA_ARCHES=all MOKKA_WHEEL_PLATFORM="$platform" MOKKA_WHEEL_PYTHON="$python_version" \
  PYTHON="$PYTHON" "$repo/shivfile" --quiet "$work/mokka" >/dev/null

# ---- the pinned extracts (NVIDIA's nvidia-smi), through a private apt ------------------
# shellcheck source=.ci/private-apt.sh
source "$repo/.ci/private-apt.sh"
mapfile -t extracts < <("$PYTHON" "$here/packages.py" extract)
suites="$(for line in "${extracts[@]}"; do read -r _ suite component _ <<<"$line"; echo "$suite:$component"; done | sort -u | tr '\n' ' ')"
private_apt_setup "$work/apt" "$suites"
APT_OPTS+=(-o "APT::Architecture=$arch" -o "APT::Architectures=$arch" -o "Dir::Cache::pkgcache=")
apt-get "${APT_OPTS[@]}" update -qq
mkdir -p "$work/debs"
nvidia_smi=""
for line in "${extracts[@]}"; do
  read -r spec _ _ member <<<"$line"
  (cd "$work/debs" && apt-get "${APT_OPTS[@]}" download -qq "$spec")
  name="${spec%%=*}"
  dpkg -x "$work/debs/${name}"_*.deb "$work/x-$name"
  if [ "$name" = nvidia-smi ]; then nvidia_smi="$work/x-$name/$member"; fi
done
[ -f "$nvidia_smi" ] || { echo "build.sh: packages.txt extracts no nvidia-smi binary" >&2; exit 1; }

# ---- the root filesystem from bookworm -----------------------------------------------
mirror="${MOKKA_DEBIAN_MIRROR:-$(system_mirror)}"
mirror="${mirror%/}"
excludes=()
while read -r glob; do excludes+=(--dpkgopt="path-exclude=$glob"); done < <("$PYTHON" "$here/packages.py" excludes)
if ! mmdebstrap --quiet --mode=root --variant=extract --format=directory --architectures="$arch" \
  --include="$("$PYTHON" "$here/packages.py" include)" \
  --setup-hook=/usr/share/mmdebstrap/hooks/merged-usr/setup00.sh \
  "${excludes[@]}" \
  bookworm "$work/rootfs" "deb $mirror bookworm main" "deb $mirror bookworm-updates main" \
  "deb ${MOKKA_DEBIAN_SECURITY_MIRROR:-${mirror%/debian}/debian-security} bookworm-security main" \
  > "$work/mmdebstrap.log" 2>&1; then
  cat "$work/mmdebstrap.log" >&2
  echo "build.sh: mmdebstrap failed (its log is above)" >&2
  exit 1
fi
"$PYTHON" "$here/finish.py" rootfs "$work/rootfs" "$nvidia_smi"
"$PYTHON" "$here/finish.py" zipapp "$work/rootfs" "$work/mokka"

# ---- the archive ---------------------------------------------------------------------
"$PYTHON" "$here/oci_layout.py" "$work/rootfs" "$out" --arch "$arch" --epoch "$SOURCE_DATE_EPOCH" \
  --source "$source_url" --revision "$revision"
echo "build.sh: $out: $(du -m "$out" | cut -f1) MB, sha256 $(sha256sum "$out" | cut -d' ' -f1), $((SECONDS - started)) s"

# Sourced by .ci/fetch-runtime.sh and bench/fetch-go-baseline.sh: a private apt
# (own source list, lists and cache under a folder of ours) that downloads
# Debian packages without touching the system's apt state.
#
#   private_apt_setup APTDIR "bookworm trixie"   -> fills the APT_OPTS array
#   private_apt_setup APTDIR "bookworm:main,contrib trixie:main,non-free"
#       (SUITE[:COMPONENT,...]; the components default to main)
#
# The mirror is the one this machine's own apt sources use for the main archive
# (or MOKKA_DEBIAN_MIRROR), so no host is hard-coded here.

PRIVATE_APT_KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

system_mirror() {
    { sed -n 's/^URIs:[[:space:]]*//p' /etc/apt/sources.list.d/*.sources 2>/dev/null
      sed -n 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]*\).*/\2/p' \
          /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null
    } | tr ' ' '\n' | grep -E '/debian/?$' | head -n 1 || true
}

private_apt_setup() {
    local aptdir="$1" suites="$2" mirror spec suite components
    mirror="${MOKKA_DEBIAN_MIRROR:-$(system_mirror)}"
    if [[ -z "$mirror" ]]; then
        echo "no Debian mirror found in /etc/apt sources; set MOKKA_DEBIAN_MIRROR" >&2
        return 1
    fi
    if [[ ! -s "$PRIVATE_APT_KEYRING" ]]; then    # the only thing ever installed system-wide
        echo "installing debian-archive-keyring (missing $PRIVATE_APT_KEYRING)" >&2
        DEBIAN_FRONTEND=noninteractive apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debian-archive-keyring
    fi
    mkdir -p "$aptdir/lists/partial" "$aptdir/cache/archives/partial"
    : > "$aptdir/sources.list"
    for spec in $suites; do
        suite="${spec%%:*}"
        components=main
        [[ "$spec" == *:* ]] && components="${spec#*:}"
        echo "deb [signed-by=$PRIVATE_APT_KEYRING] $mirror $suite ${components//,/ }" >> "$aptdir/sources.list"
    done
    APT_OPTS=(
        -o "Dir::Etc::sourcelist=$aptdir/sources.list"
        -o "Dir::Etc::sourceparts=-"
        -o "Dir::State::Lists=$aptdir/lists"
        -o "Dir::Cache=$aptdir/cache"
        -o "Dir::Cache::srcpkgcache="
        -o "APT::Sandbox::User=root"
        -o "Acquire::Languages=none"
        -o "APT::Get::List-Cleanup=false"
    )
}

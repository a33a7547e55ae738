#!/usr/bin/env bash
# The node-wide injection demo: a 4-worker kind cluster with containerd NRI on,
# Mokka's image built from this checkout and loaded into it, the nvml-mock chart
# with a gb200 ComputeDomain topology, and the gpu-agent workload that checks
# what the NRI plugin injected. Safe to re-run; see README.md beside this file.
#
# Every kubectl and helm call names the demo's own context (kind-$CLUSTER_NAME):
# kind makes that context current only when it creates the cluster, so on a
# re-run the current context may belong to another cluster entirely.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
prog="run.sh"

# The default cluster name is also written into values.yaml's node names.
default_cluster="nvml-mock-node-wide-demo"
CLUSTER_NAME="${CLUSTER_NAME:-$default_cluster}"
NVML_MOCK_NAMESPACE="${NVML_MOCK_NAMESPACE:-mokka}"
WORKLOAD_NAMESPACE="${WORKLOAD_NAMESPACE:-default}"
GPU_PROFILE="${GPU_PROFILE:-}"
GPU_COUNT="${GPU_COUNT:-}"
WITH_COMPUTE_DOMAIN="${WITH_COMPUTE_DOMAIN:-true}"
FORCE_RECREATE="${FORCE_RECREATE:-false}"
KIND_NODE_IMAGE="${KIND_NODE_IMAGE:-}"
IMAGE_TAG="${IMAGE_TAG:-}"
ROLLOUT_TIMEOUT="${ROLLOUT_TIMEOUT:-300s}"

release="nvml-mock"
workers=(worker worker2 worker3 worker4)
# The node label the chart's DaemonSet selects (its values.yaml nodeSelector).
opt_in_label="nvml-mock.nvidia.com/enabled"

die() {
    echo "$prog: $*" >&2
    exit 1
}

# --- inputs ------------------------------------------------------------------

missing=()
for tool in docker kind kubectl helm; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
[ "${#missing[@]}" -eq 0 ] ||
    die "missing required tool(s) on PATH: ${missing[*]}; install them (see README.md, Prerequisites) and re-run"

for flag in FORCE_RECREATE WITH_COMPUTE_DOMAIN; do
    case "${!flag}" in
        true | false) ;;
        *) die "$flag must be true or false, got '${!flag}'" ;;
    esac
done
[[ "$CLUSTER_NAME" =~ ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$ ]] ||
    die "CLUSTER_NAME '$CLUSTER_NAME' is not a valid kind cluster name: use lower-case letters, digits and '-'"
for ns in NVML_MOCK_NAMESPACE WORKLOAD_NAMESPACE; do
    [[ "${!ns}" =~ ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$ ]] ||
        die "$ns '${!ns}' is not a valid namespace name: use lower-case letters, digits and '-'"
done
# The plugin never injects into its own release namespace or kube-system.
if [ "$WORKLOAD_NAMESPACE" = "$NVML_MOCK_NAMESPACE" ] || [ "$WORKLOAD_NAMESPACE" = kube-system ]; then
    die "WORKLOAD_NAMESPACE '$WORKLOAD_NAMESPACE' is excluded from injection: choose one other than '$NVML_MOCK_NAMESPACE' and kube-system"
fi
if [ -n "$GPU_COUNT" ] && ! [[ "$GPU_COUNT" =~ ^[1-9][0-9]*$ ]]; then
    die "GPU_COUNT must be a positive integer, got '$GPU_COUNT'"
fi
[[ "$ROLLOUT_TIMEOUT" =~ ^[1-9][0-9]*[smh]$ ]] ||
    die "ROLLOUT_TIMEOUT must be a duration such as 300s or 10m, got '$ROLLOUT_TIMEOUT'"
if [ -z "$IMAGE_TAG" ]; then
    # The project version, from the [project] table of pyproject.toml.
    IMAGE_TAG="$(sed -n '/^\[project\]$/,/^\[/s/^version = "\([^"]*\)"$/\1/p' "$repo/pyproject.toml")"
    [ -n "$IMAGE_TAG" ] || die "no version in the [project] table of $repo/pyproject.toml; set IMAGE_TAG"
fi
[[ "$IMAGE_TAG" =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ ]] ||
    die "IMAGE_TAG '$IMAGE_TAG' is not a valid image tag: use letters, digits, '_', '.' and '-'"

context="kind-$CLUSTER_NAME"
image="mokka:$IMAGE_TAG"
k() { kubectl --context "$context" "$@"; }
h() { helm "$@" --kube-context "$context"; }
step() { echo "==> $*"; }

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# --- the cluster -------------------------------------------------------------

# kind runs its nodes as docker containers, so this is checked first.
docker info >/dev/null 2>&1 || die "docker is installed but its daemon does not answer ('docker info' failed); start it and re-run"

cluster_exists() {
    local name
    # `kind get clusters` prints one name a line (and a notice on stderr when none).
    while IFS= read -r name; do
        [ "$name" = "$CLUSTER_NAME" ] && return 0
    done < <(kind get clusters 2>/dev/null)
    return 1
}

create_cluster() {
    local args=(create cluster --name "$CLUSTER_NAME" --config "$here/kind-config.yaml" --wait 120s)
    [ -z "$KIND_NODE_IMAGE" ] || args+=(--image "$KIND_NODE_IMAGE")
    step "creating kind cluster $CLUSTER_NAME"
    kind "${args[@]}"
}

if cluster_exists; then
    if [ "$FORCE_RECREATE" = true ]; then
        step "FORCE_RECREATE=true: deleting kind cluster $CLUSTER_NAME"
        kind delete cluster --name "$CLUSTER_NAME"
        create_cluster
    else
        step "reusing kind cluster $CLUSTER_NAME (FORCE_RECREATE=true rebuilds it)"
    fi
else
    create_cluster
fi

k cluster-info >/dev/null 2>&1 ||
    die "cluster $CLUSTER_NAME does not answer through context $context: run 'kind export kubeconfig --name $CLUSTER_NAME', or FORCE_RECREATE=true"
# A reused cluster must have the shape this demo's topology names.
nodes="$(k get nodes -o name)"
for worker in "${workers[@]}"; do
    grep -qx "node/$CLUSTER_NAME-$worker" <<<"$nodes" ||
        die "cluster $CLUSTER_NAME has no node $CLUSTER_NAME-$worker: it was not made by this demo; set FORCE_RECREATE=true to rebuild it"
done
k wait --for=condition=Ready node --all --timeout="$ROLLOUT_TIMEOUT"
# The chart runs only on nodes that opted in: the four workers, not the control plane.
step "labelling the workers $opt_in_label=true"
k label node "${workers[@]/#/$CLUSTER_NAME-}" "$opt_in_label=true" --overwrite

# --- the image -----------------------------------------------------------------

step "building $image from $repo"
docker build -f "$repo/image/Dockerfile" -t "$image" "$repo"
step "loading $image into kind cluster $CLUSTER_NAME"
kind load docker-image "$image" --name "$CLUSTER_NAME"

# --- the chart -----------------------------------------------------------------

values=(-f "$here/values.yaml")
if [ "$CLUSTER_NAME" != "$default_cluster" ]; then
    # values.yaml names the default cluster's nodes; a later -f replaces its list.
    # Plain sed (no GNU extensions): this also runs on macOS. The names are
    # validated above, so they hold nothing sed would read as special.
    sed "s/$default_cluster-worker/$CLUSTER_NAME-worker/g" "$here/values.yaml" >"$scratch/values-$CLUSTER_NAME.yaml"
    values+=(-f "$scratch/values-$CLUSTER_NAME.yaml")
fi
# --set-string: a tag such as 1.0 must not turn into the number 1.
sets=(--set-string "image.tag=$IMAGE_TAG")
[ -z "$GPU_PROFILE" ] || sets+=(--set-string "gpu.profile=$GPU_PROFILE")
[ -z "$GPU_COUNT" ] || sets+=(--set "gpu.count=$GPU_COUNT")
[ "$WITH_COMPUTE_DOMAIN" = true ] || sets+=(--set "topology.enabled=false")

# The image tag does not change between runs, so an upgrade alone would keep
# the pods on the image loaded before: restart them when the release existed.
installed=false
if h status "$release" --namespace "$NVML_MOCK_NAMESPACE" >/dev/null 2>&1; then
    installed=true
fi
step "installing chart $release into namespace $NVML_MOCK_NAMESPACE"
h upgrade --install "$release" "$repo/chart" --namespace "$NVML_MOCK_NAMESPACE" --create-namespace \
    "${values[@]}" "${sets[@]}"
if [ "$installed" = true ]; then
    k -n "$NVML_MOCK_NAMESPACE" rollout restart "daemonset/$release"
fi
if ! k -n "$NVML_MOCK_NAMESPACE" rollout status "daemonset/$release" --timeout="$ROLLOUT_TIMEOUT"; then
    k -n "$NVML_MOCK_NAMESPACE" get pods -l "app.kubernetes.io/name=$release" -o wide || true
    die "daemonset/$release in namespace $NVML_MOCK_NAMESPACE did not become ready within $ROLLOUT_TIMEOUT; see the pods above and README.md, Manual checks"
fi

# --- the workload --------------------------------------------------------------

step "deploying gpu-agent into namespace $WORKLOAD_NAMESPACE"
k get namespace "$WORKLOAD_NAMESPACE" >/dev/null 2>&1 || k create namespace "$WORKLOAD_NAMESPACE"
# The workload reads CHECK_FABRIC from this ConfigMap (written, then applied, so
# a re-run with another WITH_COMPUTE_DOMAIN updates it).
k -n "$WORKLOAD_NAMESPACE" create configmap gpu-agent-checks \
    --from-literal="CHECK_FABRIC=$WITH_COMPUTE_DOMAIN" --dry-run=client -o yaml >"$scratch/gpu-agent-checks.yaml"
k -n "$WORKLOAD_NAMESPACE" apply -f "$scratch/gpu-agent-checks.yaml"
# Injection happens when a container is created, so the pods must be new ones,
# created by the plugin just rolled out.
k -n "$WORKLOAD_NAMESPACE" delete daemonset gpu-agent --ignore-not-found --wait=true
k -n "$WORKLOAD_NAMESPACE" apply -f "$here/workload.yaml"
if ! k -n "$WORKLOAD_NAMESPACE" rollout status daemonset/gpu-agent --timeout="$ROLLOUT_TIMEOUT"; then
    # Every pod's log, not just one: the failing node may be any of the four.
    k -n "$WORKLOAD_NAMESPACE" logs -l app.kubernetes.io/name=gpu-agent --prefix --tail=20 || true
    die "gpu-agent did not pass its checks on every worker within $ROLLOUT_TIMEOUT; its logs are above"
fi
ready="$(k -n "$WORKLOAD_NAMESPACE" get daemonset gpu-agent -o 'jsonpath={.status.numberReady}')"
[ "$ready" = "${#workers[@]}" ] ||
    die "gpu-agent is ready on $ready node(s), expected ${#workers[@]} (one per worker)"

step "gpu-agent passed on all ${#workers[@]} workers:"
k -n "$WORKLOAD_NAMESPACE" logs -l app.kubernetes.io/name=gpu-agent --tail=-1 --prefix | grep 'gpu-agent: OK' || true
echo "Manual checks: README.md in $here (context $context)."

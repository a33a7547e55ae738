{{/* Names and labels. */}}
{{- define "nvml-mock.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "nvml-mock.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "nvml-mock.selectorLabels" -}}
app.kubernetes.io/name: {{ include "nvml-mock.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* A pool's DaemonSet and ConfigMap: <fullname>-<pool>; the one pool made of the values
alone (no pools list) keeps <fullname>. */}}
{{- define "nvml-mock.poolName" -}}
{{- if .Pool -}}{{ printf "%s-%s" (include "nvml-mock.fullname" .) .Pool }}{{- else -}}{{ include "nvml-mock.fullname" . }}{{- end -}}
{{- end -}}

{{/* Each pool's DaemonSet selects its own pods only. */}}
{{- define "nvml-mock.poolSelectorLabels" -}}
{{ include "nvml-mock.selectorLabels" . }}
{{- if .Pool }}
nvml-mock.nvidia.com/pool: {{ .Pool }}
{{- end -}}
{{- end -}}

{{- define "nvml-mock.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "nvml-mock.poolSelectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "nvml-mock.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* Fixed container paths (not values): where the ConfigMaps, the host and the staging lock are. */}}
{{- define "nvml-mock.hostRoot" -}}/host{{- end -}}
{{- define "nvml-mock.profileDir" -}}/etc/mokka/profile{{- end -}}
{{- define "nvml-mock.topologyDir" -}}/etc/mokka/topology{{- end -}}
{{/* names.STAGING_LOCK_PATH and its directory (the memory-backed emptyDir). */}}
{{- define "nvml-mock.stagingLockDir" -}}/run/mokka{{- end -}}
{{- define "nvml-mock.stagingLock" -}}/run/mokka/staging.lock{{- end -}}
{{/* The directory of names.AGENT_LOCK_PATH: one agent per host root, on the host. */}}
{{- define "nvml-mock.agentLockDir" -}}/var/lib/mokka{{- end -}}
{{/* names.RUN_NVIDIA_DRIVER's directory: the agent bind-mounts the driver tree there. */}}
{{- define "nvml-mock.runNvidia" -}}/run/nvidia{{- end -}}
{{/* names.NFD_FEATURE_FILE's directory. */}}
{{- define "nvml-mock.nfdFeaturesDir" -}}/etc/kubernetes/node-feature-discovery/features.d{{- end -}}
{{/* names.KMSG_PATH */}}
{{- define "nvml-mock.kmsg" -}}/dev/kmsg{{- end -}}

{{/* --feature-gates value, sorted: "" when none is set. */}}
{{- define "nvml-mock.featureGates" -}}
{{- $out := list -}}
{{- range $name := keys .Values.featureGates | sortAlpha -}}
{{- $out = append $out (printf "%s=%t" $name (index $.Values.featureGates $name)) -}}
{{- end -}}
{{- join "," $out -}}
{{- end -}}

{{/* --excluded-namespaces: the release namespace first, then kube-system, then the extras. */}}
{{- define "nvml-mock.excludedNamespaces" -}}
{{- $ns := list .Release.Namespace "kube-system" -}}
{{- range .Values.nri.excludedNamespaces -}}{{- $ns = append $ns . -}}{{- end -}}
{{- join "," (uniq $ns) -}}
{{- end -}}

{{/* A node selector as kubectl -l reads it (k=v,k=v), sorted; "every node" when empty. */}}
{{- define "nvml-mock.selectorText" -}}
{{- $out := list -}}
{{- range $k := keys . | sortAlpha -}}{{- $out = append $out (printf "%s=%v" $k (get $ $k)) -}}{{- end -}}
{{- if $out -}}{{ join "," $out }}{{- else -}}every node{{- end -}}
{{- end -}}

{{/* --plugin-index: two digits (--set gives an integer: zero-padded). */}}
{{- define "nvml-mock.pluginIndex" -}}
{{- if kindIs "string" .Values.nri.pluginIndex -}}{{ .Values.nri.pluginIndex }}{{- else -}}{{ printf "%02d" (int .Values.nri.pluginIndex) }}{{- end -}}
{{- end -}}

{{- define "nvml-mock.systemd" -}}
{{- if and .Values.nodeAgent.containerRuntime.enabled (eq .Values.nodeAgent.containerRuntime.restartMode "systemd") -}}true{{- end -}}
{{- end -}}

{{- define "nvml-mock.metricsPort" -}}
{{- if eq (toString .Values.metrics.port) "" -}}{{ .Values.nodeAgent.healthPort }}{{- else -}}{{ .Values.metrics.port }}{{- end -}}
{{- end -}}

{{/* The refusals: values a render must not turn into a DaemonSet. */}}
{{- define "nvml-mock.validate" -}}
{{- $mode := toString .Values.nri.deviceInjectionMode -}}
{{- if not (has $mode (list "raw" "cdi")) -}}
{{- fail (printf "nri.deviceInjectionMode must be \"raw\" or \"cdi\", got %q" $mode) -}}
{{- end -}}
{{- $rolling := .Values.updateStrategy.rollingUpdate | default dict -}}
{{- $surge := toString (default "" (get $rolling "maxSurge")) -}}
{{- if and .Values.nodeAgent.containerRuntime.enabled (eq (toString .Values.updateStrategy.type) "RollingUpdate") (not (has $surge (list "" "0" "0%"))) -}}
{{- fail (printf "updateStrategy.rollingUpdate.maxSurge must be 0 or unset while nodeAgent.containerRuntime.enabled is true, got %q: the old pod's teardown would remove the new pod's containerd setup; use maxUnavailable, or set nodeAgent.containerRuntime.enabled=false" $surge) -}}
{{- end -}}
{{- $port := toString .Values.metrics.port -}}
{{- if not (has $port (list "" (toString .Values.nodeAgent.healthPort) (toString .Values.nri.healthPort))) -}}
{{- fail (printf "metrics.port %s is not served: /metrics is on nodeAgent.healthPort (%v) and nri.healthPort (%v)" $port .Values.nodeAgent.healthPort .Values.nri.healthPort) -}}
{{- end -}}
{{- if eq (int .Values.nodeAgent.healthPort) (int .Values.nri.healthPort) -}}
{{- if .Values.nri.enabled -}}
{{- fail (printf "nodeAgent.healthPort and nri.healthPort are both %v: the two containers share the pod's network namespace; give them different ports" .Values.nodeAgent.healthPort) -}}
{{- end -}}
{{- end -}}
{{- $seen := dict -}}
{{- range .Values.pools -}}
{{- if hasKey $seen (toString .name) -}}
{{- fail (printf "pools: two pools are named %q: give each pool a name of its own (it suffixes its DaemonSet and ConfigMap)" (toString .name)) -}}
{{- end -}}
{{- $_ := set $seen (toString .name) true -}}
{{- end -}}
{{- if and .Values.topology.enabled (not .Values.topology.domains) -}}
{{- fail "topology.enabled is true but topology.domains is empty: list at least one domain, or set topology.enabled=false" -}}
{{- end -}}
{{- end -}}

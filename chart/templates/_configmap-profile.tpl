{{/* One pool's profile ConfigMap. */}}
{{- define "nvml-mock.profileConfigMap" -}}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "nvml-mock.poolName" . }}-config
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "nvml-mock.labels" . | nindent 4 }}
data:
  # The agent watches this file: an edit reaches the node without a rollout.
  config.yaml: |
    {{- include "nvml-mock.profile" . | nindent 4 }}
{{- end -}}

{{/*
The profile the agent watches: the built-in profile file verbatim (or gpu.customConfig),
or, when a value changes it, that profile parsed, changed and written out again.
*/}}
{{- define "nvml-mock.profile" -}}
{{- $g := .Values.gpu -}}
{{- $base := "" -}}
{{- $from := "" -}}
{{- if $g.customConfig -}}
{{- $base = $g.customConfig -}}
{{- $from = "gpu.customConfig" -}}
{{- else -}}
{{- $base = .Files.Get (printf "profiles/%s.yaml" $g.profile) -}}
{{- $from = printf "gpu.profile %s" $g.profile -}}
{{- if not $base -}}
{{- fail (printf "gpu.profile %q is not a built-in profile: use a100, h100, b200, gb200, gb300, l40s or t4, or give the whole profile in gpu.customConfig" $g.profile) -}}
{{- end -}}
{{- end -}}
{{- $tier := toString .Values.infiniband.mockTier -}}
{{- if not (or $g.failureInjection.enabled $g.dynamicMetrics.enabled (eq $tier "off")) -}}
{{- $base -}}
{{- else -}}
{{- $doc := fromYaml $base -}}
{{- if hasKey $doc "Error" -}}
{{- fail (printf "%s is not a YAML mapping: %s" $from (get $doc "Error")) -}}
{{- end -}}
{{- $defaults := default (dict) (get $doc "device_defaults") -}}
{{- if $g.failureInjection.enabled -}}
{{- $fi := $g.failureInjection -}}
{{- $failure := dict "mode" $fi.mode -}}
{{- /* --set gives numbers as strings: the profile wants numbers. */ -}}
{{- if hasKey $fi "probability" -}}{{- $_ := set $failure "probability" (float64 $fi.probability) -}}{{- end -}}
{{- range $key := list "after_calls" "seed" -}}
{{- if hasKey $fi $key -}}{{- $_ := set $failure $key (int64 (get $fi $key)) -}}{{- end -}}
{{- end -}}
{{- if and (hasKey $fi "xid") $fi.xid -}}
{{- if hasKey $fi.xid "code" -}}{{- $_ := set $failure "xid" (dict "code" (int64 $fi.xid.code)) -}}{{- end -}}
{{- end -}}
{{- $_ := set $defaults "failure" $failure -}}
{{- end -}}
{{- if $g.dynamicMetrics.enabled -}}
{{- $baseline := dict
      "temperature" (dict "base_c" 55 "variance_c" 3 "ramp_c" 15 "ramp_period_sec" 120)
      "power" (dict "base_mw" 250000 "variance_mw" 25000)
      "utilization" (dict "pattern" "burst" "gpu_min" 0 "gpu_max" 100 "memory_min" 0 "memory_max" 100 "burst_period_sec" 30) -}}
{{- $fromProfile := deepCopy (default (dict) (get $doc "dynamic_metrics_defaults")) -}}
{{- $user := deepCopy (omit $g.dynamicMetrics "enabled") -}}
{{- $_ := set $defaults "dynamic_metrics" (mergeOverwrite $baseline $fromProfile $user) -}}
{{- end -}}
{{- $_ := set $doc "device_defaults" $defaults -}}
{{- if eq $tier "off" -}}
{{- $ib := default (dict) (get $doc "infiniband") -}}
{{- $_ := set $ib "enabled" false -}}
{{- $_ := set $doc "infiniband" $ib -}}
{{- end -}}
{{- printf "# %s, with the chart's values folded in.\n" $from -}}
{{- toYaml $doc -}}
{{- end -}}
{{- end -}}

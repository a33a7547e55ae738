{{/* One pool's DaemonSet: the root context with the pool's values (nvml-mock.pools). */}}
{{- define "nvml-mock.daemonset" -}}
{{- $hostRoot := include "nvml-mock.hostRoot" . -}}
{{- $cr := .Values.nodeAgent.containerRuntime -}}
{{- $systemd := include "nvml-mock.systemd" . -}}
{{- $gates := include "nvml-mock.featureGates" . -}}
{{- $grace := int .Values.nodeAgent.terminationGracePeriodSeconds -}}
{{- $containerdDir := dir $cr.containerd.config -}}
{{- $configDirApart := not (hasPrefix (printf "%s/" $containerdDir) (printf "%s/" $cr.containerd.configDir)) -}}
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: {{ include "nvml-mock.poolName" . }}
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "nvml-mock.labels" . | nindent 4 }}
spec:
  selector:
    matchLabels:
      {{- include "nvml-mock.poolSelectorLabels" . | nindent 6 }}
  updateStrategy:
    {{- toYaml .Values.updateStrategy | nindent 4 }}
  template:
    metadata:
      labels:
        {{- include "nvml-mock.poolSelectorLabels" . | nindent 8 }}
      annotations:
        # No checksum of the profile or topology ConfigMaps: the agent watches both
        # files, so an edit reaches the node without a rollout.
        {{- if .Values.metrics.scrapeAnnotations }}
        prometheus.io/scrape: "true"
        prometheus.io/port: {{ include "nvml-mock.metricsPort" . | quote }}
        prometheus.io/path: /metrics
        {{- end }}
        {{- with .Values.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      # Nothing here talks to the Kubernetes API.
      automountServiceAccountToken: false
      {{- if $systemd }}
      # systemctl restart containerd must reach the host's systemd.
      hostPID: true
      {{- end }}
      # The agent tears the node down on SIGTERM (revoke, then discard) within this.
      terminationGracePeriodSeconds: {{ $grace }}
      {{- with .Values.priorityClassName }}
      priorityClassName: {{ . }}
      {{- end }}
      {{- with .Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      # Only nodes that opted in (and the pool's own selector): Mokka restarts a node's
      # containerd and binds the mock at /run/nvidia/driver.
      {{- with .Values.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      # Only the taints the values name.
      {{- with .Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: node-agent
          image: {{ include "nvml-mock.image" . | quote }}
          imagePullPolicy: {{ .Values.image.pullPolicy }}
          # The image's entrypoint (/usr/local/bin/mokka); the image's environment names
          # NVIDIA's nvidia-smi and the IB tools to stage.
          args:
            - node-agent
            - --host-root={{ $hostRoot }}
            # containerd reads the CDI specs and runs their hooks on the node, where the
            # paths the agent sees under the host root start at /.
            - --runtime-host-root=/
            - --profile={{ include "nvml-mock.profileDir" . }}/config.yaml
            {{- if .Values.topology.enabled }}
            - --topology={{ include "nvml-mock.topologyDir" . }}/topology.yaml
            {{- end }}
            - --overlay-host-path={{ .Values.nri.overlay.hostPath }}
            - --cdi-spec-dir={{ .Values.nri.cdiSpecDir }}
            - --health-addr=:{{ .Values.nodeAgent.healthPort }}
            - --staging-lock-path={{ include "nvml-mock.stagingLock" . }}
            - --shutdown-timeout={{ max 1 (sub $grace 5) }}
            {{- if .Values.imex.mockChannels.enabled }}
            - --imex-channels={{ .Values.imex.mockChannels.channelCount }}
            {{- end }}
            {{- if .Values.nodeAgent.allowRealDriver }}
            - --allow-real-driver
            {{- end }}
            {{- with .Values.gpu.mig.layout }}
            - --mig-layout={{ . }}
            {{- end }}
            {{- if $cr.enabled }}
            - --container-runtime=containerd
            - --restart-mode={{ $cr.restartMode }}
            - --containerd-config={{ $cr.containerd.config }}
            - --containerd-config-dir={{ $cr.containerd.configDir }}
            {{- else }}
            - --container-runtime=none
            {{- end }}
            {{- if .Values.nri.enabled }}
            - --nri-socket-path={{ .Values.nri.socketPath }}
            {{- else }}
            - --nri-socket-path=
            {{- end }}
            {{- if eq (toString .Values.fabricmanager.enabled) "false" }}
            - --no-fabricmanager
            {{- end }}
            - --fabricmanager-delay={{ .Values.fabricmanager.delaySeconds }}
            {{- if .Values.fabricmanager.fail }}
            - --fabricmanager-fail
            {{- end }}
            {{- if $gates }}
            - --feature-gates={{ $gates }}
            {{- end }}
            - --log-level={{ .Values.logging.level }}
            - --log-format={{ .Values.logging.format }}
          env:
            - name: NODE_NAME
              valueFrom:
                fieldRef:
                  fieldPath: spec.nodeName
            {{- with toString .Values.gpu.count }}
            - name: MOKKA_AGENT_GPU_COUNT
              value: {{ . | quote }}
            {{- end }}
          # A refusal to start (a real NVIDIA driver on the node) is the container's last
          # words: kubectl describe pod shows them as the last state's message.
          terminationMessagePolicy: FallbackToLogsOnError
          ports:
            - name: health
              containerPort: {{ .Values.nodeAgent.healthPort }}
              protocol: TCP
          readinessProbe:
            httpGet:
              path: /readyz
              port: health
            periodSeconds: 5
            timeoutSeconds: 2
            failureThreshold: 3
          livenessProbe:
            httpGet:
              path: /healthz
              port: health
            periodSeconds: 10
            timeoutSeconds: 2
            failureThreshold: 3
          startupProbe:
            # The first staging pass (and a containerd restart) may take a while.
            httpGet:
              path: /healthz
              port: health
            periodSeconds: 2
            timeoutSeconds: 2
            failureThreshold: 60
          securityContext:
            # Device nodes, bind mounts with Bidirectional propagation, containerd's files.
            privileged: true
            runAsUser: 0
            readOnlyRootFilesystem: true
          {{- with .Values.nodeAgent.resources }}
          resources:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          volumeMounts:
            - name: profile
              mountPath: {{ include "nvml-mock.profileDir" . }}
              readOnly: true
            {{- if .Values.topology.enabled }}
            - name: topology
              mountPath: {{ include "nvml-mock.topologyDir" . }}
              readOnly: true
            {{- end }}
            - name: staging-lock
              mountPath: {{ $hostRoot }}{{ include "nvml-mock.stagingLockDir" . }}
            - name: tmp
              mountPath: /tmp
            - name: overlay
              mountPath: {{ $hostRoot }}{{ .Values.nri.overlay.hostPath }}
            - name: cdi
              mountPath: {{ $hostRoot }}{{ .Values.nri.cdiSpecDir }}
            - name: run-nvidia
              mountPath: {{ $hostRoot }}{{ include "nvml-mock.runNvidia" . }}
              # The driver tree's bind mount at /run/nvidia/driver must reach the host.
              mountPropagation: Bidirectional
            - name: agent-lock
              mountPath: {{ $hostRoot }}{{ include "nvml-mock.agentLockDir" . }}
            - name: nfd-features
              mountPath: {{ $hostRoot }}{{ include "nvml-mock.nfdFeaturesDir" . }}
            - name: kmsg
              mountPath: {{ $hostRoot }}{{ include "nvml-mock.kmsg" . }}
            # The kernel's own word on a real NVIDIA driver (the agent refuses to stage over one).
            - name: host-proc-driver
              mountPath: {{ $hostRoot }}/proc/driver
              readOnly: true
            - name: host-sys-module
              mountPath: {{ $hostRoot }}/sys/module
              readOnly: true
            {{- if $cr.enabled }}
            - name: containerd-config
              mountPath: {{ $hostRoot }}{{ $containerdDir }}
            {{- if $configDirApart }}
            - name: containerd-config-dir
              mountPath: {{ $hostRoot }}{{ $cr.containerd.configDir }}
            {{- end }}
            # The host's PATH (is containerd there?) and the toolkit's package paths.
            - name: host-usr-bin
              mountPath: {{ $hostRoot }}/usr/bin
            - name: host-usr-sbin
              mountPath: {{ $hostRoot }}/usr/sbin
              readOnly: true
            - name: host-usr-local
              mountPath: {{ $hostRoot }}/usr/local
            - name: toolkit-config
              mountPath: {{ $hostRoot }}/etc/nvidia-container-runtime
            {{- end }}
            {{- if $systemd }}
            - name: systemd
              mountPath: /run/systemd
            {{- end }}
        {{- if .Values.nri.enabled }}
        - name: nri-plugin
          image: {{ include "nvml-mock.image" . | quote }}
          imagePullPolicy: {{ .Values.image.pullPolicy }}
          command:
            - /usr/local/bin/nri-plugin
          args:
            - --socket-path={{ .Values.nri.socketPath }}
            - --plugin-name={{ .Values.nri.pluginName }}
            - --plugin-index={{ include "nvml-mock.pluginIndex" . }}
            - --overlay-host-path={{ .Values.nri.overlay.hostPath }}
            - --overlay-mount-path={{ .Values.nri.overlay.mountPath }}
            - --device-host-path={{ .Values.nri.overlay.hostPath }}/driver/dev
            - --opt-out-annotation={{ .Values.nri.annotations.optOut }}
            - --device-annotation={{ .Values.nri.annotations.devices }}
            - --device-injection-mode={{ .Values.nri.deviceInjectionMode }}
            - --cdi-spec-host-path={{ .Values.nri.cdiSpecDir }}/nvml-mock-nri.yaml
            - --imex-channel-annotation={{ .Values.nri.annotations.imexChannels }}
            - --imex-channel-host-path={{ .Values.nri.overlay.hostPath }}/driver/dev/nvidia-caps-imex-channels
            - --infiniband-annotation={{ .Values.nri.annotations.infiniband }}
            {{- if eq (toString .Values.infiniband.mockTier) "sysfs" }}
            - --infiniband-tier=sysfs
            {{- end }}
            - --excluded-namespaces={{ include "nvml-mock.excludedNamespaces" . }}
            - --node-name=$(NODE_NAME)
            - --health-addr=:{{ .Values.nri.healthPort }}
            # The pod shares one network namespace: the agent's /stagedz is on localhost.
            - --agent-staged-url=http://127.0.0.1:{{ .Values.nodeAgent.healthPort }}/stagedz
            - --staging-lock-path={{ include "nvml-mock.stagingLock" . }}
            {{- if $gates }}
            - --feature-gates={{ $gates }}
            {{- end }}
            - --log-level={{ .Values.logging.level }}
            - --log-format={{ .Values.logging.format }}
          env:
            - name: NODE_NAME
              valueFrom:
                fieldRef:
                  fieldPath: spec.nodeName
          ports:
            - name: nri-health
              containerPort: {{ .Values.nri.healthPort }}
              protocol: TCP
          {{- with .Values.nri.probes.readiness }}
          readinessProbe:
            httpGet:
              path: /readyz
              port: nri-health
            {{- toYaml . | nindent 12 }}
          {{- end }}
          {{- with .Values.nri.probes.liveness }}
          livenessProbe:
            httpGet:
              path: /healthz
              port: nri-health
            {{- toYaml . | nindent 12 }}
          {{- end }}
          securityContext:
            runAsUser: 0
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities:
              drop: [ALL]
          {{- with .Values.nri.resources }}
          resources:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          volumeMounts:
            - name: nri-socket-dir
              mountPath: {{ dir .Values.nri.socketPath }}
            - name: overlay
              mountPath: {{ .Values.nri.overlay.hostPath }}
              readOnly: true
            - name: cdi
              mountPath: {{ .Values.nri.cdiSpecDir }}
              readOnly: true
            - name: staging-lock
              mountPath: {{ include "nvml-mock.stagingLockDir" . }}
        {{- end }}
      volumes:
        - name: profile
          configMap:
            name: {{ include "nvml-mock.poolName" . }}-config
        {{- if .Values.topology.enabled }}
        - name: topology
          configMap:
            name: {{ include "nvml-mock.fullname" . }}-topology
        {{- end }}
        # The staging lock: agent (exclusive while staging) and plugin (shared while
        # deciding), this pod's two containers only.
        - name: staging-lock
          emptyDir:
            medium: Memory
            sizeLimit: 1Mi
        - name: tmp
          emptyDir:
            sizeLimit: 256Mi
        - name: overlay
          hostPath:
            path: {{ .Values.nri.overlay.hostPath }}
            type: DirectoryOrCreate
        - name: cdi
          hostPath:
            path: {{ .Values.nri.cdiSpecDir }}
            type: DirectoryOrCreate
        - name: run-nvidia
          hostPath:
            path: {{ include "nvml-mock.runNvidia" . }}
            type: DirectoryOrCreate
        # One agent per host root: the lock every agent pod on the node sees.
        - name: agent-lock
          hostPath:
            path: {{ include "nvml-mock.agentLockDir" . }}
            type: DirectoryOrCreate
        - name: nfd-features
          hostPath:
            path: {{ include "nvml-mock.nfdFeaturesDir" . }}
            type: DirectoryOrCreate
        # Injected Xids are announced on the kernel log (the agent only appends to it).
        - name: kmsg
          hostPath:
            path: {{ include "nvml-mock.kmsg" . }}
        - name: host-proc-driver
          hostPath:
            path: /proc/driver
            type: Directory
        - name: host-sys-module
          hostPath:
            path: /sys/module
            type: Directory
        {{- if $cr.enabled }}
        - name: containerd-config
          hostPath:
            path: {{ $containerdDir }}
            type: DirectoryOrCreate
        {{- if $configDirApart }}
        - name: containerd-config-dir
          hostPath:
            path: {{ $cr.containerd.configDir }}
            type: DirectoryOrCreate
        {{- end }}
        - name: host-usr-bin
          hostPath:
            path: /usr/bin
            type: Directory
        - name: host-usr-sbin
          hostPath:
            path: /usr/sbin
            type: Directory
        - name: host-usr-local
          hostPath:
            path: /usr/local
            type: Directory
        - name: toolkit-config
          hostPath:
            path: /etc/nvidia-container-runtime
            type: DirectoryOrCreate
        {{- end }}
        {{- if $systemd }}
        - name: systemd
          hostPath:
            path: /run/systemd
            type: Directory
        {{- end }}
        {{- if .Values.nri.enabled }}
        - name: nri-socket-dir
          hostPath:
            path: {{ dir .Values.nri.socketPath }}
            type: DirectoryOrCreate
        {{- end }}
{{- end -}}

{{/*
hintstream.adapter.container renders `hintstream adapter`, the worker-side
sidecar, as one entry of a pod's containers list, when adapter.enabled. It
binds the worker's hint socket (register the worker with
--hint-endpoint tcp://<pod IP>:<adapter.hintPort>) and acts on the hints
through the engine's HTTP API beside it (adapter.engineURL). A worker
chart that depends on this chart includes it in its pod spec:

  containers:
    - name: sglang
      ...
    {{- include "hintstream.adapter.container" (dict "Values" .Values.hintstream "Chart" (dict "AppVersion" "0.1.0")) | nindent 4 }}

It reads .Values.adapter, .Values.image, .Values.securityContext and
.Chart.AppVersion. See docs/adapter.md.
*/}}
{{- define "hintstream.adapter.container" -}}
{{- $a := .Values.adapter -}}
{{- if $a.enabled }}
{{- if not (has $a.engine (list "sglang" "vllm")) }}
{{- fail (printf "adapter.engine %q: want sglang or vllm" $a.engine) }}
{{- end }}
{{- if not $a.engineURL }}
{{- fail "adapter.engineURL: the engine's HTTP URL in the pod, e.g. http://127.0.0.1:30000" }}
{{- end }}
- name: hintstream-adapter
  image: {{ printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) | quote }}
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  args:
    - adapter
    - --bind
    - {{ printf "tcp://0.0.0.0:%d" (int $a.hintPort) | quote }}
    - --engine
    - {{ $a.engine | quote }}
    - --engine-url
    - {{ $a.engineURL | quote }}
    - --http-addr
    - {{ printf ":%d" (int $a.httpPort) | quote }}
    - --max-inflight
    - {{ int $a.maxInflight | quote }}
    - --log-format
    - {{ .Values.log.format | quote }}
    {{- with $a.model }}
    - --model
    - {{ . | quote }}
    {{- end }}
    {{- if not (kindIs "invalid" $a.enginePriority) }}
    - --engine-priority
    - {{ int64 $a.enginePriority | quote }}
    {{- end }}
    {{- range $a.extraArgs }}
    - {{ . | quote }}
    {{- end }}
  ports:
    - name: hints
      containerPort: {{ int $a.hintPort }}
      protocol: TCP
    - name: adapter-http
      containerPort: {{ int $a.httpPort }}
      protocol: TCP
  livenessProbe:
    httpGet:
      path: /healthz
      port: adapter-http
  readinessProbe:
    httpGet:
      path: /readyz
      port: adapter-http
  resources:
    {{- toYaml $a.resources | nindent 4 }}
  securityContext:
    {{- toYaml .Values.securityContext | nindent 4 }}
{{- end }}
{{- end -}}

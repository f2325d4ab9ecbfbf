{{/* Names: <release>-hintstream unless the release is already named so. */}}
{{- define "hintstream.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "hintstream.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "hintstream.selectorLabels" -}}
app.kubernetes.io/name: {{ include "hintstream.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "hintstream.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "hintstream.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: hintstream
{{- end -}}

{{- define "hintstream.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "hintstream.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Where the NATS Secrets are mounted. */}}
{{- define "hintstream.natsAuthDir" -}}/etc/hintstream/nats-auth{{- end -}}
{{- define "hintstream.natsTLSDir" -}}/etc/hintstream/nats-tls{{- end -}}

{{/* The grace period: longer than --shutdown-timeout, or the chart fails. */}}
{{- define "hintstream.gracePeriod" -}}
{{- $shutdown := int .Values.shutdownTimeoutSeconds -}}
{{- $grace := add $shutdown 20 -}}
{{- if not (kindIs "invalid" .Values.terminationGracePeriodSeconds) -}}
{{- $grace = int .Values.terminationGracePeriodSeconds -}}
{{- end -}}
{{- if le $grace $shutdown -}}
{{- fail (printf "terminationGracePeriodSeconds (%d) must be longer than shutdownTimeoutSeconds (%d), or SIGKILL cuts the hint flush and the snapshot short" $grace $shutdown) -}}
{{- end -}}
{{- $grace -}}
{{- end -}}

{{/* The pin endpoint's port, from pin.endpoint unless networkPolicy.pin.port is set. */}}
{{- define "hintstream.pinPort" -}}
{{- if not (kindIs "invalid" .Values.networkPolicy.pin.port) -}}
{{- int .Values.networkPolicy.pin.port -}}
{{- else -}}
{{- $p := regexFind ":[0-9]+$" .Values.pin.endpoint | trimPrefix ":" -}}
{{- if not $p -}}
{{- fail (printf "networkPolicy: cannot tell the port of pin.endpoint %q: set networkPolicy.pin.port" .Values.pin.endpoint) -}}
{{- end -}}
{{- $p -}}
{{- end -}}
{{- end -}}

{{/*
The container's arguments: `run` and the flags the values set. A value
left empty renders no flag, so the binary's default stays in force.
*/}}
{{- define "hintstream.args" -}}
{{- $v := .Values -}}
{{- if not $v.nats.urls -}}
{{- fail "nats.urls: hintstream in Kubernetes attaches to an existing NATS server; give at least one URL" -}}
{{- end -}}
{{- if not $v.group -}}
{{- fail "group must not be empty" -}}
{{- end -}}
- run
- --nats-url
- {{ join "," $v.nats.urls | quote }}
- --group
- {{ $v.group | quote }}
- --http-addr
- {{ printf ":%d" (int $v.http.port) | quote }}
- --log-format
- {{ $v.log.format | quote }}
- --log-level
- {{ $v.log.level | quote }}
- --shutdown-timeout
- {{ printf "%ds" (int $v.shutdownTimeoutSeconds) | quote }}
{{- $a := $v.nats.auth }}
{{- if eq $a.type "creds" }}
- --nats-creds
- {{ printf "%s/%s" (include "hintstream.natsAuthDir" .) $a.credsKey | quote }}
{{- else if eq $a.type "nkey" }}
- --nats-nkey
- {{ printf "%s/%s" (include "hintstream.natsAuthDir" .) $a.nkeyKey | quote }}
{{- else if not (has $a.type (list "none" "userPassword" "token")) }}
{{- fail (printf "nats.auth.type %q: want none, creds, nkey, userPassword or token" $a.type) }}
{{- end }}
{{- if and (ne $a.type "none") (not $a.existingSecret) }}
{{- fail (printf "nats.auth.type %s reads nats.auth.existingSecret: name the Secret" $a.type) }}
{{- end }}
{{- $t := $v.nats.tls }}
{{- if $t.enabled }}
{{- if and (or $t.caKey $t.clientCert) (not $t.existingSecret) }}
{{- fail "nats.tls: caKey or clientCert read nats.tls.existingSecret: name the Secret" }}
{{- end }}
{{- if not (or $t.caKey $t.clientCert $t.serverName) }}
{{- range $v.nats.urls }}
{{- if not (hasPrefix "tls://" .) }}
{{- fail (printf "nats.tls.enabled with no caKey, clientCert or serverName sets no TLS flag, so %q would connect in plain text: use tls:// URLs or set one of them" .) }}
{{- end }}
{{- end }}
{{- end }}
{{- if $t.caKey }}
- --nats-tls-ca
- {{ printf "%s/%s" (include "hintstream.natsTLSDir" .) $t.caKey | quote }}
{{- end }}
{{- if $t.clientCert }}
- --nats-tls-cert
- {{ printf "%s/%s" (include "hintstream.natsTLSDir" .) $t.certKey | quote }}
- --nats-tls-key
- {{ printf "%s/%s" (include "hintstream.natsTLSDir" .) $t.keyKey | quote }}
{{- end }}
{{- if $t.serverName }}
- --nats-tls-server-name
- {{ $t.serverName | quote }}
{{- end }}
{{- end }}
{{- range $key, $flag := dict "requests" "requests" "responses" "responses" "kvEvents" "kv-events" "load" "load" }}
{{- $s := index $v.streams $key }}
{{- if $s.name }}
- {{ printf "--%s-stream" $flag }}
- {{ $s.name | quote }}
{{- end }}
{{- if $s.subjects }}
- {{ printf "--%s-subjects" $flag }}
- {{ join "," $s.subjects | quote }}
{{- end }}
{{- end }}
{{- if $v.streams.deadLetter.name }}
- --dead-letter-stream
- {{ $v.streams.deadLetter.name | quote }}
{{- end }}
{{- if $v.streams.deadLetter.prefix }}
- --dead-letter-prefix
- {{ $v.streams.deadLetter.prefix | quote }}
{{- end }}
{{- if $v.streams.update }}
- --update-streams
{{- end }}
{{- if not (kindIs "invalid" $v.streams.replicas) }}
- --stream-replicas
- {{ int $v.streams.replicas | quote }}
{{- end }}
{{- if $v.dynamo.namespace }}
- --dynamo-namespace
- {{ $v.dynamo.namespace | quote }}
{{- end }}
{{- if $v.dynamo.component }}
- --dynamo-component
- {{ $v.dynamo.component | quote }}
{{- end }}
{{- if $v.pin.endpoint }}
- --pin-endpoint
- {{ $v.pin.endpoint | quote }}
{{- end }}
{{- if $v.pin.retainOnWorker }}
- --retain-on-worker
{{- end }}
{{- range $v.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end -}}

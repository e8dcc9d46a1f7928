{{/* The chart's name, or nameOverride. */}}
{{- define "inferwatch.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The objects' name: the release, and the chart's name unless the release holds it. */}}
{{- define "inferwatch.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "inferwatch.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels every object carries. */}}
{{- define "inferwatch.labels" -}}
helm.sh/chart: {{ include "inferwatch.chart" . }}
{{ include "inferwatch.selectorLabels" . }}
app.kubernetes.io/version: {{ include "inferwatch.imageTag" . | trunc 63 | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: inferwatch
{{- end }}

{{/* Labels the Service, the monitors and the PDB select the pods by. */}}
{{- define "inferwatch.selectorLabels" -}}
app.kubernetes.io/name: {{ include "inferwatch.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "inferwatch.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "inferwatch.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "inferwatch.imageTag" -}}
{{- default .Chart.AppVersion .Values.image.tag }}
{{- end }}

{{- define "inferwatch.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (include "inferwatch.imageTag" .) }}
{{- end }}
{{- end }}

{{/* Where the secrets the configuration reads are mounted. */}}
{{- define "inferwatch.secretsDir" -}}/etc/inferwatch/secrets{{- end }}

{{/*
The configuration file: .Values.config with the nats section and the
credential files the chart's values set. Paths are absolute, so they do
not depend on where the file lies.
*/}}
{{- define "inferwatch.config" -}}
{{- $cfg := deepCopy .Values.config }}
{{- $dir := include "inferwatch.secretsDir" . }}
{{- $nats := get $cfg "nats" | default dict }}
{{- if .Values.nats.url }}
{{- $_ := set $nats "url" .Values.nats.url }}
{{- $_ := set $nats "stream_replicas" (int .Values.nats.streamReplicas) }}
{{- $_ := set $nats "lease_ttl" .Values.nats.leaseTTL }}
{{- with .Values.nats.heartbeat }}
{{- $_ := set $nats "heartbeat" . }}
{{- end }}
{{- $_ := set $nats "outbox_dir" "/var/lib/inferwatch/outbox" }}
{{- if .Values.nats.credsSecret.name }}
{{- $_ := set $nats "creds_file" (printf "%s/nats-creds/%s" $dir .Values.nats.credsSecret.key) }}
{{- end }}
{{- if .Values.nats.tlsSecret.name }}
{{- $tls := dict "ca_file" (printf "%s/nats-tls/ca.crt" $dir) }}
{{- if .Values.nats.tlsSecret.clientCert }}
{{- $_ := set $tls "cert_file" (printf "%s/nats-tls/tls.crt" $dir) }}
{{- $_ := set $tls "key_file" (printf "%s/nats-tls/tls.key" $dir) }}
{{- end }}
{{- $_ := set $nats "tls" $tls }}
{{- end }}
{{- else }}
{{- $_ := set $nats "url" "" }}
{{- $_ := set $nats "embedded" (dict "listen" .Values.nats.embedded.listen "store_dir" "/var/lib/inferwatch/nats") }}
{{- end }}
{{- $_ := set $cfg "nats" $nats }}
{{- $source := get $cfg "source" | default dict }}
{{- with .Values.store.bearerTokenSecret.name }}
{{- $_ := set $source "authorization" (dict "type" "Bearer" "credentials_file" (printf "%s/store-token/%s" $dir $.Values.store.bearerTokenSecret.key)) }}
{{- end }}
{{- with .Values.store.basicAuth.passwordSecret.name }}
{{- $_ := set $source "basic_auth" (dict "username" $.Values.store.basicAuth.username "password_file" (printf "%s/store-password/%s" $dir $.Values.store.basicAuth.passwordSecret.key)) }}
{{- end }}
{{- with .Values.store.caSecret.name }}
{{- $tls := get $source "tls_config" | default dict }}
{{- $_ := set $tls "ca_file" (printf "%s/store-ca/%s" $dir $.Values.store.caSecret.key) }}
{{- $_ := set $source "tls_config" $tls }}
{{- end }}
{{- $_ := set $cfg "source" $source }}
{{- toYaml $cfg }}
{{- end }}

{{/* The existing Secrets the pod mounts: name, the directory under secretsDir, and the Secret. */}}
{{- define "inferwatch.secretMounts" -}}
{{- $m := list }}
{{- if .Values.nats.url }}
{{- with .Values.nats.credsSecret.name }}{{ $m = append $m (dict "dir" "nats-creds" "secret" .) }}{{ end }}
{{- with .Values.nats.tlsSecret.name }}{{ $m = append $m (dict "dir" "nats-tls" "secret" .) }}{{ end }}
{{- end }}
{{- with .Values.store.bearerTokenSecret.name }}{{ $m = append $m (dict "dir" "store-token" "secret" .) }}{{ end }}
{{- with .Values.store.basicAuth.passwordSecret.name }}{{ $m = append $m (dict "dir" "store-password" "secret" .) }}{{ end }}
{{- with .Values.store.caSecret.name }}{{ $m = append $m (dict "dir" "store-ca" "secret" .) }}{{ end }}
{{- toJson $m }}
{{- end }}

{{/* Refuse combinations that cannot work, saying why. */}}
{{- define "inferwatch.validate" -}}
{{- if and (gt (int .Values.replicaCount) 1) (not .Values.nats.url) }}
{{- fail (printf "replicaCount is %d but nats.url is empty: the embedded NATS server keeps the stream, the alert states and the outbox inside one pod, and replicas share their groups through an external NATS. Set nats.url to an external NATS with JetStream, or replicaCount to 1." (int .Values.replicaCount)) }}
{{- end }}
{{- if and (gt (int .Values.replicaCount) 1) .Values.persistence.enabled }}
{{- fail (printf "replicaCount is %d with persistence.enabled: the replicas of a Deployment would share one claim, and each needs an outbox of its own. Leave persistence off (an emptyDir per pod), or set replicaCount to 1." (int .Values.replicaCount)) }}
{{- end }}
{{- if and .Values.serviceMonitor.enabled .Values.podMonitor.enabled }}
{{- fail "serviceMonitor.enabled and podMonitor.enabled are both true: Prometheus would scrape every pod twice. Enable one of them." }}
{{- end }}
{{- if and .Values.store.bearerTokenSecret.name .Values.store.basicAuth.passwordSecret.name }}
{{- fail "store.bearerTokenSecret and store.basicAuth are both set: the store takes one way to authenticate. Set one of them." }}
{{- end }}
{{- if and .Values.store.basicAuth.passwordSecret.name (not .Values.store.basicAuth.username) }}
{{- fail "store.basicAuth.passwordSecret is set without store.basicAuth.username." }}
{{- end }}
{{- end }}

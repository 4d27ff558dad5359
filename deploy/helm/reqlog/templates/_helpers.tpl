{{/* Names, after the usual chart conventions. */}}
{{- define "reqlog.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "reqlog.fullname" -}}
{{- if contains .Chart.Name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "reqlog.selectorLabels" -}}
app.kubernetes.io/name: {{ include "reqlog.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "reqlog.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "reqlog.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "reqlog.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- .Values.serviceAccount.name | default (include "reqlog.fullname" .) }}
{{- else }}
{{- .Values.serviceAccount.name | default "default" }}
{{- end }}
{{- end }}

{{- define "reqlog.secretName" -}}
{{- .Values.secret.existingSecret | default (include "reqlog.fullname" .) }}
{{- end }}

{{/* "true" when the store lives in the pod (one pod only), "" otherwise. */}}
{{- define "reqlog.embedded" -}}
{{- if has .Values.store (list "sqlite" "memory") }}true{{ end }}
{{- end }}

{{/*
The secret files the pod reads, as "key=REQLOG_..._FILE" lines: the keys the
Secret holds, each set for the variable reqlogd reads it through.
*/}}
{{- define "reqlog.secretKeys" -}}
{{- $keys := list }}
{{- if .Values.secret.existingSecret }}
{{- $keys = .Values.secret.existingSecretKeys }}
{{- else }}
{{- if .Values.secret.apiKeys }}{{ $keys = append $keys "api-keys" }}{{ end }}
{{- $keys = append $keys "portal-secret" }}
{{- if .Values.secret.mongodbURI }}{{ $keys = append $keys "mongodb-uri" }}{{ end }}
{{- if .Values.secret.elasticsearchPassword }}{{ $keys = append $keys "elasticsearch-password" }}{{ end }}
{{- if .Values.secret.elasticsearchAPIKey }}{{ $keys = append $keys "elasticsearch-api-key" }}{{ end }}
{{- end }}
{{- $vars := dict "api-keys" "REQLOG_API_KEYS_FILE" "portal-secret" "REQLOG_PORTAL_SECRET_FILE" "mongodb-uri" "REQLOG_MONGODB_URI_FILE" "elasticsearch-password" "REQLOG_ELASTICSEARCH_PASSWORD_FILE" "elasticsearch-api-key" "REQLOG_ELASTICSEARCH_API_KEY_FILE" }}
{{- range $keys }}
{{- if not (hasKey $vars .) }}
{{- fail (printf "secret.existingSecretKeys: unknown key %q (known: api-keys, portal-secret, mongodb-uri, elasticsearch-password, elasticsearch-api-key)" .) }}
{{- end }}
{{ . }}={{ get $vars . }}
{{- end }}
{{- end }}

{{/* Refuses values that cannot work, before anything is applied. */}}
{{- define "reqlog.validate" -}}
{{- $stores := list "sqlite" "memory" "mongodb" "elasticsearch" }}
{{- if not (has .Values.store $stores) }}
{{- fail (printf "store %q: must be one of sqlite, memory, mongodb, elasticsearch" .Values.store) }}
{{- end }}
{{- $replicas := int .Values.replicas }}
{{- if lt $replicas 0 }}
{{- fail (printf "replicas %d: must not be negative" $replicas) }}
{{- end }}
{{- if and (include "reqlog.embedded" .) (gt $replicas 1) }}
{{- fail (printf "replicas %d: store %s keeps its data inside its one pod, so it runs exactly one replica; use store mongodb or elasticsearch for more" $replicas .Values.store) }}
{{- end }}
{{- $keys := include "reqlog.secretKeys" . }}
{{- if and (not (include "reqlog.embedded" .)) (not (contains "api-keys=" $keys)) }}
{{- fail (printf "secret.apiKeys (or api-keys in secret.existingSecret) is required with store %s: each pod would otherwise generate a development key of its own" .Values.store) }}
{{- end }}
{{- if and (eq .Values.store "mongodb") (not (contains "mongodb-uri=" $keys)) }}
{{- fail "secret.mongodbURI (or mongodb-uri in secret.existingSecret) is required with store mongodb" }}
{{- end }}
{{- if and (eq .Values.store "elasticsearch") (not .Values.elasticsearch.url) }}
{{- fail "elasticsearch.url is required with store elasticsearch" }}
{{- end }}
{{- if and .Values.secret.portalSecret (lt (len .Values.secret.portalSecret) 32) }}
{{- fail "secret.portalSecret: must be at least 32 bytes" }}
{{- end }}
{{- range $name, $_ := .Values.env }}
{{- if not (hasPrefix "REQLOG_" $name) }}
{{- fail (printf "env.%s: reqlogd reads REQLOG_* variables only" $name) }}
{{- end }}
{{- end }}
{{- end }}

{{/* The pod, the same for the StatefulSet and the Deployment. */}}
{{- define "reqlog.podTemplate" -}}
metadata:
  labels:
    {{- include "reqlog.selectorLabels" . | nindent 4 }}
    {{- with .Values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    checksum/secret: {{ include (print .Template.BasePath "/secret.yaml") . | sha256sum }}
    {{- with .Values.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  serviceAccountName: {{ include "reqlog.serviceAccountName" . }}
  automountServiceAccountToken: false
  {{- with .Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    {{- toYaml .Values.podSecurityContext | nindent 4 }}
  terminationGracePeriodSeconds: {{ .Values.terminationGracePeriodSeconds }}
  containers:
    - name: reqlogd
      image: "{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}"
      imagePullPolicy: {{ .Values.image.pullPolicy }}
      securityContext:
        {{- toYaml .Values.securityContext | nindent 8 }}
      ports:
        - name: http
          containerPort: 8080
          protocol: TCP
      env:
        - name: REQLOG_ADDR
          value: ":8080"
        - name: REQLOG_STORE
          value: {{ .Values.store | quote }}
        - name: REQLOG_SQLITE_DIR
          value: /var/lib/reqlog
        {{- with .Values.publicURL }}
        - name: REQLOG_PUBLIC_URL
          value: {{ . | quote }}
        {{- end }}
        {{- if eq .Values.store "mongodb" }}
        {{- with .Values.mongodb.database }}
        - name: REQLOG_MONGODB_DATABASE
          value: {{ . | quote }}
        {{- end }}
        {{- end }}
        {{- if eq .Values.store "elasticsearch" }}
        - name: REQLOG_ELASTICSEARCH_URL
          value: {{ .Values.elasticsearch.url | quote }}
        {{- with .Values.elasticsearch.username }}
        - name: REQLOG_ELASTICSEARCH_USERNAME
          value: {{ . | quote }}
        {{- end }}
        {{- with .Values.elasticsearch.indexPrefix }}
        - name: REQLOG_ELASTICSEARCH_INDEX_PREFIX
          value: {{ . | quote }}
        {{- end }}
        {{- end }}
        {{- range $line := splitList "\n" (include "reqlog.secretKeys" .) }}
        {{- if $line }}
        {{- $pair := splitList "=" $line }}
        - name: {{ index $pair 1 }}
          value: /run/secrets/reqlog/{{ index $pair 0 }}
        {{- end }}
        {{- end }}
        {{- range $name, $value := .Values.env }}
        - name: {{ $name }}
          value: {{ $value | toString | quote }}
        {{- end }}
      startupProbe:
        httpGet:
          path: /healthz
          port: http
        periodSeconds: {{ .Values.probes.startup.periodSeconds }}
        failureThreshold: {{ .Values.probes.startup.failureThreshold }}
      livenessProbe:
        httpGet:
          path: /healthz
          port: http
        periodSeconds: {{ .Values.probes.liveness.periodSeconds }}
        timeoutSeconds: {{ .Values.probes.liveness.timeoutSeconds }}
        failureThreshold: {{ .Values.probes.liveness.failureThreshold }}
      readinessProbe:
        httpGet:
          path: /readyz
          port: http
        periodSeconds: {{ .Values.probes.readiness.periodSeconds }}
        timeoutSeconds: {{ .Values.probes.readiness.timeoutSeconds }}
        failureThreshold: {{ .Values.probes.readiness.failureThreshold }}
      resources:
        {{- toYaml .Values.resources | nindent 8 }}
      volumeMounts:
        - name: data
          mountPath: /var/lib/reqlog
        - name: tmp
          mountPath: /tmp
        - name: secrets
          mountPath: /run/secrets/reqlog
          readOnly: true
  volumes:
    {{- if ne .Values.store "sqlite" }}
    - name: data
      emptyDir: {}
    {{- end }}
    - name: tmp
      emptyDir: {}
    - name: secrets
      secret:
        secretName: {{ include "reqlog.secretName" . }}
        defaultMode: 0440
  {{- with .Values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}

{{/*
Names and labels shared by every template.
*/}}

{{/* The chart's name, or nameOverride. */}}
{{- define "waitroom.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The objects' name: fullnameOverride, else the release name, followed by the
chart's name unless the release name already holds it. At most 63
characters (a DNS label).
*/}}
{{- define "waitroom.fullname" -}}
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

{{/* name-version, for the helm.sh/chart label. */}}
{{- define "waitroom.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The labels every object carries. */}}
{{- define "waitroom.labels" -}}
helm.sh/chart: {{ include "waitroom.chart" . }}
{{ include "waitroom.selectorLabels" . }}
app.kubernetes.io/version: {{ include "waitroom.imageTag" . | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: waitroom
{{- end }}

{{/*
The labels that pick the pods (Deployment selector, Service, PDB, topology
spread). Never change them on an installed release: a Deployment's
selector is immutable.
*/}}
{{- define "waitroom.selectorLabels" -}}
app.kubernetes.io/name: {{ include "waitroom.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The image tag: image.tag, else the chart's appVersion. */}}
{{- define "waitroom.imageTag" -}}
{{- .Values.image.tag | default .Chart.AppVersion | toString }}
{{- end }}

{{/* The service account the pods run as. */}}
{{- define "waitroom.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "waitroom.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The Secret that holds the secrets (WAITROOM_SECRET, the Redis URL, ...).
The chart never creates it: installing without existingSecret fails here,
before anything is sent to the cluster.
*/}}
{{- define "waitroom.secretName" -}}
{{- required "existingSecret is required: create a Secret holding WAITROOM_SECRET and the Redis URL first (kubectl create secret generic waitroom --from-literal=secret=... --from-literal=redis-url=...; see the chart's README) and pass its name with --set existingSecret=waitroom. The chart never takes secret values." .Values.existingSecret }}
{{- end }}

{{/* The Secret that holds the signing key file: signingKey.existingSecret, else existingSecret. */}}
{{- define "waitroom.signingKeySecretName" -}}
{{- default (include "waitroom.secretName" .) .Values.signingKey.existingSecret }}
{{- end }}

{{/* The in-cluster base URL of the Service, e.g. http://waitroom.shop.svc.cluster.local:80 */}}
{{- define "waitroom.serviceURL" -}}
{{- printf "http://%s.%s.svc.%s:%d" (include "waitroom.fullname" .) .Release.Namespace .Values.clusterDomain (int .Values.service.port) }}
{{- end }}

{{/*
Fails on settings in config that belong in the Secret or that the chart
sets itself. A name is secret-like when it holds SECRET, TOKEN, PASSWORD
or is WAITROOM_REDIS_URL (its password is in the URL).
*/}}
{{- define "waitroom.checkConfig" -}}
{{- range $name, $value := .Values.config }}
{{- if regexMatch "(?i)(SECRET|TOKEN|PASSWORD|PASSWD|REDIS_URL|PRIVATE_KEY)" $name }}
{{- fail (printf "config.%s looks like a secret: put it in the Secret named by existingSecret and map it with secretKeys.%s (the chart never renders secret values)" $name $name) }}
{{- end }}
{{- if has $name (list "WAITROOM_ADDR" "WAITROOM_METRICS_ADDR" "WAITROOM_SIGNING_KEY_FILE") }}
{{- fail (printf "config.%s is set by the chart (containerPorts, metrics.enabled, signingKey): leave it out of config" $name) }}
{{- end }}
{{- end }}
{{- end }}

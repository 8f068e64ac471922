{{/* Chart name. */}}
{{- define "gputally.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: the prefix of every object name. */}}
{{- define "gputally.fullname" -}}
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

{{/* Selector labels: stable across upgrades, one set per component. Call with (dict "ctx" $ "component" "exporter"). */}}
{{- define "gputally.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gputally.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* Labels on every object. Call with (dict "ctx" $ "component" "exporter"). */}}
{{- define "gputally.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .ctx.Chart.Name .ctx.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "gputally.selectorLabels" . }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/part-of: gputally
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
{{- with .ctx.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "gputally.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "gputally.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "gputally.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/*
gputally.monitoringEnabled renders "true" when a Prometheus Operator object should be
rendered. Call with (dict "ctx" $ "setting" .Values.serviceMonitor.enabled "api" "monitoring.coreos.com/v1/ServiceMonitor").
*/}}
{{- define "gputally.monitoringEnabled" -}}
{{- $setting := toString .setting }}
{{- if not (has $setting (list "auto" "true" "false")) }}
{{- fail (printf "enabled must be auto, true or false, not %q" $setting) }}
{{- end }}
{{- if or (eq $setting "true") (and (eq $setting "auto") (.ctx.Capabilities.APIVersions.Has .api)) }}true{{ end }}
{{- end }}

{{/*
gputally.durationMs converts a Prometheus duration such as 1m30s to milliseconds, or
renders nothing when the text is not a duration (the API server then judges it).
*/}}
{{- define "gputally.durationMs" -}}
{{- $d := toString . }}
{{- if regexMatch "^([0-9]+(ms|s|m|h|d|w|y))+$" $d }}
{{- $units := dict "ms" 1 "s" 1000 "m" 60000 "h" 3600000 "d" 86400000 "w" 604800000 "y" 31536000000 }}
{{- $total := 0 }}
{{- range regexFindAll "[0-9]+(ms|s|m|h|d|w|y)" $d -1 }}
{{- $unit := regexFind "(ms|s|m|h|d|w|y)$" . }}
{{- $total = add $total (mul (trimSuffix $unit . | atoi) (get $units $unit)) }}
{{- end }}
{{- $total }}
{{- end }}
{{- end }}

{{/* The exporter serves HTTPS. */}}
{{- define "gputally.tls" -}}
{{- if and .Values.webConfig.enabled (or .Values.webConfig.tls (hasKey .Values.webConfig.config "tls_server_config")) }}true{{ end }}
{{- end }}

{{/* The exporter requires basic auth. */}}
{{- define "gputally.basicAuth" -}}
{{- if and .Values.webConfig.enabled (or .Values.webConfig.basicAuth (hasKey .Values.webConfig.config "basic_auth_users")) }}true{{ end }}
{{- end }}

{{- define "gputally.priceBookConfigMap" -}}
{{- default (printf "%s-price-book" (include "gputally.fullname" .)) .Values.costs.existingConfigMap }}
{{- end }}

{{- define "gputally.webConfigSecret" -}}
{{- default (printf "%s-web-config" (include "gputally.fullname" .)) .Values.webConfig.existingSecret }}
{{- end }}

{{- define "gputally.webhookSecret" -}}
{{- default (printf "%s-report-webhook" (include "gputally.fullname" .)) .Values.report.webhook.existingSecret }}
{{- end }}

{{- define "gputally.reportHTTPConfigSecret" -}}
{{- default (printf "%s-report-http-config" (include "gputally.fullname" .)) .Values.report.httpConfig.existingSecret }}
{{- end }}

{{- define "gputally.reportClaim" -}}
{{- default (printf "%s-reports" (include "gputally.fullname" .)) .Values.report.persistence.existingClaim }}
{{- end }}

{{/*
exporter.dcgmExporterNames, checked: the string "4.10" or "4.8" (4.10 unquoted
in a values file is the number 4.1).
*/}}
{{- define "gputally.dcgmExporterNames" -}}
{{- $names := .Values.exporter.dcgmExporterNames -}}
{{- if not (and (kindIs "string" $names) (has $names (list "4.10" "4.8"))) -}}
{{- fail (printf "exporter.dcgmExporterNames must be the string \"4.10\" or \"4.8\" (quote it in a values file), not %v" $names) -}}
{{- end -}}
{{- $names -}}
{{- end }}

{{/*
The directory of the generated files (rules, dashboards) for the exporter's
DCGM_* names: files for 4.10's, files/4.8 for 4.8's, as `gputally generate
--collector.dcgm-exporter-names` writes them.
*/}}
{{- define "gputally.generatedDir" -}}
{{- if eq (include "gputally.dcgmExporterNames" .) "4.8" -}}
files/4.8
{{- else -}}
files
{{- end -}}
{{- end }}

{{/*
The text of a generated file of the chart (rules, a dashboard), for the
exporter's spelling of the node label: with exporter.legacyHostnameLabel every
whole word `hostname` becomes `Hostname`, as `gputally generate
--collector.legacy-hostname-label` writes it. Call with (dict "ctx" $ "path" PATH).
*/}}
{{- define "gputally.generatedFile" -}}
{{- $text := .ctx.Files.Get .path -}}
{{- if .ctx.Values.exporter.legacyHostnameLabel -}}
{{- $text = regexReplaceAll "\\bhostname\\b" $text "Hostname" -}}
{{- end -}}
{{- $text -}}
{{- end }}

{{/*
The GOMEMLIMIT env entry of a gputally container: the Go runtime's soft memory limit is
the container's memory limit, in bytes, so that near it the garbage collector works
harder rather than the kernel killing the process (docs/reliability.md). The report
also sizes the answers it reads at once from it (--query.max-answer-bytes).
*/}}
{{- define "gputally.goMemLimitEnv" -}}
- name: GOMEMLIMIT
  valueFrom:
    resourceFieldRef:
      resource: limits.memory
{{- end }}

{{/*
gputally.reportContainer renders one `gputally report` container.
Call with (dict "ctx" $ "format" "md" "url" URL "webhook" true "httpConfig" true "keep" 12):
with keep > 0 it follows up the newest earlier report on the volume, and the JSON run
keeps that many reports there. The image has no shell: the report binary itself
finds the last report (--baseline=DIR) and deletes the older ones (--baseline.keep).
*/}}
{{- define "gputally.reportContainer" -}}
{{- $r := .ctx.Values.report -}}
- name: report-{{ .format }}
  image: {{ include "gputally.image" .ctx }}
  imagePullPolicy: {{ .ctx.Values.image.pullPolicy }}
  args:
    - report
    - --prometheus.url={{ .url }}
    {{- if .httpConfig }}
    - --prometheus.http-config.file=/etc/gputally/http-config/{{ $r.httpConfig.secretKey }}
    {{- end }}
    - --range={{ $r.range }}
    {{- $source := $r.source | default "ledger" }}
    {{- if not (has $source (list "ledger" "dcgm-exporter")) }}
    {{- fail (printf "report.source %q: want ledger or dcgm-exporter" $source) }}
    {{- end }}
    - --source={{ $source }}
    {{- if eq $source "dcgm-exporter" }}
    {{- with $r.grid }}
    - --grid={{ . }}
    {{- end }}
    - --cost.price-book=/etc/gputally/price-book/price-book.yaml
    {{- end }}
    - --report.cluster-label={{ $r.clusterLabel }}
    - --format={{ .format }}
    - --out=/reports/gputally-report-$(JOB_NAME).{{ .format }}
    {{- if gt .keep 0 }}
    - --baseline=/reports
    {{- if eq .format "json" }}
    - --baseline.keep={{ .keep }}
    {{- end }}
    {{- end }}
    {{- if .webhook }}
    - --webhook.url-file=/etc/gputally/webhook/url
    {{- end }}
    {{- range $r.extraArgs }}
    - {{ . | quote }}
    {{- end }}
  env:
    - name: JOB_NAME
      valueFrom:
        fieldRef:
          fieldPath: metadata.labels['batch.kubernetes.io/job-name']
    {{- include "gputally.goMemLimitEnv" .ctx | nindent 4 }}
  resources:
    {{- toYaml $r.resources | nindent 4 }}
  securityContext:
    {{- toYaml $r.securityContext | nindent 4 }}
  volumeMounts:
    - name: reports
      mountPath: /reports
    {{- if .webhook }}
    - name: webhook
      mountPath: /etc/gputally/webhook
      readOnly: true
    {{- end }}
    {{- if .httpConfig }}
    - name: http-config
      mountPath: /etc/gputally/http-config
      readOnly: true
    {{- end }}
    {{- if eq ($r.source | default "ledger") "dcgm-exporter" }}
    - name: price-book
      mountPath: /etc/gputally/price-book
      readOnly: true
    {{- end }}
{{- end }}

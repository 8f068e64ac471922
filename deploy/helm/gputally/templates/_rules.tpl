{{/*
The rules `gputally generate rules` writes from its --team-map and --team-label
(alerts/teams.go), from prometheusRule.teams and .teamLabel, as a YAML list: the
team map as constants, one per namespace in name order, then the pods' team
labels. Call with .Values.prometheusRule.
*/}}
{{- define "gputally.teamRules" -}}
{{- $team := dict }}
{{- range $name, $namespaces := .teams }}
{{- if not $name }}{{ fail "prometheusRule.teams: a team has an empty name" }}{{ end }}
{{- range $namespaces }}
{{- if not . }}{{ fail (printf "prometheusRule.teams.%s lists an empty namespace" $name) }}{{ end }}
{{- if hasKey $team . }}{{ fail (printf "prometheusRule.teams: namespace %q is listed under both %q and %q" . (get $team .) $name) }}{{ end }}
{{- $_ := set $team . $name }}
{{- end }}
{{- end }}
{{- $rules := list }}
{{- range $ns := keys $team | sortAlpha }}
{{- $rules = append $rules (dict "record" "namespace:gputally_team:info" "expr" "vector(1)" "labels" (dict "namespace" $ns "team" (get $team $ns))) }}
{{- end }}
{{- with .teamLabel }}
{{- $l := printf "label_%s" (regexReplaceAll "[^a-zA-Z0-9_]" . "_") }}
{{- $rules = append $rules (dict "record" "namespace_pod:gputally_team_label:info" "expr" (printf "max by (namespace, pod, team) (\n  label_replace(kube_pod_labels{%s!=\"\"}, \"team\", \"$1\", \"%s\", \"(.+)\")\n  and on (namespace, pod)\n  (gputally_gpu_allocation or namespace_pod_resource:gputally_waiting_gpus:sum)\n)" $l $l)) }}
{{- end }}
{{- toYaml $rules }}
{{- end }}

{{/*
The constants `gputally generate rules --budgets.file` writes (alerts/budget_rules.go),
from prometheusRule.budgets, as a YAML list: per team, then per namespace, in name
order, the monthly budget then the idle limit. Call with .Values.prometheusRule.budgets.
*/}}
{{- define "gputally.budgetRules" -}}
{{- $rules := list }}
{{- range $section := list (list "teams" "team") (list "namespaces" "namespace") }}
{{- $entries := get $ (index $section 0) | default dict }}
{{- range $name := keys $entries | sortAlpha }}
{{- $b := get $entries $name }}
{{- $where := printf "prometheusRule.budgets.%s.%s" (index $section 0) $name }}
{{- if not (kindIs "map" $b) }}{{ fail (printf "%s: want {monthly_eur: …, idle_eur_per_day: …}" $where) }}{{ end }}
{{- range $k, $_ := $b }}
{{- if not (has $k (list "monthly_eur" "idle_eur_per_day")) }}{{ fail (printf "%s: unknown key %s (monthly_eur, idle_eur_per_day)" $where $k) }}{{ end }}
{{- end }}
{{- $monthly := get $b "monthly_eur" | default 0 | float64 }}
{{- $idle := get $b "idle_eur_per_day" | default 0 | float64 }}
{{- if or (lt $monthly 0.0) (lt $idle 0.0) (and (eq $monthly 0.0) (eq $idle 0.0)) }}{{ fail (printf "%s: want amounts ≥ 0, at least one above 0" $where) }}{{ end }}
{{- if gt $monthly 0.0 }}
{{- $rules = append $rules (dict "record" "team_or_namespace:gputally_budget_eur:monthly" "expr" (printf "vector(%v)" $monthly) "labels" (dict (index $section 1) $name)) }}
{{- end }}
{{- if gt $idle 0.0 }}
{{- $rules = append $rules (dict "record" "team_or_namespace:gputally_idle_limit_eur:daily" "expr" (printf "vector(%v)" $idle) "labels" (dict (index $section 1) $name)) }}
{{- end }}
{{- end }}
{{- end }}
{{- toYaml $rules }}
{{- end }}

{{/*
A route of files/alertmanager.yaml (Alertmanager's configuration format) in
AlertmanagerConfig form, with its child routes; a route that is already in that
form (alertmanagerConfig.route) comes out as it is.
*/}}
{{- define "gputally.amRoute" -}}
{{- $names := dict "receiver" "receiver" "group_by" "groupBy" "group_wait" "groupWait" "group_interval" "groupInterval" "repeat_interval" "repeatInterval" "continue" "continue" "matchers" "matchers" "routes" "routes" }}
{{- $r := dict }}
{{- range $k, $v := . }}
{{- $crd := get $names $k }}
{{- if has $k (list "groupBy" "groupWait" "groupInterval" "repeatInterval" "activeTimeIntervals" "muteTimeIntervals") }}
{{- $crd = $k }}
{{- end }}
{{- if not $crd }}{{ fail (printf "route key %s has no AlertmanagerConfig form in this chart" $k) }}{{ end }}
{{- if eq $k "matchers" }}
{{- $v = include "gputally.amMatchers" $v | fromYamlArray }}
{{- else if eq $k "routes" }}
{{- $routes := list }}
{{- range $v }}
{{- $routes = append $routes (include "gputally.amRoute" . | fromYaml) }}
{{- end }}
{{- $v = $routes }}
{{- end }}
{{- $_ := set $r $crd $v }}
{{- end }}
{{- toYaml $r }}
{{- end }}

{{/*
Alertmanager matchers — strings such as team="web" or alertname=~"A|B", or
AlertmanagerConfig matchers already — as a YAML list of AlertmanagerConfig
matchers {name, matchType, value}.
*/}}
{{- define "gputally.amMatchers" -}}
{{- $re := "^\\s*([a-zA-Z_][a-zA-Z0-9_]*)\\s*(=~|!~|!=|=)\\s*\"(.*)\"\\s*$" }}
{{- $out := list }}
{{- range . }}
{{- if kindIs "map" . }}
{{- $out = append $out . }}
{{- else if regexMatch $re . }}
{{- $out = append $out (dict "name" (regexReplaceAll $re . "${1}") "matchType" (regexReplaceAll $re . "${2}") "value" (regexReplaceAll $re . "${3}")) }}
{{- else }}
{{- fail (printf "matcher %q: want name, one of = != =~ !~, and a double-quoted value" .) }}
{{- end }}
{{- end }}
{{- toYaml $out }}
{{- end }}

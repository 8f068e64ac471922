#!/usr/bin/env bash
# sync-chart-files.sh copies the generated alert rules and Grafana dashboards into the Helm
# chart, which can only read files inside itself (.Files.Get). Run it after `make generate`.
#
#   scripts/sync-chart-files.sh           copy
#   scripts/sync-chart-files.sh --check   exit 1 when the chart's copies are stale
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
chart_files="$root/deploy/helm/gputally/files"
rules_src="$root/alerts/generated/gputally-rules.yaml"
dashboards_src="$root/dashboards/generated"
# The rules and dashboards for exporters that write dcgm-exporter 4.8's names.
rules_src_48="$root/alerts/generated/4.8/gputally-rules.yaml"
dashboards_src_48="$root/dashboards/generated/4.8"

check=false
if [[ "${1:-}" == "--check" ]]; then
	check=true
fi

if [[ ! -f "$rules_src" ]]; then
	echo "sync-chart-files: $rules_src is missing; run make generate first" >&2
	exit 1
fi
shopt -s nullglob
dashboards=("$dashboards_src"/*.json)
dashboards_48=("$dashboards_src_48"/*.json)
if [[ ${#dashboards[@]} -eq 0 || ${#dashboards_48[@]} -eq 0 || ! -f "$rules_src_48" ]]; then
	echo "sync-chart-files: no dashboards in $dashboards_src or $dashboards_src_48, or no $rules_src_48; run make generate first" >&2
	exit 1
fi

if $check; then
	stale=0
	cmp -s "$rules_src" "$chart_files/gputally-rules.yaml" || { echo "stale: gputally-rules.yaml" >&2; stale=1; }
	cmp -s "$rules_src_48" "$chart_files/4.8/gputally-rules.yaml" || { echo "stale: 4.8/gputally-rules.yaml" >&2; stale=1; }
	for f in "${dashboards[@]}"; do
		cmp -s "$f" "$chart_files/dashboards/$(basename "$f")" || { echo "stale: dashboards/$(basename "$f")" >&2; stale=1; }
	done
	for f in "${dashboards_48[@]}"; do
		cmp -s "$f" "$chart_files/4.8/dashboards/$(basename "$f")" || { echo "stale: 4.8/dashboards/$(basename "$f")" >&2; stale=1; }
	done
	for f in "$chart_files"/dashboards/*.json; do
		[[ -f "$dashboards_src/$(basename "$f")" ]] || { echo "extra: dashboards/$(basename "$f")" >&2; stale=1; }
	done
	for f in "$chart_files"/4.8/dashboards/*.json; do
		[[ -f "$dashboards_src_48/$(basename "$f")" ]] || { echo "extra: 4.8/dashboards/$(basename "$f")" >&2; stale=1; }
	done
	if [[ $stale -ne 0 ]]; then
		echo "sync-chart-files: the chart's copies differ from the generated files; run scripts/sync-chart-files.sh" >&2
	fi
	exit $stale
fi

mkdir -p "$chart_files/dashboards" "$chart_files/4.8/dashboards"
cp "$rules_src" "$chart_files/gputally-rules.yaml"
cp "$rules_src_48" "$chart_files/4.8/gputally-rules.yaml"
rm -f "$chart_files"/dashboards/*.json "$chart_files"/4.8/dashboards/*.json
cp "${dashboards[@]}" "$chart_files/dashboards/"
cp "${dashboards_48[@]}" "$chart_files/4.8/dashboards/"
echo "sync-chart-files: copied $(basename "$rules_src") and ${#dashboards[@]} dashboards, and their 4.8 forms, into $chart_files"

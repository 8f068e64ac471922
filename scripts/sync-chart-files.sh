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
if [[ ${#dashboards[@]} -eq 0 ]]; then
	echo "sync-chart-files: no dashboards in $dashboards_src; run make generate first" >&2
	exit 1
fi

if $check; then
	stale=0
	cmp -s "$rules_src" "$chart_files/gputally-rules.yaml" || { echo "stale: gputally-rules.yaml" >&2; stale=1; }
	for f in "${dashboards[@]}"; do
		cmp -s "$f" "$chart_files/dashboards/$(basename "$f")" || { echo "stale: dashboards/$(basename "$f")" >&2; stale=1; }
	done
	for f in "$chart_files"/dashboards/*.json; do
		[[ -f "$dashboards_src/$(basename "$f")" ]] || { echo "extra: dashboards/$(basename "$f")" >&2; stale=1; }
	done
	if [[ $stale -ne 0 ]]; then
		echo "sync-chart-files: the chart's copies differ from the generated files; run scripts/sync-chart-files.sh" >&2
	fi
	exit $stale
fi

mkdir -p "$chart_files/dashboards"
cp "$rules_src" "$chart_files/gputally-rules.yaml"
rm -f "$chart_files"/dashboards/*.json
cp "${dashboards[@]}" "$chart_files/dashboards/"
echo "sync-chart-files: copied $(basename "$rules_src") and ${#dashboards[@]} dashboards into $chart_files"

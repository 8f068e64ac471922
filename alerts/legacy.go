package alerts

import "regexp"

var hostnameWord = regexp.MustCompile(`\bhostname\b`)

// LegacyHostname rewrites text written for the exporter's `hostname` label —
// PromQL, alert templates, dashboard JSON — for exporters run with
// --collector.legacy-hostname-label, which spell it `Hostname` as
// dcgm-exporter did up to 4.8.2: every whole word `hostname` becomes
// `Hostname`. The text must use the word for nothing else (the generated rules
// and dashboards do not; a test checks).
func LegacyHostname(text []byte) []byte {
	return hostnameWord.ReplaceAll(text, []byte("Hostname"))
}

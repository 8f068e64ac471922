// Package report builds gputally's weekly utilization and cost report from
// the exporter's metrics in any Prometheus-compatible API: per team, namespace,
// GPU model and node the GPU-hours held, busy share, idle and unallocated EUR,
// p95 activity and peak / p99 framebuffer; recommendations (nodes to drain,
// idle GPUs to release, time-slicing for low-duty pods, the smallest MIG
// profile that fits and how those pack) with the EUR per month they free —
// whole GPUs made free, each counted once — and the capacity they make
// reclaimable (docs/report.md); and the configuration to apply them, per node
// (mig-parted configs, the device plugin's time-slicing ConfigMap and node
// labels, Kueue v1beta2 queues). Given an earlier report as its baseline it
// follows up every recommendation of it: applied or not, decided from this
// period's data, and the money it freed. It renders HTML with inline SVG
// charts, Markdown, CSV and JSON, and can post the Markdown to a
// Slack/Mattermost webhook.
//
// The report is a pipeline of packages, each importing only those below it:
//
//	report           Config, Run, RunDemoStore, Generate: wires the others;
//	                 ConfigError; the output file, every figure finite;
//	                 Progress
//	report/source    where data comes from: the Source seam, the ledger reader
//	                 and the dcgm-exporter source (every PromQL query), the
//	                 checks every answer passes, the Prometheus and
//	                 embedded-engine queriers, the demo Store
//	report/render    Markdown, HTML (charts), CSV, JSON, the webhook
//	report/followup  the baseline: its recommendations followed up (status,
//	                 freed EUR promised and realized), before and after, the
//	                 kept reports (--baseline, --baseline.keep)
//	report/advice    savings (freed vs reclaimable), drain, release,
//	                 time-slicing, MIG and the configuration to apply
//	report/analysis  totals, usage statistics, coverage, faults
//	report/model     the Dataset a source returns, units and their formatting
//
// Of the report's packages source imports only model (and, outside them,
// cost, mig, team and smallfile); render reads followup, advice and analysis;
// followup reads advice, analysis and model; advice reads analysis and model;
// analysis reads model; model imports none of them.
// Generate knows of its data only the Source it is given: Run reads the
// Prometheus HTTP API, RunDemoStore Prometheus' PromQL engine over an
// in-memory Store filled straight from a simulation's scrapes. Every query
// is a range query split into requests of bounded size; the report needs
// only raw metrics, no recording rules.
package report

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
// The report is a pipeline of packages, data flowing from the engine to the
// renderers (engine → sources → model → analysis → advice → follow-up →
// render), each package importing only those upstream of it:
//
//	report                      Config, Run, RunDemoStore, Generate: wires the
//	                            others; ConfigError; the output file, every
//	                            figure finite; Progress
//	report/engine               the engine client: the Querier seam, the HTTP and
//	                            embedded-engine queriers, the demo Store, request
//	                            planning and the checks every answer passes; it
//	                            knows no GPU, ledger or DCGM name
//	report/source               the Source seam and what the sources read alike
//	                            (cluster identity, dedupe labels, kube_pod_labels)
//	report/source/ledger        gputally's ledger counters, read exactly
//	report/source/dcgmexporter  dcgm-exporter and kube-state-metrics, on a grid
//	report/model                the Dataset a source returns, units and their
//	                            formatting
//	report/analysis             totals, usage statistics, coverage, faults
//	report/advice               savings (freed vs reclaimable), drain, release,
//	                            time-slicing, MIG and the configuration to apply
//	report/followup             the baseline: its recommendations followed up
//	                            (status, freed EUR promised and realized), before
//	                            and after, the kept reports (--baseline)
//	report/render               Markdown, HTML (charts), CSV, JSON, the webhook
//
// engine imports none of the report's packages; source imports engine and
// model; the two sources import engine, source and model (and, outside the
// report, cost, mig and team), never each other; analysis reads model; advice
// reads analysis and model; followup reads advice, analysis and model; render
// reads followup, advice and analysis; model imports none of them
// (TestReportImportsDown holds it).
// Generate knows of its data only the Source it is given: Run reads the
// Prometheus HTTP API, RunDemoStore Prometheus' PromQL engine over an
// in-memory Store filled straight from a simulation's scrapes. Every query
// is a range query split into requests of bounded size; the report needs
// only raw metrics, no recording rules.
package report

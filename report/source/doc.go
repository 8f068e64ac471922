// Package source is the seam between the report and where its data comes
// from: the Source interface, which returns a model.Dataset, and what every
// source reads alike — a series' cluster, GPU and holder (Identity), the
// labels by which copies of a series differ (DefaultDedupeLabels) and the
// kube-state-metrics reads they share (ReadPodTeams). Its implementations
// are packages of their own below it:
//
//	report/source/ledger        gputally's own ledger counters, read exactly
//	report/source/dcgmexporter  the history a cluster already has: dcgm-exporter's
//	                            device series and kube-state-metrics, on a grid
//
// It imports, of the report's packages, engine and model; the sources import
// it, engine and model, and never each other (TestReportImportsDown).
package source

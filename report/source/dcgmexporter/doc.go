// Package dcgmexporter is the day-one source: the history a cluster already
// has, read through an engine.Querier without gputally on its nodes —
// dcgm-exporter's device series with their pod labels and kube-state-metrics'
// requests, phases, capacity and pod labels — and returned as a
// model.Dataset. Each cluster's scrape interval is measured and its
// evaluation grid follows it (grid.go); at each grid point every device gets
// one state from its readings (reading.go, rules.go, classify.go), priced by
// the same cost.Ledger the exporter runs, which also meters the facility
// energy of its power readings (account.go); a gap is its holders'
// unknown time (gaps.go); what the data cannot support is no advice, with a
// warning saying why (evidence.go).
//
// It imports, of the report's packages, engine, source and model (and,
// outside them, cost and mig); never report/source/ledger.
package dcgmexporter

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
// warning saying why (evidence.go). The label shapes real clusters have —
// the scrape target's pod labelled on free GPUs, an exporter pod's name in
// the host label, MIG profiles spelled otherwise, signals that disagree,
// vGPU guests, 1.x names — are read for what they are (node.go, target.go,
// migspell.go, activity.go, vgpu.go, oldnames.go).
//
// It imports, of the report's packages, engine, source and model (and,
// outside them, cost, dcgmnames, mig and vgpu); never report/source/ledger.
package dcgmexporter

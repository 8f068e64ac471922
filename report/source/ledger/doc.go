// Package ledger is the report's default source: it reads gputally's own
// metrics through an engine.Querier and returns a model.Dataset. The ledger
// counters gputally_gpu_seconds_total, gputally_cost_eur_total and
// gputally_energy_joules_total (energy.go) are read exactly, short jobs, restarts and gaps included (increase.go), a week of
// step buckets at a time (stretch.go), for the range and the period before
// it (read.go), each series once whatever copies the engine delivers
// (dedupe.go) and every value checked (check.go); beside them the
// allocations and MIG modes (ledger.go), the activity and framebuffer gauges
// (usage.go), the last bucket and the time-sliced shares the advice needs at
// the range's end (end.go) and the devices busy at once for Kueue quotas
// (concurrency.go).
//
// It imports, of the report's packages, engine, source and model (and,
// outside them, cost and team); never report/source/dcgmexporter.
package ledger

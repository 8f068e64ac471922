// Package source is where the report's data comes from: the Source seam and
// its implementations. Ledger reads gputally's metrics through a Querier —
// every PromQL query the report makes is made here: the ledger counters read
// exactly (increase.go), the inputs of coverage, allocations, MIG modes, the
// pods' team labels (kube_pod_labels) and the activity and framebuffer
// samples — and returns them as a model.Dataset. The queriers are the
// Prometheus HTTP API (HTTPQuerier) and Prometheus' own PromQL engine
// over an in-memory Store (EmbeddedQuerier), loaded from OpenMetrics or, for
// report --demo, filled straight from a simulation's scrapes (StoreBuilder).
//
// It imports, of the report's packages, only model.
package source

import (
	"context"

	"github.com/gputally/gputally/report/model"
)

// Source collects the dataset the report analyses. It is the only thing the
// report knows of where its data comes from. Implementations need only be
// safe for use by one goroutine at a time.
type Source interface {
	// Collect returns what the source holds over r: the ledger per holding
	// and state in buckets of r.Step over (r.Start, r.End], and activity and
	// framebuffer in steps of r.Resolution. An error says what failed.
	Collect(ctx context.Context, r model.Range) (*model.Dataset, error)
}

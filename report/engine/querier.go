package engine

import (
	"context"
	"time"

	pmodel "github.com/prometheus/common/model"
)

// Querier runs PromQL range queries. Implementations must be safe for
// concurrent use when a Runner has more than one request in flight
// (Limits.InFlight); HTTPQuerier and EmbeddedQuerier are.
type Querier interface {
	// QueryRange evaluates query at every step from start to end inclusive and
	// returns the resulting series. Warnings are annotations the server returned
	// alongside a successful result.
	QueryRange(ctx context.Context, query string, start, end time.Time, step time.Duration) (pmodel.Matrix, []string, error)
}

// Progress receives a progress line per request a Runner makes, and End
// when the source reading through it is done; the report's Progress is one.
// It is called from the goroutine that runs the queries, whatever the
// requests in flight.
type Progress interface {
	Update(line string)
	End()
}

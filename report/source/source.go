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

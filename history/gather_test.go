package history

import (
	"context"
	"testing"
	"time"

	"github.com/gputally/gputally/collector"
	"github.com/gputally/gputally/collector/collectortest"
	"github.com/gputally/gputally/collector/sim"
)

// TestGatherMatchesRegistry runs scenarios that reach every kind of series —
// pod usage from process accounting, time-slicing, MIG, DRA claims, a lost
// GPU, a kubelet outage, a failing backend, an exporter restart, job pods
// that come and go — and compares, every 20 virtual minutes, the
// collector's own Gather, which the simulation writes, with what a pedantic
// registry gathers and checks from the same snapshot.
func TestGatherMatchesRegistry(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates several days")
	}
	ctx := context.Background()
	for _, tc := range []struct {
		scenario string
		duration time.Duration
	}{
		{"default", 6 * time.Hour},
		{"faults.yaml", 110 * time.Hour},
		{"short-jobs.yaml", 3 * time.Hour},
		{"dra.yaml", 3 * time.Hour},
		{"a100-inference.yaml", 3 * time.Hour},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			opts := Options{Start: start, Duration: tc.duration}
			if tc.scenario != "default" {
				sc, err := sim.Load("../testdata/scenarios/" + tc.scenario)
				if err != nil {
					t.Fatal(err)
				}
				opts.Scenario = sc
			}
			if err := opts.defaults(); err != nil {
				t.Fatal(err)
			}
			n, err := newNode(ctx, &opts)
			if err != nil {
				t.Fatal(err)
			}
			defer n.close()
			compared := 0
			for now := opts.Start; !now.After(opts.Start.Add(opts.Duration)); now = now.Add(opts.SampleInterval) {
				n.clock.now = now
				snap, _, err := n.tick(ctx, now)
				if err != nil {
					t.Fatal(err)
				}
				if snap == nil || now.Sub(opts.Start)%(20*time.Minute) != 0 {
					continue
				}
				collectortest.CompareGather(t, collector.NewCollector(&pinned{snap}, collector.Node{Hostname: n.backend.Hostname()}, func() time.Time { return snap.Time }))
				compared++
			}
			if compared == 0 {
				t.Fatal("no snapshot compared")
			}
		})
	}
}

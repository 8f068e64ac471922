package history

import (
	"io"
	"testing"
	"time"

	"github.com/gputally/gputally/collector/sim"
	"github.com/gputally/gputally/cost"
)

// TestDRAScenarioIsAttributed: on testdata/scenarios/dra.yaml the DRA-held GPUs
// and MIG instances are charged to their pods, none of their time to
// unallocated, while the MIG instance no claim holds stays unallocated.
func TestDRAScenarioIsAttributed(t *testing.T) {
	sc, err := sim.Load("../testdata/scenarios/dra.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const d = 2 * time.Hour
	res, err := writeNode(t.Context(), io.Discard, Options{Scenario: sc, Start: start, Duration: d})
	if err != nil {
		t.Fatal(err)
	}
	b, err := sim.New(sc, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	inv, err := b.Inventory(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]float64{}    // device → seconds charged to pods
	unalloc := map[string]float64{} // device → unallocated seconds
	pods := map[string]float64{}
	for _, tot := range res.Totals {
		if tot.State == cost.Unallocated {
			unalloc[tot.Device] += tot.Seconds
			continue
		}
		held[tot.Device] += tot.Seconds
		pods[tot.Holder.Pod] += tot.Seconds
	}
	for _, pod := range []string{"train-0", "nb-alice", "nb-bob", "search-0", "classifier-0", "eval-0"} {
		if pods[pod] <= 0 {
			t.Errorf("pod %s charged %v s, want > 0", pod, pods[pod])
		}
	}
	// The whole GPUs held by DRA claims: all their time is held, within one
	// attribution refresh (5 min) at the start.
	for _, g := range inv.GPUs[:2] {
		if unalloc[g.UUID] != 0 || held[g.UUID] < d.Seconds()-5*60 {
			t.Errorf("DRA GPU %d: %v s held, %v s unallocated; want ~%v and 0", g.Index, held[g.UUID], unalloc[g.UUID], d.Seconds())
		}
	}
	mig := inv.GPUs[2].Instances
	for j, in := range mig {
		if claimed := j < 2; claimed != (held[in.UUID] > 0) || claimed == (unalloc[in.UUID] > 0) {
			t.Errorf("MIG instance %d (%s): %v s held, %v s unallocated; claimed by DRA: %v", j, in.Profile, held[in.UUID], unalloc[in.UUID], claimed)
		}
	}
}

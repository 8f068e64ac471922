package ledger

import (
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/gputally/gputally/report/engine"
	"github.com/gputally/gputally/report/model"
)

// TestEnergyMeteredPerHolding: pod p holds GPU-0 busy for the two hours of
// the range at 560 W at the facility; its idle series stays at 0, energy
// included. p is metered — a holding's energy is read, whatever state holds
// it — with 7,200 × 560 = 4,032,000 J busy. Pod flat holds GPU-1, priced by a
// flat rate: its seconds and EUR series have no energy series beside them,
// so it is not metered and has no joules, rather than 0 J read as measured.
func TestEnergyMeteredPerHolding(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	end := start.Add(2 * time.Hour)
	b := engine.NewStoreBuilder()
	series := func(gpu, pod, state string) []string {
		return []string{"UUID", gpu, "gpu", "0", "Hostname", "node-0", "modelName", "NVIDIA H100 80GB HBM3",
			"namespace", "ml", "pod", pod, "container", "c", "state", state}
	}
	for ts := start.Add(-time.Hour); !ts.After(end); ts = ts.Add(30 * time.Second) {
		secs := ts.Sub(start.Add(-time.Hour)).Seconds()
		appendLedger(t, b, series("GPU-0", "p", "busy"), ts, secs)
		appendLedger(t, b, series("GPU-0", "p", "idle"), ts, 0)
		for _, m := range []struct {
			name string
			v    float64
		}{{secondsCounter, secs}, {eurCounter, secs * eurPerSecond}} {
			if err := b.Append(labels.FromStrings(append([]string{"__name__", m.name}, series("GPU-1", "flat", "busy")...)...), ts.UnixMilli(), m.v); err != nil {
				t.Fatal(err)
			}
		}
	}
	q := engine.NewEmbeddedQuerier(b.Store(), time.Minute, discard())
	_, l := ledgerOver(t, q, start, end, time.Hour, 0)
	for k, e := range l {
		switch k.Holder.Pod {
		case "p":
			if !e.Metered || e.Joules[model.StateBusy] != 4_032_000 || e.Joules[model.StateIdle] != 0 {
				t.Errorf("p: metered %t, %v J; want metered, 4,032,000 J busy", e.Metered, e.Joules)
			}
		case "flat":
			if e.Metered || e.Joules != [model.NumStates]float64{} || e.Seconds[model.StateBusy] != 7200 {
				t.Errorf("flat: metered %t, %v J, %v s; want not metered, no joules, 7,200 s", e.Metered, e.Joules, e.Seconds)
			}
		default:
			t.Errorf("unexpected holding %+v", k)
		}
	}
}

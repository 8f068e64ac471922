package dcgmexporter

import (
	"time"

	"github.com/gputally/gputally/cost"
	"github.com/gputally/gputally/report/model"
)

// A gap is grid points at which a GPU had no sample, between two at which
// it had one (docs/report.md, "Gaps"): a scrape missed, an exporter stopped,
// a series that went and came back. Who held the GPU then and how busy it
// was are not measured, so its time there is unknown — its holders'
// unknown time, as the exporter's ledger charges a stretch it could not
// read (cost.Ledger.AdvanceUnmeasured): each holder of the GPU's last sample
// before the gap by its share (a whole GPU, a time-sliced replica, a MIG
// instance by the price book's weight), and the part no one held unknown
// with no holder, since who held that in the gap cannot be known either.
// The analysis' rule "a holding over 1 % unknown gets no advice" then sees
// it.

// gap charges grid points from…to (1…, inclusive), at which GPU uuid had
// no sample, as the unknown time of the holders of its last sample at its
// last power, and lists the gap in the dataset.
func (a *dcgmAccount) gap(uuid string, g *dcgmGPU, from, to int) {
	st := g.state
	st.PowerW = g.powerW
	step := cost.NewLedger(staticBook{a.book})
	step.AdvanceUnmeasured(a.grid, []cost.GPUState{st})
	a.totals = step.AppendTotals(a.totals[:0]) // one grid step's
	for j := from; j <= to; {
		b := (j - 1) / a.perBucket
		end := min(to, (b+1)*a.perBucket)
		n := float64(end - j + 1)
		for _, t := range a.totals {
			state, _ := model.StateIndex(t.State.String())
			a.add(b, a.devices[t.Device], modelHolder(t.Holder), state, cost.Total{Seconds: n * t.Seconds, EUR: n * t.EUR, Joules: n * t.Joules, Metered: t.Metered})
		}
		j = end + 1
	}
	d := a.d
	d.Gaps = append(d.Gaps, model.Gap{
		GPU: model.GPUKey{Cluster: a.cluster, UUID: uuid}, Host: g.host, Index: g.gpu, Holders: holdersOf(&g.state),
		From: d.Start.Add(time.Duration(from-1) * a.grid), To: d.Start.Add(time.Duration(to) * a.grid),
		Seconds: float64(to-from+1) * a.grid.Seconds(),
	})
}

// holdersOf lists the holders of a GPU's state: of the whole GPU, or of its
// MIG instances, in their order.
func holdersOf(st *cost.GPUState) []model.HolderKey {
	var out []model.HolderKey
	for _, h := range st.Holders {
		out = append(out, modelHolder(h.Key))
	}
	for _, in := range st.Instances {
		for _, h := range in.Holders {
			out = append(out, modelHolder(h.Key))
		}
	}
	return out
}

func modelHolder(h cost.HolderKey) model.HolderKey {
	return model.HolderKey{Namespace: h.Namespace, Pod: h.Pod, Container: h.Container}
}

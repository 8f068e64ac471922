package history

import (
	"cmp"
	"slices"

	"github.com/gputally/gputally/cost"
)

// tally sums a run's ledger totals per series over what a single ledger
// forgets: its counters start again from 0 when the exporter restarts, and a
// series that ended is dropped after its retention window (a holder coming back
// later starts again from 0). A series missing from one sample's totals and
// present in the next started again. The zero tally is ready; only the run's
// goroutine uses it.
type tally struct {
	sample uint64 // samples added, plus one per restart
	series map[seriesKey]*tallied
}

type seriesKey struct {
	gpu, device string
	holder      cost.HolderKey
	state       cost.State
}

type tallied struct {
	banked  cost.Total // what earlier lives of the series accounted
	last    cost.Total // the series' value in its current life
	sampled uint64     // the sample that last had the series
}

// restart marks a new ledger: every series starts a new life.
func (t *tally) restart() { t.sample++ }

// add takes the totals of one sample.
func (t *tally) add(totals []cost.Total) {
	if t.series == nil {
		t.series = map[seriesKey]*tallied{}
	}
	t.sample++
	for _, x := range totals {
		k := seriesKey{gpu: x.GPU, device: x.Device, holder: x.Holder, state: x.State}
		s := t.series[k]
		switch {
		case s == nil:
			s = &tallied{}
			t.series[k] = s
		case s.sampled != t.sample-1:
			s.banked.Seconds += s.last.Seconds
			s.banked.EUR += s.last.EUR
		}
		s.last, s.sampled = x, t.sample
	}
}

// totals returns every series' sum over its lives, sorted by GPU, device,
// holder and state.
func (t *tally) totals() []cost.Total {
	out := make([]cost.Total, 0, len(t.series))
	for _, s := range t.series {
		x := s.last
		x.Seconds += s.banked.Seconds
		x.EUR += s.banked.EUR
		out = append(out, x)
	}
	slices.SortFunc(out, func(a, b cost.Total) int {
		return cmp.Or(cmp.Compare(a.GPU, b.GPU), cmp.Compare(a.Device, b.Device),
			cmp.Compare(a.Holder.Namespace, b.Holder.Namespace), cmp.Compare(a.Holder.Pod, b.Holder.Pod),
			cmp.Compare(a.Holder.Container, b.Holder.Container), cmp.Compare(a.State, b.State))
	})
	return out
}

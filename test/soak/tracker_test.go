//go:build soak

package soak

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// A tracker follows the counters of an exporter over consecutive scrapes and
// collects what breaks the soak's rules: a *_total series that decreases while
// it stays exported, the series of an ended holder kept much longer than the
// retention window or dropped before it, and (at the end) device-seconds per
// GPU that do not grow by the time that passed. It is not safe for concurrent
// use; the soak feeds it from one goroutine.
type tracker struct {
	retention time.Duration // the exporter's --collector.ended-series-retention
	// slack is what observing at scrape granularity adds to the retention
	// window: a holder's freeze and its removal are each seen up to one scrape
	// late, and the sampler may tick late on a loaded machine.
	slack time.Duration

	scrapes     int
	first, last time.Time
	// sampling is the first scrape of the current stretch of scrapes with
	// gputally_up 1: the ledger prunes ended series when it samples, so a
	// series whose window ends in a backend outage leaves at the first
	// sample after it.
	sampling time.Time
	sampled  bool
	counters map[string]*counter
	holders  map[string]*holder
	problems []string

	decreases, reappeared, holdersEnded int
	retainedMin, retainedMax            time.Duration
}

// counter is one *_total series; gpu is set for gputally_gpu_seconds_total.
type counter struct {
	present   bool
	gpu       string
	base      float64 // its value when the soak first saw this life of it (0 for a new series)
	last      float64
	collected float64 // growth of its earlier lives (it left and came back)
}

// holder is one holder of a device, as its gputally_gpu_seconds_total
// series name it: GPU, MIG instance, namespace, pod, container.
type holder struct {
	present  bool
	seconds  float64   // the sum of its state series at the last scrape
	grewAt   time.Time // the last scrape at which that sum grew
	frozenAt time.Time // the first scrape after grewAt at which it did not
	flagged  bool
}

func newTracker(retention, slack time.Duration) *tracker {
	return &tracker{retention: retention, slack: slack, counters: map[string]*counter{}, holders: map[string]*holder{}}
}

func (tr *tracker) problem(format string, args ...any) {
	tr.problems = append(tr.problems, fmt.Sprintf(format, args...))
}

// observe takes one scrape answered at t.
func (tr *tracker) observe(t time.Time, fams map[string]*dto.MetricFamily) {
	if tr.scrapes == 0 {
		tr.first = t
	}
	up := true
	if f := fams["gputally_up"]; f != nil && len(f.GetMetric()) == 1 {
		up = f.GetMetric()[0].GetGauge().GetValue() == 1
	}
	if up && !tr.sampled {
		tr.sampling = t
	}
	tr.sampled = up
	seen := map[string]bool{}
	holderSeconds := map[string]float64{}
	for name, f := range fams {
		if !strings.HasSuffix(name, "_total") {
			continue
		}
		for _, m := range f.GetMetric() {
			v, ok := counterValue(m)
			if !ok {
				continue
			}
			key := seriesKey(name, m)
			seen[key] = true
			c := tr.counters[key]
			switch {
			case c == nil:
				c = &counter{}
				if name == "gputally_gpu_seconds_total" {
					c.gpu = label(m, "UUID")
				}
				tr.counters[key] = c
				if tr.scrapes == 0 {
					c.base = v // it grew before the soak looked
				}
			case !c.present:
				tr.reappeared++
				c.collected += c.last - c.base
				c.base = 0 // a series that left and came back starts again from 0
			case v < c.last:
				tr.decreases++
				tr.problem("%s decreased from %g to %g at %s", key, c.last, v, t.Sub(tr.first).Round(time.Millisecond))
			}
			c.present, c.last = true, v
			if name == "gputally_gpu_seconds_total" && label(m, "pod") != "" {
				holderSeconds[holderKey(m)] += v
			}
		}
	}
	for key, c := range tr.counters {
		if c.present && !seen[key] {
			c.present = false
		}
	}
	tr.observeHolders(t, holderSeconds)
	tr.scrapes++
	tr.last = t
}

func (tr *tracker) observeHolders(t time.Time, seconds map[string]float64) {
	for key, s := range seconds {
		h := tr.holders[key]
		switch {
		case h == nil || !h.present || s > h.seconds:
			if h == nil {
				h = &holder{}
				tr.holders[key] = h
			}
			h.grewAt, h.frozenAt, h.flagged = t, time.Time{}, false
		case h.frozenAt.IsZero():
			h.frozenAt = t
		case !h.flagged && tr.sampled && t.Sub(h.frozenAt) > tr.retention+tr.slack &&
			t.Sub(tr.sampling) > tr.slack:
			h.flagged = true
			tr.problem("holder %s still exported %s after its series stopped growing (retention %s)",
				key, t.Sub(h.frozenAt).Round(time.Millisecond), tr.retention)
		}
		h.present, h.seconds = true, s
	}
	for key, h := range tr.holders {
		if _, still := seconds[key]; !h.present || still {
			continue
		}
		h.present = false
		tr.holdersEnded++
		// It stopped growing after grewAt and left by t: it was retained at most
		// t - grewAt, plus the age of the snapshot scraped at grewAt (one
		// sample interval, more on a loaded machine: allow a second).
		upper := t.Sub(h.grewAt)
		if upper+time.Second < tr.retention {
			tr.problem("holder %s left at most %s after its series stopped growing (retention %s)",
				key, upper.Round(time.Millisecond), tr.retention)
		}
		if tr.retainedMin == 0 || upper < tr.retainedMin {
			tr.retainedMin = upper
		}
		tr.retainedMax = max(tr.retainedMax, upper)
	}
}

// gpuGrowth is the device-seconds each GPU (by UUID) accrued over all states
// and holders between the first and the last scrape, including the series
// that left in between.
func (tr *tracker) gpuGrowth() map[string]float64 {
	out := map[string]float64{}
	for _, c := range tr.counters {
		if c.gpu == "" {
			continue
		}
		out[c.gpu] += c.collected + c.last - c.base
	}
	return out
}

// checkGrowth adds a problem for every GPU whose device-seconds did not grow
// by the elapsed time within tolerance (a ratio, e.g. 0.01).
func (tr *tracker) checkGrowth(tolerance float64) (elapsed time.Duration, growth map[string]float64) {
	elapsed = tr.last.Sub(tr.first)
	growth = tr.gpuGrowth()
	gpus := make([]string, 0, len(growth))
	for g := range growth {
		gpus = append(gpus, g)
	}
	sort.Strings(gpus)
	for _, g := range gpus {
		if d := growth[g] - elapsed.Seconds(); d > tolerance*elapsed.Seconds() || -d > tolerance*elapsed.Seconds() {
			tr.problem("GPU %s accrued %.3f device-seconds in %.3f s of soak (more than %.0f %% apart)",
				g, growth[g], elapsed.Seconds(), tolerance*100)
		}
	}
	return elapsed, growth
}

func counterValue(m *dto.Metric) (float64, bool) {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue(), true
	case m.Untyped != nil:
		return m.Untyped.GetValue(), true
	}
	return 0, false
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func seriesKey(name string, m *dto.Metric) string {
	parts := make([]string, 0, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		parts = append(parts, l.GetName()+"="+l.GetValue())
	}
	slices.Sort(parts)
	return name + "{" + strings.Join(parts, ",") + "}"
}

func holderKey(m *dto.Metric) string {
	return strings.Join([]string{label(m, "UUID"), label(m, "GPU_I_ID"), label(m, "namespace"), label(m, "pod"), label(m, "container")}, "/")
}

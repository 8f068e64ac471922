package ledger

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	pmodel "github.com/prometheus/common/model"

	"github.com/gputally/gputally/cost"
	"github.com/gputally/gputally/report/engine"
	"github.com/gputally/gputally/report/model"
	"github.com/gputally/gputally/report/source"
)

// The report trusts no answer. Between it and the exporters sit engines,
// query frontends, gateways and proxies, each with its bugs; a value that no
// exporter can have written, or an answer no engine can have given, is an
// error that names the series, the time and the value — never a figure:
//
//   - every answer (report/engine checks it): samples in time order (sorted when a proxy
//     shuffled them), no two samples of a series at one time, no series
//     twice, no ±Inf;
//   - the ledger counters' samples (checkCounter): not NaN, not negative, not
//     beyond what a century can count (maxLedgerSeconds, maxLedgerEUR,
//     maxLedgerJoules); the
//     resets() counts not NaN or negative; no series with a label the query
//     aggregated away (deduper.kept);
//   - what they add up to (conserved, checkEUR, checkEnergy): a device's (a
//     whole GPU's or a MIG instance's) device-seconds in a step bucket, over
//     all its series, at most the bucket plus the scrape timing; one series'
//     EUR in a bucket at most what the highest rate any price book allows
//     charges in it, its energy at most what the highest facility power
//     draws in it;
//   - the gauges the advice reads (checkGauge, checkShare): activity a ratio,
//     framebuffer a size, shares of a device in (0, 1]. A gauge out of its
//     range is no sample, and a note names the first (leftOut): exporters do
//     write such values (DCGM's GPU utilization reads 4294967295 now and then),
//     and the money does not hang on them.

// maxLedgerSeconds is the largest value a gputally_gpu_seconds_total series
// can hold: a century of device-seconds (no exporter process lives that long;
// each starts from 0).
const maxLedgerSeconds = 100 * 365.25 * 24 * 3600

// maxLedgerEUR is the largest value a gputally_cost_eur_total series can
// hold: a century at the highest rate a price book allows.
const maxLedgerEUR = maxLedgerSeconds / 3600 * cost.MaxRateEURPerHour

// maxFramebufferMiB is the largest framebuffer reading believed, in MiB
// (1 PiB; the largest GPUs hold 192 GiB).
const maxFramebufferMiB = 1 << 30

// ratioSlack is how far above 1 an activity ratio may read (rounding in the
// exporter) before it is left out.
const ratioSlack = 0.01

// checkCounter checks a sample of the ledger counter metric (seconds, EUR or
// energy) of series m.
func checkCounter(metric string, m pmodel.Metric, p pmodel.SamplePair) error {
	v := float64(p.Value)
	limit, unit := maxLedgerSeconds, "device-seconds"
	switch metric {
	case eurCounter:
		limit, unit = maxLedgerEUR, "EUR"
	case energyCounter:
		limit, unit = maxLedgerJoules, "J"
	}
	switch {
	case math.IsNaN(v):
		return engine.ValueError(named(metric, m), p, "a ledger counter is a number: the exporter never writes NaN")
	case v < 0:
		return engine.ValueError(named(metric, m), p, "a ledger counter is never negative")
	case v > limit:
		return engine.ValueError(named(metric, m), p, fmt.Sprintf("more %s than a century can count (%.4g)", unit, limit))
	}
	return nil
}

// checkCount checks a sample of a resets() count of series m.
func checkCount(m pmodel.Metric, p pmodel.SamplePair) error {
	if v := float64(p.Value); math.IsNaN(v) || v < 0 {
		return engine.ValueError(m, p, "resets() counts decreases: a whole number, never NaN or negative")
	}
	return nil
}

// checkGauge checks a gauge sample of series m, scaled to its unit: an
// activity ratio lies in [0, 1] (a little above for rounding), a framebuffer
// in [0, maxFramebufferMiB] MiB; NaN is no sample, as the exporters mean it.
func checkGauge(m pmodel.Metric, p pmodel.SamplePair, v float64, ratio bool) error {
	switch {
	case math.IsNaN(v):
		return nil
	case ratio && (v < 0 || v > 1+ratioSlack):
		return engine.ValueError(m, p, "an activity is a ratio between 0 and 1")
	case !ratio && (v < 0 || v > maxFramebufferMiB):
		return engine.ValueError(m, p, fmt.Sprintf("a framebuffer holds between 0 and %d MiB", maxFramebufferMiB))
	}
	return nil
}

// leftOut counts, per query, the gauge samples its answers held out of their
// range (checkGauge, checkShare), which are left out of the figures, and
// keeps the first for the note that says so. The zero value is empty; it is
// not safe for concurrent use.
type leftOut struct {
	names []string // in the order first seen
	of    map[string]*outOfRange
}

type outOfRange struct {
	n     int
	first error
}

// add counts err, a sample of query name's answers left out.
func (l *leftOut) add(name string, err error) {
	if l.of == nil {
		l.of = map[string]*outOfRange{}
	}
	o := l.of[name]
	if o == nil {
		o = &outOfRange{first: err}
		l.of[name] = o
		l.names = append(l.names, name)
	}
	o.n++
}

// notes says, per query, how many samples were left out and which was first.
func (l *leftOut) notes() []string {
	out := make([]string, 0, len(l.names))
	for _, name := range l.names {
		o := l.of[name]
		out = append(out, fmt.Sprintf("%s: %d samples out of range left out, as no sample; the first: %v", name, o.n, o.first))
	}
	return out
}

// checkShare checks a time-sliced or MPS holding's share of its device.
func checkShare(m pmodel.Metric, p pmodel.SamplePair) error {
	if v := float64(p.Value); !(v > 0 && v <= 1) {
		return engine.ValueError(m, p, "a holding's share of its device lies in (0, 1]")
	}
	return nil
}

// namedSeries is a series with its metric name, for messages.
type namedSeries struct {
	metric string
	m      pmodel.Metric
}

func named(metric string, m pmodel.Metric) namedSeries { return namedSeries{metric, m} }

func (n namedSeries) String() string { return n.metric + n.m.String() }

// conservationSlack is how many device-seconds more than its length a step
// bucket may hold for one device: the bucket's increase runs from the last
// sample before it to its own last sample, up to one scrape interval more
// than the bucket (at most a third of it, and 5 minutes).
func conservationSlack(step time.Duration) time.Duration { return min(step/3, newSeriesSlack) }

// conserved checks one device's device-seconds per bucket (sums[i] is bucket
// i+1 of the reading from start) against the bucket's length: every tick the
// exporter adds at most dt to a whole GPU's or a MIG instance's series over
// all states and holders (a GPU's dt over all of them: an instance gets its
// weight's part), so more means series counted twice. The error names the
// device, the bucket and the copies among series (the device's seconds
// series and their increases).
func conserved(id source.Identity, series []*counterSeries, incs [][]float64, sums []float64, start time.Time, step time.Duration) error {
	limit := (step + conservationSlack(step)).Seconds()
	for i, v := range sums {
		if v <= limit {
			continue
		}
		var in []pmodel.Metric // the series that counted in the bucket
		for j, s := range series {
			if incs[j][i] > 0 {
				in = append(in, s.metric)
			}
		}
		return fmt.Errorf("%s on node %s: %s device-seconds in the step bucket ending %s, more than the bucket's %s (and %s of scrape timing): %s",
			deviceName(in[0]), hostOf(in[0]), trimFloat(v), start.Add(time.Duration(i+1)*step).UTC().Format(time.RFC3339), trimFloat(step.Seconds()),
			trimFloat(conservationSlack(step).Seconds()), copiesOf(id, in))
	}
	return nil
}

// deviceName names the device of series m in messages: GPU GPU-… or MIG
// instance 3 (3g.40gb) of GPU GPU-….
func deviceName(m pmodel.Metric) string {
	if gi := m["GPU_I_ID"]; gi != "" {
		return fmt.Sprintf("MIG instance %s (%s) of GPU %s", gi, m["GPU_I_PROFILE"], m["UUID"])
	}
	return "GPU " + string(m["UUID"])
}

// copiesOf says which of a GPU's series counted the same seconds: two of one
// holding and state are copies, and the labels they differ in are named.
func copiesOf(id source.Identity, in []pmodel.Metric) string {
	type key struct {
		h     model.HoldingKey
		state pmodel.LabelValue
	}
	first := map[key]pmodel.Metric{}
	for _, m := range in {
		k := key{id.HoldingOf(m), m["state"]}
		if a, ok := first[k]; ok {
			return fmt.Sprintf("the engine delivered its ledger series more than once: %s and %s differ only in %s "+
				"(an HA pair or a second scrape job: name the label in --report.dedupe-labels; or an engine or proxy that copies series)",
				a, m, strings.Join(differing(a, m), ", "))
		}
		first[k] = m
	}
	names := make([]string, 0, len(in))
	for _, m := range in {
		names = append(names, m.String())
	}
	return "its series together count more time than passed: " + strings.Join(names, ", ")
}

// differing returns the names of the labels whose values a and b differ in,
// sorted.
func differing(a, b pmodel.Metric) []string {
	var out []string
	for l, v := range a {
		if b[l] != v {
			out = append(out, string(l))
		}
	}
	for l := range b {
		if _, ok := a[l]; !ok {
			out = append(out, string(l))
		}
	}
	slices.Sort(out)
	return out
}

// checkEUR checks one EUR series' increase v in the step bucket ending at
// end: at most what the highest rate any price book allows charges in the
// bucket and its scrape timing.
func checkEUR(s *counterSeries, v float64, end time.Time, step time.Duration) error {
	limit := (step + conservationSlack(step)).Hours() * cost.MaxRateEURPerHour
	if v > limit {
		return fmt.Errorf("%s: %s EUR in the step bucket ending %s, more than the highest rate a price book allows charges in it (%s EUR)",
			named(eurCounter, s.metric), trimFloat(v), end.UTC().Format(time.RFC3339), trimFloat(limit))
	}
	return nil
}

func trimFloat(v float64) string { return fmt.Sprintf("%.10g", v) }

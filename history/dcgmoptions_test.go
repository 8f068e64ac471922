package history

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/gputally/gputally/collector/sim"
)

// everyScrapeSink keeps the families and time of every scrape.
type everyScrapeSink struct {
	scrapes [][]*dto.MetricFamily
	times   []time.Time
}

func (s *everyScrapeSink) AddScrape(mfs []*dto.MetricFamily, t time.Time) error {
	s.scrapes = append(s.scrapes, mfs)
	s.times = append(s.times, t)
	return nil
}

func runOptions(t *testing.T, scenario string, d time.Duration, o Options) *everyScrapeSink {
	t.Helper()
	sc, err := sim.Load(scenario)
	if err != nil {
		t.Fatal(err)
	}
	o.Scenario, o.Start, o.Duration, o.Flavor = sc, start, d, FlavorDCGMExporter
	sink := &everyScrapeSink{}
	if _, err := Run(context.Background(), o, sink); err != nil {
		t.Fatal(err)
	}
	return sink
}

// lostAndPlain: GPU 0 is time-sliced ×4 without renaming, replicas 0 and 3
// held by dev/a-0 and dev/b-0; GPU 1, ml/t-0's, falls off the bus at 1 min.
const lostAndPlain = "../testdata/scenarios/replicas-not-renamed.yaml"

// TestDCGMExporterFlavorLeavesOut: each DCGMExporterOptions field leaves out
// what it names and nothing else — no hostname label on any DCGM_* series,
// the lost GPU's XID series included; no DCGM_FI_PROF_* family; no kube_*
// family — while the rest of the scrape stays.
func TestDCGMExporterFlavorLeavesOut(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts DCGMExporterOptions
		gone func(family string, m *dto.Metric) bool
		// relabels: the option keeps the samples, without what it leaves out.
		relabels bool
	}{
		{"no hostname", DCGMExporterOptions{NoHostname: true}, func(f string, m *dto.Metric) bool {
			return strings.HasPrefix(f, "DCGM_") && (labelValue(m, "hostname") != "" || labelValue(m, "Hostname") != "")
		}, true},
		{"no profiling", DCGMExporterOptions{NoProfiling: true}, func(f string, _ *dto.Metric) bool { return strings.HasPrefix(f, "DCGM_FI_PROF_") }, false},
		{"no kube-state-metrics", DCGMExporterOptions{NoKubeStateMetrics: true}, func(f string, _ *dto.Metric) bool { return strings.HasPrefix(f, "kube_") }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			with := runOptions(t, lostAndPlain, 3*time.Minute, Options{SampleInterval: 30 * time.Second, ScrapeInterval: time.Minute})
			without := runOptions(t, lostAndPlain, 3*time.Minute, Options{SampleInterval: 30 * time.Second, ScrapeInterval: time.Minute, DCGMExporter: tc.opts})
			count := func(s *everyScrapeSink) (gone, kept int) {
				for _, mfs := range s.scrapes {
					for _, mf := range mfs {
						for _, m := range mf.GetMetric() {
							if tc.gone(mf.GetName(), m) {
								gone++
							} else {
								kept++
							}
						}
					}
				}
				return gone, kept
			}
			goneWith, keptWith := count(with)
			goneWithout, keptWithout := count(without)
			if goneWith == 0 || goneWithout != 0 {
				t.Errorf("%d samples it leaves out without the option, %d with it; want some, then none", goneWith, goneWithout)
			}
			wantKept := keptWith
			if tc.relabels {
				wantKept += goneWith
			}
			if keptWith == 0 || keptWithout != wantKept {
				t.Errorf("%d other samples with the option, want %d", keptWithout, wantKept)
			}
		})
	}
}

// TestDCGMExporterFlavorReplicasNotRenamed: on GPU 0, time-sliced without
// renaming, the DCGM_* series carry the pod labels of the last container
// listed that holds a replica — dev/b-0 sorts after dev/a-0 — as
// dcgm-exporter's pod mapper writes them; the whole GPU 1 its own pod's.
func TestDCGMExporterFlavorReplicasNotRenamed(t *testing.T) {
	s := runOptions(t, lostAndPlain, 30*time.Second, Options{SampleInterval: 30 * time.Second, ScrapeInterval: 30 * time.Second})
	util := familyOf(s.scrapes[0], "DCGM_FI_DEV_GPU_UTIL")
	pods := map[string]string{}
	for _, m := range util.GetMetric() {
		pods[labelValue(m, "gpu")] = labelValue(m, "namespace") + "/" + labelValue(m, "pod") + "/" + labelValue(m, "container")
		if !slices.IsSortedFunc(m.Label, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) }) {
			t.Errorf("labels not sorted: %v", labelNames(m))
		}
	}
	if pods["0"] != "dev/b-0/c" || pods["1"] != "ml/t-0/c" {
		t.Errorf("pods labelled %v, want dev/b-0/c on GPU 0 and ml/t-0/c, its own, on GPU 1", pods)
	}
}

// TestScrapeJitter: with ScrapeJitter 40ms, about one scrape in 20 is
// stored late, by 4 to 40 ms (a tenth of it at least); the others on time.
// Over 2 h of 30 s scrapes (241) the seeded choice makes 5 to 25 late.
func TestScrapeJitter(t *testing.T) {
	s := runOptions(t, lostAndPlain, 2*time.Hour, Options{SampleInterval: 30 * time.Second, ScrapeInterval: 30 * time.Second, ScrapeJitter: 40 * time.Millisecond})
	late := 0
	for i, at := range s.times {
		due := start.Add(time.Duration(i) * 30 * time.Second)
		switch d := at.Sub(due); {
		case d == 0:
		case d >= 4*time.Millisecond && d <= 40*time.Millisecond && d%time.Millisecond == 0:
			late++
		default:
			t.Errorf("scrape due at %s stored %s late", due.Format(time.TimeOnly), d)
		}
	}
	if len(s.times) != 241 || late < 5 || late > 25 {
		t.Errorf("%d of %d scrapes late, want 241 scrapes and 5 to 25 late", late, len(s.times))
	}
}

// TestDCGMExporterOptionsChecked: the flavour's options need the flavour,
// and the jitter is 0 or between 1ms and half the scrape interval.
func TestDCGMExporterOptionsChecked(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Duration: time.Hour, DCGMExporter: DCGMExporterOptions{NoProfiling: true}}, "applies to it alone"},
		{Options{Duration: time.Hour, ScrapeJitter: 15 * time.Second}, "under half the scrape interval"},
		{Options{Duration: time.Hour, ScrapeJitter: time.Microsecond}, "at least 1ms"},
	} {
		if err := tc.o.defaults(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.o, err, tc.want)
		}
	}
}

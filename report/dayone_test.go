package report

import (
	"bytes"
	"context"
	"encoding/csv"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/model/labels"
	"google.golang.org/protobuf/proto"

	"github.com/gputally/gputally/collector/sim"
	"github.com/gputally/gputally/cost"
	"github.com/gputally/gputally/history"
	"github.com/gputally/gputally/report/advice"
	"github.com/gputally/gputally/report/engine"
	"github.com/gputally/gputally/report/render"
)

// The day-one tests (issue 29) run `report --source=dcgm-exporter` over the
// history clusters really have: the day-one fleet (testdata/scenarios/
// dayone, 7 H100s on 4 nodes) written by `simulate history
// --flavor=dcgm-exporter` — dcgm-exporter's and kube-state-metrics' own
// label sets — into the embedded engine's store, scraped every 30 s unless
// a test says otherwise, for 48 h from dayOneStart, and varied as histories
// really are: scraped every minute, scrapes stored late, a retention
// shorter than the range, no kube-state-metrics, no hostname label, a gap,
// an exporter outage, time-slicing without renamed resources, no
// profiling fields, no pod labels for --team-label.
//
//	gpu-node-a  GPU 0 serving/llm-serve-0, GPU 1 serving/llm-serve-1 (training:
//	            85–97 % active, always busy); GPU 2 dev/notebook-0 (idle: 0 %)
//	gpu-node-b  GPU 0 MIG 2× 3g.40gb: serving/embed-0 on the first instance,
//	            the second free; GPU 1 batch/train-0 (training) until 30 h, then free
//	gpu-node-c  GPU 0 time-sliced ×4 (nvidia.com/gpu.shared): dev-ann/nb-0
//	            and dev-ben/nb-0 on replicas 0 and 1, two free
//	gpu-node-d  GPU 0 nobody holds, its memory empty
//
// dayOneBook prices every GPU at a flat 2.00 EUR/h, so that each figure is
// device-hours × 2.00: a GPU over the 48 h is 96 EUR, the fleet 7 × 96 = 672
// EUR; a 3g.40gb instance, by the compute weight, half its GPU (3 of 7
// slices, and the 7th, which no profile fits beside two 3g.40gb, charged
// to both alike): 24 device-hours, 48 EUR. A month is 730.5 h: over 48 h a
// figure × 730.5/48 per month.
//
// On 30 s scrapes the hand-computed figures, which TestDayOneBase holds:
//
//	serving   busy 48 + 48 + 24 = 120 h, 240 EUR
//	dev       idle 48 h, 96 EUR (notebook-0)
//	batch     busy 30 h less a grid step: train-0 runs (0, 30 h), so the scrape
//	          at 30 h no longer labels it and its last grid point is the one
//	          before: 29 h 59 m 30 s, 59.983333 EUR
//	dev-ann   12 h, 24 EUR: 1 of 4 replicas of a GPU (allocation share); dev-ben alike
//	""        unallocated 114 h and a grid step, 228.016667 EUR: the free MIG instance
//	          24 h (48 EUR), node-b's GPU 1 after the Job 18 h 30 s (36.016667
//	          EUR), node-c's free replicas 2/4 × 48 h (48 EUR), node-d's GPU 48 h
//	          (96 EUR)
//	unknown   none
//
// and two recommendations, each freeing a GPU's 2.00 EUR/h × 730.5 h = 1461
// EUR a month: drain gpu-node-d (48 of 48 device-hours unallocated), and
// release dev/notebook-0 (busy 0 % of its 48 h).

var dayOneStart = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC) // a Monday

const dayOneHours = 48

const dayOneBook = `
currency: EUR
models:
  - {match: ".*", hourly_eur: 2.00}
mig_weight: compute
idle: {threshold: 0.05}
`

// dayOneEnd is the end of the day-one history.
var dayOneEnd = dayOneStart.Add(dayOneHours * time.Hour)

// dayOneNodes loads the nodes of the day-one fleet named (all: none named).
func dayOneNodes(t testing.TB, names ...string) []*sim.Scenario {
	t.Helper()
	if len(names) == 0 {
		names = []string{"gpu-node-a", "gpu-node-b", "gpu-node-c", "gpu-node-d"}
	}
	var nodes []*sim.Scenario
	for _, n := range names {
		sc, err := sim.Load(filepath.Join("..", "testdata", "scenarios", "dayone", n+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, sc)
	}
	return nodes
}

// dayOneVariant is node name of the day-one fleet with its file's text
// changed: each old of the pairs (old, new, old, new, …) replaced by its
// new.
func dayOneVariant(t testing.TB, name string, replace ...string) *sim.Scenario {
	t.Helper()
	path := filepath.Join("..", "testdata", "scenarios", "dayone", name+".yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for i := 0; i+1 < len(replace); i += 2 {
		if !strings.Contains(text, replace[i]) {
			t.Fatalf("%s lacks %q", path, replace[i])
		}
		text = strings.ReplaceAll(text, replace[i], replace[i+1])
	}
	sc, err := sim.Parse([]byte(text), path)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// dayOneOptions are a run's options: 48 h from dayOneStart in
// dcgm-exporter's form, sampled and scraped every 30 s.
func dayOneOptions() history.Options {
	return history.Options{Start: dayOneStart, Duration: dayOneHours * time.Hour, SampleInterval: 30 * time.Second,
		ScrapeInterval: 30 * time.Second, Flavor: history.FlavorDCGMExporter}
}

// dayOneStore runs nodes with o into b; wrap (optional) stands between the
// run and the store.
func dayOneStore(t testing.TB, b *StoreBuilder, o history.Options, nodes []*sim.Scenario, wrap func(history.Sink) history.Sink) {
	t.Helper()
	var sink history.Sink = b
	if wrap != nil {
		sink = wrap(b)
	}
	if _, err := history.RunFleet(context.Background(), o, nodes, sink); err != nil {
		t.Fatal(err)
	}
}

// simulateDayOne is dayOneStore into a store of its own.
func simulateDayOne(t testing.TB, o history.Options, nodes []*sim.Scenario, wrap func(history.Sink) history.Sink) *Store {
	t.Helper()
	b := NewStoreBuilder()
	dayOneStore(t, b, o, nodes, wrap)
	return b.Store()
}

// dayOneConfig reports on the 48 h with the dcgm-exporter source and
// dayOneBook, a partial report allowed.
func dayOneConfig(t testing.TB) Config {
	t.Helper()
	book, err := cost.Parse([]byte(dayOneBook), "day-one.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Source, cfg.PriceBook, cfg.Out = SourceDCGMExporter, book, "-"
	cfg.Range, cfg.End, cfg.AllowPartial = dayOneHours*time.Hour, dayOneEnd, true
	return cfg
}

// dayOneReport generates cfg's report over st.
func dayOneReport(t testing.TB, st *Store, cfg Config) (*Report, error) {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return Generate(context.Background(), cfg, cfg.source(engine.NewEmbeddedQuerier(st, time.Minute, discard())), discard())
}

// sinkFunc is a history.Sink of a function.
type sinkFunc func(mfs []*dto.MetricFamily, t time.Time) error

func (f sinkFunc) AddScrape(mfs []*dto.MetricFamily, t time.Time) error { return f(mfs, t) }

// dayOneBaseStore is the day-one fleet's 48 h at 30 s scrapes, simulated once
// for the tests that read it as it is.
var dayOneBaseStore struct {
	once sync.Once
	st   *Store
}

func dayOneBase(t testing.TB) *Store {
	t.Helper()
	dayOneBaseStore.once.Do(func() { dayOneBaseStore.st = simulateDayOne(t, dayOneOptions(), dayOneNodes(t), nil) })
	if dayOneBaseStore.st == nil {
		t.Fatal("the day-one fleet's simulation failed")
	}
	return dayOneBaseStore.st
}

// nsWant is what a namespace ("" no holder) should hold: device-hours held
// (busy + idle), of them busy when busyKnown (the inference workloads' split
// is the simulation's, not a hand figure), unallocated and unknown, and its
// EUR.
type nsWant struct {
	held, busy, unallocated, unknown, eur float64
	busyKnown                             bool
}

// checkNamespaces holds the report's namespaces, and the time no holder
// had, to want within 1e-6; a namespace want lacks must be absent.
func checkNamespaces(t *testing.T, r *Report, want map[string]nsWant) {
	t.Helper()
	got := map[string]nsWant{}
	unheld := r.Fleet.Totals
	for _, n := range r.Namespaces {
		got[n.Name] = nsWant{held: n.Totals.HeldHours, busy: n.Totals.BusyHours, unallocated: n.Totals.UnallocatedHours, unknown: n.Totals.UnknownHours, eur: n.Totals.CostEUR}
		unheld.CostEUR -= n.Totals.CostEUR
		unheld.UnknownHours -= n.Totals.UnknownHours
	}
	got[""] = nsWant{held: unheld.HeldHours - sumHeld(r), unallocated: unheld.UnallocatedHours, unknown: unheld.UnknownHours, eur: unheld.CostEUR}
	for ns, w := range want {
		g, ok := got[ns]
		if !ok || !near(g.held, w.held) || w.busyKnown && !near(g.busy, w.busy) || !near(g.unallocated, w.unallocated) || !near(g.unknown, w.unknown) || !near(g.eur, w.eur) {
			t.Errorf("namespace %q: held %.6f (busy %.6f) unallocated %.6f unknown %.6f h, %.6f EUR; want %+v", ns, g.held, g.busy, g.unallocated, g.unknown, g.eur, w)
		}
		delete(got, ns)
	}
	for ns, g := range got {
		t.Errorf("namespace %q in the report: %+v", ns, g)
	}
}

// sumHeld is the hours the report's namespaces held.
func sumHeld(r *Report) float64 {
	h := 0.0
	for _, n := range r.Namespaces {
		h += n.Totals.HeldHours
	}
	return h
}

// recommendation returns the report's recommendation of kind for target.
func recommendation(r *Report, kind, target string) (advice.Recommendation, bool) {
	for _, rec := range r.Recommendations {
		if rec.Kind == kind && rec.Target == target {
			return rec, true
		}
	}
	return advice.Recommendation{}, false
}

// warned reports whether a warning of r holds every one of parts.
func warned(r *Report, parts ...string) bool {
	for _, w := range r.Warnings {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(w, p)
		}
		if all {
			return true
		}
	}
	return false
}

// dayOneHand is the fleet's namespaces on a grid of step (the comment at
// the top of this file, for 30 s): train-0's end is known to the grid step
// before it, its GPU unallocated from there.
func dayOneHand(step time.Duration) map[string]nsWant {
	batch := 30 - step.Hours()
	return map[string]nsWant{
		"serving": {held: 120, eur: 240},
		"dev":     {held: 48, busy: 0, busyKnown: true, eur: 96},
		"batch":   {held: batch, busy: batch, busyKnown: true, eur: 2 * batch},
		"dev-ann": {held: 12, eur: 24},
		"dev-ben": {held: 12, eur: 24},
		"":        {unallocated: 144 - batch, eur: 2 * (144 - batch)},
	}
}

// monthly is 2.00 EUR/h over a month of 730.5 h: what freeing one of the
// day-one GPUs saves.
const monthly = 2.00 * 730.5

// checkReleaseAndDrain holds the two recommendations of the whole fleet:
// drain gpu-node-d and release dev/notebook-0, each freeing one GPU's
// 1461.00 EUR a month, on sampled figures.
func checkReleaseAndDrain(t *testing.T, r *Report) {
	t.Helper()
	for _, w := range []struct{ kind, target string }{{"drain", "gpu-node-d"}, {"release", "dev/notebook-0/jupyter"}} {
		rec, ok := recommendation(r, w.kind, w.target)
		if !ok || !near(rec.FreedEURPerMonth, monthly) || rec.Figures != "sampled" {
			t.Errorf("%s %s: %+v (found %v), want %.2f EUR/month freed on sampled figures", w.kind, w.target, rec, ok, monthly)
		}
	}
	if len(r.Recommendations) != 2 {
		t.Errorf("%d recommendations, want the drain and the release: %+v", len(r.Recommendations), r.Recommendations)
	}
}

// TestDayOneBase: on the fleet scraped every 30 s, the report is the hand
// computation (top of this file): every namespace's hours and EUR, nothing
// unknown, the drain and the release; its grid is the 30 s it measured.
func TestDayOneBase(t *testing.T) {
	r, err := dayOneReport(t, dayOneBase(t), dayOneConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	checkNamespaces(t, r, dayOneHand(30*time.Second))
	checkReleaseAndDrain(t, r)
	if !strings.Contains(r.Sampling, "a 30s grid (dcgm-exporter scraped every 30s, kube-state-metrics scraped every 30s") {
		t.Errorf("sampling %q, want a 30s grid", r.Sampling)
	}
}

// TestDayOneScrapedEveryMinute: dcgm-exporter and kube-state-metrics
// scraped every minute. The source measures it and samples on a 1 min grid
// with no flag: the hand figures (each GPU 2880 points × 60 s = 48 h; the
// Job's end known to the minute before it), none unknown. A grid of 30 s
// set by --grid reads the same to the Job's end, now known to 30 s: a point
// looks back the measured interval and a tenth (66 s), not one grid step,
// so every other point is not unknown — the scrape before holds over it.
func TestDayOneScrapedEveryMinute(t *testing.T) {
	o := dayOneOptions()
	o.ScrapeInterval = time.Minute
	st := simulateDayOne(t, o, dayOneNodes(t), nil)
	cfg := dayOneConfig(t)
	r, err := dayOneReport(t, st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkNamespaces(t, r, dayOneHand(time.Minute))
	checkReleaseAndDrain(t, r)
	if !strings.Contains(r.Sampling, "a 1m0s grid (dcgm-exporter scraped every 1m0s, kube-state-metrics scraped every 1m0s; lookbacks 1m6s and 1m6s)") {
		t.Errorf("sampling %q, want a 1m0s grid", r.Sampling)
	}
	cfg.Grid = 30 * time.Second
	r, err = dayOneReport(t, st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkNamespaces(t, r, dayOneHand(30*time.Second))
	if !strings.Contains(r.Sampling, "a 30s grid (dcgm-exporter scraped every 1m0s") {
		t.Errorf("sampling %q, want the 30s grid set", r.Sampling)
	}
}

// TestDayOneScrapesLate: one scrape in 20 stored 4 to 40 ms late, as a
// loaded scrape loop stores them. Each grid point looks back 33 s, the
// 30 s interval and a tenth, so a late scrape still counts at the next
// point and the one before reads the scrape before: no time is unknown —
// the hand figures, and the idle notebook's release, as on time.
func TestDayOneScrapesLate(t *testing.T) {
	o := dayOneOptions()
	o.ScrapeJitter = 40 * time.Millisecond
	r, err := dayOneReport(t, simulateDayOne(t, o, dayOneNodes(t), nil), dayOneConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	checkNamespaces(t, r, dayOneHand(30*time.Second))
	checkReleaseAndDrain(t, r)
	if r.Partial || r.Coverage.UnknownHours != 0 {
		t.Errorf("partial %v with %g unknown hours, want none", r.Partial, r.Coverage.UnknownHours)
	}
}

// TestDayOneHistoryShorterThanTheRange: the README's day-one command asks
// for more than the engine holds (a 7-day range over the 48 h, as 30 days
// over a Prometheus that keeps 15). The report is of the history there is,
// without --allow-partial: it begins at the first scrape's grid step —
// 23:59:30, the step the scrape at 00:00 ends, as every scrape counts for
// the step it ends — says so, and scales every per-month figure by the
// 48 h 30 s covered: the release and the drain free 2.00 EUR/h × 730.5 h =
// 1461.00 EUR a month, not 730.5/168 of the range's EUR (417.56). Each GPU
// is expected from when it is first seen: 7 × 48.00833 device-hours.
func TestDayOneHistoryShorterThanTheRange(t *testing.T) {
	cfg := dayOneConfig(t)
	cfg.Range, cfg.AllowPartial = 7*24*time.Hour, false
	r, err := dayOneReport(t, dayOneBase(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	from := dayOneStart.Add(-30 * time.Second)
	if !r.Start.Equal(from) || r.Partial {
		t.Errorf("report from %s, partial %v; want from %s, complete", r.Start, r.Partial, from)
	}
	if !warned(r, "no data before 2026-01-04T23:59:30Z", "48.0 of the 168.0 hours asked for", "scaled by the hours covered") {
		t.Errorf("warnings %q, want one saying from when the history is", r.Warnings)
	}
	if want := 7 * (48 + 30.0/3600); !near(r.Coverage.ExpectedHours, want) || r.Coverage.MissingHours != 0 {
		t.Errorf("coverage expects %g device-hours, %g missing; want %g, none", r.Coverage.ExpectedHours, r.Coverage.MissingHours, want)
	}
	checkReleaseAndDrain(t, r)
}

// TestDayOneNoKubeStateMetrics: no kube-state-metrics series. The
// time-sliced GPU of gpu-node-c, 18000 MiB or more in use and active all
// along, has no pod label and no known holder: its 48 h are unknown, never
// unallocated (96 EUR with no holder); the GPUs without pod labels whose
// memory is empty and activity 0 stay unallocated — the free MIG instance (24 h),
// node-b's GPU 1 after the Job (18 h 30 s), node-d's GPU (48 h).
// No node gets drain advice — gpu-node-d, 100 % unallocated, would, but
// without its capacity its GPU may be held by pods dcgm-exporter maps no
// pod for — and the warning says what is missing and what the report cannot
// tell. The labelled holdings keep their figures and the notebook its
// release. 48 of 336 device-hours unknown make the report partial: without
// --allow-partial the error says why.
func TestDayOneNoKubeStateMetrics(t *testing.T) {
	o := dayOneOptions()
	o.DCGMExporter.NoKubeStateMetrics = true
	st := simulateDayOne(t, o, dayOneNodes(t), nil)
	cfg := dayOneConfig(t)
	r, err := dayOneReport(t, st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := dayOneHand(30 * time.Second)
	delete(want, "dev-ann")
	delete(want, "dev-ben")
	unallocated := want[""].unallocated - 24 // less the time-sliced GPU's free half
	want[""] = nsWant{unallocated: unallocated, unknown: 48, eur: 2 * (unallocated + 48)}
	checkNamespaces(t, r, want)
	if _, ok := recommendation(r, "drain", "gpu-node-d"); ok || len(r.Recommendations) != 1 {
		t.Errorf("recommendations %+v, want the release alone", r.Recommendations)
	}
	if rec, ok := recommendation(r, "release", "dev/notebook-0/jupyter"); !ok || !near(rec.FreedEURPerMonth, monthly) {
		t.Errorf("release %+v (found %v), want %.2f EUR/month freed", rec, ok, monthly)
	}
	if !warned(r, "no kube-state-metrics series", "cannot tell a free GPU from one held by pods", "count as unknown when they show work",
		"no node gets drain advice (gpu-node-a, gpu-node-b, gpu-node-c, gpu-node-d)") {
		t.Errorf("warnings %q, want one saying what is missing and what the report cannot tell", r.Warnings)
	}
	cfg.AllowPartial = false
	if _, err := dayOneReport(t, st, cfg); err == nil || !strings.Contains(err.Error(), "no kube-state-metrics series") {
		t.Errorf("error %v, want one that names the missing kube-state-metrics", err)
	}
}

// TestDayOneNoHostname: dcgm-exporter run with -n writes no hostname label.
// The report stops with an error that names the label and how to get it;
// with the node's name relabelled into nodename (as dcgm-exporter's chart
// suggests) it reads the node from that: gpu-node-a's 3 GPUs, 3 × 96 EUR.
func TestDayOneNoHostname(t *testing.T) {
	o := dayOneOptions()
	o.DCGMExporter.NoHostname = true
	nodes := dayOneNodes(t, "gpu-node-a")
	_, err := dayOneReport(t, simulateDayOne(t, o, nodes, nil), dayOneConfig(t))
	for _, w := range []string{"no hostname label, nor Hostname, nodename or node", "which node the GPU is on", "-n (--no-hostname", "__meta_kubernetes_pod_node_name to nodename"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v, want one saying %q", err, w)
		}
	}
	nodename := &dto.LabelPair{Name: proto.String("nodename"), Value: proto.String("gpu-node-a")}
	relabel := func(s history.Sink) history.Sink {
		return sinkFunc(func(mfs []*dto.MetricFamily, at time.Time) error {
			for _, mf := range mfs {
				if strings.HasPrefix(mf.GetName(), "DCGM_") {
					for _, m := range mf.Metric {
						m.Label = append(slices.Clip(m.Label), nodename)
					}
				}
			}
			return s.AddScrape(mfs, at)
		})
	}
	r, err := dayOneReport(t, simulateDayOne(t, o, nodes, relabel), dayOneConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Nodes) != 1 || r.Nodes[0].Name != "gpu-node-a" || !near(r.Nodes[0].Totals.CostEUR, 3*96) || !near(r.Nodes[0].Totals.GPUHours, 3*48) {
		t.Errorf("nodes %+v, want gpu-node-a with 3 GPUs' 144 h and 288 EUR", r.Nodes)
	}
}

// dropGPU leaves out of the scrapes in [from, to) the DCGM_* samples of GPU
// index on node host: a series that goes and comes back.
func dropGPU(host, index string, from, to time.Time) func(history.Sink) history.Sink {
	return func(s history.Sink) history.Sink {
		return sinkFunc(func(mfs []*dto.MetricFamily, at time.Time) error {
			if at.Before(from) || !at.Before(to) {
				return s.AddScrape(mfs, at)
			}
			for _, mf := range mfs {
				if !strings.HasPrefix(mf.GetName(), "DCGM_") {
					continue
				}
				mf.Metric = slices.DeleteFunc(slices.Clone(mf.Metric), func(m *dto.Metric) bool {
					return labelOf(m, "hostname") == host && labelOf(m, "gpu") == index
				})
			}
			return s.AddScrape(mfs, at)
		})
	}
}

func labelOf(m *dto.Metric, name string) string {
	for _, p := range m.GetLabel() {
		if p.GetName() == name {
			return p.GetValue()
		}
	}
	return ""
}

// checkGaps holds the report's gaps, in order, to want (from and to as
// durations after dayOneStart), and that each is unknown.
func checkGaps(t *testing.T, r *Report, want []struct {
	gpu, holder string
	from, to    time.Duration
	hours       float64
}) {
	t.Helper()
	if len(r.Coverage.Gaps) != len(want) {
		t.Fatalf("gaps %+v, want %d", r.Coverage.Gaps, len(want))
	}
	for i, w := range want {
		g := r.Coverage.Gaps[i]
		if g.Node != "gpu-node-a" || g.GPU != w.gpu || !slices.Equal(g.Holders, []string{w.holder}) || g.Kind != "unknown" ||
			!g.From.Equal(dayOneStart.Add(w.from)) || !g.To.Equal(dayOneStart.Add(w.to)) || !near(g.Hours, w.hours) {
			t.Errorf("gap %d: %+v, want gpu-node-a GPU %s held by %s, unknown from %s to %s, %g h", i, g, w.gpu, w.holder, w.from, w.to, w.hours)
		}
	}
}

// TestDayOneGapIsItsHoldersUnknown: GPU 2 of gpu-node-a, dev/notebook-0's,
// has no samples from 20 h to 21 h 30 m (180 scrapes missed). The point at
// 20 h still reads the scrape at 19 h 59 m 30 s (33 s back); the 179 from
// 20 h 0 m 30 s to 21 h 29 m 30 s read none; the one at 21 h 30 m the
// scrape there. So 179 × 30 s = 5370 s (1.491667 h, 2.983333 EUR) are
// unknown — the notebook's, which held the GPU at its last sample: 3.1 % of
// its 48 h, above the 1 % that blocks advice. It gets no release, a warning
// names it, and the gap is listed with node, GPU, holder and from – to.
func TestDayOneGapIsItsHoldersUnknown(t *testing.T) {
	wrap := dropGPU("gpu-node-a", "2", dayOneStart.Add(20*time.Hour), dayOneStart.Add(21*time.Hour+30*time.Minute))
	r, err := dayOneReport(t, simulateDayOne(t, dayOneOptions(), dayOneNodes(t, "gpu-node-a"), wrap), dayOneConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	const unknown = 179 * 30.0 / 3600
	checkNamespaces(t, r, map[string]nsWant{
		"serving": {held: 96, busy: 96, busyKnown: true, eur: 192},
		"dev":     {held: 48 - unknown, busy: 0, busyKnown: true, unknown: unknown, eur: 96},
		"":        {},
	})
	if _, ok := recommendation(r, "release", "dev/notebook-0/jupyter"); ok {
		t.Errorf("recommendations %+v: the notebook's release despite 3.1 %% of its time unknown", r.Recommendations)
	}
	if !warned(r, "holding dev/notebook-0/jupyter on gpu-node-a", "1.5 of 48.0 hours unknown (3.1 %, above 1.0 %)") {
		t.Errorf("warnings %q, want one naming the notebook's unknown time", r.Warnings)
	}
	checkGaps(t, r, []struct {
		gpu, holder string
		from, to    time.Duration
		hours       float64
	}{{"2", "dev/notebook-0/jupyter", 20 * time.Hour, 21*time.Hour + 29*time.Minute + 30*time.Second, unknown}})
	// The renderers list it with its holder: Markdown's gaps table, the
	// CSV's gap row (its hours unknown, its holder in the evidence).
	for format, want := range map[string]string{
		FormatMarkdown: "| dev/notebook-0/jupyter | 2026-01-05T20:00:00Z | 2026-01-05T21:29:30Z | 1.5 | unknown |",
		FormatCSV:      ",unknown,,,,held by dev/notebook-0/jupyter,,1.491667,,,,,2026-01-05T20:00:00Z,2026-01-05T21:29:30Z,",
	} {
		var out bytes.Buffer
		if err := render.Render(&out, r, format); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), want) {
			t.Errorf("%s lacks %q", format, want)
		}
	}
}

// TestDayOneExporterOutage: gpu-node-a's dcgm-exporter stopped from 10 h to
// 13 h. Each of its GPUs has 359 grid points without a sample (10 h 0 m 30 s
// to 12 h 59 m 30 s): 10770 s, 2.991667 h, its holder's unknown time —
// 6.2 % of 48 h. The warnings name the holders, llm-serve-1 among them,
// not only the node; the gaps list each GPU with its holder.
func TestDayOneExporterOutage(t *testing.T) {
	nodes := []*sim.Scenario{dayOneVariant(t, "gpu-node-a", "workload: notebook}\n", "workload: notebook}\nevents:\n  - {at: 10h, exporter: stopped, for: 3h}\n")}
	r, err := dayOneReport(t, simulateDayOne(t, dayOneOptions(), nodes, nil), dayOneConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	const unknown = 359 * 30.0 / 3600
	checkNamespaces(t, r, map[string]nsWant{
		"serving": {held: 2 * (48 - unknown), busy: 2 * (48 - unknown), busyKnown: true, unknown: 2 * unknown, eur: 192},
		"dev":     {held: 48 - unknown, busy: 0, busyKnown: true, unknown: unknown, eur: 96},
		"":        {},
	})
	for _, h := range []string{"serving/llm-serve-0/server", "serving/llm-serve-1/server", "dev/notebook-0/jupyter"} {
		if !warned(r, "holding "+h+" on gpu-node-a", "3.0 of 48.0 hours unknown (6.2 %") {
			t.Errorf("warnings %q, want one naming %s", r.Warnings, h)
		}
	}
	to := 12*time.Hour + 59*time.Minute + 30*time.Second
	checkGaps(t, r, []struct {
		gpu, holder string
		from, to    time.Duration
		hours       float64
	}{
		{"0", "serving/llm-serve-0/server", 10 * time.Hour, to, unknown},
		{"1", "serving/llm-serve-1/server", 10 * time.Hour, to, unknown},
		{"2", "dev/notebook-0/jupyter", 10 * time.Hour, to, unknown},
	})
}

// TestDayOneReplicasNotRenamed: gpu-node-c time-sliced ×4 without renamed
// resources: the device plugin offers 4 nvidia.com/gpu on its one GPU, and
// dcgm-exporter labels only the last of the sharing pods (dev-ben/nb-0).
// Capacity above the node's GPUs gives it away: a warning, and the GPU
// split as for nvidia.com/gpu.shared — each notebook 1 of 4 replicas, 12 h
// and 24 EUR (not dev-ben 48 h and 96 EUR), the 2 free replicas 24 h
// unallocated — an allocation share.
func TestDayOneReplicasNotRenamed(t *testing.T) {
	nodes := []*sim.Scenario{dayOneVariant(t, "gpu-node-c", "nvidia.com/gpu.shared,", "nvidia.com/gpu,", "    replicas: 4\n", "    replicas: 4\n    resource: nvidia.com/gpu\n")}
	r, err := dayOneReport(t, simulateDayOne(t, dayOneOptions(), nodes, nil), dayOneConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	checkNamespaces(t, r, map[string]nsWant{
		"dev-ann": {held: 12, eur: 24},
		"dev-ben": {held: 12, eur: 24},
		"":        {unallocated: 24, eur: 48},
	})
	for _, h := range r.Holdings {
		if h.Kind != "allocation share" {
			t.Errorf("holding %s: %s figures, want allocation share", h.Name(), h.Kind)
		}
	}
	if !warned(r, "node gpu-node-c offers 4 nvidia.com/gpu on 1 GPU(s): time-slicing without renamed resources", "allocation share") {
		t.Errorf("warnings %q, want one about the replicas", r.Warnings)
	}
}

// TestDayOneProfilingOff: dcgm-exporter without its profiling fields, on
// gpu-node-a and gpu-node-b: no DCGM_FI_PROF_GR_ENGINE_ACTIVE. The whole
// GPUs' activity is DCGM_FI_DEV_GPU_UTIL ÷ 100 (the trainers 85–97 %: busy
// 48 h each and train-0's 30 h less a grid step; the idle notebook 0 %:
// idle; the free MIG instance and GPU 1 after the Job unallocated), and the
// warning names the missing field and the fallback; the MIG GPU, where
// GPU_UTIL is not supported, has no activity signal: embed-0's 24 h are
// unknown, its own. 24 of 240 device-hours unknown: without --allow-partial
// the error names the missing field.
func TestDayOneProfilingOff(t *testing.T) {
	o := dayOneOptions()
	o.DCGMExporter.NoProfiling = true
	st := simulateDayOne(t, o, dayOneNodes(t, "gpu-node-a", "gpu-node-b"), nil)
	cfg := dayOneConfig(t)
	r, err := dayOneReport(t, st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	batch := 30 - 30.0/3600
	checkNamespaces(t, r, map[string]nsWant{
		"serving": {held: 96, busy: 96, busyKnown: true, unknown: 24, eur: 240},
		"dev":     {held: 48, busy: 0, busyKnown: true, eur: 96},
		"batch":   {held: batch, busy: batch, busyKnown: true, eur: 2 * batch},
		"":        {unallocated: 72 - batch, eur: 2 * (72 - batch)},
	})
	if !warned(r, "5 of 5 GPUs have no graphics-engine activity (DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO, DCGM_FI_PROF_GR_ENGINE_ACTIVE up to 4.8", "the activity of 4 is GPU utilization (DCGM_FI_DEV_GPU_UTIL_RATIO, DCGM_FI_DEV_GPU_UTIL ÷ 100 up to 4.8) instead", "1 are in MIG mode", "instances' time is unknown") {
		t.Errorf("warnings %q, want one naming the missing field and the fallback", r.Warnings)
	}
	cfg.AllowPartial = false
	if _, err := dayOneReport(t, st, cfg); err == nil || !strings.Contains(err.Error(), "no graphics-engine activity (DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO, DCGM_FI_PROF_GR_ENGINE_ACTIVE") {
		t.Errorf("error %v, want one naming DCGM_FI_PROF_GR_ENGINE_ACTIVE", err)
	}
}

// TestDayOneTeamLabelWithoutPodLabels: --team-label=team where
// kube-state-metrics exports no such pod label (kube_pod_labels carries only
// allow-listed labels): a warning says teams fall back to namespaces and
// how to have the label. Where one pod has it (label_team="research" on
// dev/notebook-0), its holding is that team's and no warning is given.
func TestDayOneTeamLabelWithoutPodLabels(t *testing.T) {
	cfg := dayOneConfig(t)
	cfg.TeamLabel = "team"
	r, err := dayOneReport(t, dayOneBase(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	const want = "--team-label=team: no kube_pod_labels series with label_team"
	if !warned(r, want, "--metric-labels-allowlist=pods=[team]") {
		t.Errorf("warnings %q, want one saying %q", r.Warnings, want)
	}
	b := NewStoreBuilder()
	dayOneStore(t, b, dayOneOptions(), dayOneNodes(t, "gpu-node-a"), nil)
	team := labels.FromStrings("__name__", "kube_pod_labels", "namespace", "dev", "pod", "notebook-0", "label_team", "research")
	for at := dayOneStart; !at.After(dayOneEnd); at = at.Add(30 * time.Second) {
		if err := b.Append(team, at.UnixMilli(), 1); err != nil {
			t.Fatal(err)
		}
	}
	if r, err = dayOneReport(t, b.Store(), cfg); err != nil {
		t.Fatal(err)
	}
	if warned(r, want) {
		t.Errorf("warnings %q with the label there", r.Warnings)
	}
	for _, h := range r.Holdings {
		if h.Pod == "notebook-0" && h.Team != "research" || h.Pod != "notebook-0" && h.Team != h.Namespace {
			t.Errorf("holding %s in team %q", h.Name(), h.Team)
		}
	}
}

// TestDayOneCSVFigures: the CSV's figures column says for each
// recommendation which kind of number its evidence is — sampled, for the
// drain of gpu-node-d and the release of dev/notebook-0, both on whole
// GPUs' sampled rows.
func TestDayOneCSVFigures(t *testing.T) {
	r, err := dayOneReport(t, dayOneBase(t), dayOneConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := render.Render(&out, r, FormatCSV); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&out).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	figures := slices.Index(rows[0], "figures")
	got := map[string]string{}
	for _, row := range rows[1:] {
		if row[0] == "recommendation" {
			got[row[1]] = row[figures]
		}
	}
	if want := map[string]string{"gpu-node-d": "sampled", "dev/notebook-0/jupyter": "sampled"}; !maps.Equal(got, want) {
		t.Errorf("recommendations' figures %v, want %v", got, want)
	}
}

// labelled hands scrapes on with the label pairs added to every sample.
func labelled(pairs ...string) func(history.Sink) history.Sink {
	var add []*dto.LabelPair
	for i := 0; i+1 < len(pairs); i += 2 {
		add = append(add, &dto.LabelPair{Name: proto.String(pairs[i]), Value: proto.String(pairs[i+1])})
	}
	return func(s history.Sink) history.Sink {
		return sinkFunc(func(mfs []*dto.MetricFamily, at time.Time) error {
			for _, mf := range mfs {
				for _, m := range mf.Metric {
					m.Label = append(slices.Clip(m.Label), add...)
				}
			}
			return s.AddScrape(mfs, at)
		})
	}
}

// TestDayOneGridPerClusterAndJob: one engine, two clusters scraped
// differently — east (gpu-node-a) every 30 s; west two jobs, gpu-node-b's
// every minute and gpu-node-d's every 30 s. Each cluster's grid follows its
// own: east 30 s, looking back 33 s; west on its fastest job's 30 s, looking
// back its slowest's minute and a tenth (66 s), so that gpu-node-b's
// samples hold over the point between two. Nothing is unknown: the hand
// figures of the fleet without gpu-node-c, train-0's end known to 30 s —
// its last labelled scrape, at 29 h 59 m, holds over the point at
// 29 h 59 m 30 s — and the scrape at 30 h, which labels no pod, is the
// latest at the point at 30 h: the pod that left is not held over it
// (deviceReading.resolve).
func TestDayOneGridPerClusterAndJob(t *testing.T) {
	b := NewStoreBuilder()
	dayOneStore(t, b, dayOneOptions(), dayOneNodes(t, "gpu-node-a"), labelled("cluster", "east", "job", "dcgm-exporter"))
	slow := dayOneOptions()
	slow.ScrapeInterval = time.Minute
	dayOneStore(t, b, slow, dayOneNodes(t, "gpu-node-b"), labelled("cluster", "west", "job", "dcgm-exporter"))
	dayOneStore(t, b, dayOneOptions(), dayOneNodes(t, "gpu-node-d"), labelled("cluster", "west", "job", "dcgm-exporter-fast"))
	r, err := dayOneReport(t, b.Store(), dayOneConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	want := dayOneHand(30 * time.Second)
	delete(want, "dev-ann")
	delete(want, "dev-ben")
	unallocated := want[""].unallocated - 24 // no time-sliced GPU
	want[""] = nsWant{unallocated: unallocated, eur: 2 * unallocated}
	checkNamespaces(t, r, want)
	for _, w := range []string{
		`cluster "east": a 30s grid (dcgm-exporter scraped every 30s, kube-state-metrics scraped every 30s; lookbacks 33s and 33s)`,
		`cluster "west": a 30s grid (dcgm-exporter scraped every 1m0s, kube-state-metrics scraped every 1m0s; lookbacks 1m6s and 1m6s)`,
	} {
		if !strings.Contains(r.Sampling, w) {
			t.Errorf("sampling %q lacks %q", r.Sampling, w)
		}
	}
}

// TestHistoryShorterThanTheRangeLedger: the ledger source over a fleet
// whose data begins 48 h into a 168 h range (the fake engine's first
// point, at 48 h, reads the hour before it): not partial, the report from
// 47 h, no previous period, and the release of research/forgotten (an H100
// at 1.50 EUR/h) freeing 1.50 × 730.5 = 1095.75 EUR a month — scaled by the
// 121 h covered, not the 168 asked for (789.20).
func TestHistoryShorterThanTheRangeLedger(t *testing.T) {
	start := testEnd.Add(-7 * 24 * time.Hour)
	fleet := testFleet()
	for i := range fleet {
		fleet[i].from = start.Add(48 * time.Hour)
	}
	r, err := generateFrom(context.Background(), testConfig(), fleetQuerier(fleet, time.Hour), discard())
	if err != nil {
		t.Fatal(err)
	}
	if !r.Start.Equal(start.Add(47*time.Hour)) || r.Partial || r.Fleet.Previous != nil {
		t.Errorf("report from %s, partial %v, previous %+v; want from %s, complete, none", r.Start, r.Partial, r.Fleet.Previous, start.Add(47*time.Hour))
	}
	if !warned(r, "no data before 2026-01-06T23:00:00Z", "121.0 of the 168.0 hours asked for") {
		t.Errorf("warnings %q, want one saying from when", r.Warnings)
	}
	if rec, ok := recommendation(r, "release", "research/forgotten/main"); !ok || !near(rec.FreedEURPerMonth, 1.5*730.5) {
		t.Errorf("release %+v (found %v), want %.2f EUR/month freed", rec, ok, 1.5*730.5)
	}
}

// TestDayOneBackToBackPods: gpu-node-d runs a Job whose pods follow each
// other on its GPU every 10 minutes (ci/build-0 … build-288, training: the
// last starts at 48 h, in the range's last scrape). A
// point's lookback, 33 s, holds the scrape before it too, so at each change
// of pod the one that left and the one that came are both in it; the
// series with a sample in the last 30 s are the point's, so the GPU has
// one holder at every point: 48 h held by ci, 96 EUR, nothing unknown —
// where reading every series of the lookback would make the 287 changes'
// points, 287 × 30 s = 2.39 h, unknown.
func TestDayOneBackToBackPods(t *testing.T) {
	nodes := []*sim.Scenario{dayOneVariant(t, "gpu-node-d", "  - model: NVIDIA H100 80GB HBM3\n", "  - model: NVIDIA H100 80GB HBM3\n"+
		"workloads:\n  - {name: build, pattern: training, fb_mib: 20000}\n"+
		"jobs:\n  - {namespace: ci, name: build, container: main, resource: nvidia.com/gpu, device: {gpu: 0}, workload: build, every: 10m, run: 10m}\n")}
	r, err := dayOneReport(t, simulateDayOne(t, dayOneOptions(), nodes, nil), dayOneConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	checkNamespaces(t, r, map[string]nsWant{"ci": {held: 48, busy: 48, busyKnown: true, eur: 96}, "": {}})
	if len(r.Holdings) != 289 {
		t.Errorf("%d holdings, want the Job's 289 pods", len(r.Holdings))
	}
}

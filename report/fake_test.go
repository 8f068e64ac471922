package report

import (
	"cmp"
	"context"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gputally/gputally/dcgmnames"
	"github.com/gputally/gputally/report/engine"
	"github.com/prometheus/common/model"
)

// fakeSeries is one series a fake Prometheus answers with: at gives its value
// at each evaluation time (NaN: no point), already aggregated as the report's
// query asks.
type fakeSeries struct {
	metric string
	labels map[string]string
	at     func(t time.Time) float64
}

// fakeQuerier answers a range query with the series whose metric the query
// selects. It records the queries. It is safe for concurrent use.
type fakeQuerier struct {
	series  []fakeSeries
	err     error
	mu      sync.Mutex
	queries []string
}

func (f *fakeQuerier) QueryRange(_ context.Context, q string, start, end time.Time, step time.Duration) (model.Matrix, []string, error) {
	f.mu.Lock()
	f.queries = append(f.queries, q)
	f.mu.Unlock()
	if f.err != nil {
		return nil, nil, f.err
	}
	if strings.Contains(q, " offset ") {
		return f.busyAtOnce(start, end, step), nil, nil
	}
	// The query's first metric is the one it reads (the ledger queries name
	// gputally_gpu_seconds_total again later, to gate new series).
	first := ""
	for _, s := range f.series {
		if i := metricAt(q, s.metric); i >= 0 && (first == "" || i < metricAt(q, first)) {
			first = s.metric
		}
	}
	// The window probe: ranges exclude their start, as Prometheus 3's.
	if strings.Contains(q, "vector(1)") {
		return model.Matrix{{Metric: model.Metric{}, Values: []model.SamplePair{{Timestamp: model.TimeFromUnixNano(start.UnixNano()), Value: 2}}}}, nil, nil
	}
	// The fake delivers every series once: the search for copies finds none.
	if strings.HasPrefix(q, "count without (") {
		return nil, nil, nil
	}
	// The ledger counters' last_over_time is their cumulative value: the
	// per-bucket values summed from fakeOrigin (read through the dedupe's
	// `max without (…)` or not), each landing at its bucket's end (so a read
	// of a bucket at a finer step sees the counter flat, then its bucket's
	// value at the end); they never reset. A gauge's last_over_time is its value.
	cumulative := strings.Contains(q, "last_over_time(gputally_gpu_seconds_total") || strings.Contains(q, "last_over_time(gputally_cost_eur_total") ||
		strings.Contains(q, "last_over_time(gputally_energy_joules_total")
	resets := strings.Contains(q, "resets(gputally_")
	var m model.Matrix
	for _, s := range f.series {
		if s.metric != first {
			continue
		}
		ss := &model.SampleStream{Metric: model.Metric{}}
		for k, v := range s.labels {
			ss.Metric[model.LabelName(k)] = model.LabelValue(v)
		}
		for t := start; !t.After(end); t = t.Add(step) {
			v := s.at(t)
			switch {
			case cumulative:
				// The bucket of t is the one ending at the first whole
				// fakeBucket from fakeOrigin at or after t.
				bucketEnd := fakeOrigin.Add((t.Sub(fakeOrigin) + fakeBucket - 1) / fakeBucket * fakeBucket)
				v = s.at(bucketEnd)
				if !math.IsNaN(v) {
					v = 0
					for u := bucketEnd; u.After(fakeOrigin); u = u.Add(-fakeBucket) {
						if w := s.at(u); !math.IsNaN(w) && !u.After(t) {
							v += w
						}
					}
				}
			case resets && !math.IsNaN(v):
				v = 0
			}
			if !math.IsNaN(v) {
				ss.Values = append(ss.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(t.UnixNano()), Value: model.SampleValue(v)})
			}
		}
		if len(ss.Values) > 0 {
			m = append(m, ss)
		}
	}
	return maxOfCopies(m), nil, nil
}

// maxOfCopies merges the series of m with the same labels (two holders of
// one time-sliced GPU give two gputally_gpu_info series of it) into one, the
// max at each time, as the report's `max by (…)` queries do on an engine:
// no engine answers with one series twice.
func maxOfCopies(m model.Matrix) model.Matrix {
	first := map[model.Fingerprint]*model.SampleStream{}
	out := m[:0]
	for _, s := range m {
		f := first[s.Metric.Fingerprint()]
		if f == nil {
			first[s.Metric.Fingerprint()] = s
			out = append(out, s)
			continue
		}
		at := map[model.Time]int{}
		for i, p := range f.Values {
			at[p.Timestamp] = i
		}
		for _, p := range s.Values {
			if i, ok := at[p.Timestamp]; ok {
				f.Values[i].Value = max(f.Values[i].Value, p.Value)
			} else {
				f.Values = append(f.Values, p)
			}
		}
		slices.SortFunc(f.Values, func(a, b model.SamplePair) int { return cmp.Compare(a.Timestamp, b.Timestamp) })
	}
	return out
}

// busyAtOnce answers the report's query of devices busy at once: per
// namespace and MIG profile, the busy ledger series with seconds at each
// evaluation time (a fixture's busy share is spread over its hours, so a
// device busy at all in an hour is busy in every interval of it).
func (f *fakeQuerier) busyAtOnce(start, end time.Time, step time.Duration) model.Matrix {
	type key struct{ ns, profile string }
	count := map[key]map[time.Time]int{}
	for _, s := range f.series {
		if s.metric != "gputally_gpu_seconds_total" || s.labels["state"] != "busy" || s.labels["namespace"] == "" {
			continue
		}
		k := key{s.labels["namespace"], s.labels["GPU_I_PROFILE"]}
		for t := start; !t.After(end); t = t.Add(step) {
			if v := s.at(t); v > 0 {
				if count[k] == nil {
					count[k] = map[time.Time]int{}
				}
				count[k][t]++
			}
		}
	}
	var m model.Matrix
	for k, byT := range count {
		ss := &model.SampleStream{Metric: model.Metric{"namespace": model.LabelValue(k.ns)}}
		if k.profile != "" {
			ss.Metric["GPU_I_PROFILE"] = model.LabelValue(k.profile)
		}
		for t := start; !t.After(end); t = t.Add(step) {
			if n := byT[t]; n > 0 {
				ss.Values = append(ss.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(t.UnixNano()), Value: model.SampleValue(n)})
			}
		}
		m = append(m, ss)
	}
	return m
}

// fakeOrigin is where the fake ledger counters start from 0: before any
// range the tests ask for.
var fakeOrigin = testEnd.Add(-30 * 24 * time.Hour)

// fakeBucket is the step the fake ledger counters' per-bucket values are of:
// every fake fleet is read in hours.
const fakeBucket = time.Hour

// metricAt returns where q first selects metric, -1 if nowhere.
func metricAt(q, metric string) int {
	i, j := strings.Index(q, metric+"["), strings.Index(q, metric+"{")
	if i < 0 || j >= 0 && j < i {
		return j
	}
	return i
}

// fakeGPU is one GPU of the test fleet, held by at most one container.
type fakeGPU struct {
	uuid, model, host  string
	index              string  // the gpu label; empty: "0"
	ns, pod, container string  // empty: unallocated
	rateEURPerHour     float64 // the GPU's cost rate
	facilityW          float64 // its power × PUE, W: joules per device-second; 0: no energy series (not metered)
	busyShare          float64 // share of each hour the holder is busy
	activity, fbMiB    float64 // constant per resolution step
	hasActivity, hasFB bool
	resource, sharing  string
	from               time.Time // zero: from the start
	to                 time.Time // its last data; zero: to the end
}

func identity(g fakeGPU) map[string]string {
	index := cmp.Or(g.index, "0")
	return map[string]string{"gpu": index, "UUID": g.uuid, "pci_bus_id": "00000000:07:00.0", "device": "nvidia0", "modelName": g.model, "Hostname": g.host}
}

func with(m map[string]string, kv ...string) map[string]string {
	out := make(map[string]string, len(m)+len(kv)/2)
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// fakeSeriesFor returns what Prometheus would answer for g: per step the
// increase of the ledger counters; per resolution step activity and framebuffer.
func fakeSeriesFor(g fakeGPU, step time.Duration) []fakeSeries {
	id := identity(g)
	live := func(f func(t time.Time) float64) func(t time.Time) float64 {
		return func(t time.Time) float64 {
			if !g.from.IsZero() && t.Before(g.from) || !g.to.IsZero() && t.After(g.to) {
				return math.NaN()
			}
			return f(t)
		}
	}
	holder := []string{"namespace", g.ns, "pod", g.pod, "container", g.container}
	secs := step.Seconds()
	var out []fakeSeries
	states := map[string]float64{"busy": g.busyShare, "idle": 1 - g.busyShare, "unallocated": 0}
	if g.pod == "" {
		states = map[string]float64{"unallocated": 1}
	}
	for st, share := range states {
		h := holder
		if st == "unallocated" {
			h = []string{"namespace", "", "pod", "", "container", ""}
		}
		l := with(id, append(h, "state", st)...)
		out = append(out,
			fakeSeries{"gputally_gpu_seconds_total", l, live(func(time.Time) float64 { return share * secs })},
			fakeSeries{"gputally_cost_eur_total", l, live(func(time.Time) float64 { return share * secs * g.rateEURPerHour / 3600 })},
		)
		if g.facilityW > 0 {
			out = append(out, fakeSeries{"gputally_energy_joules_total", l, live(func(time.Time) float64 { return share * secs * g.facilityW })})
		}
	}
	out = append(out, fakeSeries{"gputally_gpu_info", with(id, "mig_mode", "disabled"), live(func(time.Time) float64 { return 1 })})
	if g.pod == "" {
		return out
	}
	pl := with(id, holder...)
	out = append(out, fakeSeries{"gputally_gpu_allocation", with(pl, "resource", g.resource, "sharing", g.sharing), live(func(time.Time) float64 { return 1 })})
	// Under the exporter's default names, dcgm-exporter 4.10's, in base
	// units: the fake answers a query with the series of the first metric it
	// names, not evaluating the conversion of the old names' terms.
	if g.hasActivity {
		out = append(out, fakeSeries{dcgmnames.GREngineActive.New, pl, live(func(time.Time) float64 { return g.activity })})
	}
	if g.hasFB {
		out = append(out, fakeSeries{dcgmnames.FBUsed.New, pl, live(func(time.Time) float64 { return g.fbMiB * (1 << 20) })})
	}
	return out
}

// testFleet is the fleet the hand-computed tests use (see
// TestRecommendationsHandComputed): six H100 on node-a at 560 W at the
// facility, and an A100 on node-spare without energy series (a GPU whose
// power is not read).
func testFleet() []fakeGPU {
	const h100, a100 = "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-40GB"
	busy := func(uuid, ns, pod string, share, act, fb float64) fakeGPU {
		return fakeGPU{uuid: uuid, model: h100, host: "node-a", ns: ns, pod: pod, container: "main", rateEURPerHour: 1.5, facilityW: 560,
			busyShare: share, activity: act, fbMiB: fb, hasActivity: true, hasFB: true, resource: "nvidia.com/gpu", sharing: "exclusive"}
	}
	fleet := []fakeGPU{
		busy("GPU-0", "inference", "web-0", 1, 0.1, 6144),
		busy("GPU-1", "dev", "dev-a", 0.1, 0.09, 2000),
		busy("GPU-2", "dev", "dev-b", 0.1, 0.09, 2000),
		busy("GPU-3", "dev", "dev-c", 0.1, 0.09, 2000),
		busy("GPU-4", "research", "forgotten", 0, 0, 500),
		busy("GPU-5", "training", "trainer", 1, 0.95, 70000),
		{uuid: "GPU-6", model: a100, host: "node-spare", rateEURPerHour: 2.5},
	}
	for i := range 6 {
		fleet[i].index = strconv.Itoa(i)
	}
	return fleet
}

func fleetQuerier(gpus []fakeGPU, step time.Duration) *fakeQuerier {
	f := &fakeQuerier{}
	hosts := map[string]bool{}
	for _, g := range gpus {
		f.series = append(f.series, fakeSeriesFor(g, step)...)
		hosts[g.host] = true
	}
	// Each node's exporter, scraped every 5 minutes: 13 scrapes in an hour
	// with both ends, the answer to max(count_over_time(gputally_up[1h])).
	for h := range hosts {
		f.series = append(f.series, fakeSeries{"gputally_up", map[string]string{"backend": "sim", "instance": h}, func(time.Time) float64 { return 13 }})
	}
	return f
}

// generateFrom is Generate over the ledger reader on q, wired from cfg as Run
// wires it.
func generateFrom(ctx context.Context, cfg Config, q engine.Querier, logger *slog.Logger) (*Report, error) {
	return Generate(ctx, cfg, cfg.ledger(q), logger)
}

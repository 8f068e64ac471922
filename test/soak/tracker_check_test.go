//go:build soak

package soak

import (
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// ledger builds a scrape of gputally_gpu_seconds_total series: each entry is
// pod (empty: no holder), state and value, all on GPU "G".
func ledger(series ...any) map[string]*dto.MetricFamily {
	f := &dto.MetricFamily{Name: proto.String("gputally_gpu_seconds_total"), Type: dto.MetricType_COUNTER.Enum()}
	for i := 0; i < len(series); i += 3 {
		f.Metric = append(f.Metric, &dto.Metric{
			Label: []*dto.LabelPair{
				{Name: proto.String("UUID"), Value: proto.String("G")},
				{Name: proto.String("pod"), Value: proto.String(series[i].(string))},
				{Name: proto.String("state"), Value: proto.String(series[i+1].(string))},
			},
			Counter: &dto.Counter{Value: proto.Float64(series[i+2].(float64))},
		})
	}
	return map[string]*dto.MetricFamily{"gputally_gpu_seconds_total": f}
}

// up adds gputally_up with value v to a scrape.
func up(v float64, fams map[string]*dto.MetricFamily) map[string]*dto.MetricFamily {
	fams["gputally_up"] = &dto.MetricFamily{Name: proto.String("gputally_up"), Type: dto.MetricType_GAUGE.Enum(),
		Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: proto.Float64(v)}}}}
	return fams
}

// ended returns one scrape per value of GPU G's unallocated seconds, while
// holder a's busy series stays at busy: a holder that ended, retained. With
// upValue ≥ 0 each scrape also carries gputally_up.
func ended(busy, upValue float64, unallocated ...float64) []map[string]*dto.MetricFamily {
	var scrapes []map[string]*dto.MetricFamily
	for _, v := range unallocated {
		s := ledger("a", "busy", busy, "", "unallocated", v)
		if upValue >= 0 {
			s = up(upValue, s)
		}
		scrapes = append(scrapes, s)
	}
	return scrapes
}

// TestTrackerRules feeds the tracker scrapes one second apart (retention 5 s,
// slack 2 s) and checks that each rule of the soak fails when broken and
// holds when kept.
func TestTrackerRules(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sec := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }
	cases := []struct {
		name    string
		scrapes []map[string]*dto.MetricFamily
		want    string // a problem containing this; empty: none
	}{{
		name: "a holder ends, is retained 6 s and leaves; the GPU's seconds grow by the time",
		scrapes: slices.Concat(
			ended(10, -1, 0),
			ended(11, -1, 0, 1, 2, 3, 4, 5, 6),
			[]map[string]*dto.MetricFamily{
				ledger("", "unallocated", 7.0),
				ledger("b", "idle", 1.0, "", "unallocated", 7.0),
			},
		),
	}, {
		name: "a counter decreases",
		scrapes: []map[string]*dto.MetricFamily{
			ledger("a", "busy", 10.0), ledger("a", "busy", 11.0), ledger("a", "busy", 10.5),
		},
		want: "decreased from 11 to 10.5",
	}, {
		name:    "an ended holder stays past retention and slack",
		scrapes: ended(1, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9),
		want:    "still exported 8s after its series stopped growing",
	}, {
		name: "an ended holder whose window ends in a backend outage leaves at the first sample after it",
		scrapes: slices.Concat(
			ended(1, -1, 0, 1),
			ended(1, 0, 1, 1, 1, 1, 1, 1, 1, 1), // the backend fails 8 s
			ended(1, 1, 9, 10),
			[]map[string]*dto.MetricFamily{up(1, ledger("", "unallocated", 12.0))},
		),
	}, {
		name: "an ended holder stays past the first samples after a backend outage",
		scrapes: slices.Concat(
			ended(1, -1, 0, 1),
			ended(1, 0, 1, 1, 1, 1, 1, 1, 1, 1), // the backend fails 8 s
			ended(1, 1, 9, 10, 11, 13),
		),
		want: "still exported 12s after its series stopped growing",
	}, {
		name: "an ended holder leaves before the retention window",
		scrapes: slices.Concat(
			ended(1, -1, 0),
			ended(2, -1, 0, 1),
			[]map[string]*dto.MetricFamily{ledger("", "unallocated", 2.0), ledger("", "unallocated", 3.0)},
		),
		want: "left at most 2s after",
	}, {
		name: "the GPU's seconds lag the elapsed time",
		scrapes: []map[string]*dto.MetricFamily{
			ledger("a", "busy", 1.0), ledger("a", "busy", 2.0), ledger("a", "busy", 2.5),
		},
		want: "accrued 1.500 device-seconds in 2.000 s",
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := newTracker(5*time.Second, 2*time.Second)
			for i, s := range c.scrapes {
				tr.observe(sec(i), s)
			}
			tr.checkGrowth(0.01)
			got := strings.Join(tr.problems, "\n")
			if c.want == "" && got != "" || !strings.Contains(got, c.want) {
				t.Errorf("problems:\n%s\nwant one containing %q", got, c.want)
			}
		})
	}
}

// TestTrackerCountsLeftSeries: a GPU's growth includes series that left (an
// ended holder's final value) and the full value of series that appeared
// after the first scrape, but not what a series held before the soak looked.
func TestTrackerCountsLeftSeries(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tr := newTracker(time.Hour, time.Second)
	tr.observe(t0, ledger("a", "busy", 100.0))
	tr.observe(t0.Add(time.Second), ledger("a", "busy", 100.5, "b", "idle", 0.5))
	tr.observe(t0.Add(2*time.Second), ledger("b", "idle", 1.5))
	if got := tr.gpuGrowth()["G"]; got != 2 {
		t.Errorf("growth %g, want 0.5 (a) + 1.5 (b) = 2", got)
	}
}

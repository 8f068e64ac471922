package ledger

import (
	"math"
	"testing"
	"time"

	pmodel "github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/gputally/gputally/report/engine"
	"github.com/gputally/gputally/report/model"
)

// TestStretchCarriesNewSeries: price books applied after pods began, their
// EUR series starting from 0 later than their seconds series, scraped every
// 30 s on the minute. Pod p on GPU-0: seconds from 0h10m, EUR from 2h20m.
// Pod q on GPU-1: seconds from 0h10m to 0h50m, then no longer exported; EUR
// from 2h40m. Each EUR series' first bucket counts from 0 because its
// seconds series was new in the range — in a stretch before, one that no
// longer holds the seconds series too. Hand-computed: p 4h − 10m = 13,800
// device-seconds and (4h − 2h20m) × 2.70 EUR/h = 4.50 EUR; q 2,400
// device-seconds and (4h − 2h40m) × 2.70 EUR/h = 3.60 EUR. Pod r on GPU-2
// has an EUR series from 1h30m and no seconds series: 6.75 EUR. The energy
// series follow the same rule: p's from 3h (its first power reading), 3,600 s
// × 560 W = 2,016,000 J; q's from 3h20m, 2,400 × 560 = 1,344,000 J; r has
// none, and is not metered (not 0 J as if measured).
func TestStretchCarriesNewSeries(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	end := start.Add(4 * time.Hour)
	type series struct {
		gpu, pod           string
		secsFrom, secsTo   time.Duration // the seconds series is scraped in (secsFrom, secsTo]
		eurFrom            time.Duration
		joulesFrom         time.Duration // 0: no energy series
		wantSeconds, wantE float64
		wantJ              float64
	}
	all := []series{
		{"GPU-0", "p", 10 * time.Minute, 5 * time.Hour, 140 * time.Minute, 3 * time.Hour, 13800, 4.5, 2_016_000},
		{"GPU-1", "q", 10 * time.Minute, 50 * time.Minute, 160 * time.Minute, 200 * time.Minute, 2400, 3.6, 1_344_000},
		{"GPU-2", "r", 0, 0, 90 * time.Minute, 0, 0, 6.75, 0}, // no seconds series: its EUR count from 0
	}
	b := engine.NewStoreBuilder()
	for _, sr := range all {
		base := []string{"UUID", sr.gpu, "gpu", "0", "Hostname", "node-0", "modelName", "NVIDIA H100 80GB HBM3",
			"namespace", "ml", "pod", sr.pod, "container", "c", "state", "busy"}
		for ts := start.Add(-time.Hour); !ts.After(end); ts = ts.Add(30 * time.Second) {
			off := ts.Sub(start)
			if off > sr.secsFrom && off <= sr.secsTo {
				if err := b.Append(labels.FromStrings(append([]string{"__name__", secondsCounter}, base...)...), ts.UnixMilli(), (off - sr.secsFrom).Seconds()); err != nil {
					t.Fatal(err)
				}
			}
			if off > sr.eurFrom {
				if err := b.Append(labels.FromStrings(append([]string{"__name__", eurCounter}, base...)...), ts.UnixMilli(), (off-sr.eurFrom).Seconds()*eurPerSecond); err != nil {
					t.Fatal(err)
				}
			}
			if sr.joulesFrom > 0 && off > sr.joulesFrom {
				if err := b.Append(labels.FromStrings(append([]string{"__name__", energyCounter}, base...)...), ts.UnixMilli(), (off-sr.joulesFrom).Seconds()*joulesPerSecond); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	q := engine.NewEmbeddedQuerier(b.Store(), time.Minute, discard())
	for _, stretch := range []int{0, 1, 2} {
		_, l := ledgerOver(t, q, start, end, time.Hour, stretch)
		for _, sr := range all {
			var seconds, eur, joules float64
			metered := false
			for k, e := range l {
				if k.Holder.Pod == sr.pod {
					seconds += e.Seconds[model.StateBusy]
					eur += e.EUR[model.StateBusy]
					joules += e.Joules[model.StateBusy]
					metered = metered || e.Metered
				}
			}
			if math.Abs(joules-sr.wantJ) > 1e-6 || metered != (sr.joulesFrom > 0) {
				t.Errorf("stretch %d, pod %s: %.3f busy J (metered %t), want %.0f", stretch, sr.pod, joules, metered, sr.wantJ)
			}
			if math.Abs(seconds-sr.wantSeconds) > 1e-6 {
				t.Errorf("stretch %d, pod %s: %.3f busy device-seconds, want %.0f", stretch, sr.pod, seconds, sr.wantSeconds)
			}
			if math.Abs(eur-sr.wantE) > 1e-9 {
				t.Errorf("stretch %d, pod %s: %.6f busy EUR, want %.6f", stretch, sr.pod, eur, sr.wantE)
			}
		}
	}
}

// TestCounterPast follows two series over four stretches of two buckets:
// what one carries into the next stretch, over a stretch it is absent from,
// and what a series first seen in the last stretch starts with.
func TestCounterPast(t *testing.T) {
	nan := math.NaN()
	a := pmodel.Metric{"UUID": "GPU-a"}
	bm := pmodel.Metric{"UUID": "GPU-b"}
	var p counterPast
	// First stretch: bucket 0 read from the engine.
	first := counterSet{a.Fingerprint(): {metric: a, last: []float64{3, 5, 7}}}
	p.begin(first)
	if s := first[a.Fingerprint()]; !s.seen || s.lastSeen != 3 {
		t.Errorf("first stretch: seen %t at %v, want true at 3 (its bucket 0)", s.seen, s.lastSeen)
	}
	first[a.Fingerprint()].isNew = true
	p.end(first)
	// Second: bucket 0 is the first stretch's last.
	second := counterSet{a.Fingerprint(): {metric: a, last: []float64{nan, 8, 9}}}
	p.begin(second)
	if s := second[a.Fingerprint()]; s.last[0] != 7 || !s.seen || s.lastSeen != 7 {
		t.Errorf("second stretch: base %v, seen %t at %v; want 7, true at 7", s.last[0], s.seen, s.lastSeen)
	}
	p.end(second)
	// Third: a has no sample in it.
	p.end(counterSet{})
	// Fourth: a is back, b is new.
	fourth := counterSet{
		a.Fingerprint():  {metric: a, last: []float64{nan, nan, 11}},
		bm.Fingerprint(): {metric: bm, last: []float64{nan, 1, 2}},
	}
	p.begin(fourth)
	sa, sb := fourth[a.Fingerprint()], fourth[bm.Fingerprint()]
	if !math.IsNaN(sa.last[0]) || !sa.seen || sa.lastSeen != 9 || !sa.isNew {
		t.Errorf("a after a stretch without samples: base %v, seen %t at %v, new %t; want NaN (no sample in the bucket before), true at 9, true",
			sa.last[0], sa.seen, sa.lastSeen, sa.isNew)
	}
	if sa.firstBucket() != -1 {
		t.Errorf("a's first bucket: %d, want -1 (seen in an earlier stretch)", sa.firstBucket())
	}
	if sb.seen || !math.IsNaN(sb.lastSeen) || sb.firstBucket() != 1 {
		t.Errorf("b: seen %t at %v, first bucket %d; want false at NaN, 1", sb.seen, sb.lastSeen, sb.firstBucket())
	}
	p.end(fourth)
	if sp := p.series[bm.Fingerprint()]; sp.last != 2 || sp.lastSeen != 2 || !sp.seen {
		t.Errorf("b carries %+v, want last 2, seen at 2", *sp)
	}
}

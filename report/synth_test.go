package report

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// A synthetic fleet of exporters for the engine tests and the benchmark: GPU i
// is unallocated when i%10 == 9, else held by pod-i in namespace team-(i%7);
// a held GPU is busy in the hours where (hour+i)%3 != 0. Each node of 8 GPUs
// has an exporter (gputally_up), which tells the report the scrape interval.

type synthSeries struct {
	lset labels.Labels
	// values returns a generator of the value at ticks 1, 2, … (call in order).
	values func() func(k int) float64
}

type synthFamily struct {
	name, typ string // typ: counter or gauge
	series    []synthSeries
}

type synthTotals struct{ seconds, eur, idleEUR, unallocatedEUR float64 }

const synthRate = 1.5 // EUR per hour

func synthFleet(gpus int, interval time.Duration, ticks int) ([]synthFamily, synthTotals) {
	sec := interval.Seconds()
	busyAt := func(i, k int) bool { return (int(time.Duration(k)*interval/time.Hour)+i)%3 != 0 }
	held := func(i int) bool { return i%10 != 9 }
	// Ticks counted, then priced once: a float sum over 10,000 GPUs × 30
	// days of ticks drifts by cents.
	var all, unallocated, idle int
	for i := range gpus {
		for k := 1; k <= ticks; k++ {
			all++
			switch {
			case !held(i):
				unallocated++
			case !busyAt(i, k):
				idle++
			}
		}
	}
	perTick := sec * synthRate / 3600
	tot := synthTotals{seconds: float64(all) * sec, eur: float64(all) * perTick,
		idleEUR: float64(idle) * perTick, unallocatedEUR: float64(unallocated) * perTick}
	fam := map[string]*synthFamily{}
	order := []string{}
	add := func(name, typ string, lset labels.Labels, values func() func(k int) float64) {
		f := fam[name]
		if f == nil {
			f = &synthFamily{name: name, typ: typ}
			fam[name] = f
			order = append(order, name)
		}
		f.series = append(f.series, synthSeries{lset, values})
	}
	counter := func(i int, want func(k int) bool, perTick float64) func() func(k int) float64 {
		return func() func(k int) float64 {
			sum := 0.0
			return func(k int) float64 {
				if want(k) {
					sum += perTick
				}
				return sum
			}
		}
	}
	for i := range gpus {
		id := []string{"gpu", strconv.Itoa(i % 8), "UUID", fmt.Sprintf("GPU-%04d", i), "pci_bus_id", "00000000:07:00.0",
			"device", fmt.Sprintf("nvidia%d", i%8), "modelName", "NVIDIA H100 80GB HBM3", "Hostname", fmt.Sprintf("node-%03d", i/8)}
		pod := []string{"namespace", "", "pod", "", "container", ""}
		if held(i) {
			pod = []string{"namespace", fmt.Sprintf("team-%d", i%7), "pod", fmt.Sprintf("pod-%d", i), "container", "main"}
		}
		ls := func(name string, kv ...string) labels.Labels {
			all := append(append(append([]string{"__name__", name}, id...), pod...), kv...)
			return labels.FromStrings(all...)
		}
		for _, st := range []string{"busy", "idle", "unallocated"} {
			var want func(k int) bool
			switch {
			case st == "unallocated" && held(i), st != "unallocated" && !held(i):
				want = func(int) bool { return false }
			case st == "unallocated":
				want = func(int) bool { return true }
			case st == "busy":
				want = func(k int) bool { return busyAt(i, k) }
			default:
				want = func(k int) bool { return !busyAt(i, k) }
			}
			if !held(i) && st != "unallocated" {
				continue
			}
			add("gputally_gpu_seconds", "counter", ls("gputally_gpu_seconds_total", "state", st), counter(i, want, sec))
			add("gputally_cost_eur", "counter", ls("gputally_cost_eur_total", "state", st), counter(i, want, sec*synthRate/3600))
		}
		gauge := func(f func(k int) float64) func() func(k int) float64 { return func() func(k int) float64 { return f } }
		add("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", ls("DCGM_FI_PROF_GR_ENGINE_ACTIVE"), gauge(func(k int) float64 {
			if held(i) && busyAt(i, k) {
				return 0.7
			}
			return 0.01
		}))
		add("DCGM_FI_DEV_FB_USED", "gauge", ls("DCGM_FI_DEV_FB_USED"), gauge(func(int) float64 { return float64(20000 + 100*(i%50)) }))
		if held(i) {
			add("gputally_gpu_allocation", "gauge", ls("gputally_gpu_allocation", "resource", "nvidia.com/gpu", "sharing", "exclusive"),
				gauge(func(int) float64 { return 1 }))
		}
		if i%8 == 0 { // the node's exporter
			add("gputally_up", "gauge", labels.FromStrings("__name__", "gputally_up", "backend", "sim", "Hostname", fmt.Sprintf("node-%03d", i/8)),
				gauge(func(int) float64 { return 1 }))
		}
	}
	out := make([]synthFamily, 0, len(order))
	for _, n := range order {
		out = append(out, *fam[n])
	}
	return out, tot
}

// writeOpenMetrics writes the families with timestamps, as `gputally
// simulate history` does.
func writeOpenMetrics(w io.Writer, fams []synthFamily, start time.Time, interval time.Duration, ticks int) error {
	bw := bufio.NewWriter(w)
	for _, f := range fams {
		fmt.Fprintf(bw, "# TYPE %s %s\n", f.name, f.typ)
		for _, s := range f.series {
			next := s.values()
			name := s.lset.Get("__name__")
			var lb strings.Builder
			s.lset.Range(func(l labels.Label) {
				if l.Name == "__name__" {
					return
				}
				if lb.Len() > 0 {
					lb.WriteByte(',')
				}
				fmt.Fprintf(&lb, "%s=%q", l.Name, l.Value)
			})
			for k := 1; k <= ticks; k++ {
				t := start.Add(time.Duration(k) * interval)
				fmt.Fprintf(bw, "%s{%s} %s %s\n", name, lb.String(), strconv.FormatFloat(next(k), 'g', -1, 64),
					strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64))
			}
		}
	}
	io.WriteString(bw, "# EOF\n")
	return bw.Flush()
}

// appendFleet appends the families into b directly.
func appendFleet(b *StoreBuilder, fams []synthFamily, start time.Time, interval time.Duration, ticks int) error {
	for _, f := range fams {
		for _, s := range f.series {
			next := s.values()
			// Without its empty labels once, not a copy per sample (Append drops them).
			lset := s.lset.WithoutEmpty()
			for k := 1; k <= ticks; k++ {
				if err := b.Append(lset, start.Add(time.Duration(k)*interval).UnixMilli(), next(k)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

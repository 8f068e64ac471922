package collector

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/gputally/gputally/cost"
	"github.com/gputally/gputally/dcgmnames"
)

// benchSampler returns a sampler of the budget node with attribution and the
// ledger, after two ticks.
func benchSampler(b *testing.B) (*Sampler, *bigNode) {
	node := newBigNode()
	s := NewSampler(node, SamplerOptions{
		Now: fixedClock(t0), Holders: fakeHolders{node.holders()}, Ledger: cost.NewLedger(staticBook{cost.Default()}),
	})
	for k := range 2 {
		if err := s.Tick(context.Background(), t0.Add(time.Duration(k)*time.Second)); err != nil {
			b.Fatal(err)
		}
	}
	return s, node
}

// encode gathers g and writes the text exposition, as promhttp does for a scrape.
func encode(b *testing.B, g prometheus.Gatherer, buf *bytes.Buffer) {
	mfs, err := g.Gather()
	if err != nil {
		b.Fatal(err)
	}
	buf.Reset()
	enc := expfmt.NewEncoder(buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkScrape is one scrape of 8 GPUs × 7 MIG instances with 56 holders
// and the ledger, under each naming of the DCGM_* families. Compare with
// BenchmarkScrapeConstBaseline: the same series as pre-built const metrics,
// the least client_golang can do (budget ≤ 1.5×).
func BenchmarkScrape(b *testing.B) {
	for _, names := range []dcgmnames.Naming{dcgmnames.Current, dcgmnames.Legacy} {
		b.Run(names.String(), func(b *testing.B) {
			s, _ := benchSampler(b)
			reg := prometheus.NewRegistry()
			reg.MustRegister(NewCollector(s, Node{Hostname: "node-a", Names: names}, fixedClock(t0)))
			var buf bytes.Buffer
			encode(b, reg, &buf)
			b.ReportMetric(float64(buf.Len()), "bytes/scrape")
			b.ResetTimer()
			for b.Loop() {
				encode(b, reg, &buf)
			}
		})
	}
}

// constCollector serves a fixed list of metrics.
type constCollector []prometheus.Metric

func (c constCollector) Describe(chan<- *prometheus.Desc) {}
func (c constCollector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range c {
		ch <- m
	}
}

func BenchmarkScrapeConstBaseline(b *testing.B) {
	for _, names := range []dcgmnames.Naming{dcgmnames.Current, dcgmnames.Legacy} {
		b.Run(names.String(), func(b *testing.B) {
			s, _ := benchSampler(b)
			src := NewCollector(s, Node{Hostname: "node-a", Names: names}, fixedClock(t0))
			ch := make(chan prometheus.Metric, 4096)
			src.Collect(ch)
			close(ch)
			var pre constCollector
			for m := range ch {
				pre = append(pre, m)
			}
			reg := prometheus.NewRegistry()
			reg.MustRegister(pre)
			var buf bytes.Buffer
			b.ReportMetric(float64(len(pre)), "series")
			b.ResetTimer()
			for b.Loop() {
				encode(b, reg, &buf)
			}
		})
	}
}

// BenchmarkTick is one steady-state sample tick of the budget node: backend,
// activity, attribution and the ledger, publishing a snapshot.
func BenchmarkTick(b *testing.B) {
	s, _ := benchSampler(b)
	now := t0.Add(2 * time.Second)
	b.ResetTimer()
	for b.Loop() {
		now = now.Add(time.Second)
		if err := s.Tick(context.Background(), now); err != nil {
			b.Fatal(err)
		}
	}
}

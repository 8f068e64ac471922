package collector

import (
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// family is one metric name with one label set: its Desc, name and HELP, and
// its label names with the order that sorts them (exposition wants label pairs
// sorted by name).
type family struct {
	desc       *prometheus.Desc
	name, help string
	names      []string
	sorted     []int // positions in names, in name order
}

func newFamily(name, help string, labels []string) *family {
	f := &family{desc: prometheus.NewDesc(name, help, labels, nil), name: name, help: help, names: labels}
	f.sorted = make([]int, len(labels))
	for i := range f.sorted {
		f.sorted[i] = i
	}
	slices.SortFunc(f.sorted, func(a, b int) int {
		switch {
		case labels[a] < labels[b]:
			return -1
		case labels[a] > labels[b]:
			return 1
		}
		return 0
	})
	return f
}

// series is a const metric whose label pairs come from a pairCache: it costs
// one slice where prometheus.MustNewConstMetric builds and sorts every pair.
type series struct {
	family *family
	labels []*dto.LabelPair // sorted by name; shared, never modified
	typ    prometheus.ValueType
	value  float64
}

func (s *series) Desc() *prometheus.Desc { return s.family.desc }

func (s *series) Write(out *dto.Metric) error {
	out.Label = s.labels
	if s.typ == prometheus.CounterValue {
		out.Counter = &dto.Counter{Value: &s.value}
	} else {
		out.Gauge = &dto.Gauge{Value: &s.value}
	}
	return nil
}

// pairCache interns label pairs across scrapes. Pairs not used in two
// generations are dropped, so ended pods leave no memory behind. Safe for
// concurrent use.
type pairCache struct {
	mu       sync.Mutex
	cur, old map[[2]string]*dto.LabelPair
	gets     int
}

// pairGeneration is how many lookups a generation lasts: a few scrapes of a big node.
const pairGeneration = 1 << 16

func (c *pairCache) get(name, value string) *dto.LabelPair {
	key := [2]string{name, value}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gets++; c.gets >= pairGeneration || c.cur == nil {
		c.old, c.cur, c.gets = c.cur, make(map[[2]string]*dto.LabelPair, len(c.cur)), 0
	}
	if p, ok := c.cur[key]; ok {
		return p
	}
	p, ok := c.old[key]
	if !ok {
		n, v := name, value
		p = &dto.LabelPair{Name: &n, Value: &v}
	}
	c.cur[key] = p
	return p
}

// deviceLabels are the identity label pairs of a device (gpu, UUID, ...
// Hostname, and GPU_I_PROFILE, GPU_I_ID on a MIG instance), in label order.
// Built once per inventory (identities), so that a series of the device looks
// up only its other labels. Never modified once built; the pairs' names are
// the package's label name slices.
type deviceLabels []*dto.LabelPair

// noDevice are the identity labels of a series of no device (gputally_up, ...).
var noDevice deviceLabels

func newDeviceLabels(names, values []string) deviceLabels {
	d := make(deviceLabels, len(values))
	for i, v := range values {
		d[i] = &dto.LabelPair{Name: &names[i], Value: &v}
	}
	return d
}

// metric returns a series of f: its labels are the device's identity labels
// followed by the extra values, in f's label order.
func (c *Collector) metric(f *family, typ prometheus.ValueType, v float64, id deviceLabels, extra ...string) prometheus.Metric {
	pairs := make([]*dto.LabelPair, len(f.sorted))
	n := len(id)
	for k, i := range f.sorted {
		if i < n {
			pairs[k] = id[i]
		} else {
			pairs[k] = c.pairs.get(f.names[i], extra[i-n])
		}
	}
	return &series{family: f, labels: pairs, typ: typ, value: v}
}

package history

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/gputally/gputally/collector/sim"
)

// WriteFleet runs every node of nodes in virtual time over the same period
// and writes their metrics to w as one OpenMetrics stream, one metric family
// after another, ending with "# EOF": each family once, holding every node's
// samples. The families are kept in temporary files until the end, so memory
// stays bounded however long the run. See RunFleet for the nodes, their
// labels and the Result, and Run for the faults.
func WriteFleet(ctx context.Context, w io.Writer, opts Options, nodes []*sim.Scenario) (Result, error) {
	out, err := newFamilyWriter()
	if err != nil {
		return Result{}, err
	}
	defer out.close()
	res, err := RunFleet(ctx, opts, nodes, out)
	if err != nil {
		return Result{}, err
	}
	return res, out.writeTo(w)
}

// RunFleet runs every node of nodes in virtual time over the same period, as
// Run does for one (opts.Scenario is ignored), one node after the other, and
// hands all their scrapes to sink: node 1's whole period, then node 2's. So
// the scrapes of one series come in time order, but not the scrapes of the
// fleet. With more than one node, each sample gets the label
// instance="<hostname>", as a Prometheus scraping the nodes' exporters adds,
// so that the exporters' own series (which carry no Hostname) stay apart.
// Each node keeps its own seed unless opts.Seed is set, when node i gets
// opts.Seed + i. Nodes must differ in hostname and seed (GPU UUIDs derive
// from the seed). opts.Progress, if set, is told the virtual time of the
// whole fleet: n nodes of a week are n weeks. The Result adds up the nodes'
// samples, restarts, totals and rates.
func RunFleet(ctx context.Context, opts Options, nodes []*sim.Scenario, sink Sink) (Result, error) {
	if err := CheckFleet(nodes, opts.Seed); err != nil {
		return Result{}, err
	}
	opts.Scenario = nodes[0]
	opts.KubeStateMetrics = opts.KubeStateMetrics || slices.ContainsFunc(nodes, (*sim.Scenario).Waits)
	if len(nodes) == 1 {
		return Run(ctx, opts, sink)
	}
	if err := opts.defaults(); err != nil {
		return Result{}, err
	}
	var res Result
	for i, sc := range nodes {
		o := opts
		o.Scenario = sc
		o.Names = opts.Names.ofNode(i)
		if opts.Seed != 0 {
			o.Seed = opts.Seed + int64(i)
		}
		if opts.Progress != nil {
			before := time.Duration(i) * opts.Duration
			o.Progress = func(done, _ time.Duration) {
				opts.Progress(before+done, time.Duration(len(nodes))*opts.Duration)
			}
		}
		host := cmp.Or(sc.Node.Hostname, sim.DefaultHostname)
		r, err := Run(ctx, o, &instanceSink{sink: sink, instance: &dto.LabelPair{Name: proto.String("instance"), Value: proto.String(host)}})
		if err != nil {
			return Result{}, fmt.Errorf("node %s: %w", host, err)
		}
		res.Start, res.End = r.Start, r.End
		res.Samples += r.Samples
		res.Restarts += r.Restarts
		res.Totals = append(res.Totals, r.Totals...)
		res.Rates = append(res.Rates, r.Rates...)
	}
	return res, nil
}

// instanceSink hands scrapes on to sink with the label pair instance added
// to every sample that has none (a scrape target's own stays:
// DCGMShapes.ScrapeTarget), in its sorted place among the sample's labels. The label
// slices are new: the gathered ones may share their arrays with the
// collector's.
type instanceSink struct {
	sink     Sink
	instance *dto.LabelPair
}

func (s *instanceSink) AddScrape(mfs []*dto.MetricFamily, t time.Time) error {
	for _, mf := range mfs {
		for _, m := range mf.Metric {
			at, found := slices.BinarySearchFunc(m.Label, "instance", func(p *dto.LabelPair, name string) int { return cmp.Compare(p.GetName(), name) })
			if !found { // a scrape target's own (DCGMShapes.ScrapeTarget) stays
				m.Label = slices.Insert(slices.Clip(m.Label), at, s.instance)
			}
		}
	}
	return s.sink.AddScrape(mfs, t)
}

// CheckFleet reports nodes that WriteFleet cannot run together: two with
// the same hostname, or the same seed (so the same GPU UUIDs), or that both
// list one pending pod. seed is
// Options.Seed: when set, node i runs with seed + i.
func CheckFleet(nodes []*sim.Scenario, seed int64) error {
	if len(nodes) == 0 {
		return errors.New("fleet: no nodes")
	}
	hosts, seeds, pending := map[string]int{}, map[int64]int{}, map[string]int{}
	for i, sc := range nodes {
		s := sc.Seed
		if seed != 0 {
			s = seed + int64(i)
		}
		host := sc.Node.Hostname
		if host == "" {
			host = sim.DefaultHostname
		}
		if j, dup := hosts[host]; dup {
			return fmt.Errorf("fleet: nodes %d and %d are both called %s", j+1, i+1, host)
		}
		if j, dup := seeds[s]; dup {
			return fmt.Errorf("fleet: nodes %d and %d have the same seed %d, so the same GPU UUIDs", j+1, i+1, s)
		}
		hosts[host], seeds[s] = i, i
		for _, p := range sc.Pending {
			full := p.Namespace + "/" + p.Pod
			if j, dup := pending[full]; dup {
				return fmt.Errorf("fleet: nodes %d and %d both list pending pod %s: kube-state-metrics writes a cluster's pods once, list it in one node's scenario", j+1, i+1, full)
			}
			pending[full] = i
		}
	}
	return nil
}

package history

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gputally/gputally/attribution"
	"github.com/gputally/gputally/collector"
	"github.com/gputally/gputally/collector/sim"
	"github.com/gputally/gputally/cost"
)

// simulatedKubeletTimeout is the real-time limit of one refresh of a
// simulated node's attribution client.
const simulatedKubeletTimeout = time.Minute

// node is the simulated node in virtual time: its backend and kubelet, which
// run throughout, and the exporter process, which the scenario may stop and
// start again. Only the run's goroutine uses it.
type node struct {
	backend *sim.Backend
	kubelet *sim.Kubelet
	book    *cost.Store
	clock   *virtualClock
	opts    *Options

	ex     *exporterProcess // nil while stopped
	starts int              // exporter starts so far
	last   time.Time        // the previous tick's time; zero before the first
	// nextRefresh is when the attribution interval next asks the kubelet,
	// nextChange when the scenario next changes its answer, nextScrape when
	// the next scrape is due.
	nextRefresh, nextChange, nextScrape time.Time
}

// exporterProcess is what one run of the exporter holds: the counters of its
// ledger and the state of its attribution client live and die with it.
type exporterProcess struct {
	client  *attribution.Client
	sampler *collector.Sampler
}

// newNode starts the node of opts, whose defaults are set: its backend, its
// kubelet and the price book of its GPUs; the exporter starts at the first
// tick. close stops them.
func newNode(ctx context.Context, opts *Options) (*node, error) {
	backend, err := sim.New(opts.Scenario, sim.Options{Seed: opts.Seed, Start: opts.Start})
	if err != nil {
		return nil, err
	}
	kubelet, err := sim.StartVirtualKubelet(backend)
	if err != nil {
		return nil, err
	}
	inv, err := backend.Inventory(ctx)
	if err != nil {
		kubelet.Stop()
		return nil, err
	}
	var models []cost.GPUModel
	for _, g := range inv.GPUs {
		models = append(models, cost.GPUModel{UUID: g.UUID, Model: g.Model})
	}
	book, err := cost.NewStore(opts.Book, models)
	if err != nil {
		kubelet.Stop()
		return nil, err
	}
	return &node{backend: backend, kubelet: kubelet, book: book, clock: &virtualClock{now: opts.Start}, opts: opts}, nil
}

// close stops the exporter, if it runs, and the kubelet.
func (n *node) close() {
	n.stop()
	n.kubelet.Stop()
}

// tick takes the sample at t and returns its snapshot, or nil while the
// exporter is stopped; started is true at the first sample after a start.
func (n *node) tick(ctx context.Context, t time.Time) (snap *collector.Snapshot, started bool, err error) {
	last := n.last
	n.last = t
	if n.backend.ExporterStopped(t) {
		n.stop()
		return nil, false, nil
	}
	// A restart since the last sample: a new process samples at t, and
	// Prometheus, which scraped the old one, keeps its schedule.
	restart := n.ex != nil && n.backend.ExporterRestarted(last, t)
	if restart {
		n.stop()
	}
	if n.ex == nil {
		if err := n.start(t); err != nil {
			return nil, false, err
		}
		started = true
		n.nextRefresh = t
		if !restart {
			n.nextScrape = t
		}
	} else if n.backend.InventoryChanged(last, t) {
		// A MIG reconfiguration since the last sample. The sampler reads the
		// new inventory at this sample (the backend's Sample says it
		// changed) and hands its devices to the client, as in the
		// exporter; they are handed over here as well, before the kubelet
		// is asked about the pods on the new instances, whose IDs the
		// client would otherwise not know yet.
		inv := n.backend.InventoryAt(t)
		n.ex.client.SetDevices(collector.AttributionDevices(inv))
		n.ex.client.SetMIGLayout(collector.MIGLayout(inv))
	}
	if n.refreshDue(t) {
		if err := n.kubelet.Sync(t); err != nil {
			return nil, false, err
		}
		// A kubelet that is down fails the refresh: the client keeps its last
		// holders until StaleAfter, as on a real node.
		if err := n.ex.client.Refresh(ctx); err != nil && !n.backend.KubeletDown(t) {
			return nil, false, fmt.Errorf("simulated kubelet at %s: %w", t.Format(time.RFC3339), err)
		}
		n.nextRefresh = t.Add(n.opts.AttributionInterval)
		n.nextChange = t.Add(n.opts.Duration + n.opts.SampleInterval) // after the end: no change
		if next, ok := n.backend.NextKubeletChange(t); ok {
			n.nextChange = next
		}
	}
	// A failing backend fails the tick; the sampler publishes it (Up false).
	if err := n.ex.sampler.Tick(ctx, t); err != nil && !errors.Is(err, sim.ErrBackendFailing) {
		return nil, false, fmt.Errorf("sample at %s: %w", t.Format(time.RFC3339), err)
	}
	return n.ex.sampler.Snapshot(), started, nil
}

// refreshDue reports whether the kubelet is to be asked at t: the attribution
// interval passed, the scenario changed its answer since the last refresh, it
// is down (each sample sees how stale the holders got), or it goes down before
// the next sample (the last answer is as fresh as a real exporter's).
func (n *node) refreshDue(t time.Time) bool {
	return !t.Before(n.nextRefresh) || !t.Before(n.nextChange) ||
		n.backend.KubeletDown(t) || n.backend.KubeletDown(t.Add(n.opts.SampleInterval))
}

// scrapeDue reports whether a scrape is due at t, and if so schedules the next.
func (n *node) scrapeDue(t time.Time) bool {
	if t.Before(n.nextScrape) {
		return false
	}
	n.nextScrape = t.Add(n.opts.ScrapeInterval)
	return true
}

// start starts the exporter at t: a new attribution client, process resolver,
// ledger and sampler, as a new process would have, which know the devices of
// the node at t.
func (n *node) start(t time.Time) error {
	o := n.opts
	// The simulated kubelet answers at once, or fails at once while it is
	// down: the real-time limit of a refresh only has to outlast a loaded
	// machine (at the exporter's 2s, a starved run failed), not a slow kubelet.
	client, err := attribution.New(attribution.Config{
		Socket: n.kubelet.Socket, StaleAfter: o.StaleAfter, Clock: n.clock, Logger: o.Logger, Timeout: simulatedKubeletTimeout,
		Slices: attribution.NewStaticSlices(nil, n.backend.ResourceSlices()), Pods: n.kubelet.Pods(),
	})
	if err != nil {
		return err
	}
	inv := n.backend.InventoryAt(t)
	client.SetDevices(collector.AttributionDevices(inv))
	client.SetMIGLayout(collector.MIGLayout(inv))
	sampler := collector.NewSampler(n.backend, collector.SamplerOptions{
		Interval: o.SampleInterval, Now: n.clock.Now, Logger: o.Logger,
		Holders: client, Ledger: cost.NewLedger(n.book),
		Processes: collector.NewPodProcesses(attribution.NewProcessResolver(attribution.ProcessConfig{
			ProcRoot: n.kubelet.ProcRoot, PodLogsDir: n.kubelet.PodLogsDir, Files: n.kubelet.Files(), Clock: n.clock, Logger: o.Logger,
		})),
	})
	n.ex = &exporterProcess{client: client, sampler: sampler}
	n.starts++
	return nil
}

// stop stops the exporter, if it runs.
func (n *node) stop() {
	if n.ex != nil {
		n.ex.client.Close()
		n.ex = nil
	}
}

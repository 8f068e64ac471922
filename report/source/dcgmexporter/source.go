package dcgmexporter

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	pmodel "github.com/prometheus/common/model"

	"github.com/gputally/gputally/cost"
	"github.com/gputally/gputally/dcgmnames"
	"github.com/gputally/gputally/report/engine"
	"github.com/gputally/gputally/report/model"
	"github.com/gputally/gputally/report/source"
)

// DefaultGrid is the dcgm-exporter source's evaluation grid of a cluster
// whose scrape interval it could not measure: dcgm-exporter's default
// collect interval.
const DefaultGrid = 30 * time.Second

// Options are the settings of a Source.
type Options struct {
	// Book prices the devices, gives the idle threshold and splits MIG GPUs
	// by its mig_weight, as the exporters' ledgers do; nil: cost.Default().
	Book *cost.Book
	// Grid is the evaluation grid of every cluster: one state per device
	// per grid point; it must divide the range's Step and Resolution. 0:
	// each cluster's grid follows the scrape interval the source measures
	// there (grid.go).
	Grid time.Duration
	// TeamLabel (optional) is a pod label key whose value names the team,
	// read from kube-state-metrics' kube_pod_labels into Dataset.PodTeams.
	TeamLabel string
	// MaxPointsPerQuery and MaxSamplesPerQuery bound the requests as for
	// the ledger source.
	MaxPointsPerQuery, MaxSamplesPerQuery int
	// ClusterLabel (optional) names a series' cluster, as for the ledger source:
	// each cluster's grid points are classified and priced apart.
	ClusterLabel string
	// QueriesInFlight bounds the requests of one query sent at once, as for
	// the ledger source.
	QueriesInFlight int
	// DedupeLabels (optional) are labels by which copies of one series differ
	// (an HA pair of Prometheus servers, source.DefaultDedupeLabels): every query
	// takes the max over them, as it does over instance and job.
	DedupeLabels []string
	// NodeLabel (optional) is the label of the DCGM_* series that names
	// their node, read before hostname and the others (node.go).
	NodeLabel string
	// Progress (optional) receives a line per request.
	Progress engine.Progress
}

// Source is the source.Source of the history a cluster already has:
// dcgm-exporter's device series and kube-state-metrics' requests, phases,
// capacity and pod labels, read through the same engine.Querier as the ledger source and
// sampled on an evaluation grid (rules.go says how each grid point's
// samples become states). Its whole-device rows are Sampled, those of
// time-sliced GPUs AllocationShare; it has no previous period. It is safe
// for use by one goroutine at a time.
type Source struct {
	q    engine.Querier
	opts Options
}

// New returns the dcgm-exporter source over q.
func New(q engine.Querier, opts Options) *Source {
	if opts.Book == nil {
		opts.Book = cost.Default()
	}
	return &Source{q: q, opts: opts}
}

// dcgmWithout drops the labels of a DCGM_* series that do not tell devices
// or holders apart: the scrape target's, the PCI address and device name, the
// driver under either of its names (dcgm-exporter 4.9 renamed it). A device
// scraped by two jobs (an HA pair), or renamed by an upgrade, is then one
// series.
var dcgmWithout = "instance, job, pci_bus_id, device, " + strings.Join(dcgmnames.DriverLabels, ", ")

// without returns the label list of a `max without`: base and the dedupe
// labels it lacks.
func without(base string, dedupe []string) string {
	out := base
	for _, l := range dedupe {
		if !slices.Contains(strings.Split(base, ", "), l) {
			out += ", " + l
		}
	}
	return out
}

// Collect implements Source: it measures how often each cluster was
// scraped, plans the grid of each (grid.go) and evaluates it over
// (r.Start, r.End] in chunks of whole step buckets (readGrid), so that
// memory stays bounded by a chunk.
func (s *Source) Collect(ctx context.Context, r model.Range) (*model.Dataset, error) {
	if g := s.opts.Grid; g > 0 && (r.Step%g != 0 || r.Resolution%g != 0) {
		return nil, fmt.Errorf("the dcgm-exporter source's grid %s must divide the step %s and the resolution %s", g, r.Step, r.Resolution)
	}
	lim := engine.Limits{MaxPoints: s.opts.MaxPointsPerQuery, MaxSamples: s.opts.MaxSamplesPerQuery, InFlight: s.opts.QueriesInFlight}
	if lim.MaxPoints < 2 {
		lim.MaxPoints = 1000
	}
	run := engine.NewRunner(s.q, lim, s.opts.Progress)
	defer run.Finish()
	d := model.NewDataset(r)
	id := source.NewIdentity(s.opts.ClusterLabel)
	run.Plan(3 + 3*run.Requests(r.Start.Add(r.Step), r.End, r.Step))
	if s.opts.TeamLabel != "" {
		run.Plan(run.Requests(r.Start.Add(r.Step), r.End, r.Step))
	}
	run.Plan(source.WaitingRequests(run, d))
	exported, err := s.exportedLabels(ctx, run, r)
	if err != nil {
		return nil, err
	}
	dcgm, err := s.measureIntervals(ctx, run, r, id, []string{presence.New, presence.Old}, "UUID, GPU_I_ID")
	if err != nil {
		return nil, err
	}
	ksm, err := s.measureIntervals(ctx, run, r, id, []string{`kube_node_status_capacity{resource="pods"}`}, "node, exported_node")
	if err != nil {
		return nil, err
	}
	plans := s.plan(dcgm, ksm, r.Resolution, id)
	for _, p := range plans {
		run.Plan(p.chunks(d, run.MaxPoints()) * len(dcgmQueries(p, false, nil, id, "")))
	}
	var accounts []*dcgmAccount
	for _, p := range plans {
		as, err := s.readGrid(ctx, run, d, p, dcgmQueries(p, exported, s.opts.DedupeLabels, id, s.opts.NodeLabel), id)
		if err != nil {
			return nil, err
		}
		accounts = append(accounts, as...)
	}
	for _, a := range accounts {
		if a.err != nil {
			return nil, a.err
		}
	}
	if len(d.Ledger) == 0 {
		return nil, s.refuseNoData(ctx, run, r)
	}
	names, err := s.namesRead(ctx, run, r, id)
	if err != nil {
		return nil, err
	}
	if err := source.ReadPodTeams(ctx, run, id, engine.Windows{}, s.opts.TeamLabel, d); err != nil {
		return nil, err
	}
	if err := source.ReadWaiting(ctx, run, id, engine.Windows{}, d); err != nil {
		return nil, err
	}
	short := 0
	for _, a := range accounts {
		d.Notes = append(d.Notes, a.warnings()...)
		short += a.short()
	}
	d.Sampling = sampling(plans, short) + describeNames(names)
	d.Warnings = run.Warnings()
	d.Requests = run.Done()
	return d, nil
}

// readGrid evaluates plan p's grid over d's range in chunks of whole step
// buckets (at most run.MaxPoints() grid points a request), every query of a
// chunk before its points are priced: each cluster's points by an account
// of its own (a cluster seen once gets every later point, with data or
// not). It returns the accounts, finished, in the order of their clusters.
func (s *Source) readGrid(ctx context.Context, run *engine.Runner, d *model.Dataset, p gridPlan, queries []dcgmQuery, id source.Identity) ([]*dcgmAccount, error) {
	g := p.grid
	perBucket := int(d.Step / g)
	bucketsPerChunk := p.bucketsPerChunk(d, run.MaxPoints())
	series := map[pmodel.Fingerprint]*dcgmSeries{}
	accounts := map[string]*dcgmAccount{} // by cluster
	for b := 0; b < d.Buckets; b += bucketsPerChunk {
		first := b*perBucket + 1 // grid point j is at d.Start + j × g
		last := min(b+bucketsPerChunk, d.Buckets) * perBucket
		points := map[string][]*gridPoint{}
		of := func(cluster string) []*gridPoint {
			ps := points[cluster]
			if ps == nil {
				ps = make([]*gridPoint, last-first+1)
				for i := range ps {
					ps[i] = newGridPoint()
				}
				points[cluster] = ps
			}
			return ps
		}
		for c := range accounts {
			of(c)
		}
		from, to := d.Start.Add(time.Duration(first)*g), d.Start.Add(time.Duration(last)*g)
		for _, q := range queries {
			err := run.Run(ctx, q.name, q.query, from, to, g, func(m pmodel.Matrix) {
				for _, st := range m {
					var ps []*gridPoint
					for _, pt := range st.Values {
						i := int(math.Round(float64(pt.Timestamp.Time().Sub(from)) / float64(g)))
						if i < 0 || i >= last-first+1 || math.IsNaN(float64(pt.Value)) {
							continue
						}
						if ps == nil {
							ps = of(id.ClusterOf(st.Metric))
						}
						q.fill(ps[i], st.Metric, series, float64(pt.Value))
					}
				}
			})
			if err != nil {
				return nil, err
			}
		}
		if err := resolveHosts(series, points); err != nil {
			return nil, err
		}
		for _, c := range slices.Sorted(maps.Keys(points)) {
			a := accounts[c]
			if a == nil {
				a = newDCGMAccount(d, s.opts.Book, g, c)
				accounts[c] = a
			}
			for i, pt := range points[c] {
				a.point(first+i, pt)
			}
		}
	}
	out := make([]*dcgmAccount, 0, len(accounts))
	for _, c := range slices.Sorted(maps.Keys(accounts)) {
		accounts[c].finish()
		out = append(out, accounts[c])
	}
	return out, nil
}

// bucketsPerChunk is how many step buckets one request of the plan holds.
func (p gridPlan) bucketsPerChunk(d *model.Dataset, maxPoints int) int {
	return max(1, maxPoints/int(d.Step/p.grid))
}

// chunks is how many requests each query of the plan makes.
func (p gridPlan) chunks(d *model.Dataset, maxPoints int) int {
	n := p.bucketsPerChunk(d, maxPoints)
	return (d.Buckets + n - 1) / n
}

// exportedLabels reports whether the range's DCGM_* series carry
// exported_pod: Prometheus scraped dcgm-exporter without honor_labels, so
// the holders are in the exported_ labels.
func (s *Source) exportedLabels(ctx context.Context, run *engine.Runner, r model.Range) (bool, error) {
	found := false
	all := pmodel.Duration(r.End.Sub(r.Start))
	q := fmt.Sprintf(`count(last_over_time(%s{exported_pod!=""}[%s]) or last_over_time(%s{exported_pod!=""}[%s]))`, presence.New, all, presence.Old, all)
	err := run.Run(ctx, "exported_ labels", q,
		r.End, r.End, r.Step, func(m pmodel.Matrix) {
			for _, st := range m {
				for _, p := range st.Values {
					found = found || p.Value > 0
				}
			}
		})
	return found, err
}

// dcgmQuery is one query of a chunk and what a sample of it fills in.
type dcgmQuery struct {
	name, query string
	fill        func(p *gridPoint, m pmodel.Metric, series map[pmodel.Fingerprint]*dcgmSeries, v float64)
}

// dcgmQueries are the queries of each chunk of plan p: the device series'
// last sample in the lookback before each point, and kube-state-metrics'
// requests of nvidia.com resources, the Running phase of pods that request
// GPUs or shared ones, and the nodes' capacity of nvidia.com resources (and
// of pods, which every node has: a node without nvidia.com capacity offers
// no device plugin resource at all).
func dcgmQueries(p gridPlan, exported bool, dedupe []string, id source.Identity, nodeLabel string) []dcgmQuery {
	// Each point reads the lookback before it, shifted a millisecond later:
	// Prometheus 2 closes a range on both ends, and VictoriaMetrics leaves
	// out of a request a series whose first sample lies exactly at its end
	// (a job that starts there).
	w := fmt.Sprintf("%s] offset -1ms", pmodel.Duration(p.dcgmWindow))
	device := func(f dcgmnames.Family, window string, set func(r *deviceReading, s *dcgmSeries, v float64)) dcgmQuery {
		return dcgmQuery{name: f.New, query: deviceQuery(f, p.selector, window, dedupe),
			fill: func(pt *gridPoint, m pmodel.Metric, series map[pmodel.Fingerprint]*dcgmSeries, v float64) {
				fp := m.Fingerprint()
				s := series[fp]
				if s == nil {
					ps := parseDCGMSeries(id, m, exported, nodeLabel)
					s = &ps
					series[fp] = s
				}
				if s.dev.UUID != "" {
					set(pt.device(s), s, v)
				}
			}}
	}
	// Which series had a sample in the last scrape interval (or grid step,
	// when longer) before each point: the device's current ones, when its
	// lookback also holds a series that ended (deviceReading). Read first.
	fresh := fmt.Sprintf("%s] offset -1ms", pmodel.Duration(max(p.grid, p.dcgmFastest)))
	value := func(field func(r *deviceReading) *float64) func(r *deviceReading, s *dcgmSeries, v float64) {
		return func(r *deviceReading, s *dcgmSeries, v float64) {
			if r.current(s) {
				*field(r) = maxNaN(*field(r), v)
			}
		}
	}
	// kube-state-metrics is scraped on its own schedule: its last sample in
	// its own lookback before each point.
	kw := fmt.Sprintf("%s] offset -1ms", pmodel.Duration(p.ksmWindow))
	requests := selector("kube_pod_container_resource_requests", `resource=~"nvidia_com_.*"`, p.selector)
	return []dcgmQuery{
		device(presence, fresh, func(r *deviceReading, s *dcgmSeries, _ float64) { r.markFresh(s) }),
		device(dcgmnames.GREngineActive, w, value(func(r *deviceReading) *float64 { return &r.gr })),
		device(dcgmnames.GPUUtil, w, value(func(r *deviceReading) *float64 { return &r.util })),
		device(dcgmnames.FBUsed, w, value(func(r *deviceReading) *float64 { return &r.fb })),
		device(dcgmnames.Power, w, value(func(r *deviceReading) *float64 { return &r.power })),
		device(dcgmnames.XID, w, value(func(r *deviceReading) *float64 { return &r.xid })),
		{name: "kube_pod_container_resource_requests",
			query: fmt.Sprintf(`max without (%s) (last_over_time(%s[%s))`, without("instance, job, uid, unit", dedupe), requests, kw),
			fill: func(pt *gridPoint, m pmodel.Metric, _ map[pmodel.Fingerprint]*dcgmSeries, v float64) {
				h := ksmHolder(m)
				pt.requests = append(pt.requests, ksmRequest{holder: h, node: ksmLabel(m, "node"), resource: string(m["resource"]), value: v})
			}},
		{name: "kube_pod_status_phase",
			query: fmt.Sprintf(`max by (%[1]s) (last_over_time(%[3]s[%[2]s)) == 1 and on (%[1]s) max by (%[1]s) (last_over_time(%[4]s[%[2]s))`, id.By("namespace, pod"), kw,
				selector("kube_pod_status_phase", `phase="Running"`, p.selector), selector("kube_pod_container_resource_requests", `resource=~"nvidia_com_gpu|nvidia_com_.*_shared"`, p.selector)),
			fill: func(pt *gridPoint, m pmodel.Metric, _ map[pmodel.Fingerprint]*dcgmSeries, v float64) {
				pt.running[model.HolderKey{Namespace: string(m["namespace"]), Pod: string(m["pod"])}] = true
			}},
		{name: "kube_node_status_capacity",
			query: fmt.Sprintf(`max without (%s) (last_over_time(%s[%s))`, without("instance, job, unit", dedupe), selector("kube_node_status_capacity", `resource=~"nvidia_com_.*|pods"`, p.selector), kw),
			fill: func(pt *gridPoint, m pmodel.Metric, _ map[pmodel.Fingerprint]*dcgmSeries, v float64) {
				node := ksmLabel(m, "node")
				if pt.capacity[node] == nil {
					pt.capacity[node] = map[string]float64{}
				}
				pt.capacity[node][string(m["resource"])] = v
			}},
	}
}

// ksmLabel returns a kube-state-metrics label, or its exported_ form when
// Prometheus scraped it without honor_labels.
func ksmLabel(m pmodel.Metric, name string) string {
	if v, ok := m[pmodel.LabelName("exported_"+name)]; ok {
		return string(v)
	}
	return string(m[pmodel.LabelName(name)])
}

func ksmHolder(m pmodel.Metric) model.HolderKey {
	return model.HolderKey{Namespace: ksmLabel(m, "namespace"), Pod: ksmLabel(m, "pod"), Container: ksmLabel(m, "container")}
}

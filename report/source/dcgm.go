package source

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
	"github.com/gputally/gputally/report/model"
)

// DefaultGrid is the dcgm-exporter source's evaluation grid when none is
// set: dcgm-exporter's default collect interval.
const DefaultGrid = 30 * time.Second

// DCGMExporterOptions are the settings of a DCGMExporter source.
type DCGMExporterOptions struct {
	// Book prices the devices, gives the idle threshold and splits MIG GPUs
	// by its mig_weight, as the exporters' ledgers do; nil: cost.Default().
	Book *cost.Book
	// Grid is the evaluation grid: one state per device per grid point. It
	// must divide the range's Step and Resolution, and be at least the
	// scrape interval of dcgm-exporter and kube-state-metrics (a device
	// without a sample in the Grid before a point is unknown there). 0:
	// DefaultGrid.
	Grid time.Duration
	// TeamLabel (optional) is a pod label key whose value names the team,
	// read from kube-state-metrics' kube_pod_labels into Dataset.PodTeams.
	TeamLabel string
	// MaxPointsPerQuery and MaxSamplesPerQuery bound the requests as for
	// the Ledger.
	MaxPointsPerQuery, MaxSamplesPerQuery int
	// ClusterLabel (optional) names a series' cluster, as for the Ledger:
	// each cluster's grid points are classified and priced apart.
	ClusterLabel string
	// QueriesInFlight bounds the requests of one query sent at once, as for
	// the Ledger.
	QueriesInFlight int
	// DedupeLabels (optional) are labels by which copies of one series differ
	// (an HA pair of Prometheus servers, DefaultDedupeLabels): every query
	// takes the max over them, as it does over instance and job.
	DedupeLabels []string
	// Progress (optional) receives a line per request.
	Progress Progress
}

// DCGMExporter is the Source of the history a cluster already has:
// dcgm-exporter's device series and kube-state-metrics' requests, phases,
// capacity and pod labels, read through the same Querier as the Ledger and
// sampled on an evaluation grid (dcgm_rules.go says how each grid point's
// samples become states). Its whole-device rows are Sampled, those of
// time-sliced GPUs AllocationShare; it has no previous period. It is safe
// for use by one goroutine at a time.
type DCGMExporter struct {
	q    Querier
	opts DCGMExporterOptions
}

// NewDCGMExporter returns the dcgm-exporter source over q.
func NewDCGMExporter(q Querier, opts DCGMExporterOptions) *DCGMExporter {
	if opts.Book == nil {
		opts.Book = cost.Default()
	}
	if opts.Grid <= 0 {
		opts.Grid = DefaultGrid
	}
	return &DCGMExporter{q: q, opts: opts}
}

// dcgmWithout drops the labels of a DCGM_* series that do not tell devices
// or holders apart: the scrape target's, the PCI address and device name, the
// driver. A device scraped by two jobs (an HA pair) is then one series.
const dcgmWithout = "instance, job, pci_bus_id, device, DCGM_FI_DRIVER_VERSION"

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

// Collect implements Source: it evaluates the grid over (r.Start, r.End] in
// chunks of whole step buckets (readGrid), so that memory stays bounded by a
// chunk.
func (s *DCGMExporter) Collect(ctx context.Context, r model.Range) (*model.Dataset, error) {
	g := s.opts.Grid
	if r.Step%g != 0 || r.Resolution%g != 0 {
		return nil, fmt.Errorf("the dcgm-exporter source's grid %s must divide the step %s and the resolution %s", g, r.Step, r.Resolution)
	}
	run := &rangeRunner{q: s.q, maxPoints: s.opts.MaxPointsPerQuery, maxSamples: s.opts.MaxSamplesPerQuery,
		inFlight: s.opts.QueriesInFlight, progress: s.opts.Progress}
	if run.maxPoints < 2 {
		run.maxPoints = 1000
	}
	defer run.finish()
	d := model.NewDataset(r)
	id := identity{pmodel.LabelName(s.opts.ClusterLabel)}
	perBucket := int(r.Step / g)
	bucketsPerChunk := max(1, run.maxPoints/perBucket)
	chunks := ceilDiv(d.Buckets, bucketsPerChunk)
	run.total = 1 + run.requests(r.Start.Add(r.Step), r.End, r.Step) + chunks*len(dcgmQueries(g, false, nil, id))
	if s.opts.TeamLabel != "" {
		run.total += run.requests(r.Start.Add(r.Step), r.End, r.Step)
	}
	exported, err := s.exportedLabels(ctx, run, r)
	if err != nil {
		return nil, err
	}
	interval, err := s.scrapeInterval(ctx, run, r)
	if err != nil {
		return nil, err
	}
	accounts, err := s.readGrid(ctx, run, d, dcgmQueries(g, exported, s.opts.DedupeLabels, id), bucketsPerChunk, id)
	if err != nil {
		return nil, err
	}
	if len(d.Ledger) == 0 {
		return nil, fmt.Errorf("no GPU data: no dcgm-exporter samples (DCGM_FI_DEV_FB_USED, DCGM_FI_PROF_GR_ENGINE_ACTIVE, …) with a UUID label between %s and %s (is dcgm-exporter scraped, and is the range right?)",
			r.Start.UTC().Format(time.RFC3339), r.End.UTC().Format(time.RFC3339))
	}
	teams := &collector{run: run, teamLabel: s.opts.TeamLabel, id: id}
	if err := teams.podTeams(ctx, d); err != nil {
		return nil, err
	}
	short := 0
	for _, a := range accounts {
		d.Notes = append(d.Notes, a.warnings()...)
		short += a.short()
	}
	d.Sampling = fmt.Sprintf(
		"Sampled on a %s grid: each device has one state per grid point, from the last dcgm-exporter and kube-state-metrics sample in the %s before it, so a holding's time is known to within %s at each start and end; a job shorter than two grid steps (%s) counts only at the grid points that caught it (%d holding(s) here were seen at fewer than two). Time-sliced GPUs are split by the replicas their pods requested (allocation share, not usage).",
		g, g, g, 2*g, short)
	if interval > g+g/2 {
		d.Notes = append([]string{fmt.Sprintf("dcgm-exporter's series have a sample about every %s, more than the grid of %s: grid points without one are unknown; set --grid=%s",
			interval.Round(time.Second), g, interval.Round(time.Second))}, d.Notes...)
	}
	d.Warnings = run.warnings
	d.Requests = run.done
	return d, nil
}

// readGrid evaluates the grid over d's range in chunks of bucketsPerChunk
// step buckets, every query of a chunk before its points are priced: each
// cluster's points by an account of its own (a cluster seen once gets every
// later point, with data or not). It returns the accounts, finished, in the
// order of their clusters.
func (s *DCGMExporter) readGrid(ctx context.Context, run *rangeRunner, d *model.Dataset, queries []dcgmQuery, bucketsPerChunk int, id identity) ([]*dcgmAccount, error) {
	g := s.opts.Grid
	perBucket := int(d.Step / g)
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
			err := run.run(ctx, q.name, q.query, from, to, g, func(m pmodel.Matrix) {
				for _, st := range m {
					var ps []*gridPoint
					for _, p := range st.Values {
						i := int(math.Round(float64(p.Timestamp.Time().Sub(from)) / float64(g)))
						if i < 0 || i >= last-first+1 || math.IsNaN(float64(p.Value)) {
							continue
						}
						if ps == nil {
							ps = of(id.clusterOf(st.Metric))
						}
						q.fill(ps[i], st.Metric, series, float64(p.Value))
					}
				}
			})
			if err != nil {
				return nil, err
			}
		}
		for _, c := range slices.Sorted(maps.Keys(points)) {
			a := accounts[c]
			if a == nil {
				a = newDCGMAccount(d, s.opts.Book, g, c)
				accounts[c] = a
			}
			for i, p := range points[c] {
				a.point(first+i, p)
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

// exportedLabels reports whether the range's DCGM_* series carry
// exported_pod: Prometheus scraped dcgm-exporter without honor_labels, so
// the holders are in the exported_ labels.
func (s *DCGMExporter) exportedLabels(ctx context.Context, run *rangeRunner, r model.Range) (bool, error) {
	found := false
	err := run.run(ctx, "exported_ labels", fmt.Sprintf(`count(last_over_time(DCGM_FI_DEV_FB_USED{exported_pod!=""}[%s]))`, pmodel.Duration(r.End.Sub(r.Start))),
		r.End, r.End, r.Step, func(m pmodel.Matrix) {
			for _, st := range m {
				for _, p := range st.Values {
					found = found || p.Value > 0
				}
			}
		})
	return found, err
}

// scrapeInterval estimates how often dcgm-exporter was scraped: a step
// bucket over the median number of samples a DCGM_FI_DEV_FB_USED series has
// in it, over the buckets that have any; 0 without data.
func (s *DCGMExporter) scrapeInterval(ctx context.Context, run *rangeRunner, r model.Range) (time.Duration, error) {
	var sum float64
	n := 0
	err := run.run(ctx, "scrape interval", fmt.Sprintf("quantile(0.5, count_over_time(DCGM_FI_DEV_FB_USED[%s]))", pmodel.Duration(r.Step)),
		r.Start.Add(r.Step), r.End, r.Step, func(m pmodel.Matrix) {
			for _, st := range m {
				for _, p := range st.Values {
					if p.Value > 0 {
						sum += float64(p.Value)
						n++
					}
				}
			}
		})
	if err != nil || n == 0 {
		return 0, err
	}
	return time.Duration(float64(r.Step) / (sum / float64(n))), nil
}

// dcgmQuery is one query of a chunk and what a sample of it fills in.
type dcgmQuery struct {
	name, query string
	fill        func(p *gridPoint, m pmodel.Metric, series map[pmodel.Fingerprint]*dcgmSeries, v float64)
}

// dcgmQueries are the queries of each chunk: the device series' last sample
// in the grid step before each point, and kube-state-metrics' requests of
// nvidia.com resources, the Running phase of pods that request shared ones,
// and the nodes' capacity of nvidia.com resources (and of pods, which every
// node has: a node without nvidia.com capacity offers no device plugin
// resource at all).
func dcgmQueries(g time.Duration, exported bool, dedupe []string, id identity) []dcgmQuery {
	// Each point reads the grid step before it, shifted a millisecond
	// later: Prometheus 2 closes a range on both ends (a sample exactly one
	// step before the point belongs to the point before), and
	// VictoriaMetrics leaves out of a request a series whose first sample
	// lies exactly at its end (a job that starts there).
	w := fmt.Sprintf("%s] offset -1ms", pmodel.Duration(g))
	device := func(name string, set func(r *deviceReading, v float64)) dcgmQuery {
		return dcgmQuery{name: name, query: fmt.Sprintf("max without (%s) (last_over_time(%s[%s))", without(dcgmWithout, dedupe), name, w),
			fill: func(p *gridPoint, m pmodel.Metric, series map[pmodel.Fingerprint]*dcgmSeries, v float64) {
				fp := m.Fingerprint()
				s := series[fp]
				if s == nil {
					ps := id.parseDCGMSeries(m, exported)
					s = &ps
					series[fp] = s
				}
				if s.dev.UUID == "" {
					return
				}
				r := p.device(s)
				r.addHolder(s.holder)
				set(r, v)
			}}
	}
	// kube-state-metrics is scraped on its own schedule: its last sample in
	// ksmWindow before each point.
	kw := fmt.Sprintf("%s] offset -1ms", pmodel.Duration(max(g, ksmWindow)))
	return []dcgmQuery{
		device("DCGM_FI_PROF_GR_ENGINE_ACTIVE", func(r *deviceReading, v float64) { r.gr = maxNaN(r.gr, v) }),
		device("DCGM_FI_DEV_GPU_UTIL", func(r *deviceReading, v float64) { r.util = maxNaN(r.util, v) }),
		device("DCGM_FI_DEV_FB_USED", func(r *deviceReading, v float64) { r.fb = maxNaN(r.fb, v) }),
		device("DCGM_FI_DEV_POWER_USAGE", func(r *deviceReading, v float64) { r.power = maxNaN(r.power, v) }),
		device("DCGM_FI_DEV_XID_ERRORS", func(r *deviceReading, v float64) { r.xid = maxNaN(r.xid, v) }),
		{name: "kube_pod_container_resource_requests",
			query: fmt.Sprintf(`max without (%s) (last_over_time(kube_pod_container_resource_requests{resource=~"nvidia_com_.*"}[%s))`, without("instance, job, uid, unit", dedupe), kw),
			fill: func(p *gridPoint, m pmodel.Metric, _ map[pmodel.Fingerprint]*dcgmSeries, v float64) {
				h := ksmHolder(m)
				p.requests = append(p.requests, ksmRequest{holder: h, node: ksmLabel(m, "node"), resource: string(m["resource"]), value: v})
			}},
		{name: "kube_pod_status_phase",
			query: fmt.Sprintf(`max by (%[1]s) (last_over_time(kube_pod_status_phase{phase="Running"}[%[2]s)) == 1 and on (%[1]s) max by (%[1]s) (last_over_time(kube_pod_container_resource_requests{resource=~"nvidia_com_.*_shared"}[%[2]s))`, id.by("namespace, pod"), kw),
			fill: func(p *gridPoint, m pmodel.Metric, _ map[pmodel.Fingerprint]*dcgmSeries, v float64) {
				p.running[model.HolderKey{Namespace: string(m["namespace"]), Pod: string(m["pod"])}] = true
			}},
		{name: "kube_node_status_capacity",
			query: fmt.Sprintf(`max without (%s) (last_over_time(kube_node_status_capacity{resource=~"nvidia_com_.*|pods"}[%s))`, without("instance, job, unit", dedupe), kw),
			fill: func(p *gridPoint, m pmodel.Metric, _ map[pmodel.Fingerprint]*dcgmSeries, v float64) {
				node := ksmLabel(m, "node")
				if p.capacity[node] == nil {
					p.capacity[node] = map[string]float64{}
				}
				p.capacity[node][string(m["resource"])] = v
			}},
	}
}

// ksmWindow is how far back a grid point looks for kube-state-metrics'
// last sample: it is scraped on its own schedule, often every minute.
const ksmWindow = time.Minute

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

package dcgmexporter

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	pmodel "github.com/prometheus/common/model"

	"github.com/gputally/gputally/report/engine"
	"github.com/gputally/gputally/report/model"
	"github.com/gputally/gputally/report/source"
)

// The grid rule of the dcgm-exporter source (docs/report.md, "The grid"):
//
//   - The source measures how often each cluster's series were scraped: per
//     scrape job, a step bucket over the median number of samples a series
//     has in it, the median over the buckets that have any — for
//     dcgm-exporter (DCGM_FI_DEV_FB_USED) and for kube-state-metrics
//     (kube_node_status_capacity of pods, one series per node).
//   - A cluster's grid is its fastest dcgm-exporter job's interval, or, when
//     that does not divide the resolution, the largest whole second that
//     does and is below it; --grid sets one grid for all instead.
//   - Each grid point t reads the last sample of a series in the lookback
//     (t − w, t]: w is the longer of the grid and the slowest job's
//     interval, and a tenth of that more. A lookback of exactly the scrape
//     interval has no slack: a scrape stored a few milliseconds late
//     leaves the point before it without a sample. With the slack, jitter
//     never makes time unknown; a point is unknown only where no sample
//     came for a whole interval and a tenth — a scrape was missed.
//   - kube-state-metrics' lookback follows its own interval the same way
//     (a minute when there is none to measure).

// slackDiv: the lookback is the interval and 1/slackDiv of it more.
const slackDiv = 10

// ksmDefaultInterval is kube-state-metrics' interval when none can be
// measured: it is often scraped once a minute.
const ksmDefaultInterval = time.Minute

// intervals are the scrape intervals measured per cluster: the fastest and
// the slowest job's.
type intervals map[string][2]time.Duration

// gridPlan is how the points of a group of clusters are read: the grid and
// the lookbacks, and which clusters' series the queries select.
type gridPlan struct {
	grid                  time.Duration
	dcgmWindow, ksmWindow time.Duration
	dcgmScrape, ksmScrape time.Duration // the slowest jobs' intervals measured; 0: none
	dcgmFastest           time.Duration // the fastest dcgm-exporter job's interval; 0: none
	clusters              []string      // sorted
	selector              string        // the cluster matcher of the queries; "": every series
}

// lookback is the window that reads a sample of a job scraped every
// interval on a grid: the longer of the two, and a tenth more.
func lookback(grid, interval time.Duration) time.Duration {
	w := max(grid, interval)
	return w + w/slackDiv
}

// gridFor is the grid of a cluster whose fastest dcgm-exporter job is
// scraped every interval: the interval, or the largest whole second below
// it that divides res; DefaultGrid when nothing was measured.
func gridFor(interval, res time.Duration) time.Duration {
	if interval <= 0 {
		interval = DefaultGrid
	}
	for g := min(interval, res).Truncate(time.Second); g > time.Second; g -= time.Second {
		if res%g == 0 {
			return g
		}
	}
	return time.Second
}

// measureIntervals returns how often the series of metrics (selectors: one
// family under each of its names, each read apart so that a device written
// under both counts its scrapes once, their buckets pooled) were scraped,
// per cluster: per job, the step over the median number of samples a thing
// has in a step bucket, the median over the buckets with any;
// across a cluster's jobs the fastest and the slowest, rounded to whole
// milliseconds. A thing is a series with its labels but those of thing
// (the device of a DCGM_* series, whichever pods were labelled on it in the
// bucket: a pod's series alone would make the interval of a pod that ran
// ten minutes of the hour six times too long). The buckets are shifted a
// millisecond later, as the grid's lookbacks are (dcgmQueries): an engine
// that closes a range on both ends would otherwise count a scrape on the
// bucket's edge in two buckets.
func (s *Source) measureIntervals(ctx context.Context, run *engine.Runner, r model.Range, id source.Identity, metrics []string, thing string) (intervals, error) {
	counts := map[[2]string][]float64{} // by cluster and job: the median count per bucket
	for _, metric := range metrics {
		perThing := fmt.Sprintf("sum by (%s) (count_over_time(%s[%s] offset -1ms))", without(id.By("job, "+thing), s.opts.DedupeLabels), metric, pmodel.Duration(r.Step))
		err := run.Run(ctx, "scrape interval of "+metric, fmt.Sprintf("quantile(0.5, %s) by (%s)", perThing, id.By("job")),
			r.Start.Add(r.Step), r.End, r.Step, func(m pmodel.Matrix) {
				for _, st := range m {
					k := [2]string{id.ClusterOf(st.Metric), string(st.Metric["job"])}
					for _, p := range st.Values {
						if p.Value > 0 {
							counts[k] = append(counts[k], float64(p.Value))
						}
					}
				}
			})
		if err != nil {
			return nil, err
		}
	}
	out := intervals{}
	for k, c := range counts {
		slices.Sort(c)
		iv := (time.Duration(float64(r.Step) / c[len(c)/2])).Round(time.Millisecond)
		cur, ok := out[k[0]]
		if !ok {
			cur = [2]time.Duration{iv, iv}
		}
		out[k[0]] = [2]time.Duration{min(cur[0], iv), max(cur[1], iv)}
	}
	return out, nil
}

// plan groups the clusters by how their points are read: their grid and
// the intervals measured there. With one group its
// queries select every series; with several, each selects its clusters'
// series, and the group of the first cluster also those of clusters
// nothing was measured of (their series are read on its grid).
func (s *Source) plan(dcgm, ksm intervals, res time.Duration, id source.Identity) []gridPlan {
	clusters := slices.Sorted(maps.Keys(dcgm))
	if len(clusters) == 0 {
		clusters = []string{""}
	}
	byKey := map[[4]time.Duration]*gridPlan{} // by grid and the intervals measured
	var plans []*gridPlan
	for _, c := range clusters {
		d, k := dcgm[c], ksm[c]
		g := s.opts.Grid
		if g <= 0 {
			g = gridFor(d[0], res)
		}
		ksmScrape := k[1]
		if ksmScrape <= 0 {
			ksmScrape = ksmDefaultInterval
		}
		p := gridPlan{grid: g, dcgmWindow: lookback(g, d[1]), ksmWindow: lookback(g, ksmScrape), dcgmScrape: d[1], ksmScrape: k[1], dcgmFastest: d[0]}
		key := [4]time.Duration{p.grid, p.dcgmFastest, p.dcgmScrape, p.ksmScrape}
		if byKey[key] == nil {
			byKey[key] = &p
			plans = append(plans, &p)
		}
		byKey[key].clusters = append(byKey[key].clusters, c)
	}
	out := make([]gridPlan, len(plans))
	for i, p := range plans {
		out[i] = *p
		if len(plans) == 1 || id.Label() == "" {
			continue
		}
		var others []string
		for j, q := range plans {
			if j != i {
				others = append(others, q.clusters...)
			}
		}
		if i == 0 {
			out[i].selector = fmt.Sprintf("%s!~%q", id.Label(), alternatives(others))
		} else {
			out[i].selector = fmt.Sprintf("%s=~%q", id.Label(), alternatives(p.clusters))
		}
	}
	return out
}

// alternatives is a regular expression that matches exactly the values.
func alternatives(values []string) string {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = regexp.QuoteMeta(v)
	}
	return strings.Join(quoted, "|")
}

// selector writes a series selector: the metric name and the matchers that
// are not empty.
func selector(name string, matchers ...string) string {
	var ms []string
	for _, m := range matchers {
		if m != "" {
			ms = append(ms, m)
		}
	}
	if len(ms) == 0 {
		return name
	}
	return name + "{" + strings.Join(ms, ", ") + "}"
}

// describe says how the plan reads its clusters, for Dataset.Sampling.
func (p gridPlan) describe() string {
	scraped := func(what string, iv time.Duration) string {
		if iv <= 0 {
			return what + " not measured"
		}
		return what + " scraped every " + iv.String()
	}
	return fmt.Sprintf("a %s grid (%s, %s; lookbacks %s and %s)", p.grid, scraped("dcgm-exporter", p.dcgmScrape), scraped("kube-state-metrics", p.ksmScrape), p.dcgmWindow, p.ksmWindow)
}

// sampling is the statement of how the plans read the range, for
// Dataset.Sampling; short is the holdings seen at fewer than two grid points.
func sampling(plans []gridPlan, short int) string {
	var grids []string
	for _, p := range plans {
		g := p.describe()
		if len(plans) > 1 {
			g = "cluster " + strings.Join(quoteAll(p.clusters), ", ") + ": " + g
		}
		grids = append(grids, g)
	}
	finest := plans[0].grid
	for _, p := range plans {
		finest = min(finest, p.grid)
	}
	return fmt.Sprintf(
		"Sampled on %s: each device has one state per grid point, from the last dcgm-exporter and kube-state-metrics sample in the lookback before it (the scrape interval and a tenth), so a late scrape still counts and a point without a sample is a missed one; a holding's time is known to within a grid step at each start and end, and a job shorter than two grid steps (%s) counts only at the grid points that caught it (%d holding(s) here were seen at fewer than two). Time-sliced GPUs are split by the replicas their pods requested (allocation share, not usage).",
		strings.Join(grids, "; "), 2*finest, short)
}

// quoteAll quotes each cluster name.
func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fmt.Sprintf("%q", n)
	}
	return out
}

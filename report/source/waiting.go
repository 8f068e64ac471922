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

	"github.com/gputally/gputally/report/engine"
	"github.com/gputally/gputally/report/model"
)

// The GPU demand that waits for a node, as kube-state-metrics writes it
// (kubernetes/kube-state-metrics@c92fe0c internal/store/pod.go: every pod
// series carries namespace, pod and uid; kube_pod_container_resource_requests
// a node, empty — so absent once stored — while the pod is bound to none).
// Both sources read it alike (ReadWaiting) into model.Waiting.

// ksmGPUResources selects the GPU resources in kube-state-metrics' resource
// label: whole GPUs (HAMi's vGPU count too), time-sliced replicas, MIG
// instances (mixed strategy).
const ksmGPUResources = `resource=~"nvidia_com_gpu|nvidia_com_gpu_shared|nvidia_com_mig_.+"`

// WaitingRequests is what ReadWaiting asks of the runner over d's range.
func WaitingRequests(run *engine.Runner, d *model.Dataset) int {
	return 5*run.Requests(d.Start.Add(d.Resolution), d.End, d.Resolution) + 2
}

// ReadWaiting fills d.Waiting from kube-state-metrics, on a grid of
// d.Resolution over (d.Start, d.End] — each point reads the last sample of
// its step (t − resolution, t] — and leaves it nil when no GPU pod or node
// series is there. It reads:
//
//   - the requests of GPU pods bound to no node (the pods that waited, one
//     per uid), their kube_pod_created and, once bound,
//     kube_pod_status_scheduled_time and node; a pod last seen unbound
//     before the range's end was deleted while waiting, at the end of the
//     last step it was seen in (within the resolution);
//   - per node and resource, kube_node_status_allocatable and the requests
//     of the pods bound to it that are Pending or Running;
//   - how often kube-state-metrics was scraped (the wait below which a pod
//     was bound at once), and the GPU pods per schedulerName
//     (kube_pod_scheduler) over the range.
//
// The joins are on namespace, pod and uid: kube-state-metrics scraped with
// honor_labels, as the team rules need it. It makes WaitingRequests
// requests.
func ReadWaiting(ctx context.Context, run *engine.Runner, id Identity, win engine.Windows, d *model.Dataset) error {
	r := waitReading{id: id, d: d, w: &model.Waiting{Capacity: map[model.NodeResource][]model.Level{}, Bound: map[model.NodeResource][]model.Level{}},
		pods: map[string]*podReading{}, step: win.Of(d.Resolution), lastPoint: map[model.NodeResource]pmodel.Time{}}
	for _, q := range r.queries() {
		if err := run.Run(ctx, q.name, q.query, d.Start.Add(d.Resolution), d.End, d.Resolution, q.each); err != nil {
			return err
		}
	}
	span := win.Of(d.End.Sub(d.Start))
	if err := run.Run(ctx, "kube_pod_scheduler", fmt.Sprintf(`count by (%s) (max by (%s) (last_over_time(kube_pod_scheduler[%s])) and on (%s) %s)`,
		id.By("name"), id.By("namespace, pod, uid, name"), span, id.By("namespace, pod, uid"), r.podsWithGPUs("", span)), d.End, d.End, d.Step, r.schedulers); err != nil {
		return err
	}
	if err := run.Run(ctx, "kube-state-metrics' scrape interval", fmt.Sprintf(`max by (%s) (count_over_time(kube_node_status_allocatable{%s}[%s]))`,
		id.By("node"), ksmGPUResources, win.Of(r.probe())), d.End, d.End, d.Step, r.interval); err != nil {
		return err
	}
	if len(r.pods) == 0 && len(r.w.Capacity) == 0 {
		return nil
	}
	r.finish()
	d.Waiting = r.w
	return nil
}

// waitReading is the waiting data being read.
type waitReading struct {
	id   Identity
	d    *model.Dataset
	w    *model.Waiting
	pods map[string]*podReading // by cluster/uid
	step string                 // the range of one grid step
	// lastPoint is each node and resource's last grid point with a sample.
	lastPoint map[model.NodeResource]pmodel.Time
}

// podReading is one pod that was seen bound to no node.
type podReading struct {
	pod              model.PodKey
	requests         map[string]map[pmodel.Time]float64 // resource → grid point → devices, summed over containers
	lastUnbound      pmodel.Time
	created, boundAt float64 // Unix seconds; 0: not read
	node             string
}

// waitQuery is one range query of the grid and what reads its series.
type waitQuery struct {
	name, query string
	each        func(pmodel.Matrix)
}

// podsWithGPUs is 1 for each pod with a GPU request in the last window
// (one where node matches, e.g. `node=""`), by cluster, namespace, pod, uid.
func (r *waitReading) podsWithGPUs(node, window string) string {
	sel := ksmGPUResources
	if node != "" {
		sel = node + ", " + sel
	}
	return fmt.Sprintf(`max by (%s) (last_over_time(kube_pod_container_resource_requests{%s}[%s]))`, r.id.By("namespace, pod, uid"), sel, window)
}

func (r *waitReading) queries() []waitQuery {
	id, w := r.id, r.step
	return []waitQuery{
		{"kube_pod_container_resource_requests of unbound pods", fmt.Sprintf(`max by (%s) (last_over_time(kube_pod_container_resource_requests{node="", %s}[%s]))`,
			id.By("namespace, pod, uid, container, resource"), ksmGPUResources, w), r.unbound},
		{"kube_pod_created", fmt.Sprintf(`max by (%s) (last_over_time(kube_pod_created[%s])) and on (%s) %s`,
			id.By("namespace, pod, uid"), w, id.By("namespace, pod, uid"), r.podsWithGPUs(`node=""`, w)), r.created},
		{"kube_pod_status_scheduled_time", fmt.Sprintf(`max by (%[1]s) (last_over_time(kube_pod_status_scheduled_time[%[2]s])) * on (%[1]s) group_left (node) max by (%[3]s) (0 * last_over_time(kube_pod_container_resource_requests{node!="", %[4]s}[%[2]s]) + 1)`,
			id.By("namespace, pod, uid"), w, id.By("namespace, pod, uid, node"), ksmGPUResources), r.scheduled},
		{"kube_node_status_allocatable", fmt.Sprintf(`max by (%s) (last_over_time(kube_node_status_allocatable{%s}[%s]))`, id.By("node, resource"), ksmGPUResources, w),
			r.levels(r.w.Capacity)},
		{"requests of bound pods", fmt.Sprintf(`sum by (%s) (max by (%s) (last_over_time(kube_pod_container_resource_requests{node!="", %s}[%s])) * on (%s) group_left () max by (%s) (last_over_time(kube_pod_status_phase{phase=~"Pending|Running"}[%s]) == 1))`,
			id.By("node, resource"), id.By("namespace, pod, uid, container, node, resource"), ksmGPUResources, w, id.By("namespace, pod, uid"), id.By("namespace, pod, uid"), w),
			r.levels(r.w.Bound)},
	}
}

// pod returns the pod of series m, made the first time.
func (r *waitReading) pod(m pmodel.Metric) *podReading {
	key := r.id.ClusterOf(m) + "/" + string(m["uid"])
	p := r.pods[key]
	if p == nil {
		p = &podReading{pod: model.PodKey{Cluster: r.id.ClusterOf(m), Namespace: string(m["namespace"]), Pod: string(m["pod"])}, requests: map[string]map[pmodel.Time]float64{}}
		r.pods[key] = p
	}
	return p
}

func (r *waitReading) unbound(m pmodel.Matrix) {
	for _, s := range m {
		p := r.pod(s.Metric)
		res := ksmResourceName(string(s.Metric["resource"]))
		if p.requests[res] == nil {
			p.requests[res] = map[pmodel.Time]float64{}
		}
		for _, v := range s.Values {
			p.requests[res][v.Timestamp] += float64(v.Value)
			p.lastUnbound = max(p.lastUnbound, v.Timestamp)
		}
	}
}

func (r *waitReading) created(m pmodel.Matrix) {
	for _, s := range m {
		if p := r.pods[r.id.ClusterOf(s.Metric)+"/"+string(s.Metric["uid"])]; p != nil && len(s.Values) > 0 {
			p.created = float64(s.Values[0].Value)
		}
	}
}

func (r *waitReading) scheduled(m pmodel.Matrix) {
	for _, s := range m {
		if p := r.pods[r.id.ClusterOf(s.Metric)+"/"+string(s.Metric["uid"])]; p != nil && len(s.Values) > 0 {
			p.boundAt, p.node = float64(s.Values[0].Value), string(s.Metric["node"])
		}
	}
}

// levels reads series of a node and resource into steps of into: the
// value of each grid point t (its last sample at or before t) from t until
// the next point, and NaN — not known — from the point after one with a
// sample where the series has none.
func (r *waitReading) levels(into map[model.NodeResource][]model.Level) func(pmodel.Matrix) {
	res := r.d.Resolution
	return func(m pmodel.Matrix) {
		for _, s := range m {
			k := model.NodeResource{Cluster: r.id.ClusterOf(s.Metric), Node: string(s.Metric["node"]), Resource: ksmResourceName(string(s.Metric["resource"]))}
			ls := into[k]
			for _, v := range s.Values {
				from := v.Timestamp.Time()
				if next := r.lastPoint[k].Time().Add(res); len(ls) > 0 && next.Before(from) {
					ls = append(ls, model.Level{From: next, Value: math.NaN()}) // points without a sample
				}
				if n := len(ls); n == 0 || ls[n-1].Value != float64(v.Value) {
					ls = append(ls, model.Level{From: from, Value: float64(v.Value)})
				}
				r.lastPoint[k] = v.Timestamp
			}
			into[k] = ls
		}
	}
}

// endLevels ends each node's steps where its series ended before the
// range's end: not known from the point after its last.
func (r *waitReading) endLevels() {
	for _, into := range []map[model.NodeResource][]model.Level{r.w.Capacity, r.w.Bound} {
		for k, ls := range into {
			if next := r.lastPoint[k].Time().Add(r.d.Resolution); next.Before(r.d.End) {
				into[k] = append(ls, model.Level{From: next, Value: math.NaN()})
			}
		}
	}
}

func (r *waitReading) schedulers(m pmodel.Matrix) {
	for _, s := range m {
		if len(s.Values) == 0 {
			continue
		}
		c := r.id.ClusterOf(s.Metric)
		if r.w.Schedulers == nil {
			r.w.Schedulers = map[string]map[string]int{}
		}
		if r.w.Schedulers[c] == nil {
			r.w.Schedulers[c] = map[string]int{}
		}
		r.w.Schedulers[c][string(s.Metric["name"])] += int(s.Values[len(s.Values)-1].Value)
	}
}

// probe is the window the scrape interval is counted over: an hour, or the
// range when shorter.
func (r *waitReading) probe() time.Duration { return min(time.Hour, r.d.End.Sub(r.d.Start)) }

// interval reads the scrape interval: the probe window over the most
// samples one node's series had in it, whole seconds; the resolution when
// not read.
func (r *waitReading) interval(m pmodel.Matrix) {
	most := 0.0
	for _, s := range m {
		for _, v := range s.Values {
			most = max(most, float64(v.Value))
		}
	}
	if most > 0 {
		r.w.Interval = (time.Duration(float64(r.probe()) / most)).Truncate(time.Second)
	}
}

// finish turns the pods read into d's PodWaits: a pod's request of each
// resource is its most at one grid point; it was bound at its
// scheduled time, else deleted at the last point it was seen unbound when
// that is before the range's end.
func (r *waitReading) finish() {
	if r.w.Interval == 0 {
		r.w.Interval = r.d.Resolution
	}
	r.endLevels()
	end := pmodel.TimeFromUnixNano(r.d.End.UnixNano())
	for _, p := range r.pods {
		if p.created == 0 {
			continue // its creation was not read: no wait to measure
		}
		pw := model.PodWait{Pod: p.pod, Created: unixSeconds(p.created), Node: p.node}
		for _, res := range slices.Sorted(maps.Keys(p.requests)) {
			most := 0.0
			for _, v := range p.requests[res] {
				most = max(most, v)
			}
			pw.Requests = append(pw.Requests, model.Request{Resource: res, Count: most})
		}
		switch {
		case p.boundAt > 0:
			pw.Scheduled = unixSeconds(p.boundAt)
		case p.lastUnbound < end:
			pw.Deleted = p.lastUnbound.Time().UTC()
		}
		r.w.Pods = append(r.w.Pods, pw)
	}
	slices.SortFunc(r.w.Pods, model.ComparePodWaits)
}

func unixSeconds(v float64) time.Time { return time.Unix(int64(v), 0).UTC() }

// ksmResourceName is the device plugin's name of a GPU resource that
// kube-state-metrics wrote with its non-alphanumerics as "_":
// nvidia_com_gpu_shared is nvidia.com/gpu.shared, nvidia_com_mig_1g_10gb_me
// nvidia.com/mig-1g.10gb+me (a MIG profile <n>g.<m>gb, then +<attributes>).
func ksmResourceName(r string) string {
	switch {
	case r == "nvidia_com_gpu":
		return "nvidia.com/gpu"
	case r == "nvidia_com_gpu_shared":
		return "nvidia.com/gpu.shared"
	case strings.HasPrefix(r, "nvidia_com_mig_"):
		parts := strings.Split(strings.TrimPrefix(r, "nvidia_com_mig_"), "_")
		name := strings.Join(parts[:min(2, len(parts))], ".")
		if len(parts) > 2 {
			name += "+" + strings.Join(parts[2:], "+")
		}
		return "nvidia.com/mig-" + name
	}
	return r
}

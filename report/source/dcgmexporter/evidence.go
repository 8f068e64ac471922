package dcgmexporter

import (
	"github.com/gputally/gputally/dcgmnames"

	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gputally/gputally/report/model"
)

// What the dcgm-exporter source could not read of a cluster, and so says
// (warnings) and keeps out of the advice (model.Dataset.NoDrain): no
// kube-state-metrics, a node without its capacity, time-slicing without
// renamed resources, no profiling fields. Only the goroutine of Collect
// uses it.
type dcgmEvidence struct {
	cluster string
	// anyDevice and anyKSM: some grid point had a device, or
	// kube-state-metrics' requests or capacity, in the cluster.
	anyDevice, anyKSM bool
	nodes             map[string]*nodeEvidence
}

// nodeEvidence is what the grid read of one node's capacity.
type nodeEvidence struct {
	name       string
	seenAt     int // the last grid point the node had a device at
	points     int // grid points the node had a device at
	noCapacity int // of them, without its kube_node_status_capacity
	// offered and whole: nvidia.com/gpu offered and whole GPUs split at the
	// last grid point that found it time-sliced without renaming; 0: none
	// did. sharing counts them at the current grid point.
	offered        float64
	whole, sharing int
}

func newDCGMEvidence(cluster string) *dcgmEvidence {
	return &dcgmEvidence{cluster: cluster, nodes: map[string]*nodeEvidence{}}
}

// node returns the evidence of node host, made the first time.
func (e *dcgmEvidence) node(host string) *nodeEvidence {
	n := e.nodes[host]
	if n == nil {
		n = &nodeEvidence{name: host}
		e.nodes[host] = n
	}
	return n
}

// point notes what grid point p holds of the cluster.
func (e *dcgmEvidence) point(p *gridPoint) {
	e.anyKSM = e.anyKSM || len(p.capacity)+len(p.requests) > 0
	e.anyDevice = e.anyDevice || len(p.devices) > 0
}

// see notes GPU pd of grid point j, on node n.
func (n *nodeEvidence) see(j int, p *gridPoint, pd *pointDevice) {
	if n.seenAt != j {
		n.seenAt, n.sharing = j, 0
		n.points++
		if _, ok := p.capacity[n.name]; !ok {
			n.noCapacity++
		}
	}
	if pd.shared == ksmGPU {
		n.sharing++
		n.offered, n.whole = p.capacity[n.name][ksmGPU], n.sharing
	}
}

// capacityUnread reports whether the node lacked its capacity at more than
// 1 % of its grid points: its unallocated time is then no evidence of free
// GPUs.
func (n *nodeEvidence) capacityUnread() bool { return n.noCapacity*100 > n.points }

// noDrain adds to nd the cluster's nodes whose capacity went unread: a GPU
// no pod is labelled on there may be held by pods dcgm-exporter does not
// map.
func (e *dcgmEvidence) noDrain(nd map[model.NodeKey]bool) {
	for _, n := range e.nodes {
		if n.capacityUnread() {
			nd[model.NodeKey{Cluster: e.cluster, Node: n.name}] = true
		}
	}
}

// warnings are what the source could not tell from the cluster's data;
// gpus are its GPUs as the grid saw them.
func (e *dcgmEvidence) warnings(gpus map[string]*dcgmGPU) []string {
	if !e.anyDevice && e.anyKSM {
		return []string{fmt.Sprintf("kube-state-metrics series in cluster %q, where no dcgm-exporter series are: their requests and capacity are not used (is the cluster label on both, with the same value?)", e.cluster)}
	}
	var out []string
	where := ""
	if e.cluster != "" {
		where = " in cluster " + e.cluster
	}
	var unread []string
	for _, name := range slices.Sorted(maps.Keys(e.nodes)) {
		n := e.nodes[name]
		switch {
		case e.anyKSM && n.capacityUnread():
			out = append(out, fmt.Sprintf("node %s has no kube_node_status_capacity at %d of its %d grid points: there its GPUs without pod labels count as unknown when they show work (activity, or memory in use) and as unallocated otherwise, and it gets no drain advice",
				model.NodeName(e.cluster, name), n.noCapacity, n.points))
		case n.capacityUnread():
			unread = append(unread, model.NodeName(e.cluster, name))
		}
		if n.offered > 0 {
			out = append(out, fmt.Sprintf("node %s offers %g nvidia.com/gpu on %d GPU(s): time-slicing without renamed resources, and dcgm-exporter labels only one of the pods that share a GPU; its GPUs are split over the running pods that request nvidia.com/gpu there, by the replicas they requested (allocation share, not usage)",
				model.NodeName(e.cluster, name), n.offered, n.whole))
		}
	}
	if !e.anyKSM && len(gpus) > 0 {
		out = append(out, "no kube-state-metrics series"+where+" (kube_node_status_capacity, kube_pod_container_resource_requests, kube_pod_status_phase): the report cannot tell a free GPU from one held by pods dcgm-exporter labels no pod on (time-sliced, DRA): GPUs without pod labels count as unknown when they show work (activity, or memory in use) and as unallocated otherwise; time-sliced GPUs are not split by allocation; and no node gets drain advice ("+strings.Join(unread, ", ")+"). Scrape kube-state-metrics to have them")
	}
	return append(out, profilingWarnings(e.cluster, gpus)...)
}

// profilingWarnings name the GPUs without graphics-engine activity under
// either naming and what the source reads instead.
func profilingWarnings(cluster string, gpus map[string]*dcgmGPU) []string {
	util, mig := 0, 0
	for _, g := range gpus {
		switch {
		case g.gr:
		case g.mig:
			mig++
		case g.util:
			util++
		}
	}
	if util+mig == 0 {
		return nil
	}
	where := ""
	if cluster != "" {
		where = " in cluster " + cluster
	}
	gr, gpuUtil := dcgmnames.GREngineActive, dcgmnames.GPUUtil
	msg := fmt.Sprintf("%d of %d GPUs%s have no graphics-engine activity (%s, %s up to 4.8: dcgm-exporter's profiling fields are off, or the GPU lacks them)", util+mig, len(gpus), where, gr.New, gr.Old)
	if util > 0 {
		msg += fmt.Sprintf(": the activity of %d is GPU utilization (%s, %s ÷ 100 up to 4.8) instead, the share of time any kernel ran, which reads busier than the graphics engine's activity for light work", util, gpuUtil.New, gpuUtil.Old)
	}
	if mig > 0 {
		msg += fmt.Sprintf("; %d are in MIG mode, where GPU utilization is not supported: their instances' time is unknown", mig)
	}
	return []string{msg}
}

package dcgmexporter

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	pmodel "github.com/prometheus/common/model"
)

// The node of a GPU (docs/report.md, "The node"): the labels that may name
// it, in the order they are read — dcgm-exporter's own (hostname since
// 4.8.3, Hostname before), then those a relabeling of
// __meta_kubernetes_pod_node_name adds (nodename, as dcgm-exporter's chart
// names it, node, kubernetes_node), and before all of them the label
// Options.NodeLabel names. Builds before dcgm-exporter took NODE_NAME write
// the exporter's pod into Hostname (gpu-operator #472, dcgm-exporter #58,
// #188; testdata/real), and so does a Helm install without it (pull
// request #736): a value that names a dcgm-exporter pod is never a node.
// Of the labels a series has, the node is the first whose value is a node
// kube-state-metrics knows, else the first that names no exporter pod; the
// label Options.NodeLabel names is the node whatever it holds.
var nodeLabels = []pmodel.LabelName{"hostname", "Hostname", "nodename", "node", "kubernetes_node"}

// hostLabel is one label of a series that may name its node.
type hostLabel struct {
	name, value string
	named       bool // the label Options.NodeLabel names
}

// hostLabelsOf returns the labels of m that may name its node, in the order
// they are read: nodeLabel's first.
func hostLabelsOf(m pmodel.Metric, nodeLabel string) []hostLabel {
	var out []hostLabel
	if v, ok := m[pmodel.LabelName(nodeLabel)]; ok && nodeLabel != "" {
		out = append(out, hostLabel{nodeLabel, string(v), true})
	}
	for _, l := range nodeLabels {
		if v, ok := m[l]; ok && string(l) != nodeLabel {
			out = append(out, hostLabel{string(l), string(v), false})
		}
	}
	return out
}

// exporterPodName matches the name of a dcgm-exporter DaemonSet's pod: the
// GPU Operator's nvidia-dcgm-exporter-57pvc, the chart's
// dcgm-exporter-6ldbb or dcgm-exporter-1615787551-qc8dm — a name ending in
// dcgm-exporter, any release suffixes, and the pod's five characters.
var exporterPodName = regexp.MustCompile(`(^|-)dcgm-exporter(-[a-z0-9]+)*-[a-z0-9]{5}$`)

// exporterPod reports whether v names a dcgm-exporter pod.
func exporterPod(v string) bool { return exporterPodName.MatchString(v) }

// resolveHosts chooses the node of every series not yet resolved, from its
// labels and the nodes kube-state-metrics knows at the points read so far
// (points, by cluster), and returns an error naming the first GPU (by
// UUID) whose series name no node.
func resolveHosts(series map[pmodel.Fingerprint]*dcgmSeries, points map[string][]*gridPoint) error {
	known := map[string]bool{}
	for _, ps := range points {
		for _, p := range ps {
			for n := range p.capacity {
				known[n] = true
			}
		}
	}
	var bad *dcgmSeries
	for _, s := range series {
		if !s.resolved {
			s.host, s.resolved = hostOf(s.hosts, known), true
		}
		if s.host == "" && s.dev.UUID != "" && (bad == nil || s.dev.UUID < bad.dev.UUID) {
			bad = s
		}
	}
	if bad != nil {
		return noNode(bad)
	}
	return nil
}

// hostOf returns the node the labels hosts name: the named label's value,
// else the first that kube-state-metrics knows as a node (known), else the
// first that names no exporter pod; "" when none does.
func hostOf(hosts []hostLabel, known map[string]bool) string {
	if len(hosts) > 0 && hosts[0].named {
		return hosts[0].value
	}
	for _, h := range hosts {
		if known[h.value] {
			return h.value
		}
	}
	for _, h := range hosts {
		if h.value != "" && !exporterPod(h.value) {
			return h.value
		}
	}
	return ""
}

// noNode says why the series of GPU s name no node, and how to have them
// name one.
func noNode(s *dcgmSeries) error {
	i := slices.IndexFunc(s.hosts, func(h hostLabel) bool { return exporterPod(h.value) })
	if i < 0 {
		return fmt.Errorf("the dcgm-exporter series of GPU %s (%s, gpu %q) have no hostname label, nor Hostname, nodename or node, nor kubernetes_node: the report cannot tell which node the GPU is on. dcgm-exporter leaves the hostname out when started with -n (--no-hostname, DCGM_EXPORTER_NO_HOSTNAME): run it without, or add the node's name with a relabeling of __meta_kubernetes_pod_node_name to nodename in its scrape config (dcgm-exporter's chart has one to uncomment), or name the label that holds it with --dcgm-exporter.node-label",
			s.dev.UUID, s.model, s.gpu)
	}
	var labels []string
	for _, h := range s.hosts {
		labels = append(labels, fmt.Sprintf("%s=%q", h.name, h.value))
	}
	return fmt.Errorf("the dcgm-exporter series of GPU %s (%s, gpu %q) name no node: %s is the exporter's pod, not a node (builds before dcgm-exporter took NODE_NAME write it there), and no other label names one (%s). Add the node's name with a relabeling of __meta_kubernetes_pod_node_name to node in dcgm-exporter's scrape config, or name the label that holds it with --dcgm-exporter.node-label",
		s.dev.UUID, s.model, s.gpu, labels[i], strings.Join(labels, ", "))
}

package advice

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gputally/gputally/report/model"
)

// Apply holds the configuration that implements the recommendations: YAML
// files and the node labels that select them. For a fleet whose series carry
// the report's cluster label it holds one Apply per cluster in Clusters, and
// nothing else.
type Apply struct {
	// Cluster is the cluster to apply it in, by the report's cluster label;
	// empty without one.
	Cluster string `json:"cluster,omitempty"`
	// MIGParted is a mig-parted config file (version v1) with one config per
	// node, gputally-<node>, that lists every GPU of the node by index:
	// the ones the advice repartitions with their new layout, all others as
	// they are.
	MIGParted string `json:"mig_parted,omitempty"`
	// MIGPartedLabels are the kubectl commands that select those configs.
	MIGPartedLabels []string `json:"mig_parted_labels"`
	// TimeSlicing is the device plugin's ConfigMap, one key per node class
	// (or per node, for a node with time-slicing of its own, which the key
	// keeps), with comments on the nodes it keeps sharing on or leaves out.
	TimeSlicing string `json:"time_slicing,omitempty"`
	// TimeSlicingLabels are the kubectl commands that select a key per node.
	TimeSlicingLabels []string `json:"time_slicing_labels"`
	// TimeSlicingSharing warns of the pods on those nodes, not moved by the
	// advice, whose GPUs the config would offer otherwise: that would start
	// or stop sharing, or share otherwise; one line per node.
	TimeSlicingSharing []string `json:"time_slicing_sharing"`
	// Kueue is a ResourceFlavor, a ClusterQueue per team and a LocalQueue per
	// namespace, kueue.x-k8s.io/v1beta2.
	Kueue string `json:"kueue,omitempty"`
	// Volcano is, for a cluster that runs Volcano, a Queue per team
	// (scheduling.volcano.sh/v1beta1, for the capacity plugin) and the
	// Namespaces annotated with the queue that picks them; instead of Kueue.
	Volcano string `json:"volcano,omitempty"`
	// SchedulerConfig is a KubeSchedulerConfiguration that packs GPU pods
	// (NodeResourcesFit, MostAllocated), when pods waited fragmented.
	SchedulerConfig string `json:"scheduler_config,omitempty"`
	// Clusters are the configurations per cluster, sorted by cluster, of a
	// fleet whose series carry the cluster label (the cluster "" is the
	// devices without it, among others with it); only those with anything
	// to apply.
	Clusters []Apply `json:"clusters,omitempty"`
}

// Any reports whether there is anything to apply.
func (a *Apply) Any() bool {
	return a.MIGParted != "" || a.TimeSlicing != "" || a.Kueue != "" || a.Volcano != "" || a.SchedulerConfig != "" || len(a.Clusters) > 0
}

// PerCluster returns the configurations to apply one at a time: a's
// Clusters, or a alone.
func (a *Apply) PerCluster() []Apply {
	if len(a.Clusters) > 0 {
		return a.Clusters
	}
	return []Apply{*a}
}

// dnsName turns s into a DNS-1123 label.
func dnsName(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			b[i] = '-'
		}
	}
	out := strings.Trim(string(b), "-")
	if len(out) > 63 {
		out = strings.Trim(out[:63], "-")
	}
	if out == "" {
		out = "x"
	}
	return out
}

func mustYAML(v any) string {
	var sb strings.Builder
	enc := yaml.NewEncoder(&sb)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		// The values are built here from plain types; encoding cannot fail.
		panic(fmt.Sprintf("encode yaml: %v", err))
	}
	return sb.String()
}

// shellWord quotes s for a POSIX shell when it is not a plain word (a node
// name from a metric label may hold anything).
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// oneLine is s with line breaks as spaces, for a comment line of a script or
// a YAML file: names from metric labels may hold anything.
func oneLine(s string) string { return strings.NewReplacer("\n", " ", "\r", " ").Replace(s) }

// commentLines joins comment lines, each kept to one line (oneLine), and
// ends them with a line break.
func commentLines(lines []string) string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = oneLine(l)
	}
	return strings.Join(out, "\n") + "\n"
}

// ClusterDir is the directory under WriteApply's of a cluster's
// configuration: its name as a DNS label, model.NoClusterDir for the
// cluster "".
func (a *Apply) ClusterDir() string {
	if a.Cluster == "" {
		return model.NoClusterDir
	}
	return dnsName(a.Cluster)
}

// Files WriteApply writes.
const (
	ApplyMIGPartedFile   = "mig-parted.yaml"
	ApplyTimeSlicingFile = "device-plugin-time-slicing.yaml"
	ApplyKueueFile       = "kueue.yaml"
	ApplyVolcanoFile     = "volcano-queues.yaml"
	ApplySchedulerFile   = "kube-scheduler-config.yaml"
	ApplyLabelsFile      = "label-nodes.sh"
)

// WriteApply writes the configuration of a into dir (created if missing): the
// mig-parted config, the device plugin ConfigMap, the Kueue objects or the
// Volcano queues and the kube-scheduler configuration as YAML files, and the
// node label commands as a shell script; files with nothing to apply are not
// written. A fleet in several clusters gets a
// directory per cluster (ClusterDir), each written alike.
func WriteApply(dir string, a *Apply) error {
	dirs := map[string]string{} // directory → the cluster written there
	for _, c := range a.Clusters {
		sub := c.ClusterDir()
		if other, ok := dirs[sub]; ok {
			return fmt.Errorf("write configuration: clusters %q and %q would both be written to %s", other, c.Cluster, filepath.Join(dir, sub))
		}
		dirs[sub] = c.Cluster
		if err := WriteApply(filepath.Join(dir, sub), &c); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write configuration: %w", err)
	}
	var labels strings.Builder
	if len(a.MIGPartedLabels)+len(a.TimeSlicingLabels) > 0 {
		labels.WriteString("#!/bin/sh\n# Node labels that select the configuration gputally's report wrote next to this file.\n")
		if a.Cluster != "" {
			labels.WriteString("# Run them against cluster " + oneLine(a.Cluster) + ".\n")
		}
		labels.WriteString("set -e\n")
		for _, s := range a.TimeSlicingSharing {
			labels.WriteString("# warning: " + oneLine(s) + "\n")
		}
		for _, l := range append(slices.Clone(a.MIGPartedLabels), a.TimeSlicingLabels...) {
			labels.WriteString(l + "\n")
		}
	}
	for _, f := range []struct {
		name, text string
		perm       os.FileMode
	}{
		{ApplyMIGPartedFile, a.MIGParted, 0o644},
		{ApplyTimeSlicingFile, a.TimeSlicing, 0o644},
		{ApplyKueueFile, a.Kueue, 0o644},
		{ApplyVolcanoFile, a.Volcano, 0o644},
		{ApplySchedulerFile, a.SchedulerConfig, 0o644},
		{ApplyLabelsFile, labels.String(), 0o755},
	} {
		if f.text == "" {
			continue
		}
		path := filepath.Join(dir, f.name)
		if err := os.WriteFile(path, []byte(f.text), f.perm); err != nil {
			return fmt.Errorf("write configuration %s: %w", path, err)
		}
	}
	return nil
}

package dcgmexporter

import (
	"slices"
	"strings"

	"github.com/gputally/gputally/report/model"
)

// The scrape target's pod (docs/report.md, "The scrape target is no
// holder"). A ServiceMonitor with honorLabels: true — as NVIDIA's recipes
// set it — gives a series that dcgm-exporter labelled no pod on the
// namespace, pod and container of its scrape target: the exporter's own pod
// (NVIDIA/aicr's evidence, testdata/real/nvidia-aicr-h100-gpu-util.json).
// dcgm-exporter labels a device with a pod only when the kubelet allocated
// the device to it — a device plugin resource, which kube-state-metrics
// lists among the pod's requests, or a DRA claim, which it marks with its
// dra_* labels. So a pod labelled on a device is the scrape target, not a
// holder, when it holds no claim, requests no nvidia.com resource on a node
// whose requests kube-state-metrics shows, and names itself the target: its
// pod's name is a dcgm-exporter DaemonSet's (nvidia-dcgm-exporter-57pvc),
// its container's holds "dcgm-exporter", or the pod is one of the
// DaemonSet behind the series' service label (service
// nvidia-dcgm-exporter, pod nvidia-dcgm-exporter-wqqqn) — a label every
// series of the scrape has, a holder's too, so only a pod it names tells.
// Without kube-state-metrics for the node the names alone tell.

// dropScrapeTargets removes from the holders of every device of p the
// scrape target's pods, and notes them in p.targets.
func dropScrapeTargets(p *gridPoint) {
	var requesting map[model.HolderKey]bool // pods (no container) requesting an nvidia.com resource
	for _, r := range p.devices {
		if len(r.holders) == 0 {
			continue
		}
		if requesting == nil {
			requesting = map[model.HolderKey]bool{}
			for _, rq := range p.requests {
				requesting[model.HolderKey{Namespace: rq.holder.Namespace, Pod: rq.holder.Pod}] = true
			}
		}
		_, ksm := p.capacity[r.id.host]
		r.holders = slices.DeleteFunc(r.holders, func(h model.HolderKey) bool {
			target := !r.id.dra && !(ksm && requesting[model.HolderKey{Namespace: h.Namespace, Pod: h.Pod}]) &&
				(exporterPod(h.Pod) || strings.Contains(h.Container, "dcgm-exporter") || servicePod(r.id.service, h.Pod))
			if target {
				if p.targets == nil {
					p.targets = map[model.HolderKey]bool{}
				}
				p.targets[h] = true
			}
			return target
		})
	}
}

// servicePod reports whether pod is one of the DaemonSet pods behind the
// scrape's service: its name, a dash and five characters.
func servicePod(service, pod string) bool {
	rest, ok := strings.CutPrefix(pod, service+"-")
	return service != "" && ok && len(rest) == 5 && !strings.Contains(rest, "-")
}

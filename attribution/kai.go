package attribution

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Defaults of KAIConfig: KAI-Scheduler's binder.resourceReservation.namespace
// and appLabel (kai-scheduler/KAI-Scheduler@d5bc503:pkg/common/constants/
// constants.go:23, deployments/kai-scheduler/values.yaml:47-53).
const (
	DefaultKAIReservationNamespace = "kai-resource-reservation"
	DefaultKAIReservationApp       = "kai-resource-reservation"
)

// KAIConfig names KAI-Scheduler's reservation pods: the pods in Namespace
// labelled app=App and runai-gpu-group=<group>. Both are settings of KAI's
// chart; empty fields take the defaults.
type KAIConfig struct {
	ReservationNamespace string
	ReservationApp       string
}

func (c KAIConfig) withDefaults() KAIConfig {
	if c.ReservationNamespace == "" {
		c.ReservationNamespace = DefaultKAIReservationNamespace
	}
	if c.ReservationApp == "" {
		c.ReservationApp = DefaultKAIReservationApp
	}
	return c
}

// reservation reports whether p is a reservation pod of KAI-Scheduler's
// binder (resource_reservation.go:533-560). Names are not read: their format
// changed (PR #1693).
func (c KAIConfig) reservation(p *Pod) bool {
	return p.Namespace == c.ReservationNamespace && p.Labels[kaiAppLabel] == c.ReservationApp && p.Labels[kaiGPUGroup] != ""
}

// kaiSharer reports whether p holds a portion of a GPU through KAI's GPU
// sharing: the binder set received-resource-type: Fraction before binding
// (binder.go:42-83).
func (c KAIConfig) sharer(p *Pod) bool {
	return p.Namespace != c.ReservationNamespace && p.Annotations[kaiReceivedType] == "Fraction"
}

// kaiGroups returns the GPU groups p holds a portion of: its runai-gpu-group
// label, and for a pod with fractions of several GPUs each
// runai-gpu-group/<group> label (resource_reservation.go:274-303), sorted.
func kaiGroups(p *Pod) []string {
	var groups []string
	for k, v := range p.Labels {
		if (k == kaiGPUGroup || strings.HasPrefix(k, kaiGPUGroup+"/")) && v != "" && !slices.Contains(groups, v) {
			groups = append(groups, v)
		}
	}
	slices.Sort(groups)
	return groups
}

// kaiPortion returns the part of a GPU of memMiB MiB that sharer p holds:
// its gpu-fraction, or its gpu-memory request as KAI's scheduler turns it
// into a portion, ceil(memory / GPU memory × 100) / 100
// (pkg/scheduler/api/node_info/gpu_sharing_node_info.go:355-358).
func kaiPortion(p *Pod, memMiB uint64) (float64, error) {
	if s, ok := p.Annotations[kaiFraction]; ok {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || !(f > 0 && f <= 1) {
			return 0, fmt.Errorf("%s %q: want a number in (0, 1]", kaiFraction, s)
		}
		return f, nil
	}
	s, ok := p.Annotations[kaiMemory]
	if !ok {
		return 0, fmt.Errorf("neither %s nor %s", kaiFraction, kaiMemory)
	}
	mem, err := strconv.ParseInt(s, 10, 64)
	if err != nil || mem <= 0 {
		return 0, fmt.Errorf("%s %q: want MiB, a positive integer", kaiMemory, s)
	}
	if memMiB == 0 {
		return 0, fmt.Errorf("%s %q: the GPU's memory is not known", kaiMemory, s)
	}
	portion := math.Ceil(float64(mem)/float64(memMiB)*100) / 100
	if portion > 1 {
		return 0, fmt.Errorf("%s %q: more than the GPU's %d MiB", kaiMemory, s, memMiB)
	}
	return portion, nil
}

// kaiContainer returns the container of p that holds its portion: the one
// gpu-fraction-container-name names (an init container may be named), else
// the first (README; gpu-sharing-non-default-container.yaml).
func kaiContainer(p *Pod) (string, error) {
	name, ok := p.Annotations[kaiContainerName]
	if !ok {
		if len(p.Containers) == 0 {
			return "", fmt.Errorf("no containers")
		}
		return p.Containers[0], nil
	}
	if !slices.Contains(p.Containers, name) && !slices.Contains(p.InitContainers, name) {
		return "", fmt.Errorf("%s %q: no such container", kaiContainerName, name)
	}
	return name, nil
}

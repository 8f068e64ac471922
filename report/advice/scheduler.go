package advice

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/gputally/gputally/report/model"
)

// The schedulers the advice writes queues for (Settings.Scheduler).
const (
	// SchedulerAuto reads the scheduler from the data: Volcano's queues for
	// a cluster whose GPU pods name volcano as their scheduler
	// (kube_pod_scheduler), Kueue's otherwise.
	SchedulerAuto = "auto"
	// SchedulerKueue writes Kueue's objects, whatever the data says.
	SchedulerKueue = "kueue"
	// SchedulerVolcano writes Volcano's queues, whatever the data says.
	SchedulerVolcano = "volcano"
)

// Schedulers lists the values Settings.Scheduler takes.
var Schedulers = []string{SchedulerAuto, SchedulerKueue, SchedulerVolcano}

// volcanoSchedulerName is the schedulerName of pods Volcano places.
const volcanoSchedulerName = "volcano"

// schedulerOf returns the scheduler whose queues d's cluster gets, and a
// sentence saying how that was decided: the setting, or the GPU pods'
// schedulerName (model.Waiting.Schedulers), never a guess — a cluster whose schedulerName was not read
// gets Kueue's objects, and the sentence says so and names the flag.
func (a *adviser) schedulerOf(d *model.Dataset) (string, string) {
	if a.scheduler == SchedulerKueue || a.scheduler == SchedulerVolcano {
		return a.scheduler, "--scheduler=" + a.scheduler
	}
	read, volcano := 0, 0
	names := map[string]bool{}
	if d.Waiting != nil {
		for _, byName := range d.Waiting.Schedulers {
			for name, n := range byName {
				read += n
				names[name] = true
				if name == volcanoSchedulerName {
					volcano += n
				}
			}
		}
	}
	switch {
	case read == 0:
		return SchedulerKueue, "not read (no kube_pod_scheduler series of the GPU pods): Kueue objects; pass --scheduler=volcano for a cluster that runs Volcano"
	case volcano > 0:
		return SchedulerVolcano, fmt.Sprintf("%d of the %d GPU pods whose scheduler was read name volcano (kube_pod_scheduler)", volcano, read)
	}
	return SchedulerKueue, fmt.Sprintf("none of the %d GPU pods whose scheduler was read names volcano (%s, kube_pod_scheduler): Kueue objects", read, strings.Join(slices.Sorted(maps.Keys(names)), ", "))
}

// clusterCapacity returns, per GPU resource, the devices d's nodes offer
// at the range's end (model.Waiting.Capacity); nil when not read.
func clusterCapacity(d *model.Dataset) map[string]int {
	if d.Waiting == nil || len(d.Waiting.Capacity) == 0 {
		return nil
	}
	out := map[string]int{}
	for k, levels := range d.Waiting.Capacity {
		if v := model.LevelAt(levels, d.End); !math.IsNaN(v) {
			out[k.Resource] += int(v)
		}
	}
	return out
}

package dcgmexporter

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gputally/gputally/dcgmnames"
	"github.com/gputally/gputally/report/model"
)

// Activity signals that disagree (docs/report.md, "The label shapes of real
// clusters"). An exporter whose profiling module stopped writes the
// graphics engine's activity (DCGM_FI_PROF_GR_ENGINE_ACTIVE; from 4.9
// …_GR_ENGINE_UTIL_RATIO) as 0 under full load while GPU utilization
// (DCGM_FI_DEV_GPU_UTIL; …_GPU_UTIL_RATIO) shows 99–100 % (dcgm-exporter
// #662). At a grid point where a whole GPU's graphics-engine activity reads
// idle (below the idle threshold) while its GPU utilization shows work (at
// or above it), by more than GPU_UTIL's rounding to a whole percent, its
// activity there is its GPU utilization: the signal that moves, so that no
// GPU any signal shows busy is read idle, priced idle or advised to be
// released. The GPUs it happened on are named, with how long. A MIG
// instance has no GPU utilization to tell.

// gpuUtilRounding is half a percent, and a float64's error past it:
// GPU_UTIL is a whole percent, so a reading of GR_ENGINE_ACTIVE within it
// is no disagreement.
const gpuUtilRounding = 0.005 + 1e-9

// decide sets the reading's activity against the idle threshold idleBelow:
// the graphics engine's, else GPU utilization (signal); GPU utilization
// where the two disagree, which it notes (disagrees).
func (r *deviceReading) decide(idleBelow float64) {
	r.act, r.disagrees, r.decided = r.signal(), false, true
	if r.id.dev.GI != "" || math.IsNaN(r.gr) || math.IsNaN(r.util) {
		return
	}
	if u := r.util; r.gr < idleBelow && u >= idleBelow && u-r.gr > gpuUtilRounding {
		r.act, r.disagrees = u, true
	}
}

// disagreementWarnings name the GPUs whose signals disagreed, with how long
// (grid points × grid), and what was read instead.
func disagreementWarnings(cluster string, gpus map[string]*dcgmGPU, grid time.Duration) []string {
	var named []string
	for _, uuid := range slices.Sorted(maps.Keys(gpus)) {
		if g := gpus[uuid]; g.disagree > 0 {
			named = append(named, fmt.Sprintf("%s GPU %s (%s h)", model.NodeName(cluster, g.host), g.gpu, model.FormatHours(float64(g.disagree)*grid.Hours())))
		}
	}
	if len(named) == 0 {
		return nil
	}
	slices.Sort(named)
	gr, util := dcgmnames.GREngineActive, dcgmnames.GPUUtil
	return []string{fmt.Sprintf("the graphics engine's activity (%s, %s up to 4.8) read idle while GPU utilization (%s, %s up to 4.8) showed work on %d GPU(s)%s: %s. Their activity there is GPU utilization, the signal that moves: a GPU any signal shows busy is not read idle (a profiling module stuck at 0 reads so under full load, dcgm-exporter #662; restarting dcgm-exporter, or running dcgmi dmon -e 1001 in it, restores it)",
		gr.New, gr.Old, util.New, util.Old, len(named), inCluster(cluster), strings.Join(named, ", "))}
}

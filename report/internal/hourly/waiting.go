package hourly

import (
	"time"

	"github.com/gputally/gputally/report/model"
)

// At is Start + h hours.
func At(h float64) time.Time { return Start.Add(time.Duration(h * float64(time.Hour))) }

// Levels returns a step function of (hour, value) pairs from Start:
// Levels(0, 3, 5, 4) is 3 from Start, 4 from Start + 5 h.
func Levels(pairs ...float64) []model.Level {
	out := make([]model.Level, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, model.Level{From: At(pairs[i]), Value: pairs[i+1]})
	}
	return out
}

// WaitingStory returns an 8-bucket dataset (1 h steps from Start) in which
// GPU pods wait, as the tests of analysis, advice and render read it. The
// figures each test expects are worked out by hand in that test; the
// story is:
//
// kube-state-metrics is scraped every 30 s. Nodes a, b and c offer
// nvidia.com/gpu ×4, ×4 and ×2. Bound to them: a 2 all along; b 3, then 4
// from 5 h; c 0, 2 from 2 h, 0 from 3 h, 2 from 6 h — so free a 2; b 1, then
// 0 from 5 h; c 2, 0 in [2 h, 3 h), 2 again, 0 from 6 h. Nodes m1 and m2
// offer nvidia.com/mig-1g.10gb ×7 and have 6 bound, m2 7 from 7.5 h.
//
// The pods (model.PodWait):
//   - research/train, nvidia.com/gpu ×4: created 0.5 h, bound to b at 5 h;
//   - research/early, nvidia.com/gpu ×1: created 2 h before Start, bound to
//     a at 0.25 h;
//   - research/quick, nvidia.com/gpu ×1: created 6 h 10 m, bound to c 20 s
//     later (within the scrape interval);
//   - notebooks/nb-1, nvidia.com/gpu ×1: created 1 h, deleted unbound at
//     3.25 h; its pod label says team data;
//   - notebooks/nb-2, nvidia.com/gpu ×2: created 3 h, bound to c at 6 h;
//   - inference/mig-1, nvidia.com/mig-1g.10gb ×2: created 7 h, still
//     waiting at the end.
//
// The team map (Teams) puts research and notebooks in team ml.
//
// The ledger: notebooks/hog holds GPU-H (on node a, 1,000 EUR/h) idle for
// 2^b × 3.6 s in bucket b — 2^b EUR — and busy the rest of each hour;
// inference/serve holds GPU-S (node c, 2 EUR/h) busy for all 8 hours.
func WaitingStory() *model.Dataset {
	d := Dataset(8)
	hog := Device{Key: model.DeviceKey{UUID: "GPU-H"}, Host: "a", GPU: "0", Model: "NVIDIA H100 80GB HBM3", EURPerHour: 1000}
	serve := Device{Key: model.DeviceKey{UUID: "GPU-S"}, Host: "c", GPU: "0", Model: "NVIDIA H100 80GB HBM3", EURPerHour: 2}
	for b := range 8 {
		idle := float64(int(1)<<b) * 3.6
		Add(d, hog, model.HolderKey{Namespace: "notebooks", Pod: "hog", Container: "main"}, b, model.StateIdle, idle)
		Add(d, hog, model.HolderKey{Namespace: "notebooks", Pod: "hog", Container: "main"}, b, model.StateBusy, 3600-idle)
		Add(d, serve, model.HolderKey{Namespace: "inference", Pod: "serve", Container: "main"}, b, model.StateBusy, 3600)
	}
	d.Alloc[model.HoldingKey{Dev: hog.Key, Holder: model.HolderKey{Namespace: "notebooks", Pod: "hog", Container: "main"}}] = model.Alloc{Resource: "nvidia.com/gpu"}
	d.PodTeams[model.PodKey{Namespace: "notebooks", Pod: "nb-1"}] = "data"
	gpu, mig := "nvidia.com/gpu", "nvidia.com/mig-1g.10gb"
	node := func(n, r string) model.NodeResource { return model.NodeResource{Node: n, Resource: r} }
	pod := func(ns, name, r string, n float64, created, scheduled, deleted float64, on string) model.PodWait {
		p := model.PodWait{Pod: model.PodKey{Namespace: ns, Pod: name}, Requests: []model.Request{{Resource: r, Count: n}}, Created: At(created), Node: on}
		if scheduled >= 0 {
			p.Scheduled = At(scheduled)
		}
		if deleted >= 0 {
			p.Deleted = At(deleted)
		}
		return p
	}
	d.Waiting = &model.Waiting{
		Interval: 30 * time.Second,
		Capacity: map[model.NodeResource][]model.Level{
			node("a", gpu): Levels(0, 4), node("b", gpu): Levels(0, 4), node("c", gpu): Levels(0, 2),
			node("m1", mig): Levels(0, 7), node("m2", mig): Levels(0, 7),
		},
		Bound: map[model.NodeResource][]model.Level{
			node("a", gpu): Levels(0, 2), node("b", gpu): Levels(0, 3, 5, 4), node("c", gpu): Levels(0, 0, 2, 2, 3, 0, 6, 2),
			node("m1", mig): Levels(0, 6), node("m2", mig): Levels(0, 6, 7.5, 7),
		},
		Pods: []model.PodWait{
			pod("inference", "mig-1", mig, 2, 7, -1, -1, ""),
			pod("notebooks", "nb-1", gpu, 1, 1, -1, 3.25, ""),
			pod("notebooks", "nb-2", gpu, 2, 3, 6, -1, "c"),
			pod("research", "early", gpu, 1, -2, 0.25, -1, "a"),
			pod("research", "quick", gpu, 1, 6+10.0/60, 6+10.0/60+20.0/3600, -1, "c"),
			pod("research", "train", gpu, 4, 0.5, 5, -1, "b"),
		},
	}
	return d
}

// Teams is the team map of WaitingStory: research and notebooks are team ml.
type Teams struct{}

// Team returns ml for research and notebooks.
func (Teams) Team(ns string) (string, bool) {
	if ns == "research" || ns == "notebooks" {
		return "ml", true
	}
	return "", false
}

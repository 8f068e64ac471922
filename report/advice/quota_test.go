package advice_test

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/report/advice"
	"github.com/gputally/gputally/report/analysis"
	"github.com/gputally/gputally/report/internal/applyspec"
	"github.com/gputally/gputally/report/internal/hourly"
	"github.com/gputally/gputally/report/model"
)

// quotaFleet is two hours of busy, whole H100s (2 EUR/h) in clusters east
// and west, every pod's container main:
//
//	east  train/big-0   GPU-E0 … GPU-E7 (one 8-GPU pod)          team train
//	      shared/a-0    GPU-E8                                   team a (pod label)
//	      shared/b-0…2  GPU-E9 … GPU-E11                         team b (pod label)
//	west  train/w-0, w-1  GPU-W0, GPU-W1                         team train
//
// all busy in both buckets. With concurrent, the source read the devices
// busy at once per namespace at a 30 s scrape interval: at one instant east's
// train 8 and shared 4 (a-0 with b-0…2), west's train 2; without it the
// advice falls back to the devices busy in one step bucket.
func quotaFleet(t *testing.T, concurrent bool) (*analysis.Result, *model.Dataset) {
	t.Helper()
	d := hourly.Dataset(2)
	hold := func(cluster, uuid, ns, pod string) {
		dev := hourly.Device{Key: model.DeviceKey{Cluster: cluster, UUID: uuid}, Host: "n-" + cluster, GPU: uuid[len(uuid)-1:], Model: "NVIDIA H100 80GB HBM3", EURPerHour: 2}
		h := model.HolderKey{Namespace: ns, Pod: pod, Container: "main"}
		for b := range 2 {
			hourly.Add(d, dev, h, b, model.StateBusy, 3600)
		}
		d.Alloc[model.HoldingKey{Dev: dev.Key, Holder: h}] = model.Alloc{Resource: "nvidia.com/gpu", Sharing: "exclusive"}
		d.MIGMode[dev.Key.GPU()] = "disabled"
	}
	for i := range 8 {
		hold("east", fmt.Sprintf("GPU-E%d", i), "train", "big-0")
	}
	hold("east", "GPU-E8", "shared", "a-0")
	d.PodTeams[model.PodKey{Cluster: "east", Namespace: "shared", Pod: "a-0"}] = "a"
	for i := range 3 {
		pod := fmt.Sprintf("b-%d", i)
		hold("east", fmt.Sprintf("GPU-E%d", 9+i), "shared", pod)
		d.PodTeams[model.PodKey{Cluster: "east", Namespace: "shared", Pod: pod}] = "b"
	}
	hold("west", "GPU-W0", "train", "w-0")
	hold("west", "GPU-W1", "train", "w-1")
	if concurrent {
		// The intervals ending at 30 s, 60 s and 90 s.
		d.Concurrency = &model.Concurrency{Interval: 30 * time.Second, Scraped: true, First: hourly.Start.Add(30 * time.Second), Busy: map[model.ConcurrencyKey][]int32{
			{Cluster: "east", Namespace: "train"}:  {0, 8, 0},
			{Cluster: "east", Namespace: "shared"}: {0, 4, 0},
			{Cluster: "west", Namespace: "train"}:  {0, 2, 0},
		}}
	}
	a, err := analysis.Analyze(d, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	return a, d
}

// TestKueueQuotas: a team's quota is the devices it kept busy at once ×
// headroom (1 here), per cluster. By hand:
//
//   - east train 8: its one pod holds 8 GPUs, all busy — 8 devices, not 1 pod;
//   - east a 1, b 3: namespace shared is theirs together, 4 busy at once; a
//     team's part is bounded by its own holdings busy in one bucket (a-0: 1;
//     b-0…2: 3), not the namespace's 4 each;
//   - west train 2: east's 8 are another cluster's.
//
// The same with the concurrency reading and without it (the bucket count).
func TestKueueQuotas(t *testing.T) {
	want := map[string]map[string]int{
		"east": {"train nvidia.com/gpu": 8, "a nvidia.com/gpu": 1, "b nvidia.com/gpu": 3},
		"west": {"train nvidia.com/gpu": 2},
	}
	for _, concurrent := range []bool{true, false} {
		t.Run(fmt.Sprintf("concurrency read %v", concurrent), func(t *testing.T) {
			a, d := quotaFleet(t, concurrent)
			adv := advice.Advise(a, d, advice.Settings{Headroom: 1, ReleaseBelow: 0.05, LowDutyBelow: 0.3, DrainAbove: 0.95})
			got := map[string]map[string]int{}
			for _, ap := range adv.Apply.Clusters {
				got[ap.Cluster] = applyspec.CheckKueue(t, ap.Kueue)
			}
			if !maps.EqualFunc(got, want, maps.Equal) {
				t.Errorf("quotas %v, want %v", got, want)
			}
			if concurrent && len(adv.Apply.Clusters) > 0 {
				const bound = "(namespace shared is shared with other teams or resources: its holdings of nvidia.com/gpu busy in one step bucket bound it)"
				if east := adv.Apply.Clusters[0].Kueue; strings.Count(east, bound) != 2 {
					t.Errorf("east's Kueue objects say %d times that shared's count is bounded, want 2 (a and b):\n%s", strings.Count(east, bound), east)
				}
			}
		})
	}
}

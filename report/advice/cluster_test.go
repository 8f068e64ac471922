package advice_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/report/advice"
	"github.com/gputally/gputally/report/analysis"
	"github.com/gputally/gputally/report/model"
)

// clusterDay is a day of GPU-X on node n1 in each of clusters: in east it
// is held by ml/a/main and busy 1 % of the day (release frees its 10 EUR);
// in west it sits unallocated (drain frees its 7 EUR). The same UUID and node
// name in both.
func clusterDay(t *testing.T, clusters ...string) (*analysis.Result, *model.Dataset) {
	t.Helper()
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	d := model.NewDataset(model.Range{Start: start, End: start.Add(24 * time.Hour), Step: 24 * time.Hour, Resolution: 5 * time.Minute})
	d.Ledger = map[model.HoldingKey]*model.LedgerEntry{}
	for _, c := range clusters {
		k := model.HoldingKey{Dev: model.DeviceKey{Cluster: c, UUID: "GPU-X"}}
		e := &model.LedgerEntry{Model: "NVIDIA H100 80GB HBM3", Host: "n1", GPU: "0", Last: 0}
		if c == "west" {
			e.Seconds[model.StateUnallocated], e.EUR[model.StateUnallocated] = 86400, 7
		} else {
			k.Holder = model.HolderKey{Namespace: "ml", Pod: "a", Container: "main"}
			e.Seconds[model.StateBusy], e.EUR[model.StateBusy] = 864, 0.1
			e.Seconds[model.StateIdle], e.EUR[model.StateIdle] = 85536, 9.9
			e.BusyBuckets.Add(0)
			d.Alloc[k] = model.Alloc{Resource: "nvidia.com/gpu", Sharing: "exclusive"}
		}
		d.Ledger[k] = e
		d.GPUs[k.Dev.GPU()] = &model.GPUSeen{Host: "n1", GPU: "0", Seen: []float64{86400}, FirstLost: -1}
		d.MIGMode[k.Dev.GPU()] = "disabled"
	}
	d.Present[0] = true
	a, err := analysis.Analyze(d, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	return a, d
}

var clusterSettings = advice.Settings{Headroom: 1.2, ReleaseBelow: 0.05, LowDutyBelow: 0.3, DrainAbove: 0.95}

// TestAdvisePerCluster: each cluster's GPU-X is freed by its own
// recommendation, which names the cluster; the headline is their sum, 17
// EUR a day per month, most EUR first.
func TestAdvisePerCluster(t *testing.T) {
	month := model.HoursPerMonth / 24
	adv := adviseDay(t, "east", "west")
	type rec struct{ kind, cluster, target string }
	want := []rec{{"release", "east", "ml/a/main"}, {"drain", "west", "n1"}}
	if len(adv.Recommendations) != len(want) {
		t.Fatalf("recommendations %+v, want %v", adv.Recommendations, want)
	}
	for i, r := range adv.Recommendations {
		if (rec{r.Kind, r.Cluster, r.Target}) != want[i] {
			t.Errorf("recommendation %d: %s %s in %q, want %v", i, r.Kind, r.Target, r.Cluster, want[i])
		}
	}
	if math.Abs(adv.FreedEURPerMonth-17*month) > 1e-9 || adv.HoursPerMonth != model.HoursPerMonth {
		t.Errorf("headline %.4f EUR/month over %g h, want 17 EUR a day: %.4f over %g", adv.FreedEURPerMonth, adv.HoursPerMonth, 17*month, model.HoursPerMonth)
	}
}

// TestAdviseOneNamedCluster: a fleet in one named cluster gets advice as
// before, each recommendation naming the cluster.
func TestAdviseOneNamedCluster(t *testing.T) {
	adv := adviseDay(t, "east")
	if len(adv.Recommendations) != 1 || adv.Recommendations[0].Cluster != "east" || adv.Recommendations[0].Kind != "release" {
		t.Errorf("recommendations %+v, want east's release", adv.Recommendations)
	}
}

func adviseDay(t *testing.T, clusters ...string) *advice.Advice {
	t.Helper()
	a, d := clusterDay(t, clusters...)
	return advice.Advise(a, d, clusterSettings)
}

// TestUnlabelledAmongClusters: a GPU without the cluster label beside one
// with it is a cluster without a name, and the report says so.
func TestUnlabelledAmongClusters(t *testing.T) {
	a, d := clusterDay(t, "", "west")
	want := "1 of 2 GPUs carry no cluster label while the others do"
	found := false
	for _, w := range a.Warnings {
		found = found || strings.Contains(w, want)
	}
	if !found {
		t.Errorf("warnings %q, want %q", a.Warnings, want)
	}
	adv := advice.Advise(a, d, clusterSettings)
	if len(adv.Recommendations) != 2 || adv.Recommendations[0].Cluster != "" || adv.Recommendations[1].Cluster != "west" {
		t.Errorf("recommendations %+v, want the unnamed cluster's release and west's drain", adv.Recommendations)
	}
}

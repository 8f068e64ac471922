package advice_test

import (
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

var waitSettings = advice.Settings{Teams: hourly.Teams{}, Headroom: 1.2, ReleaseBelow: 0.05, LowDutyBelow: 0.3, DrainAbove: 0.95}

// adviseStory advises on d, hourly.WaitingStory or a variant of it.
func adviseStory(t *testing.T, d *model.Dataset, s advice.Settings) *advice.Advice {
	t.Helper()
	a, err := analysis.Analyze(d, s.Teams, true)
	if err != nil {
		t.Fatal(err)
	}
	return advice.Advise(a, d, s)
}

// TestQuotaFromWaitingDemand: quotas cover what a team's pods held and
// waited for at the same time, and every resource its pods requested. In
// hourly.WaitingStory, with headroom 1.2 and no concurrency reading (the
// step buckets):
//
//   - team ml (research, notebooks): the hog busy in every bucket (1) and
//     waiting at the buckets' ends (1 h, 2 h, …) train 4 at 1–4 h, nb-2 2
//     at 3–5 h (early waits at none): most at 3 h and 4 h, 1 + 6 = 7 →
//     ⌈8.4⌉ = 9 (the busy peak alone gave 2; train alone needs 4);
//   - team data: nb-1 only waited, 1 → ⌈1.2⌉ = 2 — a queue for a team that
//     held nothing;
//   - team inference: serve busy, 1 → 2 of nvidia.com/gpu, and mig-1's 2
//     MIG instances waited → ⌈2.4⌉ = 3 of nvidia.com/mig-1g.10gb, a
//     resource it held none of.
//
// Namespace notebooks holds pods of ml and data: a LocalQueue per team.
func TestQuotaFromWaitingDemand(t *testing.T) {
	adv := adviseStory(t, hourly.WaitingStory(), waitSettings)
	got := applyspec.CheckKueue(t, adv.Apply.Kueue)
	want := map[string]int{"ml nvidia.com/gpu": 9, "data nvidia.com/gpu": 2, "inference nvidia.com/gpu": 2, "inference nvidia.com/mig-1g.10gb": 3}
	if !maps.Equal(got, want) {
		t.Errorf("quotas %v, want %v\n%s", got, want, adv.Apply.Kueue)
	}
	for _, s := range []string{
		"#   nvidia.com/gpu: at most 1 busy + 6 waited for at once × headroom 1.20 → 9",
		"#   nvidia.com/mig-1g.10gb: at most 0 busy + 2 waited for at once × headroom 1.20 → 3",
		"name: gputally-ml\n  namespace: notebooks", "name: gputally-data\n  namespace: notebooks",
	} {
		if !strings.Contains(adv.Apply.Kueue, s) {
			t.Errorf("Kueue objects lack %q:\n%s", s, adv.Apply.Kueue)
		}
	}
}

// TestQuotaWaitingAtOnce: waiting is counted at the resolution busy is,
// at each interval's end, and no quota is below a waiting pod's request.
// sprint/burst (3 GPUs, team sprint) waits 3.4 → 3.6 h: at no bucket's end
// (3 h, 4 h), so per step bucket its team's demand is 0 — the floor of 1,
// raised to burst's 3 — while the concurrency reading (30 min, the hog busy
// in all 16 intervals) sees it waiting at 3.5 h: 3 → ⌈3.6⌉ = 4. The other
// teams are as in TestQuotaFromWaitingDemand either way: ml waits 6 with 1
// busy at 3 h–4.5 h.
func TestQuotaWaitingAtOnce(t *testing.T) {
	for _, concurrent := range []bool{true, false} {
		d := hourly.WaitingStory()
		d.Waiting.Pods = append(d.Waiting.Pods, model.PodWait{Pod: model.PodKey{Namespace: "sprint", Pod: "burst"},
			Requests: []model.Request{{Resource: "nvidia.com/gpu", Count: 3}}, Created: hourly.At(3.4), Scheduled: hourly.At(3.6), Node: "a"})
		want := map[string]int{"ml nvidia.com/gpu": 9, "data nvidia.com/gpu": 2, "inference nvidia.com/gpu": 2, "inference nvidia.com/mig-1g.10gb": 3, "sprint nvidia.com/gpu": 3}
		says := "#   nvidia.com/gpu: at most 0 busy at once × headroom 1.20 → 1, raised to 3: pod sprint/burst waited for 3"
		if concurrent {
			busy := make([]int32, 16)
			for i := range busy {
				busy[i] = 1
			}
			d.Concurrency = &model.Concurrency{Interval: 30 * time.Minute, Scraped: true, First: hourly.At(0.5),
				Busy: map[model.ConcurrencyKey][]int32{{Namespace: "notebooks"}: busy, {Namespace: "inference"}: busy}}
			want["sprint nvidia.com/gpu"] = 4
			says = "#   nvidia.com/gpu: at most 0 busy + 3 waited for at once × headroom 1.20 → 4"
		}
		adv := adviseStory(t, d, waitSettings)
		if got := applyspec.CheckKueue(t, adv.Apply.Kueue); !maps.Equal(got, want) {
			t.Errorf("concurrency read %v: quotas %v, want %v\n%s", concurrent, got, want, adv.Apply.Kueue)
		}
		if !strings.Contains(adv.Apply.Kueue, says) {
			t.Errorf("concurrency read %v: Kueue objects lack %q:\n%s", concurrent, says, adv.Apply.Kueue)
		}
	}
}

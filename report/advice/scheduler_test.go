package advice_test

import (
	"maps"
	"math"
	"strings"
	"testing"

	"github.com/gputally/gputally/report/advice"
	"github.com/gputally/gputally/report/internal/applyspec"
	"github.com/gputally/gputally/report/internal/hourly"
	"github.com/gputally/gputally/report/model"
)

// TestVolcanoQueues: with --scheduler=volcano, hourly.WaitingStory's teams
// get Volcano queues instead of Kueue's objects, deserving the quotas of
// TestQuotaFromWaitingDemand (ml 9, data 2, inference 2 GPUs and 3 MIG
// 1g.10gb) and capable of the cluster's capacity at the end: nodes a, b, c
// offer 4 + 4 + 2 = 10 GPUs, m1 and m2 7 + 7 = 14 instances. Namespace
// notebooks (teams ml and data) picks ml's queue, the larger (9 against 2),
// and the comment tells data's pods to name theirs; research picks ml,
// inference inference. The banner says capacity, not proportion, and reclaim.
func TestVolcanoQueues(t *testing.T) {
	s := waitSettings
	s.Scheduler = advice.SchedulerVolcano
	adv := adviseStory(t, hourly.WaitingStory(), s)
	if adv.Apply.Kueue != "" {
		t.Errorf("Kueue objects for a Volcano cluster:\n%s", adv.Apply.Kueue)
	}
	v := applyspec.CheckVolcano(t, adv.Apply.Volcano)
	deserved := map[string]string{"ml nvidia.com/gpu": "9", "data nvidia.com/gpu": "2", "inference nvidia.com/gpu": "2", "inference nvidia.com/mig-1g.10gb": "3"}
	capability := map[string]string{"ml nvidia.com/gpu": "10", "data nvidia.com/gpu": "10", "inference nvidia.com/gpu": "10", "inference nvidia.com/mig-1g.10gb": "14"}
	namespaces := map[string]string{"notebooks": "ml", "research": "ml", "inference": "inference"}
	if !maps.Equal(v.Deserved, deserved) || !maps.Equal(v.Capability, capability) || !maps.Equal(v.Namespaces, namespaces) {
		t.Errorf("deserved %v, capability %v, namespaces %v; want %v, %v, %v\n%s", v.Deserved, v.Capability, v.Namespaces, deserved, capability, namespaces, adv.Apply.Volcano)
	}
	for _, want := range []string{
		"must run the capacity plugin, not proportion", "reclaim", "# Scheduler: --scheduler=volcano.",
		"#   team data's pods here need the pod annotation scheduling.volcano.sh/queue-name: data",
	} {
		if !strings.Contains(adv.Apply.Volcano, want) {
			t.Errorf("Volcano objects lack %q:\n%s", want, adv.Apply.Volcano)
		}
	}
}

// TestVolcanoDeservedWithinCapacity: when a team's quota is more than the
// cluster offers — node a offers 3, so 3 + 4 + 2 = 9 GPUs, and ml's quota is
// 9 — deserved is the quota; with a offering 2 (8 in all) ml deserves 8,
// the capacity, and the comment says so.
func TestVolcanoDeservedWithinCapacity(t *testing.T) {
	for _, c := range []struct {
		a        float64
		deserved string
		note     bool
	}{{3, "9", false}, {2, "8", true}} {
		d := hourly.WaitingStory()
		d.Waiting.Capacity[model.NodeResource{Node: "a", Resource: "nvidia.com/gpu"}] = hourly.Levels(0, c.a)
		s := waitSettings
		s.Scheduler = advice.SchedulerVolcano
		adv := adviseStory(t, d, s)
		v := applyspec.CheckVolcano(t, adv.Apply.Volcano)
		note := strings.Contains(adv.Apply.Volcano, "#     deserved 8: the cluster offers 8 of nvidia.com/gpu")
		if v.Deserved["ml nvidia.com/gpu"] != c.deserved || note != c.note {
			t.Errorf("node a offering %g: ml deserves %s (note %v), want %s (%v)\n%s", c.a, v.Deserved["ml nvidia.com/gpu"], note, c.deserved, c.note, adv.Apply.Volcano)
		}
	}
}

// TestSchedulerFromTheData: without the setting, the GPU pods'
// schedulerName (kube_pod_scheduler) decides per cluster: one pod of two
// naming volcano makes it Volcano's queues; six naming default-scheduler
// Kueue's; none read Kueue's, with a sentence that says the scheduler was
// not read. A setting overrides the data.
func TestSchedulerFromTheData(t *testing.T) {
	for _, c := range []struct {
		name       string
		schedulers map[string]int // GPU pods per schedulerName
		setting    string
		volcano    bool
		says       string
	}{
		{"one pod on volcano", map[string]int{"volcano": 1, "default-scheduler": 1}, "", true, "# Scheduler: 1 of the 2 GPU pods whose scheduler was read name volcano (kube_pod_scheduler)."},
		{"default-scheduler", map[string]int{"default-scheduler": 6}, "", false,
			"# Scheduler: none of the 6 GPU pods whose scheduler was read names volcano (default-scheduler, kube_pod_scheduler): Kueue objects."},
		{"not read", nil, advice.SchedulerAuto, false, "# Scheduler: not read (no kube_pod_scheduler series of the GPU pods): Kueue objects; pass --scheduler=volcano"},
		{"setting over the data", map[string]int{"volcano": 6}, advice.SchedulerKueue, false, "# Scheduler: --scheduler=kueue."},
	} {
		d := hourly.WaitingStory()
		if c.schedulers != nil {
			d.Waiting.Schedulers = map[string]map[string]int{"": c.schedulers}
		}
		s := waitSettings
		s.Scheduler = c.setting
		adv := adviseStory(t, d, s)
		text := adv.Apply.Kueue
		if c.volcano {
			text = adv.Apply.Volcano
		}
		if (adv.Apply.Volcano != "") != c.volcano || (adv.Apply.Kueue != "") == c.volcano || !strings.Contains(text, c.says) {
			t.Errorf("%s: Volcano %v, Kueue %v, want Volcano %v saying %q:\n%s", c.name, adv.Apply.Volcano != "", adv.Apply.Kueue != "", c.volcano, c.says, text)
		}
	}
}

// TestBinPackingProfile: hourly.WaitingStory waited 15 GPU-hours
// fragmented (train's 4 GPUs and mig-1's 2 instances): a kube-scheduler
// profile scoring by MostAllocated, weighted 5 on both resources they
// requested and 1 on cpu and memory, decoded strictly by kube-scheduler's
// own types. The EUR it is about: the fleet costs (8 × 1,000 + 8 × 2) EUR ÷
// 16 GPU-hours = 501 EUR per GPU-hour; train waited 14 GPU-hours
// fragmented, whole GPUs: 14 × 501 = 7,014 EUR; mig-1 1 device-hour of
// nvidia.com/mig-1g.10gb, an instance of 1 compute slice of an H100's 7
// (the book's compute weight): 501 ÷ 7 = 71.571… EUR — 7,085.571… EUR over
// the 8 hours, not 15 × 501 = 7,515 as if an instance were a GPU. The
// queues' advice is about the 191 EUR that idled while the 28.5 GPU-hours
// waited.
func TestBinPackingProfile(t *testing.T) {
	adv := adviseStory(t, hourly.WaitingStory(), waitSettings)
	profiles := applyspec.CheckSchedulerConfig(t, adv.Apply.SchedulerConfig)
	p, ok := profiles["default-scheduler"]
	want := map[string]int64{"nvidia.com/gpu": 5, "nvidia.com/mig-1g.10gb": 5, "cpu": 1, "memory": 1}
	if !ok || len(profiles) != 1 || p.Strategy != "MostAllocated" || !maps.Equal(p.Weights, want) {
		t.Errorf("profiles %+v, want default-scheduler MostAllocated %v\n%s", profiles, want, adv.Apply.SchedulerConfig)
	}
	month := model.HoursPerMonth / 8
	kinds := map[string]advice.WaitAdvice{}
	for _, w := range adv.WaitAdvice {
		kinds[w.Kind] = w
	}
	bp, q := kinds[advice.WaitBinPacking], kinds[advice.WaitQueues]
	eur := 14*501 + 501.0/7
	if !approx(bp.EUR, eur) || !approx(bp.EURPerMonth, eur*month) || bp.GPUHours != 15 || strings.Join(bp.Pods, ",") != "inference/mig-1,research/train" ||
		!strings.Contains(bp.Evidence, "nvidia.com/gpu 501.00 EUR, nvidia.com/mig-1g.10gb 71.57 EUR") {
		t.Errorf("bin-packing %+v, want %g EUR for 15 GPU-hours of inference/mig-1 and research/train", bp, eur)
	}
	if !approx(q.EUR, 191) || q.GPUHours != 28.5 || q.Target != advice.ApplyKueueFile || len(q.Pods) != 5 {
		t.Errorf("queues %+v, want 191 EUR for 28.5 GPU-hours of 5 pods, in %s", q, advice.ApplyKueueFile)
	}
	if _, ok := kinds[advice.WaitRelease]; ok {
		t.Errorf("a release although the hog was busy in every bucket: %+v", kinds[advice.WaitRelease])
	}
}

func approx(a, b float64) bool { return math.Abs(a-b) < 1e-6*math.Max(1, math.Abs(b)) }

// TestNoFragmentationNoProfile: without fragmented waiting (the story's
// nodes offering one GPU more each, so train fits node b), no
// kube-scheduler profile.
func TestNoFragmentationNoProfile(t *testing.T) {
	d := hourly.WaitingStory()
	for _, n := range []string{"a", "b", "c"} {
		k := model.NodeResource{Node: n, Resource: "nvidia.com/gpu"}
		d.Waiting.Capacity[k] = hourly.Levels(0, d.Waiting.Capacity[k][0].Value+3)
	}
	d.Waiting.Pods = d.Waiting.Pods[1:] // mig-1 was fragmented too
	adv := adviseStory(t, d, waitSettings)
	if adv.Apply.SchedulerConfig != "" {
		t.Errorf("a scheduler profile without fragmentation:\n%s", adv.Apply.SchedulerConfig)
	}
}

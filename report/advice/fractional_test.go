package advice_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gputally/gputally/report/advice"
	"github.com/gputally/gputally/report/analysis"
	"github.com/gputally/gputally/report/internal/hourly"
	"github.com/gputally/gputally/report/model"
)

// fractionalFleet is three hours of H100s at 1.50 EUR/h, every container
// main, each holding's framebuffer 2,000 MiB:
//
//	hami  GPU-h0  dev/nb-h, a HAMi share of 10 %, never busy; 90 % unallocated
//	      GPU-h1  dev/lo-0, a HAMi share of 25 %, busy 10 %   } low duty, but
//	      GPU-h2  dev/lo-1, a HAMi share of 25 %, busy 10 %   } shares, not GPUs
//	kai   GPU-k0  team/nb-k, a KAI fraction of 50 %, never busy
//	      GPU-k1  kai-resource-reservation/res, the reservation pod, the
//	              whole GPU for no sharer, idle
//	      GPU-k2  dev/w-0 whole, busy 10 %   } low-duty whole GPUs on a node
//	      GPU-k3  dev/w-1 whole, busy 20 %   } where KAI shares GPUs
//	plain GPU-p0  dev/w-2 whole, busy 10 %   } the same on a node without
//	      GPU-p1  dev/w-3 whole, busy 20 %   } shares: time-sliced ×2
func fractionalFleet(t *testing.T) (*analysis.Result, *model.Dataset) {
	t.Helper()
	d := hourly.Dataset(3)
	hold := func(node, uuid string, holder model.HolderKey, al model.Alloc, share, busy float64) {
		dev := hourly.Device{Key: model.DeviceKey{UUID: uuid}, Host: node, GPU: uuid[len(uuid)-1:], Model: "NVIDIA H100 80GB HBM3", EURPerHour: 1.5}
		for b := range 3 {
			hourly.Add(d, dev, holder, b, model.StateBusy, 3600*share*busy)
			hourly.Add(d, dev, holder, b, model.StateIdle, 3600*share*(1-busy))
			if share < 1 {
				hourly.Add(d, dev, model.HolderKey{}, b, model.StateUnallocated, 3600*(1-share))
			}
		}
		k := model.HoldingKey{Dev: dev.Key, Holder: holder}
		d.AddFramebuffer(k, 2000)
		d.MIGMode[dev.Key.GPU()] = "disabled"
		d.Alloc[k] = al
		if al.Sharing != "exclusive" {
			d.Shares[k] = model.Share{Share: share, Bucket: 2}
		}
	}
	pod := func(ns, name string) model.HolderKey {
		return model.HolderKey{Namespace: ns, Pod: name, Container: "main"}
	}
	hami := model.Alloc{Resource: "nvidia.com/gpu", Sharing: "hami"}
	whole := model.Alloc{Resource: "nvidia.com/gpu", Sharing: "exclusive"}
	hold("hami", "GPU-h0", pod("dev", "nb-h"), hami, 0.10, 0)
	hold("hami", "GPU-h1", pod("dev", "lo-0"), hami, 0.25, 0.10)
	hold("hami", "GPU-h2", pod("dev", "lo-1"), hami, 0.25, 0.10)
	hold("kai", "GPU-k0", pod("team", "nb-k"), model.Alloc{Sharing: "kai"}, 0.5, 0)
	hold("kai", "GPU-k1", pod("kai-resource-reservation", "res"), model.Alloc{Resource: "nvidia.com/gpu", Sharing: "kai"}, 1, 0)
	hold("kai", "GPU-k2", pod("dev", "w-0"), whole, 1, 0.10)
	hold("kai", "GPU-k3", pod("dev", "w-1"), whole, 1, 0.20)
	hold("plain", "GPU-p0", pod("dev", "w-2"), whole, 1, 0.10)
	hold("plain", "GPU-p1", pod("dev", "w-3"), whole, 1, 0.20)
	a, err := analysis.Analyze(d, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	return a, d
}

// TestAdviceOnFractionalShares: a share is never released, time-sliced or
// repartitioned as if it were a whole GPU. By hand, at 1.50 EUR/h over 3 h
// (the month factor m = 730.5 / 3):
//
//	dev/nb-h (HAMi 10 %): release, reclaimable 3 × 1.5 × 0.1 = 0.45 EUR × m, nothing freed
//	team/nb-k (KAI 50 %): release, reclaimable 2.25 EUR × m, nothing freed
//	kai-resource-reservation/res: release, it alone held GPU-k1: freed 4.50 EUR × m
//	dev/lo-0, dev/lo-1 (HAMi 25 %, busy 10 %): no time-slicing, no MIG
//	dev/w-0, dev/w-1 (whole, on the KAI node): no time-slicing
//	dev/w-2, dev/w-3 (whole, plain node): time-sliced ×2, one GPU freed
func TestAdviceOnFractionalShares(t *testing.T) {
	a, d := fractionalFleet(t)
	adv := advice.Advise(a, d, advice.Settings{Headroom: 1.2, ReleaseBelow: 0.05, LowDutyBelow: 0.3, DrainAbove: 0.95})
	m := model.HoursPerMonth / 3
	byTarget := map[string]advice.Recommendation{}
	for _, r := range adv.Recommendations {
		byTarget[r.Kind+" "+r.Target] = r
		for _, h := range r.Holdings {
			if r.Kind != "release" && (strings.HasPrefix(h, "dev/lo-") || h == "dev/w-0/main" || h == "dev/w-1/main") {
				t.Errorf("%s advice for %s: %s", r.Kind, h, r.Evidence)
			}
		}
	}
	for _, tc := range []struct {
		target             string
		freed, reclaimable float64
		evidence           string
		freedGPUs          []string
	}{
		{"release dev/nb-h/main", 0, 0.45 * m, "it holds a HAMi share of 10.0 % of the GPU, which releasing it frees, not the GPU", nil},
		{"release team/nb-k/main", 0, 2.25 * m, "it holds a KAI-Scheduler share of 50.0 % of the GPU", nil},
		{"release kai-resource-reservation/res/main", 4.5 * m, 0, "KAI-Scheduler's reservation pod held the whole GPU for no sharer", []string{"GPU-k1"}},
	} {
		r, ok := byTarget[tc.target]
		if !ok {
			t.Errorf("no %s: %+v", tc.target, adv.Recommendations)
			continue
		}
		if math.Abs(r.FreedEURPerMonth-tc.freed) > 1e-6 || math.Abs(r.ReclaimableEURPerMonth-tc.reclaimable) > 1e-6 ||
			!strings.Contains(r.Evidence, tc.evidence) || fmt.Sprint(r.FreedGPUs) != fmt.Sprint(tc.freedGPUs) {
			t.Errorf("%s: freed %.4f %v, reclaimable %.4f, %q; want freed %.4f %v, reclaimable %.4f, …%s…",
				tc.target, r.FreedEURPerMonth, r.FreedGPUs, r.ReclaimableEURPerMonth, r.Evidence, tc.freed, tc.freedGPUs, tc.reclaimable, tc.evidence)
		}
	}
	ts, ok := byTarget["time-slicing dev"]
	if !ok || strings.Join(ts.Holdings, ",") != "dev/w-2/main,dev/w-3/main" || len(ts.FreedGPUs) != 1 {
		t.Errorf("time-slicing %+v, want the plain node's two whole GPUs, one freed: %+v", ts, adv.Recommendations)
	}
	if strings.Contains(adv.Apply.TimeSlicing, "kai") || strings.Contains(adv.Apply.TimeSlicing, "hami") {
		t.Errorf("a device-plugin time-slicing config for a node where HAMi or KAI share GPUs:\n%s", adv.Apply.TimeSlicing)
	}
}

// TestAdviceOnSharesThatEnded: what counts is who held a GPU over the range
// and who shares GPUs at its end. Three hours of H100s at 1.50 EUR/h, every
// container main, each holding's framebuffer 2,000 MiB (m = 730.5 / 3):
//
//	kai       GPU-s0  team/s, a KAI fraction of 50 %, busy, hour 0 only (50 %
//	                  unallocated); then kai-resource-reservation/res, the
//	                  whole GPU for no sharer, idle, hours 1–2
//	was-hami  GPU-s1  dev/h, a HAMi share of 25 %, busy, hour 0 only; then
//	                  unallocated
//	          GPU-s2  ops/w-4 whole, busy 10 %   } low-duty whole GPUs on a
//	          GPU-s3  ops/w-5 whole, busy 20 %   } node no share is on at the end
//
// The reservation is the GPU's only holding at the end, not over the range:
// releasing it frees no GPU (whatever frees a GPU covers every holding on it
// over the range, as for a whole-GPU pod); its own cost, 2 h × 1.50 = 3.00
// EUR × m, is reclaimable. The node where HAMi shared a GPU only in hour 0
// is open to time-slicing: ops/w-4 and ops/w-5 fit on one GPU (busy 10 % +
// 20 % × 1.2 headroom = 36 %; 2 × 2,000 MiB × 1.2), freeing the cheaper of
// two GPUs of 3 h × 1.50 = 4.50 EUR each: 4.50 EUR × m.
func TestAdviceOnSharesThatEnded(t *testing.T) {
	d := hourly.Dataset(3)
	dev := func(node, uuid string) hourly.Device {
		return hourly.Device{Key: model.DeviceKey{UUID: uuid}, Host: node, GPU: uuid[len(uuid)-1:], Model: "NVIDIA H100 80GB HBM3", EURPerHour: 1.5}
	}
	pod := func(ns, name string) model.HolderKey {
		return model.HolderKey{Namespace: ns, Pod: name, Container: "main"}
	}
	// hold books holder's share of dev in buckets from..to−1, busy busy of
	// it, and the rest of the GPU unallocated.
	hold := func(dv hourly.Device, holder model.HolderKey, al model.Alloc, share, busy float64, from, to int) {
		for b := from; b < to; b++ {
			hourly.Add(d, dv, holder, b, model.StateBusy, 3600*share*busy)
			hourly.Add(d, dv, holder, b, model.StateIdle, 3600*share*(1-busy))
			if share < 1 {
				hourly.Add(d, dv, model.HolderKey{}, b, model.StateUnallocated, 3600*(1-share))
			}
		}
		k := model.HoldingKey{Dev: dv.Key, Holder: holder}
		d.AddFramebuffer(k, 2000)
		d.MIGMode[dv.Key.GPU()] = "disabled"
		d.Alloc[k] = al
		if al.Sharing != "exclusive" {
			d.Shares[k] = model.Share{Share: share, Bucket: to - 1}
		}
	}
	whole := model.Alloc{Resource: "nvidia.com/gpu", Sharing: "exclusive"}
	s0, s1 := dev("kai", "GPU-s0"), dev("was-hami", "GPU-s1")
	hold(s0, pod("team", "s"), model.Alloc{Sharing: "kai"}, 0.5, 1, 0, 1)
	hold(s0, pod("kai-resource-reservation", "res"), model.Alloc{Resource: "nvidia.com/gpu", Sharing: "kai"}, 1, 0, 1, 3)
	hold(s1, pod("dev", "h"), model.Alloc{Resource: "nvidia.com/gpu", Sharing: "hami"}, 0.25, 1, 0, 1)
	for b := 1; b < 3; b++ {
		hourly.Add(d, s1, model.HolderKey{}, b, model.StateUnallocated, 3600)
	}
	hold(dev("was-hami", "GPU-s2"), pod("ops", "w-4"), whole, 1, 0.10, 0, 3)
	hold(dev("was-hami", "GPU-s3"), pod("ops", "w-5"), whole, 1, 0.20, 0, 3)
	a, err := analysis.Analyze(d, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	adv := advice.Advise(a, d, advice.Settings{Headroom: 1.2, ReleaseBelow: 0.05, LowDutyBelow: 0.3, DrainAbove: 0.95})
	m := model.HoursPerMonth / 3
	byTarget := map[string]advice.Recommendation{}
	for _, r := range adv.Recommendations {
		byTarget[r.Kind+" "+r.Target] = r
	}
	res, ok := byTarget["release kai-resource-reservation/res/main"]
	if !ok || res.FreedEURPerMonth != 0 || len(res.FreedGPUs) != 0 || math.Abs(res.ReclaimableEURPerMonth-3.0*m) > 1e-6 {
		t.Errorf("release of the reservation: %+v; want nothing freed, %.4f EUR reclaimable", res, 3.0*m)
	}
	ts, ok := byTarget["time-slicing ops"]
	if !ok || strings.Join(ts.Holdings, ",") != "ops/w-4/main,ops/w-5/main" || len(ts.FreedGPUs) != 1 || math.Abs(ts.FreedEURPerMonth-4.5*m) > 1e-6 {
		t.Errorf("time-slicing ops: %+v; want ops/w-4 and ops/w-5 on one GPU, %.4f EUR freed: %+v", ts, 4.5*m, adv.Recommendations)
	}
}

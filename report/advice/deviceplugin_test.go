package advice_test

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/gputally/gputally/report/advice"
	"github.com/gputally/gputally/report/analysis"
	"github.com/gputally/gputally/report/internal/applyspec"
	"github.com/gputally/gputally/report/internal/hourly"
	"github.com/gputally/gputally/report/model"
)

// sharingFleet is three hours on two nodes of H100s (1.50 EUR/h), every
// container main. Each node has low-duty notebooks alone on whole GPUs
// (2,000 MiB framebuffer), which the advice time-slices:
//
//	n1  dev1/nb-0…2  GPU-10…12  busy 10, 15, 20 % of the time: with headroom
//	                            1.2, duties 0.12 + 0.18 + 0.24 fit one GPU: ×3
//	    lab/old      GPU-13     a replica of 4 as nvidia.com/gpu.shared in
//	                            hours 0 and 1, gone in hour 2 (the GPU free)
//	n2  dev2/nb-0…1  GPU-20…21  busy 10, 20 %: 0.12 + 0.24 fit one GPU: ×2
//	    svc/e-0      GPU-22     MIG, 1g.10gb GI 9, a replica of 2 as
//	                            nvidia.com/mig-1g.10gb.shared, busy 80 %, all hours
//
// At the range's end n1 time-slices nothing (lab/old's sharing ended an
// hour before), and n2 time-slices its MIG instance ×2, renamed.
func sharingFleet(t *testing.T) (*analysis.Result, *model.Dataset) {
	t.Helper()
	d := hourly.Dataset(3)
	// hold books holder's share of dev over buckets, busy busy of its time,
	// the rest of the device unallocated.
	hold := func(dev hourly.Device, holder model.HolderKey, share, busy float64, buckets ...int) {
		for _, b := range buckets {
			hourly.Add(d, dev, holder, b, model.StateBusy, 3600*share*busy)
			hourly.Add(d, dev, holder, b, model.StateIdle, 3600*share*(1-busy))
			if share < 1 {
				hourly.Add(d, dev, model.HolderKey{}, b, model.StateUnallocated, 3600*(1-share))
			}
		}
		k := model.HoldingKey{Dev: dev.Key, Holder: holder}
		d.AddFramebuffer(k, 2000)
		d.MIGMode[dev.Key.GPU()] = "disabled"
		d.Alloc[k] = model.Alloc{Resource: "nvidia.com/gpu", Sharing: "exclusive"}
		if share < 1 {
			d.Shares[k] = model.Share{Share: share, Bucket: buckets[len(buckets)-1]}
		}
	}
	gpu := func(node, uuid string) hourly.Device {
		return hourly.Device{Key: model.DeviceKey{UUID: uuid}, Host: node, GPU: uuid[len(uuid)-1:], Model: "NVIDIA H100 80GB HBM3", EURPerHour: 1.5}
	}
	pod := func(ns, name string) model.HolderKey {
		return model.HolderKey{Namespace: ns, Pod: name, Container: "main"}
	}
	for i, busy := range []float64{0.10, 0.15, 0.20} {
		hold(gpu("n1", fmt.Sprintf("GPU-1%d", i)), pod("dev1", fmt.Sprintf("nb-%d", i)), 1, busy, 0, 1, 2)
	}
	old := pod("lab", "old")
	hold(gpu("n1", "GPU-13"), old, 0.25, 0.5, 0, 1)
	d.Alloc[model.HoldingKey{Dev: model.DeviceKey{UUID: "GPU-13"}, Holder: old}] = model.Alloc{Resource: "nvidia.com/gpu.shared", Sharing: "time-slicing"}
	hourly.Add(d, gpu("n1", "GPU-13"), model.HolderKey{}, 2, model.StateUnallocated, 3600)
	for i, busy := range []float64{0.10, 0.20} {
		hold(gpu("n2", fmt.Sprintf("GPU-2%d", i)), pod("dev2", fmt.Sprintf("nb-%d", i)), 1, busy, 0, 1, 2)
	}
	inst := hourly.Device{Key: model.DeviceKey{UUID: "GPU-22", GI: "9", Profile: "1g.10gb"}, Host: "n2", GPU: "2", Model: "NVIDIA H100 80GB HBM3", EURPerHour: 1.5 / 7}
	e0 := pod("svc", "e-0")
	hold(inst, e0, 0.5, 0.8, 0, 1, 2)
	d.Alloc[model.HoldingKey{Dev: inst.Key, Holder: e0}] = model.Alloc{Resource: "nvidia.com/mig-1g.10gb.shared", Sharing: "time-slicing"}
	d.MIGMode[inst.Key.GPU()] = "enabled"
	for b := range 3 {
		hourly.Add(d, hourly.Device{Key: model.DeviceKey{UUID: "GPU-22"}, Host: "n2", GPU: "2", Model: inst.Model, EURPerHour: 1.5 * 6 / 7}, model.HolderKey{}, b, model.StateUnallocated, 3600*6/7)
	}
	a, err := analysis.Analyze(d, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	return a, d
}

// TestTimeSlicingConfigPerNode: the device plugin config of each node keeps
// the time-slicing it has at the range's end and adds the advice's. By hand:
//
//	n1  nothing time-sliced at the end (lab/old's ×4 renamed sharing ended
//	    an hour before and is not brought back): nvidia.com/gpu ×3, not renamed
//	n2  keeps nvidia.com/mig-1g.10gb ×2 and its renaming, adds nvidia.com/gpu
//	    ×2 (offered as nvidia.com/gpu.shared, as the device plugin renames all
//	    time-sliced resources or none)
//
// and no pod outside the advice changes its sharing.
func TestTimeSlicingConfigPerNode(t *testing.T) {
	a, d := sharingFleet(t)
	adv := advice.Advise(a, d, advice.Settings{Headroom: 1.2, ReleaseBelow: 0.05, LowDutyBelow: 0.3, DrainAbove: 0.95})
	replicas := map[string]int{}
	for _, r := range adv.Recommendations {
		if r.Kind == "time-slicing" {
			replicas[strings.Join(r.Nodes, ",")] = r.Replicas
		}
	}
	if want := map[string]int{"n1": 3, "n2": 2}; !maps.Equal(replicas, want) {
		t.Fatalf("time-slicing replicas by node %v, want %v: %+v", replicas, want, adv.Recommendations)
	}
	cfg := applyspec.CheckDevicePlugin(t, adv.Apply.TimeSlicing, adv.Apply.TimeSlicingLabels)
	want := map[string]applyspec.DevicePluginConfig{
		"n1": {Replicas: map[string]int{"nvidia.com/gpu": 3}},
		"n2": {RenameByDefault: true, Replicas: map[string]int{"nvidia.com/gpu": 2, "nvidia.com/mig-1g.10gb": 2}},
	}
	for node, w := range want {
		if c, ok := cfg[node]; !ok || c.RenameByDefault != w.RenameByDefault || !maps.Equal(c.Replicas, w.Replicas) {
			t.Errorf("%s: config %+v, want %+v\n%s", node, c, w, adv.Apply.TimeSlicing)
		}
	}
	const keeps = "# n2 (gputally-n2): adds nvidia.com/gpu ×2 (offered as nvidia.com/gpu.shared) and keeps its time-slicing of nvidia.com/mig-1g.10gb ×2 (offered as nvidia.com/mig-1g.10gb.shared)"
	if !strings.Contains(adv.Apply.TimeSlicing, keeps) {
		t.Errorf("the config does not say %q:\n%s", keeps, adv.Apply.TimeSlicing)
	}
	if len(adv.Apply.TimeSlicingSharing) != 0 {
		t.Errorf("sharing warnings %q, want none: only the advised notebooks change", adv.Apply.TimeSlicingSharing)
	}
}

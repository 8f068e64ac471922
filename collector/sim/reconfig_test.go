package sim

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/collector"
)

// migBase is a valid scenario with every event that a history plays (a
// restart, missing scrapes) and two MIG reconfigurations: GPU 1 trades its
// 3g.40gb for a 4g.40gb at 6h (both GPU instance ID 1; the two 1g.20gb stay),
// GPU 2 trades its 7g.80gb for two 3g.40gb at 8h10m. The error cases break one
// line of it.
const migBase = `seed: 5
gpus:
  - model: NVIDIA H100 80GB HBM3
  - model: NVIDIA H100 80GB HBM3
    mig: [3g.40gb, 1g.20gb, 1g.20gb]
  - model: NVIDIA H100 80GB HBM3
    mig: [7g.80gb]
workloads:
  - {name: train, pattern: training, fb_mib: 30000}
  - {name: small, pattern: inference, fb_mib: 8000}
pods:
  - {namespace: ml, pod: big-a, container: main, resource: nvidia.com/mig-3g.40gb, device: {gpu: 1, instance: 0}, workload: train, end: 20h}
  - {namespace: ml, pod: small-a, container: main, resource: nvidia.com/mig-1g.20gb, device: {gpu: 1, instance: 1}, workload: small}
  - {namespace: ml, pod: big-b, container: main, resource: nvidia.com/mig-4g.40gb, device: {gpu: 1, instance: 0}, workload: train, start: 6h}
jobs:
  - {namespace: ci, name: lint, container: main, resource: nvidia.com/mig-7g.80gb, device: {gpu: 2, instance: 0}, workload: small, every: 1h, run: 20m}
events:
  - {at: 6h, mig: {gpu: 1, layout: [4g.40gb, 1g.20gb, 1g.20gb]}}
  - {at: 8h10m, mig: {gpu: 2, layout: [3g.40gb, 3g.40gb]}}
  - {at: 9h, exporter: restarted}
  - {at: 14h, scrape: missing, for: 2h}
`

func TestParseMIGAndHistoryEventErrors(t *testing.T) {
	const (
		mig1    = "{at: 6h, mig: {gpu: 1, layout: [4g.40gb, 1g.20gb, 1g.20gb]}}"
		restart = "{at: 9h, exporter: restarted}"
		scrape  = "{at: 14h, scrape: missing, for: 2h}"
	)
	tests := []struct {
		name      string
		old, new  string // replace old by new in migBase
		wantLine  int
		wantField string
		wantMsg   string
	}{
		// exporter: restarted
		{"restart with for", restart, "{at: 9h, exporter: restarted, for: 1h}", 20, "events[2].for", "one instant: remove for"},
		{"restart at 0s", restart, "{at: 0s, exporter: restarted}", 20, "events[2].at", "starts at 0s anyway"},
		{"restart with xid", restart, "{at: 9h, exporter: restarted, xid: 13}", 20, "events[2].xid", "only GPU events"},
		{"restart twice at once", restart, restart + "\n  - " + restart, 21, "events[3].at", "events[2] restarts the exporter at 9h0m0s already"},
		{"restart while stopped", restart, restart + "\n  - {at: 8h, exporter: stopped, for: 2h}", 20, "events[2].at", "stopped by events[3] from 8h0m0s for 2h0m0s"},
		{"restart at the end of a stop", restart, restart + "\n  - {at: 8h, exporter: stopped, for: 1h}", 20, "events[2].at", "starts again at its end anyway"},
		{"exporter crashed", "exporter: restarted", "exporter: crashed", 20, "events[2].exporter", `must be stopped (for a while) or restarted (at one instant), got "crashed"`},
		{"stop without for", restart, "{at: 9h, exporter: stopped}", 20, "events[2].for", "required"},
		// scrape: missing
		{"scrape late", "scrape: missing", "scrape: late", 21, "events[3].scrape", `must be missing, got "late"`},
		{"scrape without for", scrape, "{at: 14h, scrape: missing}", 21, "events[3].for", "required: how long the scrape is missing"},
		{"scrape windows overlap", scrape, scrape + "\n  - {at: 15h, scrape: missing, for: 2h}", 22, "events[4].at", "overlaps events[3] (scrape missing from 14h0m0s for 2h0m0s)"},
		{"scrape and kubelet", "scrape: missing, for: 2h", "scrape: missing, kubelet: down, for: 2h", 21, "events[3].scrape", "give kubelet or scrape, not both"},
		{"lost scrape", "scrape: missing, for: 2h", "scrape: missing, for: 2h, lost: true", 21, "events[3].lost", "only GPUs get lost"},
		// mig
		{"MIG with for", mig1, "{at: 6h, for: 1h, mig: {gpu: 1, layout: [4g.40gb, 1g.20gb, 1g.20gb]}}", 18, "events[0].for", "one instant: remove for"},
		{"MIG at 0s", "{at: 6h, mig", "{at: 0s, mig", 18, "events[0].at", "must be after 0s"},
		{"MIG with gpu beside", "{at: 6h, mig", "{at: 6h, gpu: 1, mig", 18, "events[0].gpu", "names its GPU inside mig"},
		{"MIG and kubelet", "{at: 6h, mig", "{at: 6h, kubelet: down, mig", 18, "events[0].kubelet", "give mig or kubelet, not both"},
		{"MIG with xid", "{at: 6h, mig", "{at: 6h, xid: 13, mig", 18, "events[0].xid", "only GPU events"},
		{"MIG without gpu", "mig: {gpu: 1, layout", "mig: {layout", 18, "events[0].mig.gpu", "required"},
		{"MIG without layout", "{gpu: 1, layout: [4g.40gb, 1g.20gb, 1g.20gb]}", "{gpu: 1}", 18, "events[0].mig.layout", "required"},
		{"MIG of a missing GPU", "mig: {gpu: 1,", "mig: {gpu: 3,", 18, "events[0].mig.gpu", "no GPU 3 (the node has GPUs 0 to 2)"},
		{"MIG of a whole GPU", "mig: {gpu: 1,", "mig: {gpu: 0,", 18, "events[0].mig.gpu", "GPU 0 is not in MIG mode"},
		{"MIG unknown key", "mig: {gpu: 1,", "mig: {gpus: 1,", 18, "events[0].mig.gpus", "unknown field"},
		{"MIG profile the model lacks", "[4g.40gb, 1g.20gb, 1g.20gb]}}", "[4g.40gb, 1g.5gb]}}", 18, "events[0].mig.layout[1]", `no MIG profile "1g.5gb"`},
		{"MIG slices overflow", "[4g.40gb, 1g.20gb, 1g.20gb]}}", "[4g.40gb, 3g.40gb, 1g.20gb]}}", 18, "events[0].mig.layout[2]", "needs 8 compute slices in all"},
		{"MIG layout not a list", "[4g.40gb, 1g.20gb, 1g.20gb]}}", "4g.40gb}}", 18, "events[0].mig.layout", "expected a list"},
		{"MIG to the layout in force", "[4g.40gb, 1g.20gb, 1g.20gb]}}", "[3g.40gb, 1g.20gb, 1g.20gb]}}", 18, "events[0].mig.layout", "GPU 1 has this layout already (gpus[1].mig)"},
		{"MIG back to the layout in force", mig1, mig1 + "\n  - {at: 7h, mig: {gpu: 1, layout: [4g.40gb, 1g.20gb, 1g.20gb]}}", 19, "events[1].mig.layout", "has this layout already (events[0])"},
		{"MIG twice at once", mig1, mig1 + "\n  - {at: 6h, mig: {gpu: 1, layout: [7g.80gb]}}", 19, "events[1].at", "GPU 1 is already reconfigured at 6h0m0s by events[0]"},
		{"MIG of a DRA GPU", "jobs:", "  - {namespace: ml, pod: d, container: main, resource: gpu.nvidia.com, claim: c, device: {gpu: 1, instance: 2}, workload: small}\njobs:", 19, "events[0].mig.gpu", "GPU 1 is handed out by the DRA driver (pods[3])"},
		// pods against the layouts over time
		{"pod on a later layout's profile", "resource: nvidia.com/mig-4g.40gb", "resource: nvidia.com/mig-3g.40gb", 14, "pods[2].resource", "instance 0 of GPU 1 is a 4g.40gb from 6h0m0s (events[0]): request nvidia.com/mig-4g.40gb"},
		{"pod before the change on its layout", "workload: train, start: 6h}", "workload: train, start: 5h}", 14, "pods[2].resource", "instance 0 of GPU 1 is a 3g.40gb: request nvidia.com/mig-3g.40gb"},
		{"pod on an instance the later layout lacks", "device: {gpu: 1, instance: 0}, workload: train, start: 6h}", "device: {gpu: 1, instance: 3}, workload: train, start: 6h}", 14, "pods[2].device.instance", "GPU 1 has 3 MIG instances from 6h0m0s (events[0]), got instance 3"},
		{"two pods on a kept instance", "workload: train, start: 6h}", "workload: train, start: 6h}\n  - {namespace: ml, pod: small-b, container: main, resource: nvidia.com/mig-1g.20gb, device: {gpu: 1, instance: 1}, workload: small, start: 7h}", 15, "pods[3].device", "MIG instance 1 of GPU 1 is already held by pods[1] (ml/small-a)"},
		{"two pods on a new instance", "workload: train, start: 6h}", "workload: train, start: 6h}\n  - {namespace: ml, pod: big-c, container: main, resource: nvidia.com/mig-4g.40gb, device: {gpu: 1, instance: 0}, workload: train, start: 7h}", 15, "pods[3].device", "MIG instance 0 of GPU 1 in the layout of events[0] is already held by pods[2] (ml/big-b)"},
		{"event about nothing", restart, "{at: 9h}", 20, "events[2]", "exporter: stopped or restarted, scrape: missing, or mig"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(migBase, tt.old) {
				t.Fatalf("migBase lacks %q", tt.old)
			}
			data := strings.Replace(migBase, tt.old, tt.new, 1)
			_, err := Parse([]byte(data), "bad.yaml")
			if err == nil {
				t.Fatalf("Parse accepted:\n%s", data)
			}
			prefix := "bad.yaml:" + strconv.Itoa(tt.wantLine) + ": " + tt.wantField + ": "
			if msg := err.Error(); !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, tt.wantMsg) {
				t.Fatalf("error %q\nwant prefix %q and %q", msg, prefix, tt.wantMsg)
			}
		})
	}
}

func newMIGBase(t *testing.T) *Backend {
	t.Helper()
	sc, err := Parse([]byte(migBase), "mig.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(sc, Options{Start: t0})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// layoutOf describes the MIG instances of a GPU as profile@placement/GPU instance ID.
func layoutOf(g collector.GPU) []string {
	var out []string
	for _, in := range g.Instances {
		out = append(out, in.Profile+"@"+strconv.Itoa(in.PlacementStart)+"/"+strconv.Itoa(in.GPUInstanceID))
	}
	return out
}

func TestMIGReconfigurationChangesTheInventory(t *testing.T) {
	b := newMIGBase(t)
	ctx := context.Background()
	inv, _ := b.Inventory(ctx)
	before := inv.GPUs[1]
	if got, want := layoutOf(before), []string{"3g.40gb@0/1", "1g.20gb@4/3", "1g.20gb@6/4"}; !slices.Equal(got, want) {
		t.Fatalf("GPU 1 at the start: %v, want %v", got, want)
	}
	var s collector.Sample
	if err := b.Sample(ctx, t0.Add(6*time.Hour-time.Second), &s, nil); err != nil {
		t.Fatalf("Sample before the change: %v", err)
	}
	// The first sample at the change says so, as NVML does; Inventory then
	// has the new layout, and the next sample reads it.
	if err := b.Sample(ctx, t0.Add(6*time.Hour), &s, nil); !errors.Is(err, collector.ErrInventoryChanged) {
		t.Fatalf("Sample at the change = %v, want ErrInventoryChanged", err)
	}
	inv, _ = b.Inventory(ctx)
	after := inv.GPUs[1]
	// The 4g.40gb reuses GPU instance ID 1 of the 3g.40gb, with another
	// profile and UUID; the 1g.20gb instances are kept, UUIDs and all.
	if got, want := layoutOf(after), []string{"4g.40gb@0/1", "1g.20gb@4/3", "1g.20gb@6/4"}; !slices.Equal(got, want) {
		t.Fatalf("GPU 1 from 6h: %v, want %v", got, want)
	}
	if after.Instances[0].UUID == before.Instances[0].UUID || after.Instances[1].UUID != before.Instances[1].UUID || after.Instances[2].UUID != before.Instances[2].UUID {
		t.Errorf("UUIDs %v → %v: want a new 4g.40gb and the 1g.20gb kept", before.Instances, after.Instances)
	}
	if got := layoutOf(inv.GPUs[2]); !slices.Equal(got, []string{"7g.80gb@0/0"}) || inv.GPUs[0].MIGEnabled {
		t.Errorf("GPU 2 at 6h: %v (want it unchanged until 8h10m); GPU 0 in MIG mode: %v", got, inv.GPUs[0].MIGEnabled)
	}
	if err := b.Sample(ctx, t0.Add(6*time.Hour+time.Minute), &s, nil); err != nil {
		t.Fatalf("Sample after re-reading the inventory: %v", err)
	}
	if n := len(s.GPUs[1].Instances); n != 3 {
		t.Fatalf("%d instance readings on GPU 1, want 3", n)
	}
	// big-b trains in the 4g.40gb (GPU instance 1); small-a serves in 1g.20gb 3.
	var gis []int
	for _, p := range s.GPUs[1].Processes {
		gis = append(gis, p.GPUInstanceID)
	}
	if slices.Sort(gis); !slices.Equal(gis, []int{1, 3}) {
		t.Errorf("processes of GPU 1 in GPU instances %v, want [1 3]", gis)
	}
	if a := get(t, &s.GPUs[1].Instances[0], collector.GREngineActive); a < 0.5 {
		t.Errorf("the 4g.40gb's activity %v: big-b trains in it", a)
	}
	// GPU 2's 7g.80gb becomes two 3g.40gb at 8h10m.
	if got := layoutOf(b.InventoryAt(t0.Add(8*time.Hour + 10*time.Minute)).GPUs[2]); !slices.Equal(got, []string{"3g.40gb@0/1", "3g.40gb@4/2"}) {
		t.Errorf("GPU 2 from 8h10m: %v", got)
	}
	for _, tt := range []struct {
		after, upTo time.Duration
		want        bool
	}{
		{5 * time.Hour, 6*time.Hour - time.Nanosecond, false}, {6*time.Hour - 10*time.Second, 6 * time.Hour, true},
		{6 * time.Hour, 8 * time.Hour, false}, {8 * time.Hour, 9 * time.Hour, true},
	} {
		if got := b.InventoryChanged(t0.Add(tt.after), t0.Add(tt.upTo)); got != tt.want {
			t.Errorf("InventoryChanged(%v, %v) = %v, want %v", tt.after, tt.upTo, got, tt.want)
		}
	}
}

func TestMIGReconfigurationEndsThePodsOnInstancesThatGo(t *testing.T) {
	b := newMIGBase(t)
	pods := func(at time.Duration) []string {
		allocs, _ := b.podsAt(at)
		var out []string
		for _, a := range allocs {
			out = append(out, a.Pod+" "+a.Resource)
		}
		return out
	}
	for _, tt := range []struct {
		at   time.Duration
		want []string
	}{
		{5*time.Hour + 10*time.Minute, []string{"big-a nvidia.com/mig-3g.40gb", "small-a nvidia.com/mig-1g.20gb", "lint-5 nvidia.com/mig-7g.80gb"}},
		// big-a (end: 20h) ends at 6h with its 3g.40gb; big-b starts on the 4g.40gb.
		{6 * time.Hour, []string{"small-a nvidia.com/mig-1g.20gb", "big-b nvidia.com/mig-4g.40gb", "lint-6 nvidia.com/mig-7g.80gb"}},
		{8*time.Hour + 10*time.Minute - time.Second, []string{"small-a nvidia.com/mig-1g.20gb", "big-b nvidia.com/mig-4g.40gb", "lint-8 nvidia.com/mig-7g.80gb"}},
		// lint-8 (8h–8h20m) ends at 8h10m with the 7g.80gb, and the job makes no more pods.
		{8*time.Hour + 10*time.Minute, []string{"small-a nvidia.com/mig-1g.20gb", "big-b nvidia.com/mig-4g.40gb"}},
		{9*time.Hour + 10*time.Minute, []string{"small-a nvidia.com/mig-1g.20gb", "big-b nvidia.com/mig-4g.40gb"}},
	} {
		if got := pods(tt.at); !slices.Equal(got, tt.want) {
			t.Errorf("pods at %v: %v, want %v", tt.at, got, tt.want)
		}
	}
	// The device plugin advertises the instances of the layouts in force.
	resources := func(at time.Duration) map[string]int {
		_, avail := b.podsAt(at)
		out := map[string]int{}
		for _, a := range avail {
			out[a.Resource] = len(a.DeviceIDs)
		}
		return out
	}
	for _, tt := range []struct {
		at   time.Duration
		want map[string]int
	}{
		{time.Hour, map[string]int{"nvidia.com/gpu": 1, "nvidia.com/mig-3g.40gb": 1, "nvidia.com/mig-1g.20gb": 2, "nvidia.com/mig-7g.80gb": 1}},
		{7 * time.Hour, map[string]int{"nvidia.com/gpu": 1, "nvidia.com/mig-4g.40gb": 1, "nvidia.com/mig-1g.20gb": 2, "nvidia.com/mig-7g.80gb": 1}},
		{9 * time.Hour, map[string]int{"nvidia.com/gpu": 1, "nvidia.com/mig-4g.40gb": 1, "nvidia.com/mig-1g.20gb": 2, "nvidia.com/mig-3g.40gb": 2}},
	} {
		if got := resources(tt.at); !maps.Equal(got, tt.want) {
			t.Errorf("allocatable at %v: %v, want %v", tt.at, got, tt.want)
		}
	}
	// The kubelet is told at the change, pods or no pods.
	sc, err := Parse([]byte("gpus: [{model: NVIDIA H100 80GB HBM3, mig: [7g.80gb]}]\nevents: [{at: 1h, mig: {gpu: 0, layout: [1g.10gb]}}]\n"), "bare.yaml")
	if err != nil {
		t.Fatal(err)
	}
	bare, err := New(sc, Options{Start: t0})
	if err != nil {
		t.Fatal(err)
	}
	if next, ok := bare.NextKubeletChange(t0); !ok || !next.Equal(t0.Add(time.Hour)) {
		t.Errorf("NextKubeletChange = %v, %v; want %v", next, ok, t0.Add(time.Hour))
	}
	if _, ok := bare.NextKubeletChange(t0.Add(time.Hour)); ok {
		t.Error("NextKubeletChange after the change: want none")
	}
}

func TestHistoryOnlyEventsOfRestartsAndScrapes(t *testing.T) {
	b := newMIGBase(t)
	if got, want := b.HistoryOnlyEvents(), "exporter restarted at 9h0m0s; scrape missing at 14h0m0s for 2h0m0s"; got != want {
		t.Errorf("HistoryOnlyEvents = %q, want %q", got, want)
	}
	for _, tt := range []struct {
		after, upTo time.Duration
		want        bool
	}{
		{9*time.Hour - 10*time.Second, 9 * time.Hour, true},
		{9*time.Hour - 10*time.Second, 9*time.Hour + 5*time.Second, true},
		{9 * time.Hour, 9*time.Hour + 10*time.Second, false},
		{8 * time.Hour, 9*time.Hour - time.Nanosecond, false},
	} {
		if got := b.ExporterRestarted(t0.Add(tt.after), t0.Add(tt.upTo)); got != tt.want {
			t.Errorf("ExporterRestarted(%v, %v) = %v, want %v", tt.after, tt.upTo, got, tt.want)
		}
	}
	for at, want := range map[time.Duration]bool{
		14*time.Hour - time.Nanosecond: false, 14 * time.Hour: true, 16*time.Hour - time.Nanosecond: true, 16 * time.Hour: false,
	} {
		if got := b.ScrapeMissing(t0.Add(at)); got != want {
			t.Errorf("ScrapeMissing(%v) = %v, want %v", at, got, want)
		}
	}
	// Neither is a fault of the exporter's own: it is never stopped.
	if b.ExporterStopped(t0.Add(9*time.Hour)) || b.ExporterStopped(t0.Add(15*time.Hour)) {
		t.Error("ExporterStopped during a restart or missing scrapes")
	}
}

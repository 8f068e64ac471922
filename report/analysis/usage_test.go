package analysis_test

import (
	"math"
	"testing"

	"github.com/gputally/gputally/report/analysis"
	"github.com/gputally/gputally/report/model"
)

// TestUsagePercentilesOfGroups: over one 1 h bucket, ml/a's activity is
// 0.01, 0.02, …, 1.00 (100 steps) and its framebuffer 1,000 MiB for 99 steps
// and 5,000 once; ml/b's activity is 0 for 100 steps and its framebuffer
// 2,000 MiB for 100. By nearest rank:
//   - a: p95 activity = rank 95 = 0.95; p99 framebuffer = rank 99 = 1,000;
//     peak 5,000.
//   - b: p95 activity 0; p99 framebuffer and peak 2,000.
//   - the namespace ml (and the fleet), 200 values each: activity 100 zeros
//     then 0.01 … 1.00, p95 = rank 190 = 0.90; framebuffer 99 × 1,000,
//     100 × 2,000, 1 × 5,000, p99 = rank 198 = 2,000; peak 5,000.
//
// The percentiles are within the sketch's 1 %; the peaks, the zeros and a
// value that is all of a holding's are exact.
func TestUsagePercentilesOfGroups(t *testing.T) {
	h := newHours(1)
	h.add("GPU-A", "a", 0, model.StateBusy, 3600)
	h.add("GPU-B", "b", 0, model.StateIdle, 3600)
	ka := model.HoldingKey{Dev: model.DeviceKey{UUID: "GPU-A"}, Holder: model.HolderKey{Namespace: "ml", Pod: "a", Container: "main"}}
	kb := model.HoldingKey{Dev: model.DeviceKey{UUID: "GPU-B"}, Holder: model.HolderKey{Namespace: "ml", Pod: "b", Container: "main"}}
	for i := 1; i <= 100; i++ {
		h.d.AddActivity(ka, float64(i)/100)
		h.d.AddFramebuffer(ka, map[bool]float64{true: 5000, false: 1000}[i == 50])
		h.d.AddActivity(kb, 0)
		h.d.AddFramebuffer(kb, 2000)
	}
	r, err := analysis.Analyze(h.d, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	within := func(got, want float64) bool { return math.Abs(got-want) <= 0.01*want }
	a, b := holding(t, r, "a").Usage, holding(t, r, "b").Usage
	if !a.HasActivity || !a.HasFB || !within(a.P95Activity, 0.95) || !within(a.P99FBMiB, 1000) || a.PeakFBMiB != 5000 {
		t.Errorf("ml/a usage %+v, want p95 0.95, p99 1,000 MiB (within 1 %%), peak 5,000 MiB", a)
	}
	if b.P95Activity != 0 || b.P99FBMiB != 2000 || b.PeakFBMiB != 2000 {
		t.Errorf("ml/b usage %+v, want p95 0, p99 and peak 2,000 MiB exactly", b)
	}
	var ns *analysis.Group
	for i := range r.Namespaces {
		if r.Namespaces[i].Name == "ml" {
			ns = &r.Namespaces[i]
		}
	}
	if ns == nil {
		t.Fatalf("no namespace ml in %+v", r.Namespaces)
	}
	for _, g := range []*analysis.Group{ns, &r.Fleet} {
		if u := g.Usage; !within(u.P95Activity, 0.90) || !within(u.P99FBMiB, 2000) || u.PeakFBMiB != 5000 {
			t.Errorf("group %+v, want p95 0.90, p99 2,000 MiB (within 1 %%), peak 5,000 MiB", g)
		}
	}
}

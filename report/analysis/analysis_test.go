package analysis_test

import (
	"strings"
	"testing"

	"github.com/gputally/gputally/report/analysis"
	"github.com/gputally/gputally/report/internal/hourly"
	"github.com/gputally/gputally/report/model"
)

// hours is a test's dataset of 1 h step buckets, on GPUs of node n1 (H100
// at 1.80 EUR/h), held by pods of namespace ml.
type hours struct{ d *model.Dataset }

func newHours(buckets int) hours { return hours{hourly.Dataset(buckets)} }

// add books sec device-seconds of state st in bucket b on GPU uuid, held by
// ml/pod/main ("": no one).
func (h hours) add(uuid, pod string, b, st int, sec float64) {
	var holder model.HolderKey
	if pod != "" {
		holder = model.HolderKey{Namespace: "ml", Pod: pod, Container: "main"}
	}
	dev := hourly.Device{Key: model.DeviceKey{UUID: uuid}, Host: "n1", GPU: "0", Model: "NVIDIA H100 80GB HBM3", EURPerHour: 1.8}
	hourly.Add(h.d, dev, holder, b, st, sec)
}

// holding returns the holding ml/pod of r.
func holding(t *testing.T, r *analysis.Result, pod string) *analysis.Holding {
	t.Helper()
	for i := range r.Holdings {
		if r.Holdings[i].Pod == pod {
			return &r.Holdings[i]
		}
	}
	t.Fatalf("no holding ml/%s in %+v", pod, r.Holdings)
	return nil
}

// TestAtEndIsTheLastBucket: over three 1 h buckets, ml/ended holds GPU-A
// idle in buckets 0 and 1 and is gone in bucket 2 (the GPU unallocated
// there); ml/live holds GPU-B in all three. Only a holding with data in the
// range's last bucket is there at its end: ml/live, not ml/ended, whose data
// ends one bucket before.
func TestAtEndIsTheLastBucket(t *testing.T) {
	h := newHours(3)
	h.add("GPU-A", "ended", 0, model.StateIdle, 3600)
	h.add("GPU-A", "ended", 1, model.StateIdle, 3600)
	h.add("GPU-A", "", 2, model.StateUnallocated, 3600)
	for b := range 3 {
		h.add("GPU-B", "live", b, model.StateIdle, 3600)
	}
	r, err := analysis.Analyze(h.d, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if holding(t, r, "ended").AtEnd {
		t.Error("ml/ended, whose data ends one bucket before the range's end, is present at the end")
	}
	if !holding(t, r, "live").AtEnd {
		t.Error("ml/live, held in the range's last bucket, is not present at the end")
	}
}

// TestOneEngineWarningMakesPartial: two GPUs seen whole over two hours
// (coverage 100 %), but one request of the source came back with the
// engine's warning that data is missing: the report is partial — refused
// without --allow-partial, marked and saying so with it.
func TestOneEngineWarningMakesPartial(t *testing.T) {
	h := newHours(2)
	for b := range 2 {
		h.add("GPU-A", "p", b, model.StateBusy, 3600)
		h.add("GPU-B", "", b, model.StateUnallocated, 3600)
	}
	if r, err := analysis.Analyze(h.d, nil, false); err != nil || r.Partial {
		t.Fatalf("without a warning: partial %v, error %v; want a whole report", r != nil && r.Partial, err)
	}
	h.d.Warnings = []string{"store gateway store-2 unavailable"}
	const want = `the engine answered 1 requests with data missing: "store gateway store-2 unavailable"`
	if _, err := analysis.Analyze(h.d, nil, false); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("one warning, --allow-partial off: error %v, want one containing %q", err, want)
	}
	r, err := analysis.Analyze(h.d, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Partial || r.Coverage.Ratio != 1 || len(r.Warnings) == 0 || !strings.Contains(r.Warnings[0], want) {
		t.Errorf("one warning: partial %v at coverage %g, warnings %q; want partial, saying %q first", r.Partial, r.Coverage.Ratio, r.Warnings, want)
	}
}

// TestOnePercentBoundaries: one GPU over 100 h buckets, seen from bucket 0
// (100 expected device-hours), held idle by ml/p. Exactly 1 % of it missing
// or unknown is within the thresholds: the report is whole, and the holding
// (1 h unknown of its 100) and its node (1 of 100 device-hours) still get
// advice. More is above them. By hand:
//
//	missing        bucket 1 without data: 1 h missing            1 %    whole
//	unknown        bucket 1 unknown (held): 1 h unknown of 100    1 %    whole, advice
//	missing above  bucket 1 without data, bucket 2 72 s without (beyond the
//	               36 s a bucket may lack to scrape jitter): 1.02 h missing
//	                                                              1.02 % partial, advice
//	unknown above  bucket 1 unknown, bucket 2 36 s unknown + 3,564 s idle:
//	               1.01 h unknown of 100                          1.01 % partial, blocked
func TestOnePercentBoundaries(t *testing.T) {
	for _, c := range []struct {
		name             string
		between          func(h hours) // buckets 1 to idleFrom-1
		idleFrom         int           // ml/p holds GPU-A idle in bucket 0 and from this bucket on
		partial, blocked bool          // blocked: no advice for the holding or its node
	}{
		{"missing", func(h hours) {}, 2, false, false},
		{"unknown", func(h hours) { h.add("GPU-A", "p", 1, model.StateUnknown, 3600) }, 2, false, false},
		{"missing above", func(h hours) { h.add("GPU-A", "p", 2, model.StateIdle, 3528) }, 3, true, false},
		{"unknown above", func(h hours) {
			h.add("GPU-A", "p", 1, model.StateUnknown, 3600)
			h.add("GPU-A", "p", 2, model.StateUnknown, 36)
			h.add("GPU-A", "p", 2, model.StateIdle, 3564)
		}, 3, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHours(100)
			h.add("GPU-A", "p", 0, model.StateIdle, 3600)
			c.between(h)
			for b := c.idleFrom; b < 100; b++ {
				h.add("GPU-A", "p", b, model.StateIdle, 3600)
			}
			r, err := analysis.Analyze(h.d, nil, true)
			if err != nil {
				t.Fatal(err)
			}
			if r.Coverage.ExpectedHours != 100 {
				t.Fatalf("expected %g device-hours, want 100", r.Coverage.ExpectedHours)
			}
			p := holding(t, r, "p")
			if r.Partial != c.partial || r.UnknownBlocked(p) != c.blocked || r.DrainBlocked("", "n1") != c.blocked {
				t.Errorf("missing %g h, unknown %g h of 100: partial %v, holding blocked %v, node blocked %v; want partial %v, blocked %v",
					r.Coverage.MissingHours, r.Coverage.UnknownHours, r.Partial, r.UnknownBlocked(p), r.DrainBlocked("", "n1"), c.partial, c.blocked)
			}
		})
	}
}

// TestSharesOfHoldings: a holding's share is its last sample's; a
// time-sliced holding's share of 0.25 tells its GPU offers 4 replicas, a
// HAMi or KAI share of 0.25 tells nothing of replicas; ShareText names the
// share.
func TestSharesOfHoldings(t *testing.T) {
	h := newHours(1)
	for _, s := range []struct{ uuid, pod, sharing string }{
		{"GPU-T", "ts", "time-slicing"}, {"GPU-H", "hami", "hami"}, {"GPU-K", "kai", "kai"},
	} {
		h.add(s.uuid, s.pod, 0, model.StateIdle, 900)
		h.add(s.uuid, "", 0, model.StateUnallocated, 2700)
		k := model.HoldingKey{Dev: model.DeviceKey{UUID: s.uuid}, Holder: model.HolderKey{Namespace: "ml", Pod: s.pod, Container: "main"}}
		h.d.Alloc[k] = model.Alloc{Resource: "nvidia.com/gpu", Sharing: s.sharing}
		h.d.Shares[k] = model.Share{Share: 0.25, Bucket: 0}
	}
	r, err := analysis.Analyze(h.d, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		pod        string
		replicas   int
		fractional bool
		text       string
	}{{"ts", 4, false, "a share of 25.0 %"}, {"hami", 0, true, "a HAMi share of 25.0 %"}, {"kai", 0, true, "a KAI-Scheduler share of 25.0 %"}} {
		got := holding(t, r, tc.pod)
		if got.Share != 0.25 || got.Replicas != tc.replicas || got.Fractional() != tc.fractional || got.ShareText() != tc.text {
			t.Errorf("%s: share %g, replicas %d, fractional %v, %q; want 0.25, %d, %v, %q",
				tc.pod, got.Share, got.Replicas, got.Fractional(), got.ShareText(), tc.replicas, tc.fractional, tc.text)
		}
	}
}

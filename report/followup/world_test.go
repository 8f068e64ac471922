package followup_test

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/report/advice"
	"github.com/gputally/gputally/report/analysis"
	"github.com/gputally/gputally/report/followup"
	"github.com/gputally/gputally/report/model"
)

// The unit tests' world: a baseline written by hand as a report's JSON, the
// week that follows it as a dataset of seven one-day buckets, and the
// follow-up of one over the other.

var (
	week1 = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC) // the baseline's start
	week2 = week1.Add(7 * 24 * time.Hour)               // the baseline's end, this period's start
	end   = week2.Add(7 * 24 * time.Hour)
)

// gpu is one GPU of the period and its hourly rate (EUR/h).
type gpu struct {
	uuid, node, index string
	rate              float64
}

// use is a holder (namespace/pod/container; "" for no one) on a GPU, or a
// MIG instance of it, from bucket from to bucket to (days, inclusive), busy
// that share of its held time, charged weight × the GPU's rate.
type use struct {
	gpu, gi, profile string
	holder           string
	from, to         int
	busy             float64
	weight           float64 // 0: 1
	sharing          string  // gputally_gpu_allocation's sharing
	share            float64 // its share at its last sample (d.Shares); 0: none
	lost             bool    // the GPU fell off the bus: the time is lost
}

// period builds this period's dataset from gpus and uses, with complete
// coverage of every GPU, and its analysis.
func period(t *testing.T, gpus []gpu, uses []use) (*analysis.Result, *model.Dataset) {
	t.Helper()
	return periodIn(t, "", gpus, uses)
}

// periodIn is period in a cluster ("": none named).
func periodIn(t *testing.T, cluster string, gpus []gpu, uses []use) (*analysis.Result, *model.Dataset) {
	t.Helper()
	d := model.NewDataset(model.Range{Start: week2, End: end, Step: 24 * time.Hour, Resolution: 5 * time.Minute})
	d.Ledger = map[model.HoldingKey]*model.LedgerEntry{}
	byUUID := map[string]gpu{}
	for _, g := range gpus {
		byUUID[g.uuid] = g
		seen := &model.GPUSeen{Host: g.node, GPU: g.index, Seen: make([]float64, 7), FirstLost: -1}
		for b := range seen.Seen {
			seen.Seen[b] = 86400
			d.Present[b] = true
		}
		d.GPUs[model.GPUKey{Cluster: cluster, UUID: g.uuid}] = seen
	}
	for _, u := range uses {
		g := byUUID[u.gpu]
		w := u.weight
		if w == 0 {
			w = 1
		}
		hours := float64(u.to-u.from+1) * 24
		e := &model.LedgerEntry{Model: "NVIDIA H100 80GB HBM3", Host: g.node, GPU: g.index, Profile: u.profile, Last: u.to}
		var parts [model.NumStates]float64
		switch {
		case u.lost:
			parts[model.StateLost] = hours
			d.GPUs[model.GPUKey{Cluster: cluster, UUID: g.uuid}].FirstLost = u.from
		case u.holder == "":
			parts[model.StateUnallocated] = hours
		default:
			parts[model.StateBusy], parts[model.StateIdle] = hours*u.busy, hours*(1-u.busy)
		}
		for st, h := range parts {
			e.Seconds[st], e.EUR[st] = h*3600*w, h*g.rate*w
		}
		k := model.HoldingKey{Dev: model.DeviceKey{Cluster: cluster, UUID: u.gpu, GI: u.gi, Profile: u.profile}}
		if u.holder != "" {
			p := strings.Split(u.holder, "/")
			k.Holder = model.HolderKey{Namespace: p[0], Pod: p[1], Container: p[2]}
			d.Alloc[k] = model.Alloc{Resource: "nvidia.com/gpu", Sharing: u.sharing}
			if u.share > 0 {
				d.Shares[k] = model.Share{Share: u.share, Bucket: u.to}
			}
		}
		d.Ledger[k] = e
	}
	r, err := analysis.Analyze(d, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	return r, d
}

// baselineJSON is a report's JSON of the week before with recs; extra sets
// or overrides its top-level fields.
func baselineJSON(t *testing.T, dir, name string, recs []advice.Recommendation, extra map[string]any) string {
	t.Helper()
	doc := map[string]any{
		"schema_version": followup.SchemaVersion, "start": week1, "end": week2, "kind": "exact", "clusters": []string{},
		"fleet":           analysis.Group{Name: "fleet", Kind: "exact", Totals: analysis.Totals{HeldHours: 336, BusyShare: 0.25, IdleEUR: 300, UnallocatedEUR: 200, CostEUR: 700}},
		"teams":           []analysis.Group{{Name: "ml", Totals: analysis.Totals{HeldHours: 168, BusyShare: 0.5, IdleEUR: 100, CostEUR: 300}}},
		"recommendations": recs, "freed_eur_per_month": 1000.0, "hours_per_month": 730.5,
	}
	for k, v := range extra {
		doc[k] = v
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, dir, name, string(b))
}

// writeFile writes text to the file name in dir and returns its path.
func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// follow follows the baseline recs up with the period of gpus and uses.
func follow(t *testing.T, recs []advice.Recommendation, gpus []gpu, uses []use) *followup.Result {
	t.Helper()
	path := baselineJSON(t, t.TempDir(), "baseline.json", recs, nil)
	b, err := followup.Open(path, followup.Period{Start: week2, End: end})
	if err != nil {
		t.Fatal(err)
	}
	r, d := period(t, gpus, uses)
	res, err := b.Follow(r, &advice.Advice{}, d)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// near reports whether got is want to 10⁻⁹ relative (or both 0).
func near(got, want float64) bool {
	return math.Abs(got-want) <= 1e-9*math.Abs(want) || got == want
}

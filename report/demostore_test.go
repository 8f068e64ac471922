package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/gputally/gputally/collector/sim"
	"github.com/gputally/gputally/history"
	"github.com/gputally/gputally/report/engine"
)

// demoScenario is the scenario of the demo-store tests; the file says what it plays.
var demoScenario = filepath.Join("testdata", "demo-store.yaml")

// TestScrapesReportAsTheirText runs the same simulation twice, once written
// as OpenMetrics and loaded back (the old demo path), once handed straight to
// a StoreBuilder (the demo's path), and checks that the report over them is
// the same (source's TestScrapesStoreAsTheirText checks that the stores hold
// the same samples).
func TestScrapesReportAsTheirText(t *testing.T) {
	sc, err := sim.Load(demoScenario)
	if err != nil {
		t.Fatal(err)
	}
	opts := history.Options{Scenario: sc, Start: time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC),
		Duration: 5 * time.Hour, SampleInterval: 10 * time.Second, ScrapeInterval: 30 * time.Second}
	var text bytes.Buffer
	if _, err := history.WriteFleet(context.Background(), &text, opts, []*sim.Scenario{sc}); err != nil {
		t.Fatal(err)
	}
	fromText, err := engine.LoadOpenMetrics(&text)
	if err != nil {
		t.Fatal(err)
	}
	b := NewStoreBuilder()
	if _, err := history.Run(context.Background(), opts, b); err != nil {
		t.Fatal(err)
	}
	direct := b.Store()
	cfg := DefaultConfig()
	cfg.Range, cfg.Now = 5*time.Hour, func() time.Time { return opts.Start }
	cfg.End = opts.Start.Add(5 * time.Hour)
	cfg.AllowPartial = true
	rText, err := generateFrom(context.Background(), cfg, engine.NewEmbeddedQuerier(fromText, time.Minute, discard()), discard())
	if err != nil {
		t.Fatal(err)
	}
	rDirect, err := generateFrom(context.Background(), cfg, engine.NewEmbeddedQuerier(direct, time.Minute, discard()), discard())
	if err != nil {
		t.Fatal(err)
	}
	// The report sums over maps, so its last bits vary from run to run.
	if diff := differ("report", asJSON(t, rDirect), asJSON(t, rText)); diff != "" {
		t.Errorf("the reports differ: %s", diff)
	}
	if rText.GPUs != 2 {
		t.Errorf("report counts %d GPUs, want 2", rText.GPUs)
	}
}

// asJSON returns v as JSON decoded into maps, slices, strings and float64s.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// differ returns where a and b (decoded JSON) differ, numbers within a
// relative 1e-12; "" when they do not.
func differ(path string, a, b any) string {
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return fmt.Sprintf("%s: %v vs %v", path, a, b)
		}
		for k, v := range a {
			if d := differ(path+"."+k, v, bm[k]); d != "" {
				return d
			}
		}
	case []any:
		bs, ok := b.([]any)
		if !ok || len(a) != len(bs) {
			return fmt.Sprintf("%s: %d vs %v", path, len(a), b)
		}
		for i := range a {
			if d := differ(fmt.Sprintf("%s[%d]", path, i), a[i], bs[i]); d != "" {
				return d
			}
		}
	case float64:
		bf, ok := b.(float64)
		if !ok || math.Abs(a-bf) > 1e-12*math.Max(math.Abs(a), math.Abs(bf)) {
			return fmt.Sprintf("%s: %v vs %v", path, a, b)
		}
	default:
		if a != b {
			return fmt.Sprintf("%s: %v vs %v", path, a, b)
		}
	}
	return ""
}

package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	pmodel "github.com/prometheus/common/model"

	"github.com/gputally/gputally/report/engine"
	"github.com/gputally/gputally/report/internal/engineplay"
)

// TestWindowProbe: the probe tells the embedded engine's ranges (without
// their start) from Prometheus 2's (with it), and the windows asked for then
// select (t−w, t] on both.
func TestWindowProbe(t *testing.T) {
	st := engine.NewStoreBuilder().Store()
	for _, e := range engineplay.All(st) {
		run := engine.NewRunner(e.Q, engine.Limits{MaxPoints: 1000}, nil)
		win, _, err := engine.ProbeWindows(context.Background(), run, time.Date(2026, 1, 5, 0, 0, 0, 300_000_000, time.UTC))
		if err != nil {
			t.Fatal(err)
		}
		closed := e.Name == "prometheus 2"
		if len(run.Warnings()) > 0 {
			t.Errorf("%s: warnings %q", e.Name, run.Warnings())
		}
		if got, want := win.Of(time.Hour), map[bool]string{false: "1h", true: "59m59s999ms"}[closed]; got != want {
			t.Errorf("%s: window of 1h %q, want %q", e.Name, got, want)
		}
	}
	// An answer that is neither leaves the windows half-open and says so in
	// a note, not a warning: no data is missing.
	run := engine.NewRunner(&answerOf{v: 7}, engine.Limits{MaxPoints: 1000}, nil)
	win, note, err := engine.ProbeWindows(context.Background(), run, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if win.Of(time.Hour) != "1h" || len(run.Warnings()) != 0 || !strings.Contains(note, "with 7, neither 2") {
		t.Errorf("odd answer: window of 1h %q, warnings %q, note %q", win.Of(time.Hour), run.Warnings(), note)
	}
}

// answerOf answers every query with one series of value v at the start.
type answerOf struct{ v float64 }

func (a *answerOf) QueryRange(_ context.Context, _ string, start, _ time.Time, _ time.Duration) (pmodel.Matrix, []string, error) {
	return pmodel.Matrix{{Metric: pmodel.Metric{}, Values: []pmodel.SamplePair{{Timestamp: pmodel.TimeFromUnixNano(start.UnixNano()), Value: pmodel.SampleValue(a.v)}}}}, nil, nil
}

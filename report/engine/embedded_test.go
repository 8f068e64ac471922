package engine

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestLoadOpenMetricsErrors: bad text is refused, saying why, and empty
// history loads into a store without a time range (the report's
// TestDemoOnEmptyHistory runs the demo on it).
func TestLoadOpenMetricsErrors(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"no timestamp", "# TYPE a gauge\na 1\n# EOF\n", "has no timestamp"},
		{"out of order", "# TYPE a gauge\na 1 20\na 2 10\n# EOF\n", "is not after"},
		{"garbage", "# TYPE a gauge\na{ 1 10\n# EOF\n", "parse openmetrics"},
	} {
		if _, err := LoadOpenMetrics(strings.NewReader(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	st, err := LoadOpenMetrics(strings.NewReader("# EOF\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := st.TimeRange(); ok {
		t.Error("empty history has a time range")
	}
}

func FuzzLoadOpenMetrics(f *testing.F) {
	f.Add("# TYPE a gauge\na{x=\"1\"} 1 10\na{x=\"1\"} 2 20\n# EOF\n")
	f.Add("# TYPE c counter\nc_total 1 1.5\n# EOF\n")
	f.Add("a 1\n")
	f.Fuzz(func(t *testing.T, in string) {
		st, err := LoadOpenMetrics(strings.NewReader(in))
		if err != nil {
			return
		}
		first, last, ok := st.TimeRange()
		if ok && first.After(last) {
			t.Errorf("time range %s after %s", first, last)
		}
		// Whatever loaded must be queryable.
		q := NewEmbeddedQuerier(st, time.Second, discard())
		if ok {
			if _, _, err := q.QueryRange(context.Background(), `count({__name__=~".+"})`, first, last.Add(time.Second), time.Second); err != nil {
				t.Errorf("query loaded history: %v", err)
			}
		}
	})
}

package analysis

import (
	"testing"
	"time"

	"github.com/gputally/gputally/report/model"
)

// TestCoverageRatioNotClamped: a GPU whose last sample before the range came
// 30 s before its start (the scrape at the start was missed) records 3,630 +
// 3,600 = 7,230 device-seconds in 2 hours: coverage 7,230 / 7,200 =
// 1.0041667, shown as it is (the source refuses copies; the clamp hid them:
// 768 of 384 device-hours read as 100 %).
func TestCoverageRatioNotClamped(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	d := model.NewDataset(model.Range{Start: start, End: start.Add(2 * time.Hour), Step: time.Hour, Resolution: 5 * time.Minute})
	d.GPUs[model.GPUKey{UUID: "GPU-0"}] = &model.GPUSeen{Host: "node-a", GPU: "0", Seen: []float64{3630, 3600}, FirstLost: -1}
	c := coverageOf(d)
	want := 7230.0 / 7200
	if c.Ratio != want || len(c.GPUs) != 1 || c.GPUs[0].Ratio != want || c.Nodes[0].Ratio != want || c.MissingHours != 0 {
		t.Errorf("ratio %v (GPU %v, node %v), missing %v h; want %v everywhere, none missing", c.Ratio, c.GPUs[0].Ratio, c.Nodes[0].Ratio, c.MissingHours, want)
	}
}

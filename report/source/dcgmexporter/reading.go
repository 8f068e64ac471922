package dcgmexporter

import (
	"math"
	"slices"

	"github.com/gputally/gputally/report/model"
)

// deviceReading is what one grid point sampled of one GPU or MIG instance:
// the holders labelled on its current series and those series' values.
//
// A point's lookback is longer than a scrape interval (grid.go), so
// that a late scrape still counts; it then also holds the last sample of a
// series that ended a scrape ago — the pod that left as the next one came.
// So the presence query, read first, marks the series with a sample in the
// last scrape interval before the point (fresh); when a device has any,
// its other series are past and the value queries leave them out: the
// device's holders and values are those of its latest scrape. A device
// with no fresh series (a scrape stored late, a job scraped less often than
// the grid) reads every series of its lookback.
type deviceReading struct {
	id      *dcgmSeries // the first series seen: identity, model, host
	holders []model.HolderKey
	fresh   []*dcgmSeries // the series with a sample in the presence window
	readings
	freshBuf [1]*dcgmSeries // fresh's first array: one series at almost every point
}

// readings are the values of a device's series at a grid point, in base
// units under either naming (names.go); NaN: none.
type readings struct {
	gr    float64 // graphics-engine activity (GR_ENGINE_UTIL_RATIO, GR_ENGINE_ACTIVE), 0–1
	util  float64 // GPU utilization (GPU_UTIL_RATIO, GPU_UTIL ÷ 100), 0–1
	fb    float64 // framebuffer used (FB_USED_BYTES, FB_USED × 2^20), bytes
	power float64 // board power (BOARD_POWER_WATTS, POWER_USAGE), W
	xid   float64 // the last XID (XID_ERROR, XID_ERRORS)
}

func newDeviceReading(s *dcgmSeries) *deviceReading {
	nan := math.NaN()
	r := &deviceReading{id: s, readings: readings{gr: nan, util: nan, fb: nan, power: nan, xid: nan}}
	r.fresh = r.freshBuf[:0]
	return r
}

// markFresh notes that series s has a sample in the presence window.
func (r *deviceReading) markFresh(s *dcgmSeries) {
	if !slices.Contains(r.fresh, s) {
		r.fresh = append(r.fresh, s)
	}
}

// current reports whether series s is one of the device's current ones —
// fresh, or any when none is — and adds its holder when it is.
func (r *deviceReading) current(s *dcgmSeries) bool {
	if len(r.fresh) > 0 && !slices.Contains(r.fresh, s) {
		return false
	}
	if h := s.holder; h != (model.HolderKey{}) && !slices.Contains(r.holders, h) {
		r.holders = append(r.holders, h)
	}
	return true
}

// activity is the device's activity ratio: GR engine, else GPU utilization
// (never on a MIG instance); NaN without either.
func (r *deviceReading) activity() float64 {
	if !math.IsNaN(r.gr) {
		return r.gr
	}
	if r.id.dev.GI == "" && !math.IsNaN(r.util) {
		return r.util
	}
	return math.NaN()
}

// maxNaN returns the larger of a and b, ignoring NaN.
func maxNaN(a, b float64) float64 {
	if math.IsNaN(a) || b > a {
		return b
	}
	return a
}

package source

import (
	"math"
	"slices"

	"github.com/gputally/gputally/report/model"
)

// deviceReading is what one grid point sampled of one GPU or MIG instance:
// per holder labelled on its series (none too), the values of those series'
// last samples in the lookback, and the holders whose series have a sample
// in the presence window. The lookback is longer than a scrape interval
// (dcgm_grid.go), so that a late scrape still counts; it then also holds
// the last sample of a series that ended a scrape ago — the pod that left
// as the next one came. resolve reads only the series with a sample in the
// presence window (at most one scrape long) when there are any: the
// device's holders and values are those of its latest scrape.
type deviceReading struct {
	id     *dcgmSeries // the first series seen: identity, model, host
	series []holderReading
	fresh  []model.HolderKey // holders with a sample in the presence window
	// Set by resolve: the holders of the current series, and their values.
	holders []model.HolderKey
	readings
}

// readings are the values of a device's series at a grid point; NaN: none.
type readings struct {
	gr    float64 // DCGM_FI_PROF_GR_ENGINE_ACTIVE, 0–1
	util  float64 // DCGM_FI_DEV_GPU_UTIL, %
	fb    float64 // DCGM_FI_DEV_FB_USED, MiB
	power float64 // DCGM_FI_DEV_POWER_USAGE, W
	xid   float64 // DCGM_FI_DEV_XID_ERRORS
}

// holderReading is the readings of the series labelled with one holder.
type holderReading struct {
	holder model.HolderKey
	readings
}

func noReadings() readings {
	nan := math.NaN()
	return readings{gr: nan, util: nan, fb: nan, power: nan, xid: nan}
}

func newDeviceReading(s *dcgmSeries) *deviceReading {
	return &deviceReading{id: s, readings: noReadings()}
}

// of returns the readings of the series labelled with h, made if new.
func (r *deviceReading) of(h model.HolderKey) *readings {
	for i := range r.series {
		if r.series[i].holder == h {
			return &r.series[i].readings
		}
	}
	r.series = append(r.series, holderReading{holder: h, readings: noReadings()})
	return &r.series[len(r.series)-1].readings
}

// markFresh notes that a series labelled with h has a sample in the
// presence window.
func (r *deviceReading) markFresh(h model.HolderKey) {
	if !slices.Contains(r.fresh, h) {
		r.fresh = append(r.fresh, h)
	}
}

// resolve sets the device's holders and readings from its current series:
// those with a sample in the presence window, or every one when none has
// (a scrape stored late, a job scraped less often than the grid).
func (r *deviceReading) resolve() {
	anyFresh := false
	for _, s := range r.series {
		anyFresh = anyFresh || slices.Contains(r.fresh, s.holder)
	}
	for _, s := range r.series {
		if anyFresh && !slices.Contains(r.fresh, s.holder) {
			continue
		}
		if s.holder != (model.HolderKey{}) {
			r.holders = append(r.holders, s.holder)
		}
		r.gr, r.util, r.fb = maxNaN(r.gr, s.gr), maxNaN(r.util, s.util), maxNaN(r.fb, s.fb)
		r.power, r.xid = maxNaN(r.power, s.power), maxNaN(r.xid, s.xid)
	}
}

// activity is the device's activity ratio: GR engine, else GPU utilization
// (never on a MIG instance); NaN without either.
func (r *deviceReading) activity() float64 {
	if !math.IsNaN(r.gr) {
		return r.gr
	}
	if r.id.dev.GI == "" && !math.IsNaN(r.util) {
		return r.util / 100
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

// Package hourly builds model.Datasets for the report's tests, step bucket
// by step bucket as a source fills one (model.Dataset.AddSeconds), so that
// the analysis and the advice can be tested on hand-made ledgers.
package hourly

import (
	"time"

	"github.com/gputally/gputally/report/model"
)

// Start is when every dataset of this package starts: a Monday, 00:00 UTC.
var Start = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

// Dataset returns an empty dataset of buckets 1 h step buckets from Start,
// with 5 min resolution steps, its ledger made.
func Dataset(buckets int) *model.Dataset {
	d := model.NewDataset(model.Range{Start: Start, End: Start.Add(time.Duration(buckets) * time.Hour), Step: time.Hour, Resolution: 5 * time.Minute})
	d.Ledger = map[model.HoldingKey]*model.LedgerEntry{}
	return d
}

// Device is a GPU (or MIG instance) of a test's ledger: its key, node,
// index on the node and model, its rate in EUR per hour, and its facility
// power in W (power × PUE: joules per device-second; 0: its energy is not
// metered).
type Device struct {
	Key              model.DeviceKey
	Host, GPU, Model string
	EURPerHour       float64
	FacilityW        float64
}

// Add books sec device-seconds of state st in bucket b of d to the holding
// of holder on dev (holder zero: no one), at dev's rate and facility power,
// and returns its entry (made the first time, of kind model.Exact).
func Add(d *model.Dataset, dev Device, holder model.HolderKey, b, st int, sec float64) *model.LedgerEntry {
	k := model.HoldingKey{Dev: dev.Key, Holder: holder}
	e := d.Ledger[k]
	if e == nil {
		e = &model.LedgerEntry{Model: dev.Model, Host: dev.Host, GPU: dev.GPU, Profile: dev.Key.Profile, Last: -1, Kind: model.Exact}
		d.Ledger[k] = e
	}
	e.Seconds[st] += sec
	d.AddEUR(e, dev.Key.Cluster, b, st, sec*dev.EURPerHour/3600)
	if dev.FacilityW > 0 {
		e.Metered = true
		e.Joules[st] += sec * dev.FacilityW
	}
	d.AddSeconds(e, d.GPU(k.Dev.GPU(), e), b, st, sec)
	return e
}

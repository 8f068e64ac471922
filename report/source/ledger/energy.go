package ledger

import (
	"fmt"
	"math"
	"time"

	"github.com/gputally/gputally/cost"
)

// energyCounter is the ledger's facility energy per holding and state,
// joules: read as the EUR are (stretch.go's followers), and absent for GPUs
// whose energy the exporter does not meter (flat rates, no power reading).
const energyCounter = "gputally_energy_joules_total"

// maxLedgerJoules is the largest value a gputally_energy_joules_total series
// can hold: a century of device-seconds at the highest facility power.
const maxLedgerJoules = maxLedgerSeconds * cost.MaxFacilityPowerW

// addEnergy adds the joules of one gputally_energy_joules_total series and
// marks its entry metered; isNew tells whether its first bucket counts from
// 0 (its seconds series says so). An increase beyond the highest facility
// power is an error (checkEnergy).
func (l *ledgerReading) addEnergy(s *counterSeries, isNew bool) error {
	e, st, ok := l.entry(s.metric)
	if !ok {
		return nil
	}
	for i, v := range s.increases(isNew) {
		if math.IsNaN(v) {
			continue
		}
		if err := checkEnergy(s, v, l.start.Add(time.Duration(i+1)*l.d.Step), l.d.Step); err != nil {
			return err
		}
		e.Joules[st] += v
		e.Metered = true
	}
	return nil
}

// checkEnergy checks one energy series' increase v in the step bucket ending
// at end: at most what the highest facility power a price book allows draws
// in the bucket and its scrape timing.
func checkEnergy(s *counterSeries, v float64, end time.Time, step time.Duration) error {
	limit := (step + conservationSlack(step)).Seconds() * cost.MaxFacilityPowerW
	if v > limit {
		return fmt.Errorf("%s: %s J in the step bucket ending %s, more than the highest facility power a price book allows draws in it (%s J)",
			named(energyCounter, s.metric), trimFloat(v), end.UTC().Format(time.RFC3339), trimFloat(limit))
	}
	return nil
}

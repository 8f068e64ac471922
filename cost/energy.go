package cost

// JoulesPerKWh is the energy of one kilowatt-hour, J.
const JoulesPerKWh = 3.6e6

// MaxFacilityPowerW is the highest facility power, W, a book within the
// bounds meters for one GPU: the highest believable power at the highest PUE.
// A ledger energy counter that grows faster was not written by an exporter.
const MaxFacilityPowerW = MaxPowerW * MaxPUE

// FacilityPowerW returns the power, W, that a GPU priced by p and drawing
// powerW watts draws at the facility's meter: powerW × PUE, the power the
// energy component of its rate prices. It is 0 for a flat rate (the price
// includes the energy, which gputally then does not meter) and for an
// unknown power (NaN, negative, or above MaxPowerW).
func (p *ModelPrice) FacilityPowerW(powerW float64) float64 {
	if p.Flat || !knownPower(powerW) {
		return 0
	}
	return powerW * p.PUE
}

// energyMeter says whether, and at what power, the ledger meters one GPU's
// energy.
type energyMeter struct {
	facilityW float64 // the facility power of the last tick, W
	seen      bool    // a power reading was seen for the GPU
	// metered is true while the GPU's price has an energy component and a
	// power was seen: its series carry energy (Total.Metered).
	metered bool
}

// update sets the meter for one tick of the GPU in, priced by price (nil:
// no entry prices it) at powerW, the power the ledger charges (its last
// known reading; 0 after a loss).
func (m *energyMeter) update(price *ModelPrice, powerW float64, in *GPUState) {
	m.seen = m.seen || !in.Lost && knownPower(in.PowerW)
	m.facilityW, m.metered = 0, false
	if price != nil && !price.Flat && m.seen {
		m.facilityW, m.metered = price.FacilityPowerW(powerW), true
	}
}

// counter is the cumulative value of one ledger series.
type counter struct{ seconds, eur, joules float64 }

// add adds seconds device-seconds and eur EUR of tick t, and the facility
// energy of those device-seconds at t's facility power.
func (c *counter) add(t tick, seconds, eur float64) {
	c.seconds += seconds
	c.eur += eur
	c.joules += seconds * t.facilityW
}

// lazyCounter is a counter exported only once its state first applied.
type lazyCounter struct {
	counter
	used bool
}

func (c *lazyCounter) add(t tick, seconds, eur float64) {
	c.counter.add(t, seconds, eur)
	c.used = true
}

// of returns t with state s and the values of c.
func (t Total) of(s State, c *counter) Total {
	t.State, t.Seconds, t.EUR, t.Joules = s, c.seconds, c.eur, c.joules
	return t
}

package sim

import (
	"context"
	"math"
	"time"

	"github.com/gputally/gputally/collector"
)

// XIDs after which a GPU reports unhealthy (hardware and driver faults).
func criticalXID(xid uint64) bool {
	switch xid {
	case 48, 62, 64, 74, 79, 95, 119, 120:
		return true
	}
	return false
}

// Sample fills s with the readings at now. It reuses the slices in s and does not
// allocate once they have grown to size. It fails, with ErrBackendFailing, only
// inside a `backend: failing` event's window, and with
// collector.ErrInventoryChanged when a `mig` event changed the inventory since
// the one Inventory returns (which then returns the new one); errs is not used.
func (b *Backend) Sample(_ context.Context, now time.Time, s *collector.Sample, _ collector.ErrorCounter) error {
	t := now.UnixNano()
	if !b.started {
		b.pin(t)
	}
	if b.backendFailing.contains(t - b.start) {
		return ErrBackendFailing
	}
	if len(b.invs) > 1 {
		if e := b.inventoryAt(t - b.start); e != b.cur {
			b.cur = e
			return collector.ErrInventoryChanged
		}
	}
	if len(s.GPUs) != len(b.gpus) {
		s.GPUs = make([]collector.GPUReading, len(b.gpus))
	}
	s.Time = now
	k := floorDiv(t, knotNanos)
	frac := float64(t-k*knotNanos) / float64(knotNanos)
	for i := range b.gpus {
		b.gpus[i].read(&s.GPUs[i], b.start, t, k, frac)
	}
	return nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// read fills r at t (Unix ns), which lies frac of the way from knot k to knot k+1.
func (g *simGPU) read(r *collector.GPUReading, start, t, k int64, frac float64) {
	since := t - start
	instances := g.layoutAt(since)
	r.XIDs = r.XIDs[:0]
	r.Processes, r.ProcessesKnown = r.Processes[:0], true
	r.Values.Reset()
	if cap(r.Instances) < len(instances) {
		r.Instances = make([]collector.Values, len(instances))
	}
	r.Instances = r.Instances[:len(instances)]
	for i := range r.Instances {
		r.Instances[i].Reset()
	}

	healthy, last, dbe := true, uint64(0), 0.0
	for _, e := range g.events {
		if e.at > since {
			break
		}
		r.XIDs = addXID(r.XIDs, e.xid)
		last = e.xid
		if e.xid == 48 {
			dbe++
		}
		if criticalXID(e.xid) {
			healthy = false
		}
	}
	r.Lost = g.lostAt >= 0 && since >= g.lostAt
	r.Healthy = healthy && !r.Lost
	if r.Lost {
		return
	}
	v := &r.Values
	v.Set(collector.XIDLast, float64(last))
	v.Set(collector.ECCDBEVolatile, dbe)

	ts := float64(t) / 1e9
	var gr, sm, tensor, dram, usedMiB float64
	if g.migMode {
		for i := range instances {
			in := &instances[i]
			iv := &r.Instances[i]
			var a, used float64
			var p profile
			if l := g.slotLoads[in.slot]; l != nil && l.running(since) {
				a = l.activityAt(k, frac)
				used = fbUsedMiB(l.pattern, l.fbKey, l.fbMiB, ts, a)
				p = l.prof
				r.Processes = appendProcesses(r.Processes, l, in.giID, used, a*in.computeShare)
			}
			iv.Set(collector.FBUsed, used)
			iv.Set(collector.FBReserved, in.reservedMiB)
			iv.Set(collector.FBFree, math.Max(0, in.totalMiB-in.reservedMiB-used))
			iv.Set(collector.GREngineActive, a)
			iv.Set(collector.SMActive, a*p.sm)
			iv.Set(collector.TensorActive, a*p.tensor)
			iv.Set(collector.DRAMActive, a*p.dram)
			gr += a * in.computeShare
			sm += a * p.sm * in.computeShare
			tensor += a * p.tensor * in.computeShare
			dram += a * p.dram * in.memoryShare
			usedMiB += used
		}
	} else {
		var sum float64
		for _, l := range g.loads {
			if l.running(since) {
				sum += l.activityAt(k, frac)
			}
		}
		scale := 1 / math.Max(1, sum) // time-sliced pods share one GPU's time
		for _, l := range g.loads {
			if !l.running(since) {
				continue
			}
			a := l.activityAt(k, frac) * scale
			used := fbUsedMiB(l.pattern, l.fbKey, l.fbMiB, ts, a)
			r.Processes = appendProcesses(r.Processes, l, -1, used, a)
			gr += a
			sm += a * l.prof.sm
			tensor += a * l.prof.tensor
			dram += a * l.prof.dram
			usedMiB += used
		}
		v.Set(collector.GPUUtil, math.Round(100*gr))
		v.Set(collector.MemCopyUtil, math.Round(100*0.8*dram))
	}
	v.Set(collector.GREngineActive, gr)
	v.Set(collector.SMActive, sm)
	v.Set(collector.TensorActive, tensor)
	v.Set(collector.DRAMActive, dram)

	total, reserved := float64(g.spec.memoryMiB), float64(g.spec.reservedMiB)
	v.Set(collector.FBUsed, usedMiB)
	v.Set(collector.FBReserved, reserved)
	v.Set(collector.FBFree, math.Max(0, total-reserved-usedMiB))

	pk, pk1 := g.knotPower(k), g.knotPower(k+1)
	power := pk + (pk1-pk)*frac
	temp := g.temperature(power)
	v.Set(collector.PowerUsage, math.Round(power*1000)/1000)
	v.Set(collector.GPUTemp, math.Round(temp))
	v.Set(collector.MemoryTemp, math.Round(temp+3+6*dram))
	if gr < 0.01 {
		v.Set(collector.SMClock, g.spec.smIdleMHz)
	} else {
		v.Set(collector.SMClock, g.spec.smMaxMHz-15*math.Round(10*g.powerPressure(power)))
	}
	v.Set(collector.MemClock, g.spec.memMHz)

	energyJ, powerViol, thermalViol := g.integrate(start, max(t, start))
	v.Set(collector.TotalEnergy, math.Floor((g.priorEnergyJ+energyJ)*1000))
	v.Set(collector.PowerViolation, math.Floor(powerViol))
	v.Set(collector.ThermalViolation, math.Floor(thermalViol))
	hours := float64(max(since, 0)) / float64(time.Hour)
	v.Set(collector.PCIeReplay, g.replayBase+math.Floor(g.replayPerHour*hours+g.replayPhase))
	v.Set(collector.ECCSBEVolatile, g.sbeBase+math.Floor(g.sbePerHour*hours+g.sbePhase))
}

// addXID counts one event of xid in xs, which stays sorted by code.
func addXID(xs []collector.XIDCount, xid uint64) []collector.XIDCount {
	for i := range xs {
		if xs[i].XID == xid {
			xs[i].Count++
			return xs
		}
		if xs[i].XID > xid {
			xs = append(xs, collector.XIDCount{})
			copy(xs[i+1:], xs[i:])
			xs[i] = collector.XIDCount{XID: xid, Count: 1}
			return xs
		}
	}
	return append(xs, collector.XIDCount{XID: xid, Count: 1})
}

// appendProcesses adds a load's processes; its framebuffer splits evenly over them.
func appendProcesses(ps []collector.Process, l *load, gi int, usedMiB, util float64) []collector.Process {
	n := float64(len(l.pids))
	for _, pid := range l.pids {
		ps = append(ps, collector.Process{
			PID:             pid,
			GPUInstanceID:   gi,
			UsedMemoryBytes: uint64(usedMiB / n * (1 << 20)),
			Utilization:     util / n,
		})
	}
	return ps
}

// knotActivity is the GPU's activity at knot k: the sum of its running pods'
// (time-sliced pods share the GPU, so at most 1), or the compute-weighted sum
// over MIG instances.
func (g *simGPU) knotActivity(k int64) float64 {
	since := k*knotNanos - g.start
	var a float64
	if g.migMode {
		instances := g.layoutAt(since)
		for i := range instances {
			if l := g.slotLoads[instances[i].slot]; l != nil && l.window.active(since) {
				a += l.activity(k) * instances[i].computeShare
			}
		}
		return a
	}
	for _, l := range g.loads {
		if l.window.active(since) {
			a += l.activity(k)
		}
	}
	return math.Min(1, a)
}

// knotPower is the GPU's power draw at knot k, W. It remembers the last knots it
// computed: successive samples ask for the same ones.
func (g *simGPU) knotPower(k int64) float64 {
	c := &g.powerCache[k&1]
	if c.valid && c.k == k {
		return c.p
	}
	idle, tdp := g.spec.idleW, g.spec.tdpW
	jitter := (unit(g.key^0x706f776572, k) - 0.5) * 0.02 * tdp
	p := math.Min(tdp, math.Max(0.9*idle, idle+(tdp-idle)*g.knotActivity(k)+jitter))
	*c = knotCache{valid: true, k: k, p: p}
	return p
}

// temperature is the GPU's temperature at a power draw, °C.
func (g *simGPU) temperature(powerW float64) float64 {
	return g.ambientC + 52*powerW/g.spec.tdpW
}

// powerPressure is how hard the power limit throttles the GPU at a draw, 0–1.
func (g *simGPU) powerPressure(powerW float64) float64 {
	return clamp01((powerW/g.spec.tdpW - 0.95) / 0.05)
}

// thermalPressure is how hard the temperature throttles the GPU at a draw, 0–1.
func (g *simGPU) thermalPressure(powerW float64) float64 {
	return clamp01((g.temperature(powerW) - 84) / 4)
}

// integrate returns the energy (J) and the power and thermal violation time (µs)
// from start to t (Unix ns, t ≥ start). Power is linear between knots, so the
// energy trapezoids are exact; throttling is constant over a knot interval, so the
// violation counters grow monotonically. The result depends on start and t only,
// not on which times were sampled before.
func (g *simGPU) integrate(start, t int64) (energyJ, powerViol, thermalViol float64) {
	if !g.cp.valid || t < g.cp.at {
		k := floorDiv(start, knotNanos)
		pk, pk1 := g.knotPower(k), g.knotPower(k+1)
		g.cp = checkpoint{valid: true, k: k, at: start, knotPower: pk,
			power: pk + (pk1-pk)*float64(start-k*knotNanos)/float64(knotNanos)}
	}
	cp := &g.cp
	for next := (cp.k + 1) * knotNanos; next <= t; next = (cp.k + 1) * knotNanos {
		p := g.knotPower(cp.k + 1)
		g.addSegment(&cp.energyJ, &cp.powerViol, &cp.thermalViol, cp.power, p, (cp.knotPower+p)/2, next-cp.at)
		cp.k++
		cp.at = next
		cp.power = p
		cp.knotPower = p
	}
	pNext := g.knotPower(cp.k + 1)
	powerT := cp.knotPower + (pNext-cp.knotPower)*float64(t-cp.k*knotNanos)/float64(knotNanos)
	energyJ, powerViol, thermalViol = cp.energyJ, cp.powerViol, cp.thermalViol
	g.addSegment(&energyJ, &powerViol, &thermalViol, cp.power, powerT, (cp.knotPower+pNext)/2, t-cp.at)
	return energyJ, powerViol, thermalViol
}

// addSegment adds dt ns of power going linearly from p0 to p1 watts, inside a knot
// interval whose mean power is interval watts.
func (g *simGPU) addSegment(energyJ, powerViol, thermalViol *float64, p0, p1, interval float64, dt int64) {
	if dt <= 0 {
		return
	}
	sec := float64(dt) / 1e9
	*energyJ += sec * (p0 + p1) / 2
	*powerViol += sec * 1e6 * g.powerPressure(interval)
	*thermalViol += sec * 1e6 * g.thermalPressure(interval)
}

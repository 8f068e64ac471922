package collector

import (
	"math"

	"github.com/gputally/gputally/attribution"
)

// PodProcesses is the ProcessAccounting of a node whose processes are mapped to
// pods through procfs (attribution.ProcessResolver). Only the sampler goroutine
// calls it.
type PodProcesses struct {
	resolver *attribution.ProcessResolver
	procs    []attribution.ProcessSample // reused buffer
}

// NewPodProcesses returns the ProcessAccounting of r.
func NewPodProcesses(r *attribution.ProcessResolver) *PodProcesses {
	return &PodProcesses{resolver: r}
}

// Usage splits the processes of every shared device (time-sliced or MPS GPU or
// MIG instance) among the containers holding it.
func (p *PodProcesses) Usage(inv Inventory, s Sample, attr *attribution.Snapshot) ([]DeviceUsage, bool) {
	if attr == nil {
		return nil, p.resolver.Up()
	}
	var out []DeviceUsage
	up := true
	for i := range s.GPUs {
		r, g := &s.GPUs[i], &inv.GPUs[i]
		if r.Lost || !r.ProcessesKnown {
			continue
		}
		if !g.MIGEnabled {
			if u, ok := p.split(g.UUID, -1, r.Processes, attr); ok {
				out, up = append(out, u.usage), up && u.up
			}
			continue
		}
		for _, in := range g.Instances {
			if u, ok := p.split(in.UUID, in.GPUInstanceID, r.Processes, attr); ok {
				out, up = append(out, u.usage), up && u.up
			}
		}
	}
	return out, up && p.resolver.Up()
}

type deviceSplit struct {
	usage DeviceUsage
	up    bool
}

// split returns the usage of device uuid (processes of GPU instance gi, or all
// when gi is -1), and false when the device is not shared.
func (p *PodProcesses) split(uuid string, gi int, procs []Process, attr *attribution.Snapshot) (deviceSplit, bool) {
	holders := attr.Holders[uuid]
	if !shared(holders) {
		return deviceSplit{}, false
	}
	p.procs = p.procs[:0]
	for _, pr := range procs {
		if gi < 0 || pr.GPUInstanceID == gi {
			p.procs = append(p.procs, attribution.ProcessSample{PID: pr.PID, Utilization: pr.Utilization, UsedMemoryBytes: pr.UsedMemoryBytes})
		}
	}
	u := p.resolver.Split(p.procs, holders)
	d := DeviceUsage{UUID: uuid, Holders: make([]HolderUsage, len(holders))}
	for k, h := range holders {
		hu := HolderUsage{Namespace: h.Namespace, Pod: h.Pod, Container: h.Container, Utilization: math.NaN()}
		if u.Up {
			hu.Utilization = min(u.Holders[k].Utilization, 1)
			hu.MemoryBytes = float64(u.Holders[k].MemoryUsedBytes)
		}
		d.Holders[k] = hu
	}
	return deviceSplit{usage: d, up: u.Up}, true
}

// shared reports whether holders share one device by time-slicing, MPS or
// fractional shares (HAMi, KAI-Scheduler, DRA consumed capacity), so that
// their own activity is worth measuring.
func shared(holders []attribution.Holder) bool {
	for _, h := range holders {
		if h.Sharing == attribution.TimeSlicing || h.Sharing == attribution.MPS || (h.Fractional && !h.Reservation) {
			return true
		}
	}
	return false
}

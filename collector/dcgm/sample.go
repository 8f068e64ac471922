package dcgm

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gputally/gputally/collector"
)

// Sample reads the latest values DCGM sampled for every GPU and MIG instance,
// the XID events since the previous Sample and the health watches. While the
// hostengine is unreachable it returns an error wrapping ErrDisconnected and
// reconnects with exponential backoff on later calls; a reconnect that finds
// other devices, or a changed MIG hierarchy, returns
// collector.ErrInventoryChanged, and the next Inventory lists the devices anew.
func (b *Backend) Sample(ctx context.Context, _ time.Time, s *collector.Sample, errs collector.ErrorCounter) error {
	if b.cl == nil {
		before := b.inv
		if err := b.reconnect(ctx); err != nil {
			return err
		}
		if !sameInventory(before, b.inv) {
			return collector.ErrInventoryChanged
		}
	}
	if len(s.GPUs) != len(b.inv.GPUs) {
		return collector.ErrInventoryChanged
	}
	if changed, err := b.migChanged(); err != nil {
		return b.failure("read MIG hierarchy", err)
	} else if changed {
		b.rediscover = true
		return collector.ErrInventoryChanged
	}

	vals, err := b.cl.LatestValues(b.gpuEnts, b.gpuFields)
	if err != nil {
		return b.failure("read field values", err)
	}
	for i := range s.GPUs {
		r := &s.GPUs[i]
		r.Values.Reset()
		for n := range r.Instances {
			r.Instances[n].Reset()
		}
	}
	newlyUnsupported := map[uint16][]string{}
	b.apply(vals, s, errs, newlyUnsupported)
	if len(b.instEnts) > 0 {
		vals, err := b.cl.LatestValues(b.instEnts, b.instField)
		if err != nil {
			if connectionLost(err) {
				return b.lose(err)
			}
			errs.Inc("mig")
		} else {
			b.apply(vals, s, errs, newlyUnsupported)
		}
	}
	b.logUnsupported(newlyUnsupported)

	for i := range b.gpus {
		g := &b.gpus[i]
		if !g.lost && b.cl.GPULost(g.id) {
			b.markLost(i)
		}
	}
	if err := b.readXIDs(errs); err != nil {
		return err
	}
	if err := b.readHealth(errs); err != nil {
		return err
	}

	for i := range s.GPUs {
		r, g := &s.GPUs[i], &b.gpus[i]
		r.Lost = g.lost
		r.Healthy = g.healthy && !g.lost
		r.XIDs = slices.Clone(b.xids[b.inv.GPUs[i].UUID])
		if g.lost {
			r.Values.Reset()
			for n := range r.Instances {
				r.Instances[n].Reset()
			}
		}
	}
	return nil
}

// failure turns an error of a call that no device could be read without into
// Sample's error: a lost connection starts reconnecting.
func (b *Backend) failure(op string, err error) error {
	if connectionLost(err) {
		return b.lose(err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// apply stores DCGM values in s.
func (b *Backend) apply(vals []fieldValue, s *collector.Sample, errs collector.ErrorCounter, newlyUnsupported map[uint16][]string) {
	for _, v := range vals {
		ref, ok := b.ref(v.entity)
		if !ok {
			continue
		}
		spec, ok := specByID(v.field)
		if !ok || b.unsupported[entityField{v.entity, v.field}] {
			continue
		}
		x, verdict := classify(spec, v)
		switch verdict {
		case valid:
			if ref.inst < 0 {
				s.GPUs[ref.gpu].Values.Set(spec.field, x)
			} else {
				s.GPUs[ref.gpu].Instances[ref.inst].Set(spec.field, x)
			}
		case unsupported:
			b.unsupported[entityField{v.entity, v.field}] = true
			if !b.logged[v.field] {
				newlyUnsupported[v.field] = append(newlyUnsupported[v.field], b.describe(ref))
			}
		case lost:
			if !b.gpus[ref.gpu].lost {
				b.markLost(ref.gpu)
			}
		case failed:
			errs.Inc(spec.name)
		}
	}
}

// logUnsupported logs, once per field, the devices that do not support it.
func (b *Backend) logUnsupported(fields map[uint16][]string) {
	ids := make([]uint16, 0, len(fields))
	for id := range fields {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		b.logged[id] = true
		spec, _ := specByID(id)
		b.log.Info("DCGM field not supported; absent from now on", "field", spec.dcgm, "devices", strings.Join(fields[id], ","))
	}
}

// ref finds the inventory position of a DCGM entity.
func (b *Backend) ref(e entity) (deviceRef, bool) {
	switch e.group {
	case groupGPU:
		for i, g := range b.gpuEnts {
			if g == e {
				return deviceRef{gpu: i, inst: -1}, true
			}
		}
	case groupGPUInstance:
		for i, m := range b.instEnts {
			if m == e {
				return b.instOf[i], true
			}
		}
	}
	return deviceRef{}, false
}

func (b *Backend) describe(r deviceRef) string {
	g := b.inv.GPUs[r.gpu]
	if r.inst < 0 {
		return g.UUID
	}
	return fmt.Sprintf("%s/GI%d", g.UUID, g.Instances[r.inst].GPUInstanceID)
}

func (b *Backend) markLost(i int) {
	b.gpus[i].lost = true
	b.log.Error("GPU lost (fell off the bus); its series stop, the other GPUs continue", "uuid", b.inv.GPUs[i].UUID)
}

// migChanged reports whether DCGM's MIG hierarchy differs from the inventory.
func (b *Backend) migChanged() (bool, error) {
	hier, err := b.cl.MIGHierarchy()
	if err != nil {
		return false, err
	}
	gis, _ := splitHierarchy(hier)
	if len(gis) != len(b.instEnts) {
		return true, nil
	}
	for _, gi := range gis {
		ref, ok := b.ref(gi.entity)
		if !ok || b.gpuEnts[ref.gpu] != gi.parent ||
			b.inv.GPUs[ref.gpu].Instances[ref.inst].GPUInstanceID != int(gi.gpuInstanceID) {
			return true, nil
		}
	}
	return false, nil
}

// readXIDs counts the XID events DCGM recorded since the previous call.
func (b *Backend) readXIDs(errs collector.ErrorCounter) error {
	vals, next, err := b.cl.XIDsSince(b.xidSince)
	if err != nil {
		if connectionLost(err) {
			return b.lose(err)
		}
		errs.Inc("xid_events")
		return nil
	}
	b.xidSince = next
	for _, v := range vals {
		ref, ok := b.ref(v.entity)
		if !ok || v.status != stOK || v.typ != typeInt64 || v.i64 <= 0 || v.i64 >= int32Blank {
			continue
		}
		uuid := b.inv.GPUs[ref.gpu].UUID
		b.xids[uuid] = addXID(b.xids[uuid], uint64(v.i64))
	}
	return nil
}

// addXID counts one event of code in xs, sorted by code.
func addXID(xs []collector.XIDCount, code uint64) []collector.XIDCount {
	i, found := slices.BinarySearchFunc(xs, code, func(x collector.XIDCount, c uint64) int { return cmp.Compare(x.XID, c) })
	if found {
		xs[i].Count++
		return xs
	}
	return slices.Insert(xs, i, collector.XIDCount{XID: code, Count: 1})
}

// readHealth sets each GPU's health from DCGM's health watches: a GPU is
// unhealthy while a watch reports a failure on it or one of its instances.
// Warnings (such as power throttling) leave it healthy. When the check fails
// the previous health stands.
func (b *Backend) readHealth(errs collector.ErrorCounter) error {
	if !b.health {
		return nil
	}
	incidents, err := b.cl.HealthCheck()
	if err != nil {
		if connectionLost(err) {
			return b.lose(err)
		}
		errs.Inc("health")
		return nil
	}
	for i := range b.gpus {
		b.gpus[i].healthy = true
	}
	for _, in := range incidents {
		if !in.failure {
			continue
		}
		if ref, ok := b.ref(in.entity); ok {
			if b.gpus[ref.gpu].healthy {
				b.log.Debug("DCGM health watch failed", "uuid", b.inv.GPUs[ref.gpu].UUID, "incident", in.message)
			}
			b.gpus[ref.gpu].healthy = false
		}
	}
	return nil
}

// sameInventory reports whether two inventories list the same devices.
func sameInventory(a, b collector.Inventory) bool {
	return a.DriverVersion == b.DriverVersion && slices.EqualFunc(a.GPUs, b.GPUs, func(x, y collector.GPU) bool {
		return x.Index == y.Index && x.Minor == y.Minor && x.UUID == y.UUID && x.PCIBusID == y.PCIBusID &&
			x.Model == y.Model && x.MemoryTotalMiB == y.MemoryTotalMiB && x.MIGEnabled == y.MIGEnabled &&
			slices.Equal(x.Instances, y.Instances)
	})
}

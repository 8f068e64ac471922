package attribution

import (
	"fmt"
	"strings"
	"sync"
)

// Device is one GPU or MIG instance of this node, as the sampling backend sees it.
// The caller converts its inventory into Devices (see Client.SetDevices).
type Device struct {
	UUID string // "GPU-…" for a physical GPU, "MIG-…" for a MIG instance
	// ParentUUID is the "GPU-…" UUID of a MIG instance's GPU; "" for a physical GPU.
	ParentUUID string
	// Minor is N of /dev/nvidiaN: the GPU's, or for a MIG instance its parent GPU's.
	Minor int
	// GPUInstanceID and ComputeInstanceID identify a MIG instance on its GPU; -1 for a physical GPU.
	GPUInstanceID     int
	ComputeInstanceID int
	// MemoryMiB is the framebuffer of a physical GPU, MiB; 0 when unknown. It
	// turns a KAI `gpu-memory` request into a portion, and is HAMi's memory
	// denominator when the node's registration is not readable.
	MemoryMiB uint64
}

// resolution is one cached device-ID lookup.
type resolution struct {
	uuid string // "" when the ID is unknown
	id   DeviceID
}

// maxCachedIDs bounds the resolution cache; it starts over when full, so a kubelet
// reporting ever-new garbage IDs cannot grow it without bound.
const maxCachedIDs = 1 << 16

// resolver maps device-plugin IDs to device UUIDs through the device table. Results,
// misses included, are cached until the table changes. It is safe for concurrent use.
type resolver struct {
	mu      sync.Mutex
	devices []Device
	known   map[string]bool // UUIDs of devices; nil when no table was set
	cache   map[string]resolution
}

// setDevices replaces the device table and clears the cache. An empty table
// accepts every syntactically valid "GPU-…" and "MIG-…" UUID.
func (r *resolver) setDevices(devs []Device) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.devices = append([]Device(nil), devs...)
	r.known = nil
	if len(devs) > 0 {
		r.known = make(map[string]bool, len(devs))
		for _, d := range devs {
			r.known[d.UUID] = true
		}
	}
	r.cache = nil
}

// resolve returns the device UUID that raw names and its parsed form.
func (r *resolver) resolve(raw string) (string, DeviceID, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if res, ok := r.cache[raw]; ok {
		if res.uuid == "" {
			return "", res.id, fmt.Errorf("device ID %q: no such device on this node", raw)
		}
		return res.uuid, res.id, nil
	}
	id, err := ParseDeviceID(raw)
	if err != nil {
		// Unparseable IDs are not cached: the cache must not grow with garbage.
		return "", id, err
	}
	uuid := r.lookup(id)
	if r.cache == nil || len(r.cache) >= maxCachedIDs {
		r.cache = make(map[string]resolution)
	}
	r.cache[raw] = resolution{uuid: uuid, id: id}
	if uuid == "" {
		return "", id, fmt.Errorf("device ID %q: no such device on this node", raw)
	}
	return uuid, id, nil
}

// knows reports whether uuid names a device of the table; every UUID does while
// no table is set.
func (r *resolver) knows(uuid string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.known == nil || r.known[uuid]
}

// gpu returns the physical GPU uuid of the table, and whether there is one.
// Without a table every "GPU-…" UUID is one, of unknown memory.
func (r *resolver) gpu(uuid string) (Device, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.known == nil {
		return Device{UUID: uuid, GPUInstanceID: -1, ComputeInstanceID: -1}, strings.HasPrefix(uuid, "GPU-")
	}
	for _, d := range r.devices {
		if d.UUID == uuid && d.ParentUUID == "" {
			return d, true
		}
	}
	return Device{}, false
}

// lookup finds the UUID of id in the table; "" when absent. r.mu is held.
func (r *resolver) lookup(id DeviceID) string {
	switch id.Form {
	case FormGPU, FormMIG:
		if r.known == nil || r.known[id.UUID] {
			return id.UUID
		}
	case FormLegacyMIG:
		for _, d := range r.devices {
			if d.ParentUUID == id.UUID && d.GPUInstanceID == id.GPUInstanceID &&
				d.ComputeInstanceID == id.ComputeInstanceID {
				return d.UUID
			}
		}
	case FormGKE:
		for _, d := range r.devices {
			if d.Minor != id.Minor {
				continue
			}
			if id.GPUInstanceID < 0 && d.ParentUUID == "" {
				return d.UUID
			}
			if id.GPUInstanceID >= 0 && d.ParentUUID != "" && d.GPUInstanceID == id.GPUInstanceID {
				return d.UUID
			}
		}
	}
	return ""
}

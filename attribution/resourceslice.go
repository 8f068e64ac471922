package attribution

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// ResourceSlice is the part of a resource.k8s.io ResourceSlice that attribution
// reads, in the API's JSON form: v1 and v1beta2 decode into it as they are, v1beta1
// with each device's fields under Basic. The simulated node builds its slices from
// it. (It is not k8s.io/api's type: that package links several MiB of code for
// the whole core API into the exporter.)
type ResourceSlice struct {
	APIVersion string            `json:"apiVersion,omitempty"`
	Kind       string            `json:"kind,omitempty"`
	Metadata   ResourceSliceMeta `json:"metadata"`
	Spec       ResourceSliceSpec `json:"spec"`
}

// ResourceSliceMeta is the object metadata of a ResourceSlice that matters here.
type ResourceSliceMeta struct {
	Name string `json:"name"`
}

// ResourceSliceSpec is a ResourceSlice's spec.
type ResourceSliceSpec struct {
	Driver   string       `json:"driver"`
	Pool     ResourcePool `json:"pool"`
	NodeName string       `json:"nodeName,omitempty"`
	Devices  []DeviceSpec `json:"devices,omitempty"`
}

// ResourcePool names the pool of a slice; of several generations, the highest is current.
type ResourcePool struct {
	Name               string `json:"name"`
	Generation         int64  `json:"generation"`
	ResourceSliceCount int64  `json:"resourceSliceCount"`
}

// DeviceSpec is one device of a slice.
type DeviceSpec struct {
	Name string `json:"name"`
	DeviceFields
	Basic *DeviceFields `json:"basic,omitempty"` // v1beta1 nests the fields here
}

// DeviceFields are a device's attributes and the shared counters it consumes.
type DeviceFields struct {
	// Attributes are keyed by name, with or without the driver's domain
	// ("uuid" or "gpu.nvidia.com/uuid").
	Attributes       map[string]DeviceAttribute `json:"attributes,omitempty"`
	ConsumesCounters []CounterConsumption       `json:"consumesCounters,omitempty"`
	// Capacity is what the device offers of each capacity (`memory`, HAMi-DRA's
	// `cores`): what claims that share the device consume part of.
	Capacity map[string]DeviceCapacity `json:"capacity,omitempty"`
}

// DeviceCapacity is the amount of one capacity of a device, as a Kubernetes quantity.
type DeviceCapacity struct {
	Value string `json:"value"`
}

// DeviceAttribute is one typed attribute value; exactly one field is set.
type DeviceAttribute struct {
	String  *string `json:"string,omitempty"`
	Int     *int64  `json:"int,omitempty"`
	Bool    *bool   `json:"bool,omitempty"`
	Version *string `json:"version,omitempty"`
}

// CounterConsumption is what a device consumes of one shared counter set; the
// NVIDIA driver's MIG devices consume the memorySlice<N> counters they occupy.
type CounterConsumption struct {
	CounterSet string             `json:"counterSet"`
	Counters   map[string]Counter `json:"counters"`
}

// Counter is an amount of a counter, as a Kubernetes quantity.
type Counter struct {
	Value string `json:"value"`
}

// migName matches the NVIDIA driver's dynamic MIG device names,
// gpu-<parentMinor>-mig-<profile>-<giProfileID>-<placementStart>.
var migName = regexp.MustCompile(`^gpu-\d+-mig-[a-z0-9.+]+-\d+-(\d+)$`)

// sliceDevice reads the attributes of one device. The placement start of a MIG
// device is its lowest memorySlice<N> counter, else the last number of a name of
// the driver's dynamic MIG form (only for a device that names its parent).
func (d DeviceSpec) sliceDevice(driver string) SliceDevice {
	f := d.DeviceFields
	if d.Basic != nil {
		f = *d.Basic
	}
	str := func(name string) string {
		for _, k := range []string{name, driver + "/" + name} {
			if a, ok := f.Attributes[k]; ok && a.String != nil {
				return *a.String
			}
		}
		return ""
	}
	sd := SliceDevice{
		Type: str("type"), UUID: str("uuid"), ParentUUID: str("parentUUID"), Profile: str("profile"),
		PlacementStart: -1,
	}
	for name, c := range f.Capacity {
		if v, err := quantity(c.Value); err == nil && v > 0 {
			if sd.Capacity == nil {
				sd.Capacity = make(map[string]float64)
			}
			sd.Capacity[name] = v
		}
	}
	for _, c := range f.ConsumesCounters {
		for name := range c.Counters {
			slice, ok := strings.CutPrefix(name, "memorySlice")
			n, err := strconv.Atoi(slice)
			if ok && err == nil && n >= 0 && (sd.PlacementStart < 0 || n < sd.PlacementStart) {
				sd.PlacementStart = n
			}
		}
	}
	if m := migName.FindStringSubmatch(d.Name); sd.PlacementStart < 0 && m != nil && sd.ParentUUID != "" {
		sd.PlacementStart, _ = strconv.Atoi(m[1])
	}
	return sd
}

// sliceIndex indexes the devices of tracked drivers in a set of slices. Its
// methods are safe for concurrent use.
type sliceIndex struct {
	drivers map[string]bool // read-only

	mu        sync.RWMutex
	devices   map[DRADeviceRef]SliceDevice
	published map[string]bool // see SliceSource.Published; replaced, never modified
}

// newSliceIndex returns an empty index of the devices of drivers; none means
// DefaultDRADriver.
func newSliceIndex(drivers []string) *sliceIndex {
	return &sliceIndex{drivers: driverSet(drivers), devices: make(map[DRADeviceRef]SliceDevice)}
}

// driverSet returns the set of the DRA driver names drivers; none means
// DefaultDRADriver.
func driverSet(drivers []string) map[string]bool {
	if len(drivers) == 0 {
		drivers = []string{DefaultDRADriver}
	}
	set := make(map[string]bool, len(drivers))
	for _, d := range drivers {
		set[d] = true
	}
	return set
}

// Device returns what the slices publish for ref.
func (x *sliceIndex) Device(ref DRADeviceRef) (SliceDevice, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	d, ok := x.devices[ref]
	return d, ok
}

// Published returns the device UUIDs the slices publish (SliceSource.Published).
func (x *sliceIndex) Published() map[string]bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.published
}

func (x *sliceIndex) count() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.devices)
}

// rebuild replaces the index with the devices of tracked drivers of slices. Of
// several slices of one pool, the newest generation wins.
func (x *sliceIndex) rebuild(slices []ResourceSlice) {
	devs, published := make(map[DRADeviceRef]SliceDevice), make(map[string]bool)
	gen := make(map[[2]string]int64)
	for _, s := range slices {
		if x.drivers[s.Spec.Driver] {
			k := [2]string{s.Spec.Driver, s.Spec.Pool.Name}
			gen[k] = max(gen[k], s.Spec.Pool.Generation)
		}
	}
	for _, s := range slices {
		if !x.drivers[s.Spec.Driver] || s.Spec.Pool.Generation < gen[[2]string{s.Spec.Driver, s.Spec.Pool.Name}] {
			continue
		}
		for _, d := range s.Spec.Devices {
			ref := DRADeviceRef{Driver: s.Spec.Driver, Pool: s.Spec.Pool.Name, Device: d.Name}
			sd := d.sliceDevice(s.Spec.Driver)
			devs[ref] = sd
			switch {
			case sd.UUID != "":
				published[sd.UUID] = true
			case sd.ParentUUID != "":
				published[sd.ParentUUID] = true
			}
		}
	}
	x.mu.Lock()
	x.devices, x.published = devs, published
	x.mu.Unlock()
}

// StaticSlices is a SliceSource over a fixed set of slices, always up: the
// simulated node's ResourceSlices, served in process. It is safe for concurrent use.
type StaticSlices struct{ *sliceIndex }

// NewStaticSlices indexes slices, for the devices of drivers (none means
// DefaultDRADriver), as a SliceWatcher indexes watched ones.
func NewStaticSlices(drivers []string, slices []ResourceSlice) *StaticSlices {
	s := &StaticSlices{newSliceIndex(drivers)}
	s.rebuild(slices)
	return s
}

// Status says the slices are up, and how many devices they publish.
func (s *StaticSlices) Status() SliceStatus { return SliceStatus{Up: true, Devices: s.count()} }

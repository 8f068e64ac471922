// Package dcgmnames is the one table of dcgm-exporter's metric names across
// its renames: up to 4.8 the DCGM fields' legacy names in their legacy units
// (MHz, mJ, %, MiB, MB/s), from 4.9 (DCGM 4.7) the DCGM Field Naming Standard's
// names in base units (hertz, joules, a 0–1 ratio, bytes, bytes per second),
// and from 4.10 four profiling fields more (…_BYTES → …_BYTES_PER_SECOND). The
// exporter writes either naming from it, the generated dashboards and rules
// read either or both (promql.go), and the report reads both per series. A
// name found wrong later is a one-line fix in table.go.
//
// Everything here is immutable; safe for concurrent use.
package dcgmnames

import "fmt"

// Naming is one set of names dcgm-exporter writes. The zero value is Current.
type Naming uint8

const (
	// Current is dcgm-exporter 4.10.0 and later: the new names, in base
	// units, and the driver label DCGM_FI_SYSTEM_DRIVER_VERSION. For every
	// family but the four 4.10 renamed (Family.Since), 4.9 writes the same.
	Current Naming = iota
	// Legacy is dcgm-exporter up to 4.8.x: the old names, in their old
	// units, and the driver label DCGM_FI_DRIVER_VERSION.
	Legacy
)

// The flag values of the namings.
const (
	CurrentFlag = "4.10"
	LegacyFlag  = "4.8"
)

// ParseNaming returns the Naming of a flag value, "4.10" or "4.8".
func ParseNaming(s string) (Naming, error) {
	switch s {
	case CurrentFlag:
		return Current, nil
	case LegacyFlag:
		return Legacy, nil
	}
	return 0, fmt.Errorf("dcgm-exporter names %q: want %s or %s", s, CurrentFlag, LegacyFlag)
}

// String returns the flag value of n.
func (n Naming) String() string {
	if n == Legacy {
		return LegacyFlag
	}
	return CurrentFlag
}

// The label dcgm-exporter puts the driver version in, on every DCGM_* series:
// DCGM_FI_DRIVER_VERSION up to 4.8, DCGM_FI_SYSTEM_DRIVER_VERSION from 4.9
// (release notes 4.9.0; DCGM 4.6.0's dcgm_fields.h has the old name as a
// deprecated alias of the new, field 1).
const (
	LegacyDriverLabel  = "DCGM_FI_DRIVER_VERSION"
	CurrentDriverLabel = "DCGM_FI_SYSTEM_DRIVER_VERSION"
)

// DriverLabel returns the name of the driver-version label under n.
func (n Naming) DriverLabel() string {
	if n == Legacy {
		return LegacyDriverLabel
	}
	return CurrentDriverLabel
}

// DriverLabels are both names of the driver-version label: the label the
// copies of one series may differ by across an upgrade.
var DriverLabels = []string{LegacyDriverLabel, CurrentDriverLabel}

// Release is a dcgm-exporter release that introduced new names.
type Release string

// The releases that renamed fields.
const (
	Release49  Release = "4.9"
	Release410 Release = "4.10"
)

// Unit is the unit of a family's values under one naming.
type Unit string

// The units of the table.
const (
	Percent        Unit = "%"
	Ratio          Unit = "ratio 0–1"
	MiB            Unit = "MiB"
	Bytes          Unit = "bytes"
	MHz            Unit = "MHz"
	Hertz          Unit = "Hz"
	Millijoules    Unit = "mJ"
	Joules         Unit = "J"
	Celsius        Unit = "°C"
	Watts          Unit = "W"
	Nanoseconds    Unit = "ns"
	Seconds        Unit = "s"
	MBPerSecond    Unit = "MB/s"
	BytesPerSecond Unit = "bytes/s"
	Count          Unit = "count"
	XIDCode        Unit = "XID code"
	Status         Unit = "status"
)

// Type is the Prometheus type dcgm-exporter's collector file gives a family.
type Type string

// The types of the table.
const (
	Gauge   Type = "gauge"
	Counter Type = "counter"
)

// Family is one measurement under its two names.
type Family struct {
	// Old is the name up to 4.8 (and in 4.9 for a family renamed in 4.10),
	// in OldUnit; OldID its DCGM field.
	Old     string
	OldUnit Unit
	OldID   uint16
	// New is the name from Since on, in Unit (its base unit); NewID its
	// DCGM field, 0 where no source gave it.
	New   string
	Unit  Unit
	NewID uint16
	// FromOld converts: a value under New is the value under Old × FromOld.
	FromOld float64
	Since   Release
	Type    Type
	// Help is the HELP text of the new name: what it measures and its unit.
	Help string
}

// Name returns f's name under n.
func (f Family) Name(n Naming) string {
	if n == Legacy {
		return f.Old
	}
	return f.New
}

// Scale returns what a value in f's old unit is multiplied by to be in its
// unit under n: 1 under Legacy, FromOld under Current.
func (f Family) Scale(n Naming) float64 {
	if n == Legacy {
		return 1
	}
	return f.FromOld
}

// Renamed reports whether the two names differ.
func (f Family) Renamed() bool { return f.Old != f.New }

// ByName returns the family that has name under either naming, and the
// naming it is under.
func ByName(name string) (Family, Naming, bool) {
	for _, f := range Families {
		switch name {
		case f.New:
			return f, Current, true
		case f.Old:
			return f, Legacy, true
		}
	}
	return Family{}, 0, false
}

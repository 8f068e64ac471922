package history

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/gputally/gputally/dcgmnames"
)

// The namings a run writes its DCGM_* series in (Names.Mode).
const (
	// NamesLegacy (also "") is dcgm-exporter up to 4.8: the old names and
	// units, the label DCGM_FI_DRIVER_VERSION.
	NamesLegacy = "4.8"
	// NamesCurrent is dcgm-exporter 4.10 (for the families written, 4.9
	// writes the same): the new names in base units, the label
	// DCGM_FI_SYSTEM_DRIVER_VERSION, and DCGM_FI_DEV_FB_CAPACITY_BYTES.
	NamesCurrent = "4.10"
	// NamesRolling is a rolling upgrade from 4.8 to 4.10: each node's
	// exporter writes 4.8's names until it is replaced, 4.10's from then on;
	// node i of a fleet at UpgradeAfter + i × UpgradeEvery, as a DaemonSet's
	// rolling update replaces one node's pod after the other.
	NamesRolling = "rolling"
	// NamesBoth is a 4.10 exporter whose collector file keeps 4.8's rows
	// beside its own (a custom collector): every DCGM_* family under both
	// names, each in its unit, and every series with both driver labels
	// (the label rows of both files). dcgm-exporter flavour only.
	NamesBoth = "both"
)

// DefaultUpgradeEvery is how long a rolling upgrade takes per node when
// Names.UpgradeEvery is 0.
const DefaultUpgradeEvery = 3 * time.Minute

// Names says which names a run writes its DCGM_* series under.
type Names struct {
	Mode string
	// UpgradeAfter is, for NamesRolling, how long after the run's start the
	// first node's exporter is replaced.
	UpgradeAfter time.Duration
	// UpgradeEvery is, for NamesRolling, the time between two nodes'
	// replacements; 0 means DefaultUpgradeEvery.
	UpgradeEvery time.Duration

	node int // the node's place in its fleet: its replacement node × UpgradeEvery later
}

func (n *Names) check(flavor string, d time.Duration) error {
	switch n.Mode {
	case "", NamesLegacy, NamesCurrent:
		if n.UpgradeAfter != 0 || n.UpgradeEvery != 0 {
			return fmt.Errorf("an upgrade time needs the names %q", NamesRolling)
		}
	case NamesRolling:
		if n.UpgradeAfter <= 0 || n.UpgradeAfter >= d || n.UpgradeEvery < 0 {
			return fmt.Errorf("rolling upgrade after %s (every %s): want it inside the run's %s", n.UpgradeAfter, n.UpgradeEvery, d)
		}
	case NamesBoth:
		if flavor != FlavorDCGMExporter {
			return fmt.Errorf("names %q: a custom collector of dcgm-exporter, flavor %s only", NamesBoth, FlavorDCGMExporter)
		}
	default:
		return fmt.Errorf("names %q: want %s, %s, %s or %s", n.Mode, NamesLegacy, NamesCurrent, NamesRolling, NamesBoth)
	}
	return nil
}

// ofNode returns the names of node i of a fleet: its upgrade i steps later
// (after the run's end, for the last nodes of a long fleet).
func (n Names) ofNode(i int) Names {
	n.node = i
	return n
}

// at returns the namings a node's exporter writes at t of a run that
// started at start: one, or under NamesBoth the current and the legacy.
func (n Names) at(start, t time.Time) []dcgmnames.Naming {
	switch n.Mode {
	case NamesCurrent:
		return current
	case NamesBoth:
		return both
	case NamesRolling:
		if !t.Before(start.Add(n.UpgradeAfter + time.Duration(n.node)*cmp.Or(n.UpgradeEvery, DefaultUpgradeEvery))) {
			return current
		}
	}
	return legacy
}

var (
	legacy  = []dcgmnames.Naming{dcgmnames.Legacy}
	current = []dcgmnames.Naming{dcgmnames.Current}
	both    = []dcgmnames.Naming{dcgmnames.Current, dcgmnames.Legacy}
)

// sideBySide merges the scrapes of one snapshot under the current naming
// (cur) and the legacy (old), as one exporter writing both: cur's families
// and old's DCGM_* ones, each DCGM_* series with both driver labels, sorted
// by name. The label slices of DCGM_* series are new; pairs are shared.
func sideBySide(cur, old []*dto.MetricFamily, pairs map[[2]string]*dto.LabelPair) []*dto.MetricFamily {
	out := slices.Clone(cur)
	for _, mf := range old {
		if strings.HasPrefix(mf.GetName(), "DCGM_") && familyOf(cur, mf.GetName()) == nil {
			out = append(out, mf)
		}
	}
	for _, mf := range out {
		if !strings.HasPrefix(mf.GetName(), "DCGM_") {
			continue
		}
		for _, m := range mf.Metric {
			m.Label = withDriverLabels(m.Label, pairs)
		}
	}
	slices.SortFunc(out, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
	return out
}

// withDriverLabels returns labels, sorted by name, with both driver labels:
// the one it lacks added with the other's value.
func withDriverLabels(labels []*dto.LabelPair, pairs map[[2]string]*dto.LabelPair) []*dto.LabelPair {
	var have, value string
	for _, p := range labels {
		if slices.Contains(dcgmnames.DriverLabels, p.GetName()) {
			if have != "" {
				return labels
			}
			have, value = p.GetName(), p.GetValue()
		}
	}
	if have == "" {
		return labels
	}
	add := dcgmnames.LegacyDriverLabel
	if have == add {
		add = dcgmnames.CurrentDriverLabel
	}
	k := [2]string{add, value}
	p := pairs[k]
	if p == nil {
		p = &dto.LabelPair{Name: proto.String(add), Value: proto.String(value)}
		pairs[k] = p
	}
	at, _ := slices.BinarySearchFunc(labels, add, func(p *dto.LabelPair, name string) int { return strings.Compare(p.GetName(), name) })
	return slices.Insert(slices.Clip(labels), at, p)
}

// familyOf returns the family called name of mfs, or nil.
func familyOf(mfs []*dto.MetricFamily, name string) *dto.MetricFamily {
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf
		}
	}
	return nil
}

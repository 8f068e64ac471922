package dcgmnames

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Reads is the namings a query reads: the exporters' one, or both during a
// transition, so that one dashboard or rule spans an upgrade. The zero value
// is ReadsCurrent.
type Reads uint8

const (
	ReadsCurrent Reads = iota // the 4.10 names
	ReadsLegacy               // the 4.8 names
	// ReadsBoth reads the new names and, for a device without them, the old:
	// a cluster in a rolling upgrade, or one whose exporters keep the old
	// names beside the new. The driver label is ignored in matching (its
	// name is what the copies of one series differ by).
	ReadsBoth
)

// TransitionFlag is the flag value of ReadsBoth; "4.10" and "4.8" are the others.
const TransitionFlag = "transition"

// ParseReads returns the Reads of a flag value: "4.10", "4.8" or "transition".
func ParseReads(s string) (Reads, error) {
	switch s {
	case CurrentFlag:
		return ReadsCurrent, nil
	case LegacyFlag:
		return ReadsLegacy, nil
	case TransitionFlag:
		return ReadsBoth, nil
	}
	return 0, fmt.Errorf("dcgm-exporter names %q: want %s, %s or %s", s, CurrentFlag, LegacyFlag, TransitionFlag)
}

// String returns the flag value of r.
func (r Reads) String() string {
	switch r {
	case ReadsLegacy:
		return LegacyFlag
	case ReadsBoth:
		return TransitionFlag
	}
	return CurrentFlag
}

// Value returns PromQL for the values of f in its base unit (f.Unit), of the
// series that match the label matchers sel ("" for all), under the namings r
// reads. The expression is safe as an operand: parenthesised when compound.
func (r Reads) Value(f Family, sel string) string {
	return r.join(f, func(n Naming) string { return selector(f.Name(n), sel) })
}

// Over returns PromQL applying the range function fn (rate, increase,
// avg_over_time, ...) to f's series matching sel over window, in f's base
// unit (per second for rate), under the namings r reads; safe as an operand.
func (r Reads) Over(fn string, f Family, sel, window string) string {
	return r.join(f, func(n Naming) string {
		return fmt.Sprintf("%s(%s[%s])", fn, selector(f.Name(n), sel), window)
	})
}

// Apply returns PromQL applying expr to f's series that match sel under
// each naming r reads, each term converted to f's base unit and the terms
// joined by or, the new naming's first; safe as an operand. For reads that
// aggregate each naming's series first (max without (…) (last_over_time
// (…))), so that a device's copies under both names meet with one label set
// and its new copy wins.
func (r Reads) Apply(f Family, sel string, expr func(series string) string) string {
	return r.join(f, func(n Naming) string { return expr(selector(f.Name(n), sel)) })
}

// Either returns PromQL for, per device, the first of fs it has, each in its
// base unit, under the namings r reads: e.g. graphics-engine activity, else
// GPU utilization. Under ReadsBoth each family's new name comes before its
// old. The operands are not parenthesised: put the whole in parentheses to
// use it as an operand.
func (r Reads) Either(sel string, fs ...Family) string {
	var terms []string
	for _, f := range fs {
		for _, n := range r.namings(f) {
			terms = append(terms, scaled(f, n, selector(f.Name(n), sel)))
		}
	}
	return strings.Join(terms, "\n"+r.or()+"\n")
}

// Each returns PromQL evaluating expr under each naming r reads, joined as
// Either joins (the new first): expr builds the expression from series,
// which gives a family's selector (its name under that naming and the
// matchers sel). For expressions whose units cancel, such as a ratio of two
// families of one unit; parenthesised when joined.
func (r Reads) Each(sel string, expr func(series func(Family) string) string) string {
	var ns []Naming
	switch r {
	case ReadsCurrent:
		ns = []Naming{Current}
	case ReadsLegacy:
		ns = []Naming{Legacy}
	default:
		ns = []Naming{Current, Legacy}
	}
	terms := make([]string, len(ns))
	for i, n := range ns {
		terms[i] = expr(func(f Family) string { return selector(f.Name(n), sel) })
	}
	if len(terms) == 1 {
		return terms[0]
	}
	return "(" + strings.Join(terms, ")\n"+r.or()+"\n(") + ")"
}

// join is the expression of f under r, from the expression of one naming's
// values in that naming's unit.
func (r Reads) join(f Family, expr func(Naming) string) string {
	ns := r.namings(f)
	if len(ns) == 1 {
		if toBase(f, ns[0]) == 1 {
			return expr(ns[0])
		}
		return "(" + scaled(f, ns[0], expr(ns[0])) + ")"
	}
	terms := make([]string, len(ns))
	for i, n := range ns {
		terms[i] = scaled(f, n, expr(n))
	}
	return "(" + strings.Join(terms, " "+r.or()+" ") + ")"
}

// namings are the namings r reads f under, new first; one when f's two
// names are the same.
func (r Reads) namings(f Family) []Naming {
	switch {
	case r == ReadsCurrent:
		return []Naming{Current}
	case r == ReadsLegacy:
		return []Naming{Legacy}
	case !f.Renamed() && f.FromOld == 1:
		return []Naming{Current}
	}
	return []Naming{Current, Legacy}
}

// or is the set operator between the namings' terms: under ReadsBoth the
// driver label is ignored, so a device's old and new copies match.
func (r Reads) or() string {
	if r == ReadsBoth {
		return "or ignoring(" + strings.Join(DriverLabels, ", ") + ")"
	}
	return "or"
}

func selector(name, sel string) string {
	if sel == "" {
		return name
	}
	return name + "{" + sel + "}"
}

// toBase is what a value of f under n is multiplied by to be in f's base
// unit: FromOld under Legacy, 1 under Current.
func toBase(f Family, n Naming) float64 {
	if n == Legacy {
		return f.FromOld
	}
	return 1
}

// scaled is expr, a value of f under n, converted to f's base unit: a
// division for factors below 1 (0.01 as / 100, exact in floating point where
// × 0.01 is not), a product above. Not parenthesised: * and / bind tighter
// than the set operators it is joined with.
func scaled(f Family, n Naming, expr string) string {
	k := toBase(f, n)
	switch {
	case k == 1:
		return expr
	case k < 1:
		// 1/k rounded: 1/1e-9 is 999999999.9999999 in floating point.
		return expr + " / " + strconv.FormatFloat(math.Round(1/k), 'f', -1, 64)
	}
	return expr + " * " + strconv.FormatFloat(k, 'f', -1, 64)
}

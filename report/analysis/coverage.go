package analysis

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gputally/gputally/report/model"
)

// PartialAbove is the share of the expected device-hours that may be missing
// or unknown before a report is partial: 1 %.
const PartialAbove = 0.01

// gapTolerance is the share of a step bucket a GPU may lack without the bucket
// counting as a gap (scrape jitter moves seconds between adjacent buckets).
const gapTolerance = 0.01

// Coverage says how much of the range the data covers: per GPU the
// device-hours the ledger recorded (seconds over all states) against the
// range, the hours with no data at all (exporter stopped, node not scraped,
// exporter restarts) and the hours recorded as unknown. A GPU counts from the
// first step bucket in which any series of it is seen — from its first
// seconds there (history.go); a GPU never seen in the range cannot be known.
type Coverage struct {
	// Ratio is SeenHours ÷ ExpectedHours, 0–1: above 1 only by scrape
	// timing (a GPU's hours run from its last sample before the range to its
	// last in it, up to one scrape interval more than the range), never
	// clamped: the ledger source refuses series counted twice
	// (report/source/ledger/check.go).
	Ratio         float64 `json:"ratio"`
	ExpectedHours float64 `json:"expected_hours"` // each GPU seen, from when it is first seen to the range's end
	SeenHours     float64 `json:"seen_hours"`     // device-hours recorded, all states
	MissingHours  float64 `json:"missing_hours"`  // device-hours without any data
	UnknownHours  float64 `json:"unknown_hours"`  // recorded as unknown
	// Nodes and GPUs break the same down; sorted by node, then GPU index.
	Nodes []NodeCoverage `json:"nodes"`
	GPUs  []GPUCoverage  `json:"gpus"`
	// Gaps are the runs of step buckets in which a GPU lacked data, and the
	// stretches a sampled source had no sample of a GPU in between two it
	// had (model.Dataset.Gaps).
	Gaps []Gap `json:"gaps"`
}

// CoverageOf is one node's or GPU's part of Coverage, in device-hours; Ratio
// is SeenHours ÷ ExpectedHours, as Coverage's.
type CoverageOf struct {
	Ratio         float64 `json:"ratio"`
	ExpectedHours float64 `json:"expected_hours"`
	SeenHours     float64 `json:"seen_hours"`
	MissingHours  float64 `json:"missing_hours"`
	UnknownHours  float64 `json:"unknown_hours"`
}

// UnknownShare is the share of the recorded device-hours that is unknown, 0–1.
func (c CoverageOf) UnknownShare() float64 {
	if c.SeenHours <= 0 {
		return 0
	}
	return c.UnknownHours / c.SeenHours
}

// NodeCoverage is the coverage of one node's GPUs together.
type NodeCoverage struct {
	Cluster string `json:"cluster,omitempty"`
	Node    string `json:"node"`
	GPUs    int    `json:"gpus"`
	CoverageOf
}

// GPUCoverage is the coverage of one GPU.
type GPUCoverage struct {
	Cluster string `json:"cluster,omitempty"`
	Node    string `json:"node"`
	UUID    string `json:"uuid"`
	GPU     string `json:"gpu"` // index on its node
	CoverageOf
}

// Gap is a span in which one GPU had (almost) no data.
type Gap struct {
	Cluster string    `json:"cluster,omitempty"`
	Node    string    `json:"node"`
	UUID    string    `json:"uuid"`
	GPU     string    `json:"gpu"`
	From    time.Time `json:"from"`
	To      time.Time `json:"to"`
	Hours   float64   `json:"hours"` // device-hours of the gap: missing, or unknown
	// Kind is GapMissing (no data: its hours are missing) or GapUnknown (a
	// sampled source had no sample between two: its hours are its holders'
	// unknown time).
	Kind string `json:"kind"`
	// Holders are the containers (namespace/pod/container) that held the
	// GPU at its last sample before an unknown gap, whose unknown time it
	// is; none when no one held it, or for a missing gap.
	Holders []string `json:"holders"`
}

// The kinds of Gap.
const (
	GapMissing = "missing"
	GapUnknown = "unknown"
)

func (c *CoverageOf) add(o CoverageOf) {
	c.ExpectedHours += o.ExpectedHours
	c.SeenHours += o.SeenHours
	c.MissingHours += o.MissingHours
	c.UnknownHours += o.UnknownHours
}

func (c *CoverageOf) finish() {
	if c.ExpectedHours > 0 {
		c.Ratio = c.SeenHours / c.ExpectedHours
	}
}

// coverageOf computes the coverage of the range from what the ledger query saw.
func coverageOf(d *model.Dataset) Coverage {
	var cov Coverage
	var fleet CoverageOf
	nodes := map[groupKey]*NodeCoverage{}
	step := d.Step.Seconds()
	for _, k := range slices.SortedFunc(maps.Keys(d.GPUs), model.CompareGPUKeys) {
		g := d.GPUs[k]
		gc := GPUCoverage{Cluster: k.Cluster, Node: g.Host, UUID: k.UUID, GPU: g.GPU}
		first := firstSeen(g)
		if first < d.Buckets { // from its first seconds in its first bucket, at most the bucket
			gc.ExpectedHours = (min(g.Seen[first], step) + float64(d.Buckets-first-1)*step) / 3600
		}
		gc.UnknownHours = g.Unknown / 3600
		run := -1 // first bucket of the current gap
		var runHours float64
		flush := func(end int) {
			if run >= 0 {
				cov.Gaps = append(cov.Gaps, Gap{Cluster: k.Cluster, Node: g.Host, UUID: k.UUID, GPU: g.GPU, Kind: GapMissing,
					From: d.Start.Add(time.Duration(run) * d.Step).UTC(), To: d.Start.Add(time.Duration(end) * d.Step).UTC(), Hours: runHours})
			}
			run, runHours = -1, 0
		}
		for b := first; b < d.Buckets; b++ {
			gc.SeenHours += g.Seen[b] / 3600
			deficit := step - g.Seen[b]
			if b == first || deficit <= gapTolerance*step {
				flush(b)
				continue
			}
			gc.MissingHours += deficit / 3600
			if run < 0 {
				run = b
			}
			runHours += deficit / 3600
		}
		flush(d.Buckets)
		gc.finish()
		cov.GPUs = append(cov.GPUs, gc)
		n := nodes[groupKey{k.Cluster, g.Host}]
		if n == nil {
			n = &NodeCoverage{Cluster: k.Cluster, Node: g.Host}
			nodes[groupKey{k.Cluster, g.Host}] = n
		}
		n.GPUs++
		n.add(gc.CoverageOf)
		fleet.add(gc.CoverageOf)
	}
	cov.Gaps = append(cov.Gaps, unknownGaps(d)...)
	for _, n := range nodes {
		n.finish()
		cov.Nodes = append(cov.Nodes, *n)
	}
	fleet.finish()
	cov.Ratio, cov.ExpectedHours, cov.SeenHours, cov.MissingHours, cov.UnknownHours =
		fleet.Ratio, fleet.ExpectedHours, fleet.SeenHours, fleet.MissingHours, fleet.UnknownHours
	slices.SortFunc(cov.Nodes, func(a, b NodeCoverage) int {
		return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Node, b.Node))
	})
	slices.SortFunc(cov.GPUs, func(a, b GPUCoverage) int {
		return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Node, b.Node), model.CompareGPUIndex(a.GPU, b.GPU), cmp.Compare(a.UUID, b.UUID))
	})
	slices.SortFunc(cov.Gaps, func(a, b Gap) int {
		return cmp.Or(a.From.Compare(b.From), cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Node, b.Node), model.CompareGPUIndex(a.GPU, b.GPU), cmp.Compare(a.UUID, b.UUID))
	})
	return cov
}

// unknownGaps are the source's gaps between two samples (model.Dataset.Gaps),
// as the report lists them.
func unknownGaps(d *model.Dataset) []Gap {
	var out []Gap
	for _, g := range d.Gaps {
		gap := Gap{Cluster: g.GPU.Cluster, Node: g.Host, UUID: g.GPU.UUID, GPU: g.Index, Kind: GapUnknown,
			From: g.From.UTC(), To: g.To.UTC(), Hours: g.Seconds / 3600}
		for _, h := range g.Holders {
			gap.Holders = append(gap.Holders, h.Namespace+"/"+h.Pod+"/"+h.Container)
		}
		out = append(out, gap)
	}
	return out
}

// partial reports whether more than PartialAbove of the expected device-hours
// are missing or unknown.
func (c *Coverage) partial() bool {
	return c.ExpectedHours > 0 && (c.MissingHours+c.UnknownHours)/c.ExpectedHours > PartialAbove
}

// summary says in one line what the coverage lacks.
func (c *Coverage) summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "coverage %s of %s device-hours: %s missing, %s unknown (more than %s)",
		model.FormatPct(c.Ratio), model.FormatHours(c.ExpectedHours), model.FormatHours(c.MissingHours), model.FormatHours(c.UnknownHours), model.FormatPct(PartialAbove))
	if len(c.Gaps) > 0 {
		b.WriteString("; gaps: ")
		for i, g := range c.Gaps {
			if i == 5 {
				fmt.Fprintf(&b, " and %d more", len(c.Gaps)-5)
				break
			}
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(g.String())
		}
	}
	return b.String()
}

// String names the gap: node, GPU, from – to, hours and, for an unknown
// one, whose unknown time it is.
func (g Gap) String() string {
	s := fmt.Sprintf("%s GPU %s (%s) %s – %s (%s h %s", g.Place(), g.GPU, g.UUID,
		g.From.Format(time.RFC3339), g.To.Format(time.RFC3339), model.FormatHours(g.Hours), g.Kind)
	if len(g.Holders) > 0 {
		s += ", held by " + strings.Join(g.Holders, ", ")
	}
	return s + ")"
}

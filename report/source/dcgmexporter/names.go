package dcgmexporter

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	pmodel "github.com/prometheus/common/model"

	"github.com/gputally/gputally/dcgmnames"
	"github.com/gputally/gputally/report/engine"
	"github.com/gputally/gputally/report/model"
	"github.com/gputally/gputally/report/source"
)

// The source reads dcgm-exporter's families under both of its namings
// (dcgmnames): up to 4.8 the old names in the old units, from 4.9 the new
// ones in base units, renamed node by node during a rolling upgrade, and
// both at once where a custom collector file keeps the old rows beside the
// new. Every read is per device: each naming's series are reduced to the
// device's label set first (dcgmWithout drops the driver label under either
// name), then the new naming's value wins and the old one, converted to the
// base unit, fills in where a device has no new one. A device renamed
// mid-range is so one series, with no gap; one written under both names
// counts once.
const reads = dcgmnames.ReadsBoth

// presence is the family whose samples say a device was scraped: its
// framebuffer, which every GPU and MIG instance reports.
var presence = dcgmnames.FBUsed

// deviceQuery is the query of family f's last sample, per device and
// holder, in window (the lookback before each grid point, "…] offset …")
// of the series that match sel, in f's base unit.
func deviceQuery(f dcgmnames.Family, sel, window string, dedupe []string) string {
	return reads.Apply(f, sel, func(series string) string {
		return fmt.Sprintf("max without (%s) (last_over_time(%s[%s))", without(dcgmWithout, dedupe), series, window)
	})
}

// namesRead asks, per cluster, which namings had dcgm-exporter's presence
// series over r, for the sentence Collect adds to the sampling statement.
func (s *Source) namesRead(ctx context.Context, run *engine.Runner, r model.Range, id source.Identity) (map[string][]dcgmnames.Naming, error) {
	out := map[string][]dcgmnames.Naming{}
	for _, n := range []dcgmnames.Naming{dcgmnames.Legacy, dcgmnames.Current} {
		q := fmt.Sprintf("count(last_over_time(%s[%s]))", presence.Name(n), pmodel.Duration(r.End.Sub(r.Start)))
		if id.Label() != "" {
			q = fmt.Sprintf("count by (%s) (last_over_time(%s[%s]))", id.Label(), presence.Name(n), pmodel.Duration(r.End.Sub(r.Start)))
		}
		err := run.Run(ctx, "names of "+n.String(), q, r.End, r.End, r.Step, func(m pmodel.Matrix) {
			for _, st := range m {
				c := id.ClusterOf(st.Metric)
				if len(st.Values) > 0 && st.Values[0].Value > 0 && !slices.Contains(out[c], n) {
					out[c] = append(out[c], n)
				}
			}
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// describeNames says which namings were read, per cluster.
func describeNames(read map[string][]dcgmnames.Naming) string {
	var parts []string
	for _, c := range slices.Sorted(maps.Keys(read)) {
		var ns []string
		for _, n := range read[c] {
			ns = append(ns, fmt.Sprintf("%s's (%s, …)", n, presence.Name(n)))
		}
		where := ""
		if len(read) > 1 || c != "" {
			where = fmt.Sprintf(" in cluster %q", c)
		}
		parts = append(parts, fmt.Sprintf("dcgm-exporter %s%s", strings.Join(ns, " and "), where))
	}
	if len(parts) == 0 {
		return ""
	}
	return " Read the names of " + strings.Join(parts, "; ") + " (4.9 renamed the fields and moved them to base units; both namings are read, per device)."
}

// noData is the error of a range in which neither naming had a device.
func noData(r model.Range) error {
	return fmt.Errorf("no GPU data: no dcgm-exporter samples with a UUID label between %s and %s under either of its namings — "+
		"4.9's and later (%s, %s, …) or 4.8's and earlier (%s, %s, …); dcgm-exporter 4.9 renamed its fields "+
		"(is dcgm-exporter scraped, and is the range right?)",
		r.Start.UTC().Format(time.RFC3339), r.End.UTC().Format(time.RFC3339),
		dcgmnames.FBUsed.New, dcgmnames.GREngineActive.New, dcgmnames.FBUsed.Old, dcgmnames.GREngineActive.Old)
}

package followup

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gputally/gputally/report/model"
	pmodel "github.com/prometheus/common/model"

	"github.com/gputally/gputally/report/advice"
	"github.com/gputally/gputally/report/analysis"
	"github.com/gputally/gputally/smallfile"
)

// SchemaVersion is the version of the report's JSON this gputally writes
// (its schema_version) and reads as a baseline. It changes whenever a field
// the follow-up reads changes its meaning.
const SchemaVersion = 1

// MaxReportBytes bounds the size of a report's JSON read as a baseline:
// 256 MiB, some ten times a 10,000-GPU fleet's.
const MaxReportBytes = 256 << 20

// ErrBadBaseline is wrapped by every error that says the baseline cannot be
// followed up: a file that is not a report, of an unknown schema version, of
// another range length or clusters, or not earlier than the period. It is bad
// input (exit code 2), found before anything is written.
var ErrBadBaseline = errors.New("bad baseline")

// report is the part of a report's JSON the follow-up reads.
type report struct {
	SchemaVersion    int                     `json:"schema_version"`
	Start            time.Time               `json:"start"`
	End              time.Time               `json:"end"`
	Range            string                  `json:"range"` // asked for; End − Start when the history is shorter
	Kind             string                  `json:"kind"`
	Clusters         []string                `json:"clusters"`
	Fleet            analysis.Group          `json:"fleet"`
	Teams            []analysis.Group        `json:"teams"`
	Recommendations  []advice.Recommendation `json:"recommendations"`
	FreedEURPerMonth float64                 `json:"freed_eur_per_month"`
	HoursPerMonth    float64                 `json:"hours_per_month"`

	path string
}

// errNotReport says that a JSON file is not a gputally report.
var errNotReport = errors.New("not a gputally report's JSON (it has no start, end and hours_per_month)")

// readReport reads the report's JSON at path; errNotReport (wrapped) when it
// is JSON of something else.
func readReport(path string) (*report, error) {
	b, err := smallfile.Read(path, MaxReportBytes)
	if err != nil {
		return nil, err
	}
	var r report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w: %w", path, errNotReport, err)
	}
	if r.Start.IsZero() || r.End.IsZero() || r.HoursPerMonth <= 0 {
		return nil, fmt.Errorf("%s: %w", path, errNotReport)
	}
	r.path = path
	return &r, nil
}

// asked returns the length of the range r was asked for: its range, or its
// period when it has none (or one that is not a duration).
func (r *report) asked() time.Duration {
	if d, err := pmodel.ParseDuration(r.Range); err == nil && d > 0 {
		return time.Duration(d)
	}
	return r.End.Sub(r.Start)
}

// shortNote says, when r covers less than the range it was asked for (its
// history began inside it), that its EUR are over fewer hours; "" otherwise.
func (r *report) shortNote() string {
	if covered := r.End.Sub(r.Start); covered < r.asked() {
		return fmt.Sprintf("the baseline covers %s h of its %s (its history begins at %s): its EUR are over those hours, its EUR per month scaled to a month",
			model.FormatHours(covered.Hours()), pmodel.Duration(r.asked()), r.Start.Format(time.RFC3339))
	}
	return ""
}

// Period is the range of the report that follows a baseline up: (Start, End].
type Period struct{ Start, End time.Time }

func (p Period) length() time.Duration { return p.End.Sub(p.Start) }

// earlier reports whether r ended at least half a range before p ends: an
// earlier period, not this one or one that mostly overlaps it.
func (p Period) earlier(r *report) bool { return !r.End.After(p.End.Add(-p.length() / 2)) }

// misfit says why r, an earlier report, cannot be p's baseline for its schema
// version or its range length; "" when it can.
func (p Period) misfit(r *report) string {
	switch {
	case r.SchemaVersion == 0:
		return fmt.Sprintf("it has no schema_version (written by a gputally without follow-ups); version %d is read", SchemaVersion)
	case r.SchemaVersion != SchemaVersion:
		return fmt.Sprintf("its schema_version %d is unknown; version %d is read", r.SchemaVersion, SchemaVersion)
	case r.asked() != p.length():
		return fmt.Sprintf("it covers %s and this report %s: a follow-up compares periods of one length",
			pmodel.Duration(r.asked()), pmodel.Duration(p.length()))
	}
	return ""
}

// clusterMisfit says why r, whose clusters are its cluster label's values
// (none without one), is from other clusters than this period's; "" when
// they share one, or neither names any.
func clusterMisfit(r *report, clusters []string) string {
	if len(r.Clusters) == 0 && len(clusters) == 0 || slices.ContainsFunc(r.Clusters, func(c string) bool { return slices.Contains(clusters, c) }) {
		return ""
	}
	return fmt.Sprintf("it covers clusters %s and this report %s: a baseline is of the same cluster", clusterList(r.Clusters), clusterList(clusters))
}

// clusterList names clusters for people.
func clusterList(cs []string) string {
	if len(cs) == 0 {
		return "(none named)"
	}
	return "[" + strings.Join(cs, ", ") + "]"
}

// Baseline is what --baseline names: one earlier report, or a directory of
// kept reports. It is read before the period's data is collected; Follow
// chooses and follows up the report once the data says which clusters the
// period covers.
type Baseline struct {
	path string
	dir  bool
	// reports are the file's report, or the directory's earlier reports,
	// newest first.
	reports []*report
	// skipped says, per earlier report of the directory that cannot be a
	// baseline, why.
	skipped []string
}

// Path is the file or directory the baseline was opened from.
func (b *Baseline) Path() string { return b.path }

// Open reads the baseline at path for a report over p. A file must be a
// report's JSON that fits p: of this schema version and p's range length,
// ending at least half a range before p ends; anything else is an error that
// wraps ErrBadBaseline. A directory is a history of kept reports (the
// CronJob's volume): its *.json reports that end that early are candidates,
// the newest that fits is followed up, the others that fit are its weeks, and
// those that do not are named in the report's notes; a directory without any
// is a first report, with nothing to follow up.
func Open(path string, p Period) (*Baseline, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadBaseline, err)
	}
	b := &Baseline{path: path, dir: fi.IsDir()}
	if b.dir {
		return b, b.readDir(p)
	}
	r, err := readReport(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadBaseline, err)
	}
	why := p.misfit(r)
	if why == "" && !p.earlier(r) {
		why = fmt.Sprintf("it ends at %s, less than half this report's range before its end at %s: a baseline is an earlier period",
			r.End.Format(time.RFC3339), p.End.Format(time.RFC3339))
	}
	if why != "" {
		return nil, fmt.Errorf("%w: %s: %s", ErrBadBaseline, path, why)
	}
	b.reports = []*report{r}
	return b, nil
}

// readDir reads the earlier reports of the directory, newest first, and
// skips those that do not fit p.
func (b *Baseline) readDir(p Period) error {
	all, unread, err := reportsIn(b.path)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadBaseline, err)
	}
	for _, u := range unread {
		b.skipped = append(b.skipped, "skipped "+u)
	}
	for _, r := range all {
		switch why := p.misfit(r); {
		case !p.earlier(r):
		case why != "":
			b.skipped = append(b.skipped, "skipped the earlier report "+r.path+": "+why)
		default:
			b.reports = append(b.reports, r)
		}
	}
	return nil
}

// choose returns the report to follow up for a period over clusters and the
// earlier ones that fit it too (its weeks, newest first), or an error
// wrapping ErrBadBaseline for a file of other clusters; nil for a directory
// without a report that fits.
func (b *Baseline) choose(clusters []string) (base *report, older []*report, err error) {
	for _, r := range b.reports {
		why := clusterMisfit(r, clusters)
		switch {
		case why != "" && !b.dir:
			return nil, nil, fmt.Errorf("%w: %s: %s", ErrBadBaseline, r.path, why)
		case why != "":
			b.skipped = append(b.skipped, "skipped the earlier report "+r.path+": "+why)
		case base == nil:
			base = r
		default:
			older = append(older, r)
		}
	}
	return base, older, nil
}

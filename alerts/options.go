// Package alerts generates gputally's Prometheus recording and alerting rules as
// a plain rules file (the format `promtool check rules` reads).
//
// The rules are Go code: thresholds and `for:` durations come from Options, the
// recording-rule names are exported constants the dashboards and the report
// query, and alerts/generated/gputally-rules.yaml is what Generate returns for
// DefaultOptions (a test fails when the committed file differs; rewrite it with
// `go generate ./alerts`). Every alert links its runbook,
// docs/runbooks/<AlertName>.md; alerts about a pod carry its team (teams.go);
// the monthly budgets of teams and namespaces become the budget group
// (budgets.go, budget_rules.go).
package alerts

//go:generate go test -run TestGeneratedFileIsCurrent -update .

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/gputally/gputally/dcgmnames"
	"github.com/gputally/gputally/team"
)

// DefaultRunbookBaseURL is where the runbooks are unless Options say otherwise:
// docs/runbooks of this repository.
const DefaultRunbookBaseURL = "https://github.com/gputally/gputally/blob/main/docs/runbooks"

// Options holds the thresholds and durations of the generated rules. Start from
// DefaultOptions and change what differs; a zero Options is invalid.
type Options struct {
	// ExporterJob is a regular expression matching the Prometheus `job` label
	// of the gputally scrape (used by GPUTallyExporterDown).
	ExporterJob string
	// LegacyHostnameLabel writes the rules for exporters that spell the node
	// label `Hostname` (--collector.legacy-hostname-label); by default `hostname`.
	LegacyHostnameLabel bool
	// Names are the DCGM_* names the rules read (--collector.dcgm-exporter-names):
	// dcgm-exporter 4.10's (the zero value), 4.8's, or both during a
	// transition. The rules compute in base units either way.
	Names dcgmnames.Reads
	// RunbookBaseURL is the absolute http(s) URL of the runbooks' directory:
	// every alert's runbook_url is RunbookBaseURL/<AlertName>.md.
	RunbookBaseURL string

	// TeamLabel (optional) is the pod label key whose value names a pod's
	// team, read from kube-state-metrics' kube_pod_labels (as the report's
	// --team-label); it wins over Teams.
	TeamLabel string
	// Teams maps namespaces to teams (the report's --team-map file), for the
	// pods TeamLabel names no team for.
	Teams team.Map
	// Budgets are the monthly budgets and idle-cost limits of teams and
	// namespaces (the budgets file).
	Budgets Budgets

	// IdleRatio is the fraction (0–1) of the time a holder held a device that
	// must have been idle over IdleWindow for GPUAllocatedButIdle.
	IdleRatio float64
	// IdleWindow is the range over which idle time is measured.
	IdleWindow time.Duration
	// IdleFor is how long the condition must hold before GPUAllocatedButIdle fires.
	IdleFor time.Duration
	// IdleMinEURPerHour is the idle cost in EUR per hour below which a holder
	// is not worth an alert.
	IdleMinEURPerHour float64

	// ErrorWindow is the range over which XID and uncorrectable ECC counters
	// must increase for GPUCriticalXID and GPUUncorrectableECC.
	ErrorWindow time.Duration

	// ThrottleRatio is the throttled fraction of time (0–1, power or thermal)
	// above which GPUThrottling fires.
	ThrottleRatio float64
	// ThrottleWindow is the rate window of the violation counters.
	ThrottleWindow time.Duration
	// ThrottleFor is how long the throttling must last.
	ThrottleFor time.Duration

	// TemperatureCelsius is the GPU temperature in °C above which
	// GPUTemperatureHigh fires.
	TemperatureCelsius float64
	// TemperatureFor is how long the temperature must stay high.
	TemperatureFor time.Duration

	// FramebufferRatio is the used fraction (0–1) of a shared GPU's or MIG
	// instance's framebuffer above which GPUFramebufferNearFull fires.
	FramebufferRatio float64
	// FramebufferFor is how long the framebuffer must stay that full.
	FramebufferFor time.Duration

	// MissingLookback is how far back GPUMissing looks for the node's GPU count.
	MissingLookback time.Duration
	// MissingFor is how long a GPU must be missing.
	MissingFor time.Duration

	// ExporterDownFor is how long the exporter (or its backend) must be down.
	ExporterDownFor time.Duration
	// StaleAfter is the sample age above which samples count as stale.
	StaleAfter time.Duration
	// StaleFor is how long samples must stay stale.
	StaleFor time.Duration
	// AttributionDownFor is how long pod attribution must fail.
	AttributionDownFor time.Duration

	// LostWindow is the rate window over which a lost GPU's EUR must grow for
	// GPULostAccruingCost.
	LostWindow time.Duration

	// UnknownRatio is the share (0–1) of a node's device-seconds over
	// UnknownWindow booked as `unknown` above which GPUTimeUnknown fires.
	UnknownRatio float64
	// UnknownWindow is the range over which the unknown share is measured.
	UnknownWindow time.Duration
	// UnknownFor is how long the share must stay above UnknownRatio.
	UnknownFor time.Duration

	// BudgetStep is the evaluation interval of the budget group and the
	// window of the per-step spend it records: month-to-date spend sums the
	// steps that started in the current UTC month, so it trails the spend by
	// less than one step (docs/alerts.md).
	BudgetStep time.Duration
	// BudgetRatios are the shares (0–1 for a warning, 1 and above critical)
	// of a monthly budget at which GPUBudgetSpent fires, one alert each.
	BudgetRatios []float64
	// ForecastWindow is the range whose average spend rate projects the rest
	// of the month for GPUBudgetForecastExceeded.
	ForecastWindow time.Duration
	// ForecastFor is how long the projection must stay over the budget.
	ForecastFor time.Duration
	// IdleCostWindow is the range over which a team's or namespace's idle
	// EUR per day is measured for GPUIdleCostOverLimit.
	IdleCostWindow time.Duration
	// IdleCostFor is how long the idle EUR must stay over the limit.
	IdleCostFor time.Duration

	// WaitLongerThan is how long a GPU pod must have waited for a node, since
	// its creation, for GPUPodsWaitingWhileIdle; it is also the lookback of
	// the pod's team.
	WaitLongerThan time.Duration
	// WaitIdleMinEURPerHour is the idle-allocated EUR per hour of the
	// resource the pod waits for above which the alert fires.
	WaitIdleMinEURPerHour float64
	// WaitFor is how long both must hold.
	WaitFor time.Duration
}

// DefaultOptions returns the thresholds the committed rules file uses.
func DefaultOptions() Options {
	return Options{
		ExporterJob:        "gputally",
		IdleRatio:          0.95,
		IdleWindow:         30 * time.Minute,
		IdleFor:            time.Hour,
		IdleMinEURPerHour:  0,
		ErrorWindow:        10 * time.Minute,
		ThrottleRatio:      0.1,
		ThrottleWindow:     5 * time.Minute,
		ThrottleFor:        15 * time.Minute,
		TemperatureCelsius: 85,
		TemperatureFor:     10 * time.Minute,
		FramebufferRatio:   0.95,
		FramebufferFor:     5 * time.Minute,
		MissingLookback:    6 * time.Hour,
		MissingFor:         5 * time.Minute,
		ExporterDownFor:    5 * time.Minute,
		StaleAfter:         30 * time.Second,
		StaleFor:           2 * time.Minute,
		AttributionDownFor: 10 * time.Minute,
		LostWindow:         15 * time.Minute,
		// 10 % of an hour is 6 minutes of a node's GPU time whose holder or
		// activity nobody measured: more than a kubelet restart (held over
		// by --attribution.stale-after) or a backend hiccup (2 intervals at
		// the last reading) produce, and far below the 1 % of a week (1.7 h)
		// that makes the weekly report partial, so it fires first.
		UnknownRatio:  0.1,
		UnknownWindow: time.Hour,
		UnknownFor:    5 * time.Minute,

		RunbookBaseURL: DefaultRunbookBaseURL,
		BudgetStep:     5 * time.Minute,
		BudgetRatios:   []float64{0.5, 0.8, 1},
		ForecastWindow: 7 * 24 * time.Hour,
		ForecastFor:    time.Hour,
		IdleCostWindow: 24 * time.Hour,
		IdleCostFor:    0,
		// Half an hour: far longer than a pod waits for an image pull or a
		// scale-up of the node pool, and short against the hours a
		// notebook or a training job loses in a queue.
		WaitLongerThan:        30 * time.Minute,
		WaitIdleMinEURPerHour: 0,
		WaitFor:               5 * time.Minute,
	}
}

// Validate reports every option that is out of range.
func (o Options) Validate() error {
	var errs []error
	ratio := func(name string, v float64) {
		if !(v > 0 && v <= 1) {
			errs = append(errs, fmt.Errorf("%s %v: want a ratio in (0, 1]", name, v))
		}
	}
	window := func(name string, d time.Duration) {
		if d <= 0 || d%time.Second != 0 {
			errs = append(errs, fmt.Errorf("%s %v: want a positive whole number of seconds", name, d))
		}
	}
	hold := func(name string, d time.Duration) {
		if d < 0 || d%time.Second != 0 {
			errs = append(errs, fmt.Errorf("%s %v: want zero or a positive whole number of seconds", name, d))
		}
	}
	if o.ExporterJob == "" {
		errs = append(errs, errors.New("ExporterJob: empty"))
	} else if _, err := regexp.Compile("^(?:" + o.ExporterJob + ")$"); err != nil {
		errs = append(errs, fmt.Errorf("ExporterJob %q: %w", o.ExporterJob, err))
	} else if strings.ContainsAny(o.ExporterJob, "\"\\") {
		errs = append(errs, fmt.Errorf("ExporterJob %q: quotes and backslashes are not allowed", o.ExporterJob))
	}
	ratio("IdleRatio", o.IdleRatio)
	ratio("ThrottleRatio", o.ThrottleRatio)
	ratio("FramebufferRatio", o.FramebufferRatio)
	ratio("UnknownRatio", o.UnknownRatio)
	if u, err := url.Parse(o.RunbookBaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("RunbookBaseURL %q: want an absolute http or https URL", o.RunbookBaseURL))
	}
	if len(o.BudgetRatios) == 0 {
		errs = append(errs, errors.New("BudgetRatios: empty"))
	}
	seen := map[float64]bool{}
	for _, r := range o.BudgetRatios {
		if !(r > 0) || math.IsInf(r, 0) || seen[r] {
			errs = append(errs, fmt.Errorf("BudgetRatios %v: want distinct finite ratios above 0", o.BudgetRatios))
			break
		}
		seen[r] = true
	}
	if o.WaitIdleMinEURPerHour < 0 {
		errs = append(errs, fmt.Errorf("WaitIdleMinEURPerHour %v: want ≥ 0", o.WaitIdleMinEURPerHour))
	}
	if o.IdleMinEURPerHour < 0 {
		errs = append(errs, fmt.Errorf("IdleMinEURPerHour %v: want ≥ 0", o.IdleMinEURPerHour))
	}
	if o.TemperatureCelsius <= 0 {
		errs = append(errs, fmt.Errorf("TemperatureCelsius %v: want > 0", o.TemperatureCelsius))
	}
	window("IdleWindow", o.IdleWindow)
	window("ErrorWindow", o.ErrorWindow)
	window("ThrottleWindow", o.ThrottleWindow)
	window("MissingLookback", o.MissingLookback)
	window("StaleAfter", o.StaleAfter)
	window("LostWindow", o.LostWindow)
	window("UnknownWindow", o.UnknownWindow)
	window("BudgetStep", o.BudgetStep)
	window("ForecastWindow", o.ForecastWindow)
	window("IdleCostWindow", o.IdleCostWindow)
	window("WaitLongerThan", o.WaitLongerThan)
	hold("WaitFor", o.WaitFor)
	hold("IdleFor", o.IdleFor)
	hold("ThrottleFor", o.ThrottleFor)
	hold("TemperatureFor", o.TemperatureFor)
	hold("FramebufferFor", o.FramebufferFor)
	hold("MissingFor", o.MissingFor)
	hold("ExporterDownFor", o.ExporterDownFor)
	hold("StaleFor", o.StaleFor)
	hold("AttributionDownFor", o.AttributionDownFor)
	hold("UnknownFor", o.UnknownFor)
	hold("ForecastFor", o.ForecastFor)
	hold("IdleCostFor", o.IdleCostFor)
	if err := o.Budgets.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("alert options: %w", err)
	}
	return nil
}

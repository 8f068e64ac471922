package report

import (
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/gputally/gputally/report/advice"
	"github.com/gputally/gputally/report/analysis"
	"github.com/gputally/gputally/report/followup"
	"github.com/gputally/gputally/report/model"
)

// validateBaseline checks BaselineKeep: it prunes a directory Baseline.
func (c *Config) validateBaseline() error {
	switch {
	case c.BaselineKeep < 0:
		return fmt.Errorf("reports to keep %d must not be negative", c.BaselineKeep)
	case c.BaselineKeep == 0:
		return nil
	case c.Baseline == "":
		return errors.New("keeping reports needs the directory they are kept in: set --baseline=DIR")
	}
	if fi, err := os.Stat(c.Baseline); err == nil && !fi.IsDir() {
		return fmt.Errorf("%w: keeping reports prunes a directory of them, and %s is a file", followup.ErrBadBaseline, c.Baseline)
	}
	return nil
}

// openBaseline reads Baseline for the period c reports on; nil without one.
// c.End must be set. A baseline that cannot be followed up is a
// *ConfigError.
func (c *Config) openBaseline() (*followup.Baseline, error) {
	if c.Baseline == "" {
		return nil, nil
	}
	b, err := followup.Open(c.Baseline, followup.Period{Start: c.End.Add(-c.Range), End: c.End})
	if err != nil {
		return nil, badConfig(err)
	}
	return b, nil
}

// followUp follows the baseline b (nil: none) up into r, the report of res,
// the analysis of d, and adv, its advice. Without an earlier report to
// follow, r says why in its warnings. A baseline file that the data shows to
// be of other clusters is a *ConfigError, as every baseline refused is.
func followUp(b *followup.Baseline, r *Report, res *analysis.Result, adv *advice.Advice, d *model.Dataset, logger *slog.Logger) error {
	if b == nil {
		return nil
	}
	f, err := b.Follow(res, adv, d)
	if errors.Is(err, followup.ErrBadBaseline) {
		return badConfig(err)
	}
	if err != nil {
		return err
	}
	r.FollowUp, r.Baseline = f.Items, f.Comparison
	if f.Comparison == nil {
		logger.Info("no earlier report to follow up", "baseline", b.Path())
		r.Warnings = append(r.Warnings, f.Notes...)
		return nil
	}
	logger.Debug("baseline followed up", "baseline", f.Comparison.File, "recommendations", len(f.Items))
	return nil
}

// pruneReports keeps the newest BaselineKeep reports of the Baseline
// directory (followup.Prune); nothing without BaselineKeep.
func (c *Config) pruneReports(logger *slog.Logger) error {
	if c.BaselineKeep == 0 {
		return nil
	}
	deleted, err := followup.Prune(c.Baseline, c.BaselineKeep)
	if len(deleted) > 0 {
		logger.Info("older reports deleted", "dir", c.Baseline, "keep", c.BaselineKeep, "files", deleted)
	}
	return err
}

// Package render writes the report: Markdown, HTML (one self-contained file
// with inline SVG charts), CSV and JSON (the Report value itself), and posts
// the Markdown to a Slack/Mattermost incoming webhook.
//
// It reads the results of analysis, advice and followup, and model's units;
// it makes no query and decides nothing, and no report package but report
// imports it.
package render

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"time"

	"github.com/gputally/gputally/report/advice"
	"github.com/gputally/gputally/report/analysis"
	"github.com/gputally/gputally/report/followup"
	"github.com/gputally/gputally/report/model"
)

// Report is the weekly report. It is a plain value: renderers only read it.
type Report struct {
	// SchemaVersion is the version of the report's JSON
	// (followup.SchemaVersion): a report is followed up only by a gputally
	// that reads its version.
	SchemaVersion int `json:"schema_version"`
	// Start and End are the period reported on; Start is later than End −
	// Range, the range asked for, when the history begins inside it.
	Start  time.Time `json:"start"`
	End    time.Time `json:"end"`
	Range  string    `json:"range"`
	Step   string    `json:"step"`
	Source string    `json:"source"`
	// Kind is which kind of number the headline and the fleet's totals are:
	// "exact", "sampled", "allocation share" or several (analysis.Group.Kind);
	// every row carries its own.
	Kind string `json:"kind"`
	// Sampling is a sampled source's statement of its grid's resolution.
	Sampling string `json:"sampling,omitempty"`
	// Partial is true when more than 1 % of the device-hours the range should
	// hold are missing (no data) or unknown; Coverage says where.
	Partial  bool              `json:"partial"`
	Coverage analysis.Coverage `json:"coverage"`
	Warnings []string          `json:"warnings"`
	Fleet    analysis.Group    `json:"fleet"`
	GPUs     int               `json:"gpus"`
	// Clusters are the clusters of the GPUs, by the report's cluster label;
	// empty without one. Rows of nodes, holdings, GPUs, recommendations and
	// configurations name theirs in a "cluster" field.
	Clusters   []string         `json:"clusters"`
	Teams      []analysis.Group `json:"teams"`
	Namespaces []analysis.Group `json:"namespaces"`
	Models     []analysis.Group `json:"models"`
	Nodes      []analysis.Group `json:"nodes"`
	// PerCluster are the totals per cluster, the energy and emissions of
	// each grid apart; empty without a cluster label.
	PerCluster []analysis.Group   `json:"per_cluster"`
	Holdings   []analysis.Holding `json:"holdings"`
	// Prices names the price book and the carbon intensities the rental
	// comparisons (per entry of Models) and emissions used; absent when the
	// report had no book.
	Prices *analysis.Prices `json:"prices,omitempty"`
	// BrokenGPUs are the GPUs that fell off the bus: repair or replace them.
	// No other advice is made for their holdings.
	BrokenGPUs      []analysis.BrokenGPU    `json:"broken_gpus"`
	Recommendations []advice.Recommendation `json:"recommendations"`
	Packing         []advice.Packing        `json:"mig_packing"`
	// FreedEURPerMonth is the headline: the measured cost of every GPU the
	// advice makes free, each counted once, per month of HoursPerMonth hours.
	FreedEURPerMonth float64 `json:"freed_eur_per_month"`
	// ReclaimableEURPerMonth is the partial capacity the advice makes free,
	// shown apart and not part of the headline.
	ReclaimableEURPerMonth float64                  `json:"reclaimable_eur_per_month"`
	HoursPerMonth          float64                  `json:"hours_per_month"` // the month of the EUR/month figures
	Apply                  advice.Apply             `json:"apply"`
	Timeline               []analysis.TimelinePoint `json:"timeline"`
	// Waiting is the GPU demand that waited for a node: GPU-hours, pods,
	// waits, fragmentation, idle EUR while pods waited, per namespace, team
	// and cluster, and each pod that waited.
	Waiting analysis.Waiting `json:"waiting"`
	// WaitingAdvice is what the waiting calls for — queues, bin-packing,
	// releases — each with the EUR it is about; not in the headline.
	WaitingAdvice []advice.WaitAdvice `json:"waiting_advice"`
	// Heatmap is the mean device activity (0–1) by weekday (0 = Sunday) and
	// hour of day, UTC; -1 where there was no data.
	Heatmap [7][24]float64 `json:"heatmap"`
	// FollowUp follows up each recommendation of the baseline (an earlier
	// report, --baseline): its status and the EUR it freed; empty without one.
	FollowUp []followup.Item `json:"follow_up"`
	// Baseline is this period against the baseline's — before and after for
	// the fleet and each team, the kept weeks — absent without one.
	Baseline *followup.Comparison `json:"baseline,omitempty"`
}

// MonthFactor scales an amount over the report's range to a month of
// HoursPerMonth hours.
func (r *Report) MonthFactor() float64 { return model.MonthFactor(r.Start, r.End) }

// NewReport returns the report of the analysis a with its advice adv; Source
// is left to the caller.
func NewReport(a *analysis.Result, adv *advice.Advice) *Report {
	return &Report{SchemaVersion: followup.SchemaVersion, Start: a.Start, End: a.End, Range: a.Range, Step: a.Step, Kind: a.Fleet.Kind, Sampling: a.Sampling, Partial: a.Partial, Coverage: a.Coverage, Warnings: a.Warnings,
		Fleet: a.Fleet, GPUs: a.GPUs, Clusters: a.Clusters, Teams: a.Teams, Namespaces: a.Namespaces, Models: a.Models, Nodes: a.Nodes,
		PerCluster: a.PerCluster, Holdings: a.Holdings, BrokenGPUs: a.BrokenGPUs, Prices: a.Prices,
		Recommendations: adv.Recommendations, Packing: adv.Packing, FreedEURPerMonth: adv.FreedEURPerMonth,
		ReclaimableEURPerMonth: adv.ReclaimableEURPerMonth, HoursPerMonth: adv.HoursPerMonth, Apply: adv.Apply,
		Timeline: a.Timeline, Waiting: a.Waiting, WaitingAdvice: adv.WaitAdvice, Heatmap: a.Heatmap}
}

// Formats Render writes.
const (
	FormatHTML     = "html"
	FormatMarkdown = "md"
	FormatCSV      = "csv"
	FormatJSON     = "json"
)

// Render writes r in format (FormatHTML, FormatMarkdown, FormatCSV or FormatJSON).
func Render(w io.Writer, r *Report, format string) error {
	switch format {
	case FormatHTML:
		return renderHTML(w, r)
	case FormatMarkdown:
		return renderMarkdown(w, r)
	case FormatCSV:
		return renderCSV(w, r)
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(withEmptyLists(reflect.ValueOf(*r)).Interface())
	}
	return fmt.Errorf("format %q: want html, md, csv or json", format)
}

// withEmptyLists returns a copy of v in which every nil slice, at any depth,
// is an empty one: the JSON has [] for every empty list, never null, so that
// a consumer can iterate any list without a check.
func withEmptyLists(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Slice:
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			out.Index(i).Set(withEmptyLists(v.Index(i)))
		}
		return out
	case reflect.Array:
		out := reflect.New(v.Type()).Elem()
		for i := range v.Len() {
			out.Index(i).Set(withEmptyLists(v.Index(i)))
		}
		return out
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		out := reflect.New(v.Type().Elem())
		out.Elem().Set(withEmptyLists(v.Elem()))
		return out
	case reflect.Struct:
		out := reflect.New(v.Type()).Elem()
		out.Set(v) // unexported fields (time.Time's) as they are
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				out.Field(i).Set(withEmptyLists(v.Field(i)))
			}
		}
		return out
	}
	return v
}

package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/heatmap"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
	"github.com/grafana/grafana-foundation-sdk/go/units"
)

// Label filters every panel applies; the variables' All value is ".*", which
// also matches series without the label.
const (
	// fleet restricts device series to the chosen nodes and GPU models.
	fleet = `hostname=~"$hostname", modelName=~"$modelName"`
	// owned restricts holder series to the chosen namespaces as well.
	owned = fleet + `, namespace=~"$namespace"`
)

// Legends.
const (
	deviceLegend = "{{hostname}} gpu {{gpu}} {{GPU_I_PROFILE}} {{GPU_I_ID}}"
	podLegend    = "{{namespace}}/{{pod}} {{container}}"
)

// Units Grafana understands (see the SDK's units package).
const (
	unitRatio   = units.PercentUnit // 0–1 shown as percent
	unitEUR     = units.Euro
	unitBytes   = units.BytesIEC
	unitCelsius = units.Celsius
	unitWatt    = units.Watt
	unitHertz   = units.Hertz
	unitCount   = units.Short
	unitKg      = units.Kilogram
	unitNone    = "none"
)

// euroPerHour shows EUR amounts that are rates per hour.
const euroPerHour = unitEUR

// unitKgCO2ePerHour shows emission rates: Grafana has no unit of mass per
// hour, so a custom suffix.
const unitKgCO2ePerHour = "suffix: kgCO2e/h"

// hoursPerMonth converts an hourly rate into a monthly one (365 × 24 / 12).
const hoursPerMonth = "730"

func datasource() common.DataSourceRef {
	return common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${datasource}")}
}

// newDashboard starts a dashboard with gputally's variables: the Prometheus
// datasource, hostname and modelName, and namespace when withNamespace.
func newDashboard(uid, title, description, from string, withNamespace bool) *dashboard.DashboardBuilder {
	b := dashboard.NewDashboardBuilder(title).
		Uid(uid).
		Description(description).
		Tags([]string{"gputally", "gpu"}).
		Editable().
		Refresh("1m").
		Time(from, "now").
		Timezone(common.TimeZoneBrowser).
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		Link(dashboard.NewDashboardLinkBuilder("gputally").
			Type(dashboard.DashboardLinkTypeDashboards).
			Tags([]string{"gputally"}).
			AsDropdown(true).
			IncludeVars(true).
			KeepTime(true)).
		WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").
			Label("Data source").
			Type("prometheus")).
		WithVariable(labelVariable("hostname", "Node", "label_values(gputally_gpu_info, hostname)")).
		WithVariable(labelVariable("modelName", "GPU model", `label_values(gputally_gpu_info{hostname=~"$hostname"}, modelName)`))
	if withNamespace {
		b = b.WithVariable(labelVariable("namespace", "Namespace", `label_values(gputally_gpu_allocation{hostname=~"$hostname", modelName=~"$modelName"}, namespace)`))
	}
	return b
}

func labelVariable(name, label, query string) *dashboard.QueryVariableBuilder {
	return dashboard.NewQueryVariableBuilder(name).
		Label(label).
		Query(dashboard.StringOrMap{String: cog.ToPtr(query)}).
		Datasource(datasource()).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Sort(dashboard.VariableSortAlphabeticalAsc).
		Multi(true).
		IncludeAll(true).
		AllValue(".*")
}

// rangeQuery is a target drawn over time.
func rangeQuery(expr, legend string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().
		Datasource(datasource()).
		Expr(expr).
		LegendFormat(legend).
		Range()
}

// instantQuery is a target evaluated once at the end of the range, as a table.
func instantQuery(expr, legend string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().
		Datasource(datasource()).
		Expr(expr).
		LegendFormat(legend).
		Instant().
		Format(prometheus.PromQueryFormatTable)
}

func targets(qs []*prometheus.DataqueryBuilder) []cog.Builder[variants.Dataquery] {
	out := make([]cog.Builder[variants.Dataquery], len(qs))
	for i, q := range qs {
		out[i] = q
	}
	return out
}

func timeSeries(title, description, unit string, qs ...*prometheus.DataqueryBuilder) *timeseries.PanelBuilder {
	return timeseries.NewPanelBuilder().
		Title(title).
		Description(description).
		Datasource(datasource()).
		Unit(unit).
		Height(8).
		Span(12).
		FillOpacity(10).
		Targets(targets(qs))
}

func stacked(p *timeseries.PanelBuilder) *timeseries.PanelBuilder {
	return p.FillOpacity(60).
		Stacking(common.NewStackingConfigBuilder().Mode(common.StackingModeNormal))
}

func singleStat(title, description, unit string, qs ...*prometheus.DataqueryBuilder) *stat.PanelBuilder {
	return stat.NewPanelBuilder().
		Title(title).
		Description(description).
		Datasource(datasource()).
		Unit(unit).
		Height(5).
		Span(6).
		GraphMode(common.BigValueGraphModeNone).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"})).
		Targets(targets(qs))
}

func tableOf(title, description, unit string, qs ...*prometheus.DataqueryBuilder) *table.PanelBuilder {
	return table.NewPanelBuilder().
		Title(title).
		Description(description).
		Datasource(datasource()).
		Unit(unit).
		Height(9).
		Span(12).
		Footer(common.NewTableFooterOptionsBuilder().Show(false).Reducer([]string{"sum"})).
		WithTransformation(dashboard.DataTransformerConfig{
			Id:      "organize",
			Options: map[string]any{"excludeByName": map[string]any{"Time": true}},
		}).
		Targets(targets(qs))
}

func heatmapOf(title, description, unit string, qs ...*prometheus.DataqueryBuilder) *heatmap.PanelBuilder {
	return heatmap.NewPanelBuilder().
		Title(title).
		Description(description).
		Datasource(datasource()).
		Unit(unit).
		Height(10).
		Span(24).
		Calculate(false).
		Color(heatmap.NewHeatmapColorOptionsBuilder().
			Mode(heatmap.HeatmapColorModeScheme).
			Scheme("RdYlGn").
			Steps(64).
			Min(0).
			Max(1)).
		Targets(targets(qs))
}

func row(title string) *dashboard.RowBuilder { return dashboard.NewRowBuilder(title) }

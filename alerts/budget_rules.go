package alerts

import (
	"fmt"
	"strconv"
	"strings"
)

// Names of the budget rules. Their series carry either a team label (the
// spend of the team's pods) or a namespace label (the spend of the
// namespace's pods), never both.
const (
	// RuleBudgetMonthly is each budget of Options.Budgets as a constant, EUR
	// per calendar month.
	RuleBudgetMonthly = "team_or_namespace:gputally_budget_eur:monthly"
	// RuleIdleLimitDaily is each idle-cost limit of Options.Budgets as a
	// constant, EUR per day.
	RuleIdleLimitDaily = "team_or_namespace:gputally_idle_limit_eur:daily"
	// RuleSpendPerStep is the GPU spend of each team and namespace over the
	// last Options.BudgetStep, EUR, with a `month` label (1–12): the UTC month
	// in which that step started.
	RuleSpendPerStep = "team_or_namespace:gputally_cost_eur:increase"
	// RuleSpendMonthToDate is the spend of the current UTC month, EUR: the
	// sum of RuleSpendPerStep over the steps that started in it.
	RuleSpendMonthToDate = "team_or_namespace:gputally_cost_eur:month_to_date"
	// RuleSpendForecast is the month's projected spend, EUR: month to date
	// plus the mean spend per second of the steps of the last
	// Options.ForecastWindow times the seconds left in the month.
	RuleSpendForecast = "team_or_namespace:gputally_cost_eur:month_forecast"
)

// budgetSubject names the team or namespace of a budget alert in a template.
const budgetSubject = "{{ with $labels.team }}team {{ . }}{{ else }}namespace {{ $labels.namespace }}{{ end }}"

// budgetConstants are the constant series of Options.Budgets: per team, then
// per namespace, in name order, the monthly budget then the idle limit.
func budgetConstants(bs Budgets) []Rule {
	var rules []Rule
	for _, e := range bs.entries() {
		if e.MonthlyEUR > 0 {
			rules = append(rules, Rule{Record: RuleBudgetMonthly, Expr: "vector(" + num(e.MonthlyEUR) + ")", Labels: map[string]string{e.label: e.name}})
		}
		if e.IdleEURPerDay > 0 {
			rules = append(rules, Rule{Record: RuleIdleLimitDaily, Expr: "vector(" + num(e.IdleEURPerDay) + ")", Labels: map[string]string{e.label: e.name}})
		}
	}
	return rules
}

// perTeamOrNamespace sums the per-pod expression podExpr (grouped by
// namespace and pod) per team, and nsExpr per namespace, into one vector whose
// series carry team or namespace. A pod's team is looked up over lookback.
func perTeamOrNamespace(podExpr, nsExpr, lookback string) string {
	return strings.Join([]string{
		`(`,
		`  sum by (team) (`,
		`    ` + podExpr,
		`    * on (namespace, pod) group_left (team)`,
		`    ` + podTeam(lookback, true),
		`  )`,
		`  or`,
		`  ` + nsExpr,
		`)`,
	}, "\n")
}

// monthLabel is a one-series vector, value 1, whose `month` label is the
// month (1–12, UTC) of the evaluation time minus ago.
func monthLabel(ago string) string {
	lines := make([]string, 0, 12)
	for m := 1; m <= 12; m++ {
		lines = append(lines, fmt.Sprintf(`label_replace(vector(1), "month", "%d", "", "") and on () month(vector(time() - %s)) == %d`, m, ago, m))
	}
	return strings.Join(lines, "\nor\n")
}

// budgetRules are the budget group, evaluated every BudgetStep: the constants,
// the spend per step, month to date and forecast, and the budget alerts.
func budgetRules(o Options) []Rule {
	step := dur(o.BudgetStep)
	stepSeconds := num(o.BudgetStep.Seconds())
	spend := perTeamOrNamespace(
		fmt.Sprintf(`sum by (namespace, pod) (increase(gputally_cost_eur_total{pod!=""}[%s]))`, step),
		fmt.Sprintf(`sum by (namespace) (increase(gputally_cost_eur_total{namespace!=""}[%s]))`, step),
		step)
	var mtd []string
	for m := 1; m <= 12; m++ {
		mtd = append(mtd, fmt.Sprintf(`sum without (month) (sum_over_time(%s{month="%d"}[31d])) and on () month() == %d`, RuleSpendPerStep, m, m))
	}
	fw := dur(o.ForecastWindow)
	// The window holds one step more than it is long (its ends are both
	// in), so the rate is the mean spend of the steps it holds, per second.
	ratePerSecond := fmt.Sprintf("sum without (month) (sum_over_time(%[1]s[%[2]s])) / sum without (month) (count_over_time(%[1]s[%[2]s])) / %[3]s", RuleSpendPerStep, fw, stepSeconds)
	rules := append(budgetConstants(o.Budgets),
		Rule{Record: RuleSpendPerStep, Expr: spend + "\n* on () group_left (month)\n(\n" + indent(monthLabel(stepSeconds)) + "\n)"},
		Rule{Record: RuleSpendMonthToDate, Expr: strings.Join(mtd, "\nor\n")},
		Rule{Record: RuleSpendForecast, Expr: strings.Join([]string{
			fmt.Sprintf("(%s or 0 * %s)", RuleSpendMonthToDate, ratePerSecond),
			"+",
			ratePerSecond,
			"* scalar((days_in_month() - day_of_month() + 1) * 86400 - time() % 86400)",
		}, "\n")},
	)
	for _, r := range o.BudgetRatios {
		sev := "warning"
		if r >= 1 {
			sev = "critical"
		}
		percent := strconv.FormatFloat(r*100, 'g', -1, 64)
		share := RuleBudgetMonthly
		if r != 1 {
			share = num(r) + " * " + share
		}
		rules = append(rules, Rule{
			Alert:  "GPUBudgetSpent",
			Expr:   fmt.Sprintf("%s >= %s", RuleSpendMonthToDate, share),
			Labels: map[string]string{"severity": sev, "budget_percent": percent},
			Annotations: annotations(
				budgetSubject+" has spent "+percent+" % of its monthly GPU budget",
				budgetSubject+" has spent {{ $value | printf \"%.2f\" }} EUR on GPUs this month (UTC), at least "+percent+" % of its budget of "+budgetQuery(RuleBudgetMonthly)+" EUR.",
			),
		})
	}
	return append(rules,
		Rule{
			Alert: "GPUBudgetForecastExceeded",
			Expr: strings.Join([]string{
				fmt.Sprintf("%s > %s", RuleSpendForecast, RuleBudgetMonthly),
				"unless",
				fmt.Sprintf("%s >= %s", RuleSpendMonthToDate, RuleBudgetMonthly),
			}, "\n"),
			For:    dur(o.ForecastFor),
			Labels: severity("warning"),
			Annotations: annotations(
				budgetSubject+" is on course to overspend its monthly GPU budget",
				fmt.Sprintf("At its spend rate of the last %s, %s will have spent {{ $value | printf \"%%.2f\" }} EUR on GPUs by the end of the month (UTC), more than its budget of %s EUR; %s EUR so far.", fw, budgetSubject, budgetQuery(RuleBudgetMonthly), budgetQuery(RuleSpendMonthToDate)),
			),
		},
		Rule{
			Alert: "GPUIdleCostOverLimit",
			Expr: perTeamOrNamespace(
				fmt.Sprintf(`sum by (namespace, pod) (rate(gputally_cost_eur_total{state="idle"}[%s]))`, dur(o.IdleCostWindow)),
				fmt.Sprintf(`sum by (namespace) (rate(gputally_cost_eur_total{state="idle", namespace!=""}[%s]))`, dur(o.IdleCostWindow)),
				dur(o.IdleCostWindow)) + "\n* 86400 > " + RuleIdleLimitDaily,
			For:    dur(o.IdleCostFor),
			Labels: severity("warning"),
			Annotations: annotations(
				"Idle GPUs held by "+budgetSubject+" cost {{ $value | printf \"%.2f\" }} EUR per day",
				fmt.Sprintf("Over the last %s, GPUs that %s holds but leaves idle cost {{ $value | printf \"%%.2f\" }} EUR per day, more than its limit of %s EUR per day.", dur(o.IdleCostWindow), budgetSubject, budgetQuery(RuleIdleLimitDaily)),
			),
		},
	)
}

// budgetQuery is a template that prints, with two decimals, the value of the
// rule's series for the alert's team or namespace.
func budgetQuery(rule string) string {
	return fmt.Sprintf(`{{ printf "%s{team=%%q, namespace=%%q}" $labels.team $labels.namespace | query | first | value | printf "%%.2f" }}`, rule)
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}

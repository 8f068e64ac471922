package helm_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gputally/gputally/alerts"
	"github.com/gputally/gputally/team"
)

const alertmanagerExample = "gputally/files/alertmanager.yaml"

// amtool returns the path of amtool (Debian: prometheus-alertmanager). Without
// it the test is skipped, or fails when the CI environment variable is set.
func amtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("amtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("amtool not found in PATH (needed in CI): %v", err)
		}
		t.Skipf("amtool not found in PATH: %v", err)
	}
	return p
}

// TestAlertmanagerExampleRoutesByTeam checks the example with Alertmanager's
// own tool: the configuration is valid, and alerts reach the receiver of
// their team, else of their namespace, else the platform team's.
func TestAlertmanagerExampleRoutesByTeam(t *testing.T) {
	bin := amtool(t)
	if out, err := exec.Command(bin, "check-config", alertmanagerExample).CombinedOutput(); err != nil {
		t.Fatalf("amtool check-config %s: %v\n%s", alertmanagerExample, err, out)
	}
	for _, tc := range []struct {
		labels []string
		want   string
	}{
		{[]string{"alertname=GPUAllocatedButIdle", "team=ml-research", "namespace=research"}, "ml-research"},
		{[]string{"alertname=GPUBudgetSpent", "team=web", "budget_percent=80"}, "web"},
		// The team wins over a namespace that would route elsewhere.
		{[]string{"alertname=GPUAllocatedButIdle", "team=ml-research", "namespace=sandbox"}, "ml-research"},
		// No team: the namespace routes.
		{[]string{"alertname=GPUAllocatedButIdle", "namespace=sandbox"}, "web"},
		{[]string{"alertname=GPUBudgetSpent", "namespace=frontend-eu", "budget_percent=100"}, "web"},
		// A team the example does not know, an unrouted namespace, a GPU alert:
		// the platform team.
		{[]string{"alertname=GPUAllocatedButIdle", "team=vision", "namespace=sandbox"}, "platform"},
		{[]string{"alertname=GPUAllocatedButIdle", "namespace=research"}, "platform"},
		{[]string{"alertname=GPUCriticalXID", "UUID=GPU-1", "xid=79"}, "platform"},
	} {
		args := append([]string{"config", "routes", "test", "--config.file=" + alertmanagerExample, "--verify.receivers=" + tc.want}, tc.labels...)
		if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
			t.Errorf("%v: %v\n%s", tc.labels, err, out)
		}
	}
}

// amFile is the part of Alertmanager's configuration the example uses.
type amFile struct {
	Route        amFileRoute `json:"route"`
	InhibitRules []struct {
		SourceMatchers []string `json:"source_matchers"`
		TargetMatchers []string `json:"target_matchers"`
		Equal          []string `json:"equal"`
	} `json:"inhibit_rules"`
	Receivers []struct {
		Name           string `json:"name"`
		WebhookConfigs []struct {
			URL          string `json:"url"`
			SendResolved bool   `json:"send_resolved"`
		} `json:"webhook_configs"`
	} `json:"receivers"`
}

type amFileRoute struct {
	Receiver       string        `json:"receiver"`
	GroupBy        []string      `json:"group_by"`
	GroupWait      string        `json:"group_wait"`
	GroupInterval  string        `json:"group_interval"`
	RepeatInterval string        `json:"repeat_interval"`
	Matchers       []string      `json:"matchers"`
	Routes         []amFileRoute `json:"routes"`
}

func readAlertmanagerExample(t *testing.T) amFile {
	t.Helper()
	b, err := os.ReadFile(alertmanagerExample)
	if err != nil {
		t.Fatal(err)
	}
	var f amFile
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		t.Fatalf("%s: %v", alertmanagerExample, err)
	}
	return f
}

var matcherText = regexp.MustCompile(`^([a-zA-Z_][a-zA-Z0-9_]*)(=~|!~|!=|=)"(.*)"$`)

// TestAlertmanagerExampleNamesRealAlerts holds the example's inhibitions to the
// rules: every alertname they match is one gputally generates.
func TestAlertmanagerExampleNamesRealAlerts(t *testing.T) {
	f, err := alerts.Build(alerts.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			names[r.Alert] = true
		}
	}
	ex := readAlertmanagerExample(t)
	if len(ex.InhibitRules) == 0 {
		t.Fatal("the example has no inhibit rules")
	}
	for _, r := range ex.InhibitRules {
		for _, m := range append(append([]string{}, r.SourceMatchers...), r.TargetMatchers...) {
			p := matcherText.FindStringSubmatch(m)
			if p == nil {
				t.Fatalf("matcher %q: not name, operator, quoted value", m)
			}
			if p[1] != "alertname" {
				continue
			}
			for _, a := range strings.Split(p[3], "|") {
				if !names[a] {
					t.Errorf("inhibit rule matches alertname %q, which gputally does not generate", a)
				}
			}
		}
	}
}

// TestAlertmanagerConfigIsTheExample renders alertmanagerConfig.enabled and
// holds the AlertmanagerConfig to the example: the same routes, matchers,
// inhibitions and receivers, field by field.
func TestAlertmanagerConfigIsTheExample(t *testing.T) {
	if n := len(render(t).ofKind("AlertmanagerConfig")); n != 0 {
		t.Fatalf("%d AlertmanagerConfigs by default, want none", n)
	}
	var got alertmanagerConfig
	decodeOne(t, render(t, "--set", "alertmanagerConfig.enabled=true"), "AlertmanagerConfig", &got)
	ex := readAlertmanagerExample(t)

	matchers := func(ms []string) []amMatcher {
		var out []amMatcher
		for _, m := range ms {
			p := matcherText.FindStringSubmatch(m)
			if p == nil {
				t.Fatalf("matcher %q: not name, operator, quoted value", m)
			}
			out = append(out, amMatcher{Name: p[1], MatchType: p[2], Value: p[3]})
		}
		return out
	}
	var route func(r amFileRoute) amRoute
	route = func(r amFileRoute) amRoute {
		out := amRoute{Receiver: r.Receiver, GroupBy: r.GroupBy, GroupWait: r.GroupWait, GroupInterval: r.GroupInterval,
			RepeatInterval: r.RepeatInterval, Matchers: matchers(r.Matchers)}
		for _, c := range r.Routes {
			out.Routes = append(out.Routes, route(c))
		}
		return out
	}
	if want := route(ex.Route); !reflect.DeepEqual(got.Spec.Route, want) {
		t.Errorf("route\n got %+v\nwant %+v", got.Spec.Route, want)
	}
	var inhibit []amInhibitRule
	for _, r := range ex.InhibitRules {
		inhibit = append(inhibit, amInhibitRule{SourceMatch: matchers(r.SourceMatchers), TargetMatch: matchers(r.TargetMatchers), Equal: r.Equal})
	}
	if !reflect.DeepEqual(got.Spec.InhibitRules, inhibit) {
		t.Errorf("inhibitRules\n got %+v\nwant %+v", got.Spec.InhibitRules, inhibit)
	}
	var receivers []amReceiver
	for _, r := range ex.Receivers {
		rc := amReceiver{Name: r.Name}
		for _, w := range r.WebhookConfigs {
			rc.WebhookConfigs = append(rc.WebhookConfigs, amWebhook{URL: w.URL, SendResolved: w.SendResolved})
		}
		receivers = append(receivers, rc)
	}
	if !reflect.DeepEqual(got.Spec.Receivers, receivers) {
		t.Errorf("receivers\n got %+v\nwant %+v", got.Spec.Receivers, receivers)
	}

	// Own receivers and route replace the example's; the inhibitions stay.
	var own alertmanagerConfig
	decodeOne(t, render(t, "--set", "alertmanagerConfig.enabled=true",
		"--set", "alertmanagerConfig.route.receiver=oncall",
		"--set", "alertmanagerConfig.route.routes[0].receiver=oncall",
		"--set", "alertmanagerConfig.route.routes[0].matchers[0].name=team",
		"--set", "alertmanagerConfig.route.routes[0].matchers[0].value=ml",
		"--set", "alertmanagerConfig.receivers[0].name=oncall",
		"--set", "alertmanagerConfig.receivers[0].webhookConfigs[0].url=http://relay.example.invalid/oncall"), "AlertmanagerConfig", &own)
	if own.Spec.Route.Receiver != "oncall" || len(own.Spec.Route.Routes) != 1 || own.Spec.Route.Routes[0].Matchers[0] != (amMatcher{Name: "team", Value: "ml"}) {
		t.Errorf("alertmanagerConfig.route not used: %+v", own.Spec.Route)
	}
	if len(own.Spec.Receivers) != 1 || own.Spec.Receivers[0].Name != "oncall" {
		t.Errorf("alertmanagerConfig.receivers not used: %+v", own.Spec.Receivers)
	}
	if !reflect.DeepEqual(own.Spec.InhibitRules, inhibit) {
		t.Errorf("own route and receivers changed the inhibitions: %+v", own.Spec.InhibitRules)
	}
}

// TestPrometheusRuleTeamsAndBudgets renders the test team map, team label,
// budgets and a runbook URL as values and holds the PrometheusRule to what
// `gputally generate rules` writes from the same files and flags.
func TestPrometheusRuleTeamsAndBudgets(t *testing.T) {
	teamsFile := filepath.Join(repoRoot, "alerts", "testdata", "teams.yaml")
	budgetsFile := filepath.Join(repoRoot, "alerts", "testdata", "budgets.yaml")
	opts := alerts.DefaultOptions()
	opts.TeamLabel = "app.kubernetes.io/team"
	opts.RunbookBaseURL = "https://wiki.example.com/gpu/runbooks"
	var err error
	if opts.Teams, err = team.LoadMap(teamsFile); err != nil {
		t.Fatal(err)
	}
	if opts.Budgets, err = alerts.LoadBudgets(budgetsFile); err != nil {
		t.Fatal(err)
	}
	// A budget above a million: Go writes 1.5e+06 where --set would give 1500000.
	opts.Budgets.Namespaces["big"] = alerts.Budget{MonthlyEUR: 1.5e6}
	want, err := alerts.Generate(opts)
	if err != nil {
		t.Fatal(err)
	}

	var teams struct {
		Teams map[string][]string `json:"teams"`
	}
	var budgets map[string]any
	for path, v := range map[string]any{teamsFile: &teams, budgetsFile: &budgets} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(b, v); err != nil {
			t.Fatal(err)
		}
	}
	values, err := yaml.Marshal(map[string]any{"prometheusRule": map[string]any{
		"teamLabel": opts.TeamLabel, "runbookBaseURL": opts.RunbookBaseURL + "/",
		"teams": teams.Teams, "budgets": budgets,
	}})
	if err != nil {
		t.Fatal(err)
	}
	valuesFile := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(valuesFile, values, 0o644); err != nil {
		t.Fatal(err)
	}
	var rule prometheusRule
	decodeOne(t, render(t, append([]string{"-f", valuesFile, "--set", "prometheusRule.budgets.namespaces.big.monthly_eur=1500000"}, monitoringAPIs...)...), "PrometheusRule", &rule)
	var wantFile struct {
		Groups []any `json:"groups"`
	}
	if err := yaml.UnmarshalStrict(want, &wantFile); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rule.Spec.Groups, wantFile.Groups) {
		got, _ := yaml.Marshal(rule.Spec.Groups)
		exp, _ := yaml.Marshal(wantFile.Groups)
		t.Errorf("PrometheusRule groups differ from `generate rules` with the same teams and budgets\n--- got\n%s\n--- want\n%s", got, exp)
	}
}

func TestPrometheusRuleRefusesBadTeamsAndBudgets(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  []string
		want string
	}{
		{"namespace under two teams", []string{"prometheusRule.teams.a={x}", "prometheusRule.teams.b={x}"}, `namespace "x" is listed under both "a" and "b"`},
		{"negative budget", []string{"prometheusRule.budgets.teams.a.monthly_eur=-1"}, "prometheusRule.budgets.teams.a: want amounts ≥ 0"},
		{"no amount", []string{"prometheusRule.budgets.namespaces.a.monthly_eur=0"}, "prometheusRule.budgets.namespaces.a: want amounts ≥ 0, at least one above 0"},
		{"unknown key", []string{"prometheusRule.budgets.teams.a.monthly=5"}, "unknown key monthly"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var args []string
			for _, s := range tc.set {
				args = append(args, "--set", s)
			}
			_, err := helmTemplate(t, append(args, monitoringAPIs...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("helm template: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

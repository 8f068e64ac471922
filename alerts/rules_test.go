package alerts

import (
	"bytes"
	"flag"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gputally/gputally/dcgmnames"
	"github.com/gputally/gputally/team"
)

var update = flag.Bool("update", false, "rewrite alerts/generated/gputally-rules.yaml (and 4.8/) from the code")

const (
	generatedFile   = "generated/gputally-rules.yaml"
	generatedFile48 = "generated/4.8/gputally-rules.yaml" // for --collector.dcgm-exporter-names=4.8
	unitTestFile    = "testdata/gputally-rules_test.yaml"
	unitTestFile48  = "testdata/gputally-rules-4.8_test.yaml"
	// transitionTestFile tests the rules for Names dcgmnames.ReadsBoth.
	transitionTestFile = "testdata/gputally-rules-transition_test.yaml"
	budgetTestFile     = "testdata/budgets_test.yaml"
	teamTestFile       = "testdata/teams_test.yaml"
	waitTestFile       = "testdata/waiting_test.yaml"
)

// budgetTestOptions are the options of budgetTestFile's rules: the defaults
// with a team label, the test team map and budgets, and hourly steps.
func budgetTestOptions(t *testing.T) Options {
	t.Helper()
	o := DefaultOptions()
	o.TeamLabel = "team"
	var err error
	if o.Teams, err = team.LoadMap("testdata/teams.yaml"); err != nil {
		t.Fatal(err)
	}
	if o.Budgets, err = LoadBudgets("testdata/budgets.yaml"); err != nil {
		t.Fatal(err)
	}
	o.BudgetStep = time.Hour
	return o
}

// TestGeneratedFileIsCurrent: the committed rules are what Generate writes
// for the default options, under 4.10's names and (4.8/) under 4.8's.
func TestGeneratedFileIsCurrent(t *testing.T) {
	for file, names := range map[string]dcgmnames.Reads{generatedFile: dcgmnames.ReadsCurrent, generatedFile48: dcgmnames.ReadsLegacy} {
		opts := DefaultOptions()
		opts.Names = names
		want, err := Generate(opts)
		if err != nil {
			t.Fatal(err)
		}
		if *update {
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("%v (run `go generate ./alerts`)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what the code generates; run `go generate ./alerts`", file)
		}
	}
}

// promtool returns the path of promtool. Without it the test is skipped, or
// fails when the CI environment variable is set.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("promtool not found in PATH (needed in CI): %v", err)
		}
		t.Skipf("promtool not found in PATH: %v", err)
	}
	return p
}

func TestPromtoolCheckRules(t *testing.T) {
	bin := promtool(t)
	for _, tc := range []struct {
		name string
		opts func(*Options)
	}{
		{"defaults", func(*Options) {}},
		{"short durations", func(o *Options) {
			o.IdleFor, o.IdleWindow, o.ThrottleFor, o.TemperatureFor = 0, 10*time.Second, 0, time.Second
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := DefaultOptions()
			tc.opts(&opts)
			rules, err := Generate(opts)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "rules.yaml")
			if err := os.WriteFile(path, rules, 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(bin, "check", "rules", path).CombinedOutput()
			if err != nil {
				t.Fatalf("promtool check rules: %v\n%s", err, out)
			}
		})
	}
}

// TestPromtoolTestRules runs the unit tests of the committed rules: those
// reading 4.10's names, and 4.8's.
func TestPromtoolTestRules(t *testing.T) {
	bin := promtool(t)
	for _, file := range []string{unitTestFile, unitTestFile48} {
		cmd := exec.Command(bin, "test", "rules", filepath.Base(file))
		cmd.Dir = filepath.Dir(file)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("promtool test rules %s: %v\n%s", file, err, out)
		}
	}
}

// TestPromtoolTestTransition runs transitionTestFile against the rules that
// read both namings, written beside a copy of it.
func TestPromtoolTestTransition(t *testing.T) {
	bin := promtool(t)
	opts := DefaultOptions()
	opts.Names = dcgmnames.ReadsBoth
	rules, err := Generate(opts)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tests, err := os.ReadFile(transitionTestFile)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"transition-rules.yaml": rules, filepath.Base(transitionTestFile): tests} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "test", "rules", filepath.Base(transitionTestFile))
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules %s: %v\n%s", transitionTestFile, err, out)
	}
}

// TestPromtoolTestBudgets runs budgetTestFile, teamTestFile and waitTestFile against the
// rules for budgetTestOptions, written beside copies of them.
func TestPromtoolTestBudgets(t *testing.T) {
	bin := promtool(t)
	rules, err := Generate(budgetTestOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "budget-rules.yaml"), rules, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{budgetTestFile, teamTestFile, waitTestFile} {
		tests, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(file)), tests, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "test", "rules", filepath.Base(file))
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool test rules %s: %v\n%s", file, err, out)
		}
	}
}

// unitTests is the part of a promtool unit-test file this test reads.
type unitTests struct {
	RuleFiles []string `yaml:"rule_files"`
	Tests     []struct {
		AlertRuleTests []struct {
			Alertname string     `yaml:"alertname"`
			ExpAlerts []struct{} `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

// TestEveryAlertHasFiringAndSilentCase holds the promtool unit tests to the
// rule set: every alert has a case where it fires and one where it does not.
func TestEveryAlertHasFiringAndSilentCase(t *testing.T) {
	fires, silent := map[string]bool{}, map[string]bool{}
	for file, rules := range map[string]string{unitTestFile: "../" + generatedFile, budgetTestFile: "budget-rules.yaml", teamTestFile: "budget-rules.yaml", waitTestFile: "budget-rules.yaml"} {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var ut unitTests
		if err := yaml.Unmarshal(raw, &ut); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if !slices.Contains(ut.RuleFiles, rules) {
			t.Errorf("%s: rule_files %v does not test %s", file, ut.RuleFiles, rules)
		}
		for _, tc := range ut.Tests {
			for _, a := range tc.AlertRuleTests {
				if len(a.ExpAlerts) > 0 {
					fires[a.Alertname] = true
				} else {
					silent[a.Alertname] = true
				}
			}
		}
	}
	f, err := Build(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			if !fires[r.Alert] {
				t.Errorf("alert %s: no promtool case where it fires", r.Alert)
			}
			if !silent[r.Alert] {
				t.Errorf("alert %s: no promtool case where it stays silent", r.Alert)
			}
		}
	}
}

func TestAlertsCarryMetadata(t *testing.T) {
	f, err := Build(budgetTestOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	records := map[string]bool{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				records[r.Record] = true
				continue
			}
			switch r.Labels["severity"] {
			case "critical", "warning":
			default:
				t.Errorf("alert %s: severity %q, want critical or warning", r.Alert, r.Labels["severity"])
			}
			for _, k := range []string{"summary", "description"} {
				if strings.TrimSpace(r.Annotations[k]) == "" {
					t.Errorf("alert %s: annotation %s empty", r.Alert, k)
				}
			}
			if want := DefaultRunbookBaseURL + "/" + r.Alert + ".md"; r.Annotations["runbook_url"] != want {
				t.Errorf("alert %s: runbook_url %q, want %q", r.Alert, r.Annotations["runbook_url"], want)
			}
			if len(r.Annotations) != 3 {
				t.Errorf("alert %s: annotations %v, want summary, description and runbook_url", r.Alert, slices.Sorted(maps.Keys(r.Annotations)))
			}
		}
	}
	for _, name := range RecordingRuleNames() {
		if !records[name] {
			t.Errorf("recording rule %s is exported but not generated", name)
		}
	}
	if len(records) != len(RecordingRuleNames()) {
		t.Errorf("generated %d recording rules, RecordingRuleNames lists %d", len(records), len(RecordingRuleNames()))
	}
}

func TestOptionsReachTheRules(t *testing.T) {
	opts := DefaultOptions()
	opts.TemperatureCelsius = 77
	opts.TemperatureFor = 3 * time.Minute
	opts.IdleFor = 0
	opts.IdleWindow = 90 * time.Second
	opts.ExporterJob = "gpu-exporter"
	opts.RunbookBaseURL = "https://wiki.example.com/gpu/runbooks/"
	opts.TeamLabel = "app.kubernetes.io/team"
	opts.BudgetStep = 10 * time.Second
	opts.ForecastWindow = 2 * time.Hour
	opts.ForecastFor = 7 * time.Minute
	opts.IdleCostWindow = 45 * time.Minute
	opts.IdleCostFor = 4 * time.Minute
	opts.BudgetRatios = []float64{0.9, 1.25}
	opts.Names = dcgmnames.ReadsLegacy
	f, err := Build(opts)
	if err != nil {
		t.Fatal(err)
	}
	alert, record := map[string]Rule{}, map[string]Rule{}
	var spent []Rule
	for _, g := range f.Groups {
		if g.Name == "gputally.budgets" && g.Interval != "10s" {
			t.Errorf("budget group interval %q, want BudgetStep 10s", g.Interval)
		}
		for _, r := range g.Rules {
			alert[r.Alert] = r
			record[r.Record] = r
			if r.Alert == "GPUBudgetSpent" {
				spent = append(spent, r)
			}
		}
	}
	if len(spent) != 2 || spent[0].Labels["budget_percent"] != "90" || spent[0].Labels["severity"] != "warning" ||
		spent[1].Labels["budget_percent"] != "125" || spent[1].Labels["severity"] != "critical" ||
		!strings.HasSuffix(spent[1].Expr, ">= 1.25 * "+RuleBudgetMonthly) {
		t.Errorf("GPUBudgetSpent rules for ratios 0.9 and 1.25: %+v", spent)
	}
	if got, want := alert["GPUCriticalXID"].Annotations["runbook_url"], "https://wiki.example.com/gpu/runbooks/GPUCriticalXID.md"; got != want {
		t.Errorf("runbook_url %q, want %q", got, want)
	}
	for _, tc := range []struct {
		alert, field, want string
	}{
		{"GPUTemperatureHigh", alert["GPUTemperatureHigh"].Expr, "DCGM_FI_DEV_GPU_TEMP > 77"},
		{"GPUTemperatureHigh", alert["GPUTemperatureHigh"].For, "3m"},
		{"GPUThrottling", alert["GPUThrottling"].Expr, `(rate(DCGM_FI_DEV_THERMAL_VIOLATION[`},
		{RuleDeviceActivity, record[RuleDeviceActivity].Expr, "DCGM_FI_DEV_GPU_UTIL / 100"},
		{"GPUAllocatedButIdle", alert["GPUAllocatedButIdle"].Expr, `[1m30s]`},
		{"GPUTallyExporterDown", alert["GPUTallyExporterDown"].Expr, `up{job=~"gpu-exporter"}`},
		{RulePodTeamLabel, record[RulePodTeamLabel].Expr, `kube_pod_labels{label_app_kubernetes_io_team!=""}, "team", "$1", "label_app_kubernetes_io_team"`},
		{RuleSpendPerStep, record[RuleSpendPerStep].Expr, `increase(gputally_cost_eur_total{pod!=""}[10s])`},
		{RuleSpendPerStep, record[RuleSpendPerStep].Expr, `month(vector(time() - 10)) == 12`},
		{RuleSpendForecast, record[RuleSpendForecast].Expr, `count_over_time(` + RuleSpendPerStep + `[2h])) / 10`},
		{"GPUBudgetForecastExceeded", alert["GPUBudgetForecastExceeded"].For, "7m"},
		{"GPUIdleCostOverLimit", alert["GPUIdleCostOverLimit"].Expr, `rate(gputally_cost_eur_total{state="idle"}[45m])`},
		{"GPUIdleCostOverLimit", alert["GPUIdleCostOverLimit"].For, "4m"},
	} {
		if !strings.Contains(tc.field, tc.want) {
			t.Errorf("%s: %q does not contain %q", tc.alert, tc.field, tc.want)
		}
	}
	if got := alert["GPUAllocatedButIdle"].For; got != "" {
		t.Errorf("GPUAllocatedButIdle: for %q with IdleFor 0, want it left out", got)
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		change  func(*Options)
		wantErr string
	}{
		{"defaults", func(*Options) {}, ""},
		{"zero for", func(o *Options) { o.IdleFor = 0 }, ""},
		{"idle ratio zero", func(o *Options) { o.IdleRatio = 0 }, "IdleRatio"},
		{"framebuffer ratio above one", func(o *Options) { o.FramebufferRatio = 1.5 }, "FramebufferRatio"},
		{"zero window", func(o *Options) { o.ThrottleWindow = 0 }, "ThrottleWindow"},
		{"sub-second window", func(o *Options) { o.IdleWindow = 1500 * time.Millisecond }, "IdleWindow"},
		{"negative for", func(o *Options) { o.StaleFor = -time.Second }, "StaleFor"},
		{"empty job", func(o *Options) { o.ExporterJob = "" }, "ExporterJob"},
		{"job regex", func(o *Options) { o.ExporterJob = "gputally|dcgm-.*" }, ""},
		{"bad job regex", func(o *Options) { o.ExporterJob = "gpu(" }, "ExporterJob"},
		{"quote in job", func(o *Options) { o.ExporterJob = `a"b` }, "ExporterJob"},
		{"negative idle cost", func(o *Options) { o.IdleMinEURPerHour = -1 }, "IdleMinEURPerHour"},
		{"unknown ratio above one", func(o *Options) { o.UnknownRatio = 1.1 }, "UnknownRatio"},
		{"zero lost window", func(o *Options) { o.LostWindow = 0 }, "LostWindow"},
		{"zero unknown window", func(o *Options) { o.UnknownWindow = 0 }, "UnknownWindow"},
		{"relative runbook URL", func(o *Options) { o.RunbookBaseURL = "docs/runbooks" }, "RunbookBaseURL"},
		{"runbook URL without host", func(o *Options) { o.RunbookBaseURL = "https:///runbooks" }, "RunbookBaseURL"},
		{"zero budget step", func(o *Options) { o.BudgetStep = 0 }, "BudgetStep"},
		{"sub-second budget step", func(o *Options) { o.BudgetStep = 500 * time.Millisecond }, "BudgetStep"},
		{"zero forecast window", func(o *Options) { o.ForecastWindow = 0 }, "ForecastWindow"},
		{"zero idle cost window", func(o *Options) { o.IdleCostWindow = 0 }, "IdleCostWindow"},
		{"negative forecast for", func(o *Options) { o.ForecastFor = -time.Minute }, "ForecastFor"},
		{"no budget ratios", func(o *Options) { o.BudgetRatios = nil }, "BudgetRatios"},
		{"zero budget ratio", func(o *Options) { o.BudgetRatios = []float64{0, 1} }, "BudgetRatios"},
		{"repeated budget ratio", func(o *Options) { o.BudgetRatios = []float64{0.8, 0.8} }, "BudgetRatios"},
		{"ratio above one", func(o *Options) { o.BudgetRatios = []float64{1.2} }, ""},
		{"bad budget", func(o *Options) { o.Budgets = Budgets{Teams: map[string]Budget{"ml": {MonthlyEUR: -5}}} }, "teams.ml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions()
			tc.change(&o)
			err := o.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Validate: %v, want an error naming %s", err, tc.wantErr)
			}
			if _, err := Generate(o); (err != nil) != (tc.wantErr != "") {
				t.Fatalf("Generate: %v", err)
			}
		})
	}
}

// TestPromtoolTestRulesLegacyHostname runs the same promtool unit tests with the
// node label spelled `Hostname` in the input series and the expected alerts,
// against the rules `generate rules --collector.legacy-hostname-label` writes:
// they must fire and stay silent exactly as the default rules do for `hostname`.
func TestPromtoolTestRulesLegacyHostname(t *testing.T) {
	bin := promtool(t)
	opts := DefaultOptions()
	opts.LegacyHostnameLabel = true
	rules, err := Generate(opts)
	if err != nil {
		t.Fatal(err)
	}
	if hostnameWord.Match(rules) || !bytes.Contains(rules, []byte("by (Hostname")) {
		t.Fatal("legacy rules still name hostname, or never Hostname")
	}
	tests, err := os.ReadFile(unitTestFile)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "generated"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "generated", "gputally-rules.yaml"), rules, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "testdata"), 0o755); err != nil {
		t.Fatal(err)
	}
	legacyTests := filepath.Join(dir, "testdata", filepath.Base(unitTestFile))
	if err := os.WriteFile(legacyTests, LegacyHostname(tests), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "test", "rules", filepath.Base(legacyTests))
	cmd.Dir = filepath.Dir(legacyTests)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules (legacy Hostname): %v\n%s", err, out)
	}
}

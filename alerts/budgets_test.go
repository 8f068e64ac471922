package alerts

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestParseBudgets(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     Budgets
		err      string
	}{
		{"both sections", "teams:\n  ml: {monthly_eur: 1000, idle_eur_per_day: 50}\nnamespaces:\n  sandbox:\n    monthly_eur: 400\n",
			Budgets{Teams: map[string]Budget{"ml": {MonthlyEUR: 1000, IdleEURPerDay: 50}}, Namespaces: map[string]Budget{"sandbox": {MonthlyEUR: 400}}}, ""},
		{"idle limit only", "teams:\n  ml: {idle_eur_per_day: 0.5}\n", Budgets{Teams: map[string]Budget{"ml": {IdleEURPerDay: 0.5}}}, ""},
		{"unknown key", "teams:\n  ml: {monthly: 1000}\n", Budgets{}, "line 2: field monthly not found"},
		{"unknown section", "teams: {}\nteam: {}\n", Budgets{}, "line 2: field team not found"},
		{"negative", "teams:\n  ml: {monthly_eur: 10}\nnamespaces:\n  a: {monthly_eur: 1}\n  b: {monthly_eur: -1}\n", Budgets{}, "line 5: namespaces.b: monthly_eur -1"},
		{"infinite", "teams:\n  ml: {monthly_eur: .inf}\n", Budgets{}, "line 2: teams.ml"},
		{"not a number", "teams:\n  ml: {monthly_eur: .nan}\n", Budgets{}, "line 2: teams.ml"},
		{"nothing set", "teams:\n  ml: {}\n", Budgets{}, "line 2: teams.ml: sets neither"},
		{"empty name", "teams:\n  \"\": {monthly_eur: 1}\n", Budgets{}, `line 2: teams."": empty name`},
		{"empty file", "", Budgets{}, "empty file"},
		{"not a map", "teams: [ml]\n", Budgets{}, "cannot unmarshal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseBudgets([]byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !equalBudgets(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func equalBudgets(a, b Budgets) bool {
	eq := func(x, y map[string]Budget) bool {
		if len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if w, ok := y[k]; !ok || w != v {
				return false
			}
		}
		return true
	}
	return eq(a.Teams, b.Teams) && eq(a.Namespaces, b.Namespaces)
}

// TestBudgetConstantsSetOnly: a budget's constants are the amounts it sets,
// and no other. Team ml sets an idle limit only (150 EUR/day): it gets no
// monthly budget series — a budget of 0 EUR would fire its 100 % alert
// (month to date >= budget) all month. research sets a budget only (20,000
// EUR), namespace sandbox both (500 EUR, 5 EUR/day).
func TestBudgetConstantsSetOnly(t *testing.T) {
	o := DefaultOptions()
	o.Budgets = Budgets{
		Teams:      map[string]Budget{"ml": {IdleEURPerDay: 150}, "research": {MonthlyEUR: 20000}},
		Namespaces: map[string]Budget{"sandbox": {MonthlyEUR: 500, IdleEURPerDay: 5}},
	}
	f, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Record == RuleBudgetMonthly || r.Record == RuleIdleLimitDaily {
				got = append(got, fmt.Sprintf("%s %v %s", r.Record, r.Labels, r.Expr))
			}
		}
	}
	want := []string{
		RuleIdleLimitDaily + " map[team:ml] vector(150)",
		RuleBudgetMonthly + " map[team:research] vector(20000)",
		RuleBudgetMonthly + " map[namespace:sandbox] vector(500)",
		RuleIdleLimitDaily + " map[namespace:sandbox] vector(5)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("budget constants\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func FuzzParseBudgets(f *testing.F) {
	f.Add("teams:\n  ml: {monthly_eur: 1000, idle_eur_per_day: 50}\n")
	f.Add("namespaces: {a: {monthly_eur: 1e308}}\n")
	f.Add("teams: {\"\": {monthly_eur: 1}}\n")
	f.Fuzz(func(t *testing.T, in string) {
		bs, err := ParseBudgets([]byte(in))
		if err != nil {
			return
		}
		// What parses becomes rules that read back: one constant per amount
		// set, labelled with its team or namespace as written.
		o := DefaultOptions()
		o.Budgets = bs
		out, err := Generate(o)
		if err != nil {
			t.Fatalf("Generate with budgets %q: %v", in, err)
		}
		var f File
		if err := yaml.Unmarshal(out, &f); err != nil {
			t.Fatalf("generated rules do not read back: %v", err)
		}
		want := map[string]bool{}
		for section, entries := range map[string]map[string]Budget{"team": bs.Teams, "namespace": bs.Namespaces} {
			for name, b := range entries {
				if b.MonthlyEUR > 0 {
					want[RuleBudgetMonthly+" "+section+"="+name] = true
				}
				if b.IdleEURPerDay > 0 {
					want[RuleIdleLimitDaily+" "+section+"="+name] = true
				}
			}
		}
		got := map[string]bool{}
		for _, g := range f.Groups {
			for _, r := range g.Rules {
				for k, v := range r.Labels {
					if r.Record == RuleBudgetMonthly || r.Record == RuleIdleLimitDaily {
						got[r.Record+" "+k+"="+v] = true
					}
				}
			}
		}
		if len(got) != len(want) {
			t.Fatalf("budgets %+v gave constants %v", bs, got)
		}
		for k := range want {
			if !got[k] {
				t.Errorf("no constant %s", k)
			}
		}
	})
}

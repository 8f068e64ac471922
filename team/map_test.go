package team

import (
	"slices"
	"strings"
	"testing"
)

func TestParseMap(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     map[string]string
		err      string
	}{
		{"ok", "teams:\n  ml: [a, b]\n  web:\n    - c\n", map[string]string{"a": "ml", "b": "ml", "c": "web"}, ""},
		{"unknown key", "teams: {}\nteam: {}\n", nil, "line 2: field team not found"},
		{"duplicate namespace", "teams:\n  ml: [a]\n  web:\n    - a\n", nil, `line 4: namespace "a" is listed under both "ml" and "web"`},
		{"empty namespace", "teams:\n  ml: [\"\"]\n", nil, "empty namespace"},
		{"empty file", "", nil, "empty file"},
		{"not a map", "teams: [a]\n", nil, "cannot unmarshal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseMap([]byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for ns, team := range tc.want {
				if got, ok := m.Team(ns); !ok || got != team {
					t.Errorf("team of %s = %q, %v; want %q", ns, got, ok, team)
				}
			}
			if _, ok := m.Team("elsewhere"); ok {
				t.Error("an unlisted namespace has a team")
			}
		})
	}
}

func FuzzParseMap(f *testing.F) {
	f.Add("teams:\n  ml: [a, b]\n")
	f.Add("teams: {x: [y]}\n")
	f.Add("teams:\n  a: [x]\n  b: [x]\n")
	f.Fuzz(func(t *testing.T, in string) {
		m, err := ParseMap([]byte(in))
		if err != nil {
			return
		}
		for ns, team := range m.byNamespace {
			if ns == "" || team == "" {
				t.Errorf("empty name in %q → %q", ns, team)
			}
		}
	})
}

func TestNamespacesSorted(t *testing.T) {
	m, err := ParseMap([]byte("teams:\n  web: [zeta, alpha]\n  ml: [mid]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.Namespaces(), []string{"alpha", "mid", "zeta"}; !slices.Equal(got, want) {
		t.Errorf("Namespaces() = %v, want %v", got, want)
	}
	if got := (Map{}).Namespaces(); len(got) != 0 {
		t.Errorf("zero Map: Namespaces() = %v, want none", got)
	}
}

// TestKubePodLabel holds the label names to kube-state-metrics' own: "label_"
// and the key with each rune outside [a-zA-Z0-9_] made "_" (a leading digit
// stays, the prefix already makes the name valid).
func TestKubePodLabel(t *testing.T) {
	for key, want := range map[string]string{
		"team":                   "label_team",
		"app.kubernetes.io/team": "label_app_kubernetes_io_team",
		"cost-center":            "label_cost_center",
		"Team_2":                 "label_Team_2",
		"1team":                  "label_1team",
		"é":                      "label__",
	} {
		if got := KubePodLabel(key); got != want {
			t.Errorf("KubePodLabel(%q) = %q, want %q", key, got, want)
		}
	}
}

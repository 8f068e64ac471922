package source

import (
	"strings"
	"testing"
)

func TestParseTeamMap(t *testing.T) {
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
			m, err := ParseTeamMap([]byte(tc.in))
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

func FuzzParseTeamMap(f *testing.F) {
	f.Add("teams:\n  ml: [a, b]\n")
	f.Add("teams: {x: [y]}\n")
	f.Add("teams:\n  a: [x]\n  b: [x]\n")
	f.Fuzz(func(t *testing.T, in string) {
		m, err := ParseTeamMap([]byte(in))
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

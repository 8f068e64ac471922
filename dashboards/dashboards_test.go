package dashboards

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/gputally/gputally/dcgmnames"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/units"
)

var update = flag.Bool("update", false, "rewrite dashboards/generated/*.json from the code")

const (
	generatedDir   = "generated"
	generatedDir48 = "generated/4.8" // for --collector.dcgm-exporter-names=4.8
)

// TestGeneratedFilesAreCurrent: the committed dashboards are what WriteJSON
// writes, reading 4.10's names in generated/ and 4.8's in generated/4.8/.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	for dir, names := range map[string]dcgmnames.Reads{generatedDir: dcgmnames.ReadsCurrent, generatedDir48: dcgmnames.ReadsLegacy} {
		if *update {
			if err := WriteJSON(dir, false, names); err != nil {
				t.Fatal(err)
			}
		}
		all, err := All(names)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, d := range all {
			name := d.Name + ".json"
			want = append(want, name)
			b, err := Marshal(d.Model)
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Errorf("%v (run `go generate ./dashboards`)", err)
				continue
			}
			if !bytes.Equal(got, b) {
				t.Errorf("%s/%s differs from what the code generates; run `go generate ./dashboards`", dir, name)
			}
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var have []string
		for _, e := range entries {
			if !e.IsDir() {
				have = append(have, e.Name())
			}
		}
		sort.Strings(want)
		if !slices.Equal(have, want) {
			t.Errorf("%s holds %v, the code generates %v", dir, have, want)
		}
	}
}

// TestRoundTrip decodes every dashboard's JSON with the SDK's decoder (panels
// and queries through its plugin registry) and compares the result with the
// model the code builds.
func TestRoundTrip(t *testing.T) {
	plugins.RegisterDefaultPlugins()
	all, err := All(dcgmnames.ReadsCurrent)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range all {
		t.Run(d.Name, func(t *testing.T) {
			raw, err := Marshal(d.Model)
			if err != nil {
				t.Fatal(err)
			}
			var decoded dashboard.Dashboard
			if err := json.Unmarshal(raw, &decoded); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !decoded.Equals(d.Model) {
				t.Error("decoded dashboard differs from the built one")
			}
			again, err := Marshal(decoded)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again, raw) {
				t.Error("re-encoding the decoded dashboard changes its JSON")
			}
			if got := Queries([]Dashboard{{Name: d.Name, Model: decoded}}); len(got) != len(Queries([]Dashboard{d})) {
				t.Errorf("decoded dashboard has %d queries, built one %d", len(got), len(Queries([]Dashboard{d})))
			}
		})
	}
}

func TestVariablesPanelsAndUnits(t *testing.T) {
	all, err := All(dcgmnames.ReadsCurrent)
	if err != nil {
		t.Fatal(err)
	}
	wantVars := map[string][]string{
		"fleet-overview": {"datasource", "hostname", "modelName"},
		"cost-and-idle":  {"datasource", "hostname", "modelName", "namespace"},
		"node-gpu":       {"datasource", "hostname", "modelName"},
		"namespace-pod":  {"datasource", "hostname", "modelName", "namespace"},
	}
	unitsSeen := map[string]bool{}
	uids := map[string]bool{}
	for _, d := range all {
		t.Run(d.Name, func(t *testing.T) {
			uid := deref(d.Model.Uid)
			if uid == "" || uids[uid] {
				t.Errorf("uid %q empty or repeated", uid)
			}
			uids[uid] = true
			var vars []string
			for _, v := range d.Model.Templating.List {
				vars = append(vars, v.Name)
				if v.Type == dashboard.VariableTypeQuery && (v.AllValue == nil || *v.AllValue != ".*") {
					t.Errorf("variable %s: All value %v, want .* (panels filter with =~)", v.Name, v.AllValue)
				}
			}
			if w, ok := wantVars[d.Name]; !ok || !slices.Equal(vars, w) {
				t.Errorf("variables %v, want %v", vars, w)
			}
			panels := 0
			for _, p := range d.Model.Panels {
				if p.Panel == nil {
					continue
				}
				panels++
				title := deref(p.Panel.Title)
				if p.Panel.Datasource == nil || deref(p.Panel.Datasource.Uid) != "${datasource}" {
					t.Errorf("panel %q: datasource %+v, want ${datasource}", title, p.Panel.Datasource)
				}
				if len(p.Panel.Targets) == 0 {
					t.Errorf("panel %q: no queries", title)
				}
				if p.Panel.FieldConfig == nil || deref(p.Panel.FieldConfig.Defaults.Unit) == "" {
					t.Errorf("panel %q: no unit", title)
					continue
				}
				unitsSeen[*p.Panel.FieldConfig.Defaults.Unit] = true
			}
			if panels < 6 {
				t.Errorf("%d panels, want at least 6", panels)
			}
		})
	}
	for _, u := range []string{units.PercentUnit, units.BytesIEC, units.Celsius, units.Watt, units.Euro} {
		if !unitsSeen[u] {
			t.Errorf("no panel uses unit %s", u)
		}
	}
}

func TestExpandVariables(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`x{hostname=~"$hostname"}`, `x{hostname=~".*"}`},
		{`x{a=~"${namespace}", b=~"${modelName:regex}"}`, `x{a=~".*", b=~".*"}`},
		{`rate(x[$__rate_interval])`, `rate(x[2m])`},
		{`increase(x[$__range]) / $__interval`, `increase(x[2m]) / 2m`},
		{`no variables`, `no variables`},
	} {
		if got := ExpandVariables(tc.in, "2m"); got != tc.want {
			t.Errorf("ExpandVariables(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestQueriesIncludeVariablesAndMIGFallback(t *testing.T) {
	all, err := All(dcgmnames.ReadsCurrent)
	if err != nil {
		t.Fatal(err)
	}
	qs := Queries(all)
	var variable, fallback bool
	for _, q := range qs {
		if q.Panel == "$hostname" && q.Expr == "gputally_gpu_info" {
			variable = true
		}
		if q.Dashboard == "node-gpu" && q.Panel == "Activity" &&
			bytes.Contains([]byte(q.Expr), []byte("DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO")) &&
			bytes.Contains([]byte(q.Expr), []byte("\nor\nDCGM_FI_DEV_GPU_UTIL_RATIO")) {
			fallback = true
		}
	}
	if !variable {
		t.Error("Queries lacks the $hostname variable's selector")
	}
	if !fallback {
		t.Error("node-gpu Activity does not fall back from GR_ENGINE_ACTIVE to GPU_UTIL")
	}
	if _, err := json.Marshal(qs); err != nil {
		t.Fatal(err)
	}
}

// TestLegacyHostnameDashboards: `generate dashboards
// --collector.legacy-hostname-label` writes the committed dashboards with the
// node label, its variable and legends spelled `Hostname`, and nothing else
// changed: the default dashboards use the word hostname for the label only.
func TestLegacyHostnameDashboards(t *testing.T) {
	dir := t.TempDir()
	if err := WriteJSON(dir, true, dcgmnames.ReadsCurrent); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(generatedDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		def, err := os.ReadFile(filepath.Join(generatedDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		legacy, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(def, []byte("Hostname")) {
			t.Errorf("%s: the default dashboard names Hostname", e.Name())
		}
		n := bytes.Count(def, []byte("hostname"))
		if n == 0 || bytes.Count(legacy, []byte("Hostname")) != n || bytes.Contains(legacy, []byte("hostname")) {
			t.Errorf("%s: %d hostname in the default, the legacy one has %d Hostname and %d hostname",
				e.Name(), n, bytes.Count(legacy, []byte("Hostname")), bytes.Count(legacy, []byte("hostname")))
		}
		if !bytes.Equal(bytes.ReplaceAll(legacy, []byte("Hostname"), []byte("hostname")), def) {
			t.Errorf("%s: the legacy dashboard differs in more than the label", e.Name())
		}
	}
}

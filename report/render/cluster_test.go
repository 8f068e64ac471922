package render

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/report/advice"
	"github.com/gputally/gputally/report/analysis"
)

// clusterReport has node n1 in clusters east and west, a drain of west's,
// and east's and west's configurations apart.
func clusterReport() *Report {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	return &Report{Start: start, End: start.Add(24 * time.Hour), Step: "1h", Clusters: []string{"east", "west"},
		Nodes:           []analysis.Group{{Name: "n1", Cluster: "east", Totals: analysis.Totals{CostEUR: 30}}, {Name: "n1", Cluster: "west", Totals: analysis.Totals{CostEUR: 20}}},
		Recommendations: []advice.Recommendation{{Kind: "drain", Cluster: "west", Target: "n1", Nodes: []string{"n1"}, FreedEURPerMonth: 600}},
		Apply: advice.Apply{Clusters: []advice.Apply{
			{Cluster: "east", Kueue: "kind: ClusterQueue # east\n"},
			{Cluster: "west", Kueue: "kind: ClusterQueue # west\n"},
		}},
	}
}

// TestClustersRendered: Markdown names each node and the drain with its
// cluster and gives each cluster's configuration under its own heading; the
// CSV's cluster column (after the figures, before the follow-up's) holds it.
func TestClustersRendered(t *testing.T) {
	r := clusterReport()
	var md bytes.Buffer
	if err := Render(&md, r, FormatMarkdown); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| east/n1 |", "| west/n1 |", "| west: n1 | west/n1 |",
		"### Cluster east\n\n#### Kueue", "kind: ClusterQueue # east", "### Cluster west\n\n#### Kueue"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md.String())
		}
	}
	var out bytes.Buffer
	if err := Render(&out, r, FormatCSV); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&out).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, row := range rows[1:] {
		if row[0] == "node" || row[0] == "recommendation" {
			got[row[0]+" "+row[1]+" "+row[csvEvidence]] += row[csvCluster] + ";"
		}
	}
	if rows[0][csvCluster] != "cluster" || got["node n1 "] != "east;west;" || got["recommendation n1 "] != "west;" {
		t.Errorf("CSV header %q, clusters %v", rows[0][csvCluster], got)
	}
}

// TestWriteApplyPerCluster: each cluster's configuration goes into a
// directory of its own, none at the top; two clusters that would share a
// directory are an error, not one overwriting the other.
func TestWriteApplyPerCluster(t *testing.T) {
	dir := t.TempDir()
	if err := advice.WriteApply(dir, &clusterReport().Apply); err != nil {
		t.Fatal(err)
	}
	for c, want := range map[string]string{"east": "# east", "west": "# west"} {
		b, err := os.ReadFile(filepath.Join(dir, c, advice.ApplyKueueFile))
		if err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s/%s: %q, %v", c, advice.ApplyKueueFile, b, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, advice.ApplyKueueFile)); err == nil {
		t.Error("a Kueue file for both clusters at the top")
	}
	clash := advice.Apply{Clusters: []advice.Apply{{Cluster: "Prod", Kueue: "a\n"}, {Cluster: "prod", Kueue: "b\n"}}}
	if err := advice.WriteApply(t.TempDir(), &clash); err == nil || !strings.Contains(err.Error(), `"Prod" and "prod"`) {
		t.Errorf("clusters Prod and prod: error %v, want one naming both", err)
	}
}

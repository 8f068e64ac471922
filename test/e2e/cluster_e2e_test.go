//go:build e2e

package e2e

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// clusterReport is what TestClustersInOneEngine reads of a JSON report.
type clusterReport struct {
	GPUs     int      `json:"gpus"`
	Clusters []string `json:"clusters"`
	Fleet    struct {
		Totals struct {
			CostEUR float64 `json:"cost_eur"`
		} `json:"totals"`
	} `json:"fleet"`
	Nodes []struct {
		Name    string `json:"name"`
		Cluster string `json:"cluster"`
		Totals  struct {
			CostEUR float64 `json:"cost_eur"`
		} `json:"totals"`
	} `json:"nodes"`
	Holdings []struct {
		Cluster string `json:"cluster"`
	} `json:"holdings"`
	Recommendations []struct {
		Kind                   string  `json:"kind"`
		Cluster                string  `json:"cluster"`
		Target                 string  `json:"target"`
		FreedEURPerMonth       float64 `json:"freed_eur_per_month"`
		ReclaimableEURPerMonth float64 `json:"reclaimable_eur_per_month"`
	} `json:"recommendations"`
	FreedEURPerMonth       float64 `json:"freed_eur_per_month"`
	ReclaimableEURPerMonth float64 `json:"reclaimable_eur_per_month"`
	Apply                  struct {
		MIGParted string `json:"mig_parted"`
		Clusters  []struct {
			Cluster   string `json:"cluster"`
			MIGParted string `json:"mig_parted"`
		} `json:"clusters"`
	} `json:"apply"`
}

// TestClustersInOneEngine: two clusters' histories in one Prometheus, each
// series with its cluster's external label, as a Thanos over both delivers
// them. East runs mig-advice-reconfigured.yaml (3 GPUs, MIG advice for GPU 1
// of mig-advice-node); west runs short-jobs.yaml (5 GPUs) on a node of the
// same name, and its first GPU has the UUID of east's MIG GPU. The report
// counts 8 GPUs in two clusters, one mig-advice-node per cluster at its own
// ledger's EUR, and writes east's mig-parted config into its own directory,
// naming no west GPU. Without the cluster label (the failure it prevents)
// the two nodes and the shared UUID merge: one node at both ledgers' EUR and
// 7 GPUs.
func TestClustersInOneEngine(t *testing.T) {
	east := filepath.Join("..", "..", "report", "testdata", "scenarios", "mig-advice-reconfigured.yaml")
	needScenario(t, east)
	needScenario(t, shortJobsScenario)
	prometheus := promLookPath(t, "prometheus")
	promtool := promLookPath(t, "promtool")
	gputally := promBuildGputally(t)
	dir := t.TempDir()
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	ledger := map[string]float64{}
	var files []string
	for _, c := range []struct {
		name, scenario string
		replace        []string
	}{
		{"east", east, nil},
		{"west", shortJobsScenario, []string{`hostname="jobs-node"`, `hostname="mig-advice-node"`,
			"GPU-18899535-79a4-4529-877d-a6842c1224cc", "GPU-b2a7d182-9071-47d4-b85f-bb772cfe4c19"}},
	} {
		om, summary := filepath.Join(dir, c.name+".om"), filepath.Join(dir, c.name+".json")
		runTool(t, gputally, "simulate", "history", "--scenario="+c.scenario, "--duration=24h", "--scrape-interval=30s",
			"--start="+start.Format(time.RFC3339), "--out="+om, "--summary="+summary)
		var sum reportSummary
		readJSON(t, summary, &sum)
		ledger[c.name] = sum.totalEUR()
		labelled := filepath.Join(dir, c.name+"-labelled.om")
		withLabel(t, om, labelled, `cluster="`+c.name+`"`, c.replace...)
		files = append(files, labelled)
	}
	prom := promBackfilledFiles(t, promtool, prometheus, dir, files...)
	report := func(name string, extra ...string) clusterReport {
		out := filepath.Join(dir, name+".json")
		runTool(t, gputally, append([]string{"report", "--prometheus.url=" + prom, "--range=24h",
			"--end=" + start.Add(24*time.Hour).Format(time.RFC3339), "--allow-partial", "--format=json", "--out=" + out}, extra...)...)
		var r clusterReport
		readJSON(t, out, &r)
		return r
	}
	near := func(got, want float64) bool { return math.Abs(got-want) <= 1e-3*want }

	apply := filepath.Join(dir, "apply")
	r := report("clusters", "--apply-dir="+apply)
	if r.GPUs != 8 || !slices.Equal(r.Clusters, []string{"east", "west"}) {
		t.Errorf("%d GPUs in clusters %q, want 8 in east and west", r.GPUs, r.Clusters)
	}
	if total := ledger["east"] + ledger["west"]; !near(r.Fleet.Totals.CostEUR, total) {
		t.Errorf("fleet %.4f EUR, the two ledgers %.4f", r.Fleet.Totals.CostEUR, total)
	}
	seen := map[string]float64{}
	for _, n := range r.Nodes {
		if n.Name != "mig-advice-node" {
			t.Errorf("node %q in cluster %q: both clusters' node is mig-advice-node", n.Name, n.Cluster)
		}
		seen[n.Cluster] = n.Totals.CostEUR
	}
	for c, want := range ledger {
		if !near(seen[c], want) {
			t.Errorf("mig-advice-node in cluster %s: %.4f EUR, its ledger %.4f (nodes %+v)", c, seen[c], want, r.Nodes)
		}
	}
	held := map[string]int{}
	for _, h := range r.Holdings {
		held[h.Cluster]++
	}
	if held["east"] == 0 || held["west"] == 0 || len(held) != 2 {
		t.Errorf("holdings per cluster %v", held)
	}
	var mig []string
	freed, reclaimable := 0.0, 0.0
	for _, rec := range r.Recommendations {
		if rec.Cluster != "east" && rec.Cluster != "west" {
			t.Errorf("recommendation %+v names no cluster", rec)
		}
		if rec.Kind == "mig" {
			mig = append(mig, rec.Cluster)
		}
		freed += rec.FreedEURPerMonth
		reclaimable += rec.ReclaimableEURPerMonth
	}
	if math.Abs(freed-r.FreedEURPerMonth) > 1e-6 || math.Abs(reclaimable-r.ReclaimableEURPerMonth) > 1e-6 || reclaimable <= 0 {
		t.Errorf("headline %.4f EUR/month freed and %.4f reclaimable, the recommendations %.4f and %.4f",
			r.FreedEURPerMonth, r.ReclaimableEURPerMonth, freed, reclaimable)
	}
	if !slices.Equal(mig, []string{"east"}) {
		t.Errorf("MIG advice in clusters %q, want east alone", mig)
	}
	if r.Apply.MIGParted != "" || len(r.Apply.Clusters) == 0 || r.Apply.Clusters[0].Cluster != "east" {
		t.Fatalf("apply: a config for the whole fleet, or none for east: %+v", r.Apply)
	}
	config := migPartedLayouts(t, r.Apply.Clusters[0].MIGParted)["gputally-mig-advice-node"]
	if len(config) != 3 || config[1] == nil {
		t.Errorf("east's mig-parted config %v: want its 3 GPUs, GPU 1 with MIG:\n%s", config, r.Apply.Clusters[0].MIGParted)
	}
	b, err := os.ReadFile(filepath.Join(apply, "east", "mig-parted.yaml"))
	if err != nil || string(b) != r.Apply.Clusters[0].MIGParted {
		t.Errorf("--apply-dir: east/mig-parted.yaml is not east's config (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(apply, "mig-parted.yaml")); err == nil {
		t.Error("--apply-dir wrote a mig-parted.yaml for both clusters together")
	}

	merged := report("merged", "--report.cluster-label=")
	if merged.GPUs != 7 || len(merged.Nodes) != 1 || !near(merged.Nodes[0].Totals.CostEUR, ledger["east"]+ledger["west"]) {
		t.Errorf("without the cluster label: %d GPUs, nodes %+v; want the failure it prevents, 7 GPUs on one node", merged.GPUs, merged.Nodes)
	}
}

// TestDCGMExporterSourceInClusters: the dcgm-exporter source over two
// clusters in one Prometheus, every series (dcgm-exporter's and
// kube-state-metrics') with its cluster's label: east runs shared-node.yaml
// (a time-sliced GPU, its pods' phases and requests joined per cluster),
// west short-jobs.yaml on the same day. Each cluster's part of the report
// holds to its own ledger as the single-cluster test holds it.
func TestDCGMExporterSourceInClusters(t *testing.T) {
	scenarios := filepath.Join("..", "..", "testdata", "scenarios")
	prometheus := promLookPath(t, "prometheus")
	promtool := promLookPath(t, "promtool")
	gputally := promBuildGputally(t)
	dir := t.TempDir()
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	summaries := map[string]reportSummary{}
	runs := map[string]string{"east": "shared-node", "west": "short-jobs"}
	var files []string
	for cluster, name := range runs {
		scenario := filepath.Join(scenarios, name+".yaml")
		needScenario(t, scenario)
		om, sum := filepath.Join(dir, cluster+".om"), filepath.Join(dir, cluster+".summary.json")
		runTool(t, gputally, "simulate", "history", "--scenario", scenario, "--duration=24h",
			"--start", start.Format(time.RFC3339), "--flavor", "dcgm-exporter", "--out", om, "--summary", sum)
		var s reportSummary
		readJSON(t, sum, &s)
		summaries[cluster] = s
		labelled := filepath.Join(dir, cluster+"-labelled.om")
		withLabel(t, filterOpenMetrics(t, om, dcgmFamilies), labelled, `cluster="`+cluster+`"`)
		files = append(files, labelled)
	}
	prom := promBackfilledFiles(t, promtool, prometheus, dir, files...)
	out := filepath.Join(dir, "report.json")
	runTool(t, gputally, "report", "--prometheus.url="+prom, "--range=24h", "--end="+start.Add(24*time.Hour).Format(time.RFC3339),
		"--allow-partial", "--format=json", "--out="+out, "--source=dcgm-exporter")
	var r dcgmReport
	readJSON(t, out, &r)
	for cluster, name := range runs {
		t.Run(cluster, func(t *testing.T) { checkDCGMRun(t, name, inCluster(r, cluster), summaries[cluster]) })
	}
}

// inCluster is the part of report r in cluster c: its nodes and holdings,
// the fleet's totals those of its nodes.
func inCluster(r dcgmReport, c string) dcgmReport {
	out := r
	out.Nodes, out.Holdings, out.Fleet.Totals = nil, nil, stateTotals{}
	for _, n := range r.Nodes {
		if n.Cluster == c {
			out.Nodes = append(out.Nodes, n)
			out.Fleet.Totals.add(n.Totals)
		}
	}
	for _, h := range r.Holdings {
		if h.Cluster == c {
			out.Holdings = append(out.Holdings, h)
		}
	}
	return out
}

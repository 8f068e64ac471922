//go:build e2e

package e2e

import (
	"bufio"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// dcgmRun is one simulated history of the dcgm-exporter source's e2e test:
// a scenario (or a fleet directory) over its own days, so that one engine
// holds them all apart.
type dcgmRun struct {
	name, scenario string
	start          time.Time
	duration       time.Duration
}

func (r dcgmRun) end() time.Time { return r.start.Add(r.duration) }

// dcgmReport is the part of the JSON report this test reads.
type dcgmReport struct {
	Kind     string   `json:"kind"`
	Sampling string   `json:"sampling"`
	Warnings []string `json:"warnings"`
	Fleet    struct {
		Totals stateTotals `json:"totals"`
	} `json:"fleet"`
	Nodes []struct {
		Name    string      `json:"name"`
		Cluster string      `json:"cluster"`
		Kind    string      `json:"kind"`
		Totals  stateTotals `json:"totals"`
	} `json:"nodes"`
	Namespaces []struct {
		Name   string      `json:"name"`
		Kind   string      `json:"kind"`
		Totals stateTotals `json:"totals"`
	} `json:"namespaces"`
	Holdings []struct {
		Namespace string      `json:"namespace"`
		Pod       string      `json:"pod"`
		Cluster   string      `json:"cluster"`
		Node      string      `json:"node"`
		UUID      string      `json:"uuid"`
		MIGID     string      `json:"mig_instance"`
		Kind      string      `json:"kind"`
		Totals    stateTotals `json:"totals"`
	} `json:"holdings"`
	Recommendations []struct {
		Kind        string  `json:"kind"`
		Target      string  `json:"target"`
		Freed       float64 `json:"freed_eur_per_month"`
		Reclaimable float64 `json:"reclaimable_eur_per_month"`
	} `json:"recommendations"`
}

// dcgmStates are the ledger's states, in its order.
var dcgmStates = []string{"busy", "idle", "unallocated", "lost", "unknown"}

// dcgmFamilies are the families the reports read; the test backfills only
// these of the written histories, a quarter of their size.
var dcgmFamilies = []string{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED",
	"DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_XID_ERRORS", "kube_", "gputally_"}

// TestDCGMExporterSourceAgainstPrometheusAndVictoriaMetrics simulates the
// scenarios of issue 23 in dcgm-exporter's form (simulate history
// --flavor=dcgm-exporter: dcgm-exporter's label sets, kube-state-metrics'
// series, no gputally_* series) — the demo fleet (exclusive, MIG and
// unallocated GPUs, a node to drain), short jobs with MIG instances, a
// time-sliced node, a GPU that falls off the bus, a scrape gap — backfills
// them into a real Prometheus and imports them into a real VictoriaMetrics,
// runs `report --source=dcgm-exporter` on each and holds it to the ledger's
// own totals of the same run (--summary): exclusive long-lived holdings, MIG
// instances, unallocated and lost GPUs within 1 %; a time-sliced GPU's total
// within 1 %, its split marked allocation share; jobs shorter than two
// scrape intervals reported with the grid's resolution stated; the fleet's
// advice the same as the ledger source's on the same simulated day; and
// VictoriaMetrics' figures equal to Prometheus' within 0.1 %.
func TestDCGMExporterSourceAgainstPrometheusAndVictoriaMetrics(t *testing.T) {
	scenarios := filepath.Join("..", "..", "testdata", "scenarios")
	for _, s := range []string{"short-jobs.yaml", "shared-node.yaml", "faults.yaml", "scrape-gap.yaml", "fleet"} {
		needScenario(t, filepath.Join(scenarios, s))
	}
	prometheus := promLookPath(t, "prometheus")
	promtool := promLookPath(t, "promtool")
	victoria := promLookPath(t, "victoria-metrics")
	gputally := promBuildGputally(t)
	dir := t.TempDir()
	began := time.Now()

	// A day without data between two runs: a run's first sample at another
	// one's end would be that range's last grid point.
	day := func(d int) time.Time { return time.Date(2026, 1, 5+d, 0, 0, 0, 0, time.UTC) }
	runs := []dcgmRun{
		{"fleet", filepath.Join(scenarios, "fleet"), day(0), 24 * time.Hour},
		{"short-jobs", filepath.Join(scenarios, "short-jobs.yaml"), day(2), 24 * time.Hour},
		{"shared-node", filepath.Join(scenarios, "shared-node.yaml"), day(4), 24 * time.Hour},
		// The GPU falls off the bus at 26 h.
		{"faults", filepath.Join(scenarios, "faults.yaml"), day(9), 36 * time.Hour},
		{"scrape-gap", filepath.Join(scenarios, "scrape-gap.yaml"), day(12), 24 * time.Hour},
	}
	summaries := map[string]reportSummary{}
	var dcgmFiles []string
	for _, r := range runs {
		om, sum := filepath.Join(dir, r.name+".om"), filepath.Join(dir, r.name+".summary.json")
		runTool(t, gputally, "simulate", "history", "--scenario", r.scenario, "--duration", r.duration.String(),
			"--start", r.start.Format(time.RFC3339), "--flavor", "dcgm-exporter", "--out", om, "--summary", sum)
		var s reportSummary
		readJSON(t, sum, &s)
		summaries[r.name] = s
		dcgmFiles = append(dcgmFiles, filterOpenMetrics(t, om, dcgmFamilies))
	}
	// The fleet's day once more, a week later (the same weekday), in
	// gputally's own form: the ledger source's advice on the same simulated
	// day.
	ledgerDay := day(7)
	ledgerOM := filepath.Join(dir, "fleet-ledger.om")
	runTool(t, gputally, "simulate", "history", "--scenario", runs[0].scenario, "--duration", "24h",
		"--start", ledgerDay.Format(time.RFC3339), "--out", ledgerOM)
	ledgerOM = filterOpenMetrics(t, ledgerOM, dcgmFamilies)
	simulated := time.Since(began)

	report := func(t *testing.T, base, name string, end time.Time, rng time.Duration, args ...string) dcgmReport {
		t.Helper()
		out := filepath.Join(dir, name+".json")
		runTool(t, gputally, append([]string{"report", "--prometheus.url=" + base, "--range=" + rng.String(), "--end=" + end.Format(time.RFC3339),
			"--allow-partial", "--format=json", "--out=" + out, "--query.timeout=10m"}, args...)...)
		var r dcgmReport
		readJSON(t, out, &r)
		return r
	}

	prom := promBackfilledFiles(t, promtool, prometheus, dir, append(slices.Clone(dcgmFiles), ledgerOM)...)
	backfilled := time.Since(began)
	fromProm := map[string]dcgmReport{}
	for _, r := range runs {
		rep := report(t, prom, "prometheus-"+r.name, r.end(), r.duration, "--source=dcgm-exporter")
		fromProm[r.name] = rep
		t.Run("prometheus/"+r.name, func(t *testing.T) { checkDCGMRun(t, r.name, rep, summaries[r.name]) })
	}
	// The advice on the fleet's day against the ledger source's.
	exact := report(t, prom, "prometheus-fleet-ledger", ledgerDay.Add(24*time.Hour), 24*time.Hour)
	t.Run("prometheus/fleet-advice", func(t *testing.T) { checkSameAdvice(t, fromProm["fleet"], exact) })

	vm := vmStarted(t, victoria, dir)
	for _, f := range dcgmFiles {
		vmImport(t, vm, f)
	}
	for _, r := range runs {
		rep := report(t, vm, "victoria-metrics-"+r.name, r.end(), r.duration, "--source=dcgm-exporter")
		t.Run("victoria-metrics/"+r.name, func(t *testing.T) {
			checkDCGMRun(t, r.name, rep, summaries[r.name])
			checkSameFigures(t, rep, fromProm[r.name])
		})
	}
	t.Logf("runtime: simulate and filter %s, backfill and first Prometheus report %s, all %s",
		simulated.Round(time.Second), backfilled.Round(time.Second), time.Since(began).Round(time.Second))
}

// filterOpenMetrics writes the families of the OpenMetrics file path whose
// names begin with one of prefixes to path.f.om, and returns its path.
func filterOpenMetrics(t *testing.T, path string, prefixes []string) string {
	t.Helper()
	in, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	outPath := strings.TrimSuffix(path, ".om") + ".f.om"
	out, err := os.Create(outPath)
	if err != nil {
		t.Fatal(err)
	}
	keep := func(name string) bool {
		return slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(name, p) })
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	w := bufio.NewWriterSize(out, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name := line
		if strings.HasPrefix(line, "# TYPE ") {
			name = strings.Fields(line)[2]
		} else if i := strings.IndexAny(line, "{ "); i >= 0 && line[0] != '#' {
			name = line[:i]
		}
		if line == "# EOF" || keep(name) {
			w.WriteString(line)
			w.WriteByte('\n')
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	os.Remove(path)
	return outPath
}

// dcgmLedger is the ledger's truth of one run: EUR by namespace and state,
// by namespace/pod, by GPU UUID, and each namespace's devices.
type dcgmLedger struct {
	ns    map[string]map[string]float64 // namespace → state → EUR; "" no holder
	pods  map[string]float64            // namespace/pod → EUR
	secs  map[string]float64            // namespace/pod → seconds held on whole GPUs
	gpus  map[string]float64            // UUID → EUR
	total float64
}

func ledgerOf(s reportSummary) dcgmLedger {
	l := dcgmLedger{ns: map[string]map[string]float64{}, pods: map[string]float64{}, secs: map[string]float64{}, gpus: map[string]float64{}}
	for _, x := range s.Series {
		if l.ns[x.Namespace] == nil {
			l.ns[x.Namespace] = map[string]float64{}
		}
		l.ns[x.Namespace][x.State] += x.EUR
		l.gpus[x.GPU] += x.EUR
		l.total += x.EUR
		if x.Namespace != "" {
			l.pods[x.Namespace+"/"+x.Pod] += x.EUR
			if x.Device == x.GPU {
				l.secs[x.Namespace+"/"+x.Pod] += x.Seconds
			}
		}
	}
	return l
}

func sumEUR(m map[string]float64) float64 {
	s := 0.0
	for _, v := range m {
		s += v
	}
	return s
}

// relDiff is (got − want) ÷ want, 0 when both are 0.
func relDiff(got, want float64) float64 {
	if want == 0 {
		if got == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return (got - want) / want
}

// checkDCGMRun holds one run's dcgm-exporter report to the ledger's totals.
func checkDCGMRun(t *testing.T, name string, r dcgmReport, s reportSummary) {
	l := ledgerOf(s)
	if !strings.Contains(r.Kind, "sampled") {
		t.Errorf("headline figures %q, want sampled", r.Kind)
	}
	if !strings.Contains(r.Sampling, "30s grid") || !strings.Contains(r.Sampling, "shorter than two grid steps (1m0s)") {
		t.Errorf("no statement of the grid's resolution: %q", r.Sampling)
	}
	// The report's EUR by namespace and state; "" is what no holder had.
	got := map[string]map[string]float64{"": r.Fleet.Totals.byState()}
	shared := map[string]bool{} // namespaces with allocation-share holdings
	short := map[string]bool{}  // namespaces with pods held less than two scrape intervals
	for _, h := range r.Holdings {
		if got[h.Namespace] == nil {
			got[h.Namespace] = map[string]float64{}
		}
		for st, v := range h.Totals.byState() {
			got[h.Namespace][st] += v
			got[""][st] -= v
		}
		if h.Kind == "allocation share" {
			shared[h.Namespace] = true
		}
	}
	// A namespace of short jobs: more than 1 % of its EUR is pods held less
	// than two scrape intervals (not one job cut by the range's end).
	shortEUR := map[string]float64{}
	for pod, secs := range l.secs {
		if secs > 0 && secs < 60 {
			shortEUR[strings.SplitN(pod, "/", 2)[0]] += l.pods[pod]
		}
	}
	for ns, v := range shortEUR {
		short[ns] = v > 0.01*sumEUR(l.ns[ns])
	}
	t.Logf("%s: fleet %.4f EUR, ledger %.4f EUR (%+.3f %%)", name, r.Fleet.Totals.CostEUR, l.total, 100*relDiff(r.Fleet.Totals.CostEUR, l.total))
	if math.Abs(relDiff(r.Fleet.Totals.CostEUR, l.total)) > 0.01 {
		t.Errorf("fleet %.4f EUR, ledger %.4f EUR: more than 1 %% apart", r.Fleet.Totals.CostEUR, l.total)
	}
	for _, ns := range slices.Sorted(maps.Keys(l.ns)) {
		want, have := l.ns[ns], got[ns]
		var line []string
		for _, st := range dcgmStates {
			if want[st] != 0 || have[st] != 0 {
				line = append(line, fmt.Sprintf("%s %.4f/%.4f (%+.2f %%)", st, have[st], want[st], 100*relDiff(have[st], want[st])))
			}
		}
		what := "exclusive or MIG, sampled"
		switch {
		case shared[ns]:
			what = "allocation share"
		case short[ns]:
			what = "jobs shorter than two scrape intervals"
		case ns == "":
			what = "no holder"
		}
		t.Logf("%s: namespace %q (%s): report/ledger EUR %s", name, ns, what, strings.Join(line, ", "))
		if sumEUR(want) > 0 && sumEUR(have) == 0 {
			t.Errorf("namespace %q: %.4f EUR in the ledger, none in the report", ns, sumEUR(want))
			continue
		}
		if shared[ns] || short[ns] || ns == "" && len(shared) > 0 {
			continue // the checks of time-sliced GPUs and short jobs follow
		}
		if name == "scrape-gap" {
			// No sample in the gap: its two hours are unknown here, where the
			// ledger's counters carried them on as busy and idle.
			continue
		}
		// Each state within 1 % of the namespace's EUR, and the total within 1 %.
		if math.Abs(relDiff(sumEUR(have), sumEUR(want))) > 0.01 {
			t.Errorf("namespace %q: %.4f EUR, ledger %.4f EUR: more than 1 %% apart", ns, sumEUR(have), sumEUR(want))
		}
		for _, st := range dcgmStates {
			if math.Abs(have[st]-want[st]) > 0.01*sumEUR(want) {
				t.Errorf("namespace %q %s: %.4f EUR, ledger %.4f EUR: apart by more than 1 %% of the namespace's %.4f EUR", ns, st, have[st], want[st], sumEUR(want))
			}
		}
	}
	switch name {
	case "shared-node":
		// GPU 0 is time-sliced; GPUs 1–3 are held whole all day, so the
		// node's unallocated EUR is GPU 0's free replicas.
		var gpu0 float64
		var uuid string
		for _, h := range r.Holdings {
			if h.Kind == "allocation share" {
				gpu0 += h.Totals.CostEUR
				uuid = h.UUID
			} else if h.Kind != "sampled" {
				t.Errorf("holding %s/%s: figures %q, want sampled", h.Namespace, h.Pod, h.Kind)
			}
		}
		gpu0 += r.Fleet.Totals.UnallocatedEUR + r.Fleet.Totals.UnknownEUR
		t.Logf("shared-node: time-sliced GPU %s %.4f EUR, ledger %.4f EUR (%+.3f %%)", uuid, gpu0, l.gpus[uuid], 100*relDiff(gpu0, l.gpus[uuid]))
		if uuid == "" || math.Abs(relDiff(gpu0, l.gpus[uuid])) > 0.01 {
			t.Errorf("time-sliced GPU %q: %.4f EUR, ledger %.4f EUR: more than 1 %% apart", uuid, gpu0, l.gpus[uuid])
		}
		if !strings.Contains(r.Kind, "allocation share") {
			t.Errorf("headline figures %q do not say allocation share", r.Kind)
		}
	case "short-jobs":
		// Pods shorter than two scrape intervals are in the report, each
		// counted at the grid points that caught it.
		reported := map[string]float64{}
		for _, h := range r.Holdings {
			reported[h.Namespace+"/"+h.Pod] += h.Totals.CostEUR
		}
		n, seen := 0, 0
		var want, have float64
		for pod, secs := range l.secs {
			if secs <= 0 || secs >= 60 {
				continue
			}
			n++
			want += l.pods[pod]
			have += reported[pod]
			if reported[pod] > 0 {
				seen++
			}
		}
		t.Logf("short-jobs: %d pods ran less than two scrape intervals, %d of them in the report: %.4f EUR, ledger %.4f EUR (%+.1f %%: each is counted as the 30 s grid steps that caught it)",
			n, seen, have, want, 100*relDiff(have, want))
		if n == 0 || seen == 0 || have < 0.5*want || have > 2*want {
			t.Errorf("short pods: %d of %d reported, %.4f EUR against the ledger's %.4f", seen, n, have, want)
		}
	case "faults":
		lost := r.Fleet.Totals.LostEUR
		t.Logf("faults: lost %.4f EUR, ledger %.4f EUR (%+.3f %%)", lost, l.ns[""]["lost"], 100*relDiff(lost, l.ns[""]["lost"]))
		if math.Abs(relDiff(lost, l.ns[""]["lost"])) > 0.01 {
			t.Errorf("lost %.4f EUR, ledger %.4f EUR: more than 1 %% apart", lost, l.ns[""]["lost"])
		}
	case "scrape-gap":
		unknown := r.Fleet.Totals.UnknownEUR
		held := sumEUR(l.ns["ml"]) + sumEUR(l.ns["serving"])
		var have float64
		for ns, m := range got {
			if ns != "" {
				have += sumEUR(m)
			}
		}
		// The gap is its holders' unknown time: in their namespaces.
		t.Logf("scrape-gap: %.4f EUR unknown over the 2 h without samples, the holders'; their namespaces %.4f EUR with it, the ledger's held %.4f EUR (%+.3f %%)",
			unknown, have, held, 100*relDiff(have, held))
		if unknown <= 0 || math.Abs(got[""]["unknown"]) > 1e-6 || math.Abs(relDiff(have, held)) > 0.01 {
			t.Errorf("scrape gap: %.4f EUR unknown, %.4f of it with no holder; namespaces %.4f EUR, ledger held %.4f EUR", unknown, got[""]["unknown"], have, held)
		}
	}
}

// checkSameAdvice holds the dcgm-exporter source's recommendations to the
// ledger source's: the same changes on the same targets, freeing the same
// EUR within 1 %.
func checkSameAdvice(t *testing.T, sampled, exact dcgmReport) {
	key := func(r dcgmReport) map[string][2]float64 {
		m := map[string][2]float64{}
		for _, rec := range r.Recommendations {
			m[rec.Kind+" "+rec.Target] = [2]float64{rec.Freed, rec.Reclaimable}
		}
		return m
	}
	s, e := key(sampled), key(exact)
	for k, v := range e {
		w, ok := s[k]
		t.Logf("advice %s: ledger frees %.2f (reclaimable %.2f) EUR/month, dcgm-exporter source %.2f (%.2f)", k, v[0], v[1], w[0], w[1])
		if !ok {
			t.Errorf("the ledger source recommends %s, the dcgm-exporter source does not", k)
			continue
		}
		if math.Abs(w[0]-v[0]) > 0.01*math.Max(v[0], 1) || math.Abs(w[1]-v[1]) > 0.01*math.Max(v[1], 1) {
			t.Errorf("%s: frees %.2f (reclaimable %.2f) EUR/month, the ledger source's %.2f (%.2f): more than 1 %% apart", k, w[0], w[1], v[0], v[1])
		}
	}
	for k := range s {
		if _, ok := e[k]; !ok {
			t.Errorf("the dcgm-exporter source recommends %s, the ledger source does not", k)
		}
	}
	if len(e) == 0 {
		t.Error("the ledger source recommends nothing on the fleet's day: the comparison holds nothing")
	}
}

// checkSameFigures holds VictoriaMetrics' report to Prometheus' within 0.1 %.
func checkSameFigures(t *testing.T, vm, prom dcgmReport) {
	close01 := func(a, b float64) bool { return math.Abs(a-b) <= 0.001*math.Max(math.Abs(a), math.Abs(b))+1e-9 }
	if !close01(vm.Fleet.Totals.CostEUR, prom.Fleet.Totals.CostEUR) {
		t.Errorf("VictoriaMetrics: fleet %.4f EUR, Prometheus %.4f EUR: more than 0.1 %% apart", vm.Fleet.Totals.CostEUR, prom.Fleet.Totals.CostEUR)
	}
	pns := map[string]stateTotals{}
	for _, ns := range prom.Namespaces {
		pns[ns.Name] = ns.Totals
	}
	for _, ns := range vm.Namespaces {
		for st, v := range ns.Totals.byState() {
			if w := pns[ns.Name].byState()[st]; !close01(v, w) {
				t.Errorf("VictoriaMetrics: namespace %s %s %.4f EUR, Prometheus %.4f EUR: more than 0.1 %% apart", ns.Name, st, v, w)
			}
		}
	}
}

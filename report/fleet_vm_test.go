//go:build fleetbench

package report

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The budgets (DESIGN.md, "Budgets"; issue 31): the report process's wall
// time and peak RSS per fleet, range and engine. A peak RSS over its budget
// fails the run; a wall time over its budget is reported in the table, not
// failed (on a shared 2-core machine it is the load's more than the code's). A fleet without a row of
// its own is held to the row of the smallest fleet at its range that covers
// it; one larger than every row, or at a range without rows, has none.
var fleetBudgets = []struct {
	engine     string
	gpus, days int
	wall       time.Duration
	rss        uint64
}{
	{"vm", 1000, 7, 30 * time.Second, 300 << 20},
	{"vm", 10000, 7, 200 * time.Second, 400 << 20},
	{"vm", 1000, 30, 40 * time.Second, 150 << 20},
	{"vm", 10000, 30, 600 * time.Second, 512 << 20},
	{"embedded", 1000, 7, 30 * time.Second, 500 << 20},
}

// fleetBudget returns the budget of a report over gpus × days on engine.
func fleetBudget(engine string, gpus, days int) (wall time.Duration, rss uint64, ok bool) {
	best := 0
	for _, b := range fleetBudgets {
		if b.engine == engine && b.days == days && b.gpus >= gpus && (best == 0 || b.gpus < best) {
			best, wall, rss, ok = b.gpus, b.wall, b.rss, true
		}
	}
	return wall, rss, ok
}

// fleetSettings are the environment's settings of a fleet benchmark.
type fleetSettings struct {
	gpus, days  []int
	scrape      time.Duration
	maxSamples  []string
	concurrency []string // --query.concurrency values; the first is the budgeted run
	engines     []string // vm, embedded
	keep        string   // directory keeping imported fleets between runs; "": none
}

// fleetFromEnv reads the settings; see TestFleetReportVictoriaMetrics.
func fleetFromEnv(t *testing.T) fleetSettings {
	counts := func(name, def string) []int {
		var out []int
		for _, f := range strings.Split(envOr(name, def), ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				t.Fatalf("%s: %q is not a positive count", name, f)
			}
			out = append(out, n)
		}
		return out
	}
	s := fleetSettings{
		gpus: counts("GPUTALLY_FLEET_GPUS", "1000"), days: counts("GPUTALLY_FLEET_DAYS", "7"),
		scrape:      time.Duration(counts("GPUTALLY_FLEET_SCRAPE_SECONDS", "60")[0]) * time.Second,
		maxSamples:  strings.Split(envOr("GPUTALLY_FLEET_MAX_SAMPLES", "1000000"), ","),
		concurrency: strings.Split(envOr("GPUTALLY_FLEET_CONCURRENCY", strconv.Itoa(DefaultQueriesInFlight)+",1"), ","),
		engines:     strings.Split(envOr("GPUTALLY_FLEET_ENGINES", "vm,embedded"), ","),
		keep:        os.Getenv("GPUTALLY_FLEET_KEEP"),
	}
	return s
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// TestFleetReportVictoriaMetrics (`make bench-fleet`) measures the report
// over the synthetic fleet of synth_test.go — GPUTALLY_FLEET_GPUS GPUs
// (default 1000) × GPUTALLY_FLEET_DAYS days (default 7; each a comma list,
// every pair is measured), scraped every GPUTALLY_FLEET_SCRAPE_SECONDS
// (default 60) — on each engine of GPUTALLY_FLEET_ENGINES (default
// vm,embedded):
//
//   - vm: the fleet is imported into a VictoriaMetrics on loopback through
//     /api/v1/import/prometheus (millisecond timestamps; with
//     GPUTALLY_FLEET_KEEP=dir the imported fleet is kept in dir and reused
//     by later runs), and the `gputally report` binary runs against it over
//     HTTP, once per --query.max-samples of GPUTALLY_FLEET_MAX_SAMPLES
//     (default 1000000) and --query.concurrency of GPUTALLY_FLEET_CONCURRENCY
//     (default 2,1). Its wall time and peak RSS (getrusage of the child) are
//     printed with the import's time and VictoriaMetrics' peak RSS;
//   - embedded: a child process (this test binary) builds the Store of
//     report --demo from the same fleet and generates the report through
//     the embedded engine; the report's wall time (queries, analysis,
//     advice) and the child's peak RSS (store included) are printed.
//
// It fails when a run's peak RSS is over its budget (fleetBudgets; the first
// concurrency is the one budgeted), counts the wrong number of GPUs, gives
// EUR not to the cent of the fleet's hand-summed ledger or of another run of
// the same fleet, or when the import loses samples. Needs
// victoria-metrics in PATH for vm.
func TestFleetReportVictoriaMetrics(t *testing.T) {
	s := fleetFromEnv(t)
	var vmBin, bin string
	if slices.Contains(s.engines, "vm") {
		var err error
		if vmBin, err = exec.LookPath("victoria-metrics"); err != nil {
			t.Skipf("victoria-metrics not in PATH: %v", err)
		}
		bin = filepath.Join(t.TempDir(), "gputally")
		build := exec.Command("go", "build", "-o", bin, "../cmd/gputally")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("build: %v\n%s", err, out)
		}
	}
	var rows []string
	for _, days := range s.days {
		for _, gpus := range s.gpus {
			t.Run(fmt.Sprintf("%dGPUs%dd", gpus, days), func(t *testing.T) {
				f := &fleetCase{gpus: gpus, days: days, scrape: s.scrape}
				f.want = f.totals()
				for _, e := range s.engines {
					switch e {
					case "vm":
						rows = append(rows, f.victoriaMetrics(t, vmBin, bin, s)...)
					case "embedded":
						rows = append(rows, f.embedded(t, s)...)
					default:
						t.Fatalf("GPUTALLY_FLEET_ENGINES: %q is neither vm nor embedded", e)
					}
				}
			})
		}
	}
	t.Logf("\n| GPUs × days | engine | samples | import | engine peak RSS | --query.concurrency | report wall | report peak RSS | budget | load average |\n|---|---|---|---|---|---|---|---|---|---|\n%s",
		strings.Join(rows, "\n"))
}

// fleetCase is one fleet and range being measured.
type fleetCase struct {
	gpus, days int
	scrape     time.Duration
	want       synthTotals
	eur        []float64 // EUR of every report run so far
}

func (f *fleetCase) ticks() int { return int(time.Duration(f.days) * 24 * time.Hour / f.scrape) }

// totals are the fleet's ledger totals over its range, summed by hand.
func (f *fleetCase) totals() synthTotals {
	_, tot := synthFleet(f.gpus, f.scrape, f.ticks())
	return tot
}

// check holds a report's JSON to the fleet: its GPUs, and its EUR to the
// hand-summed ledger and to every earlier run, to the cent.
func (f *fleetCase) check(t *testing.T, what string, out string) {
	t.Helper()
	var rep struct {
		GPUs    int  `json:"gpus"`
		Partial bool `json:"partial"`
		Fleet   struct {
			Totals struct {
				CostEUR float64 `json:"cost_eur"`
				IdleEUR float64 `json:"idle_eur"`
			} `json:"totals"`
		} `json:"fleet"`
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	eur := rep.Fleet.Totals.CostEUR
	t.Logf("%s: %d GPUs, %.2f EUR (ledger %.2f), partial %t", what, rep.GPUs, eur, f.want.eur, rep.Partial)
	if rep.GPUs != f.gpus {
		t.Errorf("%s: the report counts %d GPUs, want %d", what, rep.GPUs, f.gpus)
	}
	if math.Abs(eur-f.want.eur) >= 0.005 {
		t.Errorf("%s: %.4f EUR, the ledger counted %.4f: not to the cent", what, eur, f.want.eur)
	}
	for _, e := range f.eur {
		if math.Abs(eur-e) >= 0.005 {
			t.Errorf("%s: %.4f EUR, an earlier run of the same fleet %.4f: not to the cent", what, eur, e)
		}
	}
	f.eur = append(f.eur, eur)
}

// overBudget fails t when a budgeted run's peak RSS is over its budget, and
// returns the budget's words for the table, saying when its wall time was
// over.
func overBudget(t *testing.T, engine string, gpus, days int, budgeted bool, wall time.Duration, rss uint64) string {
	t.Helper()
	bw, brss, ok := fleetBudget(engine, gpus, days)
	if !ok {
		return "none"
	}
	words := fmt.Sprintf("≤ %s, ≤ %d MiB", bw, brss>>20)
	if !budgeted {
		return words + " (not budgeted)"
	}
	if wall > bw {
		words += " (wall over)"
	}
	if rss > brss {
		t.Errorf("%s report over %d GPUs × %d days peaked at %.1f MiB RSS, budget %d MiB", engine, gpus, days, float64(rss)/(1<<20), brss>>20)
	}
	return words
}

// loadAverage is the first three fields of /proc/loadavg.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

func mib(b uint64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

// victoriaMetrics imports the fleet (or finds it kept) and runs the report
// binary against it; it returns the table's rows.
func (f *fleetCase) victoriaMetrics(t *testing.T, vmBin, bin string, s fleetSettings) []string {
	dir, imported, end, lines := t.TempDir(), "", time.Time{}, 0
	if s.keep != "" {
		dir = filepath.Join(s.keep, fmt.Sprintf("vm-%dgpus-%dd-%ds", f.gpus, f.days, int(s.scrape.Seconds())))
	}
	marker := filepath.Join(dir, "gputally-fleet.json")
	var kept struct {
		End     time.Time `json:"end"`
		Samples int       `json:"samples"`
		Import  string    `json:"import"`
	}
	if b, err := os.ReadFile(marker); err == nil && json.Unmarshal(b, &kept) == nil {
		end, lines, imported = kept.End, kept.Samples, kept.Import+" (kept)"
	}
	vm := startVictoriaMetrics(t, vmBin, dir)
	if end.IsZero() {
		// The range ends at the last full hour: VictoriaMetrics keeps data
		// within its retention from now, and --end must not be in the future.
		end = time.Now().UTC().Truncate(time.Hour)
		start := end.Add(-time.Duration(f.days) * 24 * time.Hour)
		fams, _ := synthFleet(f.gpus, s.scrape, f.ticks())
		began := time.Now()
		n, err := importPrometheus(vm.url, fams, start, s.scrape, f.ticks())
		if err != nil {
			t.Fatal(err)
		}
		if resp, err := http.Get(vm.url + "/internal/force_flush"); err == nil {
			resp.Body.Close()
		}
		took := time.Since(began)
		lines, imported = n, fmt.Sprintf("%s (%.2f M samples/s, load %s)", took.Round(time.Second), float64(n)/took.Seconds()/1e6, loadAverage())
		kept.End, kept.Samples, kept.Import = end, n, imported
		if s.keep != "" {
			b, _ := json.Marshal(kept)
			if err := os.WriteFile(marker, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := vm.count(t, end, f.days); got != lines {
		t.Fatalf("VictoriaMetrics holds %d samples, %d were imported", got, lines)
	}
	rss, _ := vm.rss(t)
	t.Logf("fleet %d GPUs × %d days, %s scrapes: %d series, %d samples, imported in %s; VictoriaMetrics RSS %s",
		f.gpus, f.days, s.scrape, vm.series(t, end, f.days), lines, imported, mib(rss))
	var rows []string
	for _, maxSamples := range s.maxSamples {
		for i, conc := range s.concurrency {
			rows = append(rows, f.report(t, bin, vm, end, maxSamples, conc, i == 0 && maxSamples == s.maxSamples[0], lines, imported))
		}
	}
	return rows
}

// report runs the report binary against vm and checks it.
func (f *fleetCase) report(t *testing.T, bin string, vm *victoriaMetrics, end time.Time, maxSamples, conc string, budgeted bool, samples int, imported string) string {
	out := filepath.Join(t.TempDir(), "report.json")
	cmd := exec.Command(bin, "report", "--prometheus.url="+vm.url, fmt.Sprintf("--range=%dd", f.days), "--end="+end.Format(time.RFC3339),
		"--format=json", "--out="+out, "--query.timeout=5m", "--query.max-samples="+maxSamples, "--query.concurrency="+conc)
	cmd.Stderr = &tailWriter{max: 4096}
	load := loadAverage()
	vmCPU := vm.cpu(t)
	began := time.Now()
	err := cmd.Run()
	wall := time.Since(began)
	if err != nil {
		t.Fatalf("report: %v\n%s", err, cmd.Stderr.(*tailWriter).b)
	}
	vmCPU = vm.cpu(t) - vmCPU
	load += " → " + loadAverage()
	peakRSS := uint64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) * 1024 // Linux: KiB
	_, vmPeak := vm.rss(t)
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	t.Logf("report --query.max-samples=%s --query.concurrency=%s: wall %s, CPU %s (VictoriaMetrics' CPU meanwhile %s), peak RSS %s (load %s); VictoriaMetrics peak RSS %s; progress: %s",
		maxSamples, conc, wall.Round(10*time.Millisecond), cpu.Round(10*time.Millisecond), vmCPU, mib(peakRSS), load, mib(vmPeak), lastLine(cmd.Stderr.(*tailWriter).b))
	f.check(t, "vm, --query.concurrency="+conc, out)
	budget := overBudget(t, "vm", f.gpus, f.days, budgeted, wall, peakRSS)
	return fmt.Sprintf("| %d × %d d | VictoriaMetrics over HTTP, --query.max-samples=%s | %.1f M | %s | %s | %s | %s | %s | %s | %s |",
		f.gpus, f.days, maxSamples, float64(samples)/1e6, imported, mib(vmPeak), conc, wall.Round(100*time.Millisecond), mib(peakRSS), budget, load)
}

// lastLine is the last progress line of the report's standard error.
func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "report: ") {
			return lines[i]
		}
	}
	return "none"
}

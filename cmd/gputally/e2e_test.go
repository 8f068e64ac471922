package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/gputally/gputally/dcgmnames"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// binary is the gputally binary built once for the tests of this package.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gputally-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "gputally")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build gputally:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// freeAddr returns a loopback address with a port no one listens on.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// exporter is a running `gputally exporter`.
type exporter struct {
	addr string
	cmd  *exec.Cmd
	logs *bytes.Buffer

	exited  chan struct{} // closed when the process has exited
	exitErr error         // cmd.Wait's answer, once exited is closed
}

// startExporter starts the binary with args and waits until /-/ready answers 200.
func startExporter(t testing.TB, args ...string) *exporter {
	t.Helper()
	e := &exporter{addr: freeAddr(t), logs: &bytes.Buffer{}, exited: make(chan struct{})}
	e.cmd = exec.Command(binary, append([]string{"exporter", "--web.listen-address=" + e.addr}, args...)...)
	e.cmd.Stdout, e.cmd.Stderr = e.logs, e.logs
	if err := e.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		e.exitErr = e.cmd.Wait()
		close(e.exited)
	}()
	t.Cleanup(func() {
		_ = e.cmd.Process.Signal(os.Interrupt)
		select {
		case <-e.exited:
		case <-time.After(10 * time.Second):
			_ = e.cmd.Process.Kill()
			<-e.exited
		}
		if t.Failed() {
			t.Logf("exporter log:\n%s", e.logs)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-e.exited:
			t.Fatalf("exporter exited before it was ready: %v\n%s", e.exitErr, e.logs)
		default:
		}
		resp, err := http.Get("http://" + e.addr + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return e
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("exporter not ready after 30s\n%s", e.logs)
		}
		time.Sleep(50 * time.Millisecond) // polling a process we do not control
	}
}

// scrape returns the metric families of one /metrics answer.
func (e *exporter) scrape(t testing.TB) map[string]*model.Sample {
	t.Helper()
	resp, err := http.Get("http://" + e.addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %s", resp.Status)
	}
	dec := expfmt.SampleDecoder{Dec: expfmt.NewDecoder(resp.Body, expfmt.ResponseFormat(resp.Header)), Opts: &expfmt.DecodeOptions{Timestamp: model.Now()}}
	out := map[string]*model.Sample{}
	for {
		var v model.Vector
		if err := dec.Decode(&v); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		for _, s := range v {
			out[s.Metric.String()] = s
		}
	}
	return out
}

// sum adds the values of the series of name whose labels include match.
func sum(samples map[string]*model.Sample, name string, match model.LabelSet) (float64, int) {
	total, n := 0.0, 0
	for _, s := range samples {
		if string(s.Metric[model.MetricNameLabel]) != name {
			continue
		}
		ok := true
		for k, v := range match {
			if s.Metric[k] != v {
				ok = false
			}
		}
		if ok {
			total += float64(s.Value)
			n++
		}
	}
	return total, n
}

func TestExporterServesSimulatedNode(t *testing.T) {
	e := startExporter(t, "--backend=sim", "--collector.interval=200ms")
	waitFor(t, func() bool {
		_, n := sum(e.scrape(t), "gputally_gpu_allocation", nil)
		return n > 0
	})
	var first map[string]*model.Sample
	// Counters move as time passes; the ledger charges every GPU. The first
	// scrape can come before the backend's first reading and the ledger's
	// first interval (it charges from its second tick on), so the baseline
	// is a scrape that holds both; then the counters must all grow.
	counters := []string{dcgmnames.Energy.New, "gputally_gpu_seconds_total", "gputally_cost_eur_total"}
	waitFor(t, func() bool {
		first = e.scrape(t)
		_, n := sum(first, dcgmnames.Energy.New, nil)
		secs, _ := sum(first, "gputally_gpu_seconds_total", nil)
		return n > 0 && secs > 0
	})
	var second map[string]*model.Sample
	waitFor(t, func() bool {
		second = e.scrape(t)
		for _, name := range counters {
			a, _ := sum(first, name, nil)
			if b, _ := sum(second, name, nil); b <= a {
				return false
			}
		}
		return true
	})
	for _, tc := range []struct {
		name  string
		match model.LabelSet
		want  int
	}{{dcgmnames.Power.New, nil, 8}, // parent GPUs only, never per MIG instance
		{dcgmnames.GPUUtil.New, nil, 6},                                           // not on the two MIG GPUs
		{dcgmnames.FBUsed.New, model.LabelSet{"GPU_I_PROFILE": "1g.10gb"}, 5},     // per MIG instance
		{dcgmnames.FBCapacity.New, model.LabelSet{"GPU_I_PROFILE": "1g.10gb"}, 5}, // per MIG instance too
		{"gputally_gpu_info", model.LabelSet{"hostname": "sim-node-0"}, 8 + 8},
		{"gputally_gpu_allocation", model.LabelSet{"sharing": "time-slicing"}, 3},
		{"gputally_up", model.LabelSet{"backend": "sim"}, 1},
	} {
		if _, n := sum(second, tc.name, tc.match); n != tc.want {
			t.Errorf("%s%v: %d series, want %d", tc.name, tc.match, n, tc.want)
		}
	}
	// The training GPU is busy, the forgotten job's GPU idle (default scenario).
	// Utilization is a ratio under the default names (dcgm-exporter 4.10's).
	if util, n := sum(second, dcgmnames.GPUUtil.New, model.LabelSet{"pod": "llm-pretrain-0"}); n != 1 || util < 0.5 || util > 1 {
		t.Errorf("training GPU utilization %v (%d series), want busy", util, n)
	}
	if util, n := sum(second, dcgmnames.GPUUtil.New, model.LabelSet{"pod": "eval-sweep-3"}); n != 1 || util > 0.05 {
		t.Errorf("idle GPU utilization %v (%d series), want ~0", util, n)
	}
	// Time-sliced holders carry no pod labels on device series.
	if _, n := sum(second, dcgmnames.GPUUtil.New, model.LabelSet{"namespace": "dev-alice"}); n != 0 {
		t.Errorf("a time-sliced holder got pod labels on a device series")
	}
}

// TestExporterHostnameLabel: every device and own series of a GPU names its
// node as `hostname`, as dcgm-exporter does since 4.8.3; with
// --collector.legacy-hostname-label as `Hostname`, and never both.
func TestExporterHostnameLabel(t *testing.T) {
	for _, tc := range []struct {
		flags     []string
		want, not model.LabelName
	}{
		{nil, "hostname", "Hostname"},
		{[]string{"--collector.legacy-hostname-label"}, "Hostname", "hostname"},
	} {
		t.Run(string(tc.want), func(t *testing.T) {
			e := startExporter(t, append([]string{"--backend=sim", "--collector.interval=200ms"}, tc.flags...)...)
			var samples map[string]*model.Sample
			waitFor(t, func() bool {
				samples = e.scrape(t)
				_, n := sum(samples, "gputally_gpu_seconds_total", nil)
				return n > 0
			})
			devices := 0
			for _, s := range samples {
				if _, ok := s.Metric["UUID"]; !ok {
					continue
				}
				devices++
				if s.Metric[tc.want] != "sim-node-0" || s.Metric[tc.not] != "" {
					t.Errorf("%s: want %s=\"sim-node-0\" and no %s", s.Metric, tc.want, tc.not)
				}
			}
			if devices < 100 {
				t.Errorf("%d device series, want the whole simulated node's", devices)
			}
		})
	}
}

// waitFor polls cond until it holds, failing after 20 s.
func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met after 20s")
		}
		time.Sleep(100 * time.Millisecond) // polling a process we do not control
	}
}

func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	badScenario := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(badScenario, []byte("seed: 1\ngpus:\n  - model: NVIDIA H100 80GB HBM3\n    colour: blue\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badBook := filepath.Join(dir, "book.yaml")
	if err := os.WriteFile(badBook, []byte("currency: EUR\nmodels:\n  - {match: \"H100\", purchase_eur: -5}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spare := filepath.Join("..", "..", "testdata", "scenarios", "fleet", "spare.yaml")
	empty := filepath.Join(dir, "no-nodes")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	a100Book := filepath.Join(dir, "a100.yaml")
	if err := os.WriteFile(a100Book, []byte("currency: EUR\nmodels:\n  - {match: \"A100\", purchase_eur: 15000}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badCarbon := filepath.Join(dir, "carbon.yaml")
	if err := os.WriteFile(badCarbon, []byte("models: [{match: \".\", purchase_eur: 1, cloud_eur_per_hour: 3}]\ncarbon:\n  gco2e_per_kwh: 210\n  clusters: {eu-west: -56}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badRental := filepath.Join(dir, "rental.yaml")
	if err := os.WriteFile(badRental, []byte("models:\n  - {match: \".\", purchase_eur: 1, cloud_eur_per_hour: .inf}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string // in the message
	}{
		{"bad flag", []string{"exporter", "--no-such-flag"}, []string{"--no-such-flag"}},
		{"bad interval", []string{"exporter", "--backend=sim", "--collector.interval=0s"}, []string{"--collector.interval"}},
		{"bad retention", []string{"exporter", "--backend=sim", "--collector.ended-series-retention=0s"}, []string{"--collector.ended-series-retention"}},
		{"bad scenario", []string{"exporter", "--backend=sim", "--sim.scenario=" + badScenario}, []string{badScenario + ":4", "colour"}},
		{"missing scenario", []string{"exporter", "--backend=sim", "--sim.scenario=" + filepath.Join(dir, "none.yaml")}, []string{"none.yaml"}},
		{"nvml without library", []string{"exporter", "--backend=nvml"}, []string{"libnvidia-ml.so.1", "--backend=sim"}},
		{"dcgm without library", []string{"exporter", "--backend=dcgm"}, []string{"libdcgm.so.4", "--backend=nvml"}},
		{"auto without libraries", []string{"exporter", "--backend=auto"}, []string{"libdcgm.so.4", "libnvidia-ml.so.1", "--backend=sim"}},
		{"bad price book", []string{"exporter", "--backend=sim", "--cost.price-book=" + badBook}, []string{badBook + ":3"}},
		{"check-config bad book", []string{"check-config", badBook}, []string{badBook + ":3", "purchase_eur"}},
		{"check-config bad intensity", []string{"check-config", badCarbon}, []string{badCarbon + ":4: carbon.clusters.eu-west: must be between 0 and 5000 gCO2e per kWh, got -56"}},
		{"check-config bad rental price", []string{"check-config", badRental}, []string{badRental + ":2: models[0].cloud_eur_per_hour: must be a finite number"}},
		{"no price for a GPU present", []string{"exporter", "--backend=sim", "--cost.price-book=" + a100Book}, []string{a100Book + ":2: models", `no price for GPU model "NVIDIA H100 80GB HBM3" (GPU-`}},
		{"fleet nodes clash", []string{"simulate", "history", "--duration=1m", "--out=" + filepath.Join(dir, "h.om"),
			"--scenario=" + spare, "--scenario=" + spare}, []string{"both called fleet-spare"}},
		{"empty fleet directory", []string{"simulate", "history", "--duration=1m", "--out=" + filepath.Join(dir, "h.om"), "--scenario=" + empty}, []string{"holds no *.yaml"}},
		{"report bad price book", []string{"report", "--demo", "--out=-", "--cost.price-book=" + badBook}, []string{badBook + ":3"}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkBadInput(t, nil, tc.args, tc.want...) })
	}
}

func countLines(b []byte) int {
	n := 0
	for s := bufio.NewScanner(bytes.NewReader(b)); s.Scan(); {
		n++
	}
	return n
}

func TestCheckConfigAcceptsDefaultBook(t *testing.T) {
	dir := t.TempDir()
	book := filepath.Join(dir, "book.yaml")
	if err := os.WriteFile(book, []byte("currency: EUR\nmodels:\n  - {match: \"H100\", purchase_eur: 30000}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(binary, "check-config", book).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
}

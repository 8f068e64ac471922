//go:build fleetbench

package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
)

// importPrometheus streams the families to /api/v1/import/prometheus as
// exposition text with millisecond timestamps, one series after the other,
// and returns the samples written.
func importPrometheus(url string, fams []synthFamily, start time.Time, interval time.Duration, ticks int) (int, error) {
	pr, pw := io.Pipe()
	lines := 0
	go func() {
		bw := bufio.NewWriterSize(pw, 1<<20)
		var line []byte
		for _, f := range fams {
			for _, s := range f.series {
				next := s.values()
				prefix := exposition(s.lset)
				for k := 1; k <= ticks; k++ {
					line = append(line[:0], prefix...)
					line = append(line, ' ')
					line = strconv.AppendFloat(line, next(k), 'g', -1, 64)
					line = append(line, ' ')
					line = strconv.AppendInt(line, start.Add(time.Duration(k)*interval).UnixMilli(), 10)
					line = append(line, '\n')
					if _, err := bw.Write(line); err != nil {
						pw.CloseWithError(err)
						return
					}
					lines++
				}
			}
		}
		pw.CloseWithError(bw.Flush())
	}()
	resp, err := http.Post(url+"/api/v1/import/prometheus", "text/plain", pr)
	if err != nil {
		pr.CloseWithError(err)
		return 0, fmt.Errorf("import: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return 0, fmt.Errorf("import: %s: %s", resp.Status, msg)
	}
	return lines, nil
}

// exposition is the series' name and labels as the text format writes them.
func exposition(lset labels.Labels) []byte {
	var b strings.Builder
	b.WriteString(lset.Get(model.MetricNameLabel))
	b.WriteByte('{')
	first := true
	lset.Range(func(l labels.Label) {
		if l.Name == model.MetricNameLabel {
			return
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		fmt.Fprintf(&b, "%s=%q", l.Name, l.Value)
	})
	b.WriteByte('}')
	return []byte(b.String())
}

type victoriaMetrics struct {
	url string
	cmd *exec.Cmd
}

// startVictoriaMetrics runs a single-node VictoriaMetrics on loopback over
// the data directory dir, without its response cache (every run of the
// report reads the samples); it stops at the test's end.
func startVictoriaMetrics(t *testing.T, bin, dir string) *victoriaMetrics {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	// -search.maxSamplesPerQuery: the harness' own count of a fleet's
	// samples reads them all (3.7 G at 10,000 GPUs × 30 d); the report's
	// requests read about --query.max-samples each.
	cmd := exec.Command(bin, "-storageDataPath="+dir, "-httpListenAddr="+addr, "-retentionPeriod=100y",
		"-search.maxQueryDuration=5m", "-search.latencyOffset=0s", "-search.disableCache", "-search.maxSamplesPerQuery=100000000000", "-loggerLevel=ERROR")
	cmd.Stderr = &tailWriter{max: 4096}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	vm := &victoriaMetrics{url: "http://" + addr, cmd: cmd}
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for range tick.C {
		if resp, err := http.Get(vm.url + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return vm
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("victoria-metrics did not answer within a minute\n%s", cmd.Stderr.(*tailWriter).b)
		}
	}
	return vm
}

// query evaluates an instant query at t and returns its single value.
func (vm *victoriaMetrics) query(t *testing.T, q string, at time.Time) float64 {
	t.Helper()
	resp, err := http.Get(vm.url + "/api/v1/query?query=" + url.QueryEscape(q) + "&time=" + strconv.FormatInt(at.Unix(), 10))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Status, Error string
		Data          struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if body.Status != "success" {
		t.Fatalf("%s: %s: %s", q, body.Status, body.Error)
	}
	if len(body.Data.Result) != 1 {
		t.Fatalf("%s: %d results", q, len(body.Data.Result))
	}
	s, _ := body.Data.Result[0].Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return v
}

// count is the samples stored in the days (and one more) before end.
func (vm *victoriaMetrics) count(t *testing.T, end time.Time, days int) int {
	return int(vm.query(t, fmt.Sprintf(`sum(count_over_time({__name__=~".+"}[%dd]))`, days+1), end))
}

func (vm *victoriaMetrics) series(t *testing.T, end time.Time, days int) int {
	return int(vm.query(t, fmt.Sprintf(`count(last_over_time({__name__=~".+"}[%dd]))`, days+1), end))
}

// rss reads VictoriaMetrics' resident memory and its peak from /proc (Linux).
func (vm *victoriaMetrics) rss(t *testing.T) (now, peak uint64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", vm.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		kib, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		switch k {
		case "VmRSS":
			now = kib * 1024
		case "VmHWM":
			peak = kib * 1024
		}
	}
	return now, peak
}

// cpu returns the CPU time VictoriaMetrics has used so far, user and system
// (/proc/<pid>/stat, in clock ticks of 1/100 s).
func (vm *victoriaMetrics) cpu(t *testing.T) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", vm.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command name (which may hold spaces): state is
	// the first, utime and stime the 12th and 13th.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	utime, _ := strconv.ParseUint(f[11], 10, 64)
	stime, _ := strconv.ParseUint(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	b   []byte
	max int
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	if len(w.b) > w.max {
		w.b = w.b[len(w.b)-w.max:]
	}
	return len(p), nil
}

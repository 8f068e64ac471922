package render

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/gputally/gputally/report/advice"
	"github.com/gputally/gputally/report/analysis"
	"github.com/gputally/gputally/report/internal/hourly"
)

// waitingReport is the report of hourly.WaitingStory (its figures are
// worked out by hand in report/analysis' TestWaitingStory: 28.5 GPU-hours
// waited by 5 pods, p50 2.25 h, p95 4.5 h, 15 fragmented, 191 EUR idle while
// pods waited; research 18.25 GPU-hours, 2 pods, p95 4.5 h, 14 fragmented).
func waitingReport(t *testing.T) *Report {
	t.Helper()
	d := hourly.WaitingStory()
	a, err := analysis.Analyze(d, hourly.Teams{}, true)
	if err != nil {
		t.Fatal(err)
	}
	return NewReport(a, advice.Advise(a, d, advice.Settings{Teams: hourly.Teams{}, Headroom: 1.2, ReleaseBelow: 0.05, LowDutyBelow: 0.3, DrainAbove: 0.95}))
}

// TestWaitingJSON: the JSON's `waiting` carries the fleet's figures and
// by_namespace objects with name, gpu_hours, pods, p95_wait_hours and
// fragmented_gpu_hours, most GPU-hours first.
func TestWaitingJSON(t *testing.T) {
	var out bytes.Buffer
	if err := Render(&out, waitingReport(t), FormatJSON); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Waiting struct {
			GPUHours    *float64 `json:"gpu_hours"`
			Pods        *int     `json:"pods"`
			P50         *float64 `json:"p50_wait_hours"`
			P95         *float64 `json:"p95_wait_hours"`
			Fragmented  *float64 `json:"fragmented_gpu_hours"`
			IdleEUR     *float64 `json:"idle_while_waiting_eur"`
			ByNamespace []struct {
				Name       string  `json:"name"`
				GPUHours   float64 `json:"gpu_hours"`
				Pods       int     `json:"pods"`
				P95        float64 `json:"p95_wait_hours"`
				Fragmented float64 `json:"fragmented_gpu_hours"`
			} `json:"by_namespace"`
			PodsWaited []struct {
				Pod      string `json:"pod"`
				Requests []struct {
					Resource string  `json:"resource"`
					Count    float64 `json:"count"`
				} `json:"requests"`
			} `json:"pods_waited"`
		} `json:"waiting"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	w := doc.Waiting
	if w.GPUHours == nil || *w.GPUHours != 28.5 || *w.Pods != 5 || *w.P50 != 2.25 || *w.P95 != 4.5 || *w.Fragmented != 15 || *w.IdleEUR != 191 {
		t.Fatalf("waiting %s", out.String()[strings.Index(out.String(), `"waiting"`):][:400])
	}
	ns := w.ByNamespace
	if len(ns) != 3 || ns[0].Name != "research" || ns[0].GPUHours != 18.25 || ns[0].Pods != 2 || ns[0].P95 != 4.5 || ns[0].Fragmented != 14 {
		t.Errorf("by_namespace %+v", ns)
	}
	if len(w.PodsWaited) != 5 || w.PodsWaited[0].Pod != "train" || len(w.PodsWaited[0].Requests) != 1 || w.PodsWaited[0].Requests[0].Count != 4 {
		t.Errorf("pods_waited %+v, want train first, once, with its request of 4", w.PodsWaited)
	}
	// The names exactly: a namespace or team has no idle EUR of its own (it
	// is its cluster's), a cluster has.
	var names struct {
		Waiting struct {
			ByNamespace, ByTeam, ByCluster []map[string]json.RawMessage
		}
	}
	if err := json.Unmarshal(out.Bytes(), &names); err != nil {
		t.Fatal(err)
	}
	group := "fragmented_gpu_hours gpu_hours name p50_wait_hours p95_wait_hours pods"
	for _, c := range []struct {
		of   string
		rows []map[string]json.RawMessage
		want string
	}{{"by_namespace", names.Waiting.ByNamespace, group}, {"by_team", names.Waiting.ByTeam, group}, {"by_cluster", names.Waiting.ByCluster, group + " idle_while_waiting_eur"}} {
		for _, row := range c.rows {
			keys := slices.Sorted(maps.Keys(row))
			want := strings.Fields(c.want)
			slices.Sort(want)
			if !slices.Equal(keys, want) {
				t.Errorf("%s object %v, want the fields %v", c.of, keys, want)
			}
		}
	}
}

// TestWaitingMarkdownAndHTML: both say the headline, name the pods that
// never ran — nb-1 deleted while waiting, mig-1 still waiting — and list
// the 4-GPU train once with its request; the HTML charts the waiting
// demand beside held and busy GPUs.
func TestWaitingMarkdownAndHTML(t *testing.T) {
	r := waitingReport(t)
	for _, format := range []string{FormatMarkdown, FormatHTML} {
		var out bytes.Buffer
		if err := Render(&out, r, format); err != nil {
			t.Fatal(err)
		}
		text := out.String()
		for _, want := range []string{
			"5 GPU pods waited 28.5 GPU-hours for a node (p50 2.2 h, p95 4.5 h per pod); 15.0 GPU-hours of it fragmented",
			"191.00 EUR burned idle", "Pods that never ran",
			"notebooks/nb-1 (1 × nvidia.com/gpu, team data): waited 2.2 h, never ran: deleted while waiting at 2026-01-05T03:15:00Z",
			"inference/mig-1 (2 × nvidia.com/mig-1g.10gb, team inference): waited 1.0 h, never ran: still waiting at the end",
			"bound to b at 2026-01-05T05:00:00Z",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("%s lacks %q", format, want)
			}
		}
		row := map[string]string{FormatMarkdown: "| research/train |", FormatHTML: "<td>research/train</td>"}[format]
		if n := strings.Count(text, row); n != 1 {
			t.Errorf("%s names research/train %d times as a row, want once (one row per pod)", format, n)
		}
		// What the waiting calls for (report/advice's TestBinPackingProfile):
		// queues about 191 EUR, bin-packing about 7,085.57 EUR, and the
		// kube-scheduler profile under the configuration to apply.
		for _, want := range []string{waitAdviceTitle, "7085.57", "191.00", schedulerTitle, "type: MostAllocated"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s lacks %q", format, want)
			}
		}
		if !strings.Contains(text, "4 × nvidia.com/gpu") {
			t.Errorf("%s lacks train's request of 4", format)
		}
	}
	html, err := waitingHTML(r)
	if err != nil {
		t.Fatal(err)
	}
	chart := string(html)
	// 7 buckets with waiting pods (all but bucket 6), each with more waiting
	// than fragmented; 5 with fragmented ones (0, 1, 3, 4, 7).
	if strings.Count(chart, `<rect class="waiting"`) != 7 || strings.Count(chart, `<rect class="fragmented"`) != 5 ||
		!strings.Contains(chart, `class="held-line"`) || !strings.Contains(chart, `class="busy-line"`) {
		t.Errorf("waiting chart:\n%s", chart)
	}
}

// TestWaitingCSV: the fleet row, a row per namespace, team and cluster, and
// one row per pod — train once, its request 4 × nvidia.com/gpu, 18
// GPU-hours over 4.5 h — with nb-1's outcome.
func TestWaitingCSV(t *testing.T) {
	var out bytes.Buffer
	if err := Render(&out, waitingReport(t), FormatCSV); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&out).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, row := range rows[1:] {
		count[row[0]]++
		switch {
		case row[0] == "waiting" && (row[2] != "28.5" || row[csvPods] != "5" || row[csvP95Wait] != "4.5" || row[csvFragmented] != "15" || row[csvIdleWhileWaiting] != "191"):
			t.Errorf("fleet row %q", row)
		case row[0] == "waiting_cluster" && row[csvIdleWhileWaiting] != "191", (row[0] == "waiting_namespace" || row[0] == "waiting_team") && row[csvIdleWhileWaiting] != "":
			t.Errorf("row %q: idle EUR while waiting is the fleet's and a cluster's, none of a namespace or team", row)
		case row[0] == "waiting_pod" && row[1] == "research/train" && (row[2] != "18" || row[csvWaitHours] != "4.5" || row[csvRequest] != "4 × nvidia.com/gpu" || row[csvFragmented] != "14"):
			t.Errorf("train row %q", row)
		case row[0] == "waiting_pod" && row[1] == "notebooks/nb-1" && (row[csvOutcome] != analysis.OutcomeDeleted || row[csvTo] != "2026-01-05T03:15:00Z"):
			t.Errorf("nb-1 row %q", row)
		}
	}
	if count["waiting_advice"] != 2 || count["waiting"] != 1 || count["waiting_namespace"] != 3 || count["waiting_team"] != 3 || count["waiting_cluster"] != 1 || count["waiting_pod"] != 5 {
		t.Errorf("rows per section %v", count)
	}
	if rows[0][csvOutcome] != "outcome" || len(rows[0]) != csvOutcome+1 {
		t.Errorf("header %q", rows[0])
	}
}

//go:build e2e

package e2e

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
)

// sharesReport is what TestFractionalOnPrometheus reads of the report.
type sharesReport struct {
	Recommendations []struct {
		Kind             string   `json:"kind"`
		Holdings         []string `json:"holdings"`
		FreedEURPerMonth float64  `json:"freed_eur_per_month"`
		Evidence         string   `json:"evidence"`
	} `json:"recommendations"`
	Holdings []struct {
		Namespace string  `json:"namespace"`
		Pod       string  `json:"pod"`
		Container string  `json:"container"`
		Sharing   string  `json:"sharing"`
		Share     float64 `json:"share"`
		Totals    struct {
			GPUHours float64 `json:"gpu_hours"`
		} `json:"totals"`
	} `json:"holdings"`
}

// TestFractionalOnPrometheus: a day of the fractional fleet's HAMi and KAI
// nodes (testdata/scenarios/fractional), backfilled into Prometheus, reads
// back with each holding's sharing and share as the scenario's comments
// give them — HAMi #3073's four quarters (6 GPU-hours each), a 10 % share
// (2.4), KAI's 0.5 (12) and the three thirds of 3 × 0.34 (8 each) — and no
// advice frees a GPU from a share or time-slices or repartitions one.
func TestFractionalOnPrometheus(t *testing.T) {
	for _, tc := range []struct {
		node string
		want map[string][3]any // namespace/pod/container → sharing, share, GPU-hours
	}{
		{"hami-node", map[string][3]any{
			"search/ranker-0/server": {"hami", 0.25, 6.0}, "ads/scorer-0/server": {"hami", 0.25, 6.0},
			"dev/notebook-a/main": {"hami", 0.25, 6.0}, "dev/notebook-f/main": {"hami", 0.1, 2.4},
		}},
		{"kai-node", map[string][3]any{
			"team-a/notebook-0/main": {"kai", 0.5, 12.0}, "team-b/infer-0/main": {"kai", 0.3, 7.2},
			"eval/eval-0/main": {"kai", 1.0 / 3, 8.0}, "research/trainer-0/main": {"exclusive", 0.0, 24.0},
		}},
	} {
		t.Run(tc.node, func(t *testing.T) {
			var r sharesReport
			readJSON(t, reportOnPrometheus(t, filepath.Join("..", "..", "testdata", "scenarios", "fractional", tc.node+".yaml")), &r)
			shared := map[string]bool{}
			for _, h := range r.Holdings {
				name := h.Namespace + "/" + h.Pod + "/" + h.Container
				if h.Sharing == "hami" || h.Sharing == "kai" {
					shared[name] = true
				}
				w, ok := tc.want[name]
				if !ok {
					continue
				}
				delete(tc.want, name)
				if h.Sharing != w[0] || math.Abs(h.Share-w[1].(float64)) > 1e-6 || math.Abs(h.Totals.GPUHours-w[2].(float64)) > 0.01 {
					t.Errorf("%s: sharing %s, share %g, %g GPU-hours; want %v", name, h.Sharing, h.Share, h.Totals.GPUHours, w)
				}
			}
			if len(tc.want) != 0 {
				t.Errorf("holdings missing: %v", tc.want)
			}
			for _, rec := range r.Recommendations {
				for _, h := range rec.Holdings {
					if shared[h] && (rec.Kind != "release" || rec.FreedEURPerMonth != 0) {
						t.Errorf("%s of %s frees %.2f EUR/month: %s", rec.Kind, h, rec.FreedEURPerMonth, rec.Evidence)
					}
					if shared[h] && rec.Kind == "release" && !strings.Contains(rec.Evidence, "share") {
						t.Errorf("release of %s does not name its share: %s", h, rec.Evidence)
					}
				}
			}
		})
	}
}

package advice_test

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/gputally/gputally/report/advice"
	"github.com/gputally/gputally/report/internal/hourly"
)

var update = flag.Bool("update", false, "rewrite the files in testdata/waiting-story")

// TestWaitingStoryFiles keeps the configuration the advice writes for
// hourly.WaitingStory — Kueue's objects, Volcano's queues and the
// kube-scheduler profile, whose figures TestQuotaFromWaitingDemand,
// TestVolcanoQueues and TestBinPackingProfile hold — in
// testdata/waiting-story, where scripts/chart-test.sh dry-runs them against
// the real kube-apiserver with Kueue's and Volcano's CRDs. Run with -update
// after checking a change.
func TestWaitingStoryFiles(t *testing.T) {
	kueue := adviseStory(t, hourly.WaitingStory(), waitSettings).Apply
	s := waitSettings
	s.Scheduler = advice.SchedulerVolcano
	volcano := adviseStory(t, hourly.WaitingStory(), s).Apply
	for name, text := range map[string]string{
		advice.ApplyKueueFile: kueue.Kueue, advice.ApplyVolcanoFile: volcano.Volcano, advice.ApplySchedulerFile: kueue.SchedulerConfig,
	} {
		path := filepath.Join("testdata", "waiting-story", name)
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test -update to create it)", err)
		}
		if string(want) != text {
			t.Errorf("%s differs from %s (run go test -update after checking the change):\n%s", name, path, text)
		}
	}
}

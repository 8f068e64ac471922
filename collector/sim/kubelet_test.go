package sim

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/attribution"
)

// virtualClock is an attribution.Clock the test moves.
type virtualClock struct{ t time.Time }

func (c *virtualClock) Now() time.Time                                     { return c.t }
func (c *virtualClock) NewTicker(time.Duration) (<-chan time.Time, func()) { return nil, func() {} }

// kubeletDownAt61m is lifeBase with the kubelet down from 61m (while build-6
// runs on GPU 1) for 2h.
var kubeletDownAt61m = strings.Replace(lifeBase, "{at: 1h, kubelet: down, for: 2h}", "{at: 61m, kubelet: down, for: 2h}", 1)

// TestKubeletDownGoesStaleAtStaleAfter drives the real attribution client
// against the simulated kubelet in virtual time: the kubelet stops answering at
// 61m; the holders of the last answer (build-6 on GPU 1, at 60m50s) are kept
// until stale-after (5m) has passed since then, and then dropped; when the
// kubelet is back the holders are those of that time.
func TestKubeletDownGoesStaleAtStaleAfter(t *testing.T) {
	b := life(t, kubeletDownAt61m)
	k, err := StartVirtualKubelet(b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)
	clock := &virtualClock{}
	client, err := attribution.New(attribution.Config{Socket: k.Socket, Clock: clock, StaleAfter: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	gpu1 := b.inv.GPUs[1].UUID
	refresh := func(since time.Duration) (*attribution.Snapshot, error) {
		t.Helper()
		clock.t = epoch.Add(since)
		if err := k.Sync(clock.t); err != nil {
			t.Fatal(err)
		}
		err := client.Refresh(context.Background())
		return client.Current(), err
	}
	lastGood := 60*time.Minute + 50*time.Second
	s, err := refresh(lastGood)
	if err != nil || !s.Up || len(s.Holders[gpu1]) != 1 || s.Holders[gpu1][0].Pod != "build-6" {
		t.Fatalf("at %v: %v, holders %v; want build-6 on GPU 1", lastGood, err, s.Holders)
	}
	for _, since := range []time.Duration{61 * time.Minute, lastGood + 5*time.Minute - time.Nanosecond} {
		s, err := refresh(since)
		if err == nil || !strings.Contains(err.Error(), "Unavailable") || !strings.Contains(err.Error(), "simulated kubelet is down") {
			t.Errorf("at %v: refresh error %v, want the kubelet down", since, err)
		}
		if s.Up || len(s.Holders[gpu1]) != 1 || !s.LastSuccess.Equal(epoch.Add(lastGood)) {
			t.Errorf("at %v: up %v, holders %v, last success %v; want build-6 kept from %v", since, s.Up, s.Holders, s.LastSuccess, lastGood)
		}
	}
	for _, since := range []time.Duration{lastGood + 5*time.Minute, 3*time.Hour + time.Minute - time.Nanosecond} {
		if s, _ := refresh(since); s.Up || s.Holders != nil {
			t.Errorf("at %v: up %v, holders %v; want none (stale)", since, s.Up, s.Holders)
		}
	}
	// Back at 3h01m: build-18 (3h00m–3h02m) holds GPU 1, the trainer GPU 0.
	s, err = refresh(3*time.Hour + time.Minute)
	if err != nil || !s.Up || len(s.Holders[gpu1]) != 1 || s.Holders[gpu1][0].Pod != "build-18" || s.Holders[b.inv.GPUs[0].UUID][0].Pod != "train-0" {
		t.Errorf("kubelet back: %v, holders %v", err, s.Holders)
	}
}

// TestKubeletSyncWritesProcesses checks that a job pod's process and log
// directory exist while it runs and are gone after, in the virtual kubelet's
// files in memory.
func TestKubeletSyncWritesProcesses(t *testing.T) {
	b := life(t, lifeBase)
	k, err := StartVirtualKubelet(b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)
	j := &b.jobs[0]
	pidDir := func(n int64) string { return filepath.Join(k.ProcRoot, strconv.FormatUint(uint64(j.pid(n)), 10)) }
	files := k.Files()
	if files == nil {
		t.Fatal("a virtual kubelet's files are not in memory")
	}
	exists := func(dir string) bool { _, err := files.ReadDir(dir); return err == nil }
	logDirs := func() []string {
		entries, _ := files.ReadDir(k.PodLogsDir)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return names
	}
	// At the start build-0 runs.
	cgroup, err := files.ReadFile(filepath.Join(pidDir(0), "cgroup"))
	allocs, _ := b.podsAt(0)
	if err != nil || !strings.Contains(string(cgroup), strings.ReplaceAll(allocs[0].UID, "-", "_")) {
		t.Fatalf("build-0's process: %q, %v; want its pod UID %s", cgroup, err, allocs[0].UID)
	}
	if dirs := logDirs(); len(dirs) != 1 || !strings.HasPrefix(dirs[0], "ci_build-0_") {
		t.Errorf("pod log dirs %v, want build-0's", dirs)
	}
	if err := k.Sync(epoch.Add(5 * time.Minute)); err != nil {
		t.Fatal(err)
	}
	if exists(pidDir(0)) || len(logDirs()) != 0 {
		t.Errorf("between runs: process %v, log dirs %v; want none", exists(pidDir(0)), logDirs())
	}
	if err := k.Sync(epoch.Add(2*time.Hour + time.Minute)); err != nil {
		t.Fatal(err)
	}
	if !exists(pidDir(12)) || len(logDirs()) != 2 || !exists(filepath.Join(k.ProcRoot, strconv.Itoa(int(b.entries[0].pids[0])))) {
		t.Errorf("at 2h01m: build-12 %v, log dirs %v; want build-12 and train-0", exists(pidDir(12)), logDirs())
	}
	if _, err := files.ReadFile(filepath.Join(k.ProcRoot, "1", "cgroup")); err != nil {
		t.Error("host init gone")
	}
}

func TestStartKubeletFixesTheStart(t *testing.T) {
	b := life(t, strings.Replace(lifeBase, "seed: 1", "seed: 2", 1))
	b.started = false // as New leaves it without Options.Start
	before := time.Now()
	k, err := StartKubelet(b)
	if err != nil {
		t.Fatal(err)
	}
	k.Stop()
	if !b.started || b.start < before.UnixNano() || b.gpus[0].start != b.start {
		t.Errorf("start %v (started %v), want at or after %v", time.Unix(0, b.start), b.started, before)
	}
	b.started = false
	if _, err := StartVirtualKubelet(b); err == nil {
		t.Error("a virtual kubelet started without a start time")
	}
}

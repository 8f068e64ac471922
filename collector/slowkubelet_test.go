package collector

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gputally/gputally/attribution"
	"github.com/gputally/gputally/attribution/kubeletsim"
	"github.com/gputally/gputally/dcgmnames"
)

// TestHungKubeletDoesNotBlockScrapes holds the kubelet's answer until the test
// is done and shows that, meanwhile, samples are taken and scrapes are served
// with device metrics and the last good pod attribution: /metrics does not wait
// for the kubelet, however long it takes.
func TestHungKubeletDoesNotBlockScrapes(t *testing.T) {
	dir, err := os.MkdirTemp("", "gl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	kubelet, err := kubeletsim.Start(filepath.Join(dir, "k.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kubelet.Stop)
	node := newBigNode()
	var pods []kubeletsim.Pod
	for uuid, hs := range node.holders().Holders {
		pods = append(pods, kubeletsim.Pod{Namespace: hs[0].Namespace, Name: hs[0].Pod, Containers: []kubeletsim.Container{
			{Name: hs[0].Container, Devices: []kubeletsim.Devices{{Resource: hs[0].Resource, IDs: []string{uuid}}}},
		}})
	}
	kubelet.SetPods(pods)
	// A timeout far beyond the test: only release ends the held refresh.
	client, err := attribution.New(attribution.Config{Socket: kubelet.Path(), Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	ctx := context.Background()
	if err := client.Refresh(ctx); err != nil {
		t.Fatal(err)
	}

	// entered is buffered: the request may reach the kubelet before the test
	// waits for it, and the signal must not be dropped then.
	entered, release := make(chan struct{}, 1), make(chan struct{})
	kubelet.SetOnRequest(func(string) {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-release
	})
	refreshed := make(chan error, 1)
	go func() { refreshed <- client.Refresh(ctx) }()
	<-entered // the kubelet now holds a refresh

	s := NewSampler(node, SamplerOptions{Now: fixedClock(t0), Holders: client})
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(s, Node{Hostname: "node-a"}, fixedClock(t0)))
	// The ticks and scrapes run apart from the test so that, should they block
	// on the hung kubelet, the test fails within a minute instead of hanging
	// until the global timeout. A minute: no deadline a loaded machine meets
	// only by luck; the whole loop takes milliseconds.
	scraped := make(chan error, 1)
	go func() {
		for k := range 50 {
			if err := s.Tick(ctx, t0); err != nil {
				scraped <- err
				return
			}
			if n, err := testutil.GatherAndCount(reg, "gputally_gpu_allocation", dcgmnames.FBUsed.New); err != nil || n != 2*56 {
				scraped <- fmt.Errorf("scrape %d while the kubelet hangs: %d allocation and FB series (%v), want %d", k, n, err, 2*56)
				return
			}
		}
		scraped <- nil
	}()
	select {
	case err := <-scraped:
		if err != nil {
			close(release)
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		close(release) // lets the blocked tick or scrape go, so the test can end
		t.Fatal("a tick or scrape blocked on the hung kubelet for a minute")
	}
	select {
	case err := <-refreshed:
		t.Fatalf("the refresh returned (%v) before the kubelet answered: the test proved nothing", err)
	default:
	}
	close(release)
	if err := <-refreshed; err != nil {
		t.Fatal(err)
	}
}

package kubeletsim_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gputally/gputally/attribution/kubeletsim"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

func dial(t *testing.T, path string) podresourcesv1.PodResourcesListerClient {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return podresourcesv1.NewPodResourcesListerClient(conn)
}

func TestServer(t *testing.T) {
	s, err := kubeletsim.StartTemp()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	c := dial(t, s.Path())
	ctx := context.Background()

	s.SetPods([]kubeletsim.Pod{{Namespace: "ml", Name: "train", Containers: []kubeletsim.Container{
		{Name: "main", Devices: []kubeletsim.Devices{{Resource: "nvidia.com/gpu", IDs: []string{"GPU-a", "GPU-b"}}}},
	}}})
	s.SetAllocatable([]kubeletsim.Devices{{Resource: "nvidia.com/gpu", IDs: []string{"GPU-a", "GPU-b", "GPU-c"}}})

	list, err := c.List(ctx, &podresourcesv1.ListPodResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	prs := list.GetPodResources()
	if len(prs) != 1 || prs[0].GetName() != "train" || prs[0].GetNamespace() != "ml" ||
		len(prs[0].GetContainers()) != 1 || len(prs[0].GetContainers()[0].GetDevices()[0].GetDeviceIds()) != 2 {
		t.Errorf("List = %v", list)
	}
	alloc, err := c.GetAllocatableResources(ctx, &podresourcesv1.AllocatableResourcesRequest{})
	if err != nil || len(alloc.GetDevices()) != 1 || len(alloc.GetDevices()[0].GetDeviceIds()) != 3 {
		t.Errorf("GetAllocatableResources = %v, %v", alloc, err)
	}
	got, err := c.Get(ctx, &podresourcesv1.GetPodResourcesRequest{PodName: "train", PodNamespace: "ml"})
	if err != nil || got.GetPodResources().GetName() != "train" {
		t.Errorf("Get = %v, %v", got, err)
	}
	if _, err := c.Get(ctx, &podresourcesv1.GetPodResourcesRequest{PodName: "nope", PodNamespace: "ml"}); err == nil {
		t.Error("Get of a missing pod succeeded")
	}
	if n := s.Requests(); n != 4 {
		t.Errorf("Requests = %d, want 4", n)
	}

	s.SetError(errors.New("boom"))
	if _, err := c.List(ctx, &podresourcesv1.ListPodResourcesRequest{}); err == nil {
		t.Error("List succeeded with SetError")
	}
	s.SetError(nil)

	// A delayed answer ends when the caller gives up.
	s.SetDelay(time.Hour)
	tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := c.List(tctx, &podresourcesv1.ListPodResourcesRequest{}); err == nil {
		t.Error("List answered despite an hour's delay")
	}

	// Stop ends a delayed answer and removes the socket and its directory.
	asked := make(chan struct{})
	s.SetOnRequest(func(string) { close(asked) })
	done := make(chan error)
	go func() {
		_, err := c.List(ctx, &podresourcesv1.ListPodResourcesRequest{})
		done <- err
	}()
	<-asked
	s.Stop()
	if err := <-done; err == nil {
		t.Error("delayed List succeeded after Stop")
	}
	if _, err := os.Stat(filepath.Dir(s.Path())); !os.IsNotExist(err) {
		t.Errorf("socket directory after Stop: %v", err)
	}
	s.Stop() // idempotent
}

func TestStartReplacesStaleSocket(t *testing.T) {
	dir, err := os.MkdirTemp("", "gl")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "k.sock")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := kubeletsim.Start(path)
	if err != nil {
		t.Fatalf("Start over a stale socket file: %v", err)
	}
	defer s.Stop()
	if _, err := dial(t, path).List(context.Background(), &podresourcesv1.ListPodResourcesRequest{}); err != nil {
		t.Errorf("List: %v", err)
	}
}

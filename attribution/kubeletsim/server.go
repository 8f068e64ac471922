// Package kubeletsim serves the kubelet pod-resources v1 gRPC API on a unix
// socket from a settable list of pods, so that the real attribution client can
// run against it: in tests, and behind the simulated backend (--backend=sim).
// It also writes the procfs and pod log directory entries that the process
// resolver reads, to disk (HostTree) or, for a simulation in virtual time, to
// memory (MemFS).
//
// Hooks let tests delay every answer, fail every call or answer with raw
// (malformed) data.
package kubeletsim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// Pod is one pod and the devices of its containers.
type Pod struct {
	Namespace  string
	Name       string
	Containers []Container
}

// Container is one container and the devices assigned to it.
type Container struct {
	Name    string
	Devices []Devices
	Claims  []Claim // DRA claims (dynamic_resources); see dra.go
}

// Devices are device IDs of one extended resource.
type Devices struct {
	Resource string   // e.g. "nvidia.com/gpu"
	IDs      []string // device-plugin IDs, e.g. "GPU-…::1"
}

// Server is a pod-resources v1 server on a unix socket. Its methods are safe for
// concurrent use.
type Server struct {
	podresourcesv1.UnimplementedPodResourcesListerServer

	path   string
	tmpDir string // removed by Stop; "" unless StartTemp made it
	grpc   *grpc.Server
	done   chan struct{} // closed by Stop: ends delayed answers
	wg     sync.WaitGroup

	mu        sync.Mutex
	list      *podresourcesv1.ListPodResourcesResponse
	alloc     *podresourcesv1.AllocatableResourcesResponse
	delay     time.Duration
	err       error
	onRequest func(method string)
	requests  int
	stopOnce  sync.Once
}

// Start listens on socketPath (removing a stale socket file there) and serves
// until Stop. It serves no pods until SetPods.
func Start(socketPath string) (*Server, error) {
	if err := os.Remove(socketPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket %s: %w", socketPath, err)
	}
	lis, err := net.Listen("unix", socketPath)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", socketPath, err)
	}
	s := &Server{
		path:  socketPath,
		grpc:  grpc.NewServer(),
		done:  make(chan struct{}),
		list:  &podresourcesv1.ListPodResourcesResponse{},
		alloc: &podresourcesv1.AllocatableResourcesResponse{},
	}
	podresourcesv1.RegisterPodResourcesListerServer(s.grpc, s)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		// Serve returns nil after Stop; any other error ends serving, which
		// clients see as a kubelet that went away.
		_ = s.grpc.Serve(lis)
	}()
	return s, nil
}

// StartTemp starts a Server on a socket in a new short temporary directory
// (unix socket paths are limited to 108 bytes), which Stop removes.
func StartTemp() (*Server, error) {
	dir, err := os.MkdirTemp("", "gputally-kubelet")
	if err != nil {
		return nil, fmt.Errorf("kubelet socket directory: %w", err)
	}
	s, err := Start(filepath.Join(dir, "kubelet.sock"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s.tmpDir = dir
	return s, nil
}

// Path returns the socket path.
func (s *Server) Path() string { return s.path }

// Stop closes the socket and every connection, ends delayed answers, and waits
// for the server to finish. It is idempotent.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		close(s.done)
		s.grpc.Stop()
		s.wg.Wait()
		// grpc removes nothing: leave no socket file behind, like a stopped kubelet.
		_ = os.Remove(s.path)
		if s.tmpDir != "" {
			_ = os.RemoveAll(s.tmpDir)
		}
	})
}

// SetPods replaces the pods that List returns.
func (s *Server) SetPods(pods []Pod) {
	resp := &podresourcesv1.ListPodResourcesResponse{}
	for _, p := range pods {
		pr := &podresourcesv1.PodResources{Name: p.Name, Namespace: p.Namespace}
		for _, c := range p.Containers {
			pr.Containers = append(pr.Containers, &podresourcesv1.ContainerResources{
				Name:    c.Name,
				Devices: toContainerDevices(c.Devices),

				DynamicResources: toDynamicResources(c.Claims),
			})
		}
		resp.PodResources = append(resp.PodResources, pr)
	}
	s.SetListResponse(resp)
}

// SetAllocatable replaces the devices that GetAllocatableResources returns.
func (s *Server) SetAllocatable(devs []Devices) {
	s.SetAllocatableResponse(&podresourcesv1.AllocatableResourcesResponse{Devices: toContainerDevices(devs)})
}

// SetListResponse makes List return a copy of resp as is, malformed or not (nil
// entries, empty or garbage IDs).
func (s *Server) SetListResponse(resp *podresourcesv1.ListPodResourcesResponse) {
	c := proto.Clone(resp).(*podresourcesv1.ListPodResourcesResponse)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.list = c
}

// SetAllocatableResponse makes GetAllocatableResources return a copy of resp as is.
func (s *Server) SetAllocatableResponse(resp *podresourcesv1.AllocatableResourcesResponse) {
	c := proto.Clone(resp).(*podresourcesv1.AllocatableResourcesResponse)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.alloc = c
}

// SetDelay delays every answer by d (0: none). A delayed answer ends early, with
// an error, when the caller gives up or the server stops.
func (s *Server) SetDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delay = d
}

// SetError makes every call fail with err (nil: answer normally).
func (s *Server) SetError(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

// SetOnRequest sets a function called at the start of every request with the
// method name ("List", "GetAllocatableResources", "Get"), before any delay.
func (s *Server) SetOnRequest(f func(method string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onRequest = f
}

// Requests returns how many requests the server has received.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// List implements podresourcesv1.PodResourcesListerServer.
func (s *Server) List(ctx context.Context, _ *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	if err := s.begin(ctx, "List"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.list, nil
}

// GetAllocatableResources implements podresourcesv1.PodResourcesListerServer.
func (s *Server) GetAllocatableResources(ctx context.Context, _ *podresourcesv1.AllocatableResourcesRequest) (*podresourcesv1.AllocatableResourcesResponse, error) {
	if err := s.begin(ctx, "GetAllocatableResources"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.alloc, nil
}

// Get implements podresourcesv1.PodResourcesListerServer: the pod of that name, or NotFound.
func (s *Server) Get(ctx context.Context, req *podresourcesv1.GetPodResourcesRequest) (*podresourcesv1.GetPodResourcesResponse, error) {
	if err := s.begin(ctx, "Get"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.list.GetPodResources() {
		if p.GetName() == req.GetPodName() && p.GetNamespace() == req.GetPodNamespace() {
			return &podresourcesv1.GetPodResourcesResponse{PodResources: p}, nil
		}
	}
	return nil, fmt.Errorf("pod %s/%s not found", req.GetPodNamespace(), req.GetPodName())
}

// begin counts a request, calls the hook, waits out the delay and returns the
// configured error.
func (s *Server) begin(ctx context.Context, method string) error {
	s.mu.Lock()
	s.requests++
	hook, delay, err := s.onRequest, s.delay, s.err
	s.mu.Unlock()
	if hook != nil {
		hook(method)
	}
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.done:
			return errors.New("kubeletsim stopped")
		}
	}
	return err
}

func toContainerDevices(devs []Devices) []*podresourcesv1.ContainerDevices {
	var out []*podresourcesv1.ContainerDevices
	for _, d := range devs {
		out = append(out, &podresourcesv1.ContainerDevices{
			ResourceName: d.Resource,
			DeviceIds:    append([]string(nil), d.IDs...),
		})
	}
	return out
}

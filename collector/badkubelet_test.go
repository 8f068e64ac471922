package collector

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"

	"github.com/gputally/gputally/attribution"
	"github.com/gputally/gputally/dcgmnames"
)

// rawCodec passes bytes through: the server below answers whatever bytes it is
// given, valid protobuf or not.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error)      { return *(v.(*[]byte)), nil }
func (rawCodec) Unmarshal(data []byte, v any) error { *(v.(*[]byte)) = data; return nil }
func (rawCodec) Name() string                       { return "proto" }

// startGarbageKubelet serves every gRPC call on a unix socket with answer.
func startGarbageKubelet(t *testing.T, answer []byte) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "gl") // short: unix socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "k.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.ForceServerCodec(rawCodec{}), grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
		var req []byte
		if err := stream.RecvMsg(&req); err != nil {
			return err
		}
		return stream.SendMsg(&answer)
	}))
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return sock
}

// TestMalformedKubeletAnswerKeepsDeviceMetrics: a kubelet whose answers are
// not protobuf (issue 14's malformed answers) sets gputally_attribution_up 0;
// every device series is still exported, as many as with attribution off.
func TestMalformedKubeletAnswerKeepsDeviceMetrics(t *testing.T) {
	ctx := context.Background()
	gather := func(holders HolderSource) (up float64, fb int) {
		t.Helper()
		s := NewSampler(newBigNode(), SamplerOptions{Now: fixedClock(t0), Holders: holders})
		if err := s.Tick(ctx, t0); err != nil {
			t.Fatal(err)
		}
		reg := prometheus.NewRegistry()
		reg.MustRegister(NewCollector(s, Node{Hostname: "node-a"}, fixedClock(t0)))
		fb, err := testutil.GatherAndCount(reg, dcgmnames.FBUsed.New)
		if err != nil {
			t.Fatal(err)
		}
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		up = -1
		for _, mf := range mfs {
			if mf.GetName() == "gputally_attribution_up" {
				up = mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		return up, fb
	}
	_, want := gather(nil)
	if want == 0 {
		t.Fatal("no device series without attribution: the test proves nothing")
	}
	for _, tc := range []struct {
		name   string
		answer []byte
	}{
		{"truncated length", []byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f}},
		{"wrong wire type", []byte{0x0b}},
		{"invalid UTF-8 in a string", append([]byte{0x0a, 0x05, 0x12, 0x03}, 0xff, 0xfe, 0xfd)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, err := attribution.New(attribution.Config{Socket: startGarbageKubelet(t, tc.answer), Timeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { client.Close() })
			if err := client.Refresh(ctx); err == nil || !strings.Contains(err.Error(), "List") {
				t.Fatalf("Refresh = %v, want a failed List", err)
			}
			up, fb := gather(client)
			if up != 0 || fb != want {
				t.Errorf("gputally_attribution_up %v and %d FB series, want 0 and %d", up, fb, want)
			}
		})
	}
}

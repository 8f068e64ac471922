package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/collector"
	"github.com/gputally/gputally/collector/dcgm"
)

// namedBackend is a Backend that only has a name.
type namedBackend string

func (b namedBackend) Name() string { return string(b) }
func (namedBackend) Inventory(context.Context) (collector.Inventory, error) {
	return collector.Inventory{}, nil
}
func (namedBackend) Close() error { return nil }
func (namedBackend) Sample(context.Context, time.Time, *collector.Sample, collector.ErrorCounter) error {
	return nil
}

func TestOpenAuto(t *testing.T) {
	noDCGM := func() (collector.Backend, error) { return nil, fmt.Errorf("connect: %w", dcgm.ErrLibraryNotFound) }
	noNVML := func() (collector.Backend, error) { return nil, errors.New("init: libnvidia-ml.so.1 not found") }
	withDCGM := func() (collector.Backend, error) { return namedBackend("dcgm"), nil }
	withNVML := func() (collector.Backend, error) { return namedBackend("nvml"), nil }
	mustNotOpen := func() (collector.Backend, error) { return nil, errors.New("opened NVML although DCGM was chosen") }
	for _, tc := range []struct {
		name        string
		dcgm, nvml  func() (collector.Backend, error)
		want        string // backend chosen, "" for an error
		log, errMsg string
	}{
		{"DCGM loads", withDCGM, mustNotOpen, "dcgm", "using DCGM", ""},
		{"no DCGM, NVML loads", noDCGM, withNVML, "nvml", "using NVML", ""},
		{"neither", noDCGM, noNVML, "", "", "--backend=sim"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			b, err := openAuto(tc.dcgm, tc.nvml, slog.New(slog.NewTextHandler(&logs, nil)))
			if tc.want == "" {
				if err == nil || !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), tc.errMsg) {
					t.Fatalf("err = %v, want a usage error mentioning %q", err, tc.errMsg)
				}
				return
			}
			if err != nil || b.Name() != tc.want {
				t.Fatalf("got %v, %v; want the %s backend", b, err, tc.want)
			}
			if !strings.Contains(logs.String(), tc.log) {
				t.Errorf("log %q lacks %q", logs.String(), tc.log)
			}
		})
	}
}

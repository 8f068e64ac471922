//go:build !cgo

package main

import (
	"errors"
	"log/slog"

	"github.com/gputally/gputally/collector"
)

// nvmlBackend fails: go-nvml needs cgo, and this binary was built without it.
func nvmlBackend(*slog.Logger) (collector.Backend, error) {
	return nil, errors.New("this gputally was built with CGO_ENABLED=0 and has no NVML backend (libnvidia-ml.so.1); rebuild with cgo, or run with --backend=sim")
}

//go:build cgo

package main

import (
	"log/slog"

	"github.com/gputally/gputally/collector"
	"github.com/gputally/gputally/collector/nvml"
)

// nvmlBackend opens the NVML backend (go-nvml needs cgo).
func nvmlBackend(logger *slog.Logger) (collector.Backend, error) {
	b, err := nvml.Open(logger)
	if err != nil {
		return nil, err
	}
	return b, nil
}

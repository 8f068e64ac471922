package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/gputally/gputally/collector/sim"
)

// loadFleet reads the scenarios of a simulated fleet: each path is a
// scenario file or a directory whose *.yaml files are one node each (in name
// order). No path is the built-in node.
func loadFleet(paths []string) ([]*sim.Scenario, error) {
	if len(paths) == 0 {
		return []*sim.Scenario{sim.Default()}, nil
	}
	var files []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, badInput(fmt.Errorf("scenario: %w", err))
		}
		if !fi.IsDir() {
			files = append(files, p)
			continue
		}
		in, err := filepath.Glob(filepath.Join(p, "*.yaml"))
		if err != nil {
			return nil, badInput(fmt.Errorf("scenario directory %s: %w", p, err))
		}
		if len(in) == 0 {
			return nil, badInput(fmt.Errorf("scenario directory %s holds no *.yaml file", p))
		}
		slices.Sort(in)
		files = append(files, in...)
	}
	out := make([]*sim.Scenario, 0, len(files))
	for _, f := range files {
		sc, err := loadScenario(f)
		if err != nil {
			return nil, err
		}
		out = append(out, sc)
	}
	return out, nil
}

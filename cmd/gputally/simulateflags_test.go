package main

import "testing"

// TestSimulateDCGMExporterFlagsBadInput: what the dcgm-exporter flavour
// leaves out, and the label shapes it writes, need that flavour; a shape
// must be one it can write; and the scrape jitter stays under half the
// scrape interval (its duration syntax has no unit below 1ms) — exit 2 with one clear error before anything is
// simulated.
func TestSimulateDCGMExporterFlagsBadInput(t *testing.T) {
	sim := []string{"simulate", "history", "--duration=1h", "--out=-"}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"no-profiling without the flavour", append(sim, "--dcgm-exporter.no-profiling"), []string{"--dcgm-exporter.* flags need --flavor=dcgm-exporter"}},
		{"jitter past half the interval", append(sim, "--scrape-jitter=15s"), []string{"--scrape-jitter 15s", "under half --scrape-interval"}},
		{"a shape without the flavour", append(sim, "--dcgm-exporter.mig-profile-as=7g.80gb=7g.79gb"), []string{"--dcgm-exporter.* flags need --flavor=dcgm-exporter"}},
		{"a shape that cannot be", append(sim, "--flavor=dcgm-exporter", "--dcgm-exporter.scrape-target=servicemonitor"),
			[]string{"--dcgm-exporter.*: ", `scrape target "servicemonitor": want honor-labels or no-honor-labels`}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkBadInput(t, nil, tc.args, tc.want...) })
	}
}

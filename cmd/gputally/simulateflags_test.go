package main

import "testing"

// TestSimulateDCGMExporterFlagsBadInput: what the dcgm-exporter flavour
// leaves out needs that flavour, and the scrape jitter stays under half the
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
		{"names without the flavour", append(sim, "--dcgm-exporter.names=4.10"), []string{"--dcgm-exporter.* flags need --flavor=dcgm-exporter"}},
		{"rolling without a time", append(sim, "--flavor=dcgm-exporter", "--dcgm-exporter.names=rolling"), []string{"--dcgm-exporter.names=rolling needs --dcgm-exporter.upgrade-after inside --duration 1h"}},
		{"rolling after the end", append(sim, "--flavor=dcgm-exporter", "--dcgm-exporter.names=rolling", "--dcgm-exporter.upgrade-after=2h"), []string{"upgrade-after inside --duration 1h"}},
		{"a naming it does not know", append(sim, "--flavor=dcgm-exporter", "--dcgm-exporter.names=4.9"), []string{"must be one of 4.8,4.10,rolling,both", "4.9"}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkBadInput(t, nil, tc.args, tc.want...) })
	}
}

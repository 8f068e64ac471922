package report

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// TestBaselineOfOtherClustersIsBadInput: the test fleet has no cluster label;
// its report of the week before, relabelled as cluster east's, is refused once
// the data says which clusters the period covers — as bad input (a
// *ConfigError, exit 2) like every other baseline refused, not as a runtime
// failure.
func TestBaselineOfOtherClustersIsBadInput(t *testing.T) {
	path := weekBefore(t, t.TempDir())
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	doc["clusters"] = []string{"east"}
	if b, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.Baseline = path
	_, err = generateFrom(context.Background(), cfg, fleetQuerier(testFleet(), time.Hour), discard())
	if !errors.As(err, new(*ConfigError)) || !strings.Contains(err.Error(), "clusters [east]") {
		t.Fatalf("error %v (%T), want a *ConfigError naming clusters [east]", err, err)
	}
}

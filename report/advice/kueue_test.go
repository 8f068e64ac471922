package advice

import (
	"testing"

	"github.com/gputally/gputally/report/internal/applyspec"
)

// TestKueueNamesAreUnique: teams whose names make the same DNS name get
// ClusterQueues of their own.
func TestKueueNamesAreUnique(t *testing.T) {
	text := kueueYAML([]quota{
		{team: "ML", resource: "nvidia.com/gpu", busy: 2, devices: 3, namespaces: []string{"a"}},
		{team: "ml", resource: "nvidia.com/gpu", busy: 1, devices: 2, namespaces: []string{"b"}},
	}, 1.2, "in one 30s scrape interval")
	quota := applyspec.CheckKueue(t, text)
	if quota["ml nvidia.com/gpu"] != 3 || quota["ml-2 nvidia.com/gpu"] != 2 {
		t.Errorf("quotas %v, want ml 3 and ml-2 2:\n%s", quota, text)
	}
}

// TestQuotaOf: peak × headroom rounded up, at least 1, with no float error
// pushing an exact product up a device.
func TestQuotaOf(t *testing.T) {
	for _, tc := range []struct {
		peak     int
		headroom float64
		want     int
	}{{0, 1.2, 1}, {1, 1, 1}, {3, 1.2, 4}, {5, 1.2, 6}, {50, 1.1, 55}, {51, 1.1, 57}} {
		if got := quotaOf(float64(tc.peak), tc.headroom); got != tc.want {
			t.Errorf("quotaOf(%d, %g) = %d, want %d", tc.peak, tc.headroom, got, tc.want)
		}
	}
}

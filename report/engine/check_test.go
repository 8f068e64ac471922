package engine

import (
	"math"
	"strings"
	"testing"

	pmodel "github.com/prometheus/common/model"
)

func pair(sec int64, v float64) pmodel.SamplePair {
	return pmodel.SamplePair{Timestamp: pmodel.TimeFromUnix(sec), Value: pmodel.SampleValue(v)}
}

// TestCheckAnswer: samples out of time order are sorted; two samples of a
// series at one time, a series twice, and ±Inf are refused, naming them.
func TestCheckAnswer(t *testing.T) {
	m := pmodel.Matrix{{Metric: pmodel.Metric{"UUID": "GPU-0"}, Values: []pmodel.SamplePair{pair(30, 3), pair(10, 1), pair(20, 2)}}}
	if err := checkAnswer(m); err != nil {
		t.Fatal(err)
	}
	for i, p := range m[0].Values {
		if want := pair(int64(10*(i+1)), float64(i+1)); p != want {
			t.Errorf("sample %d: %v, want %v", i, p, want)
		}
	}
	for _, tc := range []struct {
		name string
		m    pmodel.Matrix
		want string
	}{
		{"one time twice", pmodel.Matrix{{Metric: pmodel.Metric{"UUID": "GPU-0"}, Values: []pmodel.SamplePair{pair(20, 2), pair(10, 1), pair(20, 5)}}},
			`two samples of {UUID="GPU-0"} at 1970-01-01T00:00:20Z: 2 and 5`},
		{"a series twice", pmodel.Matrix{{Metric: pmodel.Metric{"UUID": "GPU-0"}}, {Metric: pmodel.Metric{"UUID": "GPU-1"}}, {Metric: pmodel.Metric{"UUID": "GPU-0"}}},
			`the answer holds the series {UUID="GPU-0"} twice`},
		{"+Inf", pmodel.Matrix{{Metric: pmodel.Metric{"UUID": "GPU-0"}, Values: []pmodel.SamplePair{pair(10, 1), pair(20, math.Inf(1))}}},
			`the engine answered +Inf for {UUID="GPU-0"} at 1970-01-01T00:00:20Z`},
		{"-Inf", pmodel.Matrix{{Metric: pmodel.Metric{"UUID": "GPU-0"}, Values: []pmodel.SamplePair{pair(10, math.Inf(-1))}}},
			`the engine answered -Inf for {UUID="GPU-0"} at 1970-01-01T00:00:10Z`},
	} {
		if err := checkAnswer(tc.m); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.want)
		}
	}
}

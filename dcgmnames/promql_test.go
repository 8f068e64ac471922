package dcgmnames

import (
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
)

const sel = `hostname="a"`

func fbRatio(series func(Family) string) string { return series(FBUsed) + " / " + series(FBFree) }

// TestExpressions pins the PromQL of each way of reading, and that it parses.
// The rules' promtool tests (alerts/testdata) evaluate it on series of
// either naming, across an upgrade and side by side.
func TestExpressions(t *testing.T) {
	for _, c := range []struct {
		name, got, want string
	}{
		{"value, 4.10", ReadsCurrent.Value(FBUsed, sel), `DCGM_FI_DEV_FB_USED_BYTES{hostname="a"}`},
		{"value, 4.8", ReadsLegacy.Value(FBUsed, sel), `(DCGM_FI_DEV_FB_USED{hostname="a"} * 1048576)`},
		{"value, transition", ReadsBoth.Value(FBUsed, sel),
			`(DCGM_FI_DEV_FB_USED_BYTES{hostname="a"} or ignoring(DCGM_FI_DRIVER_VERSION, DCGM_FI_SYSTEM_DRIVER_VERSION) DCGM_FI_DEV_FB_USED{hostname="a"} * 1048576)`},
		{"same unit, 4.8", ReadsLegacy.Value(GPUTemp, ""), `DCGM_FI_DEV_GPU_TEMP`},
		{"same name, transition", ReadsBoth.Value(ECCDBEVolatile, ""), `DCGM_FI_DEV_ECC_DBE_VOL_TOTAL`},
		{"rate, 4.8", ReadsLegacy.Over("rate", PowerViolation, sel, "5m"), `(rate(DCGM_FI_DEV_POWER_VIOLATION{hostname="a"}[5m]) / 1000000000)`},
		{"rate, 4.10", ReadsCurrent.Over("rate", PowerViolation, sel, "5m"), `rate(DCGM_FI_DEV_GPU_POWER_THROTTLE_SECONDS_TOTAL{hostname="a"}[5m])`},
		{"ratio, 4.8", ReadsLegacy.Each(sel, fbRatio), `DCGM_FI_DEV_FB_USED{hostname="a"} / DCGM_FI_DEV_FB_FREE{hostname="a"}`},
		{"ratio, transition", ReadsBoth.Each(sel, fbRatio),
			"(DCGM_FI_DEV_FB_USED_BYTES{hostname=\"a\"} / DCGM_FI_DEV_FB_FREE_BYTES{hostname=\"a\"})\n" +
				"or ignoring(DCGM_FI_DRIVER_VERSION, DCGM_FI_SYSTEM_DRIVER_VERSION)\n(DCGM_FI_DEV_FB_USED{hostname=\"a\"} / DCGM_FI_DEV_FB_FREE{hostname=\"a\"})"},
		{"apply, transition", ReadsBoth.Apply(FBUsed, sel, func(s string) string { return "max without (instance) (last_over_time(" + s + "[1m]))" }),
			`(max without (instance) (last_over_time(DCGM_FI_DEV_FB_USED_BYTES{hostname="a"}[1m])) or ignoring(DCGM_FI_DRIVER_VERSION, DCGM_FI_SYSTEM_DRIVER_VERSION) max without (instance) (last_over_time(DCGM_FI_DEV_FB_USED{hostname="a"}[1m])) * 1048576)`},
		{"apply, 4.8", ReadsLegacy.Apply(GPUUtil, "", func(s string) string { return "avg(" + s + ")" }), `(avg(DCGM_FI_DEV_GPU_UTIL) / 100)`},
		{"activity, 4.8", ReadsLegacy.Either("", GREngineActive, GPUUtil), "DCGM_FI_PROF_GR_ENGINE_ACTIVE\nor\nDCGM_FI_DEV_GPU_UTIL / 100"},
		{"activity, transition", ReadsBoth.Either("", GREngineActive, GPUUtil),
			"DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO\nor ignoring(DCGM_FI_DRIVER_VERSION, DCGM_FI_SYSTEM_DRIVER_VERSION)\nDCGM_FI_PROF_GR_ENGINE_ACTIVE\n" +
				"or ignoring(DCGM_FI_DRIVER_VERSION, DCGM_FI_SYSTEM_DRIVER_VERSION)\nDCGM_FI_DEV_GPU_UTIL_RATIO\n" +
				"or ignoring(DCGM_FI_DRIVER_VERSION, DCGM_FI_SYSTEM_DRIVER_VERSION)\nDCGM_FI_DEV_GPU_UTIL / 100"},
	} {
		if c.got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, c.got, c.want)
		}
		if _, err := parser.NewParser(parser.Options{}).ParseExpr(c.got + " > 0"); err != nil {
			t.Errorf("%s: %s: %v", c.name, c.got, err)
		}
	}
}

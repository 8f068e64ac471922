package engine

import (
	"math"
	"strings"
	"testing"

	pmodel "github.com/prometheus/common/model"
)

// TestDecodeAnswerText: the streaming reader reads what encoding/json reads —
// escapes (a quote, a backslash before the closing quote, \u), a label longer
// than its buffer, white space anywhere, fractional times, NaN and ±Inf — and
// refuses nesting deeper than an answer has, rather than growing its stack.
func TestDecodeAnswerText(t *testing.T) {
	long := strings.Repeat("x", 100_000) // above the 64 KiB buffer
	body := "{ \"status\" : \"success\" ,\n \"data\" : {\n  \"resultType\" : \"matrix\",\n  \"result\" : [\n" +
		`   { "metric" : { "a" : "say \"hi\"", "b" : "ends in \\", "c" : "caf\u00e9", "long" : "` + long + `" },` + "\n" +
		`     "values" : [ [ 1700000000.5 , "NaN" ] , [1700000001.25,"+Inf"],[1700000002,"-Inf"] , [ 1700000003.123456 , "1e3" ] ] } ] } }`
	m, _, err := decodeAnswer(200, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 1 {
		t.Fatalf("%d series, want 1", len(m))
	}
	want := pmodel.Metric{"a": `say "hi"`, "b": `ends in \`, "c": "café", "long": pmodel.LabelValue(long)}
	if !m[0].Metric.Equal(want) {
		t.Errorf("labels %v, want %v", m[0].Metric, want)
	}
	// Times in ms, a fraction cut to its first three digits (as model.Time reads it).
	v := m[0].Values
	if len(v) != 4 || v[0].Timestamp != 1700000000500 || v[1].Timestamp != 1700000001250 || v[2].Timestamp != 1700000002000 || v[3].Timestamp != 1700000003123 ||
		!math.IsNaN(float64(v[0].Value)) || !math.IsInf(float64(v[1].Value), 1) || !math.IsInf(float64(v[2].Value), -1) || v[3].Value != 1000 {
		t.Errorf("samples %v, want NaN @…000.5, +Inf @…001.25, -Inf @…002, 1000 @…003.123", v)
	}
	if cap(v) != len(v) {
		t.Errorf("samples kept in a slice of capacity %d for %d samples, want its exact length", cap(v), len(v))
	}

	deep := `{"status":"success","data":{"resultType":"matrix","result":[],"stats":` + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + `}}`
	if _, _, err := decodeAnswer(200, strings.NewReader(deep)); err == nil || !strings.Contains(err.Error(), "nested more than 64 deep") {
		t.Errorf("100,000 arrays deep: %v, want the nesting refused", err)
	}
	for _, bad := range []string{
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1700000000,1]]}]}}`,       // a value not quoted
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1700000000,"1" "2"]]}]}}`, // no comma
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[["1700000000","1"]]}]}}`,   // a quoted time
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":1},"values":[]}]}}`,                // a label that is no string
		`{"status":"success","stats":{"x":tru},"data":{"resultType":"matrix","result":[]}}`,                            // a literal that is none
	} {
		if _, _, err := decodeAnswer(200, strings.NewReader(bad)); err == nil {
			t.Errorf("%s: decoded, want an error", bad)
		}
	}
}

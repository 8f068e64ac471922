package engine

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"unicode/utf8"

	pmodel "github.com/prometheus/common/model"
)

// FuzzDecodeAnswer holds the streaming reader to encoding/json's decoding of
// model.Matrix, which it replaced: any answer encoding/json reads as a
// successful matrix (referenceMatrix) is read to the same series, labels and
// samples (NaN as NaN); nothing makes the reader panic or hang.
func FuzzDecodeAnswer(f *testing.F) {
	for _, seed := range []string{
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"UUID":"GPU-0","a":"say \"hi\""},"values":[[1700000000.5,"1"],[1700000060,"NaN"]]}]}}`,
		`{"status":"success","warnings":["w"],"data":{"result":[{"metric":{},"values":[]},{"values":null}],"resultType":"matrix","stats":{"a":[1,{"b":null}]}}}`,
		`{"status":"success","data":{"resultType":"matrix","result":null}}`,
		`{"status":"error","errorType":"bad_data","error":"x"}`,
		` { "status" : "success" , "data" : { "resultType" : "matrix" , "result" : [ ] } } `,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		m, _, err := decodeAnswer(200, bytes.NewReader(body))
		ref, ok := referenceMatrix(body)
		if !ok {
			return // not an answer both must read
		}
		if err != nil {
			t.Fatalf("encoding/json reads %d series, the stream reader: %v", len(ref), err)
		}
		if len(m) != len(ref) {
			t.Fatalf("%d series, encoding/json %d", len(m), len(ref))
		}
		for i, s := range ref {
			if !s.Metric.Equal(m[i].Metric) && (len(s.Metric) > 0 || len(m[i].Metric) > 0) {
				t.Errorf("series %d: labels %v, encoding/json %v", i, m[i].Metric, s.Metric)
			}
			if len(s.Values) != len(m[i].Values) {
				t.Fatalf("series %d: %d samples, encoding/json %d", i, len(m[i].Values), len(s.Values))
			}
			for j, p := range s.Values {
				q := m[i].Values[j]
				if p.Timestamp != q.Timestamp || math.Float64bits(float64(p.Value)) != math.Float64bits(float64(q.Value)) && !(math.IsNaN(float64(p.Value)) && math.IsNaN(float64(q.Value))) {
					t.Errorf("series %d sample %d: %v, encoding/json %v", i, j, q, p)
				}
			}
		}
	})
}

// referenceMatrix is the matrix of a successful answer as encoding/json
// reads it, its keys matched exactly (maps: a struct would take "Status"
// for "status"); false for any other text, and for text that is not valid
// UTF-8 (encoding/json replaces what is not; the stream reader keeps the
// bytes).
func referenceMatrix(body []byte) (pmodel.Matrix, bool) {
	var env, data map[string]json.RawMessage
	var status, resultType string
	var result []json.RawMessage
	if !utf8.Valid(body) || json.Unmarshal(body, &env) != nil || json.Unmarshal(env["status"], &status) != nil || status != "success" ||
		json.Unmarshal(env["data"], &data) != nil || json.Unmarshal(data["resultType"], &resultType) != nil || resultType != "matrix" ||
		json.Unmarshal(data["result"], &result) != nil {
		return nil, false
	}
	var m pmodel.Matrix
	for _, r := range result {
		var series map[string]json.RawMessage
		s := &pmodel.SampleStream{}
		if json.Unmarshal(r, &series) != nil || series == nil {
			return nil, false
		}
		if raw, ok := series["metric"]; ok && json.Unmarshal(raw, &s.Metric) != nil {
			return nil, false
		}
		if raw, ok := series["values"]; ok && json.Unmarshal(raw, &s.Values) != nil {
			return nil, false
		}
		m = append(m, s)
	}
	return m, true
}

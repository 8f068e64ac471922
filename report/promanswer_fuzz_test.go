package report

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// FuzzPrometheusAnswer answers every range query of a whole report run with
// the same arbitrary bytes, as a broken or hostile Prometheus-compatible API
// might: truncated JSON, the wrong result type, NaN and infinite values,
// duplicate series, absurd timestamps, labels the report does not expect. The
// report must end (error or report, never a panic or a hang), and a report it
// writes must be valid JSON.
func FuzzPrometheusAnswer(f *testing.F) {
	const series = `{"metric":{"__name__":"x","UUID":"GPU-0","gpu":"0","Hostname":"node-a","modelName":"NVIDIA H100 80GB HBM3",` +
		`"namespace":"ml","pod":"train-0","container":"main","state":"busy","component":"capital","resource":"nvidia.com/gpu","sharing":"exclusive"},` +
		`"values":[[1700000000,"1"],[1700003600,"2.5"]]}`
	for _, seed := range []string{
		`{"status":"success","data":{"resultType":"matrix","result":[` + series + `]}}`,
		`{"status":"success","data":{"resultType":"matrix","result":[` + series + `,` + series + `]}}`, // duplicate series
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"UUID":"GPU-0"},"values":[[1700000000,"NaN"],[1700000060,"+Inf"],[1700000120,"-Inf"]]}]}}`,
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[-1e300,"1"],[1e300,"1e308"]]}]}}`,
		`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1700000000,"1"]}]}}`,
		`{"status":"success","data":{"resultType":"matrix","result":[]}}`,
		`{"status":"error","errorType":"execution","error":"query timed out"}`,
		`{"status":"success","warnings":["partial response"],"data":{"resultType":"matrix","result":[` + series + `]}}`,
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"UUID":"GPU-0"},"values":[[1700000000`,
	} {
		f.Add([]byte(seed))
	}
	var answer atomic.Pointer[[]byte]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(*answer.Load())
	}))
	defer srv.Close()
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, body []byte) {
		answer.Store(&body)
		cfg := testConfig()
		cfg.PrometheusURL = srv.URL
		cfg.Format = FormatJSON
		cfg.Out = filepath.Join(dir, "report.json")
		cfg.Timeout = time.Minute // a hang is a failure of the fuzz run's own deadline, not a race
		os.Remove(cfg.Out)
		if err := Run(context.Background(), cfg, discard()); err != nil {
			return
		}
		b, err := os.ReadFile(cfg.Out)
		if err != nil {
			t.Fatalf("Run succeeded but wrote no report: %v", err)
		}
		var r Report
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("Run wrote a report that is not valid JSON: %v\n%s", err, b)
		}
	})
}

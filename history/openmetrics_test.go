package history

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// TestFamilyWriterSpool writes three scrapes of two families, after and
// before 1970, through the binary spool, with the series maps emptied never and at every new series,
// and with a series of more labels than a key holds, and checks the text
// sample by sample against what the scrapes held.
func TestFamilyWriterSpool(t *testing.T) {
	pair := func(n, v string) *dto.LabelPair { return &dto.LabelPair{Name: &n, Value: &v} }
	gpu0, gpu1 := pair("gpu", "0"), pair("gpu", "1")
	quoted := pair("pod", `a"b\c`)
	var long []*dto.LabelPair
	var longText []string
	for i := range maxKeyLabels + 3 {
		long = append(long, pair(fmt.Sprintf("l%02d", i), "v"))
		longText = append(longText, fmt.Sprintf(`l%02d="v"`, i))
	}
	gauge, counter := dto.MetricType_GAUGE, dto.MetricType_COUNTER
	scrape := func(k float64) []*dto.MetricFamily {
		g := func(v float64, labels ...*dto.LabelPair) *dto.Metric {
			return &dto.Metric{Label: labels, Gauge: &dto.Gauge{Value: &v}}
		}
		c := func(v float64, labels ...*dto.LabelPair) *dto.Metric {
			return &dto.Metric{Label: labels, Counter: &dto.Counter{Value: &v}}
		}
		return []*dto.MetricFamily{
			{Name: new("temp"), Type: &gauge, Metric: []*dto.Metric{g(40+k, gpu0), g(0.5*k, gpu1, quoted), g(-k, long...)}},
			{Name: new("seconds_total"), Type: &counter, Metric: []*dto.Metric{c(10 * k), c(1e21+k, gpu1)}},
		}
	}
	// A time before 1970 too: a spool must keep negative timestamps.
	for _, t0 := range []time.Time{time.Unix(1_700_000_000, 250_000_000), time.Unix(-3600, 250_000_000)} {
		var want []string
		for k := range 3 {
			ts := fmt.Sprintf("%.2f", float64(t0.Add(time.Duration(k)*30*time.Second).UnixMilli())/1000)
			kf := float64(k)
			want = append(want,
				fmt.Sprintf(`temp{gpu="0"} %v %s`, 40+kf, ts),
				fmt.Sprintf(`temp{gpu="1",pod="a\"b\\c"} %v %s`, 0.5*kf, ts),
				fmt.Sprintf(`temp{%s} %v %s`, strings.Join(longText, ","), -kf, ts),
			)
		}
		var counters []string
		for k := range 3 {
			ts := fmt.Sprintf("%.2f", float64(t0.Add(time.Duration(k)*30*time.Second).UnixMilli())/1000)
			counters = append(counters, fmt.Sprintf("seconds_total %v %s", 10*float64(k), ts), fmt.Sprintf(`seconds_total{gpu="1"} %v %s`, 1e21+float64(k), ts))
		}
		wantText := "# TYPE seconds_total unknown\n" + strings.Join(counters, "\n") + "\n# TYPE temp gauge\n" + strings.Join(want, "\n") + "\n# EOF\n"
		for _, budget := range []int{defaultSeriesBytes, 1} {
			fw, err := newFamilyWriter()
			if err != nil {
				t.Fatal(err)
			}
			defer fw.close()
			fw.maxSeriesBytes = budget
			for k := range 3 {
				if err := fw.AddScrape(scrape(float64(k)), t0.Add(time.Duration(k)*30*time.Second)); err != nil {
					t.Fatal(err)
				}
			}
			var out bytes.Buffer
			if err := fw.writeTo(&out); err != nil {
				t.Fatal(err)
			}
			if out.String() != wantText {
				t.Errorf("from %s, series budget %d bytes:\n%s\nwant:\n%s", t0.UTC(), budget, out.String(), wantText)
			}
		}
	}
}

// TestFamilyWriterDamagedSpool: a spool changed under the run (a series
// whose label text claims a terabyte, a series used before it is defined, a
// record cut short) is an error, never a panic or a huge allocation.
func TestFamilyWriterDamagedSpool(t *testing.T) {
	for name, rec := range map[string][]byte{
		"huge label text":  binary.AppendUvarint([]byte{0, 1, 1}, 1<<40),
		"undefined series": {0, 1, 2 << 1},
		"cut short":        {0, 1, 1, 5, '{'},
	} {
		fw, err := newFamilyWriter()
		if err != nil {
			t.Fatal(err)
		}
		defer fw.close()
		v := 1.0
		gauge := dto.MetricType_GAUGE
		if err := fw.AddScrape([]*dto.MetricFamily{{Name: new("temp"), Type: &gauge, Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: &v}}}}}, time.Unix(0, 0)); err != nil {
			t.Fatal(err)
		}
		f := fw.families["temp"]
		if err := f.buf.Flush(); err != nil {
			t.Fatal(err)
		}
		if _, err := f.file.Write(rec); err != nil {
			t.Fatal(err)
		}
		if err := fw.writeTo(io.Discard); err == nil || !strings.Contains(err.Error(), "read back the spool") {
			t.Errorf("%s: err = %v, want a spool error", name, err)
		}
	}
}

package hugeanswer

import (
	"encoding/json"
	"io"
	"testing"
)

// TestReaderSize: the answer is exactly the size asked, valid JSON, and a
// matrix of series of 96 samples each with its own UUID.
func TestReaderSize(t *testing.T) {
	one := int64(len(head) + len(series(nil, 0)) + len(tail))
	for _, size := range []int64{0, one, one + 1, 1<<20 + 7} {
		text, err := io.ReadAll(Reader(size))
		if err != nil {
			t.Fatal(err)
		}
		if want := max(size, one); int64(len(text)) != want {
			t.Errorf("size %d: %d bytes, want %d", size, len(text), want)
		}
		var answer struct {
			Data struct {
				Result []struct {
					Metric map[string]string
					Values [][2]any
				}
			}
		}
		if err := json.Unmarshal(text, &answer); err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		uuids := map[string]bool{}
		for _, s := range answer.Data.Result {
			uuids[s.Metric["UUID"]] = true
			if len(s.Values) != samplesPerSeries {
				t.Errorf("size %d: a series of %d samples", size, len(s.Values))
			}
		}
		// 1 MiB + 7 bytes hold 1,048,583 / 2.5 kB a series: about 400 series.
		if len(uuids) != len(answer.Data.Result) || size == 1<<20+7 && len(uuids) < 100 {
			t.Errorf("size %d: %d series, %d UUIDs", size, len(answer.Data.Result), len(uuids))
		}
	}
}

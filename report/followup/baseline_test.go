package followup_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/report/advice"
	"github.com/gputally/gputally/report/followup"
)

// TestOpenRefusesBadFiles: a baseline file that is not a report, of an
// unknown schema version, of another range length, or not earlier than the
// period (ending less than half a range before its end) is refused with
// ErrBadBaseline and a message that says why; one that ends exactly half a
// range before is an earlier period.
func TestOpenRefusesBadFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string { return writeFile(t, dir, name, text) }
	half := end.Add(-84 * time.Hour) // half this 7-day period before its end
	for _, tc := range []struct {
		name, path string
		want       string // in the error; "" for none
	}{
		{"not JSON", write("garbage.json", "<html>"), "not a gputally report"},
		{"JSON of something else", write("other.json", `{"a": 1}`), "not a gputally report"},
		{"no schema version", baselineJSON(t, dir, "v0.json", nil, map[string]any{"schema_version": 0}), "has no schema_version"},
		{"a later schema version", baselineJSON(t, dir, "v2.json", nil, map[string]any{"schema_version": followup.SchemaVersion + 1}), "schema_version 2 is unknown"},
		{"a month", baselineJSON(t, dir, "month.json", nil, map[string]any{"start": week2.Add(-30 * 24 * time.Hour)}), "it covers 30d and this report 1w"},
		{"a month asked, a week of history", baselineJSON(t, dir, "young-month.json", nil, map[string]any{"range": "30d"}), "it covers 30d and this report 1w"},
		{"a week asked, 100 h of history", baselineJSON(t, dir, "young.json", nil, map[string]any{"range": "1w", "start": week2.Add(-100 * time.Hour)}), ""},
		{"this period", baselineJSON(t, dir, "same.json", nil, map[string]any{"start": week2, "end": end}), "a baseline is an earlier period"},
		{"a second past half", baselineJSON(t, dir, "late.json", nil, map[string]any{"start": half.Add(time.Second - 168*time.Hour), "end": half.Add(time.Second)}), "less than half this report's range"},
		{"half a range before", baselineJSON(t, dir, "half.json", nil, map[string]any{"start": half.Add(-168 * time.Hour), "end": half}), ""},
		{"missing", filepath.Join(dir, "none.json"), "none.json"},
		{"a directory", dir, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := followup.Open(tc.path, followup.Period{Start: week2, End: end})
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.want != "" && (!errors.Is(err, followup.ErrBadBaseline) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), filepath.Base(tc.path))):
				t.Errorf("error %v, want a bad baseline naming %s: %q", err, filepath.Base(tc.path), tc.want)
			}
		})
	}
}

// TestClusters: a baseline file of other clusters is refused once the data
// says which clusters the period covers; one that shares a cluster is
// followed up, with a note that the fleets differ.
func TestClusters(t *testing.T) {
	gpus := []gpu{{"GPU-A", "node-a", "0", 1}}
	uses := []use{{gpu: "GPU-A", holder: "ml/t/main", to: 6, busy: 1}}
	for _, tc := range []struct {
		name     string
		clusters []string // the baseline's; this period's is east
		refused  bool
		note     bool
	}{
		{"same", []string{"east"}, false, false},
		{"one more", []string{"east", "west"}, false, true},
		{"another", []string{"west"}, true, false},
		{"none named", []string{}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := baselineJSON(t, t.TempDir(), "b.json", nil, map[string]any{"clusters": tc.clusters})
			b, err := followup.Open(path, followup.Period{Start: week2, End: end})
			if err != nil {
				t.Fatal(err)
			}
			r, d := periodIn(t, "east", gpus, uses)
			res, err := b.Follow(r, &advice.Advice{}, d)
			if tc.refused {
				if !errors.Is(err, followup.ErrBadBaseline) || !strings.Contains(err.Error(), "a baseline is of the same cluster") {
					t.Errorf("error %v, want a bad baseline of another cluster", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			noted := slices.ContainsFunc(res.Comparison.Notes, func(n string) bool { return strings.Contains(n, "compare different clusters") })
			if noted != tc.note {
				t.Errorf("notes %q, want a note on the clusters: %v", res.Comparison.Notes, tc.note)
			}
		})
	}
}

// TestYoungBaseline: the first report of a cluster younger than the range
// covers only the history there is — asked for a week (168 h), its history
// began 100 h before its end — and is followed up all the same, with a note
// that its EUR are over those 100 h.
func TestYoungBaseline(t *testing.T) {
	path := baselineJSON(t, t.TempDir(), "young.json", nil, map[string]any{"range": "1w", "start": week2.Add(-100 * time.Hour)})
	b, err := followup.Open(path, followup.Period{Start: week2, End: end})
	if err != nil {
		t.Fatal(err)
	}
	r, d := periodIn(t, "", []gpu{{"GPU-A", "node-a", "0", 1}}, []use{{gpu: "GPU-A", holder: "ml/t/main", to: 6, busy: 1}})
	res, err := b.Follow(r, &advice.Advice{}, d)
	if err != nil {
		t.Fatal(err)
	}
	if res.Comparison == nil || !slices.ContainsFunc(res.Comparison.Notes, func(n string) bool { return strings.Contains(n, "covers 100.0 h of its 1w") }) {
		t.Errorf("comparison %+v, want one noting that the baseline covers 100.0 h of its 1w", res.Comparison)
	}
}

// TestBaselineOfItsWholeRange: a baseline that covers exactly the range it
// was asked for (168 h of 1w) gets no note on its hours; one an hour short
// (its history began an hour into it) does: 167.0 h of its 1w.
func TestBaselineOfItsWholeRange(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start time.Time
		note  string // "": no note
	}{
		{"exactly its range", week1, ""},
		{"an hour short", week1.Add(time.Hour), "the baseline covers 167.0 h of its 1w"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := baselineJSON(t, t.TempDir(), "baseline.json", nil, map[string]any{"range": "1w", "start": tc.start})
			b, err := followup.Open(path, followup.Period{Start: week2, End: end})
			if err != nil {
				t.Fatal(err)
			}
			r, d := period(t, []gpu{{"GPU-A", "node-a", "0", 1}}, []use{{gpu: "GPU-A", holder: "ml/t/main", to: 6, busy: 1}})
			res, err := b.Follow(r, &advice.Advice{}, d)
			if err != nil {
				t.Fatal(err)
			}
			var notes []string
			for _, n := range res.Comparison.Notes {
				if strings.Contains(n, " h of its ") {
					notes = append(notes, n)
				}
			}
			if tc.note == "" && len(notes) != 0 || tc.note != "" && (len(notes) != 1 || !strings.HasPrefix(notes[0], tc.note)) {
				t.Errorf("notes on the baseline's hours %q, want %q", notes, tc.note)
			}
		})
	}
}

// TestDirectory: in a directory of kept reports the newest earlier report
// that fits is followed up; earlier ones that fit are the weeks before it;
// this period's own report (a later one) and files that are not reports
// are passed over without a word; earlier reports that do not fit are named
// in the notes.
func TestDirectory(t *testing.T) {
	dir := t.TempDir()
	day := 24 * time.Hour
	rec := []advice.Recommendation{{Kind: "drain", Target: "node-a", GPUs: []string{"GPU-A"}, FreedGPUs: []string{"GPU-A"}, FreedEURPerMonth: 730.5}}
	baselineJSON(t, dir, "w0.json", nil, map[string]any{"start": week1.Add(-8 * day), "end": week1.Add(-day)})
	w1 := baselineJSON(t, dir, "w1.json", rec, map[string]any{"start": week1.Add(-day), "end": week2.Add(-day)})
	baselineJSON(t, dir, "east.json", nil, map[string]any{"clusters": []string{"east"}})
	baselineJSON(t, dir, "w2.json", nil, map[string]any{"start": week2, "end": end})
	baselineJSON(t, dir, "old.json", nil, map[string]any{"schema_version": 0})
	baselineJSON(t, dir, "month.json", nil, map[string]any{"start": week2.Add(-30 * day)})
	baselineJSON(t, dir, ".hidden.json", nil, nil) // newer than w1.json, but hidden: a file being written
	for name, text := range map[string]string{"other.json": `{"a": 1}`, "notes.txt": "x", ".w3.json.123": "{"} {
		writeFile(t, dir, name, text)
	}
	b, err := followup.Open(dir, followup.Period{Start: week2, End: end})
	if err != nil {
		t.Fatal(err)
	}
	r, d := period(t, []gpu{{"GPU-A", "node-a", "0", 1}}, []use{{gpu: "GPU-A", to: 6}})
	res, err := b.Follow(r, &advice.Advice{FreedEURPerMonth: 5}, d)
	if err != nil {
		t.Fatal(err)
	}
	c := res.Comparison
	if c == nil || c.File != w1 || len(res.Items) != 1 || res.Items[0].Status != followup.Applied {
		t.Fatalf("followed up %+v, items %+v; want w1.json's drain, applied", c, res.Items)
	}
	var weeks []string
	for _, w := range c.Weeks {
		weeks = append(weeks, filepath.Base(w.File))
	}
	if !slices.Equal(weeks, []string{"w0.json", "w1.json", "."}) || c.Weeks[2].FreedEURPerMonth != 5 || !c.Weeks[2].End.Equal(end) {
		t.Errorf("weeks %v (%+v), want w0.json, w1.json and this period", weeks, c.Weeks)
	}
	var skipped []string
	for _, n := range c.Notes {
		for _, name := range []string{"east.json", "old.json", "month.json", "w2.json", "other.json"} {
			if strings.Contains(n, name) {
				skipped = append(skipped, name)
			}
		}
	}
	if slices.Sort(skipped); !slices.Equal(skipped, []string{"east.json", "month.json", "old.json"}) {
		t.Errorf("notes %q, want east.json, month.json and old.json named", c.Notes)
	}
}

// TestEmptyDirectory: a directory without an earlier report is a first
// report: nothing to follow up, no error; one with only reports that do not
// fit says why in the notes.
func TestEmptyDirectory(t *testing.T) {
	r, d := period(t, []gpu{{"GPU-A", "node-a", "0", 1}}, []use{{gpu: "GPU-A", to: 6}})
	for _, tc := range []struct {
		name  string
		files []string // schema versions 0 reports, by name
	}{{"empty", nil}, {"only an old version", []string{"old.json"}}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tc.files {
				baselineJSON(t, dir, f, nil, map[string]any{"schema_version": 0})
			}
			b, err := followup.Open(dir, followup.Period{Start: week2, End: end})
			if err != nil {
				t.Fatal(err)
			}
			res, err := b.Follow(r, &advice.Advice{}, d)
			if err != nil || res.Comparison != nil || len(res.Items) != 0 || len(res.Notes) != len(tc.files) {
				t.Errorf("follow-up %+v, %v; want nothing to follow up and %d notes", res, err, len(tc.files))
			}
		})
	}
}

// TestPrune: Prune keeps the newest reports of a directory by their end,
// each with the files of its name; it deletes the older ones with theirs
// and leaves every other file.
func TestPrune(t *testing.T) {
	dir := t.TempDir()
	var all []string
	for i, name := range []string{"r3", "r1", "r4", "r2"} { // ends: r1 oldest … r4 newest
		n := int(name[1] - '0')
		baselineJSON(t, dir, name+".json", nil, map[string]any{"start": week1.Add(time.Duration(n) * 24 * time.Hour), "end": week2.Add(time.Duration(n) * 24 * time.Hour), "schema_version": i % 2})
		for _, ext := range []string{".html", ".md"} {
			writeFile(t, dir, name+ext, "")
		}
	}
	for _, name := range []string{"other.json", "r1.json.bak", "r1-notes.txt", ".r1.json.tmp"} {
		writeFile(t, dir, name, `{"a": 1}`)
	}
	if _, err := followup.Prune(dir, 0); err == nil {
		t.Error("Prune keeping 0 reports: no error")
	}
	if deleted, err := followup.Prune(dir, 4); err != nil || len(deleted) != 0 {
		t.Errorf("Prune keeping all 4: deleted %v, %v", deleted, err)
	}
	deleted, err := followup.Prune(dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i := range deleted {
		deleted[i] = filepath.Base(deleted[i])
	}
	slices.Sort(deleted)
	if want := []string{"r1.html", "r1.json", "r1.md", "r2.html", "r2.json", "r2.md"}; !slices.Equal(deleted, want) {
		t.Errorf("deleted %v, want %v", deleted, want)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		all = append(all, e.Name())
	}
	if want := []string{".r1.json.tmp", "other.json", "r1-notes.txt", "r1.json.bak", "r3.html", "r3.json", "r3.md", "r4.html", "r4.json", "r4.md"}; !slices.Equal(all, want) {
		t.Errorf("left %v, want %v", all, want)
	}
}

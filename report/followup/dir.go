package followup

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// reportsIn returns the reports of directory dir, newest (by their end,
// then name) first: every *.json file in it that is a gputally report's
// JSON, but for hidden files (a report being written is one). It says why it
// skipped a JSON file it could not read; JSON of something else it skips
// without a word.
func reportsIn(dir string) (reports []*report, skipped []string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("read the reports in %s: %w", dir, err)
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || filepath.Ext(name) != ".json" || e.IsDir() {
			continue
		}
		r, err := readReport(filepath.Join(dir, name))
		switch {
		case errors.Is(err, errNotReport):
		case err != nil:
			skipped = append(skipped, err.Error())
		default:
			reports = append(reports, r)
		}
	}
	slices.SortFunc(reports, func(a, b *report) int { return cmp.Or(b.End.Compare(a.End), cmp.Compare(b.path, a.path)) })
	return reports, skipped, nil
}

// Prune deletes all but the keep newest reports of directory dir (by their
// end, as reportsIn lists them), each with the files beside it of the same
// name and another extension (the report's other formats:
// gputally-report-x.json takes gputally-report-x.html, .md and .csv with it).
// Files that are not a report's JSON, or share no name with one, stay. It
// returns the files it deleted. keep must be at least 1.
func Prune(dir string, keep int) ([]string, error) {
	if keep < 1 {
		return nil, fmt.Errorf("prune %s: keep %d reports: want at least 1", dir, keep)
	}
	reports, _, err := reportsIn(dir)
	if err != nil || len(reports) <= keep {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("prune %s: %w", dir, err)
	}
	var deleted []string
	for _, r := range reports[keep:] {
		stem := strings.TrimSuffix(filepath.Base(r.path), ".json")
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || strings.TrimSuffix(name, filepath.Ext(name)) != stem {
				continue
			}
			p := filepath.Join(dir, name)
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return deleted, fmt.Errorf("prune %s: %w", dir, err)
			}
			deleted = append(deleted, p)
		}
	}
	return deleted, nil
}

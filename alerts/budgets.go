package alerts

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/gputally/gputally/smallfile"
)

// Budgets are the monthly GPU budgets and idle-cost limits of teams and
// namespaces, in EUR: the budgets file of `generate rules --budgets.file`,
//
//	teams:
//	  ml-research: {monthly_eur: 20000, idle_eur_per_day: 150}
//	namespaces:
//	  sandbox: {monthly_eur: 500}
//
// A team's spend is that of the pods whose team the team label or the team
// map names (Options.TeamLabel, Options.Teams); a namespace's is that of its
// pods, whatever their team. The zero value has no budgets. Read-only once
// built, safe for concurrent reads.
type Budgets struct {
	Teams      map[string]Budget `yaml:"teams"`
	Namespaces map[string]Budget `yaml:"namespaces"`
}

// Budget is one team's or namespace's; a zero field sets nothing.
type Budget struct {
	// MonthlyEUR is the GPU spend a calendar month (UTC) may reach, EUR.
	MonthlyEUR float64 `yaml:"monthly_eur"`
	// IdleEURPerDay is the idle-but-allocated spend per day above which
	// GPUIdleCostOverLimit fires, EUR per day.
	IdleEURPerDay float64 `yaml:"idle_eur_per_day"`
}

// maxBudgetsBytes caps a budgets file: 1 MiB holds tens of thousands of entries.
const maxBudgetsBytes = 1 << 20

// LoadBudgets reads a budgets file (see ParseBudgets): a regular file of at
// most 1 MiB.
func LoadBudgets(path string) (Budgets, error) {
	b, err := smallfile.Read(path, maxBudgetsBytes)
	if err != nil {
		return Budgets{}, fmt.Errorf("read budgets: %w", err)
	}
	bs, err := ParseBudgets(b)
	if err != nil {
		return Budgets{}, fmt.Errorf("budgets %s: %w", path, err)
	}
	return bs, nil
}

// ParseBudgets decodes a budgets file strictly: unknown keys, empty names,
// and amounts that are negative, not finite or both zero are errors that name
// the line.
func ParseBudgets(b []byte) (Budgets, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return Budgets{}, err
	}
	if root.Kind == 0 {
		return Budgets{}, errors.New("empty file: want `teams:` and/or `namespaces:`")
	}
	var bs Budgets
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&bs); err != nil && !errors.Is(err, io.EOF) {
		return Budgets{}, err
	}
	if err := bs.validate(); err != nil {
		var be *budgetError
		if errors.As(err, &be) {
			return Budgets{}, fmt.Errorf("line %d: %w", lineOf(&root, be), err)
		}
		return Budgets{}, err
	}
	return bs, nil
}

// budgetError is a bad entry of Budgets: its section and name.
type budgetError struct {
	section, name, problem string
}

func (e *budgetError) Error() string {
	return fmt.Sprintf("%s.%s: %s", e.section, e.name, e.problem)
}

// budgetEntry is one entry of Budgets and where it is.
type budgetEntry struct {
	section string // "teams" or "namespaces"
	label   string // the label its series carry: "team" or "namespace"
	name    string
	Budget
}

// entries returns the teams' entries, then the namespaces', each in name order.
func (bs Budgets) entries() []budgetEntry {
	var out []budgetEntry
	for _, s := range []struct {
		section, label string
		entries        map[string]Budget
	}{{"teams", "team", bs.Teams}, {"namespaces", "namespace", bs.Namespaces}} {
		for _, name := range slices.Sorted(maps.Keys(s.entries)) {
			out = append(out, budgetEntry{s.section, s.label, name, s.entries[name]})
		}
	}
	return out
}

// validate returns the first bad entry, in the order of entries, as a
// *budgetError.
func (bs Budgets) validate() error {
	for _, e := range bs.entries() {
		switch {
		case e.name == "":
			return &budgetError{e.section, `""`, "empty name"}
		case !validAmount(e.MonthlyEUR) || !validAmount(e.IdleEURPerDay):
			return &budgetError{e.section, e.name, fmt.Sprintf("monthly_eur %v, idle_eur_per_day %v: want finite amounts ≥ 0", e.MonthlyEUR, e.IdleEURPerDay)}
		case e.MonthlyEUR == 0 && e.IdleEURPerDay == 0:
			return &budgetError{e.section, e.name, "sets neither monthly_eur nor idle_eur_per_day"}
		}
	}
	return nil
}

func validAmount(v float64) bool { return v >= 0 && !math.IsInf(v, 0) }

// lineOf returns the line of e's entry in the document root, or 0.
func lineOf(root *yaml.Node, e *budgetError) int {
	doc := root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		doc = doc.Content[0]
	}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if doc.Content[i].Value != e.section {
			continue
		}
		entries := doc.Content[i+1]
		for j := 0; j+1 < len(entries.Content); j += 2 {
			if k := entries.Content[j]; k.Value == e.name || (e.name == `""` && k.Value == "") {
				return k.Line
			}
		}
		return doc.Content[i].Line
	}
	return 0
}

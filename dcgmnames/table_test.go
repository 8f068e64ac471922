package dcgmnames

import (
	"bufio"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// csvRow is one row of a dcgm-exporter collector file.
type csvRow struct {
	field, typ, help string
	active           bool // not commented out
	line             int
}

// readCollectorFile returns the rows of a collector file: "FIELD, type, help",
// the active ones and those commented out as optional examples ("# FIELD, ...").
func readCollectorFile(t *testing.T, path string) []csvRow {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []csvRow
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		active := !strings.HasPrefix(line, "#")
		line = strings.TrimSpace(strings.TrimPrefix(line, "#"))
		parts := strings.SplitN(line, ",", 3)
		if len(parts) != 3 || !strings.HasPrefix(parts[0], "DCGM_FI_") {
			continue
		}
		rows = append(rows, csvRow{strings.TrimSpace(parts[0]), strings.TrimSpace(parts[1]), strings.TrimSpace(parts[2]), active, n})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no rows", path)
	}
	return rows
}

var inUnit = regexp.MustCompile(`\(in ([^)]+)\)`)

// helpUnit is the unit a collector file's help text gives, and false when it
// names none (counts, states: the unit is then DCGM's, not the file's).
func helpUnit(help string) (Unit, bool) {
	if m := inUnit.FindStringSubmatch(help); m != nil {
		u, ok := map[string]Unit{"MHz": MHz, "C": Celsius, "W": Watts, "mJ": Millijoules, "%": Percent, "MiB": MiB, "ns": Nanoseconds}[m[1]]
		return u, ok
	}
	switch {
	case strings.HasSuffix(help, "in bytes per second."):
		return BytesPerSecond, true
	case strings.HasPrefix(strings.ToLower(help), "ratio ") || strings.HasPrefix(strings.ToLower(help), "the ratio "):
		return Ratio, true
	}
	return "", false
}

var defaultCounters48 = "testdata/dcgm-exporter-4.8.2/default-counters.csv"

// TestCollectorFilesOf48 holds the table's old names, types and units to
// dcgm-exporter 4.8.2's collector files: every active row is a family under
// its old name, with the file's type and the unit its help text gives; a
// commented row of a family in the table gives the same unit; the one active
// label row is the legacy driver label.
func TestCollectorFilesOf48(t *testing.T) {
	for _, path := range []string{defaultCounters48, "testdata/dcgm-exporter-4.8.2/dcp-metrics-included.csv"} {
		labels := 0
		for _, r := range readCollectorFile(t, path) {
			if r.typ == "label" {
				if r.active {
					labels++
					if r.field != LegacyDriverLabel {
						t.Errorf("%s:%d: label row %s, the table's legacy driver label is %s", path, r.line, r.field, LegacyDriverLabel)
					}
				}
				continue
			}
			f, n, ok := ByName(r.field)
			if !ok {
				if r.active {
					t.Errorf("%s:%d: %s is not in the table", path, r.line, r.field)
				}
				continue
			}
			if n != Legacy && f.Renamed() {
				t.Errorf("%s:%d: %s is in the table as a new name", path, r.line, r.field)
			}
			if r.active && Type(r.typ) != f.Type {
				t.Errorf("%s:%d: %s is a %s, the table says %s", path, r.line, r.field, r.typ, f.Type)
			}
			if u, ok := helpUnit(r.help); ok && u != f.OldUnit {
				t.Errorf("%s:%d: %s is in %s (%q), the table says %s", path, r.line, r.field, u, r.help, f.OldUnit)
			}
		}
		if labels != 1 {
			t.Errorf("%s: %d active label rows, want the driver version's alone", path, labels)
		}
	}
}

var define = regexp.MustCompile(`^#define (DCGM_FI_\w+)\s+(DCGM_FI_\w+)(?:\s+//\s+(\d+))?`)

// TestDCGMDeprecatedAliases holds the table to DCGM 4.6.0's deprecated
// aliases (an old name defined as the new one, same field): a family that
// keeps its unit takes the alias's new name and field; a family whose unit
// changes takes a base-unit field instead (the alias renames the old field in
// its old unit); every same-unit rename of 4.9 has its alias.
func TestDCGMDeprecatedAliases(t *testing.T) {
	b, err := os.ReadFile("testdata/dcgm-4.6.0/deprecated-aliases.h")
	if err != nil {
		t.Fatal(err)
	}
	aliased := map[string]bool{}
	for line := range strings.Lines(string(b)) {
		m := define.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("not an alias: %q", line)
		}
		old, alias, id := m[1], m[2], m[3]
		if old == LegacyDriverLabel {
			if alias != CurrentDriverLabel {
				t.Errorf("DCGM renames %s to %s, the table to %s", old, alias, CurrentDriverLabel)
			}
			continue
		}
		f, n, ok := ByName(old)
		if !ok || n != Legacy {
			t.Errorf("%s (alias of %s) is no old name of the table", old, alias)
			continue
		}
		aliased[old] = true
		if id != "" && id != strconv.Itoa(int(f.OldID)) {
			t.Errorf("%s is field %s, the table says %d", old, id, f.OldID)
		}
		if f.FromOld == 1 {
			if f.New != alias || f.NewID != f.OldID {
				t.Errorf("%s: DCGM's new name is %s (same field), the table's %s (field %d)", old, alias, f.New, f.NewID)
			}
			continue
		}
		if f.NewID == f.OldID {
			t.Errorf("%s changes unit (%s → %s) but the table keeps DCGM's same field %d", old, f.OldUnit, f.Unit, f.OldID)
		}
		// DCGM 4.6.0 gave field 203 (in %) the name DCGM 4.7 gives the new
		// ratio field 1613; no other alias may share the new name.
		if f.New == alias && f.Old != GPUUtil.Old {
			t.Errorf("%s changes unit but the table keeps DCGM's same-field alias %s", old, f.New)
		}
	}
	for _, f := range Families {
		if f.Renamed() && f.FromOld == 1 && f.Since == Release49 && !aliased[f.Old] {
			t.Errorf("%s → %s keeps its unit but DCGM's header has no such alias", f.Old, f.New)
		}
	}
}

var fieldDoc = regexp.MustCompile(`(?s)/\*\*\s*\n\s*\*\s*([^\n]*)\n\s*\*/\s*\n#define (DCGM_FI_\w+) (\d+)`)

// TestBaseUnitFields holds the table's hertz and joule fields to DCGM
// 4.6.1's base-unit fields (1600-1612): name, ID, and the unit its doc
// comment names.
func TestBaseUnitFields(t *testing.T) {
	b, err := os.ReadFile("testdata/dcgm-4.6.1/base-unit-fields.h")
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string][2]string{}
	for _, m := range fieldDoc.FindAllStringSubmatch(string(b), -1) {
		byID[m[3]] = [2]string{m[2], m[1]}
	}
	if len(byID) != 13 {
		t.Fatalf("read %d fields, want the 13 of 1600-1612", len(byID))
	}
	unitWord := map[Unit]string{Hertz: "in hertz", Joules: "in joules", Bytes: "in bytes"}
	checked := 0
	for _, f := range Families {
		if f.NewID < 1600 || f.NewID > 1612 {
			continue
		}
		checked++
		got, ok := byID[strconv.Itoa(int(f.NewID))]
		switch {
		case !ok:
			t.Errorf("%s: no field %d in DCGM 4.6.1", f.New, f.NewID)
		case got[0] != f.New:
			t.Errorf("field %d is %s, the table says %s", f.NewID, got[0], f.New)
		case !strings.Contains(got[1], unitWord[f.Unit]):
			t.Errorf("%s: DCGM says %q, the table's unit is %s", f.New, got[1], f.Unit)
		}
	}
	if checked != 3 { // SM and memory clock, energy
		t.Errorf("checked %d families, want 3", checked)
	}
}

// TestFieldReference47 holds the table's fields 1613 and up to NVIDIA's DCGM
// 4.7 field reference as quoted: each is named on a row with its ID, with a
// word of its unit, and the old field's row gives the old unit.
func TestFieldReference47(t *testing.T) {
	b, err := os.ReadFile("testdata/dcgm-4.7-field-reference.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(string(b), "\n")
	unitWord := map[Unit]string{Ratio: "ratio", Bytes: "Byte", Seconds: "seconds", BytesPerSecond: "BYTES_PER_SECOND"}
	checked := 0
	for _, f := range Families {
		if f.NewID < 1613 {
			continue
		}
		checked++
		id := strconv.Itoa(int(f.NewID))
		// The source abbreviates a name after the first of a row as
		// `…_<rest>`; the thermal counter as `…_THERMAL_…_SECONDS_TOTAL`,
		// the power counter's name with THERMAL for POWER.
		forms := []string{"`" + f.New + "`", "`…_" + strings.TrimPrefix(f.New, "DCGM_FI_DEV_") + "`"}
		if f.New == ThermalViolation.New {
			forms = []string{"`…_THERMAL_…_SECONDS_TOTAL`"}
			if strings.Replace(PowerViolation.New, "POWER", "THERMAL", 1) != f.New {
				t.Errorf("%s is not %s with THERMAL for POWER", f.New, PowerViolation.New)
			}
		}
		found := false
		for _, row := range rows {
			named := false
			for _, form := range forms {
				named = named || strings.Contains(row, form)
			}
			if named && strings.Contains(row, id) {
				found = true
				if !strings.Contains(row, unitWord[f.Unit]) {
					t.Errorf("%s: its row does not say %q: %s", f.New, unitWord[f.Unit], row)
				}
			}
		}
		if !found {
			t.Errorf("%s (%s): no row names it with its ID", f.New, id)
		}
	}
	if checked != 11 { // four ratios, four byte counts, two throttle times, NVLink
		t.Errorf("checked %d families, want 11", checked)
	}
	// The old NVLink total's unit, which its collector-file help omits.
	if !strings.Contains(string(b), "`DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL` (\"Aggregate NVLink throughput across all lanes, MB/s\")") {
		t.Error("the field reference no longer gives the NVLink total in MB/s")
	}
}

// TestReleaseNotes49 holds the table to dcgm-exporter 4.9.0's notes: the
// driver label's new name, FB_CAPACITY_BYTES collected by default (no 4.8
// default row), and eleven of the renamed default rows changing unit, in the
// five kinds the notes name.
func TestReleaseNotes49(t *testing.T) {
	b, err := os.ReadFile("testdata/release-notes-4.9.0.txt")
	if err != nil {
		t.Fatal(err)
	}
	notes := string(b)
	if !strings.Contains(notes, "from "+LegacyDriverLabel+" to "+CurrentDriverLabel+".") {
		t.Errorf("the notes do not rename %s to %s", LegacyDriverLabel, CurrentDriverLabel)
	}
	if !strings.Contains(notes, "Collect "+FBCapacity.New+" (total GPU memory in bytes) by default") || FBCapacity.Unit != Bytes || FBCapacity.Since != Release49 {
		t.Errorf("FB capacity: %+v", FBCapacity)
	}
	kinds := map[string][2]Unit{ // the notes' words → old and new unit
		"clocks from MHz to hertz":                             {MHz, Hertz},
		"energy from millijoules to joules":                    {Millijoules, Joules},
		"utilization from a percentage to a 0 to 1 ratio":      {Percent, Ratio},
		"GPU memory from MiB to bytes":                         {MiB, Bytes},
		"NVLink throughput from MB/s to bytes per second":      {MBPerSecond, BytesPerSecond},
		"Eleven of them also change unit":                      {},
		"Rename the 23 default and profiling-preset fields th": {},
	}
	want := map[[2]Unit]bool{}
	for words, units := range kinds {
		if !strings.Contains(notes, words) {
			t.Errorf("the notes do not say %q", words)
		}
		if units != ([2]Unit{}) {
			want[units] = true
		}
	}
	renamed, changed := 0, 0
	got := map[[2]Unit]bool{}
	for _, r := range readCollectorFile(t, defaultCounters48) {
		if !r.active || r.typ == "label" {
			continue
		}
		if r.field == FBCapacity.Old {
			t.Errorf("%s is a 4.8 default row", r.field)
		}
		f, _, _ := ByName(r.field)
		if !f.Renamed() || f.Since != Release49 {
			continue
		}
		renamed++
		if f.OldUnit != f.Unit {
			changed++
			got[[2]Unit{f.OldUnit, f.Unit}] = true
		}
	}
	// 23 in the notes: 22 default rows and one "profiling-preset" row that
	// no source read names (see table.go).
	if renamed != 22 || changed != 11 {
		t.Errorf("%d default rows renamed in 4.9, %d of them changing unit; want 22 and 11", renamed, changed)
	}
	if len(got) != len(want) {
		t.Errorf("unit changes %v, the notes' %v", got, want)
	}
	for k := range want {
		if !got[k] {
			t.Errorf("no default row changes %s → %s", k[0], k[1])
		}
	}
}

var renamedIn410 = regexp.MustCompile(`• (DCGM_FI_\w+) → (DCGM_FI_\w+)`)

// TestReleaseNotes410 holds the table to dcgm-exporter 4.10.0's notes: its
// four renames, and no other family renamed in 4.10; all still bytes per
// second.
func TestReleaseNotes410(t *testing.T) {
	b, err := os.ReadFile("testdata/release-notes-4.10.0.txt")
	if err != nil {
		t.Fatal(err)
	}
	ms := renamedIn410.FindAllStringSubmatch(string(b), -1)
	if len(ms) != 4 || !strings.Contains(string(b), "All four still use bytes per second") {
		t.Fatalf("read %d renames from the 4.10.0 notes", len(ms))
	}
	in410 := map[string]string{}
	for _, m := range ms {
		in410[m[1]] = m[2]
	}
	for _, f := range Families {
		newName, listed := in410[f.Old]
		switch {
		case listed && (f.New != newName || f.Since != Release410):
			t.Errorf("4.10 renames %s to %s; the table: %s since %s", f.Old, newName, f.New, f.Since)
		case listed && (f.Unit != BytesPerSecond || f.OldUnit != BytesPerSecond || f.FromOld != 1):
			t.Errorf("%s: still bytes per second in 4.10, the table says %s → %s × %g", f.Old, f.OldUnit, f.Unit, f.FromOld)
		case !listed && f.Since == Release410:
			t.Errorf("%s → %s is in the table as a 4.10 rename but not in the notes", f.Old, f.New)
		}
		delete(in410, f.Old)
	}
	for old := range in410 {
		t.Errorf("4.10 renames %s, which is not in the table", old)
	}
}

// TestTableIsOneToOne: every name names one family, under one naming, so
// that a series' name says its family and unit; the factor is 1 exactly when
// the unit stays; a factor below 1 is the reciprocal of a whole number (the
// PromQL divides by it).
func TestTableIsOneToOne(t *testing.T) {
	seen := map[string]string{}
	for _, f := range Families {
		for _, name := range []string{f.Old, f.New} {
			if other, dup := seen[name]; dup && other != f.Old {
				t.Errorf("%s names both %s and %s", name, other, f.Old)
			}
			seen[name] = f.Old
		}
		if (f.FromOld == 1) != (f.OldUnit == f.Unit) {
			t.Errorf("%s: %s → %s with factor %g", f.Old, f.OldUnit, f.Unit, f.FromOld)
		}
		if f.FromOld < 1 {
			if inv := 1 / f.FromOld; inv-float64(int64(inv+0.5)) > 1e-6*inv || float64(int64(inv+0.5))-inv > 1e-6*inv {
				t.Errorf("%s: factor %g is no whole number's reciprocal", f.Old, f.FromOld)
			}
		}
		if f.Since != Release49 && f.Since != Release410 || f.Help == "" || f.Type != Gauge && f.Type != Counter {
			t.Errorf("%s: %+v", f.Old, f)
		}
	}
}

func TestParseNaming(t *testing.T) {
	for _, n := range []Naming{Current, Legacy} {
		got, err := ParseNaming(n.String())
		if err != nil || got != n {
			t.Errorf("ParseNaming(%q) = %v, %v", n.String(), got, err)
		}
	}
	if Current.String() != "4.10" || Legacy.String() != "4.8" || Legacy.DriverLabel() != "DCGM_FI_DRIVER_VERSION" || Current.DriverLabel() != "DCGM_FI_SYSTEM_DRIVER_VERSION" {
		t.Error("flag values or driver labels changed")
	}
	for _, s := range []string{"4.9", "", "transition", "4.10.0"} {
		if _, err := ParseNaming(s); err == nil {
			t.Errorf("ParseNaming(%q) accepted", s)
		}
	}
	for _, r := range []Reads{ReadsCurrent, ReadsLegacy, ReadsBoth} {
		got, err := ParseReads(r.String())
		if err != nil || got != r {
			t.Errorf("ParseReads(%q) = %v, %v", r.String(), got, err)
		}
	}
	if _, err := ParseReads("both"); err == nil {
		t.Error(`ParseReads("both") accepted`)
	}
}

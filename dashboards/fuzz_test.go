package dashboards

import (
	"regexp"
	"strings"
	"testing"
)

// leftover matches a variable Grafana would expand.
var leftover = regexp.MustCompile(`\$\w|\$\{\w+(:\w+)?\}`)

func FuzzExpandVariables(f *testing.F) {
	for _, s := range []string{
		`x{hostname=~"$hostname"}`, `rate(x[$__rate_interval])`, `${a:regex}`, `$`, `$$x`, `${}`, `a$__range$b`, "${0", "$$__range",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		// A window that cannot form a variable with a "$" before it.
		got := ExpandVariables(expr, "(w)")
		if leftover.MatchString(got) {
			t.Errorf("ExpandVariables(%q) = %q still holds a variable", expr, got)
		}
		if !strings.Contains(expr, "$") && got != expr {
			t.Errorf("ExpandVariables(%q) = %q changed text without variables", expr, got)
		}
	})
}

func FuzzLabelValuesSelector(f *testing.F) {
	for _, s := range []string{
		"label_values(gputally_gpu_info, hostname)", `label_values(x{a=~"$b"}, c)`, "label_values(x)", "up", "label_values(, a)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		sel, ok := labelValuesSelector(q)
		if !ok {
			return
		}
		if sel == "" || !strings.Contains(q, sel) {
			t.Errorf("labelValuesSelector(%q) = %q, not a part of the query", q, sel)
		}
		if again, ok := labelValuesSelector("label_values(" + sel + ", l)"); !ok || again != sel {
			t.Errorf("selector %q does not round-trip: %q %v", sel, again, ok)
		}
	})
}

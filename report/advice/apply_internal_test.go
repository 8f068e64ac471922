package advice

import "testing"

// TestShellWordAndComments: node names and comments from metric labels
// cannot run commands in label-nodes.sh or break out of a YAML comment.
func TestShellWordAndComments(t *testing.T) {
	for in, want := range map[string]string{
		"gpu-node-1.example": "gpu-node-1.example",
		"":                   "''",
		"a b":                "'a b'",
		"x'; rm -rf /":       `'x'\''; rm -rf /'`,
		"n\nreboot":          "'n\nreboot'",
	} {
		if got := shellWord(in); got != want {
			t.Errorf("shellWord(%q) = %q, want %q", in, got, want)
		}
	}
	if got, want := commentLines([]string{"# node a\nrm -rf /", "# b\r"}), "# node a rm -rf /\n# b \n"; got != want {
		t.Errorf("commentLines = %q, want %q", got, want)
	}
}

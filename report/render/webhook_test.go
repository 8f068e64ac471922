package render

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWebhookURLFile: an empty or missing file, or one without an http(s)
// URL, is an error that names the file and never repeats what it holds.
func TestWebhookURLFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct{ file, want string }{
		{write("empty", " \n"), "is empty"},
		{filepath.Join(dir, "missing"), "read url file"},
		{write("no-scheme", "hooks.example/secret-token\n"), "does not hold an http(s) URL"},
		{write("bad", "http://[::1\n"), "does not hold an http(s) URL"},
	} {
		_, err := LoadWebhook(tc.file)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "secret-token") {
			t.Errorf("%s: error %v, want one containing %q", tc.file, err, tc.want)
		}
	}
	if w, err := LoadWebhook(write("good", "https://hooks.example/secret-token\n")); err != nil || w.url != "https://hooks.example/secret-token" {
		t.Errorf("a good file: %v, %v", w, err)
	}
}

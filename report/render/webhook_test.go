package render

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestWebhookURLFile(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := &Report{}
	for _, tc := range []struct{ file, want string }{
		{empty, "is empty"},
		{filepath.Join(dir, "missing"), "read url file"},
	} {
		if err := PostWebhook(context.Background(), tc.file, r, time.Second); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.file, err, tc.want)
		}
	}
}

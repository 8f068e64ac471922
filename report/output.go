package report

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/gputally/gputally/report/render"
)

// output is the file a report goes to: a temporary file beside it, made
// before any query is sent (a path that cannot be written is bad input, found
// before an hour of queries, not after) and renamed into place once the
// report is rendered, so that a failed run leaves no file; or stdout for "-".
// It is not safe for concurrent use.
type output struct {
	path string
	f    *os.File // the temporary file; nil for stdout, and once written
}

// createOutput makes the output of path; its error is a *ConfigError.
func createOutput(path string) (*output, error) {
	if path == "-" {
		return &output{path: path}, nil
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return nil, &ConfigError{fmt.Errorf("write report: %w", err)}
	}
	return &output{path: path, f: f}, nil
}

// write renders r in format into the output and puts it in place; a number
// of r that is not finite is an error (checkFinite), and nothing is written.
func (o *output) write(r *Report, format string) error {
	if err := checkFinite(r); err != nil {
		return err
	}
	if o.path == "-" {
		return render.Render(os.Stdout, r, format)
	}
	f := o.f
	if err := render.Render(f, r, format); err != nil {
		return fmt.Errorf("write report %s: %w", o.path, err)
	}
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("write report %s: %w", o.path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write report %s: %w", o.path, err)
	}
	if err := os.Rename(f.Name(), o.path); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	o.f = nil
	return nil
}

// discard removes the temporary file unless write put it in place.
func (o *output) discard() {
	if o.f != nil {
		o.f.Close()
		os.Remove(o.f.Name())
	}
}

//go:build !unix

package attribution

import "os"

// readProcFile reads a file with os.ReadFile where there is no procfs: the
// exporter runs on Linux, but `report` and `simulate` build everywhere.
func readProcFile(path string) ([]byte, error) { return os.ReadFile(path) }

package main

import (
	"fmt"
	"os"
)

// createOutput creates the file path that flag names. A path that cannot be
// created (a missing directory, no permission) is bad input, exit 2, found
// before the work starts; a failure while writing it (a full disk) is a
// runtime failure, exit 1.
func createOutput(flag, path string) (*os.File, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, badInput(fmt.Errorf("%s: %w", flag, err))
	}
	return f, nil
}

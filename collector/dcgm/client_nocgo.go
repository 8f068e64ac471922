//go:build !cgo

package dcgm

import "fmt"

// realDialer fails in a binary built without cgo: go-dcgm needs cgo to load libdcgm.
func realDialer(string) dialer {
	return func() (client, error) {
		return nil, fmt.Errorf("%w: this gputally binary was built without cgo", ErrLibraryNotFound)
	}
}

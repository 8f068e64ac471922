// Package applyspec holds strict decoders for the configuration the report
// emits, for the report's tests. NVIDIA's own parsers (mig-parted
// api/spec/v1, k8s-device-plugin api/config/v1) are not available to this
// module, so their rules are written out here: unknown fields are errors,
// required fields must be there.
//
// It imports no report package; the tests of report and report/advice use it.
package applyspec

import (
	"errors"
	"io"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// strictDecode decodes every YAML document of text into a new T each,
// rejecting unknown fields.
func strictDecode[T any](text string) ([]T, error) {
	dec := yaml.NewDecoder(strings.NewReader(text))
	dec.KnownFields(true)
	var out []T
	for {
		var v T
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
}

// labelCommand is a label command the report emits: node, label, config.
var labelCommand = regexp.MustCompile(`^kubectl label node ([a-z0-9.-]+) (nvidia\.com/mig\.config|nvidia\.com/device-plugin\.config)=([a-z0-9-]{1,63}) --overwrite$`)

// Package team says which team a pod belongs to, read the same way by the
// report and by the alert rules: the team map file, which lists each team's
// namespaces, and a pod label, which kube-state-metrics exports on
// kube_pod_labels as label_<key> (KubePodLabel).
package team

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gputally/gputally/smallfile"
)

// Map maps namespaces to teams. The zero value maps nothing. It is read-only
// once built and safe for concurrent use.
type Map struct {
	byNamespace map[string]string
}

// teamFile is the team map file:
//
//	teams:
//	  ml-research: [research, research-dev]
//	  platform: [infra]
type teamFile struct {
	Teams map[string][]string `yaml:"teams"`
}

// maxMapBytes caps a team map file: 1 MiB holds tens of thousands of namespaces.
const maxMapBytes = 1 << 20

// LoadMap reads a team map file (see ParseMap): a regular file of at most 1 MiB.
func LoadMap(path string) (Map, error) {
	b, err := smallfile.Read(path, maxMapBytes)
	if err != nil {
		return Map{}, fmt.Errorf("read team map: %w", err)
	}
	m, err := ParseMap(b)
	if err != nil {
		return Map{}, fmt.Errorf("team map %s: %w", path, err)
	}
	return m, nil
}

// ParseMap decodes a team map: a YAML document with one key, `teams`, that
// maps each team to its namespaces. Unknown keys, empty names and a namespace
// listed under two teams are errors that name the line.
func ParseMap(b []byte) (Map, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return Map{}, errors.New("empty file: want a `teams:` mapping")
		}
		return Map{}, err
	}
	var f teamFile
	dec = yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return Map{}, err
	}
	lines := namespaceLines(&root)
	m := Map{byNamespace: map[string]string{}}
	teams := make([]string, 0, len(f.Teams))
	for t := range f.Teams {
		teams = append(teams, t)
	}
	slices.Sort(teams)
	for _, t := range teams {
		if t == "" {
			return Map{}, errors.New("a team has an empty name")
		}
		for _, ns := range f.Teams[t] {
			if ns == "" {
				return Map{}, fmt.Errorf("team %q lists an empty namespace", t)
			}
			if prev, dup := m.byNamespace[ns]; dup {
				return Map{}, fmt.Errorf("line %d: namespace %q is listed under both %q and %q", lines[ns], ns, prev, t)
			}
			m.byNamespace[ns] = t
		}
	}
	return m, nil
}

// namespaceLines returns the last line each namespace appears on in the file.
func namespaceLines(root *yaml.Node) map[string]int {
	lines := map[string]int{}
	var walk func(n *yaml.Node, inList bool)
	walk = func(n *yaml.Node, inList bool) {
		if n.Kind == yaml.ScalarNode && inList {
			lines[n.Value] = n.Line
		}
		for _, c := range n.Content {
			walk(c, n.Kind == yaml.SequenceNode)
		}
	}
	walk(root, false)
	return lines
}

// Team returns the team of a namespace and whether the map names one.
func (m Map) Team(namespace string) (string, bool) {
	t, ok := m.byNamespace[namespace]
	return t, ok
}

// Namespaces returns the namespaces the map names, sorted.
func (m Map) Namespaces() []string {
	return slices.Sorted(maps.Keys(m.byNamespace))
}

// KubePodLabel returns the label that kube-state-metrics' kube_pod_labels
// gives the pod label key: `label_` and the key with every character other
// than a letter, a digit or `_` made `_` (`app.kubernetes.io/team` →
// `label_app_kubernetes_io_team`). kube-state-metrics exports it only for
// keys its --metric-labels-allowlist names for pods.
func KubePodLabel(key string) string {
	return "label_" + strings.Map(func(r rune) rune {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, key)
}

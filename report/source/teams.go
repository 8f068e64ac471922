package source

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"go.yaml.in/yaml/v3"
)

// TeamMap maps namespaces to teams. The zero value maps nothing. It is
// read-only once built and safe for concurrent use.
type TeamMap struct {
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

// LoadTeamMap reads a team map file (see ParseTeamMap).
func LoadTeamMap(path string) (TeamMap, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return TeamMap{}, fmt.Errorf("read team map: %w", err)
	}
	m, err := ParseTeamMap(b)
	if err != nil {
		return TeamMap{}, fmt.Errorf("team map %s: %w", path, err)
	}
	return m, nil
}

// ParseTeamMap decodes a team map: a YAML document with one key, `teams`, that
// maps each team to its namespaces. Unknown keys, empty names and a namespace
// listed under two teams are errors that name the line.
func ParseTeamMap(b []byte) (TeamMap, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return TeamMap{}, errors.New("empty file: want a `teams:` mapping")
		}
		return TeamMap{}, err
	}
	var f teamFile
	dec = yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return TeamMap{}, err
	}
	lines := namespaceLines(&root)
	m := TeamMap{byNamespace: map[string]string{}}
	teams := make([]string, 0, len(f.Teams))
	for t := range f.Teams {
		teams = append(teams, t)
	}
	slices.Sort(teams)
	for _, t := range teams {
		if t == "" {
			return TeamMap{}, errors.New("a team has an empty name")
		}
		for _, ns := range f.Teams[t] {
			if ns == "" {
				return TeamMap{}, fmt.Errorf("team %q lists an empty namespace", t)
			}
			if prev, dup := m.byNamespace[ns]; dup {
				return TeamMap{}, fmt.Errorf("line %d: namespace %q is listed under both %q and %q", lines[ns], ns, prev, t)
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
func (m TeamMap) Team(namespace string) (string, bool) {
	t, ok := m.byNamespace[namespace]
	return t, ok
}

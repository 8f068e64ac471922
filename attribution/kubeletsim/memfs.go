package kubeletsim

import (
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// MemFS is a file tree in memory: a Tree to write a simulated procfs and pod
// log directory into, and what a process resolver reads them from
// (attribution.Files). A simulation in virtual time reads a procfs file per
// GPU process per sample; from memory that costs no system call. Paths are
// cleaned; WriteFile creates the directories above a file, which stay until
// removed, as on disk. Misuse is not checked as a disk would: reading a
// directory as a file (or the reverse) is fs.ErrNotExist, and a file may be
// written below another file's path; the resolver does neither. Safe for
// concurrent use.
type MemFS struct {
	mu    sync.RWMutex
	files map[string]string          // content by path
	dirs  map[string]map[string]bool // entries of each directory: name → is a directory
}

// NewMemFS returns an empty tree.
func NewMemFS() *MemFS {
	return &MemFS{files: map[string]string{}, dirs: map[string]map[string]bool{}}
}

// WriteFile implements Tree.
func (m *MemFS) WriteFile(path, content string) error {
	path = filepath.Clean(path)
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, isDir := m.dirs[path]; isDir {
		return &fs.PathError{Op: "write", Path: path, Err: fs.ErrExist}
	}
	m.files[path] = content
	for child, isDir := path, false; ; child, isDir = filepath.Dir(child), true {
		parent := filepath.Dir(child)
		if parent == child {
			return nil
		}
		entries, ok := m.dirs[parent]
		if !ok {
			entries = map[string]bool{}
			m.dirs[parent] = entries
		}
		entries[filepath.Base(child)] = isDir
		if ok {
			return nil // the parent's own parents exist
		}
	}
}

// RemoveAll implements Tree.
func (m *MemFS) RemoveAll(path string) error {
	path = filepath.Clean(path)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.remove(path)
	delete(m.dirs[filepath.Dir(path)], filepath.Base(path))
	return nil
}

// remove deletes path and what is under it. m.mu is held.
func (m *MemFS) remove(path string) {
	delete(m.files, path)
	for name := range m.dirs[path] {
		m.remove(filepath.Join(path, name))
	}
	delete(m.dirs, path)
}

// ReadFile returns the content of the file at path.
func (m *MemFS) ReadFile(path string) ([]byte, error) {
	m.mu.RLock()
	content, ok := m.files[filepath.Clean(path)]
	m.mu.RUnlock()
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
	}
	return []byte(content), nil
}

// ReadDir returns the entries of the directory at path, sorted by name.
func (m *MemFS) ReadDir(path string) ([]fs.DirEntry, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	entries, ok := m.dirs[filepath.Clean(path)]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
	}
	out := make([]fs.DirEntry, 0, len(entries))
	for name, isDir := range entries {
		out = append(out, memEntry{name: name, dir: isDir})
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

// memEntry is an entry of a MemFS directory; it is also its own FileInfo.
type memEntry struct {
	name string
	dir  bool
}

func (e memEntry) Name() string               { return e.name }
func (e memEntry) IsDir() bool                { return e.dir }
func (e memEntry) Type() fs.FileMode          { return e.Mode().Type() }
func (e memEntry) Info() (fs.FileInfo, error) { return e, nil }
func (e memEntry) Size() int64                { return 0 }
func (e memEntry) ModTime() time.Time         { return time.Time{} }
func (e memEntry) Sys() any                   { return nil }
func (e memEntry) Mode() fs.FileMode {
	if e.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}

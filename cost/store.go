package cost

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// Store holds the price book in force and replaces it on Reload. It is safe for
// concurrent use: the sampler reads the book every tick while a SIGHUP or
// POST /-/reload handler reloads it.
type Store struct {
	book   atomic.Pointer[Book]
	gpus   []GPUModel // the node's GPUs; every book must price them; read-only
	lastOK atomic.Bool
	mu     sync.Mutex // serializes Reload, so lastOK matches the book in force
}

// NewStore returns a Store holding b, which must price every GPU of gpus (the
// node's GPUs, which every later book must price as well).
func NewStore(b *Book, gpus []GPUModel) (*Store, error) {
	if err := b.CheckModels(gpus); err != nil {
		return nil, err
	}
	s := &Store{gpus: slices.Clone(gpus)}
	s.book.Store(b)
	s.lastOK.Store(true)
	return s, nil
}

// Book returns the book in force.
func (s *Store) Book() *Book { return s.book.Load() }

// Reload loads the book at path and puts it in force. When the file cannot be
// read, is not a valid book or does not price a GPU of the node, the old book
// stays in force and the error says why (with file and line where there is one).
func (s *Store) Reload(path string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := Load(path)
	if err == nil {
		err = b.CheckModels(s.gpus)
	}
	if err != nil {
		s.lastOK.Store(false)
		return fmt.Errorf("reload price book: %w", err)
	}
	s.book.Store(b)
	s.lastOK.Store(true)
	return nil
}

// LastReloadSuccessful reports whether the last Reload put its book in force
// (true before any Reload): the value of gputally_config_last_reload_successful.
func (s *Store) LastReloadSuccessful() bool { return s.lastOK.Load() }

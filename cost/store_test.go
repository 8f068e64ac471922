package cost

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var node = []GPUModel{{"GPU-0", "NVIDIA A100-SXM4-80GB"}, {"GPU-1", "NVIDIA A100-SXM4-80GB"}}

func writeBook(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestNewStoreChecksModels(t *testing.T) {
	b := mustParse(t, "models: [{match: H100, purchase_eur: 1}]\n")
	_, err := NewStore(b, node)
	if want := `prices.yaml:1: models: no price for GPU model "NVIDIA A100-SXM4-80GB" (GPU-0)`; err == nil || err.Error() != want {
		t.Errorf("NewStore = %v, want %s", err, want)
	}
}

func TestStoreReload(t *testing.T) {
	dir := t.TempDir()
	good := writeBook(t, dir, "good.yaml", "models: [{match: A100, purchase_eur: 20000}]\n")
	unknownKey := writeBook(t, dir, "unknown.yaml", "models:\n  - {match: A100, purchase_eur: 1, colour: red}\n")
	negative := writeBook(t, dir, "negative.yaml", "models:\n  - {match: A100, purchase_eur: 1}\ndefaults:\n  pue: -1\n")
	unpriced := writeBook(t, dir, "unpriced.yaml", "models:\n  - {match: H100, purchase_eur: 1}\n")

	s, err := NewStore(Default(), node)
	if err != nil {
		t.Fatal(err)
	}
	if s.Book().Name != "built-in" || !s.LastReloadSuccessful() {
		t.Fatalf("new store holds %s, ok=%v", s.Book().Name, s.LastReloadSuccessful())
	}
	steps := []struct {
		path     string
		wantErr  string // "" for success
		wantBook string
	}{
		{good, "", good},
		{unknownKey, unknownKey + ":2: models[0].colour: unknown field", good},
		{negative, negative + ":4: defaults.pue: must be between 1 and 10, got -1", good},
		{unpriced, unpriced + `:1: models: no price for GPU model "NVIDIA A100-SXM4-80GB" (GPU-0)`, good},
		{filepath.Join(dir, "missing.yaml"), "no such file", good},
		{good, "", good},
	}
	for _, st := range steps {
		err := s.Reload(st.path)
		switch {
		case st.wantErr == "" && err != nil:
			t.Errorf("Reload(%s) = %v", st.path, err)
		case st.wantErr != "" && (err == nil || !strings.Contains(err.Error(), st.wantErr)):
			t.Errorf("Reload(%s) = %v, want an error containing %q", st.path, err, st.wantErr)
		}
		if got := s.Book().Name; got != st.wantBook {
			t.Errorf("after Reload(%s) the book in force is %s, want %s", st.path, got, st.wantBook)
		}
		if got := s.LastReloadSuccessful(); got != (st.wantErr == "") {
			t.Errorf("after Reload(%s) LastReloadSuccessful = %v", st.path, got)
		}
	}
	if got := s.Book().Price("A100").PurchaseEUR; got != 20000 {
		t.Errorf("purchase price in force = %v, want 20000", got)
	}
}

// TestStoreReloadWhileAdvancing runs reloads against a ledger that prices
// every tick with the store's book; -race checks the handover.
func TestStoreReloadWhileAdvancing(t *testing.T) {
	dir := t.TempDir()
	books := []string{
		writeBook(t, dir, "a.yaml", "models: [{match: A100, hourly_eur: 1}]\n"),
		writeBook(t, dir, "b.yaml", "models: [{match: A100, hourly_eur: 2}]\n"),
	}
	s, err := NewStore(Default(), node)
	if err != nil {
		t.Fatal(err)
	}
	l := NewLedger(s)
	gpus := []GPUState{{UUID: "GPU-0", Model: node[0].Model, PowerW: math.NaN(), Activity: math.NaN()}}
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 50 {
			if err := s.Reload(books[i%2]); err != nil {
				t.Error(err)
			}
		}
	})
	for range 200 {
		l.Advance(time.Second, gpus)
	}
	wg.Wait()
	l.Advance(time.Second, gpus)
	if r := l.AppendRates(nil)[0].Rate; r != (Rate{Capital: 2}) {
		t.Errorf("rate after the last reload = %+v, want the 2 EUR/h of b.yaml", r)
	}
}

package cost

import "time"

// DefaultRetention is how long the series of a holder, MIG instance or GPU
// that left the ledger's input stay exported, frozen at their final values:
// long enough for several scrapes to read their last increment.
const DefaultRetention = 5 * time.Minute

// Option configures a Ledger.
type Option func(*Ledger)

// WithRetention sets how long the series of a holder, MIG instance or GPU no
// longer in the input stay, frozen, before they are dropped (DefaultRetention
// when not given). The window is ledger time: the sum of the tick lengths
// passed to Advance and AdvanceUnmeasured, so virtual-time simulation gets the
// same window as a live exporter. A retention of zero or less is ignored.
func WithRetention(d time.Duration) Option {
	return func(l *Ledger) {
		if d > 0 {
			l.retention = d.Seconds()
		}
	}
}

// table holds accumulators by key: those in the latest input, in the order of
// first appearance, and those that left it less than a retention window ago.
// It is owned by the Ledger and not safe for concurrent use.
type table[K comparable, V any] struct {
	rows  []row[K, V]
	index []int // input position → rows position
}

type row[K comparable, V any] struct {
	key   K
	since float64 // ledger time, s, when the row was made: its counters' 0
	seen  float64 // ledger time, s, when the key was last in the input
	val   V
}

// sync lays t out for an input of n keys, key(j) being the j-th, at ledger
// time now: a key seen before keeps its row (and counters), a new key gets a
// new row with the zero V, and repeated keys share one row. In steady state
// (the keys of the last call, in order) it does not allocate.
func (t *table[K, V]) sync(n int, key func(int) K, now float64) {
	same := n == len(t.index)
	for j := 0; same && j < n; j++ {
		same = key(j) == t.rows[t.index[j]].key
	}
	if !same {
		t.index = resize(t.index, n)
		for j := range n {
			k := key(j)
			pos := -1
			for i := range t.rows {
				if t.rows[i].key == k {
					pos = i
					break
				}
			}
			if pos < 0 {
				pos = len(t.rows)
				t.rows = append(t.rows, row[K, V]{key: k, since: now})
			}
			t.index[j] = pos
		}
	}
	for _, i := range t.index {
		t.rows[i].seen = now
	}
}

// at returns the row of input position j.
func (t *table[K, V]) at(j int) *V { return &t.rows[t.index[j]].val }

// prune drops the rows not in the input for retention seconds or more. Rows in
// the input (seen at now) stay, retention being positive.
func (t *table[K, V]) prune(now, retention float64) {
	n := 0
	for i := range t.rows {
		if now-t.rows[i].seen >= retention {
			continue
		}
		if n != i {
			for j := range t.index {
				if t.index[j] == i {
					t.index[j] = n
				}
			}
			t.rows[n] = t.rows[i]
		}
		n++
	}
	clear(t.rows[n:])
	t.rows = t.rows[:n]
}

// resize returns s with length n, reusing its array when large enough.
func resize[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return append(s[:cap(s)], make([]T, n-cap(s))...)
}

package history

import (
	"time"

	dto "github.com/prometheus/client_model/go"
)

// lateEvery is how many scrapes there are per late one: 5 % of them.
const lateEvery = 20

// jitterSink hands scrapes on stored late, as Prometheus stores them when
// its scrape loop runs behind: one scrape in lateEvery, chosen by a hash of
// the seed and the scrape's time, carries a timestamp later by between a
// tenth of most and most, in whole milliseconds. The others keep theirs.
type jitterSink struct {
	sink Sink
	most time.Duration
	seed int64
}

func (s *jitterSink) AddScrape(mfs []*dto.MetricFamily, t time.Time) error {
	return s.sink.AddScrape(mfs, t.Add(s.lateness(t)))
}

// lateness is how late the scrape due at t is stored.
func (s *jitterSink) lateness(t time.Time) time.Duration {
	h := splitmix(uint64(s.seed) ^ uint64(t.UnixNano()))
	if h%lateEvery != 0 {
		return 0
	}
	low := max(s.most/10, time.Millisecond).Milliseconds()
	span := uint64(s.most.Milliseconds() - low + 1)
	return time.Duration(low+int64((h/lateEvery)%span)) * time.Millisecond
}

// splitmix is SplitMix64's finaliser: a well-mixed hash of x.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

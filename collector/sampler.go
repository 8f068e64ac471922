package collector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gputally/gputally/cost"
)

// SamplerOptions configures a Sampler.
type SamplerOptions struct {
	// Interval between two samples; Run ticks at it. Default 1s.
	Interval time.Duration
	// Now returns the current time; default time.Now. Tests and virtual-time
	// simulation call Tick with their own times instead of Run.
	Now    func() time.Time
	Logger *slog.Logger
	// Holders gives the pod attribution; nil disables attribution.
	Holders HolderSource
	// Processes maps compute processes to pods on shared GPUs; nil disables it.
	Processes ProcessAccounting
	// Ledger accounts the cost of every sample; nil disables the cost metrics.
	// One sample's readings are charged for at most 2 × Interval: after a
	// backend outage, the rest of the time since the last good sample is
	// charged as unknown (cost.Ledger.AdvanceUnmeasured).
	Ledger *cost.Ledger
}

// Sampler reads a Backend and publishes each reading as an immutable Snapshot.
// Tick and Run must be called from one goroutine; Snapshot and Ready are safe
// for concurrent use.
type Sampler struct {
	backend  Backend
	opts     SamplerOptions
	inv      *Inventory // nil until read, and while a changed inventory is read again
	index    *deviceIndex
	listed   map[string]listedDevice // of the last inventory read
	acct     accountant
	pricer   sharePricer
	errs     errorCounts
	failing  bool // the last tick failed; failures are logged once, recoveries once
	snapshot atomic.Pointer[Snapshot]
}

// NewSampler returns a Sampler over b. It reads nothing until the first Tick.
func NewSampler(b Backend, opts SamplerOptions) *Sampler {
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Sampler{
		backend: b, opts: opts,
		errs: errorCounts{m: map[string]uint64{}},
		acct: accountant{ledger: opts.Ledger, maxCharged: chargeFactor * opts.Interval},
	}
}

// Snapshot returns the latest published Snapshot, or nil before the first Tick.
func (s *Sampler) Snapshot() *Snapshot { return s.snapshot.Load() }

// Ready reports whether a first Snapshot was published.
func (s *Sampler) Ready() bool { return s.snapshot.Load() != nil }

// Run ticks at once and then every Interval until ctx is done.
func (s *Sampler) Run(ctx context.Context) {
	t := time.NewTicker(s.opts.Interval)
	defer t.Stop()
	for {
		// A failed tick is published (Up false) and logged by Tick.
		_ = s.Tick(ctx, s.opts.Now())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Tick takes one sample at now and publishes it. A failed sample is published
// too, with Up false and no readings, and its error returned.
func (s *Sampler) Tick(ctx context.Context, now time.Time) error {
	start := s.opts.Now()
	sample, err := s.sample(ctx, now)
	snap := &Snapshot{
		Time:     now,
		Duration: s.opts.Now().Sub(start),
		Backend:  s.backend.Name(),
		Up:       err == nil,
		Errors:   s.errs.copy(),
	}
	if s.inv != nil {
		snap.Inventory, snap.index = *s.inv, s.index
	}
	snap.listed = s.listed
	if s.opts.Holders != nil {
		var policy cost.SharePolicy // the default, dominant, without a ledger
		if s.opts.Ledger != nil {
			policy = s.opts.Ledger.SharePolicy()
		}
		snap.Attribution = s.pricer.price(s.opts.Holders.Current(), policy)
	}
	if err == nil {
		snap.Sample = sample
		snap.Activity = activities(snap.Inventory, sample)
		if s.opts.Processes != nil {
			snap.ProcessAccounting = true
			snap.Usage, snap.ProcessAccountingUp = s.opts.Processes.Usage(snap.Inventory, sample, snap.Attribution)
		}
		if s.opts.Ledger != nil {
			snap.Totals, snap.Rates, snap.Estimates = s.acct.advance(snap.Inventory, sample, snap.Activity, snap.Attribution, snap.Usage)
		}
	} else if prev := s.snapshot.Load(); prev != nil {
		// The ledger's counters stay exported while the backend fails; the
		// next good sample charges up to 2 × Interval of the time in between
		// at its readings, the rest as unknown.
		snap.Totals, snap.Rates, snap.Estimates = prev.Totals, prev.Rates, prev.Estimates
	}
	s.logTransition(err)
	s.snapshot.Store(snap)
	return err
}

func (s *Sampler) sample(ctx context.Context, now time.Time) (Sample, error) {
	for attempt := 0; ; attempt++ {
		if s.inv == nil {
			inv, err := s.backend.Inventory(ctx)
			if err != nil {
				return Sample{}, fmt.Errorf("read %s inventory: %w", s.backend.Name(), err)
			}
			s.inv, s.index = &inv, newDeviceIndex(inv)
			var totals []cost.Total
			if prev := s.snapshot.Load(); prev != nil {
				totals = prev.Totals
			}
			s.listed = listedDevices(inv, s.listed, totals)
			s.acct.setInventory(inv)
			if t, ok := s.opts.Holders.(deviceTable); ok {
				t.SetDevices(AttributionDevices(inv))
			}
			if t, ok := s.opts.Holders.(migLayoutTable); ok {
				t.SetMIGLayout(MIGLayout(inv))
			}
		}
		sample := newSample(*s.inv, now)
		err := s.backend.Sample(ctx, now, &sample, &s.errs)
		if errors.Is(err, ErrInventoryChanged) && attempt == 0 {
			s.opts.Logger.Info("device inventory changed; reading it again", "backend", s.backend.Name())
			s.inv = nil
			continue
		}
		if err != nil {
			return Sample{}, fmt.Errorf("sample %s: %w", s.backend.Name(), err)
		}
		return sample, nil
	}
}

func (s *Sampler) logTransition(err error) {
	switch {
	case err != nil && !s.failing:
		s.opts.Logger.Error("sampling failed; device metrics absent until it recovers", "err", err)
	case err == nil && s.failing:
		s.opts.Logger.Info("sampling recovered", "backend", s.backend.Name())
	}
	s.failing = err != nil
}

// newSample returns a Sample sized to inv.
func newSample(inv Inventory, now time.Time) Sample {
	s := Sample{Time: now, GPUs: make([]GPUReading, len(inv.GPUs))}
	for i, g := range inv.GPUs {
		s.GPUs[i].Healthy = true
		if len(g.Instances) > 0 {
			s.GPUs[i].Instances = make([]Values, len(g.Instances))
		}
	}
	return s
}

// errorCounts is the ErrorCounter of a Sampler.
type errorCounts struct {
	mu sync.Mutex
	m  map[string]uint64
}

func (e *errorCounts) Inc(field string) {
	e.mu.Lock()
	e.m[field]++
	e.mu.Unlock()
}

func (e *errorCounts) copy() map[string]uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return maps.Clone(e.m)
}

package attribution

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// Defaults of Config.
const (
	DefaultSocket       = "/var/lib/kubelet/pod-resources/kubelet.sock"
	DefaultInterval     = 5 * time.Second
	DefaultTimeout      = 2 * time.Second
	DefaultStaleAfter   = 5 * time.Minute
	DefaultMaxRecvBytes = 64 << 20 // 64 MiB: a List answer for thousands of pods
)

// Clock tells the time and makes tickers. Tests inject a fake one.
type Clock interface {
	Now() time.Time
	// NewTicker returns a channel that receives every d, and a function that stops it.
	NewTicker(d time.Duration) (<-chan time.Time, func())
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// NewTicker wraps time.NewTicker.
func (SystemClock) NewTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

// Config configures a Client. Zero durations and sizes take the Default… values.
type Config struct {
	Socket     string        // path of the kubelet pod-resources socket
	Interval   time.Duration // time between refreshes
	Timeout    time.Duration // limit of one refresh (List + GetAllocatableResources)
	StaleAfter time.Duration // holders are dropped when the last success is older
	// ExtraResources are extended resources tracked besides nvidia.com/gpu,
	// nvidia.com/gpu.shared and nvidia.com/mig-*.
	ExtraResources []string
	// MPSResources are resources whose replicas are MPS clients (Sharing MPS) rather
	// than time slices; they are tracked too.
	MPSResources []string
	MaxRecvBytes int // largest answer accepted from the kubelet, bytes
	// DRADrivers are the DRA drivers whose devices are attributed; empty means
	// DefaultDRADriver.
	DRADrivers []string
	// Slices looks DRA devices up in the node's ResourceSlices; nil leaves every
	// DRA allocation of those drivers unmapped.
	Slices SliceSource
	// Claims reads what DRA claims consumed of devices shared by consumable
	// capacity; nil leaves the holders of such shares unresolved.
	Claims ClaimSource
	// Pods gives the pods bound to this node, whose HAMi and KAI-Scheduler
	// annotations and labels say who holds which share of a GPU; nil leaves
	// HAMi's virtual devices unresolved and KAI's reservation pods as the
	// exclusive holders they look like.
	Pods PodSource
	// KAI names KAI-Scheduler's reservation pods.
	KAI    KAIConfig
	Logger *slog.Logger
	Clock  Clock
}

// Client keeps a Snapshot of the kubelet's device assignments, refreshed in the
// background over one long-lived gRPC connection. Current and SetDevices are safe
// for concurrent use; Refresh calls are serialised.
type Client struct {
	cfg    Config
	log    *slog.Logger
	clock  Clock
	filter resourceFilter
	res    resolver
	dra    *draMapper
	frac   *fracMapper
	conn   *grpc.ClientConn
	lister podresourcesv1.PodResourcesListerClient

	current atomic.Pointer[Snapshot]

	refreshMu     sync.Mutex // serialises Refresh; guards the fields below
	lastGood      *Snapshot  // last successful snapshot
	unknown       uint64
	failing       bool // a failure was logged and no recovery since
	socketMissing bool // the missing-socket line was logged
	staleDropped  bool // the stale holders were dropped (and that was logged)
	loggedUnknown map[string]bool
}

// maxLoggedUnknown bounds how many distinct unknown IDs are logged.
const maxLoggedUnknown = 100

// New returns a Client for cfg. It does not contact the kubelet: call Run, or
// Refresh. Close releases the connection.
func New(cfg Config) (*Client, error) {
	if cfg.Socket == "" {
		cfg.Socket = DefaultSocket
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.StaleAfter <= 0 {
		cfg.StaleAfter = DefaultStaleAfter
	}
	if cfg.MaxRecvBytes <= 0 {
		cfg.MaxRecvBytes = DefaultMaxRecvBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	socket, err := filepath.Abs(cfg.Socket)
	if err != nil {
		return nil, fmt.Errorf("kubelet pod-resources socket %s: %w", cfg.Socket, err)
	}
	cfg.Socket = socket
	conn, err := grpc.NewClient("unix://"+socket,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(cfg.MaxRecvBytes)),
	)
	if err != nil {
		return nil, fmt.Errorf("kubelet pod-resources client for %s: %w", socket, err)
	}
	c := &Client{
		cfg:           cfg,
		log:           cfg.Logger.With("component", "attribution", "socket", socket),
		clock:         cfg.Clock,
		filter:        newResourceFilter(cfg.ExtraResources, cfg.MPSResources),
		dra:           newDRAMapper(cfg.DRADrivers, cfg.Slices, cfg.Claims, cfg.Logger.With("component", "attribution")),
		frac:          newFracMapper(cfg.Pods, cfg.KAI, cfg.Logger.With("component", "attribution")),
		conn:          conn,
		lister:        podresourcesv1.NewPodResourcesListerClient(conn),
		loggedUnknown: make(map[string]bool),
	}
	c.current.Store(&Snapshot{})
	return c, nil
}

// Close releases the connection. Run must have returned.
func (c *Client) Close() error {
	if err := c.conn.Close(); err != nil {
		return fmt.Errorf("close kubelet pod-resources connection: %w", err)
	}
	return nil
}

// Current returns the latest Snapshot. It never blocks and does no I/O; the result
// is never nil and must not be modified.
func (c *Client) Current() *Snapshot { return c.current.Load() }

// SetDevices sets the device table that legacy MIG and GKE IDs resolve through,
// and against which "GPU-…" and "MIG-…" IDs are checked (an empty table accepts
// any). It clears the resolution cache and takes effect at the next refresh. Call
// it before Run and whenever the inventory changes.
func (c *Client) SetDevices(devs []Device) { c.res.setDevices(devs) }

// SetMIGLayout sets the MIG instances, with their placements, that DRA devices
// without a UUID (dynamic MIG) are matched against. It takes effect at the next
// refresh. Call it before Run and whenever the inventory changes.
func (c *Client) SetMIGLayout(slots []MIGSlot) { c.dra.setLayout(slots) }

// Run refreshes now and then every Interval until ctx is done.
func (c *Client) Run(ctx context.Context) {
	tick, stop := c.clock.NewTicker(c.cfg.Interval)
	defer stop()
	for {
		// Failures are recorded in the snapshot and logged by Refresh.
		_ = c.Refresh(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
	}
}

// Refresh asks the kubelet once, within Timeout, and publishes the result. On
// failure it publishes the last good holders with Up false, or none once they are
// older than StaleAfter, and returns the error. A refresh cut short by ctx
// publishes nothing.
func (c *Client) Refresh(ctx context.Context) error {
	c.refreshMu.Lock()
	defer c.refreshMu.Unlock()

	t, err := c.fetch(ctx)
	now := c.clock.Now()
	if err != nil && ctx.Err() != nil {
		// Cancelled by the caller (shutdown): the kubelet is not to blame.
		return fmt.Errorf("kubelet pod-resources refresh: %w", err)
	}
	if err != nil {
		c.publishFailure(now, err)
		return err
	}
	for _, raw := range t.unknown {
		c.unknown++
		if !c.loggedUnknown[raw] && len(c.loggedUnknown) < maxLoggedUnknown {
			c.loggedUnknown[raw] = true
			c.log.Warn("kubelet reported a device ID that names no device of this node; not attributed", "id", raw)
		}
	}
	c.dra.note(t.unmappedDRA)
	c.frac.note(t.unresolved)
	if c.failing {
		c.log.Info("kubelet pod-resources refresh recovered", "held_devices", len(t.holders))
	}
	c.failing, c.socketMissing, c.staleDropped = false, false, false
	s := &Snapshot{
		Up:          true,
		LastSuccess: now,
		Holders:     t.holders,
		Allocatable: t.allocatable,
		Replicas:    t.replicas,
		UnknownIDs:  c.unknown,

		DRAPublished: c.dra.published(),

		UnmappedDRA:      t.unmappedDRA,
		UnmappedDRATotal: c.dra.total,

		Unresolved:      t.unresolved,
		UnresolvedTotal: c.frac.total,
	}
	c.lastGood = s
	c.current.Store(s)
	return nil
}

// fetch calls List and GetAllocatableResources and builds the tables.
func (c *Client) fetch(ctx context.Context) (tables, error) {
	if _, err := os.Stat(c.cfg.Socket); errors.Is(err, fs.ErrNotExist) {
		return tables{}, errSocketMissing
	}
	if c.failing {
		// The connection may be waiting out a reconnect backoff; the kubelet may be back.
		c.conn.ResetConnectBackoff()
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	var list *podresourcesv1.ListPodResourcesResponse
	err := c.retryUnavailable(ctx, func() (err error) {
		list, err = c.lister.List(ctx, &podresourcesv1.ListPodResourcesRequest{}, grpc.WaitForReady(true))
		return err
	})
	if err != nil {
		return tables{}, fmt.Errorf("kubelet pod-resources List: %w", err)
	}
	var alloc *podresourcesv1.AllocatableResourcesResponse
	err = c.retryUnavailable(ctx, func() (err error) {
		alloc, err = c.lister.GetAllocatableResources(ctx, &podresourcesv1.AllocatableResourcesRequest{}, grpc.WaitForReady(true))
		return err
	})
	if err != nil {
		return tables{}, fmt.Errorf("kubelet pod-resources GetAllocatableResources: %w", err)
	}
	t := buildTables(list, alloc, &c.res, c.filter)
	c.dra.addHolders(ctx, &t, list, &c.res)
	c.frac.addHolders(&t, &c.res)
	return t, nil
}

// retryUnavailable calls call, and once more when it fails with Unavailable: a
// call sent just as a restarted kubelet's old connection broke fails so, and the
// second attempt waits (within ctx) for the new connection.
func (c *Client) retryUnavailable(ctx context.Context, call func() error) error {
	err := call()
	if status.Code(err) != codes.Unavailable || ctx.Err() != nil {
		return err
	}
	c.conn.ResetConnectBackoff()
	return call()
}

// errSocketMissing is returned by Refresh while the socket does not exist.
var errSocketMissing = errors.New("kubelet pod-resources socket not found")

// publishFailure publishes the state after a failed refresh and logs the failure
// once. c.refreshMu is held.
func (c *Client) publishFailure(now time.Time, err error) {
	s := &Snapshot{UnknownIDs: c.unknown, UnmappedDRATotal: c.dra.total, UnresolvedTotal: c.frac.total}
	if c.lastGood != nil {
		s.LastSuccess = c.lastGood.LastSuccess
		if now.Sub(c.lastGood.LastSuccess) < c.cfg.StaleAfter {
			s.Holders, s.Allocatable, s.Replicas = c.lastGood.Holders, c.lastGood.Allocatable, c.lastGood.Replicas
			s.UnmappedDRA, s.DRAPublished = c.lastGood.UnmappedDRA, c.lastGood.DRAPublished
			s.Unresolved = c.lastGood.Unresolved
		} else if !c.staleDropped {
			c.staleDropped = true
			c.log.Warn("kubelet pod-resources assignments are stale; dropped them",
				"last_success", c.lastGood.LastSuccess, "stale_after", c.cfg.StaleAfter)
		}
	}
	c.current.Store(s)
	switch {
	case errors.Is(err, errSocketMissing):
		if !c.socketMissing {
			c.socketMissing = true
			c.log.Warn("kubelet pod-resources socket " + c.cfg.Socket +
				" not found; attribution disabled until it appears — outside Kubernetes run with --attribution.enabled=false")
		}
	case !c.failing || c.socketMissing:
		// A new failure, or the socket appeared but the kubelet does not answer.
		c.socketMissing = false
		c.log.Warn("kubelet pod-resources refresh failed; keeping the last good assignments",
			"err", err, "stale_after", c.cfg.StaleAfter)
	}
	c.failing = true
}

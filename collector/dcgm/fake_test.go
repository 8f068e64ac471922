package dcgm

import (
	"bytes"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeNode is what a fake DCGM knows: devices, MIG hierarchy, latest values,
// XID updates and health incidents. Tests change it between Samples.
type fakeNode struct {
	gpus      []uint
	infos     map[uint]deviceInfo
	hierarchy []migEntity
	values    map[entity]map[uint16]fieldValue
	xids      []fieldValue
	incidents []healthIncident
	lostGPUs  map[uint]bool
	infoErr   map[uint]error // DeviceInfo's error per GPU

	libMissing bool // dial fails as without libdcgm
	down       bool // the hostengine is unreachable: dial and every call fail
	// watchErr, when set, is Watch's error for a field list.
	watchErr func(fields []uint16) error
	// healthErr, when set, is WatchHealth's error.
	healthErr    error
	healthChecks int

	dials, failedDials, closes int
	open                       int // connected clients not yet closed
	watched                    [][]uint16
}

// a100Node is a fake node of count A100-SXM4-40GB GPUs without MIG. DCGM's GPU
// ids run backwards against the NVML indexes, so the mapping is exercised.
func a100Node(count int) *fakeNode {
	n := newFakeNode()
	for i := range count {
		id := uint(count - 1 - i)
		n.gpus = append(n.gpus, id)
		n.infos[id] = deviceInfo{
			UUID:          fmt.Sprintf("GPU-a100%04d-0000-0000-0000-%012d", i, i),
			PCIBusID:      fmt.Sprintf("00000000:%02X:00.0", 7+16*i),
			Model:         "NVIDIA A100-SXM4-40GB",
			DriverVersion: "550.54.15",
			FBTotalMiB:    40960,
		}
		n.set(gpuEnt(id), i64(fiDevNVMLIndex, int64(i)))
		n.set(gpuEnt(id), i64(fiDevMinorNumber, int64(i)))
		n.set(gpuEnt(id), i64(fiDevMIGMode, 0))
	}
	return n
}

// gpuOf returns the DCGM id of the GPU at NVML index i of an a100Node.
func (n *fakeNode) gpuOf(i int) uint { return uint(len(n.gpus) - 1 - i) }

// addInstance adds a GPU instance (DCGM entity gi) with one compute instance to
// GPU gpu, and its identity fields; name and uuid may be empty (blank).
func (n *fakeNode) addInstance(gpu, gi, giID, profileID, slices uint, name, uuid string, fbMiB int64) {
	n.hierarchy = append(n.hierarchy,
		migEntity{entity: giEnt(gi), parent: gpuEnt(gpu), gpuInstanceID: giID, profileID: profileID, slices: slices},
		migEntity{entity: entity{groupComputeInstance, gi}, parent: giEnt(gi), gpuInstanceID: giID, computeInstanceID: 0, slices: slices},
	)
	if name != "" {
		n.set(giEnt(gi), str(fiDevName, name))
	}
	if uuid != "" {
		n.set(giEnt(gi), str(fiDevUUID, uuid))
	}
	n.set(giEnt(gi), i64(fiDevFBTotal, fbMiB))
	n.set(gpuEnt(gpu), i64(fiDevMIGMode, 1))
}

func newFakeNode() *fakeNode {
	return &fakeNode{
		infos:    map[uint]deviceInfo{},
		values:   map[entity]map[uint16]fieldValue{},
		lostGPUs: map[uint]bool{},
		infoErr:  map[uint]error{},
	}
}

func (n *fakeNode) dial() (client, error) {
	n.dials++
	switch {
	case n.libMissing:
		n.failedDials++
		return nil, ErrLibraryNotFound
	case n.down:
		n.failedDials++
		return nil, &statusError{op: "connect", code: stConnectionNotValid, msg: "connection refused"}
	}
	n.open++
	return &fakeClient{n: n}, nil
}

// set stores a latest value.
func (n *fakeNode) set(e entity, v fieldValue) {
	if n.values[e] == nil {
		n.values[e] = map[uint16]fieldValue{}
	}
	v.entity = e
	n.values[e][v.field] = v
}

func i64(field uint16, x int64) fieldValue { return fieldValue{field: field, typ: typeInt64, i64: x} }
func f64(field uint16, x float64) fieldValue {
	return fieldValue{field: field, typ: typeDouble, f64: x}
}
func str(field uint16, s string) fieldValue { return fieldValue{field: field, typ: typeString, str: s} }
func gpuEnt(id uint) entity                 { return entity{groupGPU, id} }
func giEnt(id uint) entity                  { return entity{groupGPUInstance, id} }

// fakeClient is a client over a fakeNode.
type fakeClient struct {
	n      *fakeNode
	closed bool
}

var errConnection = &statusError{op: "fake", code: stConnectionNotValid, msg: "Connection to the host engine is not valid any longer"}

func (c *fakeClient) check() error {
	if c.closed {
		panic("DCGM called after Close")
	}
	if c.n.down {
		return errConnection
	}
	return nil
}

func (c *fakeClient) GPUs() ([]uint, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	return slices.Clone(c.n.gpus), nil
}

func (c *fakeClient) DeviceInfo(gpu uint) (deviceInfo, error) {
	if err := c.check(); err != nil {
		return deviceInfo{}, err
	}
	return c.n.infos[gpu], c.n.infoErr[gpu]
}

func (c *fakeClient) MIGHierarchy() ([]migEntity, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	return slices.Clone(c.n.hierarchy), nil
}

func (c *fakeClient) Watch(_ []entity, fields []uint16, _ uint16, _ time.Duration) error {
	if err := c.check(); err != nil {
		return err
	}
	c.n.watched = append(c.n.watched, slices.Clone(fields))
	if c.n.watchErr != nil {
		return c.n.watchErr(fields)
	}
	return nil
}

func (c *fakeClient) LatestValues(ents []entity, fields []uint16) ([]fieldValue, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	var out []fieldValue
	for _, e := range ents {
		for _, f := range fields {
			v, ok := c.n.values[e][f]
			if !ok {
				v = fieldValue{entity: e, field: f, typ: typeInt64, i64: int64Blank}
			}
			out = append(out, v)
		}
	}
	return out, nil
}

func (c *fakeClient) XIDsSince(since time.Time) ([]fieldValue, time.Time, error) {
	if err := c.check(); err != nil {
		return nil, since, err
	}
	next := since
	var out []fieldValue
	for _, v := range c.n.xids {
		if !v.ts.Before(since) {
			out = append(out, v)
			next = v.ts.Add(time.Microsecond)
		}
	}
	return out, next, nil
}

func (c *fakeClient) WatchHealth() error {
	if err := c.check(); err != nil {
		return err
	}
	return c.n.healthErr
}

func (c *fakeClient) HealthCheck() ([]healthIncident, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	c.n.healthChecks++
	return slices.Clone(c.n.incidents), nil
}

func (c *fakeClient) GPULost(gpu uint) bool {
	if c.closed {
		panic("DCGM called after Close")
	}
	return c.n.lostGPUs[gpu]
}

func (c *fakeClient) Close() error {
	if c.closed {
		panic("Close called twice")
	}
	c.closed = true
	c.n.closes++
	c.n.open--
	return nil
}

// fakeClock is a settable clock.
type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time          { return c.t }
func (c *fakeClock) Advance(d time.Duration) { c.t = c.t.Add(d) }

// logBuffer collects log lines; it is safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// count returns how many lines contain s.
func (l *logBuffer) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for line := range strings.Lines(l.buf.String()) {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// errCounts is a collector.ErrorCounter for tests.
type errCounts map[string]int

func (e errCounts) Inc(field string) { e[field]++ }

// newTestBackend connects a Backend to n with a fake clock and captured logs.
func newTestBackend(t *testing.T, n *fakeNode) (*Backend, *fakeClock, *logBuffer) {
	t.Helper()
	clock := &fakeClock{t: time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)}
	logs := &logBuffer{}
	b, err := newBackend(Options{Now: clock.Now, Logger: logs.logger(), MinBackoff: time.Second, MaxBackoff: 8 * time.Second}, n.dial)
	if err != nil {
		t.Fatalf("newBackend: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if n.open != 0 {
			t.Errorf("%d DCGM connections left open", n.open)
		}
	})
	return b, clock, logs
}

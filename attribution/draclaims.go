package attribution

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
)

// ClaimSource reads what a DRA claim consumed of a device that the driver
// shares among claims by consumable capacity (KEP-5075: the device's
// ResourceSlice entry publishes `capacity` and allowMultipleAllocations, and
// the claim's allocation result records `consumedCapacity`; the kubelet's
// pod-resources API gives only the share_id). Implementations are safe for
// concurrent use. *SliceWatcher and *StaticClaims are two.
type ClaimSource interface {
	// ConsumedCapacity returns, by capacity name, what the allocation result
	// of claim namespace/name for device ref and share shareID consumed; an
	// error when the claim cannot be read or has no such result.
	ConsumedCapacity(ctx context.Context, namespace, name string, ref DRADeviceRef, shareID string) (map[string]float64, error)
}

// ResourceClaim is the part of a resource.k8s.io ResourceClaim that
// attribution reads, in the API's JSON form (the same in v1, v1beta2 and
// v1beta1). The simulated node builds its claims from it.
type ResourceClaim struct {
	APIVersion string            `json:"apiVersion,omitempty"`
	Kind       string            `json:"kind,omitempty"`
	Metadata   ResourceClaimMeta `json:"metadata"`
	Status     struct {
		Allocation *struct {
			Devices struct {
				Results []ClaimResult `json:"results,omitempty"`
			} `json:"devices"`
		} `json:"allocation,omitempty"`
	} `json:"status"`
}

// ResourceClaimMeta is the object metadata of a ResourceClaim that matters here.
type ResourceClaimMeta struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

// ClaimResult is one device of a claim's allocation result.
type ClaimResult struct {
	Request string  `json:"request"`
	Driver  string  `json:"driver"`
	Pool    string  `json:"pool"`
	Device  string  `json:"device"`
	ShareID *string `json:"shareID,omitempty"`
	// ConsumedCapacity is the amount of each capacity of the device the
	// allocation consumed, as Kubernetes quantities.
	ConsumedCapacity map[string]string `json:"consumedCapacity,omitempty"`
}

// NewResourceClaim returns a claim namespace/name whose allocation result
// lists results, as the API server would serve it.
func NewResourceClaim(namespace, name string, results []ClaimResult) ResourceClaim {
	c := ResourceClaim{APIVersion: "resource.k8s.io/v1", Kind: "ResourceClaim",
		Metadata: ResourceClaimMeta{Name: name, Namespace: namespace}}
	c.Status.Allocation = &struct {
		Devices struct {
			Results []ClaimResult `json:"results,omitempty"`
		} `json:"devices"`
	}{}
	c.Status.Allocation.Devices.Results = results
	return c
}

// consumed returns what c's allocation consumed of device ref, share shareID.
func (c *ResourceClaim) consumed(ref DRADeviceRef, shareID string) (map[string]float64, error) {
	if c.Status.Allocation == nil {
		return nil, fmt.Errorf("claim %s/%s is not allocated", c.Metadata.Namespace, c.Metadata.Name)
	}
	for _, r := range c.Status.Allocation.Devices.Results {
		if r.Driver != ref.Driver || r.Pool != ref.Pool || r.Device != ref.Device || r.ShareID == nil || *r.ShareID != shareID {
			continue
		}
		if len(r.ConsumedCapacity) == 0 {
			return nil, fmt.Errorf("claim %s/%s: no consumedCapacity for %s share %s", c.Metadata.Namespace, c.Metadata.Name, ref, shareID)
		}
		out := make(map[string]float64, len(r.ConsumedCapacity))
		for name, q := range r.ConsumedCapacity {
			v, err := quantity(q)
			if err != nil {
				return nil, fmt.Errorf("claim %s/%s: consumedCapacity %s: %w", c.Metadata.Namespace, c.Metadata.Name, name, err)
			}
			out[name] = v
		}
		return out, nil
	}
	return nil, fmt.Errorf("claim %s/%s has no allocation of %s share %s", c.Metadata.Namespace, c.Metadata.Name, ref, shareID)
}

// quantity parses a Kubernetes quantity ("80Gi", "50") into a number.
func quantity(s string) (float64, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, err
	}
	v := q.AsApproximateFloat64()
	if !(v >= 0) {
		return 0, fmt.Errorf("negative quantity %q", s)
	}
	return v, nil
}

// draFractions returns the memory and core fractions of a device that an
// allocation consumed, from the capacity the device's slice publishes and the
// consumed amounts, both by capacity name. The memory axis is the capacity
// named `memory` (with or without a domain); the core axis the largest
// fraction of any other capacity (HAMi-DRA's `cores`). A device that
// publishes no `memory` capacity is shared on one axis: the largest fraction
// of any capacity, counted as memory.
func draFractions(capacity, consumed map[string]float64) (mem, cores float64) {
	hasMemory := false
	for name := range capacity {
		if capacityName(name) == "memory" {
			hasMemory = true
		}
	}
	for name, total := range capacity {
		if total <= 0 {
			continue
		}
		f := consumed[name] / total
		switch {
		case capacityName(name) == "memory" || !hasMemory:
			mem = max(mem, f)
		default:
			cores = max(cores, f)
		}
	}
	return mem, cores
}

// capacityName returns a capacity's name without its domain.
func capacityName(qualified string) string {
	return qualified[strings.LastIndex(qualified, "/")+1:]
}

// StaticClaims is a ClaimSource over a fixed set of claims: the simulated
// node's, served in process. It is safe for concurrent use.
type StaticClaims struct{ claims map[[2]string]ResourceClaim }

// NewStaticClaims indexes claims by namespace and name.
func NewStaticClaims(claims []ResourceClaim) *StaticClaims {
	s := &StaticClaims{claims: make(map[[2]string]ResourceClaim, len(claims))}
	for _, c := range claims {
		s.claims[[2]string{c.Metadata.Namespace, c.Metadata.Name}] = c
	}
	return s
}

// ConsumedCapacity answers from the claims.
func (s *StaticClaims) ConsumedCapacity(_ context.Context, namespace, name string, ref DRADeviceRef, shareID string) (map[string]float64, error) {
	c, ok := s.claims[[2]string{namespace, name}]
	if !ok {
		return nil, fmt.Errorf("claim %s/%s not found", namespace, name)
	}
	return c.consumed(ref, shareID)
}

// How long a claimCache keeps a claim it read, and a failure to read one.
// An allocation result does not change while the claim is allocated.
const (
	claimTTL      = 10 * time.Minute
	claimRetry    = 30 * time.Second
	maxClaimCache = 4096
)

// claimCache reads claims from the API server with `get`, one at a time, and
// keeps them (and failures) for a while. It is safe for concurrent use.
type claimCache struct {
	now func() time.Time

	mu      sync.Mutex
	res     dynamic.NamespaceableResourceInterface // nil until the API version is known
	entries map[[2]string]claimEntry
}

type claimEntry struct {
	claim ResourceClaim
	err   error
	at    time.Time
}

// setResource sets the claims' API resource once its version is known.
func (c *claimCache) setResource(res dynamic.NamespaceableResourceInterface) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.res = res
}

// get returns claim namespace/name, from the cache or the API server.
func (c *claimCache) get(ctx context.Context, namespace, name string) (ResourceClaim, error) {
	k := [2]string{namespace, name}
	now := c.now()
	c.mu.Lock()
	e, ok := c.entries[k]
	res := c.res
	c.mu.Unlock()
	if ok && ((e.err == nil && now.Sub(e.at) < claimTTL) || (e.err != nil && now.Sub(e.at) < claimRetry)) {
		return e.claim, e.err
	}
	if res == nil {
		return ResourceClaim{}, fmt.Errorf("claim %s/%s: the ResourceClaim API is not discovered yet", namespace, name)
	}
	e = claimEntry{at: now}
	u, err := res.Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		var b []byte
		if b, err = u.MarshalJSON(); err == nil {
			err = json.Unmarshal(b, &e.claim)
		}
	}
	if err != nil {
		e.err = fmt.Errorf("read claim %s/%s: %w", namespace, name, err)
	}
	if ctx.Err() != nil {
		return e.claim, e.err // cut short by the caller: not the claim's fault
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil || len(c.entries) >= maxClaimCache {
		c.entries = make(map[[2]string]claimEntry)
	}
	c.entries[k] = e
	return e.claim, e.err
}

package attribution

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// ResourceSliceVersions are the resource.k8s.io versions a SliceWatcher tries, in
// order: the first the API server serves ResourceSlices under is watched.
var ResourceSliceVersions = []string{"v1", "v1beta2", "v1beta1"}

// SliceStatus is how current a SliceSource is.
type SliceStatus struct {
	Up      bool // the last list or watch of the slices succeeded
	Devices int  // devices of tracked drivers the slices publish
}

// SliceWatcherConfig configures a SliceWatcher.
type SliceWatcherConfig struct {
	// Kubeconfig is the kubeconfig file to reach the API server with; "" uses the
	// in-cluster service account.
	Kubeconfig string
	// NodeName selects the slices of this node (spec.nodeName). Required.
	NodeName string
	// Drivers are the DRA drivers whose devices are indexed; empty means DefaultDRADriver.
	Drivers []string
	// RetryInterval is the wait between two API discoveries while the API server
	// is unreachable or serves no ResourceSlices; 0 means 30s.
	RetryInterval time.Duration
	Logger        *slog.Logger
}

// SliceWatcher keeps the node's ResourceSlices in memory through one watch
// (client-go informer, field selector spec.nodeName) and answers device lookups
// from that cache. When the API server becomes unreachable the cache keeps the
// last listed slices; Status says Up false. Device and Status are safe for
// concurrent use; Run is called once.
type SliceWatcher struct {
	*sliceIndex
	apiHealth
	cfg    SliceWatcherConfig
	rest   *rest.Config
	claims claimCache
}

// NewSliceWatcher checks cfg and builds the API client; it contacts nothing.
func NewSliceWatcher(cfg SliceWatcherConfig) (*SliceWatcher, error) {
	if cfg.NodeName == "" {
		return nil, errors.New("ResourceSlice watch: no node name (set --hostname or NODE_NAME)")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.RetryInterval <= 0 {
		cfg.RetryInterval = 30 * time.Second
	}
	rc, err := restConfig(cfg.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("ResourceSlice watch: %w", err)
	}
	return &SliceWatcher{
		sliceIndex: newSliceIndex(cfg.Drivers),
		apiHealth:  apiHealth{log: cfg.Logger.With("component", "resourceslices", "node", cfg.NodeName), kind: "ResourceSlice"},
		cfg:        cfg,
		rest:       rc,
		claims:     claimCache{now: time.Now},
	}, nil
}

// Status says whether the watch is current and how many devices it knows.
func (w *SliceWatcher) Status() SliceStatus {
	return SliceStatus{Up: w.up.Load(), Devices: w.count()}
}

// Run discovers the ResourceSlice API version, retrying every RetryInterval,
// then watches the node's slices until ctx is done.
func (w *SliceWatcher) Run(ctx context.Context) {
	// Discovery by hand: client-go's discovery package links every API group's
	// types, several MiB of resident memory for the one group needed here.
	raw, err := rest.UnversionedRESTClientFor(dynamic.ConfigFor(w.rest))
	if err != nil {
		w.fail("ResourceSlice watch: API client", err)
		return
	}
	get := func(path string) ([]byte, error) { return raw.Get().AbsPath(path).DoRaw(ctx) }
	dyn, err := dynamic.NewForConfig(w.rest)
	if err != nil {
		w.fail("ResourceSlice watch: API client", err)
		return
	}
	var version string
	for {
		if version, err = discoverSliceVersion(get); err == nil {
			break
		}
		w.fail("ResourceSlice API discovery failed; DRA devices stay unmapped until it succeeds", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(w.cfg.RetryInterval):
		}
	}
	w.log.Info("watching the node's ResourceSlices", "version", "resource.k8s.io/"+version)

	w.claims.setResource(dyn.Resource(schema.GroupVersionResource{Group: "resource.k8s.io", Version: version, Resource: "resourceclaims"}))
	res := dyn.Resource(schema.GroupVersionResource{Group: "resource.k8s.io", Version: version, Resource: "resourceslices"})
	selector := fields.OneTermEqualSelector("spec.nodeName", w.cfg.NodeName).String()
	w.watch(ctx, dyn, res, selector, nil, func(objs []any, _ bool) { w.rebuildFromStore(objs) })
}

// ConsumedCapacity reads claim namespace/name from the API server (a `get`,
// cached: claimTTL, failures claimRetry) and returns what its allocation
// consumed of device ref, share shareID (ClaimSource). The claims are served
// under the ResourceSlices' API version.
func (w *SliceWatcher) ConsumedCapacity(ctx context.Context, namespace, name string, ref DRADeviceRef, shareID string) (map[string]float64, error) {
	c, err := w.claims.get(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return c.consumed(ref, shareID)
}

// discoverSliceVersion returns the first of ResourceSliceVersions under which
// the API server serves resourceslices; get fetches an API path.
func discoverSliceVersion(get func(path string) ([]byte, error)) (string, error) {
	for _, v := range ResourceSliceVersions {
		body, err := get("/apis/resource.k8s.io/" + v)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("discover resource.k8s.io/%s: %w", v, err)
		}
		var list metav1.APIResourceList
		if err := json.Unmarshal(body, &list); err != nil {
			return "", fmt.Errorf("discover resource.k8s.io/%s: %w", v, err)
		}
		if slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == "resourceslices" }) {
			return v, nil
		}
	}
	return "", fmt.Errorf("the API server serves no ResourceSlices under resource.k8s.io/%s (DRA needs Kubernetes 1.32 or later)",
		strings.Join(ResourceSliceVersions, ", "))
}

// rebuildFromStore decodes the informer's objects and indexes them.
func (w *SliceWatcher) rebuildFromStore(objs []any) {
	slices := make([]ResourceSlice, 0, len(objs))
	for _, o := range objs {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		var s ResourceSlice
		b, err := u.MarshalJSON()
		if err == nil {
			err = json.Unmarshal(b, &s)
		}
		if err != nil {
			w.log.Debug("skip malformed ResourceSlice", "name", u.GetName(), "err", err)
			continue
		}
		slices = append(slices, s)
	}
	w.rebuild(slices)
}

package attribution

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
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
	cfg  SliceWatcherConfig
	log  *slog.Logger
	rest *rest.Config

	up      atomic.Bool
	failing atomic.Bool // a failure was logged and no recovery since
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
	var rc *rest.Config
	var err error
	if cfg.Kubeconfig != "" {
		rc, err = loadKubeconfig(cfg.Kubeconfig)
	} else {
		rc, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("ResourceSlice watch: API server configuration (in cluster, or --kubeconfig): %w", err)
	}
	rc.UserAgent = "gputally"
	return &SliceWatcher{
		sliceIndex: newSliceIndex(cfg.Drivers),
		cfg:        cfg,
		log:        cfg.Logger.With("component", "resourceslices", "node", cfg.NodeName),
		rest:       rc,
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

	res := dyn.Resource(schema.GroupVersionResource{Group: "resource.k8s.io", Version: version, Resource: "resourceslices"})
	selector := fields.OneTermEqualSelector("spec.nodeName", w.cfg.NodeName).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = selector
			l, err := res.List(ctx, opts)
			w.observe("list", err)
			return l, err
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = selector
			wi, err := res.Watch(ctx, opts)
			w.observe("watch", err)
			return wi, err
		},
	}
	inf := cache.NewSharedIndexInformer(lw, &unstructured.Unstructured{}, 0, cache.Indexers{})
	_ = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		w.observe("watch", err)
	})
	rebuild := func(any) { w.rebuildFromStore(inf.GetStore().List()) }
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    rebuild,
		UpdateFunc: func(_, o any) { rebuild(o) },
		DeleteFunc: rebuild,
	}); err != nil {
		w.fail("ResourceSlice watch: event handler", err)
		return
	}
	inf.RunWithContext(ctx)
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

// observe records the outcome of a list or watch call, logging a failure and
// its recovery once each.
func (w *SliceWatcher) observe(op string, err error) {
	if err == nil {
		w.up.Store(true)
		if w.failing.CompareAndSwap(true, false) {
			w.log.Info("ResourceSlice " + op + " recovered")
		}
		return
	}
	if errors.Is(err, context.Canceled) || apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		// Shutdown, or a resource version compacted away: the reflector lists
		// again, which is no failure of the API server.
		return
	}
	w.fail("ResourceSlice "+op+" failed; keeping the last listed slices", err)
}

func (w *SliceWatcher) fail(msg string, err error) {
	w.up.Store(false)
	if w.failing.CompareAndSwap(false, true) {
		w.log.Warn(msg, "err", err)
	}
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

package attribution

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// restConfig returns the API server configuration: the kubeconfig file's
// current context, or the in-cluster service account when kubeconfig is "".
func restConfig(kubeconfig string) (*rest.Config, error) {
	var rc *rest.Config
	var err error
	if kubeconfig != "" {
		rc, err = loadKubeconfig(kubeconfig)
	} else {
		rc, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("API server configuration (in cluster, or --kubeconfig): %w", err)
	}
	rc.UserAgent = "gputally"
	return rc, nil
}

// apiHealth records whether the lists and watches of one kind of API object
// succeed, logging a failure and its recovery once each. It is safe for
// concurrent use.
type apiHealth struct {
	log  *slog.Logger
	kind string // "ResourceSlice", "pod": the start of its log lines

	up      atomic.Bool
	failing atomic.Bool // a failure was logged and no recovery since
}

// observe records the outcome of a list or watch call.
func (h *apiHealth) observe(op string, err error) {
	if err == nil {
		h.up.Store(true)
		if h.failing.CompareAndSwap(true, false) {
			h.log.Info(h.kind + " " + op + " recovered")
		}
		return
	}
	if errors.Is(err, context.Canceled) || apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		// Shutdown, or a resource version compacted away: the reflector lists
		// again, which is no failure of the API server.
		return
	}
	h.fail(h.kind+" "+op+" failed; keeping the last listed objects", err)
}

func (h *apiHealth) fail(msg string, err error) {
	h.up.Store(false)
	if h.failing.CompareAndSwap(false, true) {
		h.log.Warn(msg, "err", err)
	}
}

// watch keeps the objects of res, of client, that match the field selector in memory
// through one client-go informer until ctx is done, calling changed with all
// of them after each change, and once more when the first list is complete
// (synced: the objects are all there is). Calls of changed do not overlap,
// and each reads the store as it is then. transform, when not nil, trims each
// object before the informer stores it (cache.TransformFunc); changed gets
// what it returns.
func (h *apiHealth) watch(ctx context.Context, client dynamic.Interface, res dynamic.ResourceInterface, selector string,
	transform cache.TransformFunc, changed func(objs []any, synced bool)) {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = selector
			l, err := res.List(ctx, opts)
			h.observe("list", err)
			return l, err
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = selector
			wi, err := res.Watch(ctx, opts)
			h.observe("watch", err)
			return wi, err
		},
	}
	// A client that says it cannot stream the initial list (a fake in tests)
	// is listed the old way.
	inf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, client), &unstructured.Unstructured{}, 0, cache.Indexers{})
	_ = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		h.observe("watch", err)
	})
	if transform != nil {
		if err := inf.SetTransform(transform); err != nil {
			h.fail(h.kind+" watch: transform", err)
			return
		}
	}
	var mu sync.Mutex
	update := func(any) {
		mu.Lock()
		defer mu.Unlock()
		changed(inf.GetStore().List(), inf.HasSynced())
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    update,
		UpdateFunc: func(_, o any) { update(o) },
		DeleteFunc: update,
	}); err != nil {
		h.fail(h.kind+" watch: event handler", err)
		return
	}
	done := make(chan struct{})
	defer func() { <-done }()
	go func() {
		defer close(done)
		// An empty first list adds nothing: say it is complete once synced.
		if cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			update(nil)
		}
	}()
	inf.RunWithContext(ctx)
}

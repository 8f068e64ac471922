package attribution

import (
	"cmp"
	"errors"
	"log/slog"
	"regexp"
	"slices"
)

// UnresolvedReason says why the holder of a fractional share could not be
// resolved: the `reason` label of gputally_attribution_unresolved_shares.
type UnresolvedReason uint8

// The reasons, a fixed set.
const (
	// ReasonPodsNotWatched: the kubelet shows HAMi virtual devices, or a pod
	// in KAI's reservation namespace, but the node's pods are not watched
	// (--attribution.pods.enabled off) or not listed yet.
	ReasonPodsNotWatched UnresolvedReason = iota
	// ReasonHAMiNotAllocated: a container holds HAMi virtual devices, but its
	// pod has no hami.io/vgpu-devices-allocated, or hami.io/bind-phase is not
	// success.
	ReasonHAMiNotAllocated
	// ReasonHAMiMalformed: hami.io/vgpu-devices-allocated does not parse, or
	// names containers the pod does not have.
	ReasonHAMiMalformed
	// ReasonHAMiMIG: the grant is a MIG instance (HAMi's MIG modes), which is
	// not attributed.
	ReasonHAMiMIG
	// ReasonHAMiNotOnNode: the grant names a GPU that is not on this node.
	ReasonHAMiNotOnNode
	// ReasonHAMiCapacityUnknown: neither HAMi's registration nor the
	// inventory gives the GPU's memory.
	ReasonHAMiCapacityUnknown
	// ReasonKAIMalformed: a KAI sharer's gpu-fraction or gpu-memory (or
	// gpu-fraction-container-name) is not usable.
	ReasonKAIMalformed
	// ReasonKAIReservationMissing: no reservation pod of the sharer's GPU
	// group runs on this node.
	ReasonKAIReservationMissing
	// ReasonKAIReservationUnresolved: the group's reservation pod names no
	// GPU of this node (no run.ai/reserve_for_gpu_index yet, and no device in
	// the kubelet's answer).
	ReasonKAIReservationUnresolved
	// ReasonDRAClaimUnavailable: a DRA claim shares a device whose
	// ResourceSlice publishes capacity, but the claim's consumed capacity could
	// not be read.
	ReasonDRAClaimUnavailable

	// NumUnresolvedReasons is the number of reasons.
	NumUnresolvedReasons
)

// String returns the label value.
func (r UnresolvedReason) String() string {
	switch r {
	case ReasonPodsNotWatched:
		return "pods_not_watched"
	case ReasonHAMiNotAllocated:
		return "hami_not_allocated"
	case ReasonHAMiMalformed:
		return "hami_annotation_malformed"
	case ReasonHAMiMIG:
		return "hami_mig"
	case ReasonHAMiNotOnNode:
		return "hami_gpu_not_on_node"
	case ReasonHAMiCapacityUnknown:
		return "hami_capacity_unknown"
	case ReasonKAIMalformed:
		return "kai_request_malformed"
	case ReasonKAIReservationMissing:
		return "kai_reservation_missing"
	case ReasonKAIReservationUnresolved:
		return "kai_reservation_unresolved"
	case ReasonDRAClaimUnavailable:
		return "dra_claim_unavailable"
	}
	return "unknown"
}

// Unresolved is one holder of a fractional share that attribution could not
// resolve: some pod holds part of a GPU, but what of which GPU is not known.
// The part of that GPU no resolved holder holds is `unknown` time, and of
// every GPU when the GPU is not known (docs/attribution.md).
type Unresolved struct {
	Namespace, Pod, Container string // Container "" when the whole pod is unresolved
	// GPU is the "GPU-…" (or DRA "MIG-…") UUID the holder holds part of; ""
	// when that is not known either.
	GPU    string
	Reason UnresolvedReason
	Detail string // what exactly, for the log
}

// vgpuHold is a container that the kubelet says holds a HAMi virtual device.
type vgpuHold struct {
	namespace, pod, container, resource string
	uuid                                string // the GPU the ID names, which need not be the one it runs on
}

// fracMapper resolves the fractional holders of HAMi and KAI-Scheduler from
// the node's pods. It is used by Refresh only (under Client.refreshMu).
type fracMapper struct {
	pods PodSource // nil: the node's pods are not watched
	kai  KAIConfig
	log  *slog.Logger

	total  [NumUnresolvedReasons]uint64 // unresolved holders seen, one per holder per refresh
	logged map[[3]string]bool           // namespace, pod, reason logged
}

// maxLoggedUnresolved bounds how many distinct unresolved holders are logged.
const maxLoggedUnresolved = 100

func newFracMapper(pods PodSource, kai KAIConfig, log *slog.Logger) *fracMapper {
	return &fracMapper{pods: pods, kai: kai.withDefaults(), log: log, logged: make(map[[3]string]bool)}
}

// addHolders adds to t the holders of HAMi's and KAI's shares on this node and
// replaces KAI's reservation pods by the sharers they reserve the GPU for.
// What cannot be resolved goes to t.unresolved.
func (m *fracMapper) addHolders(t *tables, res *resolver) {
	var view *PodView
	if m.pods != nil {
		view = m.pods.Pods()
	}
	if view == nil || !view.Synced {
		m.unwatched(t)
		return
	}
	frac := make(map[string][]Holder) // GPU UUID → fractional holders
	m.addHAMi(t, view, res, frac)
	m.addKAI(t, view, res, frac)
	for uuid, hs := range frac {
		hs = append(t.holders[uuid], hs...)
		slices.SortFunc(hs, compareHolders)
		t.holders[uuid] = hs
	}
}

// unwatched marks what needs the node's pods as unresolved while they are not
// known: HAMi's virtual devices, and, when the pods are watched but not
// listed yet, the holders in KAI's reservation namespace (without a pod
// watch, a reservation pod is charged as the exclusive holder it looks like).
func (m *fracMapper) unwatched(t *tables) {
	for _, h := range t.vgpu {
		t.unresolved = append(t.unresolved, Unresolved{Namespace: h.namespace, Pod: h.pod, Container: h.container,
			Reason: ReasonPodsNotWatched, Detail: "HAMi virtual device of " + h.uuid})
	}
	if m.pods == nil {
		return
	}
	for uuid, hs := range t.holders {
		kept := hs[:0]
		for _, h := range hs {
			if h.Namespace != m.kai.ReservationNamespace {
				kept = append(kept, h)
				continue
			}
			t.unresolved = append(t.unresolved, Unresolved{Namespace: h.Namespace, Pod: h.Pod, Container: h.Container,
				GPU: uuid, Reason: ReasonPodsNotWatched, Detail: "possible KAI reservation pod"})
		}
		if t.holders[uuid] = kept; len(kept) == 0 {
			delete(t.holders, uuid)
		}
	}
}

// addHAMi resolves the pods with HAMi grants, and the containers holding
// HAMi virtual devices, into frac and t.unresolved.
func (m *fracMapper) addHAMi(t *tables, view *PodView, res *resolver, frac map[string][]Holder) {
	var reg map[string]hamiCapacity
	if view.HAMiRegistration != "" {
		var err error
		if reg, err = parseHAMiRegistration(view.HAMiRegistration); err != nil {
			m.logOnce("", "", "hami_registration", "HAMi's node registration does not parse; shares are of NVML's memory and 100 cores", "err", err)
		}
	}
	holds := make(map[[2]string][]vgpuHold)
	for _, h := range t.vgpu {
		k := [2]string{h.namespace, h.pod}
		holds[k] = append(holds[k], h)
	}
	for i := range view.Pods {
		p := &view.Pods[i]
		k := [2]string{p.Namespace, p.Name}
		ann, annotated := p.Annotations[hamiAllocated]
		if p.Terminal() {
			delete(holds, k) // an ended pod holds nothing
			continue
		}
		if !annotated && holds[k] == nil {
			continue
		}
		if !annotated || p.Annotations[hamiBindPhase] != "success" {
			// Not allocated (yet): it holds nothing unless the kubelet says so.
			continue
		}
		delete(holds, k)
		for _, h := range m.hamiHolders(p, ann, reg, res, t) {
			frac[h.gpu] = append(frac[h.gpu], h.Holder)
		}
	}
	for _, hs := range holds {
		for _, h := range hs {
			t.unresolved = append(t.unresolved, Unresolved{Namespace: h.namespace, Pod: h.pod, Container: h.container,
				Reason: ReasonHAMiNotAllocated, Detail: "holds HAMi virtual device of " + h.uuid + " without a successful allocation"})
		}
	}
}

// gpuHolder is a holder of part of a GPU.
type gpuHolder struct {
	Holder
	gpu string
}

// hamiHolders returns the holders of pod p's grants, ann its
// hami.io/vgpu-devices-allocated, and adds what does not resolve to
// t.unresolved.
func (m *fracMapper) hamiHolders(p *Pod, ann string, reg map[string]hamiCapacity, res *resolver, t *tables) []gpuHolder {
	devs, err := parseHAMiAllocated(ann)
	var grants []hamiGrant
	if err == nil {
		grants, err = hamiGrants(p, devs)
	}
	if err != nil {
		reason := ReasonHAMiMalformed
		if errors.Is(err, errHAMiMIG) {
			reason = ReasonHAMiMIG
		}
		for _, gpu := range gpusNamed(ann, res) {
			t.unresolved = append(t.unresolved, Unresolved{Namespace: p.Namespace, Pod: p.Name, GPU: gpu, Reason: reason, Detail: err.Error()})
		}
		return nil
	}
	resource := "nvidia.com/gpu"
	for _, h := range t.vgpu {
		if h.namespace == p.Namespace && h.pod == p.Name {
			resource = h.resource
		}
	}
	var out []gpuHolder
	for _, g := range grants {
		d, ok := res.gpu(g.uuid)
		if !ok {
			t.unresolved = append(t.unresolved, Unresolved{Namespace: p.Namespace, Pod: p.Name, Container: g.container,
				Reason: ReasonHAMiNotOnNode, Detail: g.uuid})
			continue
		}
		c := hamiCapacityOf(reg, d)
		if c.memMiB <= 0 {
			t.unresolved = append(t.unresolved, Unresolved{Namespace: p.Namespace, Pod: p.Name, Container: g.container,
				GPU: g.uuid, Reason: ReasonHAMiCapacityUnknown})
			continue
		}
		out = append(out, gpuHolder{gpu: g.uuid, Holder: Holder{
			Namespace: p.Namespace, Pod: p.Name, Container: g.container, Resource: resource,
			Sharing: HAMi, Replicas: 1, Fractional: true,
			Memory: float64(g.memMiB) / float64(c.memMiB), Cores: float64(g.cores) / float64(c.cores),
		}})
	}
	return out
}

// gpuUUIDs finds canonical GPU UUIDs in a text.
var gpuUUIDs = regexp.MustCompile(`GPU-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`)

// gpusNamed returns the GPUs of this node that a malformed annotation names,
// when every GPU UUID in it is one; else [""]: the GPU is not known.
func gpusNamed(ann string, res *resolver) []string {
	var gpus []string
	for _, u := range gpuUUIDs.FindAllString(ann, 64) {
		if _, ok := res.gpu(u); !ok {
			return []string{""}
		}
		if !slices.Contains(gpus, u) {
			gpus = append(gpus, u)
		}
	}
	if len(gpus) == 0 {
		return []string{""}
	}
	return gpus
}

// kaiReservation is a reservation pod and the GPU it holds ("" unresolved).
type kaiReservation struct {
	pod *Pod
	gpu string
}

// addKAI replaces each KAI reservation pod among t's holders by the sharers
// of its GPU group (or keeps it, whole and idle, when no sharer holds the GPU)
// and resolves the sharers into frac and t.unresolved.
func (m *fracMapper) addKAI(t *tables, view *PodView, res *resolver, frac map[string][]Holder) {
	reservations := make(map[string]kaiReservation) // group → its reservation
	for i := range view.Pods {
		p := &view.Pods[i]
		if !m.kai.reservation(p) || p.Terminal() {
			continue
		}
		r := kaiReservation{pod: p, gpu: m.reservedGPU(p, t, res)}
		group := p.Labels[kaiGPUGroup]
		if prev, ok := reservations[group]; !ok || (prev.gpu == "" && r.gpu != "") {
			reservations[group] = r
		}
		removeHolder(t, p.Namespace, p.Name)
	}
	shared := make(map[string]bool) // GPUs with a sharer, resolved or not
	for i := range view.Pods {
		p := &view.Pods[i]
		if !m.kai.sharer(p) || p.Terminal() {
			continue
		}
		for _, group := range kaiGroups(p) {
			r, ok := reservations[group]
			switch {
			case !ok:
				t.unresolved = append(t.unresolved, Unresolved{Namespace: p.Namespace, Pod: p.Name,
					Reason: ReasonKAIReservationMissing, Detail: "GPU group " + group})
				continue
			case r.gpu == "":
				t.unresolved = append(t.unresolved, Unresolved{Namespace: p.Namespace, Pod: p.Name,
					Reason: ReasonKAIReservationUnresolved, Detail: "reservation " + r.pod.Name + " of GPU group " + group})
				continue
			}
			shared[r.gpu] = true
			h, err := kaiHolder(p, r.gpu, res)
			if err != nil {
				t.unresolved = append(t.unresolved, Unresolved{Namespace: p.Namespace, Pod: p.Name, GPU: r.gpu,
					Reason: ReasonKAIMalformed, Detail: err.Error()})
				continue
			}
			frac[r.gpu] = append(frac[r.gpu], h)
		}
	}
	for _, r := range reservations {
		if r.gpu == "" || shared[r.gpu] {
			continue
		}
		ctr := "resource-reservation"
		if len(r.pod.Containers) > 0 {
			ctr = r.pod.Containers[0]
		}
		// Resource: the reservation holds its GPU through the device plugin,
		// which tells it apart from a sharer (no resource) in the metrics.
		frac[r.gpu] = append(frac[r.gpu], Holder{
			Namespace: r.pod.Namespace, Pod: r.pod.Name, Container: ctr, Resource: "nvidia.com/gpu",
			Sharing: KAI, Replicas: 1, Fractional: true, Memory: 1, Reservation: true,
		})
	}
}

// reservedGPU returns the GPU reservation pod p holds: the one its
// run.ai/reserve_for_gpu_index annotation names, else the one the kubelet
// assigned it; "" when neither is a GPU of this node.
func (m *fracMapper) reservedGPU(p *Pod, t *tables, res *resolver) string {
	if uuid := p.Annotations[kaiReservedGPU]; uuid != "" {
		if _, ok := res.gpu(uuid); ok {
			return uuid
		}
	}
	var found []string
	for uuid, hs := range t.holders {
		for _, h := range hs {
			if h.Namespace == p.Namespace && h.Pod == p.Name && !slices.Contains(found, uuid) {
				found = append(found, uuid)
			}
		}
	}
	if len(found) != 1 {
		return ""
	}
	if _, ok := res.gpu(found[0]); !ok {
		return ""
	}
	return found[0]
}

// removeHolder removes pod namespace/name from every device's holders.
func removeHolder(t *tables, namespace, name string) {
	for uuid, hs := range t.holders {
		t.holders[uuid] = slices.DeleteFunc(hs, func(h Holder) bool { return h.Namespace == namespace && h.Pod == name })
		if len(t.holders[uuid]) == 0 {
			delete(t.holders, uuid)
		}
	}
}

// kaiHolder returns the holder of sharer p's portion of GPU uuid.
func kaiHolder(p *Pod, uuid string, res *resolver) (Holder, error) {
	d, _ := res.gpu(uuid)
	portion, err := kaiPortion(p, d.MemoryMiB)
	if err != nil {
		return Holder{}, err
	}
	ctr, err := kaiContainer(p)
	if err != nil {
		return Holder{}, err
	}
	// No Resource: a sharer asks by annotation, through no extended resource.
	return Holder{Namespace: p.Namespace, Pod: p.Name, Container: ctr,
		Sharing: KAI, Replicas: 1, Fractional: true, Memory: portion}, nil
}

// note counts and logs (once per pod and reason) the unresolved holders of a
// successful refresh, sorted in place. It runs under Client.refreshMu.
func (m *fracMapper) note(unresolved []Unresolved) {
	slices.SortFunc(unresolved, func(a, b Unresolved) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Pod, b.Pod),
			cmp.Compare(a.Container, b.Container), cmp.Compare(a.GPU, b.GPU), cmp.Compare(a.Reason, b.Reason))
	})
	for _, u := range unresolved {
		m.total[u.Reason]++
		m.logOnce(u.Namespace, u.Pod, u.Reason.String(), "the holder of a GPU share could not be resolved; its GPU's unheld part counts as unknown",
			"pod", u.Namespace+"/"+u.Pod, "container", u.Container, "gpu", u.GPU, "reason", u.Reason.String(), "detail", u.Detail)
	}
}

func (m *fracMapper) logOnce(namespace, pod, what, msg string, args ...any) {
	k := [3]string{namespace, pod, what}
	if m.logged[k] || len(m.logged) >= maxLoggedUnresolved {
		return
	}
	m.logged[k] = true
	m.log.Warn(msg, args...)
}

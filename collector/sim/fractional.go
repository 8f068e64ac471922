package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gputally/gputally/attribution"
)

// HAMiGPU makes a GPU HAMi's (Project-HAMi/HAMi v2.10): its device plugin
// advertises it as Split virtual devices of nvidia.com/gpu, "GPU-<uuid>-<k>",
// and registers it on the node (hami.io/node-nvidia-register) with its memory
// × MemoryScaling and 100 × CoreScaling cores; pods share it by their grants
// (Pod.HAMi).
type HAMiGPU struct {
	Split         int     `yaml:"split"`          // deviceSplitCount; 0 means 10
	MemoryScaling float64 `yaml:"memory_scaling"` // deviceMemoryScaling; 0 means 1
	CoreScaling   float64 `yaml:"core_scaling"`   // deviceCoreScaling; 0 means 1
}

func (h *HAMiGPU) split() int {
	if h.Split == 0 {
		return 10
	}
	return h.Split
}

// registered returns the memory (MiB) and cores HAMi registers for a GPU of
// memMiB, as its device plugin computes them (register.go:148-178).
func (h *HAMiGPU) registered(memMiB int) (int, int) {
	ms, cs := h.MemoryScaling, h.CoreScaling
	if ms == 0 {
		ms = 1
	}
	if cs == 0 {
		cs = 1
	}
	return int(float64(memMiB) * ms), int(cs * 100)
}

// HAMiGrant is what HAMi's scheduler granted one container on a HAMi GPU:
// nvidia.com/gpumem and nvidia.com/gpucores, as hami.io/vgpu-devices-allocated
// records them.
type HAMiGrant struct {
	MemoryMiB int `yaml:"memory_mib"` // MiB of the registered memory
	Cores     int `yaml:"cores"`      // % of the SMs; 0 is no core limit
}

// KAIShare is a KAI-Scheduler fraction of a whole GPU, asked for by exactly
// one of the annotations gpu-fraction and gpu-memory. The pod requests no
// resource; KAI's binder reserves the GPU with a reservation pod.
type KAIShare struct {
	Fraction  float64 `yaml:"fraction"`   // gpu-fraction, (0, 1]
	MemoryMiB int     `yaml:"memory_mib"` // gpu-memory, MiB
}

// shareKind is how a device is shared by the entries holding it: "" (a device
// plugin's whole device, replica or MIG instance: no other holder), or by
// DRA claims, HAMi grants or KAI fractions.
type shareKind string

const (
	plainHold shareKind = ""
	draHold   shareKind = "dra"
	hamiHold  shareKind = "hami"
	kaiHold   shareKind = "kai"
)

// kindOf returns how pod entry pod shares its device.
func kindOf(pod *Pod) shareKind {
	switch {
	case pod.Resource == resourceDRA:
		return draHold
	case pod.HAMi != nil:
		return hamiHold
	case pod.KAI != nil:
		return kaiHold
	}
	return plainHold
}

// shareable reports whether the device of key, held by entries of kind held,
// may take another holder of kind: whole GPUs are shared among entries of one
// kind other than a device plugin's.
func shareable(key devKey, kind, held shareKind) bool {
	return key.instance < 0 && key.replica < 0 && kind != plainHold && kind == held
}

// fractionalUse adds up what the HAMi and KAI entries take of each GPU, as
// their schedulers count it.
type fractionalUse struct {
	hamiMiB, hamiCores, hamiPods map[int]int
	kaiMiB                       map[int]float64
}

// checkFractional validates entry p's HAMi grant or KAI share against GPU
// g, and what the entries before it took: HAMi's scheduler fits memory,
// cores and the split count (device.go:762-810), KAI's packs by MiB.
func (sc *Scenario) checkFractional(p string, pod *Pod, g gpuFacts, use *fractionalUse) error {
	group := &sc.GPUs[g.group]
	switch {
	case pod.HAMi != nil && pod.KAI != nil:
		return sc.errAt(p+".kai", "a pod is HAMi's or KAI's, not both")
	case group.HAMi != nil && pod.HAMi == nil:
		return sc.errAt(p+".hami", "GPU %d is HAMi's: give the grant (memory_mib, cores)", pod.Device.GPU)
	case pod.HAMi != nil && group.HAMi == nil:
		return sc.errAt(p+".hami", "GPU %d is not HAMi's: set hami on gpus[%d]", pod.Device.GPU, g.group)
	case pod.HAMi != nil:
		if pod.Resource != resourceGPU {
			return sc.errAt(p+".resource", "a HAMi grant is of %s", resourceGPU)
		}
		mem, cores := group.HAMi.registered(g.spec.memoryMiB)
		gpu := pod.Device.GPU
		use.hamiMiB[gpu] += pod.HAMi.MemoryMiB
		use.hamiCores[gpu] += pod.HAMi.Cores
		use.hamiPods[gpu]++
		switch {
		case pod.HAMi.MemoryMiB < 1 || pod.HAMi.Cores < 0 || pod.HAMi.Cores > 100:
			return sc.errAt(p+".hami", "want memory_mib ≥ 1 and cores 0–100, got %d MiB, %d cores", pod.HAMi.MemoryMiB, pod.HAMi.Cores)
		case use.hamiMiB[gpu] > mem:
			return sc.errAt(p+".hami.memory_mib", "GPU %d registers %d MiB; its grants take %d", gpu, mem, use.hamiMiB[gpu])
		case use.hamiCores[gpu] > cores:
			return sc.errAt(p+".hami.cores", "GPU %d registers %d cores; its grants take %d", gpu, cores, use.hamiCores[gpu])
		case use.hamiPods[gpu] > group.HAMi.split():
			return sc.errAt(p+".device", "GPU %d is split %d ways; more grants than that", gpu, group.HAMi.split())
		}
	case pod.KAI != nil:
		k := pod.KAI
		if pod.Resource != "" {
			return sc.errAt(p+".resource", "a KAI fraction requests no resource (KAI's reservation pod holds the GPU)")
		}
		if (k.Fraction != 0) == (k.MemoryMiB != 0) {
			return sc.errAt(p+".kai", "give one of fraction and memory_mib")
		}
		mib := float64(k.MemoryMiB)
		if k.Fraction != 0 {
			if !(k.Fraction > 0 && k.Fraction <= 1) {
				return sc.errAt(p+".kai.fraction", "must be in (0, 1], got %g", k.Fraction)
			}
			mib = k.Fraction * float64(g.spec.memoryMiB)
		}
		use.kaiMiB[pod.Device.GPU] += mib
		if mib < 1 || use.kaiMiB[pod.Device.GPU] > float64(g.spec.memoryMiB)+0.5 {
			return sc.errAt(p+".kai", "GPU %d has %d MiB; its fractions take %g", pod.Device.GPU, g.spec.memoryMiB, use.kaiMiB[pod.Device.GPU])
		}
	}
	return nil
}

// checkKAIDevice validates the device of a KAI fraction: a whole GPU that no
// device plugin time-slices, not in MIG mode, not HAMi's.
func (sc *Scenario) checkKAIDevice(p string, d Device, gpus []gpuFacts, key devKey) (devKey, error) {
	if d.GPU < 0 || d.GPU >= len(gpus) {
		return key, sc.errAt(p+".device.gpu", "no GPU %d (the node has GPUs 0 to %d)", d.GPU, len(gpus)-1)
	}
	g := gpus[d.GPU]
	group := &sc.GPUs[g.group]
	switch {
	case d.Replica != nil || d.Instance != nil:
		return key, sc.errAt(p+".device", "a KAI fraction is of a whole GPU: give only gpu")
	case g.mig != nil || group.Replicas > 0 || group.HAMi != nil:
		return key, sc.errAt(p+".device.gpu", "GPU %d is in MIG mode, time-sliced or HAMi's", d.GPU)
	}
	return key, nil
}

// kaiReservationNamespace and kaiReservationApp are KAI's defaults.
const (
	kaiReservationNamespace = attribution.DefaultKAIReservationNamespace
	kaiReservationApp       = attribution.DefaultKAIReservationApp
)

// kaiGroup returns the GPU group KAI's scheduler names for the sharers of gpu.
func kaiGroup(seed uint64, gpu string) string { return uuidOf(seed, "kai-group", gpu) }

// kaiReservationName is the name KAI's binder gives the reservation pod of
// group on node: gpu-reservation-<hex of the first 8 bytes of sha256(node/group)>
// (resource_reservation.go:643-646, since PR #1693).
func kaiReservationName(node, group string) string {
	sum := sha256.Sum256([]byte(node + "/" + group))
	return "gpu-reservation-" + hex.EncodeToString(sum[:8])
}

// addReservations adds, for each GPU KAI fractions share, the pod entry of its
// reservation pod: it holds the GPU, as nvidia.com/gpu, from the first
// fraction's start to the last one's end — also between two of them, as
// KAI's binder keeps it while a BindRequest names its group (PR #1104).
func (b *Backend) addReservations() {
	windows := map[int]window{}
	var gpus []int
	for _, e := range b.entries {
		if e.kai == nil {
			continue
		}
		w, ok := windows[e.gpu]
		if !ok {
			gpus = append(gpus, e.gpu)
			w = window{from: math.MaxInt64, to: math.MinInt64}
		}
		w.from, w.to = min(w.from, e.window.from), max(w.to, e.window.to)
		windows[e.gpu] = w
	}
	for _, i := range gpus {
		uuid := b.inv.GPUs[i].UUID
		group := kaiGroup(b.seed, uuid)
		name := kaiReservationName(b.hostname, group)
		full := kaiReservationNamespace + "/" + name
		c := keyOf(b.seed, "container", full, "resource-reservation")
		b.entries = append(b.entries, podEntry{
			namespace: kaiReservationNamespace, pod: name, uid: uuidOf(b.seed, "pod", full),
			container: "resource-reservation", resource: resourceGPU, deviceID: uuid, gpu: i,
			reservation: group,
			containerID: fmt.Sprintf("%016x%016x%016x%016x", mix(c), mix(c+1), mix(c+2), mix(c+3)),
			window:      windows[i],
		})
	}
}

// PodView returns the pods of running entries as the API server shows them
// to a pod watch on this node, with the labels and annotations HAMi and KAI
// put on them, and the node's HAMi registration.
func (b *Backend) podView(running []podEntry) *attribution.PodView {
	var pods []attribution.Pod
	index := map[[2]string]int{}
	hami := map[[2]string][]string{} // pod → its containers' grants, in order
	for _, e := range running {
		k := [2]string{e.namespace, e.pod}
		i, ok := index[k]
		if !ok {
			i = len(pods)
			index[k] = i
			pods = append(pods, attribution.Pod{Namespace: e.namespace, Name: e.pod, UID: e.uid, Phase: "Running",
				Labels: map[string]string{}, Annotations: map[string]string{}})
		}
		p := &pods[i]
		if !slices.Contains(p.Containers, e.container) {
			p.Containers = append(p.Containers, e.container)
		}
		uuid := b.inv.GPUs[e.gpu].UUID
		switch {
		case e.hami != nil:
			hami[k] = append(hami[k], fmt.Sprintf("%s,NVIDIA,%d,%d:", uuid, e.hami.MemoryMiB, e.hami.Cores))
		case e.kai != nil:
			p.Labels["runai-gpu-group"] = kaiGroup(b.seed, uuid)
			p.Labels["kai.scheduler/queue"] = "default-queue"
			p.Annotations["received-resource-type"] = "Fraction"
			p.Annotations["runai/shared-gpu-configmap"] = e.pod + "-shared-gpu"
			if e.kai.Fraction != 0 {
				p.Annotations["gpu-fraction"] = strconv.FormatFloat(e.kai.Fraction, 'f', -1, 64)
			} else {
				p.Annotations["gpu-memory"] = strconv.Itoa(e.kai.MemoryMiB)
			}
		case e.reservation != "":
			p.Labels["app"] = kaiReservationApp
			p.Labels["runai-gpu-group"] = e.reservation
			p.Annotations["karpenter.sh/do-not-disrupt"] = "true"
			p.Annotations["run.ai/reserve_for_gpu_index"] = uuid
		}
	}
	for k, grants := range hami {
		p := &pods[index[k]]
		p.Labels["hami.io/vgpu-node"] = b.hostname
		p.Annotations["hami.io/vgpu-node"] = b.hostname
		p.Annotations["hami.io/bind-phase"] = "success"
		p.Annotations["hami.io/vgpu-devices-allocated"] = strings.Join(grants, ";") + ";"
		p.Annotations["hami.io/vgpu-devices-to-allocate"] = strings.Repeat(";", len(grants))
	}
	return attribution.NewPodView(true, pods, b.hamiRegistration())
}

// hamiRegistration is the node's hami.io/node-nvidia-register annotation:
// the JSON HAMi's device plugin writes (devices.go:422-443), "" without
// HAMi GPUs.
func (b *Backend) hamiRegistration() string {
	type device struct {
		ID      string `json:"id"`
		Index   int    `json:"index,omitempty"`
		Count   int    `json:"count"`
		Devmem  int    `json:"devmem"`
		Devcore int    `json:"devcore"`
		Type    string `json:"type"`
		Mode    string `json:"mode"`
		Health  bool   `json:"health"`
	}
	var devs []device
	for i, g := range b.inv.GPUs {
		h := b.hamiGPUs[i]
		if h == nil {
			continue
		}
		mem, cores := h.registered(int(g.MemoryTotalMiB))
		devs = append(devs, device{ID: g.UUID, Index: g.Index, Count: h.split(), Devmem: mem, Devcore: cores,
			Type: g.Model, Mode: "hami-core", Health: true})
	}
	if devs == nil {
		return ""
	}
	out, _ := json.Marshal(devs)
	return string(out)
}

// checkHAMiGPU validates the hami of group g at p: not with MIG or
// time-slicing replicas, split 1–maxReplicas, scalings in (0, 10].
func (sc *Scenario) checkHAMiGPU(p string, g *GPUGroup) error {
	h := g.HAMi
	switch {
	case h == nil:
		return nil
	case g.MIG != nil || g.Replicas > 0:
		return sc.errAt(p+".hami", "a HAMi GPU is neither in MIG mode nor time-sliced by the device plugin")
	case h.Split < 0 || h.Split > maxReplicas:
		return sc.errAt(p+".hami.split", "must be between 1 and %d, got %d", maxReplicas, h.Split)
	case h.MemoryScaling < 0 || h.MemoryScaling > 10 || h.CoreScaling < 0 || h.CoreScaling > 10:
		return sc.errAt(p+".hami", "scalings must be in (0, 10], got memory %g, cores %g", h.MemoryScaling, h.CoreScaling)
	}
	return nil
}

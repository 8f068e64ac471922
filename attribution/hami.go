package attribution

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// hamiDevice is one device of one container in hami.io/vgpu-devices-allocated.
type hamiDevice struct {
	uuid   string // the physical GPU's "GPU-…" UUID
	memMiB int64  // memory granted, MiB (percentages and memoryFactor already applied)
	cores  int64  // % of the GPU's SMs; 0 is no core limit
}

// errHAMiMIG is a grant of a MIG instance: HAMi's MIG modes are not attributed.
var errHAMiMIG = errors.New("a MIG grant (HAMi's MIG modes are not attributed)")

// parseHAMiAllocated parses HAMi's hami.io/vgpu-devices-allocated annotation:
// one entry per container, init containers first, each ended by ';', of
// devices each ended by ':', each "<UUID>,<type>,<memMiB>,<cores>"
// (Project-HAMi/HAMi@4707fb0:pkg/device/devices.go:451-483, decoder
// :496-556; docs/develop/protocol.md). Empty entries are containers without a
// GPU and keep their place. The parser is stricter than HAMi's decoder, which
// skips a device without a comma: every non-empty device must have a
// canonical GPU UUID and non-negative integer memory and cores. A UUID with
// the "[template-slot]" of older MIG builds (HAMi #1043) is errHAMiMIG.
func parseHAMiAllocated(s string) ([][]hamiDevice, error) {
	if s == oversized {
		return nil, fmt.Errorf("longer than %d bytes", maxAnnotationBytes)
	}
	entries := strings.Split(s, ";")
	if entries[len(entries)-1] == "" {
		entries = entries[:len(entries)-1] // the ';' after the last container
	}
	out := make([][]hamiDevice, len(entries))
	for i, e := range entries {
		for d := range strings.SplitSeq(e, ":") {
			if d == "" {
				continue
			}
			dev, err := parseHAMiDevice(d)
			if err != nil {
				return nil, fmt.Errorf("container %d: %w", i, err)
			}
			out[i] = append(out[i], dev)
		}
	}
	return out, nil
}

// parseHAMiDevice parses "<UUID>,<type>,<memMiB>,<cores>".
func parseHAMiDevice(d string) (hamiDevice, error) {
	f := strings.Split(d, ",")
	if len(f) < 4 {
		return hamiDevice{}, fmt.Errorf("device %.80q: want UUID,type,memory,cores", d)
	}
	uuid := f[0]
	if strings.Contains(uuid, "[") {
		return hamiDevice{}, errHAMiMIG
	}
	if !strings.HasPrefix(uuid, "GPU-") || !canonicalUUID(uuid[len("GPU-"):]) {
		return hamiDevice{}, fmt.Errorf("device %.80q: bad GPU UUID", d)
	}
	mem, err := strconv.ParseInt(f[2], 10, 32)
	if err != nil || mem < 0 {
		return hamiDevice{}, fmt.Errorf("device %.80q: bad memory %q", d, f[2])
	}
	cores, err := strconv.ParseInt(f[3], 10, 32)
	if err != nil || cores < 0 {
		return hamiDevice{}, fmt.Errorf("device %.80q: bad cores %q", d, f[3])
	}
	return hamiDevice{uuid: uuid, memMiB: mem, cores: cores}, nil
}

// hamiGrant is what one container of a pod holds of one GPU.
type hamiGrant struct {
	container string
	uuid      string
	memMiB    int64
	cores     int64
}

// hamiGrants returns what the containers of p hold, per GPU, from the parsed
// annotation devs, following HAMi's scheduler (pkg/device/initContainer.go):
// while init containers may still run, the pod holds per GPU the larger of
// the init containers' peak and the app containers' sum, for memory and cores
// separately (CollapseInitContainerUsage); once every init container
// succeeded, the app containers' sum (AppContainersOnlyDeviceUsage). Each app
// container holds its own grant; what the pod holds beyond the app
// containers' sum on an axis is held by the init container with the peak
// there (the first, on a tie). A container with two grants on one GPU holds
// their sum. An entry for a container the pod does not have is an error.
func hamiGrants(p *Pod, devs [][]hamiDevice) ([]hamiGrant, error) {
	nInit := len(p.InitContainers)
	if n := nInit + len(p.Containers); len(devs) > n {
		return nil, fmt.Errorf("%d container entries for %d containers", len(devs), n)
	}
	var grants []hamiGrant
	add := func(ctr, uuid string, mem, cores int64) {
		for i := range grants {
			if grants[i].container == ctr && grants[i].uuid == uuid {
				grants[i].memMiB += mem
				grants[i].cores += cores
				return
			}
		}
		grants = append(grants, hamiGrant{container: ctr, uuid: uuid, memMiB: mem, cores: cores})
	}
	type sums struct{ mem, cores int64 }
	appSum := map[string]sums{}
	for i := nInit; i < len(devs); i++ {
		for _, d := range devs[i] {
			add(p.Containers[i-nInit], d.uuid, d.memMiB, d.cores)
			s := appSum[d.uuid]
			appSum[d.uuid] = sums{s.mem + d.memMiB, s.cores + d.cores}
		}
	}
	if nInit == 0 || p.InitDone {
		return grants, nil
	}
	// The init containers' peak per GPU and axis, and who holds it.
	type peak struct {
		mem, cores       int64
		memCtr, coresCtr string
	}
	peaks := map[string]*peak{}
	var order []string // GPUs in the order init containers name them
	for i := 0; i < min(nInit, len(devs)); i++ {
		for _, d := range devs[i] {
			pk := peaks[d.uuid]
			if pk == nil {
				pk = &peak{}
				peaks[d.uuid] = pk
				order = append(order, d.uuid)
			}
			if d.memMiB > pk.mem {
				pk.mem, pk.memCtr = d.memMiB, p.InitContainers[i]
			}
			if d.cores > pk.cores {
				pk.cores, pk.coresCtr = d.cores, p.InitContainers[i]
			}
		}
	}
	for _, uuid := range order {
		pk, app := peaks[uuid], appSum[uuid]
		if extra := pk.mem - app.mem; extra > 0 {
			add(pk.memCtr, uuid, extra, 0)
		}
		if extra := pk.cores - app.cores; extra > 0 {
			add(pk.coresCtr, uuid, 0, extra)
		}
	}
	return grants, nil
}

// hamiCapacity is what HAMi offers of one GPU: the denominators of a share.
type hamiCapacity struct {
	memMiB int64 // registered memory: physical MiB × deviceMemoryScaling
	cores  int64 // registered cores: 100 × deviceCoreScaling
}

// parseHAMiRegistration parses the node annotation hami.io/node-nvidia-register:
// the JSON array device.MarshalNodeDevices writes
// (Project-HAMi/HAMi@4707fb0:pkg/device/devices.go:422-443, fields `id`,
// `devmem` (MiB × deviceMemoryScaling), `devcore` (100 × deviceCoreScaling),
// register.go:148-184). The older comma form is not read: the scheduler of
// that version reads JSON only (device.go:302-311).
func parseHAMiRegistration(s string) (map[string]hamiCapacity, error) {
	var devs []struct {
		ID      string `json:"id"`
		Devmem  int64  `json:"devmem"`
		Devcore int64  `json:"devcore"`
	}
	if err := json.Unmarshal([]byte(s), &devs); err != nil {
		return nil, fmt.Errorf("%s: %w", hamiRegister, err)
	}
	out := make(map[string]hamiCapacity, len(devs))
	for _, d := range devs {
		if d.ID != "" && d.Devmem > 0 {
			out[d.ID] = hamiCapacity{memMiB: d.Devmem, cores: d.Devcore}
		}
	}
	return out, nil
}

// hamiCapacityOf returns what HAMi offers of GPU d: its registration when
// reg lists it, else d's memory and 100 cores (HAMi's default scalings of 1:
// the device plugin registers NVML's memory in MiB, register.go:148). A
// registered devcore of 0 (the JSON field is omitempty) counts as 100.
func hamiCapacityOf(reg map[string]hamiCapacity, d Device) hamiCapacity {
	c, ok := reg[d.UUID]
	if !ok {
		c = hamiCapacity{memMiB: int64(d.MemoryMiB)}
	}
	if c.cores <= 0 {
		c.cores = 100
	}
	return c
}

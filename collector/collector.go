package collector

import (
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gputally/gputally/attribution"
	"github.com/gputally/gputally/dcgmnames"
)

// SnapshotSource gives the latest Snapshot; *Sampler is one.
type SnapshotSource interface {
	Snapshot() *Snapshot
}

// Collector turns the latest Snapshot into metrics. It never reads a backend:
// a scrape costs only the work of its series. It is an unchecked collector
// because a device metric carries pod labels only on some series. Safe for
// concurrent use.
type Collector struct {
	source SnapshotSource
	node   Node
	labels labelScheme
	now    func() time.Time

	device   []deviceDesc // parallel to deviceMetrics
	capacity *descSet     // DCGM_FI_DEV_FB_CAPACITY_BYTES; nil under the legacy naming
	info     descSet
	healthy  descSet
	xids     descSet
	up       *family
	age      *family
	duration *family
	errors   *family

	allocation  descSet
	podUtil     descSet
	podMemory   descSet
	seconds     descSet
	eur         descSet
	energy      descSet
	hourly      descSet
	attrUp      *family
	attrSuccess *family
	attrUnknown *family
	procUp      *family

	pairs      pairCache                  // label pairs of all families, shared across scrapes
	identities atomic.Pointer[identities] // of the latest inventory
}

// Node names the node whose devices a Collector exports.
type Node struct {
	Hostname string // the value of the hostname label
	// LegacyHostnameLabel spells the label `Hostname`, as dcgm-exporter did up
	// to 4.8.2, for dashboards that still query it; by default it is `hostname`.
	LegacyHostnameLabel bool
	// Names is the naming of the DCGM_* families: dcgm-exporter 4.10's names
	// in base units and its driver label (the zero value), or 4.8's.
	Names dcgmnames.Naming
}

func (n Node) hostnameLabel() string {
	if n.LegacyHostnameLabel {
		return LegacyHostnameLabel
	}
	return HostnameLabel
}

// NewCollector returns a Collector of src's snapshots for node. now is the
// clock for gputally_sample_age_seconds; nil means time.Now.
func NewCollector(src SnapshotSource, node Node, now func() time.Time) *Collector {
	if now == nil {
		now = time.Now
	}
	l := newLabelScheme(node.hostnameLabel())
	c := &Collector{
		source: src,
		node:   node,
		labels: l,
		now:    now,
		info: l.newDescSet("gputally_gpu_info",
			"Inventory of GPUs and MIG instances; idle_signal names the activity signal the ledger uses.",
			"driver_version", "mig_mode", "idle_signal"),
		healthy:  l.newDescSet("gputally_gpu_healthy", "1 when the GPU is on the bus and passes health checks, else 0."),
		xids:     l.newDescSet("gputally_xid_errors_total", "XID error events per XID code since the exporter started.", "xid"),
		up:       newFamily("gputally_up", "1 when the last sample of the backend succeeded, else 0.", []string{"backend"}),
		age:      newFamily("gputally_sample_age_seconds", "Seconds since the latest published sample was taken.", nil),
		duration: newFamily("gputally_sample_duration_seconds", "Seconds the latest sample took to read from the backend.", nil),
		errors:   newFamily("gputally_sample_errors_total", "Failed device reads per field since the exporter started.", []string{"backend", "field"}),
	}
	c.allocation = l.newDescSet("gputally_gpu_allocation",
		"Share of the GPU or MIG instance, 0-1, that a container holds.",
		"namespace", "pod", "container", "resource", "sharing")
	c.podUtil = l.newDescSet("gputally_pod_gpu_utilization_ratio",
		"A container's share of SM time on a shared GPU, 0-1, from process accounting.",
		"namespace", "pod", "container")
	c.podMemory = l.newDescSet("gputally_pod_gpu_memory_used_bytes",
		"Framebuffer a container uses on a shared GPU, from process accounting.",
		"namespace", "pod", "container")
	c.seconds = l.newDescSet("gputally_gpu_seconds_total",
		"Device-seconds by state (busy, idle, unallocated, lost, unknown) and holder; a GPU adds one per second.",
		"namespace", "pod", "container", "state")
	c.eur = l.newDescSet("gputally_cost_eur_total",
		"EUR accrued by state (busy, idle, unallocated, lost, unknown) and holder.",
		"namespace", "pod", "container", "state")
	c.energy = l.newDescSet("gputally_energy_joules_total",
		"Facility energy by state and holder, J: measured board power x PUE x device-seconds, the energy the cost's energy component prices; absent for GPUs without a power reading or priced by a flat rate.",
		"namespace", "pod", "container", "state")
	c.hourly = l.newDescSet("gputally_gpu_hourly_cost_eur",
		"The cost rate in force for the GPU, EUR per hour, by component.", "component")
	c.attrUp = newFamily("gputally_attribution_up", "1 when the last kubelet pod-resources refresh succeeded, else 0.", nil)
	c.attrSuccess = newFamily("gputally_attribution_last_success_timestamp_seconds", "Unix time of the last successful kubelet pod-resources refresh.", nil)
	c.attrUnknown = newFamily("gputally_attribution_unknown_device_ids_total", "Kubelet device IDs that named no device of this node.", nil)
	c.procUp = newFamily("gputally_process_attribution_up", "1 when GPU processes could be mapped to pods, else 0.", nil)
	for _, m := range deviceMetrics {
		c.device = append(c.device, m.desc(l, node.Names))
	}
	if node.Names == dcgmnames.Current {
		// Collected by default from 4.9 on (release notes 4.9.0).
		capacity := l.newDescSet(dcgmnames.FBCapacity.New, dcgmnames.FBCapacity.Help, node.Names.DriverLabel())
		c.capacity = &capacity
	}
	return c
}

// Describe sends nothing: the Collector is unchecked (see Collector).
func (c *Collector) Describe(chan<- *prometheus.Desc) {}

// Collect sends the metrics of the latest Snapshot.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	snap := c.source.Snapshot()
	if snap == nil {
		return
	}
	ch <- c.metric(c.up, prometheus.GaugeValue, boolValue(snap.Up), noDevice, snap.Backend)
	ch <- c.metric(c.age, prometheus.GaugeValue, c.now().Sub(snap.Time).Seconds(), noDevice)
	ch <- c.metric(c.duration, prometheus.GaugeValue, snap.Duration.Seconds(), noDevice)
	for field, n := range snap.Errors {
		ch <- c.metric(c.errors, prometheus.CounterValue, float64(n), noDevice, snap.Backend, field)
	}
	c.collectAttribution(ch, snap)
	if snap.ProcessAccounting {
		ch <- c.metric(c.procUp, prometheus.GaugeValue, boolValue(snap.ProcessAccountingUp), noDevice)
	}
	c.collectLedger(ch, snap)
	if !snap.Up {
		return
	}
	for i := range snap.Inventory.GPUs {
		c.collectGPU(ch, snap, i)
	}
	c.collectUsage(ch, snap)
}

// identity returns the label set and identity labels of a device.
func (c *Collector) identity(snap *Snapshot, ref deviceRef) (labelSet, deviceLabels) {
	ids := c.identitiesOf(snap)
	if ref.instance < 0 {
		return setGPU, ids.gpus[ref.gpu]
	}
	return setMIG, ids.instances[ref.gpu][ref.instance]
}

// identitiesOf returns the identities of snap's inventory, building them when
// the inventory changed (snapshots of one index share their listed devices).
// Two scrapes may both build them; they build the same.
func (c *Collector) identitiesOf(snap *Snapshot) *identities {
	ids := c.identities.Load()
	if ids == nil || ids.index != snap.index {
		ids = c.newIdentities(snap)
		c.identities.Store(ids)
	}
	return ids
}

// ledgerIdentity returns the label set and identity labels of the device of a
// ledger series: one of the inventory, or one that left it (a MIG instance
// after a reconfiguration) whose series the ledger still retains.
func (c *Collector) ledgerIdentity(snap *Snapshot, uuid string) (labelSet, deviceLabels, bool) {
	if ref, ok := snap.index.lookup(uuid); ok {
		set, labels := c.identity(snap, ref)
		return set, labels, true
	}
	r, ok := c.identitiesOf(snap).retired[uuid]
	return r.set, r.labels, ok
}

// identities are the identity labels of the devices of one inventory, built
// once per inventory rather than per series.
type identities struct {
	index     *deviceIndex
	gpus      []deviceLabels
	instances [][]deviceLabels
	// retired are the identities of devices of earlier inventories that still
	// have ledger series (retained after they left).
	retired map[string]retiredIdentity
}

type retiredIdentity struct {
	set    labelSet
	labels deviceLabels
}

// newIdentities builds the identities of snap's inventory and of the listed
// devices that left it.
func (c *Collector) newIdentities(snap *Snapshot) *identities {
	ids := &identities{index: snap.index}
	for _, g := range snap.Inventory.GPUs {
		var insts []deviceLabels
		for j := range g.Instances {
			insts = append(insts, c.identityOf(g, &g.Instances[j]))
		}
		ids.gpus, ids.instances = append(ids.gpus, c.identityOf(g, nil)), append(ids.instances, insts)
	}
	for uuid, d := range snap.listed {
		if _, ok := snap.index.lookup(uuid); ok {
			continue
		}
		if ids.retired == nil {
			ids.retired = make(map[string]retiredIdentity)
		}
		r := retiredIdentity{setGPU, c.identityOf(d.gpu, nil)}
		if d.instance != nil {
			r = retiredIdentity{setMIG, c.identityOf(d.gpu, d.instance)}
		}
		ids.retired[uuid] = r
	}
	return ids
}

// identityOf returns the identity labels of GPU g, or of its MIG instance in.
func (c *Collector) identityOf(g GPU, in *MIGInstance) deviceLabels {
	values := []string{strconv.Itoa(g.Index), g.UUID, g.PCIBusID, "nvidia" + strconv.Itoa(g.Minor), g.Model, c.node.Hostname}
	if in == nil {
		return newDeviceLabels(c.labels.gpu, values)
	}
	return newDeviceLabels(c.labels.mig, append(values, in.Profile, strconv.Itoa(in.GPUInstanceID)))
}

// podLabels returns the label set of a device series and buf with the values
// of its pod labels appended: with pod labels when exactly one container
// holds the whole device. A caller's buf on its stack keeps the scrape from
// allocating them.
func podLabels(buf []string, attr *attribution.Snapshot, uuid string, set labelSet) (labelSet, []string) {
	if attr == nil {
		return set, buf
	}
	h, ok := attr.Exclusive(uuid)
	if !ok {
		return set, buf
	}
	// setGPUPod and setMIGPod follow setGPU and setMIG.
	return set + 1, append(buf, h.Container, h.Namespace, h.Pod)
}

func (c *Collector) collectAttribution(ch chan<- prometheus.Metric, snap *Snapshot) {
	attr := snap.Attribution
	if attr == nil {
		return
	}
	ch <- c.metric(c.attrUp, prometheus.GaugeValue, boolValue(attr.Up), noDevice)
	if !attr.LastSuccess.IsZero() {
		ch <- c.metric(c.attrSuccess, prometheus.GaugeValue, float64(attr.LastSuccess.UnixNano())/1e9, noDevice)
	}
	ch <- c.metric(c.attrUnknown, prometheus.CounterValue, float64(attr.UnknownIDs), noDevice)
	for uuid, holders := range attr.Holders {
		ref, ok := snap.index.lookup(uuid)
		if !ok {
			continue
		}
		set, id := c.identity(snap, ref)
		for _, h := range holders {
			ch <- c.metric(c.allocation[set], prometheus.GaugeValue, h.Share, id,
				h.Namespace, h.Pod, h.Container, h.Resource, string(h.Sharing))
		}
	}
}

func (c *Collector) collectUsage(ch chan<- prometheus.Metric, snap *Snapshot) {
	if !snap.ProcessAccountingUp {
		return
	}
	for _, u := range snap.Usage {
		ref, ok := snap.index.lookup(u.UUID)
		if !ok {
			continue
		}
		set, id := c.identity(snap, ref)
		for _, h := range u.Holders {
			if !math.IsNaN(h.Utilization) {
				ch <- c.metric(c.podUtil[set], prometheus.GaugeValue, h.Utilization, id, h.Namespace, h.Pod, h.Container)
			}
			ch <- c.metric(c.podMemory[set], prometheus.GaugeValue, h.MemoryBytes, id, h.Namespace, h.Pod, h.Container)
		}
	}
}

func (c *Collector) collectLedger(ch chan<- prometheus.Metric, snap *Snapshot) {
	for _, t := range snap.Totals {
		set, id, ok := c.ledgerIdentity(snap, t.Device)
		if !ok {
			continue
		}
		holder := []string{t.Holder.Namespace, t.Holder.Pod, t.Holder.Container, t.State.String()}
		ch <- c.metric(c.seconds[set], prometheus.CounterValue, t.Seconds, id, holder...)
		ch <- c.metric(c.eur[set], prometheus.CounterValue, t.EUR, id, holder...)
		if t.Metered {
			ch <- c.metric(c.energy[set], prometheus.CounterValue, t.Joules, id, holder...)
		}
	}
	for _, r := range snap.Rates {
		ref, ok := snap.index.lookup(r.UUID)
		if !ok {
			continue
		}
		set, id := c.identity(snap, ref)
		for _, comp := range []struct {
			name string
			v    float64
		}{{"capital", r.Rate.Capital}, {"energy", r.Rate.Energy}, {"overhead", r.Rate.Overhead}} {
			ch <- c.metric(c.hourly[set], prometheus.GaugeValue, comp.v, id, comp.name)
		}
	}
}

func (c *Collector) collectGPU(ch chan<- prometheus.Metric, snap *Snapshot, i int) {
	g := &snap.Inventory.GPUs[i]
	r := &snap.Sample.GPUs[i]
	act := snap.Activity[i]
	_, id := c.identity(snap, deviceRef{i, -1})
	migMode := "disabled"
	if g.MIGEnabled {
		migMode = "enabled"
	}
	ch <- c.metric(c.info[setGPU], prometheus.GaugeValue, 1, id, snap.Inventory.DriverVersion, migMode, string(act.Signal))
	ch <- c.metric(c.healthy[setGPU], prometheus.GaugeValue, boolValue(r.Healthy && !r.Lost), id)
	for _, x := range r.XIDs {
		ch <- c.metric(c.xids[setGPU], prometheus.CounterValue, float64(x.Count), id, strconv.FormatUint(x.XID, 10))
	}
	if r.Lost {
		return
	}
	driver := snap.Inventory.DriverVersion
	var buf [4]string // pod labels and the driver version
	set, extra := podLabels(buf[:0], snap.Attribution, g.UUID, setGPU)
	c.collectValues(ch, set, &r.Values, false, id, append(extra, driver))
	c.collectCapacity(ch, set, g.MemoryTotalMiB, id, append(extra, driver))
	for j := range g.Instances {
		_, mid := c.identity(snap, deviceRef{i, j})
		var signal Signal = SignalNone
		if j < len(act.Instances) {
			signal = act.Instances[j].Signal
		}
		ch <- c.metric(c.info[setMIG], prometheus.GaugeValue, 1, mid, snap.Inventory.DriverVersion, migMode, string(signal))
		set, extra := podLabels(buf[:0], snap.Attribution, g.Instances[j].UUID, setMIG)
		c.collectValues(ch, set, &r.Instances[j], true, mid, append(extra, driver))
		c.collectCapacity(ch, set, g.Instances[j].MemoryTotalMiB, mid, append(extra, driver))
	}
}

// collectValues sends the present fields of v with the device's identity
// labels and extra: its pod labels (none, or those of podLabels) and the
// driver version; on a MIG instance
// only the fields the contract exports per instance (parent-only fields are
// never repeated).
func (c *Collector) collectValues(ch chan<- prometheus.Metric, set labelSet, v *Values, mig bool, id deviceLabels, extra []string) {
	for k := range deviceMetrics {
		d := &c.device[k]
		if mig && !d.onMIG {
			continue
		}
		x, ok := v.Get(deviceMetrics[k].field)
		if !ok {
			continue
		}
		ch <- c.metric(d.descs[set], d.valueType, x*d.mul/d.div, id, extra...)
	}
}

// collectCapacity sends the framebuffer size of a GPU or MIG instance, from
// the inventory, under the current naming (4.8 wrote none); nothing when the
// backend does not know it.
func (c *Collector) collectCapacity(ch chan<- prometheus.Metric, set labelSet, mib uint64, id deviceLabels, extra []string) {
	if c.capacity == nil || mib == 0 {
		return
	}
	ch <- c.metric(c.capacity[set], prometheus.GaugeValue, float64(mib)*dcgmnames.FBCapacity.FromOld, id, extra...)
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

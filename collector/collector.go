package collector

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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
	source   SnapshotSource
	hostname string
	now      func() time.Time

	device   []descSet // parallel to deviceMetrics
	info     descSet
	healthy  descSet
	xids     descSet
	up       *prometheus.Desc
	age      *prometheus.Desc
	duration *prometheus.Desc
	errors   *prometheus.Desc
}

// NewCollector returns a Collector of src's snapshots for the node hostname
// (the `Hostname` label). now is the clock for gpuledger_sample_age_seconds;
// nil means time.Now.
func NewCollector(src SnapshotSource, hostname string, now func() time.Time) *Collector {
	if now == nil {
		now = time.Now
	}
	c := &Collector{
		source:   src,
		hostname: hostname,
		now:      now,
		info: newDescSet("gpuledger_gpu_info",
			"Inventory of GPUs and MIG instances; idle_signal names the activity signal the ledger uses.",
			"driver_version", "mig_mode", "idle_signal"),
		healthy: newDescSet("gpuledger_gpu_healthy", "1 when the GPU is on the bus and passes health checks, else 0."),
		xids:    newDescSet("gpuledger_xid_errors_total", "XID error events per XID code since the exporter started.", "xid"),
		up: prometheus.NewDesc("gpuledger_up",
			"1 when the last sample of the backend succeeded, else 0.", []string{"backend"}, nil),
		age: prometheus.NewDesc("gpuledger_sample_age_seconds",
			"Seconds since the latest published sample was taken.", nil, nil),
		duration: prometheus.NewDesc("gpuledger_sample_duration_seconds",
			"Seconds the latest sample took to read from the backend.", nil, nil),
		errors: prometheus.NewDesc("gpuledger_sample_errors_total",
			"Failed device reads per field since the exporter started.", []string{"backend", "field"}, nil),
	}
	for _, m := range deviceMetrics {
		c.device = append(c.device, newDescSet(m.name, m.help))
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
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, boolValue(snap.Up), snap.Backend)
	ch <- prometheus.MustNewConstMetric(c.age, prometheus.GaugeValue, c.now().Sub(snap.Time).Seconds())
	ch <- prometheus.MustNewConstMetric(c.duration, prometheus.GaugeValue, snap.Duration.Seconds())
	for field, n := range snap.Errors {
		ch <- prometheus.MustNewConstMetric(c.errors, prometheus.CounterValue, float64(n), snap.Backend, field)
	}
	if !snap.Up {
		return
	}
	for i := range snap.Inventory.GPUs {
		c.collectGPU(ch, snap, i)
	}
}

func (c *Collector) collectGPU(ch chan<- prometheus.Metric, snap *Snapshot, i int) {
	g := &snap.Inventory.GPUs[i]
	r := &snap.Sample.GPUs[i]
	act := snap.Activity[i]
	labels := []string{strconv.Itoa(g.Index), g.UUID, g.PCIBusID, "nvidia" + strconv.Itoa(g.Minor), g.Model, c.hostname}
	migMode := "disabled"
	if g.MIGEnabled {
		migMode = "enabled"
	}
	ch <- prometheus.MustNewConstMetric(c.info[setGPU], prometheus.GaugeValue, 1,
		append(labels, snap.Inventory.DriverVersion, migMode, string(act.Signal))...)
	ch <- prometheus.MustNewConstMetric(c.healthy[setGPU], prometheus.GaugeValue, boolValue(r.Healthy && !r.Lost), labels...)
	for _, x := range r.XIDs {
		ch <- prometheus.MustNewConstMetric(c.xids[setGPU], prometheus.CounterValue, float64(x.Count),
			append(labels, strconv.FormatUint(x.XID, 10))...)
	}
	if r.Lost {
		return
	}
	c.collectValues(ch, setGPU, &r.Values, false, labels)
	for j := range g.Instances {
		in := &g.Instances[j]
		mlabels := append(labels[:len(labels):len(labels)], in.Profile, strconv.Itoa(in.GPUInstanceID))
		var signal Signal = SignalNone
		if j < len(act.Instances) {
			signal = act.Instances[j].Signal
		}
		ch <- prometheus.MustNewConstMetric(c.info[setMIG], prometheus.GaugeValue, 1,
			append(mlabels, snap.Inventory.DriverVersion, migMode, string(signal))...)
		c.collectValues(ch, setMIG, &r.Instances[j], true, mlabels)
	}
}

// collectValues sends the present fields of v; on a MIG instance only the
// fields the contract exports per instance (parent-only fields are never repeated).
func (c *Collector) collectValues(ch chan<- prometheus.Metric, set labelSet, v *Values, mig bool, labels []string) {
	for k, m := range deviceMetrics {
		if mig && !m.onMIG {
			continue
		}
		x, ok := v.Get(m.field)
		if !ok {
			continue
		}
		ch <- prometheus.MustNewConstMetric(c.device[k][set], m.valueType, x, labels...)
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

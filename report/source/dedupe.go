package source

// DefaultDedupeLabels are the labels by which copies of one series differ
// when an engine delivers it more than once: the replica labels of an
// HA Prometheus pair without deduplication (Thanos' and Cortex' usual
// `prometheus_replica`, `replica`, `__replica__`) and the job of a second
// scrape job on the same exporter. `instance` is not among them: an exporter
// that restarted in a new pod has a new instance, and its series follow the
// old ones in time — both count.
var DefaultDedupeLabels = []string{"prometheus_replica", "replica", "__replica__", "job"}

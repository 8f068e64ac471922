// Package attribution tells which Kubernetes containers hold each GPU, MIG
// instance and time slice of a node, and how much of a shared GPU each uses.
//
// A Client asks the kubelet's pod-resources v1 API (List and
// GetAllocatableResources) over one long-lived gRPC connection in the background
// and publishes an immutable Snapshot; readers call Current, which never blocks.
// Device IDs of every form the NVIDIA and GKE device plugins use are parsed by
// ParseDeviceID and resolved to device UUIDs through the table set by
// Client.SetDevices.
//
// DRA claims (ContainerResources.dynamic_resources) are mapped to device UUIDs
// through the node's ResourceSlices (a SliceSource: a SliceWatcher on the API
// server, or static slices) and, for dynamic MIG devices without a UUID, through
// the MIG layout set by Client.SetMIGLayout; see docs/attribution.md.
//
// A ProcessResolver maps GPU processes to pods through /proc/<pid>/cgroup and
// the kubelet's pod log directory, so its Split can divide a shared GPU's
// utilization and memory among its holders.
package attribution

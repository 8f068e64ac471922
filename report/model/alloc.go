package model

// How a holding holds its device: what gputally_gpu_allocation says of it.

// Alloc is what gputally_gpu_allocation says of a holding: the extended
// resource it was allocated through and how the device is shared.
type Alloc struct{ Resource, Sharing string }

// Fractional reports whether the holding holds a share of its GPU's memory
// and compute that HAMi, KAI-Scheduler or a DRA driver handed out
// (sharing hami, kai or dra), rather than the whole device, a MIG instance or
// time-slicing replicas. A DRA holding may still hold its GPU whole (share 1).
func (a Alloc) Fractional() bool {
	return a.Sharing == "hami" || a.Sharing == "kai" || a.Sharing == "dra"
}

// KAIReservation reports whether the holding is a KAI-Scheduler reservation
// pod holding its GPU for no sharer: sharing kai through nvidia.com/gpu (a
// sharer asks by annotation, through no resource).
func (a Alloc) KAIReservation() bool { return a.Sharing == "kai" && a.Resource != "" }

// Share is a shared holding's share of its device at its last sample, 0–1,
// and the step bucket of that sample: for time-slicing and MPS the replicas
// it holds over those the device offers; for a fractional holding (HAMi,
// KAI-Scheduler, DRA) the share of the GPU the ledger charges it.
type Share struct {
	Share  float64
	Bucket int
}

// Package cost prices GPU time in EUR and keeps the ledger that splits it into
// busy, idle-but-allocated, unallocated, lost (a GPU off the bus) and unknown
// (not measured) time per device and holder.
//
// A Book (a strict YAML price book, or the built-in Default) gives each GPU
// model a Rate in EUR per hour: capital + energy at the measured power × PUE +
// overhead, or a flat hourly rate. A Store holds the Book in force and reloads
// it, keeping the old one when the new file is bad. FractionalShares prices
// the holders of fractional shares of a GPU (HAMi, KAI-Scheduler, DRA consumed
// capacity) by the book's SharePolicy. A Ledger integrates the
// rate of every GPU each sample tick: Advance splits rate × dt over the MIG
// instances by weight (stranded slices included) and over the holders by
// share, and adds device-seconds and EUR to one counter per device, holder and
// State; AdvanceUnmeasured charges a gap in the readings as Unknown. Series of
// holders and devices that left the input are retained for a window
// (WithRetention). Every tick, the EUR added to the counters of a GPU equal
// its rate × dt.
//
// The package knows nothing of NVML, DCGM or Kubernetes: the caller (the
// collector) fills GPUState from its readings and the attribution snapshot,
// and chooses the activity signal of each device.
//
// See docs/cost.md for the model, the default prices and worked examples.
package cost

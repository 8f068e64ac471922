package cost

// HeldThroughout returns, in dst (reusing its slices), the states to charge an
// unmeasured gap at (Ledger.AdvanceUnmeasured): the GPUs and MIG instances of
// after, the readings at the end of the gap, each with only the holders
// present both in before (the last good sample) and in after (the recovery
// sample). A pod that started or ended within the gap may have held the
// device for any part of it, so its part goes to the device's no-holder
// unknown series instead of moving money to or from its namespace.
//
// A holder keeps the smaller of its two shares: it held at least that much at
// both ends, and its shares at either end can differ (replicas or process
// accounting changed), so the smaller one charges it no more than it is known
// to have held; the difference is unknown with no holder. The shares of a
// device then still sum to at most 1, since each is at most its share in after.
// A device in after that before lacks (a new GPU or MIG instance) keeps no
// holders. It allocates only when dst is too small.
func HeldThroughout(dst, before, after []GPUState) []GPUState {
	dst = resize(dst, len(after))
	for i := range after {
		a, d := &after[i], &dst[i]
		holders, instances := d.Holders[:0], resize(d.Instances, len(a.Instances))
		*d = *a
		b := gpuByUUID(before, a.UUID)
		var bInstances []Instance
		if b != nil {
			holders = commonHolders(holders, b.Holders, a.Holders)
			bInstances = b.Instances
		}
		d.Holders = holders
		for j := range a.Instances {
			kept := instances[j].Holders[:0]
			instances[j] = a.Instances[j]
			instances[j].Holders = commonHolders(kept, instanceHolders(bInstances, a.Instances[j].UUID), a.Instances[j].Holders)
		}
		d.Instances = instances
	}
	return dst
}

func gpuByUUID(gpus []GPUState, uuid string) *GPUState {
	for i := range gpus {
		if gpus[i].UUID == uuid {
			return &gpus[i]
		}
	}
	return nil
}

func instanceHolders(instances []Instance, uuid string) []Holder {
	for i := range instances {
		if instances[i].UUID == uuid {
			return instances[i].Holders
		}
	}
	return nil
}

// commonHolders appends to dst the holders of after also in before, each
// with the smaller of its two shares.
func commonHolders(dst, before, after []Holder) []Holder {
	for _, h := range after {
		for _, p := range before {
			if p.Key == h.Key {
				h.Share = min(clampShare(h.Share), clampShare(p.Share))
				dst = append(dst, h)
				break
			}
		}
	}
	return dst
}

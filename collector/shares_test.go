package collector

import (
	"math"
	"testing"

	"github.com/gputally/gputally/attribution"
	"github.com/gputally/gputally/cost"
)

// TestSharePricerFollowsThePolicy: the pricer prices one attribution
// snapshot once per policy, so a reloaded price book whose fractional.policy
// changed reprices the holders of the snapshot the sampler already priced
// (attribution keeps its snapshot until the next refresh). On the H100, A
// holds (memory .75, cores .25) and B (.25, .75):
//
//	dominant: d = .75, .75; R = min(1 − 1, 1 − 1) = 0; each .75 × 1 / 1.5 = .5
//	memory:   .75 and .25
//	dominant again: .5 and .5
//
// The whole-GPU holder of the A100 keeps its share 1, untouched.
func TestSharePricerFollowsThePolicy(t *testing.T) {
	frac := func(pod string, mem, cores float64) attribution.Holder {
		return attribution.Holder{Namespace: "ml", Pod: pod, Container: "main", Sharing: attribution.HAMi,
			Replicas: 1, Fractional: true, Memory: mem, Cores: cores}
	}
	whole := attribution.Holder{Namespace: "ml", Pod: "w", Container: "main", Resource: "nvidia.com/gpu",
		Sharing: attribution.Exclusive, Replicas: 1, Share: 1}
	attr := &attribution.Snapshot{Up: true, Holders: map[string][]attribution.Holder{
		fracH100: {frac("a", 0.75, 0.25), frac("b", 0.25, 0.75)},
		fracA100: {whole},
	}}
	var p sharePricer
	for _, step := range []struct {
		policy cost.SharePolicy
		a, b   float64
	}{
		{cost.SharePolicy{Kind: cost.Dominant}, 0.5, 0.5},
		{cost.SharePolicy{Kind: cost.MemoryShares}, 0.75, 0.25},
		{cost.SharePolicy{Kind: cost.Dominant}, 0.5, 0.5},
	} {
		got := p.price(attr, step.policy)
		hs := got.Holders[fracH100]
		if len(hs) != 2 || math.Abs(hs[0].Share-step.a) > 1e-12 || math.Abs(hs[1].Share-step.b) > 1e-12 {
			t.Errorf("%s: shares %+v, want %g and %g", step.policy, hs, step.a, step.b)
		}
		if w := got.Holders[fracA100]; len(w) != 1 || w[0] != whole {
			t.Errorf("%s: the whole GPU's holders %+v, want %+v", step.policy, w, whole)
		}
	}
	if s := attr.Holders[fracH100][0].Share; s != 0 {
		t.Errorf("the pricer wrote a share %g into attribution's snapshot, which is immutable", s)
	}
}

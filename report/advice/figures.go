package advice

import (
	"github.com/gputally/gputally/report/model"
)

// figuresOf says which kinds of number the evidence of rec is (model.Kinds):
// those of the ledger entries of the holdings it names and, for a drain,
// of every entry on its node — "sampled", "allocation share", "exact" or
// several joined by " + ".
func figuresOf(d *model.Dataset, rec *Recommendation) string {
	holdings := make(map[string]bool, len(rec.Holdings))
	for _, h := range rec.Holdings {
		holdings[h] = true
	}
	var ks model.Kinds
	for k, e := range d.Ledger {
		if holdings[k.Holder.Namespace+"/"+k.Holder.Pod+"/"+k.Holder.Container] || rec.Kind == "drain" && e.Host == rec.Target {
			ks = ks.With(e.Kind)
		}
	}
	return ks.String()
}

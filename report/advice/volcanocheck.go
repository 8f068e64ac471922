package advice

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The rules of Volcano's queue admission webhook that the Queue CRD does
// not enforce (a server-side dry-run against the CRD alone accepts what
// they reject), as of volcano-sh/volcano@ed72c7c
// (pkg/webhooks/admission/queues/validate/validate_queue.go), and the names
// the report will not take. checkVolcanoQueues applies them to a set of
// queues created in order.

// vcQueue is a Volcano Queue as far as the rules read it: quantities as
// written.
type vcQueue struct {
	name, parent                    string
	deserved, capability, guarantee map[string]string
}

// volcanoMaxDepth is the webhook's --max-queue-depth default
// (cmd/webhook-manager/app/options/options.go:36).
const volcanoMaxDepth = 5

// checkVolcanoQueues reports every rule the queues break, created in their
// order into a cluster that holds no other queue but root:
//   - a name that is not a DNS-1123 label, or is default or root (Volcano's
//     own queues, validate_queue.go:295-301);
//   - a quantity that is not one, is negative, or is not a whole number of
//     an extended resource such as nvidia.com/gpu (validate_queue.go:227-240
//     through kubernetes pkg/apis/core/validation ValidateResourceQuantityValue);
//   - guarantee[r] without deserved[r] or above it, and deserved[r] above
//     capability[r] where that is set (validate_queue.go:242-290);
//   - a parent that is the queue itself, is not created before it, or is
//     more than volcanoMaxDepth levels deep (validate_queue.go:373-407,
//     500-520);
//   - capability[r] above the nearest ancestor's capability[r], and the
//     children's deserved or guarantee summing above their parent's, a
//     resource the parent does not name counting as 0 (validate_queue.go:
//     570-628).
func checkVolcanoQueues(qs []vcQueue) error {
	var errs []error
	byName := map[string]*vcQueue{}
	for i := range qs {
		q := &qs[i]
		errs = append(errs, checkQueue(q)...)
		errs = append(errs, checkParent(q, byName)...)
		byName[q.name] = q
	}
	errs = append(errs, checkChildrenSums(qs, byName)...)
	return errors.Join(errs...)
}

// checkQueue checks one queue's name and quantities.
func checkQueue(q *vcQueue) []error {
	var errs []error
	if msgs := validation.IsDNS1123Label(q.name); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("queue %q: name: %s", q.name, strings.Join(msgs, "; ")))
	}
	if q.name == "default" || q.name == "root" {
		errs = append(errs, fmt.Errorf("queue %q: Volcano's own queue", q.name))
	}
	for _, f := range []struct {
		field string
		list  map[string]string
	}{{"capability", q.capability}, {"deserved", q.deserved}, {"guarantee.resource", q.guarantee}} {
		for _, r := range slices.Sorted(maps.Keys(f.list)) {
			if _, err := quantityOf(r, f.list[r]); err != nil {
				errs = append(errs, fmt.Errorf("queue %s: %s[%s]: %w", q.name, f.field, r, err))
			}
		}
	}
	for _, r := range slices.Sorted(maps.Keys(q.guarantee)) {
		if _, ok := q.deserved[r]; !ok {
			errs = append(errs, fmt.Errorf("queue %s: deserved[%s] must be >= guarantee[%s]=%s: no deserved[%s]", q.name, r, r, q.guarantee[r], r))
		} else if cmpQuantity(q.deserved[r], q.guarantee[r]) < 0 {
			errs = append(errs, fmt.Errorf("queue %s: deserved[%s]=%s must be >= guarantee[%s]=%s", q.name, r, q.deserved[r], r, q.guarantee[r]))
		}
	}
	for _, r := range slices.Sorted(maps.Keys(q.deserved)) {
		if c, ok := q.capability[r]; ok && cmpQuantity(q.deserved[r], c) > 0 {
			errs = append(errs, fmt.Errorf("queue %s: deserved[%s]=%s must be <= capability[%s]=%s", q.name, r, q.deserved[r], r, c))
		}
	}
	return errs
}

// checkParent checks q's parent against the queues created before it: it
// exists, is not q, is at most volcanoMaxDepth deep, and q's capability of
// each resource is at most that of its nearest ancestor that sets one.
func checkParent(q *vcQueue, before map[string]*vcQueue) []error {
	if q.parent == "" || q.parent == "root" {
		return nil
	}
	if q.parent == q.name {
		return []error{fmt.Errorf("queue %s cannot use itself as parent", q.name)}
	}
	var ancestors []*vcQueue // nearest first
	for p := q.parent; p != "" && p != "root"; p = ancestors[len(ancestors)-1].parent {
		parent, ok := before[p]
		switch {
		case len(ancestors)+2 > volcanoMaxDepth:
			return []error{fmt.Errorf("queue %s exceeds the maximum allowed depth of %d", q.name, volcanoMaxDepth)}
		case !ok:
			return []error{fmt.Errorf("queue %s: parent %s is not created before it", q.name, p)}
		}
		ancestors = append(ancestors, parent)
	}
	var errs []error
	for _, r := range slices.Sorted(maps.Keys(q.capability)) {
		for _, a := range ancestors {
			if c := a.capability[r]; quantityValue(c) > 0 {
				if cmpQuantity(q.capability[r], c) > 0 {
					errs = append(errs, fmt.Errorf("queue %s capability[%s]=%s exceeds its ancestor %s's capability=%s", q.name, r, q.capability[r], a.name, c))
				}
				break
			}
		}
	}
	return errs
}

// checkChildrenSums checks that each parent's children's deserved and
// guarantee sum to at most its own.
func checkChildrenSums(qs []vcQueue, byName map[string]*vcQueue) []error {
	var errs []error
	for _, parent := range qs {
		var children []*vcQueue
		for i := range qs {
			if qs[i].parent == parent.name {
				children = append(children, &qs[i])
			}
		}
		for _, f := range []struct {
			field string
			of    func(*vcQueue) map[string]string
		}{{"deserved", func(q *vcQueue) map[string]string { return q.deserved }}, {"guarantee", func(q *vcQueue) map[string]string { return q.guarantee }}} {
			sums := map[string]resource.Quantity{}
			for _, c := range children {
				for r, v := range f.of(c) {
					s := sums[r]
					if q, err := quantityOf(r, v); err == nil {
						s.Add(q)
					}
					sums[r] = s
				}
			}
			for _, r := range slices.Sorted(maps.Keys(sums)) {
				s := sums[r]
				own, ok := f.of(byName[parent.name])[r]
				if !ok || cmpQuantity(own, s.String()) < 0 {
					errs = append(errs, fmt.Errorf("queue %s: sum of children's %s[%s] (%s) exceeds its own (%s)", parent.name, f.field, r, s.String(), own))
				}
			}
		}
	}
	return errs
}

// quantityOf parses quantity v of resource r as the webhook validates it:
// a quantity, not negative, whole for an extended resource (a name with a
// domain other than kubernetes.io).
func quantityOf(r, v string) (resource.Quantity, error) {
	q, err := resource.ParseQuantity(v)
	switch {
	case err != nil:
		return q, fmt.Errorf("%q is not a quantity: %w", v, err)
	case q.Sign() < 0:
		return q, fmt.Errorf("%s must be greater than or equal to 0", v)
	case isExtendedResource(r) && q.MilliValue()%1000 != 0:
		return q, fmt.Errorf("%s must be an integer", v)
	}
	return q, nil
}

// isExtendedResource says whether r is an extended resource: a name with a
// domain that is not kubernetes.io's (pkg/apis/core/helper
// IsExtendedResourceName, short of its qualified-name check).
func isExtendedResource(r string) bool {
	return strings.Contains(r, "/") && !strings.Contains(r, "kubernetes.io/") && !strings.HasPrefix(r, "requests.")
}

// cmpQuantity compares two quantities; one that does not parse counts as 0
// (checkQueue reports it).
func cmpQuantity(a, b string) int {
	qa, _ := resource.ParseQuantity(a)
	qb, _ := resource.ParseQuantity(b)
	return qa.Cmp(qb)
}

// quantityValue is v as a number; 0 when it does not parse.
func quantityValue(v string) float64 {
	q, _ := resource.ParseQuantity(v)
	return q.AsApproximateFloat64()
}

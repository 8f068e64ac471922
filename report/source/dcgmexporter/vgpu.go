package dcgmexporter

import (
	"fmt"
	"maps"
	"regexp"
	"slices"

	"github.com/gputally/gputally/cost"
	"github.com/gputally/gputally/report/model"
	"github.com/gputally/gputally/vgpu"
)

// vGPU guests (docs/report.md, "vGPU guests"). A node that is a VM with an
// NVIDIA vGPU sees its vGPU type as its GPU's modelName — "GRID A100-10C",
// 10 GB of an A100 40GB (testdata/real/vks-grid-a100-10c.prom) — which a
// price book's "A100" entry would price as a whole A100. Such a GPU is
// priced as the fraction of its board the type names (package vgpu): the
// board's entry in the book, its capital and overhead (or flat rate) and its
// rental prices × the fraction, so that own-or-rent compares a guest-hour
// with renting that part of a GPU; a guest has no power field, so no energy. A vGPU type whose
// board the report does not know is refused by name.

// guestBook is the ledger's price book: the report's, and before its
// entries one per vGPU type seen, priced as its fraction of its board.
// Only the goroutine of Collect uses it.
type guestBook struct {
	base, book *cost.Book
	guests     map[string]*vgpu.Guest // by modelName; nil: not a vGPU type
}

func newGuestBook(b *cost.Book) *guestBook {
	return &guestBook{base: b, book: b, guests: map[string]*vgpu.Guest{}}
}

// Book implements cost.BookSource.
func (b *guestBook) Book() *cost.Book { return b.book }

// see registers the GPU model modelName: a vGPU type gets its entry. The
// error names a vGPU type the report cannot price.
func (b *guestBook) see(modelName string) error {
	if _, ok := b.guests[modelName]; ok {
		return nil
	}
	g, isGuest, err := vgpu.Parse(modelName)
	switch {
	case err != nil:
		return fmt.Errorf("%w: the report prices a vGPU guest as the part of its board its type names, and will not price it as a whole GPU", err)
	case !isGuest:
		b.guests[modelName] = nil
		return nil
	}
	board := b.base.Price(g.Physical)
	if board == nil {
		return fmt.Errorf("vGPU type %q is part of an %s, which price book %s prices not", modelName, g.Physical, b.base.Name)
	}
	p := *board
	f := g.Fraction()
	p.Match = regexp.MustCompile("^" + regexp.QuoteMeta(modelName) + "$")
	p.HourlyEUR *= f
	p.PurchaseEUR *= f
	p.OverheadEURPerHour *= f
	p.CloudEURPerHour *= f
	p.CloudReservedEURPerHour *= f
	nb := *b.book
	nb.Models = append([]cost.ModelPrice{p}, b.book.Models...)
	b.book, b.guests[modelName] = &nb, &g
	return nil
}

// warnings name the vGPU types seen and how they are priced.
func (b *guestBook) warnings(cluster string, gpus map[string]*dcgmGPU) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(b.guests)) {
		g := b.guests[name]
		if g == nil {
			continue
		}
		n := 0
		for _, gpu := range gpus {
			if gpu.model == name {
				n++
			}
		}
		part := fmt.Sprintf("%d/%d of its %d GB", g.Part, g.Whole, g.Whole)
		if g.MIGBacked {
			part = fmt.Sprintf("%d/%d of its compute slices", g.Part, g.Whole)
		}
		out = append(out, fmt.Sprintf("%d GPU(s)%s are vGPU guests of type %s, a part of an %s: each is priced at %s (%s), never as a whole GPU; a guest has no power field, so no energy cost",
			n, inCluster(cluster), name, g.Physical, part, model.FormatPct(g.Fraction())))
	}
	return out
}

// inCluster is " in cluster c", or "" for the one cluster.
func inCluster(c string) string {
	if c == "" {
		return ""
	}
	return " in cluster " + c
}

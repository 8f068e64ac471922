package history

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/gpuledger/gpuledger/collector/sim"
)

// WriteFleet runs every node of nodes in virtual time over the same period,
// as Write does for one (opts.Scenario is ignored), and writes their metrics
// to w as one OpenMetrics stream: each family once, holding every node's
// samples, each labelled instance="<hostname>" as a Prometheus scraping the
// nodes' exporters would. Each node keeps its own seed unless opts.Seed is set, when node i
// gets opts.Seed + i. Nodes must differ in hostname and seed (GPU UUIDs
// derive from the seed). The Result adds up the nodes' samples, totals and
// rates.
func WriteFleet(ctx context.Context, w io.Writer, opts Options, nodes []*sim.Scenario) (Result, error) {
	if err := CheckFleet(nodes, opts.Seed); err != nil {
		return Result{}, err
	}
	opts.Scenario = nodes[0]
	if len(nodes) == 1 {
		return Write(ctx, w, opts)
	}
	if err := opts.defaults(); err != nil {
		return Result{}, err
	}
	runs := make([]Options, len(nodes))
	for i, sc := range nodes {
		runs[i] = opts
		runs[i].Scenario = sc
		if opts.Seed != 0 {
			runs[i].Seed = opts.Seed + int64(i)
		}
	}
	dir, err := os.MkdirTemp("", "gpuledger-fleet")
	if err != nil {
		return Result{}, fmt.Errorf("fleet: %w", err)
	}
	defer os.RemoveAll(dir)
	var res Result
	files := make([]*os.File, len(runs))
	defer func() {
		for _, f := range files {
			if f != nil {
				f.Close()
			}
		}
	}()
	for i, o := range runs {
		f, err := os.CreateTemp(dir, "node")
		if err != nil {
			return Result{}, fmt.Errorf("fleet: %w", err)
		}
		files[i] = f
		bw := bufio.NewWriterSize(f, 64<<10)
		r, err := Write(ctx, bw, o)
		if err != nil {
			return Result{}, fmt.Errorf("node %s: %w", o.Scenario.Node.Hostname, err)
		}
		if err := bw.Flush(); err != nil {
			return Result{}, fmt.Errorf("fleet: %w", err)
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return Result{}, fmt.Errorf("fleet: %w", err)
		}
		res.Start, res.End = r.Start, r.End
		res.Samples += r.Samples
		res.Restarts += r.Restarts
		res.Totals = append(res.Totals, r.Totals...)
		res.Rates = append(res.Rates, r.Rates...)
	}
	readers := make([]io.Reader, len(files))
	instances := make([]string, len(files))
	for i, f := range files {
		readers[i] = f
		instances[i] = runs[i].Scenario.Node.Hostname
		if instances[i] == "" {
			instances[i] = sim.DefaultHostname
		}
	}
	return res, mergeFamilies(w, readers, instances)
}

// CheckFleet reports nodes that WriteFleet cannot run together: two with
// the same hostname, or the same seed (so the same GPU UUIDs). seed is
// Options.Seed: when set, node i runs with seed + i.
func CheckFleet(nodes []*sim.Scenario, seed int64) error {
	if len(nodes) == 0 {
		return errors.New("fleet: no nodes")
	}
	hosts, seeds := map[string]int{}, map[int64]int{}
	for i, sc := range nodes {
		s := sc.Seed
		if seed != 0 {
			s = seed + int64(i)
		}
		host := sc.Node.Hostname
		if host == "" {
			host = sim.DefaultHostname
		}
		if j, dup := hosts[host]; dup {
			return fmt.Errorf("fleet: nodes %d and %d are both called %s", j+1, i+1, host)
		}
		if j, dup := seeds[s]; dup {
			return fmt.Errorf("fleet: nodes %d and %d have the same seed %d, so the same GPU UUIDs", j+1, i+1, s)
		}
		hosts[host], seeds[s] = i, i
	}
	return nil
}

// familyStream reads one Write output family by family, adding an instance
// label to each sample.
type familyStream struct {
	r        *bufio.Reader
	instance string // `instance="<node>"`
	header   string // the current family's "# TYPE" line; "" at the end
}

func (s *familyStream) next() error {
	line, err := s.r.ReadString('\n')
	switch {
	case err != nil:
		return fmt.Errorf("fleet: unexpected end of a node's metrics: %w", err)
	case line == "# EOF\n":
		s.header = ""
	case strings.HasPrefix(line, "# TYPE "):
		s.header = line
	default:
		return fmt.Errorf("fleet: want a # TYPE line, got %q", strings.TrimSpace(line))
	}
	return nil
}

// copyFamily copies the samples of the current family to w and reads the
// next header.
func (s *familyStream) copyFamily(w *bufio.Writer) error {
	for {
		b, err := s.r.Peek(1)
		if err != nil {
			return fmt.Errorf("fleet: unexpected end of a node's metrics: %w", err)
		}
		if b[0] == '#' {
			return s.next()
		}
		line, err := s.r.ReadString('\n')
		if err != nil {
			return fmt.Errorf("fleet: unexpected end of a node's metrics: %w", err)
		}
		name := strings.IndexAny(line, "{ ")
		if name < 0 {
			return fmt.Errorf("fleet: not a sample: %q", strings.TrimSpace(line))
		}
		w.WriteString(line[:name])
		if line[name] == '{' {
			w.WriteString("{" + s.instance + ",")
			w.WriteString(line[name+1:])
		} else {
			w.WriteString("{" + s.instance + "}")
			w.WriteString(line[name:])
		}
	}
}

// mergeFamilies merges OpenMetrics streams whose families are sorted by name
// (as Write writes them) into one, each family once, and "# EOF". Every
// sample of in[i] gets the label instance="<instances[i]>", as Prometheus
// adds to what it scrapes, so that the exporters' own series (which carry no
// Hostname) stay apart.
func mergeFamilies(w io.Writer, in []io.Reader, instances []string) error {
	streams := make([]*familyStream, len(in))
	for i, r := range in {
		streams[i] = &familyStream{r: bufio.NewReaderSize(r, 64<<10), instance: `instance="` + labelEscaper.Replace(instances[i]) + `"`}
		if err := streams[i].next(); err != nil {
			return err
		}
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	for {
		first := ""
		for _, s := range streams {
			if s.header != "" && (first == "" || s.header < first) {
				first = s.header
			}
		}
		if first == "" {
			break
		}
		bw.WriteString(first)
		for _, s := range streams {
			if s.header == first {
				if err := s.copyFamily(bw); err != nil {
					return err
				}
			}
		}
	}
	bw.WriteString("# EOF\n")
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write history: %w", err)
	}
	return nil
}

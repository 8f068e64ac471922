// Command gputally is the GPU metrics exporter and cost analyzer.
//
//	gputally exporter   serve /metrics for the GPUs of this node
//	gputally version    print the build
//
// Exit codes: 0 success, 1 a runtime failure, 2 bad flags, files or a missing GPU library.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/promslog"
	promslogflag "github.com/prometheus/common/promslog/flag"
	"github.com/prometheus/common/version"
)

// usageError marks a failure caused by bad input: flags, files, a missing library. It exits 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// badInput wraps err as a usageError.
func badInput(err error) error { return usageError{err} }

// command is one subcommand: its flags are registered on cmd, run runs it.
type command interface {
	run(ctx context.Context, logger *slog.Logger) error
}

func main() {
	// Signals first, before flags are parsed or a GPU library loads: a SIGHUP
	// during start-up (whose default action ends the process) must not kill
	// it, and a SIGTERM must not skip the clean-up (the simulated kubelet's
	// temporary directory). The exporter reloads its price book on SIGHUP; the
	// other commands ignore it.
	reload := make(chan os.Signal, 1)
	signal.Notify(reload, syscall.SIGHUP)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, reload)
	stop()
	os.Exit(code)
}

// run parses args, runs the chosen subcommand until it ends or ctx is done, and
// returns the exit code. The exporter reloads its price book at each value on
// reload (nil: never on a signal).
func run(ctx context.Context, args []string, stdout, stderr io.Writer, reload <-chan os.Signal) int {
	app := kingpin.New("gputally", "GPU metrics exporter and cost ledger for Kubernetes.")
	app.UsageWriter(stdout)
	app.ErrorWriter(stderr)
	app.Version(version.Print("gputally"))
	app.HelpFlag.Short('h')
	logConfig := &promslog.Config{}
	promslogflag.AddFlags(app, logConfig)

	genDashboards, genRules := newGenerateCommands(app)
	commands := map[string]command{
		"generate dashboards": genDashboards,
		"generate rules":      genRules,
		"report":              newReportCommand(app),
		"exporter":            newExporterCommand(app, reload),
		"version":             newVersionCommand(app, stdout),
		"check-config":        newCheckConfigCommand(app, stdout),
		"simulate history":    newSimulateCommand(app, stdout),
	}
	chosen, err := app.Parse(args)
	if err != nil {
		fmt.Fprintf(stderr, "gputally: %v (see --help)\n", err)
		return 2
	}
	logConfig.Writer = stderr
	logger := promslog.New(logConfig)

	if err := commands[chosen].run(ctx, logger); err != nil {
		fmt.Fprintf(stderr, "gputally %s: %v\n", chosen, err)
		if errors.As(err, new(usageError)) {
			return 2
		}
		return 1
	}
	return 0
}

type versionCommand struct{ out io.Writer }

func newVersionCommand(app *kingpin.Application, out io.Writer) *versionCommand {
	app.Command("version", "Print the version and build information.")
	return &versionCommand{out: out}
}

func (c *versionCommand) run(context.Context, *slog.Logger) error {
	_, err := fmt.Fprintln(c.out, version.Print("gputally"))
	return err
}

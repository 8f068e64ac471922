package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/alecthomas/kingpin/v2"

	"github.com/gputally/gputally/cost"
)

// checkConfigCommand validates a price book: exit 0 when valid, 2 with the
// file, line and field of the first problem otherwise.
type checkConfigCommand struct {
	path string
	out  io.Writer
}

func newCheckConfigCommand(app *kingpin.Application, out io.Writer) *checkConfigCommand {
	c := &checkConfigCommand{out: out}
	cmd := app.Command("check-config", "Validate a price book and exit.")
	cmd.Arg("file", "Price book YAML.").Required().StringVar(&c.path)
	return c
}

func (c *checkConfigCommand) run(context.Context, *slog.Logger) error {
	if _, err := cost.Load(c.path); err != nil {
		return badInput(err)
	}
	_, err := fmt.Fprintf(c.out, "%s: valid price book\n", c.path)
	return err
}

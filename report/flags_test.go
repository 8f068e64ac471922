package report

import (
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"
)

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want func(Config) bool
		err  string
	}{
		{"defaults", []string{"--out=r.html"}, func(c Config) bool {
			d := DefaultConfig()
			return c.Range == d.Range && c.Step == time.Hour && c.Format == "html" && c.Out == "r.html" && c.End.IsZero()
		}, ""},
		{"all", []string{"--prometheus.url=http://p:9090", "--range=14d", "--end=2026-01-12T00:00:00Z", "--step=30m", "--resolution=1m",
			"--format=md", "--out=-", "--team.label=team", "--recommend.headroom=1.5", "--partial", "--webhook.url-file=/s/url",
			"--query.timeout=30s", "--query.max-points=500"}, func(c Config) bool {
			return c.PrometheusURL == "http://p:9090" && c.Range == 14*24*time.Hour && c.End.Equal(testEnd) && c.Step == 30*time.Minute &&
				c.Resolution == time.Minute && c.Format == "md" && c.TeamLabel == "team" && c.Headroom == 1.5 && c.AllowPartial &&
				c.WebhookURLFile == "/s/url" && c.Timeout == 30*time.Second && c.MaxPointsPerQuery == 500
		}, ""},
		{"bad end", []string{"--out=x", "--end=yesterday"}, nil, "--end"},
		{"bad range", []string{"--out=x", "--range=90m"}, nil, "multiple of the step"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := kingpin.New("gpuledger", "")
			f := AddFlags(app.Command("report", ""))
			if _, err := app.Parse(append([]string{"report"}, tc.args...)); err != nil {
				t.Fatal(err)
			}
			c, err := f.Config()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.want(c) {
				t.Errorf("config %+v", c)
			}
		})
	}
}

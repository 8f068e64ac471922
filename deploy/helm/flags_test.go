package helm_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// helpFlag matches a long flag in kingpin's help: "--web.listen-address=..." or
// "--[no-]attribution.enabled".
var helpFlag = regexp.MustCompile(`(?m)^\s+(?:-[a-zA-Z], )?--(\[no-\])?([a-z0-9][a-z0-9.\-]*)`)

// parseHelpFlags returns the long flag names a kingpin help text lists, with the
// negated form of boolean flags.
func parseHelpFlags(help string) map[string]bool {
	flags := map[string]bool{}
	for _, m := range helpFlag.FindAllStringSubmatch(help, -1) {
		flags[m[2]] = true
		if m[1] != "" {
			flags["no-"+m[2]] = true
		}
	}
	return flags
}

// argFlags returns the long flags of an argument list: "--a=b" and "--c" give a and c.
func argFlags(args []string) []string {
	var out []string
	for _, a := range args {
		if name, ok := strings.CutPrefix(a, "--"); ok {
			name, _, _ = strings.Cut(name, "=")
			out = append(out, name)
		}
	}
	return out
}

func TestParseHelpFlags(t *testing.T) {
	help := `usage: gputally exporter [<flags>]

Flags:
  -h, --[no-]help                Show context-sensitive help.
      --web.listen-address=:9400 ...
      --[no-]attribution.enabled Map devices to pods.
      --attribution.extra-resource=ATTRIBUTION.EXTRA-RESOURCE ...
  not a flag: --mentioned.in.prose
`
	got := parseHelpFlags(help)
	for _, want := range []string{"help", "no-help", "web.listen-address", "attribution.enabled", "no-attribution.enabled", "attribution.extra-resource"} {
		if !got[want] {
			t.Errorf("flag %s not found in %v", want, got)
		}
	}
	if got["mentioned.in.prose"] || got["no-web.listen-address"] {
		t.Errorf("parsed flags the help does not define: %v", got)
	}
}

// built is the gputally binary, built once per test run by gputallyBinary.
var built = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "gputally-helm-test")
	if err != nil {
		return "", err
	}
	buildDir = dir
	bin := filepath.Join(dir, "gputally")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/gputally")
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/gputally: %w\n%s", err, out)
	}
	return bin, nil
})

// buildDir holds the built binary; TestMain removes it.
var buildDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// gputallyBinary returns the gputally binary built from ./cmd/gputally.
func gputallyBinary(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(repoRoot, "cmd", "gputally")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("cmd/gputally: %v", err)
		}
		t.Skipf("cmd/gputally does not exist yet: %v", err)
	}
	bin, err := built()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

func subcommandFlags(t *testing.T, bin, sub string) map[string]bool {
	t.Helper()
	out, err := exec.Command(bin, sub, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("gputally %s --help: %v\n%s", sub, err, out)
	}
	flags := parseHelpFlags(string(out))
	if len(flags) < 2 {
		t.Fatalf("gputally %s --help lists no flags:\n%s", sub, out)
	}
	return flags
}

func TestManifestFlagsAreAcceptedByTheBinary(t *testing.T) {
	helmPath(t)
	bin := gputallyBinary(t)
	accepted := map[string]map[string]bool{
		"exporter": subcommandFlags(t, bin, "exporter"),
		"report":   subcommandFlags(t, bin, "report"),
	}
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			for _, bad := range unacceptedFlags(t, render(t, vs.args...), accepted) {
				t.Error(bad)
			}
		})
	}
	// The check itself must be able to fail.
	t.Run("unknown flag is caught", func(t *testing.T) {
		m := render(t, "--set", "exporter.extraArgs={--no-such.flag=1}")
		if bad := unacceptedFlags(t, m, accepted); len(bad) != 1 || !strings.Contains(bad[0], "--no-such.flag") {
			t.Errorf("unacceptedFlags = %q, want the one unknown flag", bad)
		}
	})
}

// unacceptedFlags lists the flags of the rendered DaemonSet and CronJob containers that
// their gputally subcommand does not accept.
func unacceptedFlags(t *testing.T, m manifests, accepted map[string]map[string]bool) []string {
	t.Helper()
	var containers []corev1.Container
	for _, o := range m.ofKind("DaemonSet") {
		var ds appsv1.DaemonSet
		decodeStrict(t, o, &ds)
		containers = append(containers, ds.Spec.Template.Spec.Containers...)
	}
	for _, o := range m.ofKind("CronJob") {
		var cj batchv1.CronJob
		decodeStrict(t, o, &cj)
		spec := cj.Spec.JobTemplate.Spec.Template.Spec
		containers = append(containers, spec.InitContainers...)
		containers = append(containers, spec.Containers...)
	}
	if len(containers) == 0 {
		t.Fatal("no containers rendered")
	}
	var bad []string
	for _, c := range containers {
		sub := c.Args[0]
		flags, ok := accepted[sub]
		if !ok {
			bad = append(bad, fmt.Sprintf("container %s runs subcommand %q", c.Name, sub))
			continue
		}
		for _, f := range argFlags(c.Args[1:]) {
			if !flags[f] {
				bad = append(bad, fmt.Sprintf("container %s passes --%s, which `gputally %s` does not accept", c.Name, f, sub))
			}
		}
	}
	return bad
}

func TestPriceBookPassesCheckConfig(t *testing.T) {
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			var book string
			for _, o := range render(t, vs.args...).ofKind("ConfigMap") {
				var cm corev1.ConfigMap
				decodeStrict(t, o, &cm)
				if b, ok := cm.Data["price-book.yaml"]; ok {
					book = b
				}
			}
			if book == "" {
				t.Fatal("no ConfigMap holds price-book.yaml")
			}
			path := filepath.Join(t.TempDir(), "price-book.yaml")
			if err := os.WriteFile(path, []byte(book), 0o600); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(gputallyBinary(t), "check-config", path).CombinedOutput(); err != nil {
				t.Errorf("gputally check-config rejects the chart's price book: %v\n%s\n%s", err, out, book)
			}
		})
	}
}

package applyspec

import (
	"fmt"
	"testing"

	configv1 "k8s.io/kube-scheduler/config/v1"
	"sigs.k8s.io/yaml"
)

// SchedulerProfile is what a KubeSchedulerConfiguration's profile scores
// nodes by: NodeResourcesFit's scoring strategy and its weight per resource.
type SchedulerProfile struct {
	Strategy string
	Weights  map[string]int64
}

// CheckSchedulerConfig decodes a KubeSchedulerConfiguration strictly with
// kube-scheduler's own v1 types (k8s.io/kube-scheduler/config/v1: an
// unknown field is an error), each NodeResourcesFit plugin's args as that
// plugin's NodeResourcesFitArgs, and checks what kube-scheduler's
// validation does of them (k8s.io/kubernetes pkg/scheduler/apis/config/
// validation: ValidateNodeResourcesFitArgs, a scoring strategy of a known
// type, weights in (0, 100]; a profile names its scheduler). It returns the
// profiles by scheduler name.
func CheckSchedulerConfig(t *testing.T, text string) map[string]SchedulerProfile {
	t.Helper()
	out, err := parseSchedulerConfig(text)
	if err != nil {
		t.Fatalf("kube-scheduler configuration: %v\n%s", err, text)
	}
	return out
}

func parseSchedulerConfig(text string) (map[string]SchedulerProfile, error) {
	var cfg configv1.KubeSchedulerConfiguration
	if err := yaml.UnmarshalStrict([]byte(text), &cfg); err != nil {
		return nil, err
	}
	if cfg.APIVersion != "kubescheduler.config.k8s.io/v1" || cfg.Kind != "KubeSchedulerConfiguration" {
		return nil, fmt.Errorf("apiVersion %q, kind %q; want kubescheduler.config.k8s.io/v1 KubeSchedulerConfiguration", cfg.APIVersion, cfg.Kind)
	}
	out := map[string]SchedulerProfile{}
	for _, p := range cfg.Profiles {
		if p.SchedulerName == nil || *p.SchedulerName == "" {
			return nil, fmt.Errorf("a profile without schedulerName")
		}
		prof := SchedulerProfile{Weights: map[string]int64{}}
		for _, pc := range p.PluginConfig {
			if pc.Name != "NodeResourcesFit" {
				continue
			}
			var args configv1.NodeResourcesFitArgs
			if err := yaml.UnmarshalStrict(pc.Args.Raw, &args); err != nil {
				return nil, fmt.Errorf("profile %s: NodeResourcesFit args: %w", *p.SchedulerName, err)
			}
			s := args.ScoringStrategy
			if s == nil {
				return nil, fmt.Errorf("profile %s: NodeResourcesFit args: scoringStrategy is required", *p.SchedulerName)
			}
			switch s.Type {
			case configv1.LeastAllocated, configv1.MostAllocated, configv1.RequestedToCapacityRatio:
			default:
				return nil, fmt.Errorf("profile %s: scoringStrategy.type %q is not supported", *p.SchedulerName, s.Type)
			}
			prof.Strategy = string(s.Type)
			for _, r := range s.Resources {
				if r.Weight <= 0 || r.Weight > 100 {
					return nil, fmt.Errorf("profile %s: resource weight of %s not in valid range (0, 100]", *p.SchedulerName, r.Name)
				}
				prof.Weights[r.Name] = r.Weight
			}
		}
		out[*p.SchedulerName] = prof
	}
	return out, nil
}

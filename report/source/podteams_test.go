package source

import (
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/report/model"
)

// TestTeamsElsewhere: kube_pod_labels series of a cluster without GPUs get
// a note naming it; those of the GPUs' own cluster none.
func TestTeamsElsewhere(t *testing.T) {
	d := model.NewDataset(model.Range{Start: time.Unix(0, 0), End: time.Unix(3600, 0), Step: time.Hour})
	d.GPUs[model.GPUKey{Cluster: "east", UUID: "GPU-0"}] = &model.GPUSeen{}
	d.PodTeams[model.PodKey{Cluster: "east", Namespace: "ml", Pod: "a"}] = "research"
	d.PodTeams[model.PodKey{Namespace: "ml", Pod: "a"}] = "research"
	notes := teamsElsewhere(d)
	if len(notes) != 1 || !strings.Contains(notes[0], `kube_pod_labels series in cluster ""`) {
		t.Errorf("notes %q, want one on the cluster \"\"", notes)
	}
}

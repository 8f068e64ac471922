package kubeletsim

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// WriteHostInit writes <procRoot>/1/cgroup as the host's init has it, so that a
// resolver reading procRoot sees the host PID namespace.
func WriteHostInit(procRoot string) error {
	return writeFile(filepath.Join(procRoot, "1", "cgroup"), "0::/init.scope\n")
}

// WriteProcess writes <procRoot>/<pid>/cgroup for a process of container
// containerID (hex) in pod podUID, as cgroup v2 with the systemd driver and
// containerd names it.
func WriteProcess(procRoot string, pid uint32, podUID, containerID string) error {
	line := fmt.Sprintf("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%s.slice/cri-containerd-%s.scope\n",
		strings.ReplaceAll(podUID, "-", "_"), containerID)
	return writeFile(filepath.Join(procRoot, strconv.FormatUint(uint64(pid), 10), "cgroup"), line)
}

// WritePodLogs creates the kubelet's log directories of a pod,
// <podLogsDir>/<namespace>_<pod>_<uid>/<container>/, one per container.
func WritePodLogs(podLogsDir, namespace, pod, uid string, containers ...string) error {
	dir := filepath.Join(podLogsDir, namespace+"_"+pod+"_"+uid)
	for _, c := range containers {
		if err := writeFile(filepath.Join(dir, c, "0.log"), ""); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

package kubeletsim

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Tree is where a simulated procfs and pod log directory are written: the
// host's file system (HostTree) or memory (MemFS). Implementations are safe
// for concurrent use.
type Tree interface {
	// WriteFile replaces path with content, creating its directories; a
	// concurrent reader sees the old or the new file, never a partial one.
	WriteFile(path, content string) error
	// RemoveAll removes path and everything under it; a missing path is no error.
	RemoveAll(path string) error
}

// WriteHostInit writes <procRoot>/1/cgroup as the host's init has it, so that a
// resolver reading procRoot sees the host PID namespace.
func WriteHostInit(t Tree, procRoot string) error {
	return t.WriteFile(filepath.Join(procRoot, "1", "cgroup"), "0::/init.scope\n")
}

// WriteProcess writes <procRoot>/<pid>/cgroup for a process of container
// containerID (hex) in pod podUID, as cgroup v2 with the systemd driver and
// containerd names it.
func WriteProcess(t Tree, procRoot string, pid uint32, podUID, containerID string) error {
	line := fmt.Sprintf("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%s.slice/cri-containerd-%s.scope\n",
		strings.ReplaceAll(podUID, "-", "_"), containerID)
	return t.WriteFile(filepath.Join(procRoot, strconv.FormatUint(uint64(pid), 10), "cgroup"), line)
}

// WritePodLogs creates the kubelet's log directories of a pod,
// <podLogsDir>/<namespace>_<pod>_<uid>/<container>/, one per container.
func WritePodLogs(t Tree, podLogsDir, namespace, pod, uid string, containers ...string) error {
	dir := filepath.Join(podLogsDir, namespace+"_"+pod+"_"+uid)
	for _, c := range containers {
		if err := t.WriteFile(filepath.Join(dir, c, "0.log"), ""); err != nil {
			return err
		}
	}
	return nil
}

// RemoveProcess removes <procRoot>/<pid>: the process ended.
func RemoveProcess(t Tree, procRoot string, pid uint32) error {
	if err := t.RemoveAll(filepath.Join(procRoot, strconv.FormatUint(uint64(pid), 10))); err != nil {
		return fmt.Errorf("remove process %d: %w", pid, err)
	}
	return nil
}

// RemovePodLogs removes the kubelet's log directory of a pod: the pod is gone.
func RemovePodLogs(t Tree, podLogsDir, namespace, pod, uid string) error {
	if err := t.RemoveAll(filepath.Join(podLogsDir, namespace+"_"+pod+"_"+uid)); err != nil {
		return fmt.Errorf("remove pod log directory of %s/%s: %w", namespace, pod, err)
	}
	return nil
}

// HostTree writes to the host's file system. Safe for concurrent use: a
// reader sees a file whole or not at all.
type HostTree struct{}

// WriteFile replaces path with content in one step (a temporary file renamed
// over it), so that a concurrent reader sees the old or the new file, never a
// partial one.
func (HostTree) WriteFile(path, content string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, ".tmp-")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, werr := tmp.WriteString(content)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// RemoveAll is os.RemoveAll.
func (HostTree) RemoveAll(path string) error { return os.RemoveAll(path) }

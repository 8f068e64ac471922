package attribution

import (
	"strings"
)

// CgroupRef is what a cgroup path says about the container a process runs in.
type CgroupRef struct {
	PodUID      string // "0f1e2d3c-…" (or a static pod's 32-hex hash)
	ContainerID string // runtime container ID; "" when the path names only the pod
}

// ParseCgroupLine parses one line of /proc/<pid>/cgroup ("<id>:<controllers>:<path>",
// cgroup v1 or v2) and returns the pod and container its path names. It knows the
// kubelet's cgroupfs ("/kubepods/burstable/pod<uid>/<id>") and systemd
// ("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice/
// cri-containerd-<id>.scope") layouts, with containerd, CRI-O and docker naming,
// also nested under another prefix (kind, a kubelet slice) or relative to a
// private cgroup namespace ("/../../burstable/pod<uid>/<id>"). ok is false when
// the path is not a pod's.
func ParseCgroupLine(line string) (ref CgroupRef, ok bool) {
	_, rest, found := strings.Cut(line, ":")
	if !found {
		return CgroupRef{}, false
	}
	_, path, found := strings.Cut(rest, ":")
	if !found {
		return CgroupRef{}, false
	}
	segs := strings.Split(path, "/")
	kubepods := false
	for i, seg := range segs {
		// Inside a private cgroup namespace, other pods' paths are relative to the
		// exporter's own cgroup ("/../../burstable/pod<uid>/<id>"): ".." stands
		// for the kubepods root it climbs to.
		if seg == ".." || strings.Contains(seg, "kubepods") {
			kubepods = true
		}
		if !kubepods {
			continue
		}
		uid, ok := podSegment(seg)
		if !ok {
			continue
		}
		ref := CgroupRef{PodUID: uid}
		if i+1 < len(segs) {
			ref.ContainerID = containerSegment(segs[i+1])
		}
		return ref, true
	}
	return CgroupRef{}, false
}

// ParseCgroupFile returns the pod and container named by the first line of a
// /proc/<pid>/cgroup file that names one.
func ParseCgroupFile(content string) (CgroupRef, bool) {
	for line := range strings.Lines(content) {
		if ref, ok := ParseCgroupLine(strings.TrimRight(line, "\r\n")); ok {
			return ref, true
		}
	}
	return CgroupRef{}, false
}

// podSegment returns the pod UID of a cgroupfs "pod<uid>" or systemd
// "…-pod<uid_with_underscores>.slice" path segment.
func podSegment(seg string) (string, bool) {
	var uid string
	switch {
	case strings.HasPrefix(seg, "pod"):
		uid = seg[len("pod"):]
	case strings.HasSuffix(seg, ".slice"):
		i := strings.LastIndex(seg, "-pod")
		if i < 0 {
			return "", false
		}
		uid = strings.ReplaceAll(seg[i+len("-pod"):len(seg)-len(".slice")], "_", "-")
	default:
		return "", false
	}
	if len(uid) < 32 || len(uid) > 36 || !isHexOrDash(uid) {
		return "", false
	}
	return uid, true
}

// containerSegment returns the container ID of the path segment below a pod's:
// "<id>", "cri-containerd-<id>.scope", "crio-<id>.scope", "crio-<id>" or
// "docker-<id>.scope"; "" for anything else (CRI-O's conmon, a sub-cgroup name).
func containerSegment(seg string) string {
	seg = strings.TrimSuffix(seg, ".scope")
	for _, prefix := range []string{"cri-containerd-", "crio-", "docker-"} {
		if strings.HasPrefix(seg, prefix) {
			seg = seg[len(prefix):]
			break
		}
	}
	if len(seg) < 12 || len(seg) > 128 || !isHex(seg) {
		return ""
	}
	return seg
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func isHexOrDash(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c == '-') {
			return false
		}
	}
	return true
}

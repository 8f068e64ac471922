package attribution

import (
	"fmt"
	"strconv"
	"strings"
)

// IDForm is the syntactic form of a device ID reported by a device plugin.
type IDForm uint8

// The device-ID forms the NVIDIA and GKE device plugins report.
const (
	// FormGPU is "GPU-<uuid>", "GPU-<uuid>::<replica>", or HAMi's virtual
	// device "GPU-<uuid>-<k>" (DeviceID.VGPU).
	FormGPU IDForm = iota + 1
	// FormMIG is "MIG-<uuid>" or "MIG-<uuid>::<replica>".
	FormMIG
	// FormLegacyMIG is "MIG-GPU-<uuid>/<gi>/<ci>" (driver < R470).
	FormLegacyMIG
	// FormGKE is GKE's "nvidia<minor>", "nvidia<minor>/vgpu<replica>",
	// "nvidia<minor>/gi<gi>" or "nvidia<minor>/gi<gi>/vgpu<replica>".
	FormGKE
)

// DeviceID is a parsed device-plugin device ID. Fields that the form does not
// carry are -1 (numbers) or "" (UUID).
type DeviceID struct {
	Form IDForm
	// UUID is the "GPU-…" or "MIG-…" UUID for FormGPU and FormMIG, and the parent
	// "GPU-…" UUID for FormLegacyMIG; "" for FormGKE.
	UUID string
	// Replica is the time-slicing or MPS replica index ("::<n>", "/vgpu<n>"); -1 when none.
	Replica int
	// VGPU is k of HAMi's virtual device "GPU-<uuid>-<k>" (k < the node's
	// deviceSplitCount); -1 otherwise. It is no time-slicing replica: the
	// kubelet picks it, it need not even name the GPU the container runs on,
	// and the pod's hami.io/vgpu-devices-allocated annotation says what the
	// container holds (docs/attribution.md).
	VGPU int
	// Minor is N of /dev/nvidiaN for FormGKE; -1 otherwise.
	Minor int
	// GPUInstanceID is the MIG GPU instance of FormLegacyMIG and GKE "/gi<n>"; -1 otherwise.
	GPUInstanceID int
	// ComputeInstanceID is the MIG compute instance of FormLegacyMIG; -1 otherwise.
	ComputeInstanceID int
}

// maxIDLen bounds the device IDs the parser accepts; real IDs are under 64 bytes.
const maxIDLen = 256

// ParseDeviceID parses one device ID in any of the forms of IDForm. It does not
// check that the device exists on this node; see Resolver for that.
func ParseDeviceID(s string) (DeviceID, error) {
	id := DeviceID{Replica: -1, VGPU: -1, Minor: -1, GPUInstanceID: -1, ComputeInstanceID: -1}
	if s == "" {
		return id, fmt.Errorf("parse device ID: empty")
	}
	if len(s) > maxIDLen {
		return id, fmt.Errorf("parse device ID %.32q…: longer than %d bytes", s, maxIDLen)
	}
	var err error
	switch {
	case strings.HasPrefix(s, "MIG-GPU-"):
		err = parseLegacyMIG(&id, s)
	case strings.HasPrefix(s, "GPU-"):
		id.Form = FormGPU
		if uuid, k, ok := cutVGPU(s); ok {
			id.UUID, id.VGPU = uuid, k
			break
		}
		err = parseUUIDReplica(&id, s, "GPU-")
	case strings.HasPrefix(s, "MIG-"):
		id.Form = FormMIG
		err = parseUUIDReplica(&id, s, "MIG-")
	case strings.HasPrefix(s, "nvidia"):
		err = parseGKE(&id, s)
	default:
		err = fmt.Errorf("unknown form")
	}
	if err != nil {
		return DeviceID{Replica: -1, VGPU: -1, Minor: -1, GPUInstanceID: -1, ComputeInstanceID: -1},
			fmt.Errorf("parse device ID %q: %w", s, err)
	}
	return id, nil
}

// parseUUIDReplica parses "<prefix><uuid>[::<replica>]".
func parseUUIDReplica(id *DeviceID, s, prefix string) error {
	uuid, replica, hasReplica := strings.Cut(s, "::")
	if !validUUID(uuid[len(prefix):]) {
		return fmt.Errorf("bad UUID %q", uuid)
	}
	id.UUID = uuid
	if hasReplica {
		n, err := parseIndex(replica)
		if err != nil {
			return fmt.Errorf("replica: %w", err)
		}
		id.Replica = n
	}
	return nil
}

// cutVGPU splits HAMi's virtual device ID "GPU-<uuid>-<k>" into the GPU's UUID
// and k. Only a canonical NVML UUID (8-4-4-4-12 hex digits) followed by "-"
// and a number is one, as HAMi's device plugin forms it (fmt "%v-%v" of the
// UUID and k, Project-HAMi/HAMi@4707fb0:pkg/device-plugin/nvidiadevice/
// nvinternal/rm/devices.go:208) and reads it back (physicalDeviceID: six
// dashes and a numeric suffix, plugin/server.go:715-731).
func cutVGPU(s string) (string, int, bool) {
	const canonical = len("GPU-") + 36
	if len(s) < canonical+2 || s[canonical] != '-' || !canonicalUUID(s[len("GPU-"):canonical]) {
		return "", 0, false
	}
	k, err := parseIndex(s[canonical+1:])
	if err != nil {
		return "", 0, false
	}
	return s[:canonical], k, true
}

// canonicalUUID reports whether s is a UUID in its 8-4-4-4-12 hex form.
func canonicalUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// parseLegacyMIG parses "MIG-GPU-<uuid>/<gi>/<ci>".
func parseLegacyMIG(id *DeviceID, s string) error {
	parts := strings.Split(s[len("MIG-"):], "/")
	if len(parts) != 3 {
		return fmt.Errorf("want MIG-GPU-<uuid>/<gi>/<ci>")
	}
	if !validUUID(parts[0][len("GPU-"):]) {
		return fmt.Errorf("bad UUID %q", parts[0])
	}
	gi, err := parseIndex(parts[1])
	if err != nil {
		return fmt.Errorf("GPU instance: %w", err)
	}
	ci, err := parseIndex(parts[2])
	if err != nil {
		return fmt.Errorf("compute instance: %w", err)
	}
	id.Form, id.UUID, id.GPUInstanceID, id.ComputeInstanceID = FormLegacyMIG, parts[0], gi, ci
	return nil
}

// parseGKE parses "nvidia<minor>[/gi<gi>][/vgpu<replica>]".
func parseGKE(id *DeviceID, s string) error {
	parts := strings.Split(s, "/")
	if len(parts) > 3 {
		return fmt.Errorf("too many path elements")
	}
	minor, err := parseIndex(parts[0][len("nvidia"):])
	if err != nil {
		return fmt.Errorf("minor: %w", err)
	}
	id.Form, id.Minor = FormGKE, minor
	rest := parts[1:]
	if len(rest) > 0 && strings.HasPrefix(rest[0], "gi") {
		if id.GPUInstanceID, err = parseIndex(rest[0][len("gi"):]); err != nil {
			return fmt.Errorf("GPU instance: %w", err)
		}
		rest = rest[1:]
	}
	if len(rest) > 0 {
		if !strings.HasPrefix(rest[0], "vgpu") || len(rest) > 1 {
			return fmt.Errorf("unexpected element %q", rest[0])
		}
		if id.Replica, err = parseIndex(rest[0][len("vgpu"):]); err != nil {
			return fmt.Errorf("replica: %w", err)
		}
	}
	return nil
}

// parseIndex parses a small non-negative decimal number without sign or leading zeros.
func parseIndex(s string) (int, error) {
	if s == "" || len(s) > 6 || s[0] < '0' || s[0] > '9' || (len(s) > 1 && s[0] == '0') {
		return 0, fmt.Errorf("bad index %q", s)
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("bad index %q: %w", s, err)
	}
	return n, nil
}

// validUUID reports whether s looks like the UUID part of an NVML UUID: hex digits
// and dashes, at least 8 characters.
func validUUID(s string) bool {
	if len(s) < 8 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == '-') {
			return false
		}
	}
	return true
}

// String formats id in the form it was parsed from.
func (id DeviceID) String() string {
	var b strings.Builder
	switch id.Form {
	case FormGPU, FormMIG:
		b.WriteString(id.UUID)
		if id.Replica >= 0 {
			fmt.Fprintf(&b, "::%d", id.Replica)
		}
		if id.VGPU >= 0 {
			fmt.Fprintf(&b, "-%d", id.VGPU)
		}
	case FormLegacyMIG:
		fmt.Fprintf(&b, "MIG-%s/%d/%d", id.UUID, id.GPUInstanceID, id.ComputeInstanceID)
	case FormGKE:
		fmt.Fprintf(&b, "nvidia%d", id.Minor)
		if id.GPUInstanceID >= 0 {
			fmt.Fprintf(&b, "/gi%d", id.GPUInstanceID)
		}
		if id.Replica >= 0 {
			fmt.Fprintf(&b, "/vgpu%d", id.Replica)
		}
	}
	return b.String()
}

//go:build cgo

package dcgm

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>

// probeLibrary loads and unloads lib; it returns NULL when lib loads, else dlerror().
static const char *probeLibrary(const char *lib) {
	void *h = dlopen(lib, RTLD_LAZY | RTLD_LOCAL);
	if (h == NULL) {
		return dlerror();
	}
	dlclose(h);
	return NULL;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
	"unsafe"

	godcgm "github.com/NVIDIA/go-dcgm/pkg/dcgm"
)

// libdcgm is the library go-dcgm loads.
const libdcgm = "libdcgm.so.4"

// probeLibrary checks that libdcgm loads before go-dcgm is asked to: go-dcgm
// reports a missing library only as text, and every DCGM call after a failed
// Init would die on an unresolved symbol.
func probeLibrary() error {
	lib := C.CString(libdcgm)
	defer C.free(unsafe.Pointer(lib))
	if msg := C.probeLibrary(lib); msg != nil {
		return fmt.Errorf("%w: %s", ErrLibraryNotFound, C.GoString(msg))
	}
	return nil
}

// realDialer connects through go-dcgm: embedded when hostengine is empty,
// else to the nv-hostengine at hostengine ("HOST:PORT").
func realDialer(hostengine string) dialer {
	return func() (client, error) {
		if hostengine != "" {
			if _, _, err := net.SplitHostPort(hostengine); err != nil {
				return nil, fmt.Errorf("--dcgm.hostengine %q: want HOST:PORT: %w", hostengine, err)
			}
		}
		if err := probeLibrary(); err != nil {
			return nil, err
		}
		var err error
		if hostengine == "" {
			_, err = godcgm.Init(godcgm.Embedded)
		} else {
			_, err = godcgm.Init(godcgm.Standalone, hostengine, "0")
		}
		if err != nil {
			// Init failed: neither DCGM nor Shutdown may be called.
			return nil, fmt.Errorf("initialize DCGM: %w", err)
		}
		return &realClient{}, nil
	}
}

// realClient is the client over go-dcgm. go-dcgm keeps one connection per
// process, so there is at most one realClient at a time.
type realClient struct {
	group       godcgm.GroupHandle // GPUs and GPU instances
	healthGroup godcgm.GroupHandle // GPUs only: health watches apply to GPUs
	gpus        []uint
	fields      godcgm.FieldHandle
	xidFields   godcgm.FieldHandle
	watching    bool
	health      bool
}

// wrap keeps DCGM's return code of a go-dcgm error when it has one. go-dcgm
// returns plain text for some calls; a lost connection is recognised by
// DCGM's message for DCGM_ST_CONNECTION_NOT_VALID then.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	var de *godcgm.Error
	if errors.As(err, &de) {
		return &statusError{op: op, code: int(de.Code), msg: de.Error()}
	}
	if containsFold(err.Error(), "connection to the host engine is not valid") {
		return &statusError{op: op, code: stConnectionNotValid, msg: err.Error()}
	}
	return fmt.Errorf("%s: %w", op, err)
}

func (c *realClient) GPUs() ([]uint, error) {
	ids, err := godcgm.GetSupportedDevices()
	return ids, wrap("list GPUs", err)
}

func (c *realClient) DeviceInfo(gpu uint) (deviceInfo, error) {
	d, err := godcgm.GetDeviceInfo(gpu)
	if err != nil {
		return deviceInfo{}, wrap("read device attributes", err)
	}
	return deviceInfo{
		UUID:          d.UUID,
		PCIBusID:      d.PCI.BusID,
		Model:         d.Identifiers.Model,
		DriverVersion: d.Identifiers.DriverVersion,
		FBTotalMiB:    uint64(d.PCI.FBTotal),
	}, nil
}

func (c *realClient) MIGHierarchy() ([]migEntity, error) {
	h, err := godcgm.GetGPUInstanceHierarchy()
	if err != nil {
		return nil, wrap("read MIG hierarchy", err)
	}
	out := make([]migEntity, 0, h.Count)
	for _, e := range h.EntityList[:h.Count] {
		out = append(out, migEntity{
			entity:            entity{entityGroup(e.Entity.EntityGroupId), e.Entity.EntityId},
			parent:            entity{entityGroup(e.Parent.EntityGroupId), e.Parent.EntityId},
			gpuInstanceID:     e.Info.NvmlInstanceId,
			computeInstanceID: e.Info.NvmlComputeInstanceId,
			profileID:         e.Info.NvmlMigProfileId,
			slices:            e.Info.NvmlProfileSlices,
		})
	}
	return out, nil
}

// xidKeepAge is how long DCGM keeps XID updates for XIDsSince.
const xidKeepAge = 10 * time.Minute

func (c *realClient) Watch(ents []entity, fields []uint16, xidField uint16, interval time.Duration) error {
	c.unwatch()
	name := fmt.Sprintf("gputally-%d", time.Now().UnixNano())
	group, err := godcgm.CreateGroup(name)
	if err != nil {
		return wrap("create group", err)
	}
	c.group, c.watching, c.gpus = group, true, nil
	for _, e := range ents {
		if err := godcgm.AddEntityToGroup(group, godcgm.Field_Entity_Group(e.group), e.id); err != nil {
			return wrap("add "+e.String()+" to group", err)
		}
		if e.group == groupGPU {
			c.gpus = append(c.gpus, e.id)
		}
	}
	all := append(shorts(fields), shorts(gpuIdentityFields)...)
	all = append(all, shorts(instanceIdentityFields)...)
	if c.fields, err = godcgm.FieldGroupCreate(name, all); err != nil {
		return wrap("create field group", err)
	}
	if c.xidFields, err = godcgm.FieldGroupCreate(name+"-xid", shorts([]uint16{xidField})); err != nil {
		return wrap("create XID field group", err)
	}
	usec := interval.Microseconds()
	if err := godcgm.WatchFieldsWithGroupEx(c.fields, group, usec, 0, 2); err != nil {
		return wrap("watch fields", err)
	}
	if err := godcgm.WatchFieldsWithGroupEx(c.xidFields, group, usec, xidKeepAge.Seconds(), 0); err != nil {
		return wrap("watch XID field", err)
	}
	return nil
}

func (c *realClient) WatchHealth() error {
	group, err := godcgm.CreateGroup(fmt.Sprintf("gputally-health-%d", time.Now().UnixNano()))
	if err != nil {
		return wrap("create health group", err)
	}
	c.healthGroup, c.health = group, true
	for _, id := range c.gpus {
		if err := godcgm.AddToGroup(group, id); err != nil {
			return wrap("add GPU to health group", err)
		}
	}
	return wrap("set health watches", godcgm.HealthSet(group, godcgm.DCGM_HEALTH_WATCH_ALL))
}

// unwatch destroys the groups of an earlier Watch; their errors change nothing.
func (c *realClient) unwatch() {
	if !c.watching {
		return
	}
	_ = godcgm.FieldGroupDestroy(c.fields)
	_ = godcgm.FieldGroupDestroy(c.xidFields)
	_ = godcgm.DestroyGroup(c.group)
	if c.health {
		_ = godcgm.DestroyGroup(c.healthGroup)
	}
	c.watching, c.health = false, false
}

func shorts(ids []uint16) []godcgm.Short {
	out := make([]godcgm.Short, len(ids))
	for i, id := range ids {
		out[i] = godcgm.Short(id)
	}
	return out
}

func (c *realClient) LatestValues(ents []entity, fields []uint16) ([]fieldValue, error) {
	pairs := make([]godcgm.GroupEntityPair, len(ents))
	for i, e := range ents {
		pairs[i] = godcgm.GroupEntityPair{EntityGroupId: godcgm.Field_Entity_Group(e.group), EntityId: e.id}
	}
	vals, err := godcgm.EntitiesGetLatestValues(pairs, shorts(fields), 0)
	if err != nil {
		return nil, wrap("read latest values", err)
	}
	return convertValues(vals), nil
}

func (c *realClient) XIDsSince(since time.Time) ([]fieldValue, time.Time, error) {
	vals, next, err := godcgm.GetValuesSince(c.group, c.xidFields, since)
	if err != nil {
		return nil, since, wrap("read XID updates", err)
	}
	return convertValues(vals), next, nil
}

func convertValues(vals []godcgm.FieldValue_v2) []fieldValue {
	out := make([]fieldValue, len(vals))
	for i, v := range vals {
		fv := fieldValue{
			entity: entity{entityGroup(v.EntityGroupId), v.EntityID},
			field:  uint16(v.FieldID),
			status: v.Status,
			typ:    byte(v.FieldType),
			ts:     time.UnixMicro(v.TS),
		}
		switch v.FieldType {
		case godcgm.DCGM_FT_INT64:
			fv.i64 = v.Int64()
		case godcgm.DCGM_FT_DOUBLE:
			fv.f64 = v.Float64()
		case godcgm.DCGM_FT_STRING:
			fv.str = v.String()
		}
		out[i] = fv
	}
	return out
}

func (c *realClient) HealthCheck() ([]healthIncident, error) {
	resp, err := godcgm.HealthCheck(c.healthGroup)
	if err != nil {
		return nil, wrap("check health", err)
	}
	out := make([]healthIncident, 0, len(resp.Incidents))
	for _, in := range resp.Incidents {
		out = append(out, healthIncident{
			entity:  entity{entityGroup(in.EntityInfo.EntityGroupId), in.EntityInfo.EntityId},
			failure: in.Health == godcgm.DCGM_HEALTH_RESULT_FAIL,
			message: in.Error.Message,
		})
	}
	return out, nil
}

func (c *realClient) GPULost(gpu uint) bool {
	return godcgm.GetGPUStatus(gpu) == godcgm.EntityStatusLost
}

func (c *realClient) Close() error {
	c.unwatch()
	return godcgm.Shutdown()
}

func containsFold(s, substr string) bool {
	return strings.Contains(strings.ToLower(s), substr)
}

package main

import (
	"errors"
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/podworker"
)

// ErrRuntimeDown is returned by every FakeRuntime call while it is down.
var ErrRuntimeDown = errors.New("container runtime is down")

// FakeRuntime is a container runtime that keeps pods' containers and
// volumes in memory and fails every call while Down is set, like a CRI
// runtime that was stopped (the #113091 e2e scenario).
type FakeRuntime struct {
	Down    bool
	running map[types.UID]podworker.RunningPod // pods with running containers
	volumes map[types.UID]bool                 // pods with resources to release
	Calls   int                                // every call, failed ones included
}

// NewFakeRuntime returns a runtime with nothing running.
func NewFakeRuntime() *FakeRuntime {
	return &FakeRuntime{running: map[types.UID]podworker.RunningPod{}, volumes: map[types.UID]bool{}}
}

// Start makes sure the pod's containers run (SyncPod).
func (r *FakeRuntime) Start(p *v1.Pod) error {
	r.Calls++
	if r.Down {
		return fmt.Errorf("start %s/%s: %w", p.Namespace, p.Name, ErrRuntimeDown)
	}
	r.running[p.UID] = podworker.RunningPod{UID: p.UID, Name: p.Name, Namespace: p.Namespace}
	r.volumes[p.UID] = true
	return nil
}

// Stop stops every container of uid (SyncTerminatingPod).
func (r *FakeRuntime) Stop(uid types.UID, grace int64) error {
	r.Calls++
	if r.Down {
		return fmt.Errorf("stop %s (grace %ds): %w", uid, grace, ErrRuntimeDown)
	}
	delete(r.running, uid)
	return nil
}

// Cleanup releases the pod's remaining resources (SyncTerminatedPod).
func (r *FakeRuntime) Cleanup(uid types.UID) error {
	r.Calls++
	if r.Down {
		return fmt.Errorf("cleanup %s: %w", uid, ErrRuntimeDown)
	}
	delete(r.volumes, uid)
	return nil
}

// Pods lists the pods with running containers, sorted by UID.
func (r *FakeRuntime) Pods() ([]podworker.RunningPod, error) {
	r.Calls++
	if r.Down {
		return nil, fmt.Errorf("list pods: %w", ErrRuntimeDown)
	}
	out := make([]podworker.RunningPod, 0, len(r.running))
	for _, p := range r.running {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UID < out[j].UID })
	return out, nil
}

// Running reports whether uid has running containers.
func (r *FakeRuntime) Running(uid types.UID) bool { _, ok := r.running[uid]; return ok }

// HasVolumes reports whether uid still holds resources.
func (r *FakeRuntime) HasVolumes(uid types.UID) bool { return r.volumes[uid] }

// Adopt registers a pod left running by a previous kubelet (no config).
func (r *FakeRuntime) Adopt(p podworker.RunningPod) {
	r.running[p.UID] = p
	r.volumes[p.UID] = true
}

package nodehealth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// getters answers live reads from fixed maps (missing: NotFound), with an
// error per name, and records the calls.
type getters struct {
	leases map[string]*coordinationv1.Lease
	nodes  map[string]*v1.Node
	errs   map[string]error
	calls  []string
}

func (g *getters) lease(_ context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error) {
	g.calls = append(g.calls, fmt.Sprintf("lease %s rv=%q", name, opts.ResourceVersion))
	if err := g.errs["lease/"+name]; err != nil {
		return &coordinationv1.Lease{}, err // client-go returns an empty object with an error
	}
	if l := g.leases[name]; l != nil {
		return l, nil
	}
	return &coordinationv1.Lease{}, apierrors.NewNotFound(coordinationv1.Resource("leases"), name)
}

func (g *getters) node(_ context.Context, name string, opts metav1.GetOptions) (*v1.Node, error) {
	g.calls = append(g.calls, fmt.Sprintf("node %s rv=%q", name, opts.ResourceVersion))
	if err := g.errs["node/"+name]; err != nil {
		return &v1.Node{}, err
	}
	if n := g.nodes[name]; n != nil {
		return n, nil
	}
	return &v1.Node{}, apierrors.NewNotFound(v1.Resource("nodes"), name)
}

func liveDesc(l Live) string {
	var parts []string
	if l.Lease != nil {
		parts = append(parts, "lease@"+l.Lease.ResourceVersion)
	}
	if l.Node != nil {
		parts = append(parts, "node@"+l.Node.ResourceVersion)
	}
	if l.Err != nil {
		parts = append(parts, "err: "+l.Err.Error())
	}
	if parts == nil {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

// ReadLive reads in upstream's order, maps NotFound to nil, stops at an
// error, and never confirms on a read it could not make.
func TestReadLive(t *testing.T) {
	timeout := errors.New("timeout")
	for _, tc := range []struct {
		name      string
		r         LiveRead
		node      string
		noGetters bool
		want      string
		calls     string
	}{
		{"nothing asked", 0, "a", false, "nothing", ""},
		{"lease found", ReadLease, "a", false, "lease@10", `lease a rv=""`},
		{"lease found, node not read", ReadLease | ReadNode, "a", false, "lease@10", `lease a rv=""`},
		{"lease not found: nil", ReadLease, "b", false, "nothing", `lease b rv=""`},
		{"lease not found, node read", ReadLease | ReadNode, "b", false, "node@7", `lease b rv=""; node b rv=""`},
		{"neither found", ReadLease | ReadNode, "c", false, "nothing", `lease c rv=""; node c rv=""`},
		{"lease error: node not read", ReadLease | ReadNode, "x", false, "err: timeout", `lease x rv=""`},
		{"node error", ReadLease | ReadNode, "y", false, "err: timeout", `lease y rv=""; node y rv=""`},
		{"no getters: an error, not a NotFound", ReadLease | ReadNode, "a", true, `err: nodehealth: ReadLive: no LeaseGetter for the live Lease of node "a"`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &getters{
				leases: map[string]*coordinationv1.Lease{"a": {ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: "10"}}},
				nodes:  map[string]*v1.Node{"b": {ObjectMeta: metav1.ObjectMeta{Name: "b", ResourceVersion: "7"}}},
				errs:   map[string]error{"lease/x": timeout, "node/y": timeout},
			}
			var live Live
			if tc.noGetters {
				live = ReadLive(context.Background(), tc.r, tc.node, nil, nil)
			} else {
				live = ReadLive(context.Background(), tc.r, tc.node, g.lease, g.node)
			}
			assert.Equal(t, tc.want, liveDesc(live))
			assert.Equal(t, tc.calls, strings.Join(g.calls, "; "))
			if tc.want == "err: timeout" {
				assert.ErrorIs(t, live.Err, timeout)
			}
		})
	}
	// ConfirmLease never asks for the Node: a nil NodeGetter is fine.
	g := &getters{}
	assert.Equal(t, "nothing", liveDesc(ReadLive(context.Background(), ReadLease, "z", g.lease, nil)))
	// A read asked without its getter.
	assert.Equal(t, `err: nodehealth: ReadLive: no NodeGetter for the live Node "z"`,
		liveDesc(ReadLive(context.Background(), ReadLease|ReadNode, "z", g.lease, nil)))
}

// A read ReadLive could not make is never taken for a NotFound: Confirm
// skips the node.
func TestReadLiveMissingGetterIsUnconfirmed(t *testing.T) {
	tr := newTracker(t)
	n := rvNode("a", T, 0, "1")
	_, _ = tr.Observe(sec(0), n, nil)
	r, _ := tr.Observe(sec(61), n, nil)
	assert.Equal(t, ReadLease|ReadNode, r.Confirm)
	g := &getters{}
	v, err := tr.Confirm(sec(61), "a", ReadLive(context.Background(), r.Confirm, "a", g.lease, nil))
	assert.NoError(t, err)
	assert.Equal(t, VerdictUnconfirmed, v)
}

func TestGetLive(t *testing.T) {
	g := &getters{
		leases: map[string]*coordinationv1.Lease{"a": {ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: "10"}}},
		errs:   map[string]error{"lease/x": apierrors.NewServiceUnavailable("etcd")},
	}
	ctx := context.Background()
	l, err := GetLive(ctx, g.lease, "a")
	assert.NoError(t, err)
	assert.Equal(t, "10", l.ResourceVersion)
	l, err = GetLive(ctx, g.lease, "b")
	assert.NoError(t, err)
	assert.Nil(t, l, "NotFound is nil, not client-go's empty object")
	l, err = GetLive(ctx, g.lease, "x")
	assert.True(t, apierrors.IsServiceUnavailable(err))
	assert.Nil(t, l)
	// A named getter type and a method value both fit.
	var get LeaseGetter = g.lease
	_, err = GetLive(ctx, get, "a")
	assert.NoError(t, err)
	assert.Equal(t, `lease a rv=""; lease b rv=""; lease x rv=""; lease a rv=""`, strings.Join(g.calls, "; "), "quorum reads: no resourceVersion")
}

type store struct{ rv string }

func (s store) LastStoreSyncResourceVersion() string { return s.rv }

type informer struct{ rv string }

func (i informer) LastSyncResourceVersion() string { return i.rv }

func TestSyncedVersion(t *testing.T) {
	for _, tc := range []struct {
		name     string
		store    any
		informer interface{ LastSyncResourceVersion() string }
		want     string
	}{
		{"the store's (client-go v0.36+)", store{"90"}, informer{"91"}, "90"},
		{"a store without it (older client-go): the informer's", struct{}{}, informer{"91"}, "91"},
		{"a store that cannot tell: the informer's", store{""}, informer{"91"}, "91"},
		{"nil store", nil, informer{"91"}, "91"},
		{"nil informer", store{""}, nil, ""},
		{"nil both", nil, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, SyncedVersion(tc.store, tc.informer))
		})
	}
}

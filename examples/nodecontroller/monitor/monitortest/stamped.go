package monitortest

import (
	"context"
	"encoding/binary"
	"hash/maphash"
	"reflect"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/internal/uid"
)

// stampRun is the pods of one AddStampedPods call: their template, node,
// and names and UIDs in one string. Its stamps hold no pointers, so the
// garbage collector never looks into them: a simulated cluster's millions
// of pods are a few thousand runs to it.
type stampRun struct {
	tmpl   *v1.Pod
	rec    *nodeRec
	blob   string  // each stamp's UID, then its name unless the UID ends with it
	stamps []stamp // never reallocated
	// The UIDs that are canonical UUIDs are not in blob: they are
	// consecutive from base (seq), or raw's, per stamp (rawUIDs).
	base uid.Raw
	seq  bool
	raw  []uid.Raw
}

// setRawUID records r as stamp i's UID: as base and an index while every
// one so far is base plus its index (a simulator numbering its pods), else
// in raw.
func (run *stampRun) setRawUID(i int, r uid.Raw) {
	if run.raw == nil {
		if !run.seq { // the first
			run.base, run.seq = r, true
			binary.BigEndian.PutUint64(run.base[8:], binary.BigEndian.Uint64(r[8:])-uint64(i))
			return
		}
		if r == run.nth(i) {
			return
		}
		run.raw = make([]uid.Raw, len(run.stamps))
		for j := range i {
			if run.stamps[j].rawUID {
				run.raw[j] = run.nth(j)
			}
		}
		run.seq = false
	}
	run.raw[i] = r
}

// nth is base plus i, its last 8 bytes a big-endian counter.
func (run *stampRun) nth(i int) uid.Raw {
	r := run.base
	binary.BigEndian.PutUint64(r[8:], binary.BigEndian.Uint64(r[8:])+uint64(i))
	return r
}

// stamp is a pod stored as its template plus what differs: its name, its
// UID and, once written, its status. A v1.Pod is about 1.2 KB; a stamp is
// 20 bytes, its name and UID in its run's blob (a canonical UUID in 16
// bytes beside it, or none when the run's UUIDs are numbered), and a 12-byte slot or two
// of the index. Reads hand out the pod materialized from its stamp; writes
// replace the stamp's status, never a pod handed out.
type stamp struct {
	end     uint32 // where its UID and name end in the blob (the previous stamp's end is where they start)
	uidLen  uint32
	nameLen uint32
	status  uint32 // 0: the template's; else rec.statuses[status-1]
	gone    bool   // evicted, or replaced by AddPod
	rawUID  bool   // the UID is run.raw[i], not in the blob
}

// stampRef is a stamp: a run and an index in it.
type stampRef struct {
	run *stampRun
	i   int
}

func (r stampRef) s() *stamp { return &r.run.stamps[r.i] }

// text is the stamp's part of the blob: its UID, then its name unless the
// UID ends with it.
func (r stampRef) text() string {
	start := uint32(0)
	if r.i > 0 {
		start = r.run.stamps[r.i-1].end
	}
	return r.run.blob[start:r.s().end]
}

// uid is the stamp's UID: from the blob, or formatted from its 16 bytes
// (a new string: a UUID kept as a string would cost 36 bytes a pod).
func (r stampRef) uid() types.UID {
	if r.s().rawUID {
		if r.run.seq {
			return r.run.nth(r.i).UID()
		}
		return r.run.raw[r.i].UID()
	}
	return types.UID(r.text()[:r.s().uidLen])
}

func (r stampRef) name() string {
	t := r.text()
	return t[len(t)-int(r.s().nameLen):]
}

// status is the stamp's status: the template's until one is written.
func (r stampRef) status() *v1.PodStatus {
	if i := r.s().status; i > 0 {
		return r.run.rec.statuses[i-1]
	}
	return &r.run.tmpl.Status
}

// pod materializes the stamp: a new object, never modified afterwards.
func (r stampRef) pod() *v1.Pod {
	p := new(v1.Pod)
	r.fill(p)
	return p
}

// fill materializes the stamp into p.
func (r stampRef) fill(p *v1.Pod) {
	*p = *r.run.tmpl
	p.Name, p.UID, p.Spec.NodeName = r.name(), r.uid(), r.run.rec.name
	p.Status = *r.status()
}

func (r stampRef) ready() bool { return readyIn(r.status()) }

// stampIndex finds stamps by namespace and name: an open-addressing hash
// table of their places (run and index) with no pointers for the garbage
// collector to follow, 12 bytes a slot at most three quarters full, where
// a map from name to stamp would be about 40 bytes of pointers a pod. Each
// slot keeps the low 32 bits of its name's hash: a probe reads a name only
// when they match, and growing reads none.
type stampIndex struct {
	seed   maphash.Seed
	runs   []*stampRun // every run, by the number its slots name
	slots  []uint64    // 0: empty; tombstone: deleted; else (run+1)<<32 | index
	hashes []uint32    // per slot
	used   int         // slots not empty (live and tombstones)
	live   int
}

const tombstone = ^uint64(0)

// at returns the stamp a slot holds.
func (x *stampIndex) at(slot uint64) stampRef {
	return stampRef{run: x.runs[slot>>32-1], i: int(uint32(slot))}
}

func (x *stampIndex) hash(name string) uint32 { return uint32(maphash.String(x.seed, name)) }

// matches reports whether slot j holds the stamp of namespace and name
// (whose hash is h).
func (x *stampIndex) matches(j int, h uint32, namespace, name string) bool {
	if x.hashes[j] != h {
		return false
	}
	r := x.at(x.slots[j])
	return r.run.tmpl.Namespace == namespace && r.name() == name
}

// find returns the slot of the stamp of namespace and name, or -1.
func (x *stampIndex) find(namespace, name string) int {
	if x.live == 0 {
		return -1
	}
	h := x.hash(name)
	mask := len(x.slots) - 1
	for j := int(h) & mask; ; j = (j + 1) & mask {
		switch x.slots[j] {
		case 0:
			return -1
		case tombstone:
		default:
			if x.matches(j, h, namespace, name) {
				return j
			}
		}
	}
}

func (x *stampIndex) get(key types.NamespacedName) (stampRef, bool) {
	i := x.find(key.Namespace, key.Name)
	if i < 0 {
		return stampRef{}, false
	}
	return x.at(x.slots[i]), true
}

// put indexes stamp i of run under namespace and name, and returns the
// slot of the stamp it replaces, or -1: one hash and one probe sequence
// for both. c.mu must be held.
func (x *stampIndex) put(run, i int, namespace, name string) (replaced int) {
	if (x.used+1)*4 > len(x.slots)*3 {
		x.rehash(max(16, 2*(x.live+1)))
	}
	v := uint64(run+1)<<32 | uint64(i)
	h := x.hash(name)
	mask := len(x.slots) - 1
	free := -1
	for j := int(h) & mask; ; j = (j + 1) & mask {
		switch x.slots[j] {
		case 0:
			if free < 0 {
				free = j
				x.used++
			}
			x.slots[free], x.hashes[free] = v, h
			x.live++
			return -1
		case tombstone:
			if free < 0 {
				free = j
			}
		default:
			if x.matches(j, h, namespace, name) {
				// The old stamp keeps its slot until dropped: the new one
				// takes the first free slot on the way, or the next empty.
				if free < 0 {
					free = x.next(j)
				}
				x.slots[free], x.hashes[free] = v, h
				x.live++
				return j
			}
		}
	}
}

// next returns the first slot after j that is free (empty or a
// tombstone), counting it as used when it was empty.
func (x *stampIndex) next(j int) int {
	mask := len(x.slots) - 1
	for j = (j + 1) & mask; ; j = (j + 1) & mask {
		switch x.slots[j] {
		case 0:
			x.used++
			return j
		case tombstone:
			return j
		}
	}
}

// reserve makes room for n more stamps.
func (x *stampIndex) reserve(n int) {
	if need := x.live + n; need*4 > len(x.slots)*3 {
		x.rehash(need * 4 / 3)
	}
}

// rehash moves the live slots to a table of at least n slots (a power of
// two), dropping the tombstones.
func (x *stampIndex) rehash(n int) {
	if len(x.slots) == 0 {
		x.seed = maphash.MakeSeed()
	}
	size := 16
	for size < n {
		size *= 2
	}
	slots, hashes := x.slots, x.hashes
	x.slots, x.hashes, x.used = make([]uint64, size), make([]uint32, size), x.live
	mask := size - 1
	for k, v := range slots {
		if v == 0 || v == tombstone {
			continue
		}
		j := int(hashes[k]) & mask
		for x.slots[j] != 0 {
			j = (j + 1) & mask
		}
		x.slots[j], x.hashes[j] = v, hashes[k]
	}
}

// remove drops the stamp of slot i.
func (x *stampIndex) remove(i int) {
	x.slots[i] = tombstone
	x.live--
}

// ReserveStamped makes room for n more stamped pods, so filling a large
// cluster with AddStampedPods does not regrow its index.
func (c *Cluster) ReserveStamped(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stamped.reserve(n)
}

// AddStampedPods stores n pods on node (which must not be empty and need
// not exist) stamped from tmpl: pod i is tmpl with the name and UID name(i)
// returns and spec.nodeName node; it forwards PodChanged for each. One
// template may serve every node.
// They behave as pods added with AddPod (reads, writes, evictions, Sync),
// and are listed after a node's other pods, in stamp order; but the cluster
// keeps only their name, UID and, once written, their status (about 75
// bytes a pod with its index entry when the UID ends with the name,
// against 1.3 KB for a v1.Pod; the pods of a node written one status at
// one instant share it), materializing a pod object when one is read: Pod,
// ListPodsOnNode and every event allocate it (see ReuseEventPods). tmpl is
// shared and must not be modified afterwards. A pod of the same key already
// stored is replaced.
func (c *Cluster) AddStampedPods(ctx context.Context, node string, tmpl *v1.Pod, n int, name func(i int) (string, types.UID)) {
	if n <= 0 || node == "" {
		return
	}
	run := &stampRun{tmpl: tmpl, stamps: make([]stamp, n)}
	var blob strings.Builder
	c.mu.Lock()
	rec := c.lookup(node)
	if rec == nil {
		rec = c.record(node)
	}
	run.rec = rec
	for i := range run.stamps {
		name, id := name(i)
		if r, ok := uid.Parse(id); ok {
			run.setRawUID(i, r)
			blob.WriteString(name)
			run.stamps[i] = stamp{end: uint32(blob.Len()), nameLen: uint32(len(name)), rawUID: true}
			continue
		}
		blob.WriteString(string(id))
		if !strings.HasSuffix(string(id), name) {
			blob.WriteString(name)
		}
		run.stamps[i] = stamp{end: uint32(blob.Len()), uidLen: uint32(len(id)), nameLen: uint32(len(name))}
	}
	run.blob = blob.String()
	id := len(c.stamped.runs)
	c.stamped.runs = append(c.stamped.runs, run)
	c.stamped.reserve(n)
	for i := range run.stamps {
		name := stampRef{run, i}.name()
		if len(c.pods) > 0 {
			c.removePod(types.NamespacedName{Namespace: tmpl.Namespace, Name: name})
		}
		if old := c.stamped.put(id, i, tmpl.Namespace, name); old >= 0 {
			c.dropStamp(old)
		}
	}
	rec.stamps = append(rec.stamps, run)
	rec.live += n
	recv, now := c.recv, c.now
	c.mu.Unlock()
	if recv != nil {
		var scratch *v1.Pod
		for i := range run.stamps {
			if scratch == nil || !c.reusing() {
				scratch = new(v1.Pod)
			}
			c.mu.Lock()
			r := stampRef{run, i}
			gone := r.s().gone
			if !gone {
				r.fill(scratch)
			}
			c.mu.Unlock()
			if !gone {
				recv.PodChanged(ctx, now, scratch)
			}
		}
	}
}

func (c *Cluster) reusing() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reuse
}

// removeLocked forgets the pod of key, stamped or not, without an event
// (a replacement). c.mu must be held.
func (c *Cluster) removeLocked(key types.NamespacedName) {
	c.removePod(key)
	if i := c.stamped.find(key.Namespace, key.Name); i >= 0 {
		c.dropStamp(i)
	}
}

// removePod forgets the pod of key that is not stamped. c.mu must be held.
func (c *Cluster) removePod(key types.NamespacedName) {
	if old, ok := c.pods[key]; ok {
		if old.rec != nil {
			old.rec.pods = slices.DeleteFunc(old.rec.ownPods(), func(p *v1.Pod) bool { return p == old.pod })
		}
		delete(c.pods, key)
	}
}

// dropStamp removes the stamp of index slot i from the index and its
// node's list. c.mu must be held.
func (c *Cluster) dropStamp(i int) {
	r := c.stamped.at(c.stamped.slots[i])
	r.s().gone = true
	c.stamped.remove(i)
	r.run.rec.live--
}

// appendStampedValues appends rec's live stamped pods, materialized, to
// dst. c.mu must be held.
func (rec *nodeRec) appendStampedValues(dst []v1.Pod) []v1.Pod {
	for _, run := range rec.stamps {
		for i := range run.stamps {
			if !run.stamps[i].gone {
				dst = append(dst, v1.Pod{})
				stampRef{run, i}.fill(&dst[len(dst)-1])
			}
		}
	}
	return dst
}

// pointers appends a pointer to each element of pods to dst.
func pointers(dst []*v1.Pod, pods []v1.Pod) []*v1.Pod {
	for i := range pods {
		dst = append(dst, &pods[i])
	}
	return dst
}

// ReuseEventPods (on) makes the informer events the cluster forwards for
// stamped pods (AddStampedPods and Sync; status writes and SetPodsReady
// forward none) carry objects that are reused for other events once the
// Receiver's call has returned,
// instead of a new object each: a simulated cluster's initial sync alone
// materializes millions of pods, all garbage as soon as they are sent. Only
// for a Receiver that keeps nothing of the pod object past the call but
// what it copies (strings and the template's shared slices may be kept:
// they are never modified). *monitor.Monitor is one: its Evictor keeps
// the pod's key, UID, node name and tolerations, and its writes carry the
// pod's key. Pod and the BeforeEvict hook always hand out objects of
// their own, and so does ListPodsOnNode unless ReuseListedPods is on. Off
// by default.
func (c *Cluster) ReuseEventPods(on bool) {
	c.mu.Lock()
	c.reuse = on
	c.mu.Unlock()
}

// ReuseListedPods (on) makes ListPodsOnNode materialize a node's stamped
// pods into one buffer that the next ListPodsOnNode call reuses, instead
// of new objects each call: a simulated outage lists the pods of thousands
// of nodes to mark them not ready, each list garbage at once. Only when
// every caller of the Cluster is done with a list (and its pods) before
// anyone lists again: one goroutine that runs every pass and every read,
// with a Monitor of one worker (Config.Workers = 1: it reads a node's pods
// to mark or delete them and keeps none), as policysim does. A Monitor
// with more workers, or passes run from several goroutines (a TaintPass
// that deletes a node's pods in legacy mode while a MonitorPass marks
// another's), would share the buffers. Off by default.
func (c *Cluster) ReuseListedPods(on bool) {
	c.mu.Lock()
	c.reuseList = on
	c.mu.Unlock()
}

// podsView returns the node's pods, stamped ones materialized, for
// handing out: rec.pods itself when it has none, else a new list of new
// objects (not kept: a simulation reads the pods of thousands of down nodes
// once each), the stamped ones in one allocation. c.mu must be held.
func (rec *nodeRec) podsView() []*v1.Pod {
	if rec.live == 0 {
		rec.shared = true
		return rec.pods
	}
	out := make([]*v1.Pod, len(rec.pods), len(rec.pods)+rec.live)
	copy(out, rec.pods)
	return pointers(out, rec.appendStampedValues(make([]v1.Pod, 0, rec.live)))
}

// listedPods is podsView into the cluster's list buffers
// (ReuseListedPods). c.mu must be held.
func (c *Cluster) listedPods(rec *nodeRec) []*v1.Pod {
	if rec.live == 0 {
		rec.shared = true
		return rec.pods
	}
	clear(c.listVals) // drop the last list's names and statuses
	c.listVals = rec.appendStampedValues(c.listVals[:0])
	c.listPtrs = pointers(append(c.listPtrs[:0], rec.pods...), c.listVals)
	return c.listPtrs
}

// setStampsReady makes every live stamped pod of rec that is not Ready
// Ready (ready returns the pod made so) and returns how many it changed.
// c.mu must be held.
func (rec *nodeRec) setStampsReady(ready func(*v1.Pod) *v1.Pod) int {
	n := 0
	var from, to uint32 // the last status made Ready, and the result
	for _, run := range rec.stamps {
		for i := range run.stamps {
			r := stampRef{run, i}
			s := r.s()
			if s.gone || r.ready() {
				continue
			}
			if to == 0 || s.status == 0 || s.status != from {
				p := ready(r.pod())
				from, to = s.status, rec.addStatus(&p.Status)
			}
			s.status = to // shared by the stamps whose status was shared
			n++
		}
	}
	return n
}

// addStatus stores st (which is never modified afterwards) as one of the
// node's stamped statuses and returns its number. c.mu must be held.
func (rec *nodeRec) addStatus(st *v1.PodStatus) uint32 {
	cp := *st // not st itself, which would keep all of its pod
	rec.statuses = append(rec.statuses, &cp)
	return uint32(len(rec.statuses))
}

// shareStatus returns the number of the node's last stamped status written
// when it is equal to st, else stores a copy of st (the caller's may
// change): the pods of a node marked not ready at one instant share one
// status. c.mu must be held.
func (rec *nodeRec) shareStatus(st *v1.PodStatus) uint32 {
	if rec.lastStatus > 0 && reflect.DeepEqual(rec.statuses[rec.lastStatus-1], st) {
		return rec.lastStatus
	}
	rec.statuses = append(rec.statuses, st.DeepCopy())
	rec.lastStatus = uint32(len(rec.statuses))
	return rec.lastStatus
}

package monitortest

import (
	"context"
	"reflect"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// stamp is a pod stored as its template plus what differs: its name, its
// UID and, once written, its status. A v1.Pod is about 1.2 KB; a stamp is
// 64 bytes, and a simulated cluster's millions of pods are stamped from a
// few templates (AddStampedPods). Reads hand out the pod materialized from
// its stamp; writes replace the stamp's status, never a pod handed out.
type stamp struct {
	tmpl   *v1.Pod
	name   string
	uid    types.UID
	rec    *nodeRec
	status *v1.PodStatus // nil: the template's
	gone   bool          // evicted, or replaced by AddPod
}

// pod materializes the stamp: a new object, never modified afterwards.
func (s *stamp) pod() *v1.Pod {
	p := new(v1.Pod)
	s.fill(p)
	return p
}

// fill materializes the stamp into p.
func (s *stamp) fill(p *v1.Pod) {
	*p = *s.tmpl
	p.Name, p.UID, p.Spec.NodeName = s.name, s.uid, s.rec.name
	if s.status != nil {
		p.Status = *s.status
	}
}

func (s *stamp) ready() bool {
	st := &s.tmpl.Status
	if s.status != nil {
		st = s.status
	}
	return readyIn(st)
}

// stampIndex finds stamps by namespace and name: a map per namespace keyed
// by name alone (16 bytes a key instead of a NamespacedName's 32).
type stampIndex map[string]map[string]*stamp

func (x stampIndex) get(key types.NamespacedName) *stamp { return x[key.Namespace][key.Name] }

// AddStampedPods stores n pods on node (which must not be empty and need
// not exist) stamped from tmpl: pod i is tmpl with the name and UID name(i)
// returns and spec.nodeName node; it forwards PodChanged for each. One
// template may serve every node.
// They behave as pods added with AddPod (reads, writes, evictions, Sync),
// and are listed after a node's other pods, in stamp order; but the cluster
// keeps only their name, UID and, once written, their status (about 140
// bytes a pod with its index entry, against 1.3 KB for a v1.Pod; the pods
// of a node written one status at one instant share it), materializing a
// pod object when one is read: Pod, ListPodsOnNode and every event
// allocate it. tmpl is shared and must not be modified afterwards. A pod of
// the same key already stored is replaced.
func (c *Cluster) AddStampedPods(ctx context.Context, node string, tmpl *v1.Pod, n int, name func(i int) (string, types.UID)) {
	if n <= 0 || node == "" {
		return
	}
	stamps := make([]stamp, n)
	c.mu.Lock()
	rec := c.lookup(node)
	if rec == nil {
		rec = c.record(node)
	}
	if c.stamped == nil {
		c.stamped = stampIndex{}
	}
	names := c.stamped[tmpl.Namespace]
	if names == nil {
		names = make(map[string]*stamp, n)
		c.stamped[tmpl.Namespace] = names
	}
	for i := range stamps {
		s := &stamps[i]
		s.tmpl, s.rec = tmpl, rec
		s.name, s.uid = name(i)
		key := types.NamespacedName{Namespace: tmpl.Namespace, Name: s.name}
		c.removeLocked(key)
		names[s.name] = s
	}
	rec.stamps = append(rec.stamps, stamps)
	rec.live += n
	recv, now := c.recv, c.now
	c.mu.Unlock()
	if recv != nil {
		for i := range stamps {
			recv.PodChanged(ctx, now, stamps[i].pod())
		}
	}
}

// removeLocked forgets the pod of key, stamped or not, without an event
// (a replacement). c.mu must be held.
func (c *Cluster) removeLocked(key types.NamespacedName) {
	if old, ok := c.pods[key]; ok {
		if old.rec != nil {
			old.rec.pods = slices.DeleteFunc(old.rec.ownPods(), func(p *v1.Pod) bool { return p == old.pod })
		}
		delete(c.pods, key)
	}
	if s := c.stamped.get(key); s != nil {
		c.dropStamp(s)
	}
}

// dropStamp removes a stamp from the index and its node's list. c.mu must
// be held.
func (c *Cluster) dropStamp(s *stamp) {
	s.gone = true
	delete(c.stamped[s.tmpl.Namespace], s.name)
	s.rec.live--
}

// appendStamped appends rec's live stamped pods, materialized, to dst.
// c.mu must be held.
func (rec *nodeRec) appendStamped(dst []*v1.Pod) []*v1.Pod {
	for _, run := range rec.stamps {
		for i := range run {
			if !run[i].gone {
				dst = append(dst, run[i].pod())
			}
		}
	}
	return dst
}

// appendStampedValues is appendStamped into pod values. c.mu must be
// held.
func (rec *nodeRec) appendStampedValues(dst []v1.Pod) []v1.Pod {
	for _, run := range rec.stamps {
		for i := range run {
			if !run[i].gone {
				dst = append(dst, v1.Pod{})
				run[i].fill(&dst[len(dst)-1])
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
// stamped pods (Sync, status writes, SetPodsReady) carry objects that
// are reused for other events once the Receiver's call has returned,
// instead of a new object each: a simulated cluster's initial sync alone
// materializes millions of pods, all garbage as soon as they are sent. Only
// for a Receiver that keeps nothing of the pod object past the call but
// what it copies (strings and the template's shared slices may be kept:
// they are never modified). *monitor.Monitor is one: its Evictor keeps
// the pod's key, UID, node name and tolerations, and its writes carry the
// pod's key. Reads (Pod, ListPodsOnNode) and the BeforeEvict hook always
// hand out objects of their own. Off by default.
func (c *Cluster) ReuseEventPods(on bool) {
	c.mu.Lock()
	c.reuse = on
	c.mu.Unlock()
}

// eventPods materializes stamps for the events they cause: into a buffer
// from the pool with ReuseEventPods, else into a new one. Give it back
// with doneEventPods once the events are sent. c.mu must be held.
func (c *Cluster) eventPods(stamps []*stamp) *[]v1.Pod {
	var buf *[]v1.Pod
	if c.reuse {
		buf, _ = c.podBufs.Get().(*[]v1.Pod)
	}
	if buf == nil {
		buf = new([]v1.Pod)
	}
	*buf = slices.Grow((*buf)[:0], len(stamps))[:len(stamps)]
	for i, s := range stamps {
		s.fill(&(*buf)[i])
	}
	return buf
}

// doneEventPods returns buf (nil: none) to the pool once its events are
// sent, with ReuseEventPods; without it, the pods stay the Receiver's.
func (c *Cluster) doneEventPods(buf *[]v1.Pod) {
	if buf == nil {
		return
	}
	c.mu.Lock()
	reuse := c.reuse
	c.mu.Unlock()
	if reuse {
		clear(*buf) // drop the references to names and statuses
		c.podBufs.Put(buf)
	}
}

// podsView returns the node's pods, stamped ones materialized, for
// handing out: rec.pods itself when it has none, else a new list of new
// objects (not kept: a simulation reads the pods of thousands of down nodes
// once each). c.mu must be held.
func (rec *nodeRec) podsView() []*v1.Pod {
	if rec.live == 0 {
		rec.shared = true
		return rec.pods
	}
	return rec.appendStamped(slices.Clip(slices.Clone(rec.pods)))
}

// setStampsReady makes every live stamped pod of rec that is not Ready
// Ready at now, appending the stamps changed to changed. c.mu must be
// held.
func (rec *nodeRec) setStampsReady(changed []*stamp, ready func(*v1.Pod) *v1.Pod) []*stamp {
	var from, to *v1.PodStatus // the last status made Ready, and the result
	for _, run := range rec.stamps {
		for i := range run {
			s := &run[i]
			if s.gone || s.ready() {
				continue
			}
			if s.status == nil || s.status != from {
				p := ready(s.pod())
				st := p.Status // not &p.Status, which would keep all of p
				from, to = s.status, &st
			}
			s.status = to // shared by the stamps whose status was shared
			changed = append(changed, s)
		}
	}
	return changed
}

// shareStatus returns the node's last stamped status written when it is
// equal to st, else a copy of st (the caller's may change): the pods of a
// node marked not ready at one instant share one status (a status is never
// modified once stored). c.mu must be held.
func (rec *nodeRec) shareStatus(st *v1.PodStatus) *v1.PodStatus {
	if rec.lastStatus != nil && reflect.DeepEqual(rec.lastStatus, st) {
		return rec.lastStatus
	}
	rec.lastStatus = st.DeepCopy()
	return rec.lastStatus
}

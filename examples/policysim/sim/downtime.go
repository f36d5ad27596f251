package sim

import (
	"time"

	v1 "k8s.io/api/core/v1"
)

// How long nodes and pods were down: a node from the moment its Ready
// condition in the API server leaves True (the controller writes Unknown,
// or the kubelet posts False) until the kubelet posts True again; its pods
// from the moment the controller marks them Ready=False until the kubelet
// puts them back or they are evicted. Spans still open at the end of the
// run are counted up to it. A node's pods are marked and put back together,
// so one span per node stands for all of them.

// nodeDown is one node's state in the API server.
type nodeDown struct {
	api   v1.ConditionStatus // its Ready condition's status
	since time.Duration      // when it last left True
	pods  int                // its pods marked not ready
	// podsSince is when its pods were marked (the span's start), podsAt
	// when their number last changed.
	podsSince, podsAt time.Duration
}

// zoneDown adds up a zone's time down.
type zoneDown struct {
	nodeSeconds, podSeconds float64
	longestNode, longestPod time.Duration
	nodesAtEnd, podsAtEnd   int
	marked                  int // pods marked not ready (writes)
}

// nodeAPI records node i's Ready status in the API server becoming st now.
func (s *sim) nodeAPI(i int, st v1.ConditionStatus) {
	d := &s.down[i]
	switch {
	case d.api == v1.ConditionTrue && st != v1.ConditionTrue:
		d.since = s.t
	case d.api != v1.ConditionTrue && st == v1.ConditionTrue:
		s.downs[s.nodes[i].zone].nodeUp(s.t - d.since)
	}
	d.api = st
}

func (z *zoneDown) nodeUp(d time.Duration) {
	z.nodeSeconds += d.Seconds()
	z.longestNode = max(z.longestNode, d)
}

// podsAPI records the number of node i's pods marked not ready becoming n
// now.
func (s *sim) podsAPI(i, n int) {
	d := &s.down[i]
	z := &s.downs[s.nodes[i].zone]
	if d.pods > 0 {
		z.podSeconds += float64(d.pods) * (s.t - d.podsAt).Seconds()
		if n < d.pods {
			z.longestPod = max(z.longestPod, s.t-d.podsSince)
		}
	} else if n > 0 {
		d.podsSince = s.t
	}
	d.pods, d.podsAt = n, s.t
}

// closeDown counts the spans still open at the end of the run.
func (s *sim) closeDown() {
	for i := range s.down {
		d := &s.down[i]
		z := &s.downs[s.nodes[i].zone]
		if d.api != v1.ConditionTrue {
			z.nodeUp(s.t - d.since)
			z.nodesAtEnd++
		}
		if pods := d.pods; pods > 0 {
			s.podsAPI(i, 0)
			z.podsAtEnd += pods
		}
	}
}

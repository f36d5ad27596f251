// Package incident replays a cluster's recorded outage, read from
// kube-apiserver audit logs (audit.k8s.io/v1 Event JSON lines, read by
// examples/replay/audit), through the node lifecycle controller's decision
// loop, examples/nodecontroller/monitor on its in-memory cluster
// examples/nodecontroller/monitor/monitortest, as examples/policysim/sim
// drives it, under any policy given with kube-controller-manager's flag
// names (Policy; default: the policy the recorded controller ran with,
// guessed from the log, else v1.37.2's), and compares what the replay
// decides with what the recorded controller wrote.
//
// # The caller loop
//
//	h, err := incident.Inventory(src1, incident.Options{})          // pass 1: the cluster, the recorded decisions
//	doc := h.Doctor()                                               // what the log can and cannot tell
//	pol = h.Guess.Apply(pol)                                        // the flags not given: the log's guess
//	run, err := incident.Replay(ctx, h, src2, incident.ReplayOptions{Policy: pol}) // pass 2: the replay
//	rep := incident.NewReport(h, opt, run)                          // recorded vs replayed, saved and lost pods
//	rep.WriteText(os.Stdout)                                        // or WriteJSON, WriteSVG (a timeline)
//
// src1 and src2 are the same log opened twice (an Opener; *audit.Reader
// in the command, SliceSource in tests): the first pass keeps the nodes,
// pods and the recorded controller's decisions, the second streams the
// kubelets' writes into the replay, so memory grows with the cluster, not
// with the log. Phases and Sweep replay the log several times (one pass
// each); Run.Scenario exports a policysim scenario of the timeline.
//
// # Files
//
//	source.go    Source, Opener, SliceSource
//	classify.go  an audit event to what it is to the replay: an input or the recorded controller's write; bodies
//	limits.go    Limits, ErrLimit
//	inventory.go the first pass: History (nodes, pods, recorded decisions)
//	facts.go     what the log holds and lacks: Facts, Doctor
//	policy.go    Policy with kube-controller-manager's flag names, its monitor.Config; each value given, guessed or assumed
//	guess.go     PolicyGuess: the policy the recorded controller ran with, from the log (History.Guess)
//	replay.go    the second pass: the Monitor on monitortest, stalls, the kubelets' reactions
//	reactions.go the kubelets' recorded reactions to recorded controller writes (left out when the replay lacks the write)
//	decision.go  Decision and its kinds
//	compare.go   Compare: matched, missing, extra, first divergence, pods saved and newly lost with reasons
//	phases.go    the phase sensitivity
//	sweep.go     sweeps over policy flags
//	scenario.go  Run.Scenario: a policysim scenario of the timeline
//	report.go    text and JSON output
//	svg.go       SVG output: a timeline of recorded and replayed decisions per node (Report.WriteSVG)
//	recording.go an informer recording (the recorder program's JSON lines): Delivery, ReadRecording
//	informer.go  InformerStalls: watch stalls from a recording; Stall, ApplyStalls
//	watchgaps.go InferredStalls: candidate stalls from the controller's lists and watches in the log
//
// # What is read from the log (recorded)
//
//	input / decision          audit events                                          level needed
//	Lease renewals            leases in kube-node-lease, update/patch by system:node:*   Metadata
//	kubelet Ready             nodes/status update/patch by system:node:*               Request
//	nodes, zones              node create/delete; whole Node bodies (labels)            Request
//	pods, tolerations         pod create, pods/binding, whole Pod bodies                Request
//	pod deletions (others)    pod delete, pods/eviction by anyone else                  Metadata
//	node-unknown              the controller's nodes/status writes with Ready=Unknown   Request (inferred at Metadata)
//	taint-added/-removed      the controller's node patches/updates (spec.taints)       Request
//	pod-not-ready             the controller's pods/status writes with Ready=False      Request
//	pod-evicted               the controller's pod deletions                            Metadata
//
// The recorded controller is the users of Options.ControllerUsers
// (DefaultControllerUsers). A patch's taints are the whole new list (the
// node lifecycle controller sends spec.taints whole, PatchNodeTaints); a
// taint's time is its timeAdded. Only events at stage ResponseComplete
// (or without a stage) with a 2xx code play a part.
//
// # The policy: given, guessed, assumed
//
// A Policy's values are given (Set: the caller's, always winning),
// guessed (Guess: from the log, with a reason; PolicyValue.Source and
// Reason) or assumed (v1.37.2's defaults). Inventory gathers the evidence
// in its one pass (History.Guess, a PolicyGuess); PolicyGuess.Apply sets
// it on the flags a Policy does not give:
//
//   - kube-controller-manager's command line, from a pod create or update
//     in kube-system at level Request (kubeadm's static pod, mirrored by
//     the kubelet) named kube-controller-manager* or running it: each flag
//     on it, and each flag absent from it at its default as observed. The
//     latest created pod wins; the reason names pods that disagree. At
//     most 512 arguments of 4 KiB are examined; values that cannot be read
//     are ignored and named (PolicyGuess.Evidence).
//   - timing, weaker, only for flags no command line settled:
//     --node-monitor-grace-period from the delays between each node's last
//     heartbeat and the recorded controller's Ready=Unknown write (the
//     shortest, rounded down: an upper bound, with its range and node
//     count; none when the delays cannot come from one grace period); the
//     Lease circuit breaker from the controller's Lease GETs (on), or their
//     absence while its Lease reads are logged and it wrote a node Unknown
//     within a given grace period of its Lease renewal (off);
//     --node-eviction-rate (or the secondary rate) from the regular
//     spacing of one zone's queued NoExecute taints.
//
// PolicyGuess.Lines says, flag by flag, what the guess is or why there is
// none; the doctor lists them (Doctor.Policy).
//
// # What is modelled (History.Doctor lists it with the log's numbers)
//
//   - Watch delivery: the controller's caches see each write at its
//     stageTimestamp, except during the stalls given
//     (ReplayOptions.LeaseWatchStalls, as policysim's lease-watch-stall:
//     monitortest.LeaseStall; NodeWatchStalls: the Node cache frozen the
//     same way, its Node events held back). During a stall the Lease
//     circuit breaker's live reads see the kubelets' writes, with
//     resourceVersions that tell the cache is behind. The stalls may be
//     derived from an informer recording (InformerStalls: exact up to the
//     clocks' offset) or inferred from the controller's lists and watches
//     (InferredStalls: candidates, applied only when the caller says so);
//     ApplyStalls adds them to the options.
//   - Clock skew: none; times are the apiserver's.
//   - Objects older than the log: Ready, with a Lease renewed at the log's
//     first event.
//   - Kubelets facing a replayed write the recording lacks (a node written
//     Unknown, pods written Ready=False, while the recording's controller
//     had the node healthy): at the kubelet's next write in the log within
//     10s (its node status update and pod status sync periods, as
//     policysim's reconcile.go) it posts its Ready status again and puts
//     its pods' Ready back; Run.Notes lists each reaction.
//   - Kubelets' recorded reactions to a recorded write the replay lacks
//     (the mirror case): a kubelet's node status post (nodes/status by
//     system:node:<name>) that puts Ready back (anything but Unknown)
//     within ReplayOptions.KubeletReaction (10s) after the recorded
//     controller wrote the node Ready=Unknown, or its pod status post of
//     Ready=True within it after the recorded controller wrote the pod
//     Ready=False, reacts to that write (the kubelet's first post after
//     it answers it). When the replay has not made the same write (the
//     node is not Unknown in the replay and the replay did not write it
//     Unknown within the reaction time before the post; likewise the
//     pod's Ready=False), the counterfactual kubelet would not have posted
//     then: the post is not fed to the replay (no heartbeat, no status
//     change, no trigger for the replay's own modelled reactions; the
//     kubelet's Lease renewals are periodic and stay). Each is a Note of
//     kind NoteReactionDropped; the report counts them; Facts.
//     ReactionNodePosts and ReactionPodPosts (the doctor's list) count
//     the candidates in the log. ReplayOptions.KeepRecordedReactions
//     (-keep-reactions) feeds them as any post. The recording's view of
//     the node still follows the post (the node healthy again), so a
//     later replayed Unknown write is one the recording lacks and the
//     kubelet reacts to it as above.
//   - Monitor passes run every --node-monitor-period from the log's first
//     event plus ReplayOptions.Phase: the real controller's phase is
//     unknown, Phases measures how much it matters.
//   - Pods without their own not-ready/unreachable tolerations get the
//     admission plugin's defaults (300s).
//   - Nodes created in the log start with their create's taints and the
//     not-ready:NoSchedule taint of the NodeTaint admission plugin.
//   - A pod whose node the log never names (older than the log, only
//     patched) is placed on the node the recorded controller wrote Unknown
//     within the second before it marked the pod Ready=False, when that
//     node is the only one (PodInfo.NodeInferred; the doctor counts them).
//
// # Time model
//
// The replay's t=0 is History.First, the first event that plays a part. At
// every instant, in this order: the log's writes of that instant apply and
// the kubelets react; stalls begin or end; the monitor pass runs (at
// First+Phase+k×period; from ReplayOptions.ControllerStart+Phase when the
// controller started after the log began); the taint and eviction passes
// run (at multiples of 100ms from First, when Monitor.NextDeadline says
// they have work, never before ControllerStart). The replay ends at
// History.Last, or at ReplayOptions.End when later. No clock is read and no goroutine started:
// every instant comes from the log or from the loop's arithmetic on it.
//
// # Determinism
//
// The Monitor runs with one worker; decisions are sorted by time, kind and
// object; reports hold no map order. Two runs of a log give the same
// bytes at any GOMAXPROCS (TestDeterministic).
//
// # Bounds
//
// Limits bound the nodes, pods, decisions, a body's bytes, labels and
// taints; going over one is an error wrapping ErrLimit that names the limit
// and its flag. A body that cannot be decoded is counted (Facts.BadBodies)
// and the event used without it. Sweeps run at most MaxSweepRuns replays.
//
// # Simplifications
//
//   - Node writes by others (cordons, user taints) are not replayed.
//   - A pod deletion by someone else after the recorded controller deleted
//     the pod (the kubelet's or the pod garbage collector's final
//     deletion) is the recorded eviction's consequence and is not
//     replayed; one before it is.
//   - A kubelet's status post without a body (level Metadata) keeps its
//     last reported Ready status (True at first).
//   - Taint timeAdded has one-second precision in the API: recorded
//     taint times are whole seconds.
//   - The first recorded node-unknown of a node is matched with the first
//     replayed one, the second with the second, and so on.
package incident

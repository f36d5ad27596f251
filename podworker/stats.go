package podworker

import "strconv"

// ConfigState classifies a record for the kubelet_working_pods gauge: is its
// pod in the desired config, an orphan, or known only from the runtime?
type ConfigState uint8

const (
	// ConfigDesired: the pod has config and was desired at the last
	// SyncKnownPods (or arrived after it).
	ConfigDesired ConfigState = 1 + iota
	// ConfigOrphan: the pod has config but was not desired at the last
	// SyncKnownPods.
	ConfigOrphan
	// ConfigRuntimeOnly: no config pod is known, only a RunningPod.
	ConfigRuntimeOnly
)

// String returns the upstream label value: "desired", "orphan" or
// "runtime_only".
func (c ConfigState) String() string {
	switch c {
	case ConfigDesired:
		return "desired"
	case ConfigOrphan:
		return "orphan"
	case ConfigRuntimeOnly:
		return "runtime_only"
	}
	return "ConfigState(" + strconv.Itoa(int(c)) + ")"
}

// WorkingCount is one series of the kubelet_working_pods gauge.
type WorkingCount struct {
	Lifecycle WorkType
	Config    ConfigState
	// Static is meaningful only with config: upstream labels a runtime-only
	// pod's static state "unknown" (see StaticLabel).
	Static bool
	Count  int
}

// StaticLabel returns the upstream "static" label value: "true", "" or,
// for ConfigRuntimeOnly, "unknown".
func (c WorkingCount) StaticLabel() string {
	switch {
	case c.Config == ConfigRuntimeOnly:
		return "unknown"
	case c.Static:
		return "true"
	}
	return ""
}

// Stats are the kubelet pod metrics added by upstream #113145
// (HandlePodCleanups in pkg/kubelet/kubelet_pods.go), as values the caller publishes, plus a few machine counters.
//
// Upstream computes the desired, active and mirror gauges from the kubelet's
// pod manager. The workers only know the desired set passed to the last
// SyncKnownPods, so these three describe that set as evaluated at that call:
// Active applies upstream's filterOutInactivePods using the pod objects'
// phase (not the status manager's), and MirrorPods counts the active static
// pods, one mirror pod each. The working gauge and the counters the machine
// knows exactly, from its own records and from the updates it received.
type Stats struct {
	// DesiredPods and DesiredStaticPods: kubelet_desired_pods{static=""} and
	// {static="true"}.
	DesiredPods, DesiredStaticPods int
	// ActivePods and ActiveStaticPods: kubelet_active_pods.
	ActivePods, ActiveStaticPods int
	// MirrorPods: kubelet_mirror_pods.
	MirrorPods int
	// Working: kubelet_working_pods, every valid combination of lifecycle,
	// config and static, zeros included, in a fixed order (lifecycle sync,
	// terminating, terminated; config desired, orphan, runtime_only; static
	// false before true). Counted from the records at the time of the call,
	// so the caller's restarts and runtime kills after SyncKnownPods are
	// included, as upstream includes them. Finished records count as
	// terminated.
	Working []WorkingCount
	// RestartedPods and RestartedStaticPods: kubelet_restarted_pods_total —
	// TypeCreate updates for an active desired pod that the last
	// SyncKnownPods left without a record (UID reuse), since New.
	RestartedPods, RestartedStaticPods uint64
	// OrphanedRuntimePods: kubelet_orphaned_runtime_pods_total — runtime-only
	// kills for a UID without a record, or for a finished one (#139833),
	// since New.
	OrphanedRuntimePods uint64

	// Known is the number of records; InFlight of steps handed out and not
	// completed; Finished of finished records; WaitingStatic of static pods
	// waiting for their turn.
	Known, InFlight, Finished, WaitingStatic int
	// StaleCompletions counts Complete calls ignored because the step was
	// unknown, already completed, or superseded.
	StaleCompletions uint64
}

// Stats returns the current metrics. O(n); it allocates the Working slice.
func (w *Workers) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	// counts[lifecycle][config][static]
	var counts [3][3][2]int
	s := Stats{
		DesiredPods:         w.desired.desired - w.desired.desiredStatic,
		DesiredStaticPods:   w.desired.desiredStatic,
		ActivePods:          w.desired.active - w.desired.activeStatic,
		ActiveStaticPods:    w.desired.activeStatic,
		MirrorPods:          w.desired.activeStatic,
		RestartedPods:       w.restarted - w.restartedStatic,
		RestartedStaticPods: w.restartedStatic,
		OrphanedRuntimePods: w.orphanedRuntime,
		Known:               len(w.pods),
		StaleCompletions:    w.stale,
	}
	for _, r := range w.pods {
		hasConfig, isStatic := r.config()
		config, static := ConfigDesired, 0
		switch {
		case !hasConfig:
			config = ConfigRuntimeOnly
		case r.orphan:
			config = ConfigOrphan
		}
		if isStatic {
			static = 1
		}
		counts[r.workType()-1][config-1][static]++
		if r.inFlight {
			s.InFlight++
		}
		if r.finished {
			s.Finished++
		}
	}
	for _, q := range w.waitingStatic {
		s.WaitingStatic += len(q)
	}
	s.Working = make([]WorkingCount, 0, 15)
	for lc := SyncWork; lc <= TerminatedWork; lc++ {
		for cs := ConfigDesired; cs <= ConfigRuntimeOnly; cs++ {
			for st := range 2 {
				if cs == ConfigRuntimeOnly && st == 1 {
					continue
				}
				s.Working = append(s.Working, WorkingCount{Lifecycle: lc, Config: cs, Static: st == 1,
					Count: counts[lc-1][cs-1][st]})
			}
		}
	}
	return s
}

// WorkingPods returns the Working count for one combination (static is
// ignored for ConfigRuntimeOnly).
func (s Stats) WorkingPods(lifecycle WorkType, config ConfigState, static bool) int {
	for _, c := range s.Working {
		if c.Lifecycle == lifecycle && c.Config == config && (config == ConfigRuntimeOnly || c.Static == static) {
			return c.Count
		}
	}
	return 0
}

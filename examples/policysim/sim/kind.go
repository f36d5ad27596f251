package sim

import "github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"

// Kind is the kind of an Entry: one of the Monitor's event kinds (the
// same strings as monitor.Kind, which this package's constants mirror so
// that a caller needs no other import) or one the simulator adds for the
// scenario's events. The strings are those of the text timeline and the
// JSON "kind" field.
type Kind string

// The Monitor's kinds (monitor.Kind).
const (
	KindNodeUnknown       = Kind(monitor.KindNodeUnknown)       // the Monitor wrote Ready=Unknown
	KindNodeNotReady      = Kind(monitor.KindNodeNotReady)      // the kubelet reported Ready=False
	KindNodeReady         = Kind(monitor.KindNodeReady)         // Ready=True again after being not ready
	KindTaintAdded        = Kind(monitor.KindTaintAdded)        // a taint the Monitor manages was added (Entry.Taint)
	KindTaintRemoved      = Kind(monitor.KindTaintRemoved)      // ... or removed
	KindPodsNotReady      = Kind(monitor.KindPodsNotReady)      // the node's pods were marked Ready=False
	KindPodEvicted        = Kind(monitor.KindPodEvicted)        // a pod was deleted (Entry.Pod)
	KindZoneState         = Kind(monitor.KindZoneState)         // a zone changed state (Entry.State, Entry.Rate)
	KindDisruptionMode    = Kind(monitor.KindDisruptionMode)    // full disruption entered or exited (Entry.Entered)
	KindWriteFailed       = Kind(monitor.KindWriteFailed)       // an API write failed (never in a simulation)
	KindNodeEvicting      = Kind(monitor.KindNodeEvicting)      // legacy mode: the node's pods are queued for deletion
	KindEvictionCancelled = Kind(monitor.KindEvictionCancelled) // a scheduled eviction was cancelled (not reported by Run)
	KindHealthHeld        = Kind(monitor.KindHealthHeld)        // a monitor pass held: the Lease cache is behind (Lease circuit breaker)
)

// The kinds the simulator adds for the scenario's events.
const (
	KindKubeletStopped  Kind = "kubelet-stopped"   // the kubelet stopped heartbeating
	KindKubeletStarted  Kind = "kubelet-started"   // the kubelet runs again and reports Ready
	KindKubeletNotReady Kind = "kubelet-not-ready" // the kubelet reports Ready=False
	// The kubelet undoing the controller's writes (Kubelet.Reconcile).
	KindKubeletReposted  Kind = "kubelet-reposted"   // it found the controller's Ready=Unknown and posted its status again
	KindKubeletPodsReady Kind = "kubelet-pods-ready" // its status manager put its pods' Ready=True back
	// The controller's Lease cache (scenario actions lease-watch-stall and
	// lease-watch-resume).
	KindLeaseWatchStalled Kind = "lease-watch-stalled" // the controller's Lease cache froze
	KindLeaseWatchResumed Kind = "lease-watch-resumed" // it caught up
)

// The device taint eviction controller's kinds (taints.DeviceEvictor, run
// beside the Monitor in scenarios with devices) and the device actions'.
// Entry.Driver and Entry.Device name the DRA driver and the device
// (driver/pool/device) where there is one.
const (
	// Scenario events.
	KindDeviceTaint       Kind = "device-taint"        // a driver tainted a device (its ResourceSlice republished)
	KindDeviceUntaint     Kind = "device-untaint"      // a driver removed its taint from a device
	KindDeviceRule        Kind = "device-rule"         // a DeviceTaintRule was created or changed
	KindDeviceRuleDeleted Kind = "device-rule-deleted" // a DeviceTaintRule was deleted
	KindDeviceHoldRelease Kind = "device-hold-release" // an operator released a driver's hold (DeviceEvictor.ReleaseHold)
	// The controller's decisions.
	KindDevicePodEvicted        Kind = "device-pod-evicted"        // a pod was deleted for a device taint (Entry.Pod)
	KindDeviceEvictionCancelled Kind = "device-eviction-cancelled" // a scheduled device eviction was cancelled ("Cancelling deletion")
	KindDeviceRuleStatus        Kind = "device-rule-status"        // a DeviceTaintRule's EvictionInProgress condition was written
	KindDeviceHold              Kind = "device-hold"               // a driver's blast-radius breaker changed state (Entry.State)
	KindDeviceWarning           Kind = "device-warning"            // a TimeAdded or selector hazard (DeviceEvictor.AppendWarnings)
)

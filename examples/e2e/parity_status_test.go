package e2e

import (
	"slices"
	"strings"

	"github.com/kubelifecycle/lifecycle/examples/e2e/parity"
)

// statusWritesByResult makes the status writes of a trace comparable by
// what they changed, whatever their verb: upstream PUTs the whole status
// of a node (tryUpdateNodeHealth) and of a pod (MarkPodsNotReady in
// pkg/controller/util/node/controller_utils.go) and patches a pod's
// DisruptionTarget with a two-way merge patch (PatchPodStatus in
// pkg/util/pod/pod.go); ours patches only the conditions it changes,
// because its informer cache trims the rest of the status
// (examples/nodecontroller/controller/trim.go) and a PUT would wipe it.
// A status write's verb becomes "status" followed by the condition types it
// changed ("status[Ready]", "status[DisruptionTarget]"), so that the writes
// of one kind pair with each other on both sides even when ours land in
// another order; the changed fields and times are still compared, the
// request shape is not.
func statusWritesByResult(tr parity.Trace) parity.Trace {
	for _, ws := range [][]parity.Write{tr.Writes, tr.Failed} {
		for i := range ws {
			w := &ws[i]
			if !strings.HasSuffix(w.Object, "/status") || (w.Verb != "update" && w.Verb != "patch") {
				continue
			}
			var types []string
			for p := range w.Changes {
				if rest, ok := strings.CutPrefix(p, "status.conditions["); ok {
					if t, _, ok := strings.Cut(rest, "]"); ok && !slices.Contains(types, t) {
						types = append(types, t)
					}
				}
			}
			slices.Sort(types)
			w.Verb, w.Request = "status["+strings.Join(types, ",")+"]", nil
		}
	}
	return tr
}

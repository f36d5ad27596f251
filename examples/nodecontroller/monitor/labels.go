package monitor

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// The deprecated beta labels that upstream's node lifecycle controller keeps
// equal to their stable counterparts (labelReconcileInfo in
// pkg/controller/nodelifecycle/node_lifecycle_controller.go at v1.37.2).
const (
	BetaLabelOS   = "beta.kubernetes.io/os"
	BetaLabelArch = "beta.kubernetes.io/arch"
)

// NodeLabelWriter is a Cluster that can also write node labels. When the
// Cluster given to New implements it, NodeChanged reconciles the deprecated
// beta OS and architecture labels as upstream does (ReconcileLabels); a
// Cluster without it leaves labels alone, as before it existed.
type NodeLabelWriter interface {
	// UpdateNodeLabels reads the node, asks labels what to set on it, and
	// when that is not empty writes it with optimistic concurrency,
	// re-reading and asking again on a conflict. Other labels are kept.
	UpdateNodeLabels(ctx context.Context, name string, labels func(*v1.Node) map[string]string) error
}

// ReconcileLabels returns the labels to set on node so that
// beta.kubernetes.io/os and beta.kubernetes.io/arch follow kubernetes.io/os
// and kubernetes.io/arch: added when missing, corrected when different. A
// node without the stable label is left alone, as upstream's
// reconcileNodeLabels does. It returns nil, without allocating, when there
// is nothing to do.
func ReconcileLabels(node *v1.Node) map[string]string {
	if node == nil {
		return nil
	}
	var out map[string]string
	for _, r := range [...]struct{ stable, beta string }{
		{v1.LabelOSStable, BetaLabelOS},
		{v1.LabelArchStable, BetaLabelArch},
	} {
		want, ok := node.Labels[r.stable]
		if !ok {
			continue
		}
		if got, ok := node.Labels[r.beta]; ok && got == want {
			continue
		}
		if out == nil {
			out = make(map[string]string, 2)
		}
		out[r.beta] = want
	}
	return out
}

// reconcileLabels writes the labels ReconcileLabels asks for, when the
// Cluster can (upstream reconcileNodeLabels, called by
// doNodeProcessingPassWorker after the NoSchedule taints).
func (m *Monitor) reconcileLabels(ctx context.Context, now time.Time, node *v1.Node) {
	lw, ok := m.cluster.(NodeLabelWriter)
	if !ok || ReconcileLabels(node) == nil {
		return
	}
	if err := lw.UpdateNodeLabels(ctx, node.Name, ReconcileLabels); err != nil && !apierrors.IsNotFound(err) {
		m.emit(now, KindWriteFailed, node.Name, "", "node labels: "+err.Error())
	}
}

package agent

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kubelifecycle/lifecycle/podworker"
)

// Limits on the static pod directory.
const (
	// MaxStaticPods bounds the manifests read from StaticPodPath.
	MaxStaticPods = 100
	// MaxManifestBytes bounds one manifest file.
	MaxManifestBytes = 1 << 20
)

// staticSource is the file config source (upstream
// pkg/kubelet/config/file.go): the pods of the manifest directory, bound
// to the agent's first node.
type staticSource struct {
	dir string

	mu   sync.Mutex
	byID map[types.UID]*v1.Pod
}

func newStaticSource(dir string) *staticSource {
	return &staticSource{dir: dir, byID: map[types.UID]*v1.Pod{}}
}

func (s *staticSource) pods() []*v1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*v1.Pod, 0, len(s.byID))
	for _, p := range s.byID {
		out = append(out, p)
	}
	return out
}

// ReadManifests reads the static pods of dir for node, as the kubelet's
// file source does (applyDefaults in pkg/kubelet/config/common.go at
// v1.37.2): the name gets "-<node>", the namespace defaults to "default",
// spec.nodeName is the node, a missing UID is a hash that includes the
// node and the path, the annotations kubernetes.io/config.source=file and
// kubernetes.io/config.hash=<UID> are set, and a missing grace period is
// the API default (30 s). Files whose name starts with a dot are ignored.
// Unlike upstream, the UID hashes the file's bytes with MD5 (v1.37.2
// hashes the decoded pod with FNV-128a, so a kubelet generates another
// UID for the same file), and no NoExecute toleration is added (v1.37.2
// gives every file pod one with operator Exists). It fails on the first unreadable or invalid file, on a
// file above MaxManifestBytes and past MaxStaticPods manifests.
func ReadManifests(dir, node string) ([]*v1.Pod, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("agent: static pods: %w", err)
	}
	var out []*v1.Pod
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if len(out) == MaxStaticPods {
			return nil, fmt.Errorf("agent: static pods: more than %d manifests in %s", MaxStaticPods, dir)
		}
		path := filepath.Join(dir, e.Name())
		info, err := e.Info()
		if err != nil {
			return nil, fmt.Errorf("agent: static pods: %w", err)
		}
		if info.Size() > MaxManifestBytes {
			return nil, fmt.Errorf("agent: static pods: %s is %d bytes, more than the limit of %d", path, info.Size(), MaxManifestBytes)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("agent: static pods: %w", err)
		}
		var p v1.Pod
		if err := yaml.UnmarshalStrict(data, &p); err != nil {
			return nil, fmt.Errorf("agent: static pods: %s: %w", path, err)
		}
		if p.Name == "" {
			return nil, fmt.Errorf("agent: static pods: %s: no metadata.name", path)
		}
		if p.UID == "" {
			h := md5.New()
			h.Write(data)
			fmt.Fprintf(h, "host:%s", node)
			fmt.Fprintf(h, "file:%s", path)
			p.UID = types.UID(hex.EncodeToString(h.Sum(nil)))
		}
		p.Name += "-" + node
		if p.Namespace == "" {
			p.Namespace = metav1.NamespaceDefault
		}
		p.Spec.NodeName = node
		// The API defaults that matter here (the file source decodes with
		// defaulting): the grace period and the restart policy.
		if p.Spec.TerminationGracePeriodSeconds == nil {
			p.Spec.TerminationGracePeriodSeconds = ptr.To(int64(v1.DefaultTerminationGracePeriodSeconds))
		}
		if p.Spec.RestartPolicy == "" {
			p.Spec.RestartPolicy = v1.RestartPolicyAlways
		}
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[podworker.ConfigSourceAnnotation] = "file"
		p.Annotations[ConfigHashAnnotation] = string(p.UID)
		out = append(out, &p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UID < out[j].UID })
	return out, nil
}

// syncStatic reads the manifest directory and sends the differences to the
// workers: Create for a new UID, Update for a changed one, Kill for a
// removed one (upstream HandlePodAdditions, HandlePodUpdates,
// HandlePodRemoves). A directory that cannot be read changes nothing.
func (a *Agent) syncStatic(ctx context.Context) {
	logger := klog.FromContext(ctx)
	pods, err := ReadManifests(a.static.dir, a.cfg.Nodes[0].Name)
	if err != nil {
		logger.Error(err, "Unable to read static pods")
		return
	}
	a.configMu.Lock()
	defer a.configMu.Unlock()
	s := a.static
	s.mu.Lock()
	old := s.byID
	s.byID = make(map[types.UID]*v1.Pod, len(pods))
	for _, p := range pods {
		s.byID[p.UID] = p
	}
	s.mu.Unlock()
	for _, p := range pods {
		prev, ok := old[p.UID]
		switch {
		case !ok:
			r := a.update(podworker.UpdateOptions{Type: podworker.TypeCreate, Pod: p})
			logger.V(2).Info("Static pod added", "pod", klog.KObj(p), "uid", p.UID, "outcome", r.Outcome)
		case !sameManifest(prev, p):
			a.update(podworker.UpdateOptions{Type: podworker.TypeUpdate, Pod: p})
		default:
			s.mu.Lock()
			s.byID[p.UID] = prev // keep the object the workers hold
			s.mu.Unlock()
		}
	}
	for uid, p := range old {
		if _, ok := s.byID[uid]; !ok {
			r := a.update(podworker.UpdateOptions{Type: podworker.TypeKill, Pod: p})
			logger.V(2).Info("Static pod removed", "pod", klog.KObj(p), "uid", uid, "outcome", r.Outcome)
		}
	}
}

// SyncStaticPods reads the manifest directory now (instead of waiting for
// FileCheckFrequency). It does nothing without Config.StaticPodPath.
func (a *Agent) SyncStaticPods(ctx context.Context) {
	if a.static != nil {
		a.syncStatic(ctx)
	}
}

func sameManifest(a, b *v1.Pod) bool {
	x, _ := yaml.Marshal(a)
	y, _ := yaml.Marshal(b)
	return string(x) == string(y)
}

// mirrorOf returns the mirror pod of the static pod p from the informer
// cache (any hash), or nil.
func (a *Agent) mirrorOf(p *v1.Pod) *v1.Pod {
	if !podworker.IsStaticPod(p) {
		return nil
	}
	obj, ok, _ := a.informer.GetIndexer().GetByKey(p.Namespace + "/" + p.Name)
	if !ok {
		return nil
	}
	if m := obj.(*v1.Pod); isMirror(m) {
		return m
	}
	return nil
}

// ensureMirror makes sure the static pod p has a current mirror pod, as
// upstream SyncPod does: a mirror with another hash, being deleted, or left
// terminal by an earlier instance is deleted (grace 0, UID precondition)
// and a new one is created: a copy of p with the annotation
// kubernetes.io/config.mirror=<hash> and the Node as owner.
func (a *Agent) ensureMirror(ctx context.Context, p *v1.Pod) error {
	pods := a.client.CoreV1().Pods(p.Namespace)
	hash := p.Annotations[ConfigHashAnnotation]
	m := a.mirrorOf(p)
	if m != nil && m.Annotations[MirrorAnnotation] == hash && m.DeletionTimestamp == nil && !terminal(m) {
		return nil
	}
	if m != nil {
		uid := m.UID
		err := pods.Delete(ctx, m.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64), Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("agent: delete mirror pod %s/%s: %w", m.Namespace, m.Name, err)
		}
	}
	mirror := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.Labels,
		Annotations: map[string]string{}}, Spec: *p.Spec.DeepCopy()}
	for k, v := range p.Annotations {
		mirror.Annotations[k] = v
	}
	mirror.Annotations[MirrorAnnotation] = hash
	if uid := a.nodeUID(p.Spec.NodeName); uid != "" {
		mirror.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: p.Spec.NodeName, UID: uid, Controller: ptr.To(true)}}
	}
	created, err := pods.Create(ctx, mirror, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("agent: mirror pod %s/%s: the old one is not gone yet", p.Namespace, p.Name)
	}
	if err != nil {
		return fmt.Errorf("agent: create mirror pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	// The informer may lag: make the new mirror visible to the status write
	// that follows.
	_ = a.informer.GetIndexer().Update(created)
	return nil
}

// cleanupMirrors deletes the mirror pods on the agent's nodes whose static
// pod is neither desired nor still terminating (upstream HandlePodCleanups,
// deleteOrphanedMirrorPods).
func (a *Agent) cleanupMirrors(ctx context.Context) {
	want := map[string]bool{}
	for _, p := range a.static.pods() {
		want[podworker.FullName(p.Name, p.Namespace)] = true
	}
	for name := range a.nodes {
		objs, _ := a.informer.GetIndexer().ByIndex(nodeIndex, name)
		for _, o := range objs {
			m := o.(*v1.Pod)
			full := podworker.FullName(m.Name, m.Namespace)
			if !isMirror(m) || want[full] || a.workers.IsPodForMirrorPodTerminatingByFullName(full) || m.DeletionTimestamp != nil {
				continue
			}
			uid := m.UID
			err := a.client.CoreV1().Pods(m.Namespace).Delete(ctx, m.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64),
				Preconditions: &metav1.Preconditions{UID: &uid}})
			if err != nil && !apierrors.IsNotFound(err) {
				klog.FromContext(ctx).V(2).Info("Unable to delete orphaned mirror pod", "pod", klog.KObj(m), "err", err)
			}
		}
	}
}

package audit

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// policy is the subset of audit.k8s.io/v1 Policy that policy.yaml uses.
type policy struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	OmitStages []string     `json:"omitStages"`
	Rules      []policyRule `json:"rules"`
}

type policyRule struct {
	Level      string          `json:"level"`
	Users      []string        `json:"users,omitempty"`
	UserGroups []string        `json:"userGroups,omitempty"`
	Verbs      []string        `json:"verbs,omitempty"`
	Resources  []groupResource `json:"resources,omitempty"`
	Namespaces []string        `json:"namespaces,omitempty"`
}

type groupResource struct {
	Group     string   `json:"group"`
	Resources []string `json:"resources"`
}

var controllerUsers = []string{"system:serviceaccount:kube-system:node-controller", "system:kube-controller-manager"}

func TestPolicy(t *testing.T) {
	var p policy
	require.NoError(t, yaml.UnmarshalStrict(Policy, &p), "Policy does not parse strictly")
	assert.Equal(t, "audit.k8s.io/v1", p.APIVersion)
	assert.Equal(t, "Policy", p.Kind)
	assert.Equal(t, []string{"RequestReceived"}, p.OmitStages)
	want := []policyRule{
		{Level: "Metadata", UserGroups: []string{"system:nodes"}, Verbs: []string{"update", "patch"},
			Resources: []groupResource{{Group: "coordination.k8s.io", Resources: []string{"leases"}}}, Namespaces: []string{"kube-node-lease"}},
		{Level: "Request", UserGroups: []string{"system:nodes"}, Verbs: []string{"create", "update", "patch"},
			Resources: []groupResource{{Group: "", Resources: []string{"nodes", "nodes/status"}}}},
		{Level: "Request", Verbs: []string{"create"},
			Resources: []groupResource{{Group: "", Resources: []string{"pods", "pods/binding"}}}},
		{Level: "RequestResponse", Users: []string{controllerUsers[0], "system:serviceaccount:kube-system:taint-eviction-controller", controllerUsers[1]}, Verbs: []string{"create", "update", "patch", "delete"},
			Resources: []groupResource{{Group: "", Resources: []string{"nodes", "nodes/status", "pods", "pods/status", "events"}}, {Group: "events.k8s.io", Resources: []string{"events"}}}},
		{Level: "Metadata", Users: controllerUsers, Verbs: []string{"get", "list", "watch"},
			Resources: []groupResource{{Group: "", Resources: []string{"nodes"}}, {Group: "coordination.k8s.io", Resources: []string{"leases"}}}},
		{Level: "Request", Verbs: []string{"create", "delete"},
			Resources: []groupResource{{Group: "", Resources: []string{"nodes"}}}},
		{Level: "None"},
	}
	require.Len(t, p.Rules, len(want))
	for i := range want {
		assert.Equal(t, want[i], p.Rules[i], "rule %d", i)
	}
}

// TestPolicyFirstMatch checks the rule order with a tiny evaluator of the
// first matching rule (audit policy semantics), on the requests the replay
// needs.
func TestPolicyFirstMatch(t *testing.T) {
	var p policy
	require.NoError(t, yaml.Unmarshal(Policy, &p))
	level := func(user string, groups []string, verb, group, resource, ns string) string {
		for _, r := range p.Rules {
			if len(r.Users) > 0 && !contains(r.Users, user) {
				continue
			}
			if len(r.UserGroups) > 0 && !containsAny(r.UserGroups, groups) {
				continue
			}
			if len(r.Verbs) > 0 && !contains(r.Verbs, verb) {
				continue
			}
			if len(r.Namespaces) > 0 && !contains(r.Namespaces, ns) {
				continue
			}
			if len(r.Resources) > 0 {
				ok := false
				for _, gr := range r.Resources {
					ok = ok || (gr.Group == group && contains(gr.Resources, resource))
				}
				if !ok {
					continue
				}
			}
			return r.Level
		}
		return "None"
	}
	nodes := []string{"system:nodes", "system:authenticated"}
	for _, tc := range []struct {
		user                            string
		groups                          []string
		verb, group, resource, ns, want string
	}{
		{"system:node:n1", nodes, "update", "coordination.k8s.io", "leases", "kube-node-lease", "Metadata"},
		{"system:node:n1", nodes, "patch", "", "nodes/status", "", "Request"},
		{"system:node:n1", nodes, "create", "", "nodes", "", "Request"},
		{"system:node:n1", nodes, "get", "", "nodes", "", "None"},
		{"system:serviceaccount:kube-system:replicaset-controller", nil, "create", "", "pods", "default", "Request"},
		{"system:kube-scheduler", nil, "create", "", "pods/binding", "default", "Request"},
		{"system:serviceaccount:kube-system:node-controller", nil, "patch", "", "nodes", "", "RequestResponse"},
		{"system:serviceaccount:kube-system:node-controller", nil, "delete", "", "pods", "default", "RequestResponse"},
		{"system:serviceaccount:kube-system:taint-eviction-controller", nil, "delete", "", "pods", "default", "RequestResponse"},
		{"system:serviceaccount:kube-system:taint-eviction-controller", nil, "list", "", "nodes", "", "None"},
		{"system:kube-controller-manager", nil, "create", "events.k8s.io", "events", "default", "RequestResponse"},
		{"system:kube-controller-manager", nil, "watch", "coordination.k8s.io", "leases", "kube-node-lease", "Metadata"},
		{"system:serviceaccount:kube-system:node-controller", nil, "list", "", "nodes", "", "Metadata"},
		{"admin", []string{"system:masters"}, "delete", "", "nodes", "", "Request"},
		{"admin", []string{"system:masters"}, "get", "", "secrets", "default", "None"},
		{"system:serviceaccount:kube-system:leader-election", nil, "update", "coordination.k8s.io", "leases", "kube-system", "None"},
	} {
		if got := level(tc.user, tc.groups, tc.verb, tc.group, tc.resource, tc.ns); got != tc.want {
			t.Errorf("level(%s %s %s/%s in %q) = %s, want %s", tc.user, tc.verb, tc.group, tc.resource, tc.ns, got, tc.want)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func containsAny(list, ss []string) bool {
	for _, s := range ss {
		if contains(list, s) {
			return true
		}
	}
	return false
}

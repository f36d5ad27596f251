package zonestate

import v1 "k8s.io/api/core/v1"

// keySeparator joins region and zone in a key. The NUL byte means a colon in
// a region or zone name cannot make two different pairs collide.
const keySeparator = ":\x00:"

// Key returns the zone key of node, as upstream GetZoneKey (component-helpers
// node/topology):
//
//   - the zone is the value of failure-domain.beta.kubernetes.io/zone when
//     that label is present, even if its value is empty; otherwise the value
//     of topology.kubernetes.io/zone, or "" when absent;
//   - the region follows the same rule with the two region labels;
//   - when both region and zone are "" the key is "" (a cluster whose nodes
//     carry no topology labels is one zone);
//   - otherwise the key is region + ":\x00:" + zone.
//
// A nil node or a node without labels has key "". Key does not modify node.
// It allocates only to build a non-empty key.
func Key(node *v1.Node) string {
	region, zone := KeyLabels(node)
	if region == "" && zone == "" {
		return ""
	}
	return region + keySeparator + zone
}

// KeyLabels returns the region and zone label values Key builds the key
// from, by the same rules, without building it: a caller can compare them
// to tell whether a node's key changed without allocating. A nil node or a
// node without labels gives ("", "").
func KeyLabels(node *v1.Node) (region, zone string) {
	if node == nil {
		return "", ""
	}
	labels := node.Labels
	zone, ok := labels[v1.LabelFailureDomainBetaZone]
	if !ok {
		zone = labels[v1.LabelTopologyZone]
	}
	region, ok = labels[v1.LabelFailureDomainBetaRegion]
	if !ok {
		region = labels[v1.LabelTopologyRegion]
	}
	return region, zone
}

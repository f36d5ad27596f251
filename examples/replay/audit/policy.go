package audit

import _ "embed" // for Policy

// Policy is the shipped minimal audit policy (policy.yaml) for replaying
// node lifecycle decisions: kubelet Lease renewals at Metadata, kubelet
// node and node status writes at Request, pod creation and binding at
// Request, the writes of the node lifecycle and taint eviction controllers
// at RequestResponse and the node lifecycle controller's node and lease
// reads at Metadata, node creation and deletion at Request, and nothing
// else. RequestReceived is omitted. See the package documentation for what each
// level lets the replay rebuild and how to install it.
//
//go:embed policy.yaml
var Policy []byte

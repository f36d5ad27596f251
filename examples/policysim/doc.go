// Command policysim replays node outages in virtual time through the node
// lifecycle controller's decision loop, examples/nodecontroller/monitor: the
// same Monitor the real controller (examples/nodecontroller) runs against an
// API server, here run against a virtual cluster on a virtual clock. Its
// timeline is therefore the controller's behaviour: nodes going Unknown, zone
// states and rates, NoExecute taints, pods marked not ready and evicted; and,
// in scenarios with DRA devices, the device taint eviction controller's
// (taints.DeviceEvictor) beside it.
//
//	go run ./examples/policysim                       # the default scenario, offline-node
//	go run ./examples/policysim -list                 # the embedded scenarios
//	go run ./examples/policysim -run zone-partial     # another one
//	go run ./examples/policysim -scenario my.yaml -svg out.svg -format json
//	go run ./examples/policysim -legacy-node-eviction # the pre-1.27 eviction mode
//	go run ./examples/policysim -compare              # both modes side by side
//	go run ./examples/policysim -sweep nodeEvictionRate=0.05,0.1,0.2
//	go run ./examples/policysim -sweep nodeEvictionRate=0.05,0.1 -sweep reconcile=false,true  # a grid
//	go run ./examples/policysim -run xid-storm -sweep deviceMaxShare=0,0.05,0.2    # device taints
//
// The simulation itself is the importable package
// examples/policysim/sim (Run, the scenario types, the reports); this
// command is flags over it.
//
// See README.md for the scenario format, the output formats and figures.
package main

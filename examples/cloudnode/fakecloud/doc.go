// Package fakecloud is a fake cloud for examples/cloudnode: an API that
// models scale sets (Cloud) and a k8s.io/cloud-provider InstancesV2
// implementation on it (Provider) that shows how a provider maps its API's
// errors onto nodehealth.ErrInstanceNotFound and nodehealth.ErrParentNotFound.
//
// The scale-set model reproduces the Azure VMSS incident
// (kubernetes/kubernetes#95288): deleting a set removes its instances first
// and the set once empty, after which every question about one of its
// instances fails with "parent not found". Upstream's cloud node lifecycle
// controller (staging/src/k8s.io/cloud-provider/controllers/nodelifecycle/
// node_lifecycle_controller.go, MonitorNodes, at v1.37.2: k8s.io/cloud-provider
// v0.37.2) reads that error as "do not delete" and asks again every monitor
// period, forever.
//
// The API can throttle (429 with a Retry-After) or fail (500) for a period,
// and counts every call by method and result (Cloud.Calls), so the cost of
// a controller's policy can be measured in cloud calls.
package fakecloud

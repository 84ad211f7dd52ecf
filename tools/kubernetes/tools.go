//go:build tools

// The single-node Kubernetes the cluster tests run on (docs/testing.md "The real cluster"): the
// control plane, the kubelet and kubectl, built from the Go module proxy by `make cluster`.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)

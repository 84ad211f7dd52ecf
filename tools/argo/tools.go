//go:build tools

// Package argo only pins the Argo Workflows binaries the cluster tests run; nothing here is
// compiled into the product.
package argo

import (
	_ "github.com/argoproj/argo-workflows/v4/cmd/argoexec"
	_ "github.com/argoproj/argo-workflows/v4/cmd/workflow-controller"
)

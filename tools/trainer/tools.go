//go:build tools

// Package trainer only pins the Kubeflow Trainer controller manager the cluster tests run;
// nothing here is compiled into the product.
package trainer

import _ "github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager"

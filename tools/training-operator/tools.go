//go:build tools

// Package trainingoperator only pins the Training Operator the cluster tests run; nothing here is
// compiled into the product.
package trainingoperator

import _ "github.com/kubeflow/training-operator/cmd/training-operator.v1"

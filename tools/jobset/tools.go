//go:build tools

// Package jobset only pins the JobSet manager the cluster tests run (its main package is the
// module root); nothing here is compiled into the product.
package jobset

import _ "sigs.k8s.io/jobset"

//go:build tools

// Package coredns only pins the DNS server the cluster tests run (its main package is the module
// root); nothing here is compiled into the product.
package coredns

import _ "github.com/coredns/coredns"

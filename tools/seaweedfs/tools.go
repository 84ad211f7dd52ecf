//go:build tools

// Package seaweedfs only pins the SeaweedFS server the tests start; nothing here is compiled
// into the product.
package seaweedfs

import _ "github.com/seaweedfs/seaweedfs/weed"

// Command coredns is the real-cluster tests' cluster DNS (tools/cluster/dns.py): CoreDNS's own
// server (coremain) with only the plugins that file's Corefile names. The release binary links
// all 60-odd plugins and with them the AWS, Azure and Google SDKs, etcd, dnstap and tracing
// clients; compiling those from an empty Go cache took most of CoreDNS's 6 cold minutes, for
// plugins a Corefile of ours never names. A plugin added to the Corefile is added here too
// (CoreDNS refuses a Corefile naming an unknown directive at start-up, so a missing one fails
// the cluster's start, not a test).
package main

import (
	"github.com/coredns/coredns/coremain"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/template"
)

func main() {
	coremain.Run()
}

// The pod sandbox ("pause") image the cluster tests' containerd uses: its images cannot be pulled
// here, and a sandbox needs only a process that holds the pod's namespaces until it is told to
// stop. Built static (CGO_ENABLED=0) and packed into an image by tools/cluster/pause_image.py.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
}

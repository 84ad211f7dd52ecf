"""A real single-node Kubernetes for the cluster tests, made from Debian's packages and the Go
module proxy only (docs/testing.md, "The real cluster"): `python -m tools.cluster up|down|status`,
which `make cluster` and `make cluster-down` call.

    layout        where everything lives (.cluster/, .tools/) and the addresses it uses
    pki           the certificates and kubeconfigs (openssl)
    netns         network namespaces joined to the host by a veth, and processes run inside
    relay         a TCP relay from a listener inside a namespace to a host loopback service
    binary_image  the pod sandbox and Argo executor images, each packed from a static binary
    control_plane containerd, etcd, the API server, controller manager, scheduler, kubelet
    services      CoreDNS and the controllers (JobSet, Trainer, Training Operator, Argo)
    controllers   the controllers' binaries, manifests and flags
    image         the project's image, built with podman on a local debootstrap base
"""

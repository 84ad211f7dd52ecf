# One-command entry points. `make run` installs (idempotently) and runs the whole pipeline on the
# embedded digits; `make test` installs, lints and runs the test suite (what CI's .ci/run calls).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# TFX 1.16 declares Requires-Python <3.11 but runs on 3.11; see docs/install.md. The lock is
# installed by uv (pinned here, installed by pip into the venv first): it downloads the wheels
# side by side and keeps them in its cache (~/.cache/uv), where pip keeps none from this
# machine's index, so every fresh clone downloaded 1.5 GB again (pip 94 s; uv 45 s cold, 16 s
# from its cache). uv reads only the lower bound of Requires-Python, so TFX needs no flag there;
# pip does (its flags below, for pip itself). Neither compiles: compileall does, on every core
# (34 s on 2). Compiled they must be: where PYTHONDONTWRITEBYTECODE is set (these machines set
# it), nothing compiled at import is kept, and TensorFlow, TFX, TFMA and Beam took 27 s to
# import in every process instead of 7-11.
PIP_FLAGS := --ignore-requires-python --disable-pip-version-check -q -c constraints.txt \
  --no-compile
UV_VERSION := 0.9.7

.PHONY: install run lint test test-fast bench clean cluster cluster-down cluster-parts image

# Every Go binary (the S3 server's, the cluster's) is kept outside the clone, keyed by its
# prerequisites (go.mod, go.sum, a main.go), these Makefiles, the Go version and Go's environment
# (tools/bincache.py): a fresh clone on a warm machine takes them in milliseconds, where linking
# them again took 45 CPU-s (24 s on 2 cores) beside the install `make test` waits on. By the
# system's Python: no virtualenv is needed. $(call go-cached,COMMANDS[,OUTPUTS]): the outputs
# (default: the target) from the cache, else built by COMMANDS (in a subshell) and kept.
BINCACHE := $(PYTHON) tools/bincache.py
go-cached = $(BINCACHE) restore --in $^ --out $(or $(2),$@) || { ($(1)) && \
  $(BINCACHE) save --in $^ --out $(or $(2),$@); }

# SeaweedFS, the S3 server the tests start (tests/support/seaweedfs.py; docs/testing.md "S3"),
# built from the Go module proxy when missing: minutes cold, seconds from Go's build cache.
WEED := .tools/weed

install: $(STAMP)

# The stamp depends on the lock and the package metadata, so editing either reinstalls.
$(STAMP): constraints.txt setup.py
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else \
	  "Python 3.11 is required (found %d.%d at $(PYTHON)); see docs/install.md" \
	  % sys.version_info[:2])'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install $(PIP_FLAGS) --upgrade 'pip==24.2' 'uv==$(UV_VERSION)'
	$(BIN)/uv pip install --python $(BIN)/python --native-tls -q -c constraints.txt \
	  -e '.[dev,kubeflow]'
	$(BIN)/python -m compileall -q -j 0 $(VENV)/lib/python3.11/site-packages >/dev/null
	@touch $(STAMP)

run: install
	$(BIN)/python runner.py --local $(ARGS)

# ruff.toml: pyflakes, syntax and statement errors, lines over 100 characters.
lint: install
	$(BIN)/ruff check .

# Two pytest-xdist workers, as many as CI's cores; a file (and the e2e files sharing one run) is
# one group on one worker, the long groups first (tests/conftest.py). TEST_WORKERS=0 runs in
# this process, one by one.
TEST_WORKERS ?= 2
UP_LOG := .tools/cluster-up.log
# Everything the tests need is built first, side by side (-j: Go's builds, podman's image, pip);
# then the suite runs, and the cluster comes up beside it (unless one is already running, which
# is then left running): pytest's collection and its first tests need none, and a cluster test
# waits for the `up` named in CLUSTER_UP_PID (tests/support/real_cluster.py), which prints into
# UP_LOG, shown after pytest. The cluster this run started goes down even when tests fail, and
# a failed `up` fails the run. The image first:
# its debootstrap and pip downloads wait on the network, not the cores; listed last, it waited
# for a free slot until the Go builds were nearly done (22 min, with Go's caches empty). Debian's
# packages first, alone (apt takes one lock), so that the image's recipe, which needs nothing else,
# takes the first slot: make hands a slot freed later to the next target of its walk, which the
# image, once waiting on a prerequisite, is not. The Go builds need no virtualenv, so they run
# beside the install rather than after it.
test:
	$(MAKE) --no-print-directory .tools/packages.stamp
	$(MAKE) -j4 --no-print-directory image lint $(WEED) cluster-parts
	@was_up=$$($(BIN)/python -m tools.cluster status >/dev/null 2>&1 && echo yes); \
	status=0; up=; if [ -z "$$was_up" ]; then \
	  echo "the cluster comes up beside the tests (what it prints: $(UP_LOG), after them)"; \
	  $(BIN)/python -m tools.cluster up > $(UP_LOG) 2>&1 & up=$$!; fi; \
	CLUSTER_UP_PID=$$up $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup \
	  --no-loadscope-reorder $(PYTEST_ARGS) || status=$$?; \
	if [ -n "$$up" ]; then wait $$up || status=1; cat $(UP_LOG); fi; \
	[ -n "$$was_up" ] || $(BIN)/python -m tools.cluster down; exit $$status

# Unit and executor tests only (no end-to-end pipeline runs, no multi-process training, no
# cluster).
test-fast: install $(WEED)
	$(BIN)/python -m pytest -q -m 'not e2e and not slow and not cluster' $(PYTEST_ARGS)

# The project's image, built with podman on a local Debian base (tools/cluster/image.py). By the
# system's Python (the module needs only the standard library), so that on a new machine the
# base's debootstrap and the image's downloads start at once instead of after pip's install.
image: .tools/packages.stamp
	$(PYTHON) -m tools.cluster.image build

# The real single-node Kubernetes of the cluster tests (tools/cluster/; docs/testing.md "The real
# cluster"): Kubernetes v1.33.13 from the Go module proxy, its version stamped as its own build
# does (clients and controllers check it), all five binaries from one `go build`.
KUBE := .tools/kubernetes
KUBE_VERSION := v1.33.13
KUBE_LDFLAGS := -s -w -X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) \
  -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=33 \
  -X k8s.io/component-base/version.gitTreeState=clean \
  -X k8s.io/client-go/pkg/version.gitVersion=$(KUBE_VERSION) \
  -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=33
KUBE_BINARIES := kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet
$(KUBE)/kubelet: tools/kubernetes/go.mod tools/kubernetes/go.sum
	$(call go-cached,cd tools/kubernetes && CGO_ENABLED=0 go build -trimpath \
	  -ldflags '$(KUBE_LDFLAGS)' -o ../../$(KUBE)/ \
	  $(addprefix k8s.io/kubernetes/cmd/,$(KUBE_BINARIES)),$(addprefix $(KUBE)/,$(KUBE_BINARIES)))

# The pod sandbox image's program (tools/pause/main.go).
.tools/pause: tools/pause/main.go tools/pause/go.mod
	$(call go-cached,cd tools/pause && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' \
	  -o ../../$@ .)

# Debian's runtime parts, installed when missing (these machines run as root).
CLUSTER_PACKAGES := containerd runc podman buildah containernetworking-plugins etcd-server \
  debootstrap iptables iproute2 openssl
.tools/packages.stamp:
	@command -v containerd >/dev/null && command -v etcd >/dev/null && command -v podman \
	  >/dev/null && command -v debootstrap >/dev/null && test -x /usr/lib/cni/bridge || \
	  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
	    $(CLUSTER_PACKAGES); }
	@mkdir -p .tools && touch $@

include tools/controllers.mk

cluster-parts: .tools/packages.stamp $(KUBE)/kubelet .tools/pause controllers

cluster: install cluster-parts image
	$(BIN)/python -m tools.cluster up

cluster-down:
	@if [ -x $(BIN)/python ]; then $(BIN)/python -m tools.cluster down; \
	  else python3 -m tools.cluster down; fi

$(WEED): tools/seaweedfs/go.mod tools/seaweedfs/go.sum
	$(call go-cached,cd tools/seaweedfs && CGO_ENABLED=0 go build -o ../../$@ \
	  github.com/seaweedfs/seaweedfs/weed)

clean:
	rm -rf $(VENV) runs .pytest_cache .tools

# Benchmarks print tables of ratios measured side by side; see bench/.
bench: install
	$(BIN)/python -m bench.bench_trainer

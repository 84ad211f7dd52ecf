# The controllers the real-cluster tests run as host processes (tools/cluster/controllers.py says
# how): each built from its pinned module in tools/<name>/, like SeaweedFS. Cold builds take
# minutes each (module downloads and compiling client-go and controller-runtime at each tool's
# own versions); warm ones seconds, from Go's build cache. Recipes share no scratch files, so
# `make -j` may run them side by side.
CONTROLLERS_DIR := .tools/controllers
CONTROLLER_BUILD := CGO_ENABLED=0 go build -trimpath -ldflags '-s -w'

CONTROLLERS := $(addprefix $(CONTROLLERS_DIR)/,trainer-controller-manager jobset-manager \
  training-operator workflow-controller argoexec coredns)

.PHONY: controllers
controllers: $(CONTROLLERS)

$(CONTROLLERS_DIR)/trainer-controller-manager: tools/trainer/go.mod tools/trainer/go.sum
	$(call go-cached,cd tools/trainer && $(CONTROLLER_BUILD) -o ../../$@ \
	  github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager)

$(CONTROLLERS_DIR)/jobset-manager: tools/jobset/go.mod tools/jobset/go.sum
	$(call go-cached,cd tools/jobset && $(CONTROLLER_BUILD) -o ../../$@ sigs.k8s.io/jobset)

$(CONTROLLERS_DIR)/training-operator: tools/training-operator/go.mod tools/training-operator/go.sum
	$(call go-cached,cd tools/training-operator && $(CONTROLLER_BUILD) -o ../../$@ \
	  github.com/kubeflow/training-operator/cmd/training-operator.v1)

# CoreDNS's server with only the plugins our Corefile names (tools/coredns/main.go says why).
$(CONTROLLERS_DIR)/coredns: tools/coredns/go.mod tools/coredns/go.sum tools/coredns/main.go
	$(call go-cached,cd tools/coredns && $(CONTROLLER_BUILD) -o ../../$@ .)

# Argo's release build stamps its version, and the workflow-controller names its default executor
# image after it (quay.io/argoproj/argoexec:<version>, workflow/controller/config.go), so both
# binaries get the version go.mod pins.
ARGO_MOD := github.com/argoproj/argo-workflows/v4
ARGO_LDFLAGS = -s -w -X $(ARGO_MOD).version=$$(go list -m -f '{{.Version}}' $(ARGO_MOD))

$(CONTROLLERS_DIR)/workflow-controller: tools/argo/go.mod tools/argo/go.sum
	$(call go-cached,cd tools/argo && CGO_ENABLED=0 go build -trimpath \
	  -ldflags "$(ARGO_LDFLAGS)" -o ../../$@ $(ARGO_MOD)/cmd/workflow-controller)

# argoexec does not build from Argo's module zip: upstream's
# workflow/executor/osspecific/signal_linux.go is a symlink to signal_darwin.go, and module zips
# drop symlinks, which leaves Kill and CanIgnoreSignal undefined on Linux. So it builds from a
# copy of the module with that file restored, through a go.mod of its own (-modfile, next to the
# copy) that replaces the module with the copy; the copy is rebuilt from the module cache each
# time, never committed.
ARGO_SRC := $(CONTROLLERS_DIR)/src/argo-workflows

$(CONTROLLERS_DIR)/argoexec: tools/argo/go.mod tools/argo/go.sum
	$(call go-cached,rm -rf $(ARGO_SRC) && mkdir -p $(ARGO_SRC) && \
	  (cd tools/argo && go mod download $(ARGO_MOD) && \
	    cp -R "$$(go list -m -f '{{.Dir}}' $(ARGO_MOD))/." ../../$(ARGO_SRC)/module) && \
	  chmod -R u+w $(ARGO_SRC)/module && \
	  cp $(ARGO_SRC)/module/workflow/executor/osspecific/signal_darwin.go \
	    $(ARGO_SRC)/module/workflow/executor/osspecific/signal_linux.go && \
	  cp tools/argo/go.mod $(ARGO_SRC)/argoexec.mod && \
	  cp tools/argo/go.sum $(ARGO_SRC)/argoexec.sum && \
	  cd tools/argo && go mod edit -modfile=../../$(ARGO_SRC)/argoexec.mod \
	    -replace=$(ARGO_MOD)=$(CURDIR)/$(ARGO_SRC)/module && \
	  CGO_ENABLED=0 go build -modfile=../../$(ARGO_SRC)/argoexec.mod -trimpath \
	    -ldflags "$(ARGO_LDFLAGS)" -o ../../$@ $(ARGO_MOD)/cmd/argoexec)

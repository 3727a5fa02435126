# EDL — Elastic Deep Learning. `make help` lists the targets.
#
# The control-plane binaries the tests and the local cluster use are built
# from Go modules into $(EDL_CACHE_DIR), outside the repository, once.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build

EDL_CACHE_DIR ?= $(HOME)/.cache/edl
export EDL_CACHE_DIR

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

# The release the manifests run (the file VERSION), and its image.
RELEASE := $(shell cat VERSION)
IMAGE ?= paddlepaddle/edl-controller

# Standing local cluster size (make cluster-up).
NODES ?= 4
NODE_CPU ?= 18
NODE_MEMORY ?= 100Gi
NODE_GPU ?= 0
# REAL_NODES=1 adds the real node real-0 beside them (root; hack/cluster.sh's
# EDL_REAL_NODES): make demo then runs one more job of real pods there.
REAL_NODES ?= 0

.PHONY: help
help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

.PHONY: build
build: ## build bin/edl, the kubectl plugin bin/kubectl-edl and its completion link bin/kubectl_complete-edl (hack/build.sh: the Dockerfile runs the same command)
	hack/build.sh bin/edl $(VERSION)

.PHONY: image
image: ## docker build the controller image paddlepaddle/edl-controller:<the release in VERSION> (IMAGE= for another name), the tag the manifests run; edl -version prints it
	docker build --build-arg VERSION=$(RELEASE) -t $(IMAGE):$(RELEASE) .

.PHONY: images
images: ## build the controller, pause and example trainer images as OCI archives in $(EDL_CACHE_DIR)/images (no Docker, no registry) and import them into a running containerd (EDL_CONTAINERD_SOCK, default /run/containerd/containerd.sock) (hack/images.sh)
	hack/images.sh

# make krew: the plugin for each platform, packed for krew, and the plugin
# manifest with their checksums, in _output/krew (for the release RELEASE).
KREW_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64

.PHONY: krew
krew: ## build kubectl-edl for each of KREW_PLATFORMS, pack each for krew and write the plugin manifest _output/krew/edl.yaml with their sha256 (hack/krew)
	rm -rf _output/krew
	for p in $(KREW_PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; ext=; if [ "$$os" = windows ]; then ext=.exe; fi; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch go build -trimpath -ldflags "-s -w -X main.version=$(RELEASE)" \
			-o _output/krew/bin/$${os}_$${arch}/kubectl-edl$$ext ./cmd/kubectl-edl || exit 1; \
	done
	go run ./hack/krew -version $(RELEASE) -bin-dir _output/krew/bin -out _output/krew $(KREW_PLATFORMS)

.PHONY: generate
generate: ## regenerate clients, deepcopy, openapi and the CRD (thirdpartyresource.yaml), and copy it and edl_controller.yaml into config/
	hack/update-codegen.sh

.PHONY: verify
verify: ## gofmt, go vet and a check that generated code is current
	@out="$$(gofmt -l cmd pkg test hack)"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet ./...
	hack/verify-codegen.sh

.PHONY: verify-fresh
verify-fresh: ## make verify and the edl build with empty Go module, build and EDL caches and HOME, as on a new machine (CI runs it)
	hack/verify-fresh.sh

# The linters install through the Go module proxy into the cache, one
# directory per version, and never into go.mod.
TOOLS_DIR := $(EDL_CACHE_DIR)/tools
STATICCHECK_VERSION ?= v0.8.2
GOSEC_VERSION ?= v2.29.0
STATICCHECK := $(TOOLS_DIR)/staticcheck-$(STATICCHECK_VERSION)/staticcheck
GOSEC := $(TOOLS_DIR)/gosec-$(GOSEC_VERSION)/gosec

$(STATICCHECK):
	GOBIN="$(dir $@)" go install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

$(GOSEC):
	GOBIN="$(dir $@)" go install github.com/securego/gosec/v2/cmd/gosec@$(GOSEC_VERSION)

# No hand-written Go file above this many lines: a longer one is split along
# its responsibilities.
MAX_GO_FILE_LINES := 500

.PHONY: lint
lint: $(STATICCHECK) $(GOSEC) ## gofmt, no hand-written Go file above 500 lines, go vet, staticcheck, gosec (no finding in cmd and pkg, no high-severity one in test and hack); generated code excluded
	@out="$$(gofmt -l cmd pkg test hack)"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@out="$$(find cmd pkg test hack -name '*.go' -not -path 'pkg/generated/*' -not -name 'zz_generated*' -exec wc -l {} + | awk '$$2 != "total" && $$1 > $(MAX_GO_FILE_LINES)')"; \
	if [ -n "$$out" ]; then echo "hand-written Go files above $(MAX_GO_FILE_LINES) lines (split them by responsibility):"; echo "$$out"; exit 1; fi
	go vet ./...
	$(STATICCHECK) $$(go list ./... | grep -v /pkg/generated/)
	$(GOSEC) -quiet -exclude-generated -exclude-dir=pkg/generated ./cmd/... ./pkg/...
	$(GOSEC) -quiet -exclude-generated -severity high ./test/... ./hack/...

.PHONY: controlplane
controlplane: ## build etcd, kube-apiserver, -controller-manager, -scheduler, kwok and kubectl into the cache
	hack/build-control-plane.sh

# How long `make fuzz` fuzzes each target. `make test` replays the fuzz
# targets' corpora (their seeds and testdata/fuzz, every input a past fuzz
# run failed on) as unit tests, and explores nothing new: a test run gives
# the same verdict on the same commit. New inputs are `make fuzz`'s to find.
LONG_FUZZTIME ?= 5m

# The tests on a real node (test/realnode) need root: as root, make test
# installs what the node needs (hack/real-node-deps.sh), builds the images
# and requires the tests to run (EDL_REQUIRE_REAL_NODE); as another user
# they skip with the one line that says so. They run alone, after the other
# integration packages: the node's pods need the machine's cores. So does the
# live trace replay (test/trace/live), whose edl plans every second for a
# minute of the trace: beside the integration tests, its pods start late.
REAL_NODE_TESTS := $(shell [ "$$(id -u)" = 0 ] && echo 1)

.PHONY: test
test: lint controlplane ## make lint, a check that generated code is current, unit tests (-race, the fuzz corpora replayed), the integration tests on a real control plane, the real-node tests (as root), and make demo-check
	hack/verify-codegen.sh
	go test -race -count=1 ./cmd/... ./pkg/...
	EDL_CONTROLPLANE_BIN="$$(hack/build-control-plane.sh --print-dir)" go test -count=1 -timeout 30m $$(go list ./test/... | grep -v -e /test/realnode -e /test/trace/live)
	EDL_CONTROLPLANE_BIN="$$(hack/build-control-plane.sh --print-dir)" go test -count=1 -timeout 15m ./test/trace/live
	$(if $(REAL_NODE_TESTS),hack/real-node-deps.sh && hack/images.sh build)
	$(if $(REAL_NODE_TESTS),,echo "the real-node tests skip: they need root")
	$(if $(REAL_NODE_TESTS),EDL_REQUIRE_REAL_NODE=1) EDL_CONTROLPLANE_BIN="$$(hack/build-control-plane.sh --print-dir)" go test -count=1 -timeout 45m ./test/realnode
	$(MAKE) --no-print-directory demo-check

# make torch-run: the real training run of example/torchjob.yaml under EDL
# on a real node (root), its record (train.log, resizes.csv, run.png) into
# docs/experiments/torch, or with UNPRICED=1, with EDL's resize price off and
# one trainer a plan, into docs/experiments/torch-unpriced
# (docs/experiments-torch.md).
UNPRICED ?=
.PHONY: torch-run
torch-run: controlplane ## the real training run of example/torchjob.yaml on a real node (root), recorded into docs/experiments/torch (UNPRICED=1: with the resize price off, into docs/experiments/torch-unpriced)
	hack/real-node-deps.sh && hack/images.sh build
	EDL_REQUIRE_REAL_NODE=1 EDL_TORCH_RUN_OUT="$(CURDIR)/docs/experiments/torch$(if $(UNPRICED),-unpriced)" $(if $(UNPRICED),EDL_TORCH_UNPRICED=1) \
		EDL_CONTROLPLANE_BIN="$$(hack/build-control-plane.sh --print-dir)" \
		go test -count=1 -timeout 20m -v -run '^TestTorchJobIsElasticForReal$$' ./test/realnode

.PHONY: fuzz
fuzz: ## fuzz the planner, its queue and its yield for LONG_FUZZTIME (5m) each; the multi-cycle test over 2,000 runs and the snapshot oracle over 20,000
	go test -count=1 -run '^$$' -fuzz '^FuzzPlan$$' -fuzztime $(LONG_FUZZTIME) ./pkg/autoscaler/planner
	go test -count=1 -run '^$$' -fuzz '^FuzzQueue$$' -fuzztime $(LONG_FUZZTIME) ./pkg/autoscaler/planner
	go test -count=1 -run '^$$' -fuzz '^FuzzYield$$' -fuzztime $(LONG_FUZZTIME) ./pkg/autoscaler/planner
	go test -count=1 -run '^TestPlanOverManyCycles$$' ./pkg/autoscaler/planner -args -long
	go test -count=1 -run '^TestTrackerMatchesARecount$$' ./pkg/cluster -args -long

.PHONY: bench
bench: ## benchmarks: the planner against the original algorithm, the per-cycle snapshot, the informer caches' memory per object, what a progress report costs (docs/autoscaler-bench.md), edl on a simulated cluster of 300 to 10,000 nodes (docs/scale.md)
	go test -count=1 -run '^$$' -bench . -benchmem -cpu 1 -timeout 30m ./pkg/cluster/ ./pkg/autoscaler/planner/ ./pkg/progress/ ./cmd/edl/

# make trace replays workloads of the Pollux trace (test/trace/testdata/pollux)
# through EDL's planner on a simulated cluster of 16 nodes of 4 GPUs:
# WORKLOADS (comma-separated files; default workloads 1-5 at 1.0x and 2.0x
# load), POLICIES (comma-separated; default every policy), OUT (default
# _output/trace) for summary.csv, jobs.csv and the plot of JCT's distribution.
WORKLOADS ?=
POLICIES ?=
OUT ?= _output/trace
.PHONY: trace
trace: ## replay Pollux trace workloads through EDL's planner on a simulated 16 x 4-GPU cluster (WORKLOADS=, POLICIES=, OUT=): summary.csv, jobs.csv, a JCT plot
	go run ./test/cmd/trace $(if $(WORKLOADS),-workloads $(WORKLOADS)) $(if $(POLICIES),-policies $(POLICIES)) -out $(OUT)

# make trace-live: the first 40 jobs of workload-1 replayed at 60x on the
# local control plane (16 kwok nodes of 4 GPUs) under edl, with phantom
# trainers reporting through the progress contract, under fulfillment and
# goodput, each beside the simulator's run of the same jobs
# (docs/experiments-trace.md); make test runs a short form.
.PHONY: trace-live
trace-live: build controlplane ## replay the first 40 jobs of Pollux workload-1 at 60x on kwok under edl, beside the simulator (OUT=_output/trace-live)
	EDL_CONTROLPLANE_BIN="$$(hack/build-control-plane.sh --print-dir)" go run ./test/cmd/tracelive -edl bin/edl -out $(if $(filter command line,$(origin OUT)),$(OUT),_output/trace-live)

.PHONY: cluster-up
cluster-up: controlplane ## start a standing local cluster with kwok nodes (REAL_NODES=1: and a real node, as root); prints its kubeconfig
	EDL_NODES=$(NODES) EDL_NODE_CPU=$(NODE_CPU) EDL_NODE_MEMORY=$(NODE_MEMORY) EDL_NODE_GPU=$(NODE_GPU) EDL_REAL_NODES=$(REAL_NODES) hack/cluster.sh up

.PHONY: cluster-down
cluster-down: ## stop the standing local cluster
	hack/cluster.sh down

# make experiment: SIZE=quick (27 nodes, ~15 min) or full (the original's
# 133 nodes); SCENARIO=pools runs the pools experiment (a CPU pool and a
# tainted GPU pool), SCENARIO=teams the teams experiment (three weighted
# teams: edl, edl+noteams, quota) instead of the original's two
# (training,shared); EXPERIMENT_FLAGS go to test/cmd/experiment (-<scenario>_variants, -out).
# Results go to docs/experiments/$(SIZE). See docs/experiments.md.
SIZE ?= quick
SCENARIO ?= training,shared
EXPERIMENT_FLAGS ?=

.PHONY: experiment
experiment: build controlplane ## reproduce the original's two experiments, EDL on vs off (SIZE=quick|full; SCENARIO=pools or teams for experiments 3 and 4)
	EDL_CONTROLPLANE_BIN="$$(hack/build-control-plane.sh --print-dir)" go run ./test/cmd/experiment -size $(SIZE) -scenarios $(SCENARIO) -edl bin/edl $(EXPERIMENT_FLAGS)

# make scale: NODES kwok nodes (300 unless NODES is given on the command
# line: the 4 above are the standing cluster's) of 12 CPU, JOBS TrainingJobs
# (one per 6 nodes unless given) in NAMESPACES namespaces (one per 10 jobs
# unless given), a steady window of STEADY; SCALE_FLAGS go to
# test/cmd/scale. The figures go to docs/scale.md, a row per size in its
# table of sizes. See docs/scale.md.
STEADY ?= 2m
SCALE_FLAGS ?=

.PHONY: scale
scale: build controlplane ## edl on a big kwok cluster, measured from outside: memory, CPU, requests, a wave's settling, a cycle's cost (NODES=300, 1000, 2000; docs/scale.md)
	EDL_CONTROLPLANE_BIN="$$(hack/build-control-plane.sh --print-dir)" go run ./test/cmd/scale -edl bin/edl \
		-nodes $(if $(filter command line,$(origin NODES)),$(NODES),300) $(if $(JOBS),-jobs $(JOBS)) $(if $(NAMESPACES),-namespaces $(NAMESPACES)) -steady $(STEADY) $(SCALE_FLAGS)

# make demo: the standing cluster's size for the demo.
DEMO_NODES ?= 4
DEMO_NODE_CPU ?= 4
DEMO_NODE_MEMORY ?= 16Gi
.PHONY: demo
demo: build controlplane ## a fresh local cluster with edl, three elastic jobs and a web wave, shown live; leaves it running (REAL_NODES=1: and a job of real pods on a real node, as root)
	@echo "==> building the demo (test/cmd/demo)"
	go build -o bin/edl-demo ./test/cmd/demo
	@echo "==> starting a fresh local cluster: $(DEMO_NODES) kwok nodes of $(DEMO_NODE_CPU) CPU / $(DEMO_NODE_MEMORY)"
	hack/cluster.sh down
	EDL_NODES=$(DEMO_NODES) EDL_NODE_CPU=$(DEMO_NODE_CPU) EDL_NODE_MEMORY=$(DEMO_NODE_MEMORY) EDL_NODE_GPU=0 EDL_REAL_NODES=$(REAL_NODES) hack/cluster.sh up
	EDL_CONTROLPLANE_BIN="$$(hack/build-control-plane.sh --print-dir)" bin/edl-demo -edl bin/edl $(if $(filter-out 0,$(REAL_NODES)),-real-node)

# make demo-check: the demo in a short, asserted mode, on a cluster of its own
# in a temporary directory (so a standing cluster is left alone), stopped at
# the end whatever happens.
.PHONY: demo-check
demo-check: build controlplane ## the demo, short and asserted (its summary's figures within the bounds of a working EDL), on a temporary cluster
	go build -o bin/edl-demo ./test/cmd/demo
	dir="$$(mktemp -d)"; \
	trap 'EDL_CLUSTER_DIR="$$dir" hack/cluster.sh down >/dev/null; rm -rf "$$dir"' EXIT; \
	export EDL_CLUSTER_DIR="$$dir" EDL_CONTROLPLANE_BIN="$$(hack/build-control-plane.sh --print-dir)"; \
	EDL_NODES=$(DEMO_NODES) EDL_NODE_CPU=$(DEMO_NODE_CPU) EDL_NODE_MEMORY=$(DEMO_NODE_MEMORY) EDL_NODE_GPU=0 hack/cluster.sh up >/dev/null; \
	bin/edl-demo -dir "$$dir" -edl bin/edl -check -growth 14s -step 10s -settle 20s

.PHONY: clean
clean: ## remove build output (the control-plane cache stays)
	rm -rf bin _output

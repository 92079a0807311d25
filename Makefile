# The two commands a newcomer needs: `make run` and `make test`. Both install what they need.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
CARGO ?= cargo
LOCAL := $(CURDIR)/.local
# Where cargo puts the binaries `make run` starts (cargo honours CARGO_TARGET_DIR too).
TARGET := $(or $(CARGO_TARGET_DIR),$(CURDIR)/target)
BIN := $(TARGET)/debug

.PHONY: image run test up down crds manifests deploy-manifests generate check-generated check-imports lint bench bench-svm bench-svm-slow bench-svm-lost deps build unit-test gardener-registration test-rules

## deps: install Debian packages and build kube-apiserver, etcd, Jaeger, helm, gardener-resource-manager (cached in ~/.cache/ontap-operator)
deps:
	@hack/deps.sh

build:
	$(CARGO) build --workspace --bins

## up: start the control plane, mock ONTAP and Jaeger in the background; writes .local/kubeconfig and .local/env;
## NODE=1 adds the local registry and a real node (containerd, kubelet, kube-proxy, controller-manager,
## scheduler: hack/node.sh), with the control plane and mock ONTAP on the node's address (.local/env
## then exports REGISTRY and ONTAP_ENDPOINT_IN_CLUSTER)
up: deps build
	@hack/local-env.sh up

## down: stop exactly what `make up` and `make image` started
down:
	@hack/local-env.sh down

# release: what the Dockerfile builds; debug: target/debug's binary without debug info, for quick
# local rounds.
IMAGE_PROFILE ?= release
export IMAGE_PROFILE

## image: the operator image without a container daemon (hack/image.sh: umoci; operator, helm and
## distroless cc-debian12:nonroot's files from this machine, as the Dockerfile's final stage) into
## target/image/ontap-operator-<appVersion>.tar, its sizes and files printed; then pushed to the
## local registry of .local/registry (started unless it runs; REGISTRY in .local/env) as
## $REGISTRY/ontap-operator:<appVersion>. IMAGE_PROFILE=debug for a quick unoptimized build
image: deps
	@hack/image.sh build --profile $(IMAGE_PROFILE)
	@hack/image.sh push --registry "$$(hack/local-env.sh registry)"

# The simulated Kyma lifecycle runs this many times faster under `make run`: the sample Kyma
# (deploy/samples/kyma.yaml, 67 s in real time) reaches success in about 17 s, slow enough to
# watch it move. KYMA_TIME_SCALE=1 shows the experiment's real timing.
KYMA_TIME_SCALE ?= 4

## run: the operator in the foreground against the local control plane, mock ONTAP and Jaeger,
## with the samples of deploy/samples applied (`kubectl get svm -A`, `kubectl get kyma,hc -n pb`
## in another shell); both controller sets run, the Kyma lifecycle KYMA_TIME_SCALE times faster;
## GARDENER=1 adds a shoot: Gardener's CRDs, a shoot control plane, gardener-resource-manager, the
## Extension controller and deploy/samples/gardener (`kubectl get extension -A`)
## DEPLOY=1: the operator as it ships instead, in the node's Pods from `make image` and the chart
## installed from the local registry with helm; `make run` then follows its logs
run: up $(if $(filter 1,$(DEPLOY)),image)
ifeq ($(DEPLOY),1)
	@KYMA_TIME_SCALE=$(KYMA_TIME_SCALE) hack/local-env.sh deploy
	@DEPLOY=1 hack/local-env.sh samples
	@source $(LOCAL)/env && kubectl -n ontap-operator-system logs -f deploy/ontap-operator
else
	@hack/local-env.sh samples
	@source $(LOCAL)/env && $(BIN)/ontap-operator run \
		--metrics-bind-address 127.0.0.1:8080 --metrics-auth none --health-probe-bind-address 127.0.0.1:8081 \
		--controllers ontap,kyma --kyma-time-scale $(KYMA_TIME_SCALE) --helm "$$(hack/tools.sh helm)" \
		$(if $(filter 1,$(GARDENER)),--extension-type ontap --heartbeat-namespace ontap-operator-system)
endif

# The checkout the generating targets write into: this one, or the copy `check-generated` makes.
GENERATE_ROOT ?= $(CURDIR)
# The operator that writes the generated files, built first by `cargo run`. `make test` names the
# one its test build made: `cargo run` resolves the features without the dev-dependencies, and would
# build tokio and everything above it a second time.
GENERATOR ?= $(CARGO) run -q --bin ontap-operator --

## manifests: regenerate crds/ and the chart's generated files (files/clusterrole-rules*.yaml,
## files/features.yaml) from the features list, src/features.rs, and their registrations
manifests:
	$(GENERATOR) manifests --root $(GENERATE_ROOT)

crds: manifests

## deploy-manifests: render deploy/*.yaml from deploy/chart with its default values (hack/render-deploy.sh)
deploy-manifests: manifests
	@hack/render-deploy.sh --root $(GENERATE_ROOT)

## gardener-registration: regenerate deploy/gardener/ (ControllerDeployment with deploy/chart and crds/ as rawChart, ControllerRegistration, gardener-operator's Extension naming the chart in an OCI registry)
gardener-registration: manifests
	@hack/gardener-registration.sh --root $(GENERATE_ROOT)

## generate: everything generated, in the order each step reads the one before: manifests (crds/,
## the chart's rule files and features list), deploy/*.yaml rendered from the chart, then
## deploy/gardener/ from the chart and crds/. `make check-generated` fails when any is stale.
generate: manifests deploy-manifests gardener-registration

## check-generated: fails when a file `make generate` writes is stale or left over, naming it and
## the command that fixes it (hack/check-generated.sh: generates into a copy of crds/ and
## deploy/ and compares); a few seconds once the operator is built
check-generated:
	@hack/check-generated.sh

## check-imports: fails on an import circle between the modules of any workspace crate, naming the
## uses on each side (hack/check-imports.sh; UPWARD=1 also lists modules using what an ancestor
## defines). Not part of `make test`: its tool, cargo-modules, takes 16 CPU-minutes to install once
## (hack/tools.sh, cached; 32 min on a busy 2-core machine), and reading the 8 crates ~80 s
check-imports:
	@hack/check-imports.sh $(if $(filter 1,$(UPWARD)),--upward)

## unit-test: the tests that need no control plane, node or garden (every crate's unit tests), in
## about a minute once built
unit-test:
	$(CARGO) test --workspace --lib --bins

## lint: formatting and clippy, warnings are errors
lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

## test-rules: the alerting rules checked and unit-tested by Prometheus's own promtool
## (tests/monitoring/alerts.test.yaml: every alert firing and not firing)
RULES := deploy/chart/files/monitoring/ontap-operator.rules.yaml
test-rules:
	promtool check rules $(RULES)
	promtool test rules tests/monitoring/alerts.test.yaml

# `make test` lints while it builds: clippy-driver is the workspace crates' compiler wrapper, as
# `cargo clippy` runs it (CLIPPY_ARGS in its format), so clippy's lints, warnings as errors, come
# from the build of the tests, and the dependencies are built once instead of again in check mode
# (5.6 CPU-minutes on a fresh machine; the linted build costs what the plain one does). Cargo
# keys the workspace crates by their wrapper: a plain `cargo test` after `make test` rebuilds them.
CLIPPY_DRIVER = $(shell d="$$(rustc --print sysroot)/bin/clippy-driver"; if [ -x "$$d" ]; then echo "$$d"; else command -v clippy-driver; fi)
LINT_WHILE_BUILDING = RUSTC_WORKSPACE_WRAPPER="$(CLIPPY_DRIVER)" CLIPPY_ARGS=-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__

## test: formatting, clippy (warnings are errors) while the tests build, the generated files'
## staleness (check-generated) and every test, against real control planes; the alerting rules'
## promtool tests; the Rust test binaries side by side in LANES lanes (hack/test.sh, default 3;
## LANES=1 runs them one after another as cargo test does); the image (hack/image.sh build),
## built from the start at a lower priority beside everything else (tests/deployed, which installs
## it with the chart on a real node (root), waits for it); then tests/conformance (pytest):
## mock-ontap driven by NetApp's netapp-ontap client. All run; any failing fails `make test`;
## formatting, lints and stale generated files stop it. On a fresh machine the Go-built tools
## build in the background from the start (hack/deps.sh tools, logged to target/deps.log); a test
## that needs one still being built waits for it (hack/tools.sh's lock).
test:
	@hack/deps.sh packages
	@mkdir -p $(TARGET); rm -f $(TARGET)/image.rc; hack/deps.sh tools >$(TARGET)/deps.log 2>&1 & tools=$$!; \
	{ nice -n 10 hack/image.sh build --profile $(IMAGE_PROFILE) >$(TARGET)/image.log 2>&1; echo $$? >$(TARGET)/image.rc; } & image=$$!; \
	export $(LINT_WHILE_BUILDING); \
	lint=0; hack/build-linted.sh && $(MAKE) --no-print-directory check-generated GENERATOR=$(BIN)/ontap-operator || lint=$$?; rc=0; \
	source hack/lib.sh; \
	if [ $$lint = 0 ]; then \
	  $(MAKE) --no-print-directory test-rules || rc=$$?; \
	  AWAIT="deployed=$(TARGET)/image.rc" hack/test.sh || rc=$$?; \
	  wait $$image; cat $(TARGET)/image.log; \
	  if [ "$$(cat $(TARGET)/image.rc)" != 0 ]; then echo "make test: the image did not build (above)" >&2; rc=1; fi; \
	  source hack/versions.env; venv=$$(conformance_venv); \
	  MOCK_ONTAP_BIN=$(BIN)/mock-ontap PYTHONDONTWRITEBYTECODE=1 "$$venv/bin/python" -m pytest -p no:cacheprovider -q tests/conformance || rc=$$?; \
	else \
	  stop_tree $$image; wait $$image || true; \
	fi; \
	built=0; wait $$tools || built=$$?; cat $(TARGET)/deps.log; \
	if [ $$built != 0 ]; then echo "make test: the tools did not build (above)" >&2; exit $$built; fi; \
	if [ $$lint != 0 ]; then exit $$lint; fi; \
	exit $$rc

## bench: benchmarks that print their figures (tests/bench_svm.rs: 10,000 SVMs at once over 10 mock
## ONTAPs with 2 s jobs, BENCH_SVMS / BENCH_CLUSTERS / BENCH_JOB_MS change that, docs/benchmarks/svm.md;
## tests/bench_kyma.rs: one Kyma, then 100 at once, BENCH_KYMAS_MANY=n and BENCH_KYMA_TIME_SCALE=s,
## default 1 = the experiment's real time; tests/bench_render.rs: 300 HelmComponents rendering into
## namespaces of their own, BENCH_RENDER_COMPONENTS=n; tests/bench_identity.rs: the API server's
## CPU per write as the admin and as the operator's ServiceAccount, BENCH_IDENTITY_KYMAS=n;
## tests/bench_tenancy.rs: what one tenant makes the operator spend: ONTAP lookups of waiting
## consumers, RSS with large labelled Secrets, BENCH_WAITING_CONSUMERS / BENCH_LABELLED_SECRETS)
bench: deps
	$(CARGO) test --release --test bench_svm -- --ignored --nocapture
	$(CARGO) test --release --test bench_kyma -- --ignored --nocapture
	$(CARGO) test --release --test bench_render -- --ignored --nocapture
	$(CARGO) test --release --test bench_identity -- --ignored --nocapture
	$(CARGO) test --release --test bench_tenancy -- --ignored --nocapture

## bench-svm: the SVM benchmark alone; bench-svm-slow: the same with one cluster answering every
## request 2 s late (BENCH_SLOW_CLUSTER=1); bench-svm-lost: with 1 % of ONTAP answers lost and the
## operator restarted halfway (BENCH_LOST_ANSWERS=0.01)
bench-svm: deps
	$(CARGO) test --release --test bench_svm -- --ignored --nocapture
bench-svm-slow: deps
	BENCH_SLOW_CLUSTER=1 $(CARGO) test --release --test bench_svm -- --ignored --nocapture
bench-svm-lost: deps
	BENCH_LOST_ANSWERS=0.01 $(CARGO) test --release --test bench_svm -- --ignored --nocapture

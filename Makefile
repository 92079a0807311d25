# The two commands a newcomer needs: `make run` and `make test`. Both install what they need.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
CARGO ?= cargo
LOCAL := $(CURDIR)/.local

.PHONY: run test up down crds manifests lint bench deps build unit-test

## deps: install Debian packages and build kube-apiserver, etcd, Jaeger, helm (cached in ~/.cache/ontap-operator)
deps:
	@hack/deps.sh

build:
	$(CARGO) build --workspace --bins

## up: start the control plane, mock ONTAP and Jaeger in the background; writes .local/kubeconfig and .local/env
up: deps build
	@hack/local-env.sh up

## down: stop exactly what `make up` started
down:
	@hack/local-env.sh down

## run: the operator in the foreground against the local control plane, mock ONTAP and Jaeger,
## with the samples of deploy/samples applied (`kubectl get svm -A` in another shell)
run: up
	@hack/local-env.sh samples
	@source $(LOCAL)/env && target/debug/ontap-operator run \
		--metrics-bind-address 127.0.0.1:8080 --health-probe-bind-address 127.0.0.1:8081

## manifests: regenerate crds/, deploy/rbac.yaml and the chart's ClusterRole rules from the
## controllers' registrations (tests/operations/crds_generated.rs fails when they drift)
manifests:
	$(CARGO) run -q --bin ontap-operator -- manifests --root .

crds: manifests

## lint: formatting and clippy, warnings are errors
lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

## test: lint, CRD drift check (tests/operations/crds_generated.rs) and every test, against real control planes
test: deps lint
	$(CARGO) test --workspace --no-fail-fast

## bench: benchmarks that print their figures (tests/bench_svm.rs: 1,000 SVMs at once; BENCH_SVMS=n for another count)
bench: deps
	$(CARGO) test --release --test bench_svm -- --ignored --nocapture

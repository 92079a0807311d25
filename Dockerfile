# syntax=docker/dockerfile:1
# Multi-stage: build with the Rust toolchain, run from a minimal, non-root, shell-less image
# (distroless cc: glibc and CA certificates, nothing else) that also carries helm, which the
# HelmComponent controller renders charts with (`--controllers=ontap,kyma`). `make image`
# (hack/image.sh) builds the same image without docker; tests/operations/image.rs fails when the
# final stage here and that script part ways.
ARG HELM_VERSION=v3.22.0

FROM golang:1.25-bookworm AS helm
ARG HELM_VERSION
# Static, like hack/tools.sh builds it: the runtime image has no libc for cgo to link against
# beyond glibc, and helm needs none.
RUN CGO_ENABLED=0 GOBIN=/out go install -trimpath -ldflags "-s -w" "helm.sh/helm/v3/cmd/helm@${HELM_VERSION}"

FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY crates crates
COPY tools tools
COPY mock-ontap/Cargo.toml mock-ontap/Cargo.toml
COPY mock-ontap/src mock-ontap/src
COPY src src
RUN cargo build --release --locked --bin ontap-operator

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=helm /out/helm /usr/local/bin/helm
COPY --from=build /src/target/release/ontap-operator /ontap-operator
USER 65532:65532
ENTRYPOINT ["/ontap-operator"]
CMD ["run"]

# syntax=docker/dockerfile:1
# Multi-stage: build with the Rust toolchain, run from a minimal, non-root, shell-less image
# (distroless cc: glibc and CA certificates, nothing else).
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY mock-ontap/Cargo.toml mock-ontap/Cargo.toml
COPY mock-ontap/src mock-ontap/src
COPY src src
RUN cargo build --release --locked --bin ontap-operator

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /src/target/release/ontap-operator /ontap-operator
USER 65532:65532
ENTRYPOINT ["/ontap-operator"]
CMD ["run"]

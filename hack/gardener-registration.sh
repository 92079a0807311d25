#!/usr/bin/env bash
# Writes Gardener's two ways to install the extension, from one packaged chart and one set of
# values:
#   deploy/gardener/controller-registration.yaml: a ControllerDeployment carrying the chart as
#     helm.rawChart and the ControllerRegistration of the `ontap` Extension type, for the garden;
#   deploy/gardener/extension.yaml: gardener-operator's operator.gardener.cloud Extension, which
#     names the chart in an OCI registry (gardener-operator takes no rawChart) and from which
#     gardener-operator writes the same ControllerRegistration and ControllerDeployment.
#
#   hack/gardener-registration.sh [--root ROOT] [--out-dir DIR] [--oci-repository oci://HOST/PATH]
#   hack/gardener-registration.sh [--root ROOT] --package-chart DIR
#
# ROOT is the checkout whose deploy/chart and crds/ are packaged (default: this one); DIR
# defaults to ROOT/deploy/gardener.
#
# The chart is deploy/chart with the CRDs of crds/ in files/crds.yaml, named
# gardener-extension-ontap. --package-chart writes it as DIR/gardener-extension-ontap-<version>.tgz, and the
# admission's charts (deploy/admission) as DIR/gardener-extension-ontap-admission-{runtime,application}-<version>.tgz
# (and prints those paths), ready for `helm push <tgz> oci://HOST/PATH`; the rawChart is the same
# archive. --oci-repository is that `helm push` target (default: the placeholder
# oci://registry.example.com/charts); the Extension's ociRepository.ref is then
# HOST/PATH/gardener-extension-ontap:<version>, since helm push names the repository after the
# chart and tags it with the chart's version.
#
# Names as Gardener's extensions have them (gardener-extension-registry-cache: registration and
# operator Extension `extension-registry-cache`, chart and image `gardener-extension-registry-cache`):
# the ControllerRegistration, ControllerDeployment and Extension are `extension-ontap` (one name,
# because gardener-operator names the registration it writes after the Extension), the chart
# `gardener-extension-ontap`.
#
# `make gardener-registration` runs it; tests/gardener/registration.rs fails when the committed
# files are not what this script writes from the current chart and CRDs. The archive is built
# reproducibly (sorted entries, fixed owner and time, gzip without a name or time stamp).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib.sh
. "$root/hack/lib.sh"

name=extension-ontap
chart_name=gardener-extension-ontap
out_dir=""
oci_repository=oci://registry.example.com/charts
package_dir=""
while [ $# -gt 0 ]; do
  case "$1" in
    --root) root=$2; shift 2 ;;
    --out-dir) out_dir=$2; shift 2 ;;
    --oci-repository) oci_repository=$2; shift 2 ;;
    --package-chart) package_dir=$2; shift 2 ;;
    *) die "unknown argument $1" ;;
  esac
done
out_dir=${out_dir:-$root/deploy/gardener}

chart_field() {
  sed -n "s/^$1: *\"\{0,1\}\([^\"]*\)\"\{0,1\}\$/\1/p" "$root/deploy/chart/Chart.yaml"
}
app_version=$(chart_field appVersion)
[ -n "$app_version" ] || die "no appVersion in deploy/chart/Chart.yaml"
chart_version=$(chart_field version)
[ -n "$chart_version" ] || die "no version in deploy/chart/Chart.yaml"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chart=$work/$chart_name
mkdir -p "$chart"
cp -R "$root/deploy/chart/." "$chart/"
[ "$(grep -c '^name:' "$chart/Chart.yaml")" = 1 ] || die "deploy/chart/Chart.yaml needs exactly one name"
sed -i "s/^name:.*/name: $chart_name/" "$chart/Chart.yaml"
mkdir -p "$chart/files"
for crd in $(find "$root/crds" -maxdepth 1 -name '*.yaml' | LC_ALL=C sort); do
  echo "---"
  cat "$crd"
done >"$chart/files/crds.yaml"
find "$chart" -type d -exec chmod 755 {} +
find "$chart" -type f -exec chmod 644 {} +
tgz=$work/$chart_name-$chart_version.tgz
(cd "$work" && LC_ALL=C tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf - "$chart_name" | gzip -9n) >"$tgz"

# The admission's two charts (deploy/admission), packaged the same way.
admission_tgz=()
for part in runtime application; do
  cp -R "$root/deploy/admission/$part" "$work/$chart_name-admission-$part"
  find "$work/$chart_name-admission-$part" -type d -exec chmod 755 {} +
  find "$work/$chart_name-admission-$part" -type f -exec chmod 644 {} +
  admission_tgz+=("$work/$chart_name-admission-$part-$chart_version.tgz")
  (cd "$work" && LC_ALL=C tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf - "$chart_name-admission-$part" | gzip -9n) \
    >"$work/$chart_name-admission-$part-$chart_version.tgz"
done

if [ -n "$package_dir" ]; then
  mkdir -p "$package_dir"
  for t in "$tgz" "${admission_tgz[@]}"; do
    cp "$t" "$package_dir/"
    echo "$package_dir/${t##*/}"
  done
  exit 0
fi

# indent N: prefixes every line with N spaces, to place a block at its depth in a document.
indent() { sed "s/^/$(printf '%*s' "$1" '')/"; }

# The chart values of both forms: gardenlet merges its own `gardener` values over them
# (tests/fixtures/gardenlet-values.yaml).
values=$(
  cat <<YAML
# gardenlet installs into extension-<installation> and creates that namespace itself.
namespace: null
createNamespace: false
installCRDs: true
image:
  repository: ontap-operator
  tag: "$app_version"
extension:
  enabled: true
  type: ontap
ontapClusters: []
YAML
)

# The resources of both forms, as gardener-operator copies them into the ControllerRegistration.
resources=$(
  cat <<'YAML'
# No autoEnable (formerly globallyEnabled: false): only shoots that list the extension get it.
- kind: Extension
  type: ontap
  primary: true
  # Trident runs on nodes.
  workerlessSupported: false
  # Creating an SVM, its LIFs and account and rolling out Trident takes longer than the
  # default 3 minutes gardenlet waits.
  reconcileTimeout: 10m
  lifecycle:
    # After the workers: Trident's operator and node plugin need nodes to become healthy.
    reconcile: AfterWorker
    # While the shoot's API server still runs, so the shoot's objects can be removed.
    delete: BeforeKubeAPIServer
    migrate: BeforeKubeAPIServer
YAML
)

# The metadata of both: gardener-operator names the ControllerRegistration after the Extension
# and carries this annotation over; gardenlet puts it on the release namespace.
metadata=$(
  cat <<YAML
name: $name
annotations:
  # The operator's pod meets the restricted Pod Security Standard.
  security.gardener.cloud/pod-security-enforce: restricted
YAML
)

raw_chart=$(base64 -w0 <"$tgz")
mkdir -p "$out_dir"
cat >"$out_dir/controller-registration.yaml" <<YAML
# The ontap extension for a Gardener landscape; apply it to the garden cluster. With
# gardener-operator, apply extension.yaml to the runtime cluster instead.
# Generated by hack/gardener-registration.sh from deploy/chart and crds/ (make gardener-registration):
# do not edit.
#
# ONTAP administrator credentials stay in Secrets: create a Secret in the garden namespace,
# labelled as gardenlet requires of a referenced resource, e.g.
#   kubectl -n garden create secret generic ontap-admin-lab --from-literal=username=admin --from-literal=password=...
#   kubectl -n garden label secret ontap-admin-lab gardener.cloud/role=resource-reference
# and reference it in the ControllerDeployment:
#   resources:
#   - name: ontapAdminLab
#     resourceRef: {apiVersion: v1, kind: Secret, name: ontap-admin-lab}
#   helm.values.ontapClusters:
#   - name: lab
#     endpoint: https://<cluster management LIF>
#     credentials:
#       username: "{{ .resources.ontapAdminLab.data.username }}"
#       password: "{{ .resources.ontapAdminLab.data.password }}"
# gardenlet fills these in when it installs the chart, which keeps them in a Secret in the seed.
#
# A landscape relocating the images the extension delivers into shoots (an air-gapped one: all
# of them) gives Gardener's image vector overwrite (docs/gardener.md, Images):
#   helm.values.imageVectorOverwrite: |
#     images:
#     - name: trident-operator
#       repository: <mirror>/netapp/trident-operator
#     - ...
apiVersion: core.gardener.cloud/v1
kind: ControllerDeployment
metadata:
  name: $name
helm:
  values:
$(indent 4 <<<"$values")
  rawChart: $raw_chart
---
apiVersion: core.gardener.cloud/v1beta1
kind: ControllerRegistration
metadata:
$(indent 2 <<<"$metadata")
spec:
  deployment:
    policy: OnDemand
    deploymentRefs:
      - name: $name
  resources:
$(indent 4 <<<"$resources")
YAML
log "wrote $out_dir/controller-registration.yaml"

ref=${oci_repository#oci://}/$chart_name:$chart_version
cat >"$out_dir/extension.yaml" <<YAML
# The ontap extension for a landscape run by gardener-operator; apply it to the garden's runtime
# cluster. gardener-operator writes the ControllerRegistration and ControllerDeployment
# \`$name\` of controller-registration.yaml from it, with the chart pulled from an OCI registry.
# Generated by hack/gardener-registration.sh (make gardener-registration): do not edit. For your
# registry, push the chart and regenerate:
#   hack/gardener-registration.sh --package-chart /tmp/charts
#   for c in /tmp/charts/*.tgz; do helm push "\$c" oci://<registry>/<path>; done
#   hack/gardener-registration.sh --oci-repository oci://<registry>/<path> --out-dir <dir>
#
# ONTAP administrator credentials: as in controller-registration.yaml, with the Secret in the
# runtime cluster's garden namespace and its reference in spec.deployment.resources;
# gardener-operator copies it into the virtual garden. An image vector overwrite: as in
# controller-registration.yaml, in spec.deployment.extension.values.
apiVersion: operator.gardener.cloud/v1alpha1
kind: Extension
metadata:
$(indent 2 <<<"$metadata")
spec:
  deployment:
    extension:
      policy: OnDemand
      helm:
        ociRepository:
          ref: $ref
      values:
$(indent 8 <<<"$values")
    # The garden's admission (docs/gardener.md, Admission): the webhook that refuses a Shoot's
    # providerConfig where it is written. Its values must judge as the seed does: the same
    # extension type and allowShootImages as extension.values above.
    admission:
      runtimeCluster:
        helm:
          ociRepository:
            ref: ${oci_repository#oci://}/$chart_name-admission-runtime:$chart_version
      virtualCluster:
        helm:
          ociRepository:
            ref: ${oci_repository#oci://}/$chart_name-admission-application:$chart_version
      values:
        image:
          repository: ontap-operator
          tag: "$app_version"
        extensionType: ontap
        allowShootImages: false
  resources:
$(indent 4 <<<"$resources")
YAML
log "wrote $out_dir/extension.yaml"

//! The Trident operator and its install: its CRDs, the credentials Secret, the operator with its
//! RBAC, the orchestrator, and the network policy and NVMe module loader Trident needs.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::ObjectMeta;
use secrecy::ExposeSecret;
use serde_json::{Value, json};

use crate::extension::config::{Lif, Protocol};

use super::{
    ORIGIN, RenderError, ShootImages, ShootInputs, TRIDENT_CONTROLLER_APP, TRIDENT_NAMESPACE,
    TRIDENT_OPERATOR, TRIDENT_OPERATOR_APP, render_error,
};

/// The CRDs the Trident operator needs before it runs; the rest of Trident's CRDs (including
/// `TridentBackendConfig`) it installs itself. Schemaless, as Trident's own are.
pub(super) fn trident_crds() -> Vec<Value> {
    let crd = |kind: &str, plural: &str, short: &[&str], columns: Value| {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{plural}.trident.netapp.io")},
            "spec": {
                "group": "trident.netapp.io",
                "scope": "Cluster",
                "names": {
                    "kind": kind,
                    "listKind": format!("{kind}List"),
                    "plural": plural,
                    "singular": kind.to_lowercase(),
                    "shortNames": short,
                },
                "versions": [{
                    "name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": columns,
                }],
            }
        })
    };
    let column = |name: &str, path: &str| json!({"name": name, "type": "string", "priority": 0, "jsonPath": path});
    vec![
        crd(
            "TridentOrchestrator",
            "tridentorchestrators",
            &["torc", "torchestrator"],
            json!([]),
        ),
        crd(
            "TridentConfigurator",
            "tridentconfigurators",
            &["tconf", "tconfigurator"],
            json!([
                column("Phase", ".status.phase"),
                column("Status", ".status.lastOperationStatus")
            ]),
        ),
    ]
}

pub(super) fn credentials_secret(inputs: &ShootInputs<'_>) -> Result<Value, RenderError> {
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(inputs.secret_name.to_string()),
            namespace: Some(TRIDENT_NAMESPACE.into()),
            labels: Some(BTreeMap::from([(
                "app.kubernetes.io/part-of".to_string(),
                ORIGIN.to_string(),
            )])),
            ..ObjectMeta::default()
        },
        type_: Some("Opaque".into()),
        data: Some(BTreeMap::from([
            (
                "username".to_string(),
                ByteString(inputs.credentials.username.clone().into_bytes()),
            ),
            (
                "password".to_string(),
                ByteString(
                    inputs
                        .credentials
                        .password
                        .expose_secret()
                        .as_bytes()
                        .to_vec(),
                ),
            ),
        ])),
        ..Secret::default()
    };
    let mut value =
        serde_json::to_value(secret).map_err(|e| render_error("the credentials Secret")(&e))?;
    value["apiVersion"] = json!("v1");
    value["kind"] = json!("Secret");
    Ok(value)
}

pub(super) fn trident_init(inputs: &ShootInputs<'_>) -> Vec<Value> {
    // Only a configuration the operator allowed to choose (`parse_provider_config`) names one.
    let image = inputs
        .config
        .trident_operator_image
        .as_deref()
        .unwrap_or(&inputs.images.trident_operator);
    let labels = json!({"app": TRIDENT_OPERATOR_APP});
    let mut objects = vec![
        json!({
            "apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": TRIDENT_OPERATOR, "namespace": TRIDENT_NAMESPACE, "labels": labels},
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": TRIDENT_OPERATOR, "labels": labels},
            "rules": trident_operator_rules(),
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": TRIDENT_OPERATOR, "labels": labels},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": TRIDENT_OPERATOR},
            "subjects": [{"kind": "ServiceAccount", "name": TRIDENT_OPERATOR, "namespace": TRIDENT_NAMESPACE}],
        }),
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": TRIDENT_OPERATOR, "namespace": TRIDENT_NAMESPACE, "labels": labels},
            "spec": {
                "replicas": 1,
                "strategy": {"type": "Recreate"},
                "selector": {"matchLabels": {"app": TRIDENT_OPERATOR_APP, "name": TRIDENT_OPERATOR}},
                "template": {
                    "metadata": {"labels": {
                        "app": TRIDENT_OPERATOR_APP, "name": TRIDENT_OPERATOR,
                        "networking.gardener.cloud/to-dns": "allowed",
                        "networking.gardener.cloud/to-apiserver": "allowed",
                    }},
                    "spec": {
                        "serviceAccountName": TRIDENT_OPERATOR,
                        "containers": [{
                            "name": TRIDENT_OPERATOR,
                            "image": image,
                            "imagePullPolicy": "IfNotPresent",
                            "command": ["/trident-operator", "--log-level=info"],
                            "env": [
                                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                                {"name": "OPERATOR_NAME", "value": TRIDENT_OPERATOR},
                            ],
                            "resources": {
                                "requests": {"cpu": "10m", "memory": "40Mi"},
                                "limits": {"memory": "80Mi"},
                            },
                            "securityContext": {
                                "allowPrivilegeEscalation": false,
                                "capabilities": {"drop": ["ALL"]},
                            },
                        }],
                        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [{"matchExpressions": [
                                {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64", "amd64"]},
                                {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
                            ]}],
                        }}},
                    },
                },
            },
        }),
        trident_orchestrator(inputs),
        management_network_policy(&inputs.config.management_lif),
    ];
    if inputs.config.protocols.contains(&Protocol::Nvme) {
        objects.push(nvme_module_loader(inputs.images));
    }
    objects
}

/// The TridentOrchestrator, naming every image the Trident operator pulls, so the landscape's
/// image vector relocates them too (NetApp/trident `installer.go` `setInstallationParams`):
/// `tridentImage` and `autosupportImage` replace Trident's defaults, and `imageRegistry` then
/// applies to the CSI sidecars alone (it rewrites the other two only where they are not given).
///
/// A providerConfig's own Trident operator may be of another release, whose operator refuses a
/// Trident image not its own (`imagePrechecks`) and pulls sidecars of other tags: the shoot owner
/// who chose it gets that operator's own defaults.
fn trident_orchestrator(inputs: &ShootInputs<'_>) -> Value {
    let mut spec = json!({
        "namespace": TRIDENT_NAMESPACE,
        "enableForceDetach": true,
        "debug": false,
        "silenceAutosupport": false,
        "imagePullPolicy": "IfNotPresent",
    });
    if inputs.config.trident_operator_image.is_none() {
        let images = inputs.images;
        spec["tridentImage"] = json!(images.trident);
        spec["autosupportImage"] = json!(images.trident_autosupport);
        spec["imageRegistry"] = json!(images.csi_sidecar_registry);
    }
    json!({
        "apiVersion": "trident.netapp.io/v1", "kind": "TridentOrchestrator",
        "metadata": {"name": "trident"},
        "spec": spec,
    })
}

/// Trident's controller talks to ONTAP through the management LIF (HTTPS).
pub(super) fn management_network_policy(lif: &Lif) -> Value {
    let host = if lif.ip.is_ipv4() { 32 } else { 128 };
    json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": {"name": "allow-trident-to-ontap-management", "namespace": TRIDENT_NAMESPACE},
        "spec": {
            "podSelector": {"matchLabels": {"app": TRIDENT_CONTROLLER_APP}},
            "policyTypes": ["Egress"],
            "egress": [{
                "to": [{"ipBlock": {"cidr": format!("{}/{host}", lif.ip)}}],
                "ports": [{"protocol": "TCP", "port": 443}],
            }],
        },
    })
}

/// NVMe/TCP needs the `nvme_tcp` kernel module on every node before Trident's node plugin
/// connects; sysfs spells module directories with `_`.
pub(super) fn nvme_module_loader(images: &ShootImages) -> Value {
    let labels = json!({"app": "ontap-nvme-tcp"});
    json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "ontap-nvme-tcp", "namespace": TRIDENT_NAMESPACE, "labels": labels},
        "spec": {
            "selector": {"matchLabels": labels},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "priorityClassName": "system-node-critical",
                    "initContainers": [{
                        "name": "load-nvme-tcp",
                        "image": images.nvme_init,
                        "command": ["/bin/sh", "-c",
                            "[ -d /sys/module/nvme_tcp ] || modprobe nvme_tcp || { echo 'cannot load the nvme_tcp kernel module' >&2; exit 1; }"],
                        "securityContext": {"privileged": true},
                        "volumeMounts": [{"name": "modules", "mountPath": "/lib/modules", "readOnly": true}],
                    }],
                    "containers": [{
                        "name": "pause",
                        "image": images.pause,
                        "resources": {"requests": {"cpu": "1m", "memory": "8Mi"}, "limits": {"memory": "16Mi"}},
                        "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}},
                    }],
                    "volumes": [{"name": "modules", "hostPath": {"path": "/lib/modules"}}],
                    "tolerations": [
                        {"effect": "NoSchedule", "operator": "Exists"},
                        {"effect": "NoExecute", "operator": "Exists"},
                    ],
                },
            },
        },
    })
}

/// The Trident operator's ClusterRole, as Trident's operator bundle grants it: what Trident
/// itself needs (it grants that on to Trident's controller), plus managing Trident's workloads.
/// Long because it is a table: kept whole, in the bundle's order, so it reads against the bundle.
pub(super) fn trident_operator_rules() -> Value {
    const ALL: &[&str] = &[
        "get", "list", "watch", "create", "delete", "update", "patch",
    ];
    const MODIFY: &[&str] = &["delete", "update", "patch"];
    const RBAC_KINDS: &[&str] = &[
        "roles",
        "rolebindings",
        "clusterroles",
        "clusterrolebindings",
    ];
    let rule = |groups: &[&str], resources: &[&str], verbs: &[&str], names: &[&str]| {
        let mut r = json!({"apiGroups": groups, "resources": resources, "verbs": verbs});
        if !names.is_empty() {
            r["resourceNames"] = json!(names);
        }
        r
    };
    let trident_kinds = [
        "tridentversions",
        "tridentbackends",
        "tridentstorageclasses",
        "tridentvolumes",
        "tridentvolumepublications",
        "tridentvolumereferences",
        "tridentnodes",
        "tridenttransactions",
        "tridentsnapshots",
        "tridentbackendconfigs",
        "tridentbackendconfigs/status",
        "tridentmirrorrelationships",
        "tridentmirrorrelationships/status",
        "tridentactionmirrorupdates",
        "tridentactionmirrorupdates/status",
        "tridentsnapshotinfos",
        "tridentsnapshotinfos/status",
        "tridentactionsnapshotrestores",
        "tridentactionsnapshotrestores/status",
        "tridentgroupsnapshots",
        "tridentorchestrators",
        "tridentorchestrators/status",
        "tridentconfigurators",
        "tridentconfigurators/status",
    ];
    let trident_workloads = ["trident", "trident-csi", "trident-controller"];
    let trident_node_workloads = [
        "trident",
        "trident-csi",
        "trident-node-linux",
        "trident-node-windows",
    ];
    let trident_accounts = [
        "trident-controller",
        "trident-node-linux",
        "trident-node-windows",
        "trident-csi",
        "trident",
    ];
    json!([
        rule(
            &[""],
            &["namespaces"],
            &["get", "list", "create", "patch"],
            &[]
        ),
        rule(
            &[""],
            &[
                "persistentvolumes",
                "persistentvolumeclaims",
                "events",
                "secrets",
                "resourcequotas",
                "pods"
            ],
            ALL,
            &[]
        ),
        rule(
            &[""],
            &["persistentvolumeclaims/status"],
            &["update", "patch"],
            &[]
        ),
        rule(&[""], &["pods/log"], &["get", "list", "watch"], &[]),
        rule(&[""], &["nodes"], &["get", "list", "watch", "update"], &[]),
        rule(
            &["storage.k8s.io"],
            &["storageclasses", "csidrivers", "csinodes"],
            ALL,
            &[]
        ),
        rule(
            &["storage.k8s.io"],
            &["volumeattachments"],
            &["get", "list", "watch", "update", "patch"],
            &[]
        ),
        rule(
            &["storage.k8s.io"],
            &["volumeattachments/status"],
            &["update", "patch"],
            &[]
        ),
        rule(
            &["snapshot.storage.k8s.io"],
            &["volumesnapshots", "volumesnapshotclasses"],
            &["get", "list", "watch", "update", "patch"],
            &[]
        ),
        rule(
            &["snapshot.storage.k8s.io"],
            &["volumesnapshotclasses"],
            &["create"],
            &[]
        ),
        rule(
            &["snapshot.storage.k8s.io"],
            &["volumesnapshots/status", "volumesnapshotcontents/status"],
            &["update", "patch"],
            &[]
        ),
        rule(
            &["snapshot.storage.k8s.io"],
            &["volumesnapshotcontents"],
            ALL,
            &[]
        ),
        rule(
            &["apiextensions.k8s.io"],
            &["customresourcedefinitions"],
            ALL,
            &[]
        ),
        rule(&["trident.netapp.io"], &trident_kinds, ALL, &[]),
        rule(
            &["apps"],
            &["deployments", "daemonsets", "statefulsets"],
            &["get", "list", "watch", "create"],
            &[]
        ),
        rule(
            &["apps"],
            &["deployments", "statefulsets"],
            MODIFY,
            &trident_workloads
        ),
        rule(&["apps"], &["daemonsets"], MODIFY, &trident_node_workloads),
        rule(
            &[""],
            &["pods/exec", "services", "serviceaccounts"],
            &["get", "list", "create"],
            &[]
        ),
        rule(
            &[""],
            &["pods/exec", "services"],
            MODIFY,
            &["trident-csi", "trident"]
        ),
        rule(&[""], &["serviceaccounts"], MODIFY, &trident_accounts),
        rule(
            &["rbac.authorization.k8s.io"],
            RBAC_KINDS,
            &["list", "create"],
            &[]
        ),
        rule(
            &["rbac.authorization.k8s.io"],
            RBAC_KINDS,
            MODIFY,
            &trident_accounts
        ),
    ])
}

//! Trident's backends and the StorageClasses that use them.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::extension::config::{Protocol, ReclaimPolicy, StorageClassConfig};

use super::{ENCRYPTION_KEY_SECRET, ShootInputs, TRIDENT_NAMESPACE, TRIDENT_PROVISIONER, dns_name};

/// The backend of a protocol: metal-stack's name for the first protocol (so a switching shoot
/// keeps its backend), the protocol appended for further ones.
pub(super) fn backend_name(inputs: &ShootInputs<'_>, protocol: Protocol) -> String {
    if inputs.config.protocols.first() == Some(&protocol) {
        format!("ontap-{}", inputs.svm_name)
    } else {
        format!("ontap-{}-{}", inputs.svm_name, protocol.as_str())
    }
}

pub(super) fn backends(inputs: &ShootInputs<'_>) -> Vec<Value> {
    let mut objects: Vec<Value> = inputs
        .config
        .protocols
        .iter()
        .map(|&protocol| backend_config(inputs, protocol))
        .collect();
    objects.extend(
        inputs
            .config
            .storage_classes
            .iter()
            .map(|class| storage_class(inputs, class)),
    );
    objects
}

pub(super) fn backend_config(inputs: &ShootInputs<'_>, protocol: Protocol) -> Value {
    let name = backend_name(inputs, protocol);
    // Trident wants an IPv6 management LIF in brackets.
    let management = match inputs.config.management_lif.ip {
        std::net::IpAddr::V4(ip) => ip.to_string(),
        std::net::IpAddr::V6(ip) => format!("[{ip}]"),
    };
    let mut spec = json!({
        "version": 1,
        "backendName": name,
        "managementLIF": management,
        "credentials": {"name": inputs.secret_name},
    });
    // Trident speaks ZAPI on 9.12.1 to before 9.15.1 unless asked for REST, and the account has
    // `ontapi` only where ZAPI is the only choice (`crate::ontap::trident_api`).
    if let Some(use_rest) = inputs.trident_api.use_rest() {
        spec["useREST"] = json!(use_rest);
    }
    match protocol {
        Protocol::Nvme | Protocol::Iscsi => {
            spec["storageDriverName"] = json!("ontap-san");
            spec["sanType"] = json!(protocol.as_str());
            // Virtual pools by encryption: the classes select them with `luks=...`.
            spec["storage"] = json!([
                {"labels": {"luks": "true"}, "defaults": {"luksEncryption": "true"}},
                {"labels": {"luks": "false"}, "defaults": {"luksEncryption": "false"}},
            ]);
        }
        Protocol::Nfs => {
            spec["storageDriverName"] = json!("ontap-nas");
            spec["nasType"] = json!("nfs");
            // Without it Trident uses the SVM's `default` export policy, which has no rules on a
            // new SVM: volumes would be created and every mount refused. Trident keeps one
            // policy per backend whose rules admit the nodes' addresses within these networks.
            spec["autoExportPolicy"] = json!(true);
            spec["autoExportCIDRs"] = json!(inputs.node_cidrs);
        }
    }
    json!({
        "apiVersion": "trident.netapp.io/v1", "kind": "TridentBackendConfig",
        "metadata": {"name": format!("{}-backend", dns_name(&name)), "namespace": TRIDENT_NAMESPACE},
        "spec": spec,
    })
}

pub(super) fn storage_class(inputs: &ShootInputs<'_>, class: &StorageClassConfig) -> Value {
    let protocol = inputs.config.protocol_of(class);
    let mut parameters = BTreeMap::new();
    if protocol.is_san() {
        parameters.insert("backendType".to_string(), "ontap-san".to_string());
        parameters.insert("provisioningType".to_string(), "thin".to_string());
        parameters.insert("fsType".to_string(), "ext4".to_string());
        parameters.insert(
            "selector".to_string(),
            format!("luks={}", if class.encrypted { "true" } else { "false" }),
        );
        if class.encrypted {
            for step in ["node-stage", "node-expand"] {
                parameters.insert(
                    format!("csi.storage.k8s.io/{step}-secret-name"),
                    ENCRYPTION_KEY_SECRET.to_string(),
                );
                parameters.insert(
                    format!("csi.storage.k8s.io/{step}-secret-namespace"),
                    "${pvc.namespace}".to_string(),
                );
            }
        }
        // Two block protocols share the backend type: pin the class to its own backend.
        if inputs
            .config
            .protocols
            .iter()
            .filter(|p| p.is_san())
            .count()
            > 1
        {
            parameters.insert(
                "storagePools".to_string(),
                format!("{}:.*", backend_name(inputs, protocol)),
            );
        }
    } else {
        parameters.insert("backendType".to_string(), "ontap-nas".to_string());
    }
    let mut object = json!({
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": class.name},
        "provisioner": TRIDENT_PROVISIONER,
        "parameters": parameters,
        "allowVolumeExpansion": true,
        "reclaimPolicy": match class.reclaim_policy {
            ReclaimPolicy::Delete => "Delete",
            ReclaimPolicy::Retain => "Retain",
        },
    });
    if class.default {
        object["metadata"]["annotations"] =
            json!({"storageclass.kubernetes.io/is-default-class": "true"});
    }
    object
}

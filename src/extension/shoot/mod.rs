//! What lands in the shoot, and the ManagedResources that carry it there.
//!
//! Four ManagedResources in the shoot namespace of the seed, named as metal-stack's extension
//! names them so a switch adopts the objects already in the shoot instead of duplicating them:
//!
//! | ManagedResource | contents (shoot `kube-system` unless cluster-scoped) |
//! | --- | --- |
//! | `trident-crds` | CRDs `tridentorchestrators` and `tridentconfigurators` (the Trident operator's own) |
//! | `trident-svm-secret` | the SVM account's credentials Secret |
//! | `trident-init` | the Trident operator (ServiceAccount, ClusterRole, ClusterRoleBinding, Deployment), the `TridentOrchestrator` that makes it install Trident, a NetworkPolicy letting Trident reach the management LIF, and with NVMe a DaemonSet loading `nvme_tcp` on every node |
//! | `trident-backends` | a `TridentBackendConfig` per protocol and the StorageClasses |
//!
//! Each is built as Gardener's `managedresources.CreateForShoot` builds it: an immutable,
//! garbage-collectable Opaque Secret `managedresource-<name>-<checksum>` holding one manifest
//! per key, which must be written first, then the ManagedResource without a class (served by
//! the shoot's resource manager), `injectLabels` `shoot.gardener.cloud/no-cleanup=true` and the
//! `origin` label. `keepObjects` is false in normal operation, so deleting the Extension removes
//! what it put into the shoot; migration sets it to true before deleting the ManagedResources
//! ([`KEEP_OBJECTS_PATCH`]), so the shoot keeps working while the control plane moves.
//!
//! The `TridentBackendConfig` kind exists in the shoot only once the Trident operator has
//! installed Trident: until then the resource manager reports `trident-backends` as not applied
//! and retries, and the controller waits.
//!
//! StorageClass parameters are immutable in Kubernetes: metal-stack's `ontap-gold` and
//! `ontap-encrypted` are rendered with exactly metal-stack's parameters, or the resource manager
//! could not update the classes of a shoot that switches.

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::ObjectMeta;
use secrecy::SecretString;
use serde_json::Value;

use super::api::{LocalObjectReference, ManagedResource, ManagedResourceSpec};
use super::config::ExtensionConfig;
use super::imagevector::{ImageVector, ImageVectorError};
use crate::ontap::trident_api::TridentApi;

/// The ManagedResources of the shoot delivery, in the order they are written.
pub const MANAGED_RESOURCE_NAMES: [&str; 4] = [
    CRDS_MANAGED_RESOURCE,
    SECRET_MANAGED_RESOURCE,
    INIT_MANAGED_RESOURCE,
    BACKENDS_MANAGED_RESOURCE,
];
pub const CRDS_MANAGED_RESOURCE: &str = "trident-crds";
pub const SECRET_MANAGED_RESOURCE: &str = "trident-svm-secret";
pub const INIT_MANAGED_RESOURCE: &str = "trident-init";
pub const BACKENDS_MANAGED_RESOURCE: &str = "trident-backends";

/// The `origin` label of this operator's ManagedResources.
pub const ORIGIN: &str = "ontap-operator";
/// Where Trident runs in the shoot.
pub const TRIDENT_NAMESPACE: &str = "kube-system";
/// Trident's CSI driver name, the StorageClasses' provisioner.
pub const TRIDENT_PROVISIONER: &str = "csi.trident.netapp.io";
/// The Secret in a PVC's namespace holding the LUKS passphrase of encrypted classes.
pub const ENCRYPTION_KEY_SECRET: &str = "storage-encryption-key";

const SECRET_PREFIX: &str = "managedresource-";
const GARBAGE_COLLECTABLE_LABEL: &str = "resources.gardener.cloud/garbage-collectable-reference";
const NO_CLEANUP_LABEL: &str = "shoot.gardener.cloud/no-cleanup";
const TRIDENT_OPERATOR: &str = "trident-operator";
const TRIDENT_OPERATOR_APP: &str = "operator.trident.netapp.io";
const TRIDENT_CONTROLLER_APP: &str = "controller.csi.trident.netapp.io";

/// A JSON merge patch setting `spec.keepObjects=true`: before a migration deletes the
/// ManagedResources, so the shoot's objects stay.
pub const KEEP_OBJECTS_PATCH: &str = r#"{"spec":{"keepObjects":true}}"#;

/// The image vector's names of the images a shoot runs (`imagevector/images.yaml`).
pub const TRIDENT_OPERATOR_IMAGE: &str = "trident-operator";
pub const TRIDENT_IMAGE: &str = "trident";
pub const TRIDENT_AUTOSUPPORT_IMAGE: &str = "trident-autosupport";
/// A registry, not an image: Trident appends its CSI sidecars' names and tags.
pub const CSI_SIDECAR_REGISTRY: &str = "csi-sidecar-registry";
pub const NVME_MODULE_LOADER_IMAGE: &str = "nvme-module-loader";
pub const PAUSE_IMAGE: &str = "pause-container";
/// Every image a shoot may run: the embedded vector lists exactly these.
pub const SHOOT_IMAGE_NAMES: [&str; 6] = [
    TRIDENT_OPERATOR_IMAGE,
    TRIDENT_IMAGE,
    TRIDENT_AUTOSUPPORT_IMAGE,
    CSI_SIDECAR_REGISTRY,
    NVME_MODULE_LOADER_IMAGE,
    PAUSE_IMAGE,
];

/// Images the shoot runs, looked up once at startup in the image vector with the landscape's
/// overwrite. A providerConfig's Trident operator image, where the operator allows one, wins
/// over this one, and then Trident's own images are the ones that operator picks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShootImages {
    pub trident_operator: String,
    /// The TridentOrchestrator's `tridentImage`.
    pub trident: String,
    /// The TridentOrchestrator's `autosupportImage`.
    pub trident_autosupport: String,
    /// The TridentOrchestrator's `imageRegistry`, where the CSI sidecars come from.
    pub csi_sidecar_registry: String,
    /// Runs `modprobe` in the NVMe DaemonSet's init container.
    pub nvme_init: String,
    /// Keeps the NVMe DaemonSet's pods alive after the init container.
    pub pause: String,
}

impl ShootImages {
    pub fn from_vector(vector: &ImageVector) -> Result<Self, ImageVectorError> {
        Ok(Self {
            trident_operator: vector.find(TRIDENT_OPERATOR_IMAGE)?,
            trident: vector.find(TRIDENT_IMAGE)?,
            trident_autosupport: vector.find(TRIDENT_AUTOSUPPORT_IMAGE)?,
            csi_sidecar_registry: vector.find_registry(CSI_SIDECAR_REGISTRY)?,
            nvme_init: vector.find(NVME_MODULE_LOADER_IMAGE)?,
            pause: vector.find(PAUSE_IMAGE)?,
        })
    }

    /// The embedded vector's, without a landscape's overwrite.
    pub fn embedded() -> Result<Self, ImageVectorError> {
        Self::from_vector(&ImageVector::embedded()?)
    }
}

/// The SVM account the shoot's Trident uses. `Debug` hides the password.
#[derive(Clone, Debug)]
pub struct ShootCredentials {
    pub username: String,
    pub password: SecretString,
}

/// Everything the shoot delivery depends on.
#[derive(Clone, Debug)]
pub struct ShootInputs<'a> {
    pub config: &'a ExtensionConfig,
    /// The SVM's name in ONTAP.
    pub svm_name: &'a str,
    /// Name of the credentials Secret in the shoot (and of the seed Secret it copies).
    pub secret_name: &'a str,
    pub credentials: &'a ShootCredentials,
    pub images: &'a ShootImages,
    /// The API Trident speaks with this cluster's ONTAP version.
    pub trident_api: TridentApi,
    /// Where the shoot's nodes mount NFS volumes from: the NAS backend's `autoExportCIDRs`.
    pub node_cidrs: &'a [String],
}

/// One ManagedResource and the Secret it references; write the Secret first.
#[derive(Clone)]
pub struct ManagedResourceBundle {
    pub secret: Secret,
    pub managed_resource: ManagedResource,
}

/// The Secret holds the shoot's credentials in clear: only names are shown.
impl fmt::Debug for ManagedResourceBundle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManagedResourceBundle")
            .field("secret", &self.secret.metadata.name)
            .field("managed_resource", &self.managed_resource.metadata.name)
            .finish()
    }
}

/// A manifest could not be serialized (only a bug can cause this).
#[derive(Debug, thiserror::Error)]
#[error("cannot serialize {what}: {message}")]
pub struct RenderError {
    what: String,
    message: String,
}

fn render_error(what: impl Into<String>) -> impl FnOnce(&dyn fmt::Display) -> RenderError {
    let what = what.into();
    move |e| RenderError {
        what,
        message: e.to_string(),
    }
}

/// The four ManagedResources of the shoot delivery, in [`MANAGED_RESOURCE_NAMES`] order.
pub fn shoot_delivery(
    namespace: &str,
    inputs: &ShootInputs<'_>,
    keep_objects: bool,
) -> Result<Vec<ManagedResourceBundle>, RenderError> {
    [
        (CRDS_MANAGED_RESOURCE, trident_crds()),
        (SECRET_MANAGED_RESOURCE, vec![credentials_secret(inputs)?]),
        (INIT_MANAGED_RESOURCE, trident_init(inputs)),
        (BACKENDS_MANAGED_RESOURCE, backends(inputs)),
    ]
    .into_iter()
    .map(|(name, objects)| managed_resource(namespace, name, ORIGIN, keep_objects, &objects))
    .collect()
}

/// Gardener's `CreateForShoot` without the API calls: the Secret (immutable, named after the
/// checksum of its data, garbage-collectable) and the ManagedResource referencing it.
pub fn managed_resource(
    namespace: &str,
    name: &str,
    origin: &str,
    keep_objects: bool,
    objects: &[Value],
) -> Result<ManagedResourceBundle, RenderError> {
    let data = objects
        .iter()
        .map(|object| {
            let key = manifest_key(object);
            let yaml = serde_yaml::to_string(object).map_err(|e| render_error(&key)(&e))?;
            Ok((key, yaml.into_bytes()))
        })
        .collect::<Result<BTreeMap<String, Vec<u8>>, RenderError>>()?;
    let secret = unique_secret(&format!("{SECRET_PREFIX}{name}"), namespace, data);
    let secret_name = secret.metadata.name.clone().unwrap_or_default();
    let managed_resource = ManagedResource {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(namespace.to_string()),
            labels: Some(BTreeMap::from([("origin".to_string(), origin.to_string())])),
            ..ObjectMeta::default()
        },
        spec: ManagedResourceSpec {
            secret_refs: vec![LocalObjectReference { name: secret_name }],
            keep_objects: Some(keep_objects),
            inject_labels: BTreeMap::from([(NO_CLEANUP_LABEL.to_string(), "true".to_string())]),
            ..ManagedResourceSpec::default()
        },
        status: None,
    };
    Ok(ManagedResourceBundle {
        secret,
        managed_resource,
    })
}

/// Gardener's `NewSecret(…).Unique()` (`MakeUnique`): the Secret `<name>-<checksum>` of `data`,
/// immutable and garbage-collectable.
pub fn unique_secret(name: &str, namespace: &str, data: BTreeMap<String, Vec<u8>>) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(format!("{name}-{}", &gardener_checksum(&data)[..8])),
            namespace: Some(namespace.to_string()),
            labels: Some(BTreeMap::from([(
                GARBAGE_COLLECTABLE_LABEL.to_string(),
                "true".to_string(),
            )])),
            ..ObjectMeta::default()
        },
        type_: Some("Opaque".into()),
        immutable: Some(true),
        data: Some(data.into_iter().map(|(k, v)| (k, ByteString(v))).collect()),
        ..Secret::default()
    }
}

/// `<kind>__<namespace>__<name>.yaml`, Gardener's registry key for uncompressed manifests
/// (valid as a Secret key, unlike the full group/version/kind).
fn manifest_key(object: &Value) -> String {
    let text = |v: &Value| v.as_str().unwrap_or("").to_string();
    format!(
        "{}__{}__{}.yaml",
        text(&object["kind"]).to_lowercase(),
        text(&object["metadata"]["namespace"]),
        text(&object["metadata"]["name"]).replace(':', "_")
    )
}

/// Gardener's `ComputeSecretChecksum`: SHA-256 over the hex SHA-256 of each value, in key order.
pub fn gardener_checksum(data: &BTreeMap<String, Vec<u8>>) -> String {
    let inner: String = data.values().map(|v| sha256_hex(v)).collect();
    sha256_hex(inner.as_bytes())
}

/// The SHA-256 of `bytes` in lowercase hex, as Gardener's `ComputeSHA256Hex`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA256, bytes)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A Kubernetes object name made of an ONTAP name, which may hold `_` and capitals.
fn dns_name(text: &str) -> String {
    text.to_ascii_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

mod backends;
mod trident;

use backends::backends;
use trident::{credentials_secret, trident_crds, trident_init};

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::extension::config::{ConfigDefaults, parse_provider_config};
    use secrecy::ExposeSecret;
    use serde_json::json;

    fn config(raw: Value) -> ExtensionConfig {
        parse_provider_config(Some(&raw), &ConfigDefaults::default()).unwrap()
    }

    fn metal_stack() -> ExtensionConfig {
        config(json!({
            "apiVersion": "ontap.metal.extensions.gardener.cloud/v1alpha1", "kind": "TridentConfig",
            "svmIpaddresses": {"managementLif": "10.130.0.10", "dataLifs": ["10.130.0.11"]}
        }))
    }

    fn own(svm: Value) -> ExtensionConfig {
        let mut raw = json!({"apiVersion": "ontap.extensions.storage.dev/v1alpha1", "kind": "OntapConfig",
            "svm": {"managementLif": {"ip": "192.0.2.10", "prefixLength": 24},
                    "dataLifs": [{"ip": "192.0.2.11", "prefixLength": 24}]}});
        for (k, v) in svm.as_object().unwrap() {
            raw["svm"][k] = v.clone();
        }
        config(raw)
    }

    fn credentials() -> ShootCredentials {
        ShootCredentials {
            username: "web-a".into(),
            // Characters YAML and templates trip over must survive as they are.
            password: SecretString::from("p\"a: s#s'\n{{w}}"),
        }
    }

    const SVM: &str = "p0b1f9c3eaaaabbbbcccc123456789abc";
    const SECRET: &str = "p0b1f9c3eaaaabbbbcccc123456789abc-prod--web-a-credentials";

    fn render(config: &ExtensionConfig, keep_objects: bool) -> Vec<ManagedResourceBundle> {
        let images = ShootImages::embedded().unwrap();
        render_with(config, &images, TridentApi::Rest, keep_objects)
    }

    fn render_with(
        config: &ExtensionConfig,
        images: &ShootImages,
        trident_api: TridentApi,
        keep_objects: bool,
    ) -> Vec<ManagedResourceBundle> {
        let credentials = credentials();
        let nodes = vec!["10.250.0.0/16".to_string()];
        let inputs = ShootInputs {
            config,
            svm_name: SVM,
            secret_name: SECRET,
            credentials: &credentials,
            images,
            trident_api,
            node_cidrs: &nodes,
        };
        shoot_delivery("shoot--prod--web-a", &inputs, keep_objects).unwrap()
    }

    /// The manifests of one bundle, parsed back from its Secret.
    fn objects(bundle: &ManagedResourceBundle) -> Vec<Value> {
        bundle
            .secret
            .data
            .as_ref()
            .unwrap()
            .values()
            .map(|v| serde_yaml::from_slice(&v.0).unwrap())
            .collect()
    }

    fn find<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
        objects
            .iter()
            .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("no {kind} {name} in {objects:#?}"))
    }

    #[test]
    fn bundles_are_built_as_gardeners_create_for_shoot_builds_them() {
        let bundles = render(&metal_stack(), false);
        let names: Vec<_> = bundles
            .iter()
            .map(|b| b.managed_resource.metadata.name.clone().unwrap())
            .collect();
        assert_eq!(names, MANAGED_RESOURCE_NAMES);
        for bundle in &bundles {
            let secret = &bundle.secret;
            let name = secret.metadata.name.clone().unwrap();
            let mr = &bundle.managed_resource;
            assert!(name.starts_with(&format!(
                "managedresource-{}-",
                mr.metadata.name.clone().unwrap()
            )));
            let data: BTreeMap<String, Vec<u8>> = secret
                .data
                .clone()
                .unwrap()
                .into_iter()
                .map(|(k, v)| (k, v.0))
                .collect();
            assert!(
                name.ends_with(&gardener_checksum(&data)[..8]),
                "name carries the data's checksum"
            );
            assert_eq!(secret.immutable, Some(true));
            assert_eq!(secret.type_.as_deref(), Some("Opaque"));
            assert_eq!(
                secret.metadata.labels.clone().unwrap()["resources.gardener.cloud/garbage-collectable-reference"],
                "true"
            );
            assert!(
                data.keys().all(|k| k
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-._".contains(c))),
                "valid Secret keys: {:?}",
                data.keys()
            );
            assert_eq!(mr.spec.secret_refs, vec![LocalObjectReference { name }]);
            assert_eq!(
                mr.spec.class, None,
                "served by the shoot's resource manager"
            );
            assert_eq!(mr.spec.keep_objects, Some(false));
            assert_eq!(
                mr.spec.inject_labels["shoot.gardener.cloud/no-cleanup"],
                "true"
            );
            assert_eq!(mr.metadata.labels.clone().unwrap()["origin"], ORIGIN);
            assert_eq!(mr.metadata.namespace.as_deref(), Some("shoot--prod--web-a"));
        }
        assert!(
            render(&metal_stack(), true)
                .iter()
                .all(|b| b.managed_resource.spec.keep_objects == Some(true))
        );
    }

    #[test]
    fn checksum_is_gardeners() {
        // sha256(hex(sha256("x")) + hex(sha256("y"))), keys in order.
        let data = BTreeMap::from([
            ("b.yaml".to_string(), b"y".to_vec()),
            ("a.yaml".to_string(), b"x".to_vec()),
        ]);
        assert_eq!(
            gardener_checksum(&data),
            "80d888481399c652ab6f09cdee09a96f9f7b665b7758a573275ca76a536e5e5f"
        );
    }

    #[test]
    fn metal_stack_shoot_gets_metal_stacks_objects() {
        let bundles = render(&metal_stack(), false);
        let backends = objects(&bundles[3]);
        let tbc = find(
            &backends,
            "TridentBackendConfig",
            &format!("ontap-{SVM}-backend"),
        );
        assert_eq!(tbc["metadata"]["namespace"], "kube-system");
        assert_eq!(
            tbc["spec"],
            json!({"version": 1, "backendName": format!("ontap-{SVM}"), "storageDriverName": "ontap-san",
                "sanType": "nvme", "managementLIF": "10.130.0.10", "credentials": {"name": SECRET},
                "useREST": true,
                "storage": [{"labels": {"luks": "true"}, "defaults": {"luksEncryption": "true"}},
                            {"labels": {"luks": "false"}, "defaults": {"luksEncryption": "false"}}]})
        );
        // StorageClass parameters are immutable: byte for byte metal-stack's.
        let gold = find(&backends, "StorageClass", "ontap-gold");
        assert_eq!(gold["provisioner"], "csi.trident.netapp.io");
        assert_eq!(
            gold["parameters"],
            json!({"backendType": "ontap-san", "provisioningType": "thin", "selector": "luks=false", "fsType": "ext4"})
        );
        assert_eq!(gold["allowVolumeExpansion"], true);
        assert!(
            gold["metadata"].get("annotations").is_none(),
            "not the default class"
        );
        let encrypted = find(&backends, "StorageClass", "ontap-encrypted");
        assert_eq!(
            encrypted["parameters"],
            json!({"backendType": "ontap-san", "provisioningType": "thin", "selector": "luks=true", "fsType": "ext4",
                "csi.storage.k8s.io/node-expand-secret-name": "storage-encryption-key",
                "csi.storage.k8s.io/node-expand-secret-namespace": "${pvc.namespace}",
                "csi.storage.k8s.io/node-stage-secret-name": "storage-encryption-key",
                "csi.storage.k8s.io/node-stage-secret-namespace": "${pvc.namespace}"})
        );

        let crds = objects(&bundles[0]);
        find(
            &crds,
            "CustomResourceDefinition",
            "tridentorchestrators.trident.netapp.io",
        );
        find(
            &crds,
            "CustomResourceDefinition",
            "tridentconfigurators.trident.netapp.io",
        );

        let init = objects(&bundles[2]);
        let deployment = find(&init, "Deployment", "trident-operator");
        assert_eq!(
            deployment["spec"]["template"]["spec"]["containers"][0]["image"],
            ShootImages::embedded().unwrap().trident_operator
        );
        assert_eq!(
            deployment["spec"]["template"]["spec"]["serviceAccountName"],
            "trident-operator"
        );
        find(&init, "ServiceAccount", "trident-operator");
        find(&init, "ClusterRoleBinding", "trident-operator");
        let role = find(&init, "ClusterRole", "trident-operator");
        assert!(role["rules"].as_array().unwrap().iter().any(|r| {
            r["resources"]
                .as_array()
                .unwrap()
                .contains(&json!("tridentbackendconfigs"))
        }));
        assert_eq!(
            find(&init, "TridentOrchestrator", "trident")["spec"]["namespace"],
            "kube-system"
        );
        let loader = find(&init, "DaemonSet", "ontap-nvme-tcp");
        let script = loader["spec"]["template"]["spec"]["initContainers"][0]["command"][2]
            .as_str()
            .unwrap();
        assert!(
            script.contains("/sys/module/nvme_tcp"),
            "sysfs spells the module with '_'"
        );
        let policy = find(&init, "NetworkPolicy", "allow-trident-to-ontap-management");
        assert_eq!(
            policy["spec"]["egress"][0]["to"][0]["ipBlock"]["cidr"],
            "10.130.0.10/32"
        );
    }

    #[test]
    fn credentials_secret_carries_the_password_exactly() {
        let bundles = render(&metal_stack(), false);
        let secrets = objects(&bundles[1]);
        let secret: Secret =
            serde_json::from_value(find(&secrets, "Secret", SECRET).clone()).unwrap();
        let data = secret.data.unwrap();
        assert_eq!(data["username"].0, b"web-a");
        assert_eq!(
            data["password"].0,
            credentials().password.expose_secret().as_bytes()
        );
        assert_eq!(secret.metadata.namespace.as_deref(), Some("kube-system"));
        let shown = format!("{:?}", bundles[1]);
        assert!(
            !shown.contains("s#s") && !shown.contains("cyJz"),
            "Debug shows names only: {shown}"
        );
    }

    #[test]
    fn protocols_choose_backends_and_classes() {
        let nfs = own(json!({"protocols": ["nfs"]}));
        let backends = objects(&render(&nfs, false)[3]);
        let tbc = find(
            &backends,
            "TridentBackendConfig",
            &format!("ontap-{SVM}-backend"),
        );
        assert_eq!(tbc["spec"]["storageDriverName"], "ontap-nas");
        assert!(tbc["spec"].get("storage").is_none());
        // Mountable: Trident's own export policy, admitting the shoot's node network only.
        assert_eq!(tbc["spec"]["autoExportPolicy"], true);
        assert_eq!(tbc["spec"]["autoExportCIDRs"], json!(["10.250.0.0/16"]));
        assert_eq!(
            find(&backends, "StorageClass", "ontap-nas")["parameters"],
            json!({"backendType": "ontap-nas"})
        );
        assert!(
            objects(&render(&nfs, false)[2])
                .iter()
                .all(|o| o["kind"] != "DaemonSet"),
            "no NVMe module without NVMe"
        );

        let both = config(
            json!({"apiVersion": "ontap.extensions.storage.dev/v1alpha1", "kind": "OntapConfig",
            "svm": {"managementLif": {"ip": "2001:db8::10", "prefixLength": 64},
                    "dataLifs": [{"ip": "2001:db8::11", "prefixLength": 64, "protocols": ["nvme"]},
                                 {"ip": "2001:db8::12", "prefixLength": 64, "protocols": ["iscsi"]}],
                    "protocols": ["nvme", "iscsi"]},
            "storageClasses": [{"name": "fast", "default": true, "reclaimPolicy": "Retain"}, {"name": "legacy", "protocol": "iscsi"}]}),
        );
        let bundles = render(&both, false);
        let backends = objects(&bundles[3]);
        let iscsi = find(
            &backends,
            "TridentBackendConfig",
            &format!("ontap-{SVM}-iscsi-backend"),
        );
        assert_eq!(iscsi["spec"]["sanType"], "iscsi");
        assert_eq!(iscsi["spec"]["backendName"], format!("ontap-{SVM}-iscsi"));
        assert_eq!(
            iscsi["spec"]["managementLIF"], "[2001:db8::10]",
            "Trident wants IPv6 in brackets"
        );
        let fast = find(&backends, "StorageClass", "fast");
        assert_eq!(
            fast["parameters"]["storagePools"],
            format!("ontap-{SVM}:.*")
        );
        assert_eq!(fast["reclaimPolicy"], "Retain");
        assert_eq!(
            fast["metadata"]["annotations"]["storageclass.kubernetes.io/is-default-class"],
            "true"
        );
        assert_eq!(
            find(&backends, "StorageClass", "legacy")["parameters"]["storagePools"],
            format!("ontap-{SVM}-iscsi:.*")
        );
        let policy = find(
            &objects(&bundles[2]),
            "NetworkPolicy",
            "allow-trident-to-ontap-management",
        )
        .clone();
        assert_eq!(
            policy["spec"]["egress"][0]["to"][0]["ipBlock"]["cidr"],
            "2001:db8::10/128"
        );
    }

    /// Below ONTAP 9.12.1 Trident speaks ZAPI whatever the backend says, and refuses
    /// `useREST: true`: the backend says nothing (the account gets `ontapi`).
    #[test]
    fn zapi_clusters_get_no_use_rest() {
        let images = ShootImages::embedded().unwrap();
        let bundles = render_with(&metal_stack(), &images, TridentApi::Zapi, false);
        let backends = objects(&bundles[3]);
        let tbc = find(
            &backends,
            "TridentBackendConfig",
            &format!("ontap-{SVM}-backend"),
        );
        assert!(tbc["spec"].get("useREST").is_none(), "{tbc}");
    }

    #[test]
    fn the_embedded_vector_lists_exactly_the_shoot_images() {
        let vector = ImageVector::embedded().unwrap();
        let mut listed: Vec<&str> = vector.names().collect();
        listed.sort_unstable();
        let mut used = SHOOT_IMAGE_NAMES.to_vec();
        used.sort_unstable();
        assert_eq!(listed, used);
    }

    /// Every image of every object delivered, found wherever a manifest holds one: a
    /// container's, and those a TridentOrchestrator has the Trident operator pull.
    fn images_in(value: &Value, found: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (key, inner) in map {
                    match (key.as_str(), inner) {
                        (
                            "image" | "tridentImage" | "autosupportImage" | "imageRegistry",
                            Value::String(image),
                        ) => found.push(image.clone()),
                        _ => images_in(inner, found),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|item| images_in(item, found)),
            _ => {}
        }
    }

    /// The embedded vector with every shoot image moved to `mirror.example/<name>`.
    fn mirrored() -> ShootImages {
        let overwrite = SHOOT_IMAGE_NAMES
            .iter()
            .map(|name| format!("- name: {name}\n  repository: mirror.example/{name}\n"))
            .collect::<String>();
        let vector = ImageVector::embedded()
            .unwrap()
            .overwritten_by(ImageVector::parse(&format!("images:\n{overwrite}"), "test").unwrap());
        ShootImages::from_vector(&vector).unwrap()
    }

    #[test]
    fn every_delivered_image_comes_from_the_image_vector() {
        let images = mirrored();
        let mut found = Vec::new();
        for bundle in render_with(&metal_stack(), &images, TridentApi::Rest, false) {
            images_in(&Value::Array(objects(&bundle)), &mut found);
        }
        found.sort();
        // The Trident operator, (NVMe) the module loader's two containers, and the
        // TridentOrchestrator's Trident, autosupport and CSI sidecar registry.
        assert_eq!(found.len(), SHOOT_IMAGE_NAMES.len(), "{found:?}");
        for image in &found {
            assert!(
                image.starts_with("mirror.example/"),
                "{image} is not relocated"
            );
        }
        // Tag-less entries: the tags stay the embedded ones.
        let embedded = ShootImages::embedded().unwrap();
        let (_, tag) = embedded.pause.rsplit_once(':').unwrap();
        let relocated = format!("mirror.example/{PAUSE_IMAGE}:{tag}");
        assert!(found.contains(&relocated), "{found:?}");
    }

    #[test]
    fn the_orchestrator_names_the_vector_s_trident_images() {
        let images = mirrored();
        let init = objects(&render_with(&metal_stack(), &images, TridentApi::Rest, false)[2]);
        let spec = &find(&init, "TridentOrchestrator", "trident")["spec"];
        let embedded = ShootImages::embedded().unwrap();
        let tag = |image: &str| image.rsplit_once(':').unwrap().1.to_owned();
        assert_eq!(
            spec["tridentImage"],
            format!("mirror.example/{TRIDENT_IMAGE}:{}", tag(&embedded.trident))
        );
        assert_eq!(
            spec["autosupportImage"],
            format!(
                "mirror.example/{TRIDENT_AUTOSUPPORT_IMAGE}:{}",
                tag(&embedded.trident_autosupport)
            )
        );
        assert_eq!(
            spec["imageRegistry"],
            format!("mirror.example/{CSI_SIDECAR_REGISTRY}")
        );
        // Without an overwrite, the vector's own: Trident's defaults, stated where a landscape
        // sees them.
        let init = objects(&render(&metal_stack(), false)[2]);
        let spec = &find(&init, "TridentOrchestrator", "trident")["spec"];
        assert_eq!(spec["tridentImage"], embedded.trident);
        assert_eq!(spec["autosupportImage"], embedded.trident_autosupport);
        assert_eq!(spec["imageRegistry"], "registry.k8s.io/sig-storage");
    }

    /// The Trident operator refuses a Trident image of another release, and Trident tags its
    /// autosupport image by release (YY.MM).
    #[test]
    fn the_embedded_trident_images_are_the_operator_s_release() {
        let embedded = ShootImages::embedded().unwrap();
        let tag = |image: &str| image.rsplit_once(':').unwrap().1.to_owned();
        let release = tag(&embedded.trident_operator);
        assert_eq!(tag(&embedded.trident), release);
        let (year_month, _) = release.rsplit_once('.').unwrap();
        assert_eq!(tag(&embedded.trident_autosupport), year_month);
    }

    #[test]
    fn a_sidecar_registry_with_a_tag_stops_the_operator() {
        let vector = ImageVector::embedded().unwrap().overwritten_by(
            ImageVector::parse(
                &format!("images:\n- name: {CSI_SIDECAR_REGISTRY}\n  repository: m\n  tag: v1\n"),
                "test",
            )
            .unwrap(),
        );
        assert!(matches!(
            ShootImages::from_vector(&vector),
            Err(ImageVectorError::NotARegistry { name, .. }) if name == CSI_SIDECAR_REGISTRY
        ));
    }

    #[test]
    fn configured_trident_image_wins() {
        let mut config = metal_stack();
        config.trident_operator_image = Some("registry.example/trident-operator:26.02.0".into());
        let init = objects(&render(&config, false)[2]);
        assert_eq!(
            find(&init, "Deployment", "trident-operator")["spec"]["template"]["spec"]["containers"]
                [0]["image"],
            "registry.example/trident-operator:26.02.0"
        );
        // That operator's release decides Trident's images, not this vector's.
        let spec = &find(&init, "TridentOrchestrator", "trident")["spec"];
        for field in ["tridentImage", "autosupportImage", "imageRegistry"] {
            assert!(spec.get(field).is_none(), "{field}: {spec}");
        }
    }

    #[test]
    fn per_shoot_svm_names_become_valid_object_names() {
        let config = own(json!({}));
        let credentials = credentials();
        let images = ShootImages::embedded().unwrap();
        let nodes = vec!["10.250.0.0/16".to_string()];
        let inputs = ShootInputs {
            config: &config,
            svm_name: "k8s_shoot--p--s_ontap",
            secret_name: "ontap-credentials",
            credentials: &credentials,
            images: &images,
            trident_api: TridentApi::Rest,
            node_cidrs: &nodes,
        };
        let bundles = shoot_delivery("shoot--p--s", &inputs, false).unwrap();
        let backends = objects(&bundles[3]);
        let tbc = find(
            &backends,
            "TridentBackendConfig",
            "ontap-k8s-shoot--p--s-ontap-backend",
        );
        assert_eq!(tbc["spec"]["backendName"], "ontap-k8s_shoot--p--s_ontap");
    }
}

//! The generated manifests: `crds/`, `deploy/rbac.yaml` and the chart's ClusterRole rules (the
//! operator's, the Gardener Extension controller's for `extension.enabled` and the Kyma
//! controllers' for `kyma.enabled`),
//! derived from the controllers' registrations so that a controller declares its CRD and the
//! permissions it needs in one place. `make manifests` writes them; tests fail when the files
//! drift from what this module generates.

use std::sync::Arc;

use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::ObjectMeta;
use serde::Serialize;

use crate::controllers::connections::{ClientSettings, ClusterConnections};
use crate::controllers::{self, ControllerContext, Scope};
use kube::Client;

use crate::engine::{Manager, ManagerConfig, ManagerError, Metrics, NoProbes, offline_client};
use crate::runtime::health::Health;

/// The name of the operator's ServiceAccount, ClusterRole and bindings.
pub const NAME: &str = "ontap-operator";
/// The namespace `deploy/` installs the operator into.
pub const NAMESPACE: &str = "ontap-operator-system";

/// What the registered controllers declare.
pub struct Declarations {
    /// Their CRDs, in registration order.
    pub crds: Vec<CustomResourceDefinition>,
    /// The ClusterRole rules they need, merged and sorted.
    pub rules: Vec<PolicyRule>,
}

/// Runs `register` on a manager that never connects, and returns what `read` takes from it.
fn offline<T>(
    register: impl FnOnce(&mut Manager, Client, ClientSettings) -> Result<(), ManagerError>,
    read: impl FnOnce(&Manager) -> T,
) -> Result<T, ManifestError> {
    // The offline client's buffer is a task: outside a runtime, a runtime of our own hosts it for
    // as long as the declarations are read (it never runs: nothing is ever sent).
    let own_runtime = match tokio::runtime::Handle::try_current() {
        Ok(_) => None,
        Err(_) => Some(
            tokio::runtime::Builder::new_current_thread()
                .build()
                .map_err(ManifestError::Runtime)?,
        ),
    };
    let _entered = own_runtime.as_ref().map(|rt| rt.enter());
    let client = offline_client();
    let config = ManagerConfig {
        namespace: None,
        engine: Default::default(),
        identity: crate::runtime::identity(),
        stuck_reconcile_after: std::time::Duration::from_secs(600),
    };
    let mut manager = Manager::new(
        client.clone(),
        config,
        Arc::new(Metrics::unregistered()),
        Arc::new(NoProbes),
    );
    let settings = ClientSettings::default();
    register(&mut manager, client, settings)?;
    Ok(read(&manager))
}

/// Registers every controller with a manager that never connects, and reads its declarations.
pub fn declarations() -> Result<Declarations, ManifestError> {
    offline(
        |manager, client, ontap| {
            controllers::register_all(
                manager,
                &ControllerContext {
                    client,
                    ontap,
                    health: Health::new(),
                    scope: Scope::default(),
                    extension: None,
                    ontap_enabled: true,
                    kyma: None,
                },
            )
        },
        |manager| Declarations {
            crds: manager.crds(),
            rules: manager.rbac_rules(),
        },
    )
}

/// The ClusterRole rules the Gardener Extension controller needs, read from its registration
/// alone: the chart adds them when `extension.enabled`.
pub fn extension_rules() -> Result<Vec<PolicyRule>, ManifestError> {
    offline(
        |manager, client, ontap| {
            controllers::extension::controller::register(
                manager,
                ClusterConnections::new(client, ontap),
                controllers::extension::controller::ExtensionSettings::default(),
            )
        },
        Manager::rbac_rules,
    )
}

/// The Kyma controllers' CRDs and ClusterRole rules, read from their registrations alone: the
/// chart adds the rules when `kyma.enabled`.
pub fn kyma_declarations() -> Result<Declarations, ManifestError> {
    offline(
        |manager, client, _| {
            controllers::kyma::register(
                manager,
                client,
                &controllers::kyma::KymaSettings::default(),
            )
        },
        |manager| Declarations {
            crds: manager.crds(),
            rules: manager.rbac_rules(),
        },
    )
}

/// Every CRD this operator owns, in a stable order: the ONTAP kinds, then the Kyma kinds.
pub fn crds() -> Result<Vec<CustomResourceDefinition>, ManifestError> {
    let mut crds = declarations()?.crds;
    crds.extend(kyma_declarations()?.crds);
    Ok(crds)
}

/// Why a manifest could not be generated.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The registrations do not fit together.
    #[error(transparent)]
    Wiring(#[from] crate::engine::ManagerError),
    /// A manifest did not serialize.
    #[error("serializing a manifest: {0}")]
    Yaml(#[from] serde_yaml::Error),
    /// No runtime could be made to read the declarations in.
    #[error("starting a runtime to read the controllers' declarations: {0}")]
    Runtime(std::io::Error),
}

/// Each CRD as (`<plural>.<group>.yaml`, its YAML): the contents of `crds/`.
pub fn crd_files() -> Result<Vec<(String, String)>, ManifestError> {
    crds()?
        .into_iter()
        .map(|crd| {
            let name = format!("{}.yaml", crd.metadata.name.as_deref().unwrap_or_default());
            Ok((name, serde_yaml::to_string(&crd)?))
        })
        .collect()
}

/// The CRDs as one multi-document YAML stream, as `kubectl apply -f -` takes it.
pub fn crds_yaml() -> Result<String, ManifestError> {
    let mut out = String::new();
    for (_, yaml) in crd_files()? {
        out.push_str("---\n");
        out.push_str(&yaml);
    }
    Ok(out)
}

const GENERATED: &str = "# Generated by `make manifests` (`ontap-operator manifests`) from the controllers'\n# registrations; do not edit.\n";

fn labels() -> Option<std::collections::BTreeMap<String, String>> {
    Some([("app.kubernetes.io/name".to_owned(), NAME.to_owned())].into())
}

fn meta(name: &str, namespace: Option<&str>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: namespace.map(str::to_owned),
        labels: labels(),
        ..ObjectMeta::default()
    }
}

fn documents(objects: &[serde_yaml::Value]) -> Result<String, ManifestError> {
    let mut out = String::from(GENERATED);
    for object in objects {
        out.push_str("---\n");
        out.push_str(&serde_yaml::to_string(object)?);
    }
    Ok(out)
}

fn value<T: Serialize>(object: &T) -> Result<serde_yaml::Value, ManifestError> {
    Ok(serde_yaml::to_value(object)?)
}

/// `deploy/rbac.yaml`: the ServiceAccount, the ClusterRole with the registrations' rules, its
/// binding, and the Role for the leader election Lease in the operator's own namespace.
pub fn rbac_yaml() -> Result<String, ManifestError> {
    let rules = declarations()?.rules;
    let subject = || Subject {
        kind: "ServiceAccount".to_owned(),
        name: NAME.to_owned(),
        namespace: Some(NAMESPACE.to_owned()),
        ..Subject::default()
    };
    let leader = format!("{NAME}-leader-election");
    let credentials = format!("{NAME}-credentials");
    let role_binding = |name: &str| RoleBinding {
        metadata: meta(name, Some(NAMESPACE)),
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".to_owned(),
            kind: "Role".to_owned(),
            name: name.to_owned(),
        },
        subjects: Some(vec![subject()]),
    };
    let mut objects = vec![
        value(
            &(ServiceAccount {
                metadata: meta(NAME, Some(NAMESPACE)),
                ..ServiceAccount::default()
            }),
        )?,
        value(
            &(ClusterRole {
                metadata: meta(NAME, None),
                rules: Some(rules),
                ..ClusterRole::default()
            }),
        )?,
        value(
            &(ClusterRoleBinding {
                metadata: meta(NAME, None),
                role_ref: RoleRef {
                    api_group: "rbac.authorization.k8s.io".to_owned(),
                    kind: "ClusterRole".to_owned(),
                    name: NAME.to_owned(),
                },
                subjects: Some(vec![subject()]),
            }),
        )?,
        value(
            &(Role {
                metadata: meta(&leader, Some(NAMESPACE)),
                rules: Some(leader_election_rules()),
            }),
        )?,
        value(&role_binding(&leader))?,
        value(
            &(Role {
                metadata: meta(&credentials, Some(NAMESPACE)),
                rules: Some(credentials_rules()),
            }),
        )?,
        value(&role_binding(&credentials))?,
    ];
    objects.extend(aggregated_roles()?);
    documents(&objects)
}

/// OntapClusters' credential and CA Secrets are read in the operator's own namespace only
/// (`--credentials-namespace`).
fn credentials_rules() -> Vec<PolicyRule> {
    vec![PolicyRule {
        api_groups: Some(vec![String::new()]),
        resources: Some(vec!["secrets".to_owned()]),
        verbs: vec!["get".to_owned()],
        ..PolicyRule::default()
    }]
}

/// ClusterRoles that Kubernetes' aggregation adds to the built-in `view`, `edit` and `admin`
/// roles, so a namespace's users manage StorageVirtualMachines with the roles they already
/// have. OntapClusters are not among them: they hold the cluster's admin credentials and stay
/// with the cluster administrators.
fn aggregated_roles() -> Result<Vec<serde_yaml::Value>, ManifestError> {
    let svms = || {
        vec![
            "storagevirtualmachines".to_owned(),
            "storagevirtualmachines/status".to_owned(),
        ]
    };
    let role = |name: &str, aggregate_to: &[&str], verbs: &[&str], resources: Vec<String>| {
        let mut labels = labels().unwrap_or_default();
        for to in aggregate_to {
            labels.insert(
                format!("rbac.authorization.k8s.io/aggregate-to-{to}"),
                "true".to_owned(),
            );
        }
        ClusterRole {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                labels: Some(labels),
                ..ObjectMeta::default()
            },
            rules: Some(vec![PolicyRule {
                api_groups: Some(vec![crate::api::GROUP.to_owned()]),
                resources: Some(resources),
                verbs: verbs.iter().map(|v| (*v).to_owned()).collect(),
                ..PolicyRule::default()
            }]),
            ..ClusterRole::default()
        }
    };
    Ok(vec![
        value(&role(
            &format!("{NAME}-svm-view"),
            &["view", "edit", "admin"],
            &["get", "list", "watch"],
            svms(),
        ))?,
        value(&role(
            &format!("{NAME}-svm-edit"),
            &["edit", "admin"],
            &["create", "update", "patch", "delete", "deletecollection"],
            vec!["storagevirtualmachines".to_owned()],
        ))?,
    ])
}

/// The chart's ClusterRole rules (`deploy/chart/files/clusterrole-rules.yaml`), included by its
/// template so the chart and `deploy/` cannot disagree.
pub fn chart_rules_yaml() -> Result<String, ManifestError> {
    let rules = declarations()?.rules;
    Ok(format!("{GENERATED}{}", serde_yaml::to_string(&rules)?))
}

/// The Extension controller's ClusterRole rules
/// (`deploy/chart/files/clusterrole-rules-extension.yaml`), which the chart adds when
/// `extension.enabled`.
pub fn chart_extension_rules_yaml() -> Result<String, ManifestError> {
    let rules = extension_rules()?;
    Ok(format!("{GENERATED}{}", serde_yaml::to_string(&rules)?))
}

/// The Kyma controllers' ClusterRole rules (`deploy/chart/files/clusterrole-rules-kyma.yaml`),
/// which the chart adds when `kyma.enabled`.
pub fn chart_kyma_rules_yaml() -> Result<String, ManifestError> {
    let rules = kyma_declarations()?.rules;
    Ok(format!("{GENERATED}{}", serde_yaml::to_string(&rules)?))
}

/// Leader election only needs its own Lease, in its own namespace.
fn leader_election_rules() -> Vec<PolicyRule> {
    vec![PolicyRule {
        api_groups: Some(vec!["coordination.k8s.io".to_owned()]),
        resources: Some(vec!["leases".to_owned()]),
        verbs: ["get", "list", "watch", "create", "update", "patch"]
            .into_iter()
            .map(str::to_owned)
            .collect(),
        ..PolicyRule::default()
    }]
}

/// The files `make manifests` writes, relative to the repository root, with their contents.
pub fn files() -> Result<Vec<(String, String)>, ManifestError> {
    let mut files: Vec<(String, String)> = crd_files()?
        .into_iter()
        .map(|(name, yaml)| (format!("crds/{name}"), yaml))
        .collect();
    files.push(("deploy/rbac.yaml".to_owned(), rbac_yaml()?));
    files.push((
        "deploy/chart/files/clusterrole-rules.yaml".to_owned(),
        chart_rules_yaml()?,
    ));
    files.push((
        "deploy/chart/files/clusterrole-rules-extension.yaml".to_owned(),
        chart_extension_rules_yaml()?,
    ));
    files.push((
        "deploy/chart/files/clusterrole-rules-kyma.yaml".to_owned(),
        chart_kyma_rules_yaml()?,
    ));
    Ok(files)
}

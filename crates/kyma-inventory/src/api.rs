//! The Kyma inventory API, group `inventory.kyma-project.io`, version `v1alpha1`: the kinds of
//! the Go Kyma operator experiment (`Kyma`, `HelmComponent`, `Cluster`), with its fields and
//! without its two defects (a component's `namespace` reaches its HelmComponent;
//! `lastReconciliation` is set). Each kind also carries the engine's `conditions`,
//! `observedGeneration` and `halted`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use reconcile_engine::names as rules;

/// The API group of the Kyma kinds.
pub const KYMA_GROUP: &str = "inventory.kyma-project.io";

/// A Kyma installation: the components it consists of. The Kyma controller keeps one
/// HelmComponent `<kyma>-<component>` per listed component and reports which ones it still
/// waits for.
#[derive(CustomResource, KubeSchema, Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[kube(
    group = "inventory.kyma-project.io",
    version = "v1alpha1",
    kind = "Kyma",
    plural = "kymas",
    shortname = "ky",
    namespaced,
    status = "KymaStatus",
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.status"}"#,
    printcolumn = r#"{"name":"WaitingFor","type":"string","jsonPath":".status.waitingFor"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct KymaSpec {
    /// The components to install; each name at most once.
    #[serde(default)]
    #[schemars(length(max = 64))]
    #[x_kube(validation = Rule::new("self.all(c, self.exists_one(d, d.name == c.name))").message("component names must be unique"))]
    pub components: Vec<KymaComponent>,
}

/// One component of a Kyma.
#[derive(Clone, Debug, Deserialize, Serialize, KubeSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct KymaComponent {
    /// The component's name, also its chart's: `istio`, `service-catalog-addons`, …
    #[schemars(length(min = 1, max = 63))]
    #[x_kube(validation = Rule::new(rules::DNS_LABEL).message(rules::DNS_LABEL_MESSAGE))]
    pub name: String,
    /// The namespace the component installs into; default: the chart's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63))]
    #[x_kube(validation = Rule::new(rules::DNS_LABEL).message(rules::DNS_LABEL_MESSAGE))]
    pub namespace: Option<String>,
}

/// What a Kyma reports, in the experiment's words.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum KymaState {
    /// Some component has not reached `success` yet (see `waitingFor`).
    Reconciling,
    /// Every component reached `success`.
    Success,
}

reconcile_engine::engine_status! {
    #[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
    #[serde(rename_all = "camelCase")]
    pub struct KymaStatus {
        /// `reconciling` or `success`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub status: Option<KymaState>,
        /// The components not yet at `success`, in the spec's order. Refreshed at most every
        /// progress interval while reconciling; cleared on success.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub waiting_for: Vec<String>,
    }
}

/// One component of one Kyma, installed from its chart. Its lifecycle is simulated, as in the
/// experiment: `pending` → (1 s) `started` → (N s) `failing` → (N s) `retrying` → (N s)
/// `success`, N = the length of `componentName`. The chart is rendered (and the manifest
/// cached), never applied.
#[derive(CustomResource, KubeSchema, Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[kube(
    group = "inventory.kyma-project.io",
    version = "v1alpha1",
    kind = "HelmComponent",
    plural = "helmcomponents",
    shortname = "hc",
    namespaced,
    status = "HelmComponentStatus",
    printcolumn = r#"{"name":"Component","type":"string","jsonPath":".spec.componentName"}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.status"}"#,
    printcolumn = r#"{"name":"Last Reconciliation","type":"date","jsonPath":".status.lastReconciliation"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct HelmComponentSpec {
    /// The component, and the chart rendered for it unless `chartLocation` names another.
    #[schemars(length(min = 1, max = 63))]
    #[x_kube(validation = Rule::new(rules::DNS_LABEL).message(rules::DNS_LABEL_MESSAGE))]
    pub component_name: String,
    /// The chart: the name of one of the charts shipped with the operator; default:
    /// `componentName`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub chart_location: Option<String>,
    /// The chart version required; default: the shipped one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64))]
    pub version: Option<String>,
    /// The namespace the component installs into; default: the chart's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63))]
    #[x_kube(validation = Rule::new(rules::DNS_LABEL).message(rules::DNS_LABEL_MESSAGE))]
    pub namespace: Option<String>,
}

/// Where a HelmComponent is in its (simulated) installation.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum HelmComponentState {
    Pending,
    Started,
    Failing,
    Retrying,
    Success,
}

impl HelmComponentState {
    /// The state's name as in `status.status`.
    pub fn as_str(self) -> &'static str {
        match self {
            HelmComponentState::Pending => "pending",
            HelmComponentState::Started => "started",
            HelmComponentState::Failing => "failing",
            HelmComponentState::Retrying => "retrying",
            HelmComponentState::Success => "success",
        }
    }
}

reconcile_engine::engine_status! {
    #[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
    #[serde(rename_all = "camelCase")]
    pub struct HelmComponentStatus {
        /// `pending`, `started`, `failing`, `retrying` or `success`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub status: Option<HelmComponentState>,
        /// When the controller last moved the component on (microseconds: with a time scale,
        /// transitions are less than a second apart).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub last_reconciliation: Option<MicroTime>,
    }
}

/// A cluster of the inventory (served, not reconciled: the experiment's manager needed the
/// kind to exist). Short name `kcluster`, since `cluster` means other kinds elsewhere.
#[derive(CustomResource, KubeSchema, Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[kube(
    group = "inventory.kyma-project.io",
    version = "v1alpha1",
    kind = "Cluster",
    root = "KymaCluster",
    plural = "clusters",
    shortname = "kcluster",
    namespaced,
    status = "KymaClusterStatus",
    printcolumn = r#"{"name":"Provider","type":"string","jsonPath":".spec.provider"}"#,
    printcolumn = r#"{"name":"Region","type":"string","jsonPath":".spec.region"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct KymaClusterSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253))]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253))]
    pub region: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oidc: Option<Oidc>,
}

/// The cluster's OIDC settings, as the API server's `--oidc-*` flags.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
pub struct Oidc {
    #[serde(rename = "clientID", default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub client_id: Option<String>,
    #[serde(
        rename = "groupsClaim",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(length(max = 1024))]
    pub groups_claim: Option<String>,
    #[serde(rename = "issuerURL", default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 2048))]
    pub issuer_url: Option<String>,
    #[serde(rename = "signingAlgs", default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16))]
    pub signing_algs: Vec<String>,
    #[serde(
        rename = "usernameClaim",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(length(max = 1024))]
    pub username_claim: Option<String>,
    #[serde(
        rename = "usernamePrefix",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(length(max = 1024))]
    pub username_prefix: Option<String>,
}

reconcile_engine::engine_status! {
    #[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
    #[serde(rename_all = "camelCase")]
    pub struct KymaClusterStatus {
    }
}

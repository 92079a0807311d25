//! How the operator is known where it is deployed: its name, namespace, metric prefix, Event
//! reporter and User-Agent. The ground floor: every part may read it, it reads nothing.

/// The name of the operator's ServiceAccount, ClusterRole and bindings.
pub const NAME: &str = "ontap-operator";

/// The namespace `deploy/` installs the operator into.
pub const NAMESPACE: &str = "ontap-operator-system";

/// The prefix of the engine's own metrics (`ontap_operator_step_duration_seconds`, …).
pub const METRIC_PREFIX: &str = "ontap_operator";

/// The domain of the Events' reporting controller (`ontap.storage.dev/storagevirtualmachine`).
pub const REPORTER_DOMAIN: &str = "ontap.storage.dev";

/// What the operator calls itself to the API server; the API server takes the part before the
/// `/` as the field manager of writes that name none.
pub const USER_AGENT: &str = concat!("ontap-operator/", env!("CARGO_PKG_VERSION"));

/// The operator's own namespace: the pod's (POD_NAMESPACE), else the one its manifests use.
pub fn own_namespace() -> String {
    std::env::var("POD_NAMESPACE").unwrap_or_else(|_| NAMESPACE.into())
}

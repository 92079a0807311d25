//! What a restore on another seed needs, saved at the end of every successful reconcile and on
//! migrate.
//!
//! gardenlet keeps `status.state` and the Secrets named in `status.resources` in the ShootState
//! when the shoot's control plane moves, re-creates the Secrets in the new seed's shoot
//! namespace, and writes `status.state` and `status.resources` back before it asks for
//! `restore`. Saving the SVM's identity and the credentials Secret this way lets a restore find
//! the SVM already in ONTAP (no second SVM) and keep the account's working password (no
//! rotation).

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::api::Extension;

/// The name under which the credentials Secret is listed in `status.resources`.
pub const CREDENTIALS_RESOURCE: &str = "ontap-credentials";

/// The Extension's `status.state`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ExtensionState {
    /// The OntapCluster the SVM lives on.
    pub cluster: String,
    /// The SVM's name in ONTAP.
    pub svm_name: String,
    /// The SVM's UUID, to recognise it even after a rename (e.g. a MetroCluster `-mc` switch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub svm_uuid: Option<String>,
    /// The shoot's ONTAP account.
    pub account: String,
    /// The seed Secret with the account's credentials, in the shoot namespace.
    pub credentials_secret: String,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("status.state of the Extension is not a state this operator wrote: {0}")]
pub struct StateError(String);

/// The `/status` merge patch of a migration: the state and the Secret gardenlet must carry over.
pub fn migration_status_patch(state: &ExtensionState) -> Value {
    json!({"status": {
        "state": state,
        "resources": [{
            "name": CREDENTIALS_RESOURCE,
            "resourceRef": {"apiVersion": "v1", "kind": "Secret", "name": state.credentials_secret},
        }],
    }})
}

/// The state gardenlet restored into the Extension, if any.
pub fn restored_state(ext: &Extension) -> Result<Option<ExtensionState>, StateError> {
    match ext.status.as_ref().and_then(|s| s.state.as_ref()) {
        None | Some(Value::Null) => Ok(None),
        Some(state) => ExtensionState::deserialize(state)
            .map(Some)
            .map_err(|e| StateError(e.to_string())),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn state() -> ExtensionState {
        ExtensionState {
            cluster: "lab".into(),
            svm_name: "p0b1f9c3eaaaabbbbcccc123456789abc".into(),
            svm_uuid: Some("0f6e9c2a-1111-2222-3333-444455556666".into()),
            account: "web-a".into(),
            credentials_secret: "p0b1f9c3eaaaabbbbcccc123456789abc-prod--web-a-credentials".into(),
        }
    }

    #[test]
    fn state_survives_the_round_trip_through_the_extension() {
        let patch = migration_status_patch(&state());
        assert_eq!(
            patch["status"]["resources"][0]["resourceRef"]["kind"],
            "Secret"
        );
        assert_eq!(
            patch["status"]["state"]["svmName"],
            "p0b1f9c3eaaaabbbbcccc123456789abc"
        );
        let mut doc = json!({"apiVersion": "extensions.gardener.cloud/v1alpha1", "kind": "Extension",
            "metadata": {"name": "ontap", "namespace": "shoot--prod--web-a"}, "spec": {"type": "ontap"}});
        json_patch::merge(&mut doc, &patch);
        let ext: Extension = serde_json::from_value(doc).unwrap();
        assert_eq!(restored_state(&ext), Ok(Some(state())));
        assert_eq!(ext.status.unwrap().resources[0].name, CREDENTIALS_RESOURCE);
    }

    #[test]
    fn no_or_foreign_state() {
        let ext = |state: Value| -> Extension {
            serde_json::from_value(json!({"apiVersion": "extensions.gardener.cloud/v1alpha1", "kind": "Extension",
                "metadata": {"name": "ontap"}, "spec": {"type": "ontap"}, "status": {"state": state}}))
            .unwrap()
        };
        assert_eq!(restored_state(&ext(Value::Null)), Ok(None));
        assert!(restored_state(&ext(json!({"something": "else"}))).is_err());
    }
}

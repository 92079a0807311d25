//! ValidatingAdmissionPolicies scoped to one test namespace: how tests make the API server
//! refuse a write the way a cluster's policy would.

use std::time::Duration;

use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use kube::api::{Api, PostParams};
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

/// A policy with its binding; [`Policy::lift`] removes both.
pub struct Policy {
    client: Client,
    pub name: String,
}

/// Denies `operations` on `resource` (`secrets`, `toys/status`, ...) of API `group` in namespace
/// `ns` whenever the CEL `expression` is false, with `message`. The policy is cluster-scoped;
/// tests run side by side on one API server, so it matches the namespace only. The API server
/// loads policies asynchronously: wait with a probe write until it enforces this one.
pub async fn deny(
    client: &Client,
    ns: &str,
    (group, resource): (&str, &str),
    operations: &[&str],
    expression: &str,
    message: &str,
) -> Policy {
    let name = format!("deny-{}-{ns}", resource.replace('/', "-"));
    let policy: ValidatingAdmissionPolicy = serde_json::from_value(json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": { "name": name },
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "namespaceSelector": { "matchLabels": { "kubernetes.io/metadata.name": ns } },
                "resourceRules": [{
                    "apiGroups": [group], "apiVersions": ["*"],
                    "operations": operations, "resources": [resource]
                }]
            },
            "validations": [{ "expression": expression, "message": message }]
        }
    }))
    .unwrap();
    let binding: ValidatingAdmissionPolicyBinding = serde_json::from_value(json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": { "name": name },
        "spec": { "policyName": name, "validationActions": ["Deny"] }
    }))
    .unwrap();
    Api::<ValidatingAdmissionPolicy>::all(client.clone())
        .create(&PostParams::default(), &policy)
        .await
        .unwrap();
    Api::<ValidatingAdmissionPolicyBinding>::all(client.clone())
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
    Policy {
        client: client.clone(),
        name,
    }
}

impl Policy {
    /// Removes the policy and waits until `probe` (a dry-run write) passes again.
    pub async fn lift(self, probe: impl AsyncFnMut() -> Result<(), String>) {
        Api::<ValidatingAdmissionPolicyBinding>::all(self.client.clone())
            .delete(&self.name, &Default::default())
            .await
            .unwrap();
        Api::<ValidatingAdmissionPolicy>::all(self.client.clone())
            .delete(&self.name, &Default::default())
            .await
            .unwrap();
        super::poll("the policy lifted", Duration::from_secs(30), probe).await;
    }
}

/// Waits until `probe` (a dry-run write) is denied with `message`.
pub async fn wait_enforced(message: &str, mut probe: impl AsyncFnMut() -> Result<(), String>) {
    super::poll(
        "the policy enforced",
        Duration::from_secs(30),
        async || match probe().await {
            Err(denial) if denial.contains(message) => Ok(()),
            other => Err(format!("{other:?}")),
        },
    )
    .await;
}

/// A dry-run creation of an empty `K` through `api`: goes through admission, stores nothing.
pub async fn probe_create<K>(api: &Api<K>) -> Result<(), String>
where
    K: Resource + Default + Clone + Serialize + DeserializeOwned + std::fmt::Debug,
{
    let mut object = K::default();
    object.meta_mut().name = Some("admission-probe".into());
    let params = PostParams {
        dry_run: true,
        ..Default::default()
    };
    api.create(&params, &object)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

//! Objects for the cache's unit tests.

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::ObjectMeta;

/// A ConfigMap `name` in namespace `ns`, owned by the uids `owners`.
pub(super) fn cm(name: &str, owners: &[&str]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ns".into()),
            owner_references: Some(
                owners
                    .iter()
                    .map(|uid| OwnerReference {
                        uid: (*uid).into(),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        },
        ..Default::default()
    }
}

//! What Trident in the shoot says about the delivered backends, for the `SystemComponentsHealthy`
//! condition, and how often it is asked.
//!
//! No event announces a change of a `TridentBackendConfig`'s status in the shoot, so while a
//! backend is not bound (or not reported on yet, or the shoot cannot be read) the Extension is
//! looked at again every [`HEALTH_RECHECK`], the period Gardener's health-check library checks
//! extensions with. A bound backend is looked at with every other pass and the sync period: a
//! pass costs a login at ONTAP, which only shoots whose Trident is not working pay every period.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::Stream;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::core::GroupVersionKind;
use kube::runtime::reflector::ObjectRef;
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::extension::api::{Extension, ManagedResource};
use crate::extension::health::{BackendStatus, ObservedBackend};

use super::ExtensionReconciler;

const BACKEND_GROUP: &str = "trident.netapp.io";
const BACKEND_KIND: &str = "TridentBackendConfig";

/// Passes of Extensions asked for a while from now; one waiting per Extension at most, however
/// many passes ask.
#[derive(Clone)]
pub(super) struct HealthRechecks {
    period: Duration,
    sender: mpsc::UnboundedSender<ObjectRef<Extension>>,
    waiting: Arc<Mutex<HashSet<ObjectRef<Extension>>>>,
}

impl HealthRechecks {
    /// The handle, asking for passes `period` from now, and the stream of Extensions due, for
    /// the controller's queue.
    pub(super) fn new(
        period: Duration,
    ) -> (
        Self,
        impl Stream<Item = ObjectRef<Extension>> + Send + 'static,
    ) {
        let (sender, receiver) = mpsc::unbounded_channel();
        let due = futures::stream::unfold(receiver, |mut receiver| async move {
            let next = receiver.recv().await?;
            Some((next, receiver))
        });
        let rechecks = Self {
            period,
            sender,
            waiting: Arc::default(),
        };
        (rechecks, due)
    }

    /// A pass of `ext` one period from now.
    pub(super) fn later(&self, ext: ObjectRef<Extension>) {
        if !self.waiting().insert(ext.clone()) {
            return;
        }
        let rechecks = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(rechecks.period).await;
            rechecks.waiting().remove(&ext);
            // Closed only when the controller stopped: nothing left to look again.
            let _ = rechecks.sender.send(ext);
        });
    }

    fn waiting(&self) -> std::sync::MutexGuard<'_, HashSet<ObjectRef<Extension>>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl ExtensionReconciler {
    /// The backends the resource manager applied to the shoot (`delivered`'s
    /// `status.resources`), as the shoot shows them; `Err`: why the shoot could not be read.
    pub(super) async fn observe_backends(
        &self,
        namespace: &str,
        delivered: &ManagedResource,
    ) -> Result<Vec<(String, ObservedBackend)>, String> {
        let applied: Vec<(&str, &str)> = delivered
            .status
            .iter()
            .flat_map(|s| s.resources.iter())
            .filter_map(backend_reference)
            .collect();
        if applied.is_empty() {
            return Ok(Vec::new());
        }
        let shoot = self
            .shoot_clients
            .client(&self.kube, namespace)
            .await
            .map_err(|e| e.to_string())?;
        let resource =
            ApiResource::from_gvk(&GroupVersionKind::gvk(BACKEND_GROUP, "v1", BACKEND_KIND));
        let mut observed = Vec::with_capacity(applied.len());
        for (backend_namespace, name) in applied {
            let found =
                Api::<DynamicObject>::namespaced_with(shoot.clone(), backend_namespace, &resource)
                    .get_opt(name)
                    .await
                    .map_err(|e| {
                        format!("reading TridentBackendConfig {backend_namespace}/{name}: {e}")
                    })?;
            let backend = match found {
                None => ObservedBackend::Missing,
                Some(object) => ObservedBackend::Found {
                    created: object.metadata.creation_timestamp.clone(),
                    // A status Trident wrote in a form we do not know says nothing we can judge:
                    // as none, it gets the grace and then counts as silence.
                    status: object
                        .data
                        .get("status")
                        .and_then(|s| BackendStatus::deserialize(s).ok())
                        .unwrap_or_default(),
                },
            };
            observed.push((format!("{backend_namespace}/{name}"), backend));
        }
        Ok(observed)
    }
}

/// `namespace` and `name` of an entry of a ManagedResource's `status.resources` that is a
/// TridentBackendConfig.
fn backend_reference(entry: &Value) -> Option<(&str, &str)> {
    let group = entry["apiVersion"].as_str()?.split('/').next()?;
    (group == BACKEND_GROUP && entry["kind"].as_str()? == BACKEND_KIND)
        .then_some((entry["namespace"].as_str()?, entry["name"].as_str()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_backends_of_the_applied_resources_are_read() {
        let backend = json!({"apiVersion": "trident.netapp.io/v1", "kind": "TridentBackendConfig",
                             "name": "ontap-a-backend", "namespace": "kube-system"});
        assert_eq!(
            backend_reference(&backend),
            Some(("kube-system", "ontap-a-backend"))
        );
        let class = json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                           "name": "ontap-gold"});
        assert_eq!(backend_reference(&class), None);
    }
}

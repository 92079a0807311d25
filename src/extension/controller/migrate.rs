//! Migrate: what a restore on another seed needs goes into the Extension's status, the delivery
//! is released with its objects kept in the shoot, and the StorageVirtualMachine object goes with
//! ONTAP untouched.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{ObjectMeta, Patch, PatchParams};
use kube::runtime::reflector::ObjectRef;
use kube::{Api, ResourceExt};
use reconcile_engine::{Halt, Outcome, StepFlow, StepRunner};

use crate::api::StorageVirtualMachine;
use crate::api::seed_secret::{PASSWORD_KEY, USERNAME_KEY, seed_secret_name};
use crate::extension::api::Extension;
use crate::extension::state::{ExtensionState, migration_status_patch};
use serde_json::json;

use super::credentials::secret_credentials;
use super::reasons::{Failed, Waiting, kube_error};
use super::{CONTROLLER, ExtensionReconciler, ExtensionStep, namespace_of};

/// The Secret that carries the account's credentials through a migration (`status.resources`).
pub const STATE_SECRET: &str = "extension-ontap-state";

impl ExtensionReconciler {
    /// `StateSaved` → `DeliveryReleased` → `SvmReleased` → `ProjectSvmReleased` →
    /// `FinalizersReleased`.
    pub(super) async fn migrate(
        &self,
        ext: &Extension,
        steps: &mut StepRunner<ExtensionStep>,
    ) -> Result<(), Halt> {
        let namespace = namespace_of(ext);
        steps
            .step(ExtensionStep::StateSaved, || self.save_state(ext))
            .await?;
        steps
            .step(ExtensionStep::DeliveryReleased, || {
                self.remove_delivery(&namespace, true, true)
            })
            .await?;
        steps
            .step(ExtensionStep::SvmReleased, || {
                self.remove_svm(ext, true, false)
            })
            .await?;
        // The project object here holds ONTAP's mark; left behind by the project's last
        // shoot, no other seed's object could ever delete the SVM (they only stand in). Going
        // now, its controller deletes the SVM once the migrated shoots' accounts are gone.
        steps
            .step(ExtensionStep::ProjectSvmReleased, || {
                self.release_project_svm(ext)
            })
            .await?;
        steps
            .step(ExtensionStep::FinalizersReleased, || {
                self.release_finalizers(ext)
            })
            .await?;
        Ok(())
    }

    /// Step `FinalizersReleased`: Gardener's migrate() removes every finalizer, so the old
    /// seed's namespace can go. It must happen before `Succeeded` is written: a migrated
    /// Extension is not admitted again (Gardener's `ShouldSkipOperation`), so a finalizer left
    /// then would keep it from ever being deleted. A failed write fails the operation, which
    /// is retried with its annotation in place. `admits()` keeps the engine from adding ours
    /// back once the operation succeeded.
    async fn release_finalizers(&self, ext: &Extension) -> StepFlow<Outcome> {
        // Written every time: `ext` is the object as the pass began, and the engine may have
        // added ours back since (a migration run again after a failed annotation removal).
        self.patch_extension(ext, r#"{"metadata":{"finalizers":null}}"#)
            .await
            .map_err(kube_error(Failed::FinalizerRemove))?;
        Ok(Outcome::changed())
    }

    /// Step `StateSaved` of a migration: the state as [`Self::record_state`] writes it, from the
    /// seed Secret as it is now.
    async fn save_state(&self, ext: &Extension) -> StepFlow<Outcome> {
        let namespace = namespace_of(ext);
        let Some(svm) = self
            .svms
            .get(&ObjectRef::new(&ext.name_any()).within(&namespace))
        else {
            // Nothing provisioned here (or released by an earlier pass): whatever state was
            // saved stays.
            return Ok(Outcome::unchanged());
        };
        let secret_name = seed_secret_name(&svm);
        let secrets: Api<Secret> = Api::namespaced(self.kube.clone(), &namespace);
        // The cache holds the seed Secrets without their data: read this one by name.
        let seed = match self
            .secrets
            .get(&ObjectRef::new(&secret_name).within(&namespace))
        {
            Some(_) => secrets
                .get_opt(&secret_name)
                .await
                .map_err(kube_error(Failed::SecretRead))?,
            None => None,
        };
        let Some(credentials) = seed.as_ref().and_then(secret_credentials) else {
            return Err(Waiting::SeedSecretMissing
                .wait(format!("the seed Secret {secret_name} is being repaired"))
                .into());
        };
        self.record_state(ext, &svm, &credentials.0, &credentials.1)
            .await
    }

    /// The SVM's identity in `status.state`, the account's credentials in [`STATE_SECRET`]
    /// named by `status.resources`, so gardenlet carries both to the next seed. Written at the
    /// end of every successful reconcile and again on migrate, as Gardener's contract asks:
    /// gardenlet's ShootState backup, and its migrate flow (which persists the ShootState
    /// without waiting for `Extension` migrations), may take the state at any time. The
    /// Secret is applied every time (the API server stores nothing when it is unchanged: a
    /// rotated password must reach it); the status only when it differs.
    pub(super) async fn record_state(
        &self,
        ext: &Extension,
        svm: &StorageVirtualMachine,
        username: &str,
        password: &str,
    ) -> StepFlow<Outcome> {
        let namespace = namespace_of(ext);
        Api::<Secret>::namespaced(self.kube.clone(), &namespace)
            .patch(
                STATE_SECRET,
                &PatchParams::apply(CONTROLLER).force(),
                &Patch::Apply(&state_secret(&namespace, username, password)),
            )
            .await
            .map_err(kube_error(Failed::StateSecretWrite))?;
        let patch = migration_status_patch(&state_of(svm));
        let status = ext.status.as_ref();
        let recorded = json!({"status": {
            "state": status.and_then(|s| s.state.clone()),
            "resources": status.map(|s| s.resources.clone()).unwrap_or_default(),
        }});
        if recorded == patch {
            return Ok(Outcome::unchanged());
        }
        Api::<Extension>::namespaced(self.kube.clone(), &namespace)
            .patch_status(
                &ext.name_any(),
                &PatchParams::default(),
                &Patch::Merge(patch),
            )
            .await
            .map_err(kube_error(Failed::StateWrite))?;
        Ok(Outcome::changed())
    }
}

/// What a restore needs to know of `svm` to take it over.
fn state_of(svm: &StorageVirtualMachine) -> ExtensionState {
    let status = svm.status.clone().unwrap_or_default();
    ExtensionState {
        cluster: svm.spec.cluster_ref.name.clone(),
        svm_name: status
            .svm_name
            .clone()
            .or(svm.spec.svm_name.clone())
            .unwrap_or_default(),
        svm_uuid: status.uuid.clone(),
        account: svm
            .spec
            .account
            .as_ref()
            .and_then(|a| a.name.clone())
            .unwrap_or_default(),
        credentials_secret: STATE_SECRET.to_string(),
    }
}

/// [`STATE_SECRET`] with the account's credentials, and nothing else of the seed Secret.
fn state_secret(namespace: &str, username: &str, password: &str) -> Secret {
    let data: BTreeMap<String, ByteString> = [(USERNAME_KEY, username), (PASSWORD_KEY, password)]
        .into_iter()
        .map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec())))
        .collect();
    Secret {
        metadata: ObjectMeta {
            name: Some(STATE_SECRET.to_string()),
            namespace: Some(namespace.to_string()),
            ..ObjectMeta::default()
        },
        type_: Some("Opaque".into()),
        data: Some(data),
        ..Secret::default()
    }
}

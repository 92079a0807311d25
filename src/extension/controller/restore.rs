//! Restore: the shoot's SVM in ONTAP, named by `status.state`, is taken over by a new
//! StorageVirtualMachine object with the credentials gardenlet carried over, so nothing is
//! created in ONTAP and no password rotates.

use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::PostParams;
use reconcile_engine::{Outcome, StepError, StepFlow};
use secrecy::SecretString;

use crate::api::StorageVirtualMachine;
use crate::api::seed_secret::SeedFields;
use crate::extension::api::Extension;
use crate::extension::config::ExtensionConfig;
use crate::extension::state::ExtensionState;

use super::credentials::secret_credentials;
use super::plan::Plan;
use super::reasons::{ErrorCodeReason, Failed, Transient, kube_error, rejected};
use super::{ExtensionReconciler, namespace_of};

impl ExtensionReconciler {
    /// Step `SvmAdopted`: a StorageVirtualMachine object for the restored SVM, with its seed
    /// Secret holding the restored credentials, so its controller adopts the SVM and keeps the
    /// password.
    pub(super) async fn adopt(
        &self,
        ext: &Extension,
        config: &ExtensionConfig,
        plan: &Plan,
        state: &ExtensionState,
    ) -> StepFlow<Outcome> {
        let namespace = namespace_of(ext);
        let secrets: Api<Secret> = Api::namespaced(self.kube.clone(), &namespace);
        let svm = self
            .restored_object(ext, config, plan, state, &secrets)
            .await?;
        if secrets
            .get_opt(&plan.secret)
            .await
            .map_err(kube_error(Failed::SecretRead))?
            .is_some()
        {
            return Ok(Outcome::unchanged());
        }
        let restored = secrets
            .get_opt(&state.credentials_secret)
            .await
            .map_err(kube_error(Failed::StateSecretRead))?;
        let Some((username, password)) = restored.as_ref().and_then(secret_credentials) else {
            return Err(ErrorCodeReason::Configuration
                .invalid(format!(
                    "the restored Secret {} has no credentials",
                    state.credentials_secret
                ))
                .into());
        };
        let fields = SeedFields {
            username,
            password: SecretString::from(password),
            management_lif: config.management_lif.ip.to_string(),
            svm_name: state.svm_name.clone(),
            svm_uuid: state.svm_uuid.clone().unwrap_or_default(),
            // The restored password is the one ONTAP holds already, not a new one that might
            // still be in flight.
            password_set_at: None,
        };
        self.prefill_seed_secret(&svm, &fields).await
    }

    /// The shoot's object, created to adopt the restored SVM once the restored credentials are
    /// there: adopting without the password would rotate it.
    async fn restored_object(
        &self,
        ext: &Extension,
        config: &ExtensionConfig,
        plan: &Plan,
        state: &ExtensionState,
        secrets: &Api<Secret>,
    ) -> Result<StorageVirtualMachine, StepError> {
        let svms: Api<StorageVirtualMachine> =
            Api::namespaced(self.kube.clone(), &namespace_of(ext));
        let existing = svms
            .get_opt(&plan.object)
            .await
            .map_err(kube_error(Failed::SvmRead))?;
        if let Some(svm) = existing {
            return Ok(svm);
        }
        if secrets
            .get_opt(&state.credentials_secret)
            .await
            .map_err(kube_error(Failed::StateSecretRead))?
            .is_none()
        {
            return Err(Transient::StateSecretMissing.error(format!(
                "the Secret {} named in status.resources was not restored",
                state.credentials_secret
            )));
        }
        let desired = self.desired_svm(ext, config, plan, state.svm_uuid.as_deref())?;
        svms.create(&PostParams::default(), &desired)
            .await
            .map_err(|e| rejected(Failed::SvmCreate, e))
    }
}

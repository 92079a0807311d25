//! The seed Secret as the Extension uses it: its credentials read, verified against ONTAP before
//! they reach the shoot, and pre-filled where ONTAP already holds the password (written by the
//! SVM controller's [`crate::ontap::svm::SeedSecretPrefill`], the seed Secrets' one writer).

use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::runtime::reflector::ObjectRef;
use reconcile_engine::{Outcome, StepFlow};
use secrecy::SecretString;

use crate::api::StorageVirtualMachine;
use crate::api::seed_secret::{PASSWORD_KEY, SeedFields, USERNAME_KEY, seed_value};
use crate::extension::shoot::ShootCredentials;
use crate::ontap::svm::{PrefillError, Prefilled};

use super::ExtensionReconciler;
use super::plan::Plan;
use super::reasons::{Failed, OntapRequest, Transient, Waiting, kube_error, ontap_failure};

/// The username and password a seed Secret (ours or metal-stack's) holds, both non-empty.
pub(super) fn secret_credentials(secret: &Secret) -> Option<(String, String)> {
    Some((
        seed_value(secret, USERNAME_KEY)?.to_owned(),
        seed_value(secret, PASSWORD_KEY)?.to_owned(),
    ))
}

impl ExtensionReconciler {
    /// Creates `svm`'s seed Secret with credentials ONTAP already holds (a restore, an import),
    /// so its controller verifies and keeps them instead of setting a new password. One that
    /// exists already is left as it is: its controller judges it.
    pub(super) async fn prefill_seed_secret(
        &self,
        svm: &StorageVirtualMachine,
        fields: &SeedFields,
    ) -> StepFlow<Outcome> {
        prefilled(self.prefill.prefill(svm, fields).await)
    }

    /// Step `CredentialsVerified`: the seed Secret's credentials authenticate against ONTAP.
    pub(super) async fn verify_credentials(
        &self,
        namespace: &str,
        plan: &Plan,
    ) -> StepFlow<Outcome<ShootCredentials>> {
        let waiting = |message: String| -> StepFlow<Outcome<ShootCredentials>> {
            Err(Waiting::CredentialsNotVerified.wait(message).into())
        };
        // The cache holds the seed Secrets without their data: read this one by name.
        let secret = if self
            .secrets
            .get(&ObjectRef::new(&plan.secret).within(namespace))
            .is_some()
        {
            Api::<Secret>::namespaced(self.kube.clone(), namespace)
                .get_opt(&plan.secret)
                .await
                .map_err(kube_error(Failed::SecretRead))?
        } else {
            None
        };
        let Some(secret) = secret else {
            return waiting(format!(
                "the seed Secret {} does not exist yet",
                plan.secret
            ));
        };
        let Some((username, password)) = secret_credentials(&secret) else {
            return waiting(format!("the seed Secret {} is incomplete", plan.secret));
        };
        let Some(cluster) = self.ontap_clusters.get(&ObjectRef::new(&plan.cluster)) else {
            return waiting(format!(
                "the OntapCluster {} is not cached yet",
                plan.cluster
            ));
        };
        let client = self.connections.connect(&cluster).await?;
        let password = SecretString::from(password);
        let check = client
            .verify_credentials(&username, &password, &plan.svm_name)
            .await
            .map_err(|e| ontap_failure(OntapRequest::CredentialCheck, e))?;
        if !check.is_valid() {
            // The SVM's controller verified this Secret on its last pass (SvmReady) and would
            // notice the drift only on its next periodic one: ask for that pass now. It
            // repairs the Secret, and the Secret's change brings us back to deliver it.
            self.verify.request(namespace, &plan.object);
            return waiting(format!(
                "the credentials in {} do not authenticate against ONTAP ({check:?})",
                plan.secret
            ));
        }
        Ok(Outcome::Unchanged(ShootCredentials { username, password }))
    }
}

/// A pre-fill's result as the step's outcome, its failures in the Extension's reasons.
fn prefilled(result: Result<Prefilled, PrefillError>) -> StepFlow<Outcome> {
    match result {
        Ok(Prefilled::Created) => Ok(Outcome::changed()),
        Ok(Prefilled::Existed) => Ok(Outcome::unchanged()),
        Err(PrefillError::Build(e)) => {
            Err(Transient::SecretBuildFailed.error(e.to_string()).into())
        }
        Err(PrefillError::Create(e)) => Err(kube_error(Failed::SecretWrite)(e).into()),
    }
}

#[cfg(test)]
mod tests {
    use reconcile_engine::{ErrorCategory, Unfinished};

    use super::*;
    use crate::api::seed_secret::SeedSecretError;

    /// What the pre-fill did or why it failed reaches the step in the reasons the Extension
    /// reported when it wrote the Secret itself.
    #[test]
    fn prefills_become_outcomes_and_reasons() {
        assert!(matches!(
            prefilled(Ok(Prefilled::Created)),
            Ok(Outcome::Changed(()))
        ));
        assert!(matches!(
            prefilled(Ok(Prefilled::Existed)),
            Ok(Outcome::Unchanged(()))
        ));
        let Err(Unfinished::Failed(build)) = prefilled(Err(PrefillError::Build(
            SeedSecretError::MissingMetadata("uid"),
        ))) else {
            panic!("a failed build is an error");
        };
        assert_eq!(build.reason(), "SecretBuildFailed");
        assert_eq!(build.category(), ErrorCategory::Transient);
        assert_eq!(
            build.message(),
            SeedSecretError::MissingMetadata("uid").to_string()
        );
        let Err(Unfinished::Failed(write)) =
            prefilled(Err(PrefillError::Create(kube::Error::Api(Box::new(
                kube::core::Status::failure("refused", "Forbidden").with_code(403),
            )))))
        else {
            panic!("a failed create is an error");
        };
        assert_eq!(write.reason(), "SecretWriteFailed");
    }
}

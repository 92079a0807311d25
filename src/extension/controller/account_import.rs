//! Switching a shoot from metal-stack's extension: its ONTAP account on the project's SVM, and
//! the password metal-stack's seed Secret holds for it, are taken over instead of replaced.

use k8s_openapi::api::core::v1::Secret;
use kube::api::PostParams;
use kube::runtime::reflector::ObjectRef;
use kube::{Api, ResourceExt};
use ontap_client::CredentialCheck;
use reconcile_engine::{Outcome, StepError, StepFlow};
use secrecy::SecretString;
use serde_json::Value;

use crate::api::seed_secret::SeedFields;
use crate::api::{ADOPT_SVM_UUID_ANNOTATION, StorageVirtualMachine};
use crate::extension::api::Extension;
use crate::extension::config::ExtensionConfig;
use crate::extension::naming;

use super::credentials::secret_credentials;
use super::plan::Plan;
use super::reasons::{Failed, OntapRequest, Waiting, kube_error, ontap_failure, rejected};
use super::svm_object::set_adoption;
use super::{ExtensionReconciler, namespace_of};

/// A shoot account's working credentials, found in metal-stack's seed Secret.
struct ImportedAccount {
    /// The SVM the account lives on, which the shoot's object adopts the account on.
    svm_uuid: String,
    password: SecretString,
}

impl ExtensionReconciler {
    /// Step `AccountImported`: a shoot switching from metal-stack's extension keeps its ONTAP
    /// account *and its password*: the shoot's Trident uses it until our delivery replaces the
    /// Secret, and a rotation would cut it off meanwhile. metal-stack's seed Secret
    /// (`kube-system/<svm>-<project>--<shoot>-credentials`) is read once; when it names the
    /// shoot's account, the shoot's object is created asking to adopt the SVM's existing account
    /// (its controller then waits for the seed Secret instead of rotating) and the seed Secret
    /// is written with that password. A password that no longer authenticates is imported too:
    /// the controller then takes the account over and sets a new password, Secret first. The password is never logged: it only passes through [`SecretString`]s.
    pub(super) async fn import_account(
        &self,
        ext: &Extension,
        config: &ExtensionConfig,
        plan: &Plan,
    ) -> StepFlow<Outcome> {
        let namespace = namespace_of(ext);
        let current = self.svm_object(&namespace, &plan.object).await?;
        // Declared without an import: its controller owns the password from then on.
        if current
            .as_ref()
            .is_some_and(|c| !c.annotations().contains_key(ADOPT_SVM_UUID_ANNOTATION))
        {
            return Ok(Outcome::unchanged());
        }
        let seed_secrets: Api<Secret> = Api::namespaced(self.kube.clone(), &namespace);
        if self
            .has_seed_secret(&seed_secrets, &namespace, plan)
            .await?
        {
            return Ok(Outcome::unchanged());
        }
        let imported = self.metal_stack_credentials(plan).await?.into_value();
        let Some(imported) = imported else {
            // Nothing to keep: an object that was waiting for an import gives it up, and its
            // controller sets a new password the usual way.
            if current.is_some() {
                let svms: Api<StorageVirtualMachine> =
                    Api::namespaced(self.kube.clone(), &namespace);
                return set_adoption(&svms, &plan.object, Value::Null).await;
            }
            return Ok(Outcome::unchanged());
        };
        let svm = match current {
            Some(svm) => svm,
            None => self
                .create_importing_svm(ext, config, plan, &imported)
                .await?
                .into_value(),
        };
        let fields = SeedFields {
            username: plan.account.clone(),
            password: imported.password,
            management_lif: config.management_lif.ip.to_string(),
            svm_name: plan.svm_name.clone(),
            svm_uuid: imported.svm_uuid,
            // A password ONTAP holds already, not one that might still be in flight.
            password_set_at: None,
        };
        self.prefill_seed_secret(&svm, &fields).await
    }

    /// Whether the shoot's seed Secret exists: cached, or (written just now) in the API server.
    async fn has_seed_secret(
        &self,
        seed_secrets: &Api<Secret>,
        namespace: &str,
        plan: &Plan,
    ) -> Result<bool, StepError> {
        if self
            .secrets
            .get(&ObjectRef::new(&plan.secret).within(namespace))
            .is_some()
        {
            return Ok(true);
        }
        Ok(seed_secrets
            .get_opt(&plan.secret)
            .await
            .map_err(kube_error(Failed::SecretRead))?
            .is_some())
    }

    /// The shoot's object, asking to adopt the account `imported` found on its SVM.
    async fn create_importing_svm(
        &self,
        ext: &Extension,
        config: &ExtensionConfig,
        plan: &Plan,
        imported: &ImportedAccount,
    ) -> StepFlow<Outcome<StorageVirtualMachine>> {
        let desired = self.desired_svm(ext, config, plan, Some(&imported.svm_uuid))?;
        let svms: Api<StorageVirtualMachine> =
            Api::namespaced(self.kube.clone(), &namespace_of(ext));
        match svms.create(&PostParams::default(), &desired).await {
            Ok(created) => Ok(Outcome::Changed(created)),
            // Created meanwhile: the next pass looks at it.
            Err(kube::Error::Api(s)) if s.code == 409 => Err(Waiting::SvmCreatedMeanwhile
                .wait(format!(
                    "the StorageVirtualMachine {} appeared",
                    plan.object
                ))
                .into()),
            Err(e) => Err(rejected(Failed::SvmCreate, e).into()),
        }
    }

    /// The shoot's credentials from metal-stack's seed Secret, if they name the shoot's account
    /// on the project's SVM (whether they still authenticate or not).
    async fn metal_stack_credentials(
        &self,
        plan: &Plan,
    ) -> StepFlow<Outcome<Option<ImportedAccount>>> {
        let old =
            Api::<Secret>::namespaced(self.kube.clone(), naming::METAL_STACK_SECRET_NAMESPACE)
                .get_opt(&plan.secret)
                .await
                .map_err(kube_error(Failed::MetalStackSecretRead))?;
        let Some((username, password)) = old
            .as_ref()
            .and_then(secret_credentials)
            .filter(|(username, _)| *username == plan.account)
        else {
            return Ok(Outcome::Unchanged(None));
        };
        let password = SecretString::from(password);
        let Some(client) = self.ontap(plan).await? else {
            return Err(Waiting::OntapClusterNotCached
                .wait(format!(
                    "the OntapCluster {} is not cached yet",
                    plan.cluster
                ))
                .into());
        };
        let check = client
            .verify_credentials(&username, &password, &plan.svm_name)
            .await
            .map_err(|e| ontap_failure(OntapRequest::CredentialCheck, e))?;
        let svm_uuid = match check {
            CredentialCheck::Valid { svm_uuid } => svm_uuid,
            // Stale (drifted, or rotated by hand): still imported, so the shoot's object takes
            // the account over — an account it did not create is otherwise left alone — and,
            // finding the password failing, gives it a new one, Secret-first.
            check => {
                tracing::info!(
                    secret = %plan.secret,
                    ?check,
                    "metal-stack's credentials for the shoot's account do not authenticate: the account is taken over and given a new password"
                );
                let found = client
                    .svm_by_name(&plan.svm_name)
                    .await
                    .map_err(|e| ontap_failure(OntapRequest::SvmLookup, e))?;
                let Some(found) = found else {
                    return Ok(Outcome::Unchanged(None));
                };
                found.uuid
            }
        };
        Ok(Outcome::Unchanged(Some(ImportedAccount {
            svm_uuid,
            password,
        })))
    }
}

//! Step `SecretReady`, and the only writer of the seed Secret: the Secret-first password
//! handoff (a new password is written to the Secret before ONTAP gets it) and the settling
//! window after it.

use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use secrecy::SecretString;

use super::account::{Verified, confirmed_check, retire_renamed_account};
use super::errors::{Conflict, Failed, Invalid, Transient, Waiting, kube_error, ontap_error};
use super::reconcile::{Names, SvmReconciler};
use super::{
    ExpectedSeed, SeedFields, SeedSecretState, build_seed_secret, generate_password,
    inspect_seed_secret, password_set_at,
};
use crate::api::StorageVirtualMachine;
use crate::engine::{Outcome, StepError};
use crate::ontap::{AccountCheck, OntapClient, Svm};

/// The field manager of the operator's writes to seed Secrets.
const FIELD_MANAGER: &str = "ontap-operator";

impl SvmReconciler {
    pub(super) async fn seed_state(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        ontap_svm: &Svm,
    ) -> Result<Seed, StepError> {
        let api: Api<Secret> = Api::namespaced(self.kube.clone(), &names.namespace);
        let current = api
            .get_opt(&names.secret)
            .await
            .map_err(kube_error(Failed::SecretRead))?;
        let expected = ExpectedSeed::for_svm(svm, &names.account, &names.svm, &ontap_svm.uuid)
            .ok_or_else(|| Transient::NotStored.error("the object has no uid"))?;
        Ok(Seed {
            state: inspect_seed_secret(current.as_ref(), &expected),
            password_set_at: current.as_ref().and_then(password_set_at),
            resource_version: current.and_then(|s| s.metadata.resource_version),
        })
    }

    /// Creates the seed Secret (when none was read) or replaces the one read at
    /// `read_version`, with `password`. A Secret created or changed by someone else meanwhile
    /// is a conflict, never overwritten and so never adopted (and deleted with the object).
    pub(super) async fn write_secret(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        ontap_svm: &Svm,
        password: &SecretString,
        password_set_at: Option<Timestamp>,
        read_version: Option<&str>,
    ) -> Result<(), StepError> {
        let fields = SeedFields {
            username: names.account.clone(),
            password: password.clone(),
            management_lif: svm.spec.management_lif.ip.clone(),
            svm_name: names.svm.clone(),
            svm_uuid: ontap_svm.uuid.clone(),
            password_set_at,
        };
        let mut secret = build_seed_secret(svm, &fields)
            .map_err(|e| Transient::SecretBuildFailed.error(e.to_string()))?;
        let api: Api<Secret> = Api::namespaced(self.kube.clone(), &names.namespace);
        let pending = self
            .own_writes
            .begin::<Secret>(Some(&names.namespace), &names.secret);
        let written = match read_version {
            None => {
                let params = PostParams {
                    field_manager: Some(FIELD_MANAGER.into()),
                    ..PostParams::default()
                };
                api.create(&params, &secret).await
            }
            // Server-side apply with the version read as a precondition; a changed type is
            // refused by the API server instead of silently kept.
            Some(version) => {
                secret.metadata.resource_version = Some(version.to_string());
                api.patch(
                    &names.secret,
                    &PatchParams::apply(FIELD_MANAGER).force(),
                    &Patch::Apply(&secret),
                )
                .await
            }
        };
        let written = written.map_err(|e| match e {
            kube::Error::Api(status) if status.code == 409 => Conflict::SecretChangedMeanwhile.error(format!(
                "the Secret {} was created or changed by someone else while it was being written; it is read again",
                names.secret
            )),
            e => StepError::from_kube(Failed::SecretWrite.as_str(), e),
        })?;
        pending.done(&written);
        Ok(())
    }

    /// Step `SecretReady`: the Secret exists, is complete, and its credentials authenticate
    /// against ONTAP as the account, now. Otherwise: a new password goes into the Secret first,
    /// then into ONTAP; Ready waits until a request sent before it can no longer land, and the
    /// credentials are verified again then.
    pub(super) async fn ensure_secret(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        ontap_svm: &Svm,
        client: &OntapClient,
        verified: Option<Verified>,
    ) -> Result<Outcome, StepError> {
        // `AccountReady` authenticated with the Secret's credentials in this very pass.
        if let Some(verified) = verified {
            return Ok(self.settled(verified.password_set_at));
        }
        let seed = self.seed_state(svm, names, ontap_svm).await?;
        let check = |password: SecretString| async move {
            confirmed_check(client, &ontap_svm.uuid, &names.account, &password).await
        };
        match seed.state {
            SeedSecretState::NotOurs(_) => {
                return Err(Invalid::SecretNameInUse
                    .error(format!("Secret {}: {}", names.secret, seed.state)));
            }
            SeedSecretState::Complete { username, password } if username == names.account => {
                if let AccountCheck::Valid(_) = check(password).await? {
                    return Ok(self.settled(seed.password_set_at));
                }
            }
            SeedSecretState::Stale { ref username, .. } if *username != names.account => {
                retire_renamed_account(client, ontap_svm, names, &seed.state).await?;
            }
            SeedSecretState::Stale {
                username, password, ..
            } if username == names.account => {
                // Only descriptive fields differ: keep a password that still works.
                if let AccountCheck::Valid(_) = check(password.clone()).await? {
                    self.write_secret(
                        svm,
                        names,
                        ontap_svm,
                        &password,
                        seed.password_set_at,
                        seed.resource_version.as_deref(),
                    )
                    .await?;
                    return Ok(match self.settled(seed.password_set_at) {
                        Outcome::Unchanged(()) => Outcome::changed(),
                        waiting => waiting,
                    });
                }
            }
            _ => {}
        }
        let password = generate_password(&names.account);
        self.write_secret(
            svm,
            names,
            ontap_svm,
            &password,
            Some(Timestamp::now()),
            seed.resource_version.as_deref(),
        )
        .await?;
        client
            .set_account_password(&ontap_svm.uuid, &names.account, &password)
            .await
            .map_err(|e| ontap_error(Failed::PasswordSet, e))?;
        match client
            .verify_account(&ontap_svm.uuid, &names.account, &password)
            .await
            .map_err(|e| ontap_error(Failed::CredentialCheck, e))?
        {
            AccountCheck::Valid(_) => {
                Ok(Waiting::CredentialsSettling
                    .outcome(self.settling_message(), self.settle_window()))
            }
            other => Err(Transient::CredentialsRejected.error(format!(
                "ONTAP did not accept the new password of {} ({other:?})",
                names.account
            ))),
        }
    }

    /// How long after a password was set a request carrying an older one may still land: the
    /// request timeout twice over (a server may work on a request its client gave up on).
    fn settle_window(&self) -> Duration {
        self.connections.request_timeout() * 2
    }

    fn settling_message(&self) -> String {
        format!(
            "a new password was set; an older password request whose answer was lost could still land within {:?}: the credentials are verified again after that",
            self.settle_window()
        )
    }

    /// Verified credentials count once no older password request can land any more.
    fn settled(&self, password_set_at: Option<Timestamp>) -> Outcome {
        let Some(set_at) = password_set_at else {
            return Outcome::unchanged();
        };
        let since = Timestamp::now().duration_since(set_at).unsigned_abs();
        match self.settle_window().checked_sub(since) {
            Some(left) if !left.is_zero() => {
                Waiting::CredentialsSettling.outcome(self.settling_message(), left)
            }
            _ => Outcome::unchanged(),
        }
    }
}

/// The seed Secret as read, and when its password was set.
pub(super) struct Seed {
    pub(super) state: SeedSecretState,
    pub(super) password_set_at: Option<Timestamp>,
    /// The version read; a write is refused if the Secret changed since.
    pub(super) resource_version: Option<String>,
}

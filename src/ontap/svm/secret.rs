//! Step `SecretReady`: the seed Secret is complete and its credentials authenticate as the
//! account, now and past the settling window of the last rotation. What it writes (a refreshed
//! Secret, a new password) it asks of the credentials module, the Secret's one writer.

use secrecy::SecretString;

use super::SeedSecretState;
use super::controller_state::SvmReconciler;
use super::credentials::{Verified, confirmed_check};
use super::errors::Invalid;
use super::naming::Names;
use crate::api::StorageVirtualMachine;
use ontap_client::{AccountCheck, OntapClient, Svm};
use reconcile_engine::{Outcome, StepFlow};

impl SvmReconciler {
    /// Step `SecretReady`: the Secret exists, is complete, and its credentials authenticate
    /// against ONTAP as the account, now. Otherwise a new password is rotated in.
    pub(super) async fn ensure_secret(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        ontap_svm: &Svm,
        client: &OntapClient,
        verified: Option<Verified>,
    ) -> StepFlow<Outcome> {
        // `AccountReady` authenticated with the Secret's credentials in this very pass.
        if let Some(verified) = verified {
            return self.settled(verified.password_set_at);
        }
        let seed = self.seed_state(svm, names, ontap_svm).await?;
        let check = |password: SecretString| async move {
            confirmed_check(client, &ontap_svm.uuid, &names.account, &password).await
        };
        match &seed.state {
            SeedSecretState::NotOurs(_) => {
                return Err(Invalid::SecretNameInUse
                    .error(format!("Secret {}: {}", names.secret, seed.state))
                    .into());
            }
            SeedSecretState::Complete { username, password } if *username == names.account => {
                if let AccountCheck::Valid(_) = check(password.clone()).await? {
                    return self.settled(seed.password_set_at);
                }
            }
            SeedSecretState::Stale {
                username, password, ..
            } if *username == names.account => {
                // Only descriptive fields differ: keep a password that still works.
                if let AccountCheck::Valid(_) = check(password.clone()).await? {
                    self.republish(svm, names, ontap_svm, &seed, password)
                        .await?;
                    return self
                        .settled(seed.password_set_at)
                        .map(|_| Outcome::changed());
                }
            }
            _ => {}
        }
        self.rotate(svm, names, ontap_svm, client, &seed).await
    }
}

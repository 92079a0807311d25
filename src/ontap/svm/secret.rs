//! Step `SecretReady`: the seed Secret is complete and its credentials authenticate as the
//! account, now and past the settling window of the last rotation; a password due for rotation
//! is replaced, and a rotation an earlier pass left part-way is finished. What it writes (a
//! refreshed Secret, a new password) it asks of the credentials module, the Secret's one writer.

use secrecy::SecretString;

use super::SeedSecretState;
use super::SvmReconciler;
use super::credentials::{Seed, Switch, Verified, confirmed_check};
use super::errors::Invalid;
use super::naming::Names;
use super::rotation::{RotationOutcome, RotationPlan, Trigger};
use crate::api::StorageVirtualMachine;
use ontap_client::{AccountCheck, OntapClient, Svm};
use reconcile_engine::{Outcome, StepFlow};

impl SvmReconciler {
    /// Step `SecretReady`: the Secret exists, is complete, and its credentials authenticate
    /// against ONTAP as the account, now. Otherwise a new password is rotated in. A password
    /// that works is replaced when `rotation` says so, or when an earlier pass staged its
    /// successor; `outcome` says how that went.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn ensure_secret(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        ontap_svm: &Svm,
        client: &OntapClient,
        verified: Option<Verified>,
        rotation: &RotationPlan,
        outcome: &mut RotationOutcome,
    ) -> StepFlow<Outcome> {
        // `AccountReady` authenticated with the Secret's credentials in this very pass.
        if let Some(Verified { seed }) = verified {
            return self
                .rotate_if_due(svm, names, ontap_svm, client, &seed, rotation, outcome)
                .await;
        }
        let seed = self.seed_state(svm, names, ontap_svm).await?;
        let role = self.account_role(svm);
        let check = |password: SecretString| async move {
            confirmed_check(client, ontap_svm, &names.account, &password, role, None).await
        };
        match &seed.state {
            SeedSecretState::NotOurs(_) => {
                return Err(Invalid::SecretNameInUse
                    .error(format!("Secret {}: {}", names.secret, seed.state))
                    .into());
            }
            SeedSecretState::Complete { username, password } if *username == names.account => {
                // A rotation switched ONTAP to the staged password and stopped before
                // publishing it.
                if seed.next_password.is_some() {
                    return self
                        .rotate_if_due(svm, names, ontap_svm, client, &seed, rotation, outcome)
                        .await;
                }
                if let AccountCheck::Valid(_) = check(password.clone()).await? {
                    return self
                        .rotate_if_due(svm, names, ontap_svm, client, &seed, rotation, outcome)
                        .await;
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

    /// With the Secret's `password` proven: finishes a rotation an earlier pass staged, or
    /// starts one that is due (only past the settling window, so that no request carrying an
    /// older password is still on its way), or confirms the settling window has passed.
    #[allow(clippy::too_many_arguments)]
    async fn rotate_if_due(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        ontap_svm: &Svm,
        client: &OntapClient,
        seed: &Seed,
        rotation: &RotationPlan,
        outcome: &mut RotationOutcome,
    ) -> StepFlow<Outcome> {
        let SeedSecretState::Complete { password, .. } = &seed.state else {
            return self.settled(seed.password_set_at);
        };
        let resuming = seed.next_password.is_some();
        if !resuming {
            self.settled(seed.password_set_at)?;
        }
        // A staged password is switched to whatever the plan says now: once staged, ONTAP may
        // hold it already, and only publishing it ends the rotation.
        let Some(trigger) = rotation
            .trigger
            .clone()
            .or(resuming.then_some(Trigger::Schedule))
        else {
            return Ok(Outcome::unchanged());
        };
        let rotated = if resuming {
            self.switch_to_next(svm, names, ontap_svm, client, seed, Switch::Unknown)
                .await
        } else {
            self.rotate_working(svm, names, ontap_svm, client, seed, password)
                .await
        };
        *outcome = match &rotated {
            Ok(()) => RotationOutcome::Rotated(trigger),
            Err(_) => RotationOutcome::Failed(trigger),
        };
        rotated?;
        Ok(Outcome::changed())
    }
}

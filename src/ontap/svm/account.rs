//! Step `AccountReady`: the SVM-scoped vsadmin account, unlocked. Its password comes from the
//! credentials module, which has put it in the seed Secret first.

use super::SeedSecretState;
use super::credentials::{Verified, confirmed_check};
use super::errors::{Failed, Invalid, Waiting, ontap_error};
use super::reconcile::{Names, ONTAP_SETTLING, SvmReconciler};
use super::takeover::adopts;
use crate::api::StorageVirtualMachine;
use crate::ontap::trident_api::{account_applications, missing_applications};
use kube::runtime::reflector::ObjectRef;
use ontap_client::{
    Account, AccountApplication, AccountCheck, AccountCreate, AccountPatch, ErrorClass,
    OntapClient, Svm,
};
use reconcile_engine::{Outcome, StepError};

impl SvmReconciler {
    /// Step `AccountReady`: the SVM-scoped account exists with role vsadmin, unlocked.
    ///
    /// When the seed Secret holds the account's credentials, one GET authenticated as the
    /// account both proves them and reads the account (role; an account that can log in is not
    /// locked): that check is the `SecretReady` step's as well, so a pass over a Ready SVM costs
    /// ONTAP this GET and the two lookups before it. Otherwise the administrator looks.
    pub(super) async fn ensure_account(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        ontap_svm: &Svm,
        client: &OntapClient,
    ) -> Result<Outcome<Option<Verified>>, StepError> {
        let seed = self.seed_state(svm, names, ontap_svm).await?;
        if let SeedSecretState::Complete { username, password } = &seed.state
            && *username == names.account
            && let AccountCheck::Valid(account) =
                confirmed_check(client, &ontap_svm.uuid, &names.account, password).await?
        {
            check_role(&account, names)?;
            if self
                .grant_applications(svm, &account, names, ontap_svm, client)
                .await?
            {
                return Ok(Outcome::Changed(None));
            }
            return Ok(Outcome::Unchanged(Some(Verified {
                password_set_at: seed.password_set_at,
            })));
        }
        let existing = client
            .account(&ontap_svm.uuid, &names.account)
            .await
            .map_err(|e| ontap_error(Failed::AccountLookup, e))?;
        if let Some(account) = existing {
            // Taking over an SVM by uuid (a restore, or an installation switching from another
            // extension) keeps the accounts on it working: without the seed Secret that carries
            // the password, `SecretReady` would rotate it and lock out whoever uses it now.
            if adopts(svm, ontap_svm) && matches!(seed.state, SeedSecretState::Missing) {
                return Ok(Waiting::AdoptionAwaitsSecret.outcome(
                    format!(
                        "the account {} exists on the adopted SVM {}; its password is kept, so this waits for the seed Secret {} that carries it",
                        names.account, names.svm, names.secret
                    ),
                    ONTAP_SETTLING,
                ));
            }
            check_role(&account, names)?;
            if unlock_needed(&account) {
                let unlock = AccountPatch {
                    locked: Some(false),
                    ..AccountPatch::default()
                };
                client
                    .patch_account(&ontap_svm.uuid, &names.account, &unlock)
                    .await
                    .map_err(|e| ontap_error(Failed::AccountUnlock, e))?;
                return Ok(Outcome::Changed(None));
            }
            if self
                .grant_applications(svm, &account, names, ontap_svm, client)
                .await?
            {
                return Ok(Outcome::Changed(None));
            }
            return Ok(Outcome::Unchanged(None));
        }
        let password = self
            .new_account_password(svm, names, ontap_svm, client, seed)
            .await?;
        let create = AccountCreate {
            name: names.account.clone(),
            owner_uuid: ontap_svm.uuid.clone(),
            role: "vsadmin".into(),
            password,
            comment: Some(format!("ontap-operator:uid={}", names.uid)),
            applications: self.wanted_applications(svm),
        };
        match client.create_account(&create).await {
            Ok(()) => Ok(Outcome::Changed(None)),
            // Applied or not, the next pass looks again; a duplicate means it exists already.
            Err(e) if e.class() == ErrorClass::Conflict => Ok(Outcome::Changed(None)),
            Err(e) => Err(ontap_error(Failed::AccountCreate, e)),
        }
    }
}

impl SvmReconciler {
    /// The applications the account needs for the shoot's Trident on this cluster's version.
    fn wanted_applications(&self, svm: &StorageVirtualMachine) -> Vec<AccountApplication> {
        let version = self
            .clusters
            .get(&ObjectRef::new(&svm.spec.cluster_ref.name))
            .and_then(|c| c.status.as_ref()?.version.as_deref()?.parse().ok());
        account_applications(version)
    }

    /// Adds the applications the account lacks (`ontapi` for a Trident speaking ZAPI), keeping
    /// those it has; whether it patched.
    async fn grant_applications(
        &self,
        svm: &StorageVirtualMachine,
        account: &Account,
        names: &Names,
        ontap_svm: &Svm,
        client: &OntapClient,
    ) -> Result<bool, StepError> {
        let missing = missing_applications(&account.applications, &self.wanted_applications(svm));
        if missing.is_empty() {
            return Ok(false);
        }
        let mut applications: Vec<AccountApplication> = account
            .applications
            .iter()
            .filter(|a| !missing.iter().any(|m| m.application == a.application))
            .cloned()
            .collect();
        applications.extend(missing);
        let patch = AccountPatch {
            applications: Some(applications),
            ..AccountPatch::default()
        };
        client
            .patch_account(&ontap_svm.uuid, &names.account, &patch)
            .await
            .map_err(|e| ontap_error(Failed::AccountApplications, e))?;
        Ok(true)
    }
}

/// The account must have role vsadmin; another role is not changed.
fn check_role(account: &Account, names: &Names) -> Result<(), StepError> {
    let role = account.role.as_ref().and_then(|r| r.name.as_deref());
    if role != Some("vsadmin") {
        return Err(Invalid::AccountRoleMismatch.error(format!(
            "the account {} has role {}, not vsadmin; it is not changed",
            names.account,
            role.unwrap_or("unknown")
        )));
    }
    Ok(())
}

/// Unlocked only when ONTAP says so: a missing `locked` field is not a yes.
fn unlock_needed(account: &Account) -> bool {
    account.locked != Some(false)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn an_account_is_unlocked_only_when_ontap_says_so() {
        let account = |locked: serde_json::Value| -> Account {
            serde_json::from_value(serde_json::json!({ "name": "a", "locked": locked })).unwrap()
        };
        assert!(unlock_needed(&account(serde_json::json!(true))));
        assert!(unlock_needed(&account(serde_json::Value::Null)));
        assert!(!unlock_needed(&account(serde_json::json!(false))));
        let absent: Account = serde_json::from_value(serde_json::json!({ "name": "a" })).unwrap();
        assert!(unlock_needed(&absent));
    }
}

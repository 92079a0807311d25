//! Step `AccountReady`: the SVM-scoped account with its role, unlocked. Its password comes from the
//! credentials module, which has put it in the seed Secret first.

use kube::runtime::reflector::ObjectRef;

use super::SeedSecretState;
use super::authority::{
    AccountRight, Mark, Standing, account_comment, asks_to_adopt, decide_account, marked_for,
};
use super::credentials::{Verified, confirmed_check};
use super::errors::{Failed, Invalid, Waiting, ontap_error};
use super::naming::Names;
use super::role::{ensure_trident_role, gives, role_name, trident_role_confirmed};
use super::{ONTAP_SETTLING, SvmReconciler};
use crate::api::{AccountRole, OntapCluster, StorageVirtualMachine};
use crate::ontap::inventory::Snapshot;
use crate::ontap::trident_api::{account_applications, missing_applications};
use ontap_client::{
    Account, AccountApplication, AccountCheck, AccountCreate, AccountPatch, ErrorClass,
    OntapClient, Svm,
};
use reconcile_engine::{Outcome, StepError, StepFlow};

impl SvmReconciler {
    /// Step `AccountReady`: the SVM-scoped account exists with its role (vsadmin, or the
    /// operator's Trident role, kept on the SVM first), unlocked, and is
    /// this object's: created for it (its comment carries the object's uid), or taken over by an
    /// adoption from where adoption is granted. Any other account of the name is left alone —
    /// no unlock, no password, no delete — or a tenant could name another's account and take it.
    ///
    /// When the seed Secret holds the account's credentials, one GET authenticated as the
    /// account both proves them and reads the account (role, mark; an account that can log in
    /// is not locked): that check is the `SecretReady` step's as well, so a pass over a Ready SVM
    /// costs ONTAP this GET, plus the SVM and LIF lookups before it unless the cluster's
    /// inventory confirms those (`steady`). Otherwise the administrator looks. An account of
    /// role `Trident` cannot read its own record: besides its login through a path its role
    /// grants, the administrator reads its record ([`super::credentials::login_check`]) and the
    /// role, each unless the steady object's `snapshot` shows it as this pass wants it.
    pub(super) async fn ensure_account(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        ontap_svm: &Svm,
        snapshot: Option<&Snapshot>,
        client: &OntapClient,
    ) -> StepFlow<Outcome<Option<Verified>>> {
        let role = self.account_role(svm);
        // The role exists before an account is given it; kept on every pass, for a privilege
        // changed in ONTAP is the account's power changed.
        let role_restored = role == AccountRole::Trident
            && !snapshot.is_some_and(|s| trident_role_confirmed(&ontap_svm.uuid, s))
            && ensure_trident_role(client, &ontap_svm.uuid).await?;
        let cluster = self
            .clusters
            .get(&ObjectRef::new(&svm.spec.cluster_ref.name));
        let known = snapshot.and_then(|s| {
            settled_account(
                s,
                &ontap_svm.uuid,
                names,
                &self.standings.of(svm),
                role,
                &applications_on(cluster.as_deref()),
            )
        });
        let outcome = self
            .ensure_account_with(svm, names, ontap_svm, client, role, known)
            .await?;
        Ok(match outcome {
            Outcome::Unchanged(verified) if role_restored => Outcome::Changed(verified),
            outcome => outcome,
        })
    }

    async fn ensure_account_with(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        ontap_svm: &Svm,
        client: &OntapClient,
        role: AccountRole,
        known: Option<&Account>,
    ) -> StepFlow<Outcome<Option<Verified>>> {
        let seed = self.seed_state(svm, names, ontap_svm).await?;
        if let SeedSecretState::Complete { username, password } = &seed.state
            && *username == names.account
            && let AccountCheck::Valid(account) =
                confirmed_check(client, ontap_svm, &names.account, password, role, known).await?
        {
            let claim = self.claim(svm, names, ontap_svm, &account)?;
            let switched = switch_role(&account, names, ontap_svm, client, role).await?;
            let remarked = self.remark(svm, names, ontap_svm, &account, client).await?;
            if self
                .grant_applications(svm, &account, names, ontap_svm, client)
                .await?
            {
                return Ok(Outcome::Changed(None));
            }
            let verified = Some(Verified { seed: seed.clone() });
            return Ok(if remarked || switched || claim == Claim::Adopt {
                Outcome::Changed(verified)
            } else {
                Outcome::Unchanged(verified)
            });
        }
        let existing = client
            .account(&ontap_svm.uuid, &names.account)
            .await
            .map_err(|e| ontap_error(Failed::AccountLookup, e))?;
        if let Some(account) = existing {
            let claim = self.claim(svm, names, ontap_svm, &account)?;
            // Taking over an SVM by uuid (a restore, or an installation switching from another
            // extension) keeps the accounts on it working: without the seed Secret that carries
            // the password, `SecretReady` would rotate it and lock out whoever uses it now.
            if claim == Claim::Adopt && matches!(seed.state, SeedSecretState::Missing) {
                return Err(Waiting::AdoptionAwaitsSecret
                    .wait(
                        format!(
                            "the account {} exists on the adopted SVM {}; its password is kept, so this waits for the seed Secret {} that carries it",
                            names.account, names.svm, names.secret
                        ),
                        ONTAP_SETTLING,
                    )
                    .into());
            }
            if switch_role(&account, names, ontap_svm, client, role).await? {
                return Ok(Outcome::Changed(None));
            }
            if claim != Claim::Adopt && self.remark(svm, names, ontap_svm, &account, client).await?
            {
                return Ok(Outcome::Changed(None));
            }
            // An account without a password has no lock state, and ONTAP refuses to unlock it
            // until one is set: `SecretReady` sets the password, the next pass the lock state.
            if account.locked == Some(true) {
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
            role: role_name(role).into(),
            password,
            comment: Some(account_comment(&names.uid, &self.standings.of(svm))),
            applications: self.wanted_applications(svm),
        };
        match client.create_account(&create).await {
            Ok(()) => Ok(Outcome::Changed(None)),
            // Applied or not, the next pass looks again; a duplicate means it exists already.
            Err(e) if e.class() == ErrorClass::Conflict => Ok(Outcome::Changed(None)),
            Err(e) => Err(ontap_error(Failed::AccountCreate, e).into()),
        }
    }

    /// Whether `account` is this object's to manage ([`decide_account`]): marked with its uid,
    /// or taken over with the SVM this object asks for by uuid, where its standing and the
    /// SVM's mark allow it.
    fn claim(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        ontap_svm: &Svm,
        account: &Account,
    ) -> Result<Claim, StepError> {
        let standing = self.standings.of(svm);
        let asks = asks_to_adopt(names.adopt.as_deref(), &ontap_svm.uuid, None);
        match decide_account(
            &names.actor(&standing),
            Mark::read(account.comment.as_deref()).as_ref(),
            Mark::read(ontap_svm.comment.as_deref()).as_ref(),
            asks,
        ) {
            Ok(AccountRight::Ours) => Ok(Claim::Ours),
            Ok(AccountRight::Moved) => Ok(Claim::Moved),
            Ok(AccountRight::Adopt) => Ok(Claim::Adopt),
            Err(refusal) => Err(refusal.error(&names.svm, &names.account)),
        }
    }

    /// Locks this object's account on `ontap_svm`, if it has one there that can log in: the
    /// object was refused the SVM (its provider stopped sharing it) and must lose the access
    /// it was given. Only an account marked for the object is touched.
    pub(super) async fn revoke_account(
        &self,
        names: &Names,
        ontap_svm: &Svm,
        client: &OntapClient,
    ) -> Result<(), StepError> {
        let account = client
            .account(&ontap_svm.uuid, &names.account)
            .await
            .map_err(|e| ontap_error(Failed::AccountLookup, e))?;
        let Some(account) = account else {
            return Ok(());
        };
        if !marked_for(account.comment.as_deref(), &names.uid) || account.locked == Some(true) {
            return Ok(());
        }
        let lock = AccountPatch {
            locked: Some(true),
            ..AccountPatch::default()
        };
        client
            .patch_account(&ontap_svm.uuid, &names.account, &lock)
            .await
            .map_err(|e| ontap_error(Failed::AccountLock, e))?;
        tracing::info!(account = %names.account, svm = %names.svm, "the account's access was revoked: locked");
        Ok(())
    }
}

/// Whose an existing account is, for this object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Claim {
    /// Created for this object.
    Ours,
    /// Taken over by an adoption: marked for this object once its password is proven.
    Adopt,
    /// Its shoot's account, made by the shoot's object on the seed the shoot came from: marked
    /// for this object at once.
    Moved,
}

impl SvmReconciler {
    /// Marks the account as this object's, as its standing now records it, unless it is so
    /// marked already: whether it patched. The mark is what lets this object's cleanup (and only
    /// its) delete the account, and, for a shoot's object, the shoot's next object on another
    /// seed take it back; an account marked before marks recorded the shoot is re-marked here.
    async fn remark(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        ontap_svm: &Svm,
        account: &Account,
        client: &OntapClient,
    ) -> Result<bool, StepError> {
        let wanted = account_comment(&names.uid, &self.standings.of(svm));
        if account.comment.as_deref() == Some(wanted.as_str()) {
            return Ok(false);
        }
        let patch = AccountPatch {
            comment: Some(wanted),
            ..AccountPatch::default()
        };
        client
            .patch_account(&ontap_svm.uuid, &names.account, &patch)
            .await
            .map_err(|e| ontap_error(Failed::AccountMark, e))?;
        Ok(true)
    }

    /// The applications the account needs for the shoot's Trident on this cluster's version.
    fn wanted_applications(&self, svm: &StorageVirtualMachine) -> Vec<AccountApplication> {
        let cluster = self
            .clusters
            .get(&ObjectRef::new(&svm.spec.cluster_ref.name));
        applications_on(cluster.as_deref())
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

/// The applications an account needs for the shoot's Trident on `cluster`'s version.
pub(super) fn applications_on(cluster: Option<&OntapCluster>) -> Vec<AccountApplication> {
    account_applications(cluster.and_then(|c| c.status.as_ref()?.version.as_deref()?.parse().ok()))
}

/// The account `names.account` of the SVM `svm_uuid` as `snapshot` shows it, when a pass would
/// change nothing of it: it holds `role`, carries this object's mark as `standing` records it
/// (so it is this object's, [`decide_account`]), and has every one of `applications`. Only then
/// may it stand in for the administrator's read after a login; otherwise that read is made.
pub(super) fn settled_account<'s>(
    snapshot: &'s Snapshot,
    svm_uuid: &str,
    names: &Names,
    standing: &Standing,
    role: AccountRole,
    applications: &[AccountApplication],
) -> Option<&'s Account> {
    snapshot
        .role_account(svm_uuid, &names.account)
        .filter(|account| {
            let mark = account_comment(&names.uid, standing);
            account.role.as_ref().and_then(|r| r.name.as_deref()) == Some(role_name(role))
                && account.comment.as_deref() == Some(mark.as_str())
                && missing_applications(&account.applications, applications).is_empty()
        })
}

/// Gives the account the role `role` asks for, in place (its password stays), where it holds
/// the other role the operator gives: switching `spec.account.role`, or a role changed in ONTAP
/// between the two. A role someone else gave is not changed. Whether it patched.
async fn switch_role(
    account: &Account,
    names: &Names,
    ontap_svm: &Svm,
    client: &OntapClient,
    role: AccountRole,
) -> Result<bool, StepError> {
    let wanted = role_name(role);
    let held = account.role.as_ref().and_then(|r| r.name.as_deref());
    match held {
        Some(held) if held == wanted => Ok(false),
        Some(held) if gives(held) => {
            let patch = AccountPatch {
                role: Some(wanted.to_owned()),
                ..AccountPatch::default()
            };
            client
                .patch_account(&ontap_svm.uuid, &names.account, &patch)
                .await
                .map_err(|e| ontap_error(Failed::AccountRole, e))?;
            tracing::info!(account = %names.account, svm = %names.svm, from = held, to = wanted, "the account's role was switched");
            Ok(true)
        }
        held => Err(Invalid::AccountRoleMismatch.error(format!(
            "the account {} has role {}, not {wanted}; a role the operator did not give is not changed",
            names.account,
            held.unwrap_or("unknown")
        ))),
    }
}

//! The account's credentials and the one writer of the seed Secret. A password is minted only
//! here and reaches the Secret before ONTAP sees it, whether for a new account or a rotation:
//! a crash between the two then leaves a Secret that can be checked and, if ONTAP never got
//! the password, rotated, never an account whose password nobody knows. A rejection must be
//! confirmed before it mints a new password, and a password counts only once no older password
//! request can land after it. A password ONTAP already holds enters the Secret here too, by
//! [`SeedSecretPrefill`], the service through which the Gardener Extension pre-fills one.

use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use secrecy::{ExposeSecret, SecretString};

use super::SvmReconciler;
use super::authority::marked_for;
use super::errors::{Conflict, Failed, Transient, Waiting, kube_error, ontap_error};
use super::naming::Names;
use super::{ExpectedSeed, SeedSecretState, generate_password, inspect_seed_secret};
use crate::api::seed_secret::{
    NEXT_PASSWORD_KEY, SeedFields, SeedSecretError, build_seed_secret, password_set_at, seed_value,
};
use crate::api::{AccountRole, StorageVirtualMachine};
use ontap_client::{Account, AccountCheck, CredentialCheck, OntapClient, OntapError, Svm};
use reconcile_engine::{Outcome, StepError, StepFlow};

/// The field manager of the operator's writes to seed Secrets.
const FIELD_MANAGER: &str = "ontap-operator";

/// Pre-fills seed Secrets for whoever declares a StorageVirtualMachine that is to keep a
/// password ONTAP already holds (the Gardener Extension, on a restore or an import from
/// metal-stack): the Secret exists with it before the object's controller would mint one, so
/// the controller verifies and keeps it. Made once by the ONTAP feature and handed to the
/// features built on it, so that no other module writes a seed Secret.
#[derive(Clone)]
pub struct SeedSecretPrefill {
    kube: Client,
}

/// What a pre-fill did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prefilled {
    /// The Secret was created with the fields given.
    Created,
    /// A Secret of that name exists already and is left as it is: its object's controller
    /// judges it, and a stranger's Secret is never taken over.
    Existed,
}

/// Why a pre-fill failed.
#[derive(Debug, thiserror::Error)]
pub enum PrefillError {
    #[error(transparent)]
    Build(#[from] SeedSecretError),
    #[error("creating the seed Secret failed: {0}")]
    Create(#[source] kube::Error),
}

impl SeedSecretPrefill {
    pub fn new(kube: Client) -> Self {
        Self { kube }
    }

    /// Creates `svm`'s seed Secret holding `fields`, unless a Secret of its name exists.
    pub async fn prefill(
        &self,
        svm: &StorageVirtualMachine,
        fields: &SeedFields,
    ) -> Result<Prefilled, PrefillError> {
        let secret = build_seed_secret(svm, fields)?;
        let namespace = svm
            .namespace()
            .ok_or(SeedSecretError::MissingMetadata("namespace"))?;
        match Api::<Secret>::namespaced(self.kube.clone(), &namespace)
            .create(&PostParams::default(), &secret)
            .await
        {
            Ok(_) => Ok(Prefilled::Created),
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(Prefilled::Existed),
            Err(e) => Err(PrefillError::Create(e)),
        }
    }
}

/// The seed Secret as read, and when its password was set.
#[derive(Clone)]
pub(super) struct Seed {
    pub(super) state: SeedSecretState,
    pub(super) password_set_at: Option<Timestamp>,
    /// The password a rotation staged and is switching ONTAP to (`nextPassword`).
    pub(super) next_password: Option<SecretString>,
    /// The version read; a write is refused if the Secret changed since.
    resource_version: Option<String>,
}

/// Whether ONTAP may hold a staged password already.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Switch {
    /// Staged in this very pass: no request carried it yet.
    NotYet,
    /// Staged by an earlier pass, whose request may have landed.
    Unknown,
}

/// The seed Secret's credentials authenticated as the account in `AccountReady`, this pass:
/// the Secret as that step read it.
pub(super) struct Verified {
    pub(super) seed: Seed,
}

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
            next_password: current
                .as_ref()
                .and_then(|s| seed_value(s, NEXT_PASSWORD_KEY))
                .map(|p| SecretString::from(p.to_owned())),
            resource_version: current.and_then(|s| s.metadata.resource_version),
        })
    }

    /// The password to create the account with, already in the Secret: a crash right after
    /// the account is created then leaves a Secret that matches it.
    pub(super) async fn new_account_password(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        ontap_svm: &Svm,
        client: &OntapClient,
        seed: Seed,
    ) -> Result<SecretString, StepError> {
        retire_renamed_account(client, ontap_svm, names, &seed.state).await?;
        match seed.state {
            SeedSecretState::Complete { username, password } if username == names.account => {
                Ok(password)
            }
            // The name is someone else's Secret, never written: the account gets a password
            // nobody learns, `SecretReady` says why, and rotates once the name is free.
            SeedSecretState::NotOurs(_) => Ok(generate_password(&names.account)),
            // A new account has no older password whose request could land late: nothing to
            // settle.
            _ => self.mint(svm, names, ontap_svm, &seed, None).await,
        }
    }

    /// Rewrites the Secret's descriptive fields around a password that still works, keeping
    /// when it was set: the settling window it is in goes on.
    pub(super) async fn republish(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        ontap_svm: &Svm,
        seed: &Seed,
        password: &SecretString,
    ) -> Result<(), StepError> {
        self.write_secret(
            svm,
            names,
            ontap_svm,
            password,
            None,
            seed.password_set_at,
            seed.resource_version.as_deref(),
        )
        .await
        .map(drop)
    }

    /// A new password: into the Secret first, then into ONTAP, then checked; Ready waits out
    /// the settling window, after which the next pass verifies it again.
    pub(super) async fn rotate(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        ontap_svm: &Svm,
        client: &OntapClient,
        seed: &Seed,
    ) -> StepFlow<Outcome> {
        retire_renamed_account(client, ontap_svm, names, &seed.state).await?;
        let password = self
            .mint(svm, names, ontap_svm, seed, Some(Timestamp::now()))
            .await?;
        client
            .set_account_password(&ontap_svm.uuid, &names.account, &password)
            .await
            .map_err(|e| ontap_error(Failed::PasswordSet, e))?;
        match login_check(
            client,
            ontap_svm,
            &names.account,
            &password,
            self.account_role(svm),
            None,
        )
        .await
        .map_err(|e| ontap_error(Failed::CredentialCheck, e))?
        {
            AccountCheck::Valid(_) => Err(Waiting::CredentialsSettling
                .wait(self.settling_message(), self.settle_window())
                .into()),
            other => Err(Transient::CredentialsRejected
                .error(format!(
                    "ONTAP did not accept the new password of {} ({other:?})",
                    names.account
                ))
                .into()),
        }
    }

    /// A fresh password, in the Secret before it is returned to be given to ONTAP.
    async fn mint(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        ontap_svm: &Svm,
        seed: &Seed,
        password_set_at: Option<Timestamp>,
    ) -> Result<SecretString, StepError> {
        let password = generate_password(&names.account);
        self.write_secret(
            svm,
            names,
            ontap_svm,
            &password,
            None,
            password_set_at,
            seed.resource_version.as_deref(),
        )
        .await?;
        Ok(password)
    }

    /// Replaces `working`, the Secret's password that authenticates, without a moment in which
    /// the Secret holds no password ONTAP accepts: the new one is staged beside it
    /// (`nextPassword`), then ONTAP is switched to it (atomically: one password per account),
    /// then it is checked and published as `password`. `when` the password was last set is
    /// kept: every password request this sends carries the staged value, so none that lands
    /// late can undo the switch, and the working one was past its settling window already.
    pub(super) async fn rotate_working(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        ontap_svm: &Svm,
        client: &OntapClient,
        seed: &Seed,
        working: &SecretString,
    ) -> Result<(), StepError> {
        let next = generate_password(&names.account);
        let staged = self
            .write_secret(
                svm,
                names,
                ontap_svm,
                working,
                Some(&next),
                seed.password_set_at,
                seed.resource_version.as_deref(),
            )
            .await?;
        let staged = Seed {
            resource_version: staged,
            next_password: Some(next),
            ..seed.clone()
        };
        self.switch_to_next(svm, names, ontap_svm, client, &staged, Switch::NotYet)
            .await
    }

    /// Switches ONTAP to the password `seed` has staged, checks it and publishes it: the second
    /// half of [`Self::rotate_working`], and how a pass resumes a rotation that a crash or a
    /// failed request interrupted (`Switch::Unknown`: ONTAP may hold it already, and refuses
    /// a password it holds as the new one, so it is asked first).
    pub(super) async fn switch_to_next(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        ontap_svm: &Svm,
        client: &OntapClient,
        seed: &Seed,
        switch: Switch,
    ) -> Result<(), StepError> {
        let Some(next) = &seed.next_password else {
            return Ok(());
        };
        let check = async || {
            client
                .verify_account(&ontap_svm.uuid, &names.account, next)
                .await
                .map_err(|e| ontap_error(Failed::CredentialCheck, e))
        };
        let holds = switch == Switch::Unknown && matches!(check().await?, AccountCheck::Valid(_));
        if !holds {
            client
                .set_account_password(&ontap_svm.uuid, &names.account, next)
                .await
                .map_err(|e| ontap_error(Failed::PasswordSet, e))?;
            match check().await? {
                AccountCheck::Valid(_) => {}
                other => {
                    return Err(Transient::CredentialsRejected.error(format!(
                        "ONTAP did not accept the rotated password of {} ({other:?})",
                        names.account
                    )));
                }
            }
        }
        self.write_secret(
            svm,
            names,
            ontap_svm,
            next,
            None,
            seed.password_set_at,
            seed.resource_version.as_deref(),
        )
        .await
        .map(drop)
    }

    /// Creates the seed Secret (when none was read) or replaces the one read at
    /// `read_version`, with `password` (and `next`, a rotation's staged password); the version
    /// written. A Secret created or changed by someone else meanwhile is a conflict, never
    /// overwritten and so never adopted (and deleted with the object).
    #[allow(clippy::too_many_arguments)]
    async fn write_secret(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        ontap_svm: &Svm,
        password: &SecretString,
        next: Option<&SecretString>,
        password_set_at: Option<Timestamp>,
        read_version: Option<&str>,
    ) -> Result<Option<String>, StepError> {
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
        // Applied without it, the key is removed: server-side apply drops what the field
        // manager applied before and no longer applies.
        if let (Some(next), Some(data)) = (next, secret.data.as_mut()) {
            data.insert(
                NEXT_PASSWORD_KEY.to_owned(),
                ByteString(next.expose_secret().as_bytes().to_vec()),
            );
        }
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
        Ok(written.metadata.resource_version)
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
    pub(super) fn settled(&self, password_set_at: Option<Timestamp>) -> StepFlow<Outcome> {
        let Some(set_at) = password_set_at else {
            return Ok(Outcome::unchanged());
        };
        let since = Timestamp::now().duration_since(set_at).unsigned_abs();
        match self.settle_window().checked_sub(since) {
            Some(left) if !left.is_zero() => Err(Waiting::CredentialsSettling
                .wait(self.settling_message(), left)
                .into()),
            _ => Ok(Outcome::unchanged()),
        }
    }
}

/// The account's verdict on `password`, a rejection confirmed by a second look: one spurious
/// 401 or 403 must not mint a new password. `known`: as for [`login_check`].
pub(super) async fn confirmed_check(
    client: &OntapClient,
    ontap_svm: &Svm,
    account: &str,
    password: &SecretString,
    role: AccountRole,
    known: Option<&Account>,
) -> Result<AccountCheck, StepError> {
    let check = async || {
        login_check(client, ontap_svm, account, password, role, known)
            .await
            .map_err(|e| ontap_error(Failed::CredentialCheck, e))
    };
    match check().await? {
        AccountCheck::Valid(account) => Ok(AccountCheck::Valid(account)),
        AccountCheck::Rejected | AccountCheck::NotAuthorized => check().await,
    }
}

/// Logs in as the account with `password` through a request its role grants, and reads the
/// account. A vsadmin reads its own record: one request. NetApp's Trident role grants nothing
/// under `/api/security`, so such an account proves its password by reading its SVM
/// (`/api/svm/svms`, which the role grants and Trident itself reads first), and the
/// administrator reads the account's record, unless it is `known`: a record the cluster's
/// inventory shows exactly as the caller wants it ([`super::account::settled_account`]).
pub(super) async fn login_check(
    client: &OntapClient,
    ontap_svm: &Svm,
    account: &str,
    password: &SecretString,
    role: AccountRole,
    known: Option<&Account>,
) -> Result<AccountCheck, OntapError> {
    if role == AccountRole::Vsadmin {
        return client
            .verify_account(&ontap_svm.uuid, account, password)
            .await;
    }
    match client
        .verify_credentials(account, password, &ontap_svm.name)
        .await?
    {
        CredentialCheck::Valid { svm_uuid } if svm_uuid.eq_ignore_ascii_case(&ontap_svm.uuid) => {
            if let Some(record) = known.filter(|k| k.name == account) {
                return Ok(AccountCheck::Valid(record.clone()));
            }
            match client.account(&ontap_svm.uuid, account).await? {
                Some(record) => Ok(AccountCheck::Valid(record)),
                None => Err(OntapError::Inconsistent(format!(
                    "{account} logged in to {}, but ONTAP lists no such account",
                    ontap_svm.name
                ))),
            }
        }
        CredentialCheck::Valid { svm_uuid } => Err(OntapError::Inconsistent(format!(
            "{account} logged in to the SVM {svm_uuid}, not to {} ({})",
            ontap_svm.name, ontap_svm.uuid
        ))),
        CredentialCheck::Rejected => Ok(AccountCheck::Rejected),
        CredentialCheck::NotAuthorized => Ok(AccountCheck::NotAuthorized),
    }
}

/// Before the Secret is written for a new account name it still holds the only record of the
/// old one: that account is deleted first (if this object created it), so the password
/// published for it stops working rather than lingering unrecorded.
async fn retire_renamed_account(
    client: &OntapClient,
    ontap_svm: &Svm,
    names: &Names,
    seed: &SeedSecretState,
) -> Result<(), StepError> {
    let SeedSecretState::Stale { username, .. } = seed else {
        return Ok(());
    };
    if *username == names.account {
        return Ok(());
    }
    let Some(old) = client
        .account(&ontap_svm.uuid, username)
        .await
        .map_err(|e| ontap_error(Failed::AccountLookup, e))?
    else {
        return Ok(());
    };
    if !marked_for(old.comment.as_deref(), &names.uid) {
        return Ok(());
    }
    client
        .delete_account(&ontap_svm.uuid, username)
        .await
        .map_err(|e| ontap_error(Failed::AccountDelete, e))?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::{Arc, Mutex};

    use http::{Request, Response};
    use kube::client::Body;
    use serde_json::json;

    use super::*;
    use crate::api::seed_secret::fixtures::{built, fields, svm};

    /// A pre-fill against an API server that answers every request with `code`, and the
    /// requests it received (method, path, body).
    async fn prefill_answered(
        svm: &StorageVirtualMachine,
        code: u16,
    ) -> (
        Result<Prefilled, PrefillError>,
        Vec<(String, String, Secret)>,
    ) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let recorded = seen.clone();
        let service = tower::service_fn(move |request: Request<Body>| {
            let recorded = recorded.clone();
            async move {
                let method = request.method().to_string();
                let path = request.uri().path().to_owned();
                let body = request.into_body().collect_bytes().await?;
                let secret: Secret = serde_json::from_slice(&body)?;
                recorded
                    .lock()
                    .unwrap()
                    .push((method, path, secret.clone()));
                let answer = if code == 201 {
                    serde_json::to_vec(&secret)?
                } else {
                    serde_json::to_vec(&json!({
                        "kind": "Status", "apiVersion": "v1", "status": "Failure",
                        "message": "refused", "reason": "Refused", "code": code,
                    }))?
                };
                Ok::<_, Box<dyn std::error::Error + Send + Sync>>(
                    Response::builder()
                        .status(code)
                        .header("content-type", "application/json")
                        .body(Body::from(answer))?,
                )
            }
        });
        let prefill = SeedSecretPrefill::new(Client::new(service, "default"));
        let result = prefill.prefill(svm, &fields()).await;
        let seen = seen.lock().unwrap().clone();
        (result, seen)
    }

    #[tokio::test]
    async fn creates_the_contracts_secret_in_the_objects_namespace() {
        let (result, seen) = prefill_answered(&svm(), 201).await;
        assert_eq!(result.unwrap(), Prefilled::Created);
        let [(method, path, secret)] = seen.as_slice() else {
            panic!("{seen:?}");
        };
        assert_eq!(method, "POST");
        assert_eq!(path, "/api/v1/namespaces/team-a/secrets");
        assert_eq!(
            serde_json::to_value(secret).unwrap(),
            serde_json::to_value(built()).unwrap()
        );
    }

    #[tokio::test]
    async fn an_existing_secret_is_left_alone() {
        let (result, seen) = prefill_answered(&svm(), 409).await;
        assert_eq!(result.unwrap(), Prefilled::Existed);
        assert_eq!(seen.len(), 1, "one create, nothing overwritten");
    }

    #[tokio::test]
    async fn a_refused_create_is_an_error() {
        let (result, _) = prefill_answered(&svm(), 403).await;
        match result {
            Err(PrefillError::Create(kube::Error::Api(status))) => assert_eq!(status.code, 403),
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn an_unstored_object_sends_nothing() {
        let mut svm = svm();
        svm.metadata.uid = None;
        let (result, seen) = prefill_answered(&svm, 201).await;
        assert!(matches!(
            result,
            Err(PrefillError::Build(SeedSecretError::MissingMetadata("uid")))
        ));
        assert!(seen.is_empty());
    }
}

//! The typed operations on SVM accounts, and the credential checks that prove a seed Secret.

use reqwest::Method;
use secrecy::SecretString;

use crate::answers::{AccountCheck, CredentialCheck, DeleteOutcome, deleted, unique_by_name};
use crate::client::{Body, OntapClient, Pages, Request, RetryMode};
use crate::config::Credentials;
use crate::endpoints;
use crate::error::{OntapError, Result};
use crate::model::{ACCOUNT_FIELDS, Account, AccountCreate, AccountPatch, Svm};
use crate::query::{filter_value, path_value};

impl OntapClient {
    // -----------------------------------------------------------------------------------------
    // Accounts

    /// The account `name` owned by the SVM `owner_uuid`, if ONTAP reports one.
    pub async fn account(&self, owner_uuid: &str, name: &str) -> Result<Option<Account>> {
        let owner_uuid = filter_value("owner uuid", owner_uuid)?;
        let name = filter_value("account name", name)?;
        let url = self.url(
            &["api", "security", "accounts"],
            &[
                ("owner.uuid", owner_uuid),
                ("name", name),
                ("fields", ACCOUNT_FIELDS),
            ],
        )?;
        let records = self.get_all(endpoints::ACCOUNTS, url, None).await?;
        unique_by_name(endpoints::ACCOUNTS, name, records, |a: &Account| &a.name)
    }

    /// Every account owned by the SVM `owner_uuid`, ONTAP's built-in ones included.
    pub async fn accounts(&self, owner_uuid: &str) -> Result<Vec<Account>> {
        let owner_uuid = filter_value("owner uuid", owner_uuid)?;
        let url = self.url(
            &["api", "security", "accounts"],
            &[("owner.uuid", owner_uuid), ("fields", ACCOUNT_FIELDS)],
        )?;
        self.get_all(endpoints::ACCOUNTS, url, None).await
    }

    /// Every account of the cluster that holds the role `role`, whatever its SVM, `max_records`
    /// per page, with the fields [`account`](Self::account) reads: the accounts of one role
    /// read in a few pages where looking each up would cost a request per account. ONTAP's
    /// built-in accounts (every SVM's `vsadmin`, the cluster's `admin`) hold other roles and
    /// are not read.
    pub fn account_pages(&self, max_records: u32, role: &str) -> Result<Pages<Account>> {
        let role = filter_value("role name", role)?;
        self.listing_where(
            endpoints::ACCOUNTS,
            &["api", "security", "accounts"],
            &[("role.name", role)],
            ACCOUNT_FIELDS,
            max_records,
        )
    }

    /// Creates an SVM account with password login over HTTP (synchronous in ONTAP).
    ///
    /// Not retried; after an ambiguous error look it up with [`account`](Self::account) and, as
    /// its password is then unknown, set it with
    /// [`set_account_password`](Self::set_account_password).
    pub async fn create_account(&self, account: &AccountCreate) -> Result<()> {
        filter_value("account name", &account.name)?;
        path_value("owner uuid", &account.owner_uuid)?;
        let req = Request {
            method: Method::POST,
            endpoint: endpoints::ACCOUNTS,
            url: self.url(&["api", "security", "accounts"], &[])?,
            body: Some(Body::json(&account.body())?.with_secret(&account.password)),
            auth: None,
            retry: RetryMode::Never,
        };
        self.mutate(&req).await
    }

    /// `PATCH /api/security/accounts/{owner.uuid}/{name}` with a new password.
    ///
    /// Retried only when the earlier attempt certainly was not applied: ONTAP rejects setting
    /// the same password twice (7077924/7077925). After an ambiguous error, check the new
    /// password with [`verify_credentials`](Self::verify_credentials).
    pub async fn set_account_password(
        &self,
        owner_uuid: &str,
        name: &str,
        password: &SecretString,
    ) -> Result<()> {
        let patch = AccountPatch {
            password: Some(password.clone()),
            ..Default::default()
        };
        self.patch_account(owner_uuid, name, &patch).await
    }

    /// Changes an account's password, lock state or comment. Retried like
    /// [`set_account_password`](Self::set_account_password) when it carries a password, like
    /// any idempotent request otherwise.
    pub async fn patch_account(
        &self,
        owner_uuid: &str,
        name: &str,
        patch: &AccountPatch,
    ) -> Result<()> {
        let owner_uuid = path_value("owner uuid", owner_uuid)?;
        let name = path_value("account name", name)?;
        let mut body = Body::json(&patch.body())?;
        let retry = match &patch.password {
            Some(password) => {
                body = body.with_secret(password);
                RetryMode::UnlessAmbiguous
            }
            None => RetryMode::Idempotent,
        };
        let req = Request {
            method: Method::PATCH,
            endpoint: endpoints::ACCOUNT,
            url: self.url(&["api", "security", "accounts", owner_uuid, name], &[])?,
            body: Some(body),
            auth: None,
            retry,
        };
        self.mutate(&req).await
    }

    pub async fn delete_account(&self, owner_uuid: &str, name: &str) -> Result<DeleteOutcome> {
        let owner_uuid = path_value("owner uuid", owner_uuid)?;
        let name = path_value("account name", name)?;
        let req = Request {
            method: Method::DELETE,
            endpoint: endpoints::ACCOUNT,
            url: self.url(&["api", "security", "accounts", owner_uuid, name], &[])?,
            body: None,
            auth: None,
            retry: RetryMode::Idempotent,
        };
        deleted(self.mutate(&req).await)
    }

    // -----------------------------------------------------------------------------------------
    // Credentials

    /// Authenticates *as* the SVM account `name` of the SVM `owner_uuid` and reads its own
    /// record: one request proves that the password works for that SVM and tells the account's
    /// role and lock state.
    ///
    /// [`AccountCheck::Rejected`] only on a definitive 401; anything ambiguous (no connection,
    /// timeout, 5xx after retries, a 404, a malformed answer) is an `Err`, so a transport failure
    /// is never taken for wrong credentials.
    pub async fn verify_account(
        &self,
        owner_uuid: &str,
        name: &str,
        password: &SecretString,
    ) -> Result<AccountCheck> {
        let owner_uuid = path_value("owner uuid", owner_uuid)?;
        let name = path_value("account name", name)?;
        let creds = Credentials {
            username: name.to_owned(),
            password: password.clone(),
        };
        let url = self.url(
            &["api", "security", "accounts", owner_uuid, name],
            &[("fields", ACCOUNT_FIELDS)],
        )?;
        let mut req = Request::get(endpoints::ACCOUNT, url);
        req.auth = Some(&creds);
        let check = self.verify_account_request(&req, owner_uuid, name).await;
        if let Some(metrics) = self.metrics() {
            metrics.observe_verification(match &check {
                Ok(AccountCheck::Valid(_)) => "valid",
                Ok(AccountCheck::Rejected) => "rejected",
                Ok(AccountCheck::NotAuthorized) => "not_authorized",
                Err(_) => "error",
            });
        }
        check
    }

    async fn verify_account_request(
        &self,
        req: &Request<'_>,
        owner_uuid: &str,
        name: &str,
    ) -> Result<AccountCheck> {
        match self.execute(req).await {
            Ok(resp) => {
                let account: Account = crate::model::decode(
                    &Method::GET,
                    endpoints::ACCOUNT,
                    resp.status,
                    &resp.body,
                )?;
                let same_owner = account
                    .owner
                    .as_ref()
                    .and_then(|o| o.uuid.as_deref())
                    .is_none_or(|uuid| uuid.eq_ignore_ascii_case(owner_uuid));
                if account.name != name || !same_owner {
                    return Err(OntapError::Inconsistent(format!(
                        "asked for the account {name} of SVM {owner_uuid}, got {} of {:?}",
                        account.name,
                        account.owner.as_ref().and_then(|o| o.uuid.as_deref())
                    )));
                }
                Ok(AccountCheck::Valid(account))
            }
            Err(OntapError::Api { status, .. }) if status == reqwest::StatusCode::UNAUTHORIZED => {
                Ok(AccountCheck::Rejected)
            }
            Err(OntapError::Api { status, .. }) if status == reqwest::StatusCode::FORBIDDEN => {
                Ok(AccountCheck::NotAuthorized)
            }
            Err(e) => Err(e),
        }
    }

    /// Authenticates *as* the given SVM account against this cluster's endpoint (same TLS
    /// settings, same concurrency limit) and asks for its SVM.
    ///
    /// [`CredentialCheck::Rejected`] only on a definitive 401. Anything ambiguous (no
    /// connection, timeout, 5xx after retries, a malformed answer) is an `Err`: a transport
    /// failure must never be taken for wrong credentials, or a working Secret would be
    /// replaced.
    pub async fn verify_credentials(
        &self,
        username: &str,
        password: &SecretString,
        svm_name: &str,
    ) -> Result<CredentialCheck> {
        let svm_name = filter_value("SVM name", svm_name)?;
        let creds = Credentials {
            username: username.to_owned(),
            password: password.clone(),
        };
        let url = self.url(
            &["api", "svm", "svms"],
            &[("name", svm_name), ("fields", "uuid,name")],
        )?;
        match self
            .get_all::<Svm>(endpoints::SVMS, url, Some(&creds))
            .await
        {
            Ok(records) => Ok(
                match unique_by_name(endpoints::SVMS, svm_name, records, |s: &Svm| &s.name)? {
                    Some(svm) => CredentialCheck::Valid { svm_uuid: svm.uuid },
                    None => CredentialCheck::NotAuthorized,
                },
            ),
            Err(OntapError::Api { status, .. }) if status == reqwest::StatusCode::UNAUTHORIZED => {
                Ok(CredentialCheck::Rejected)
            }
            Err(OntapError::Api { status, .. }) if status == reqwest::StatusCode::FORBIDDEN => {
                Ok(CredentialCheck::NotAuthorized)
            }
            Err(e) => Err(e),
        }
    }
}

//! SVM-scoped login accounts, keyed by (owner SVM uuid, user name), with ONTAP's default
//! password rules. Passwords never leave the model.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{Model, Principal, Row, svm_request::NameRef};
use crate::error::{ApiError, ApiResult, codes};
use crate::query::ListQuery;

const MIN_PASSWORD: usize = 8;
const MAX_PASSWORD: usize = 128;
const USERNAME_LENGTH: std::ops::RangeInclusive<usize> = 3..=64;
const APPLICATIONS: &[&str] = &["http", "ontapi", "ssh", "console", "service_processor"];

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Application {
    pub application: String,
    #[serde(default)]
    pub authentication_methods: Vec<String>,
    #[serde(default = "no_second_method")]
    pub second_authentication_method: String,
}

fn no_second_method() -> String {
    "none".into()
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct RoleRef {
    pub name: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct AccountCreate {
    pub name: Option<String>,
    pub owner: Option<NameRef>,
    pub role: Option<RoleRef>,
    pub applications: Option<Vec<Application>>,
    pub password: Option<String>,
    pub locked: Option<bool>,
    pub comment: Option<String>,
}

impl AccountCreate {
    pub const FIELDS: &'static [&'static str] = &[
        "name",
        "owner.uuid",
        "owner.name",
        "role.name",
        "applications.application",
        "applications.authentication_methods",
        "applications.second_authentication_method",
        "password",
        "locked",
        "comment",
    ];
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct AccountPatch {
    pub password: Option<String>,
    pub locked: Option<bool>,
    pub comment: Option<String>,
    pub role: Option<RoleRef>,
    pub applications: Option<Vec<Application>>,
}

impl AccountPatch {
    pub const FIELDS: &'static [&'static str] = &[
        "password",
        "locked",
        "comment",
        "role.name",
        "applications.application",
        "applications.authentication_methods",
        "applications.second_authentication_method",
    ];
}

#[derive(Debug, Clone)]
pub struct Account {
    pub owner_uuid: String,
    pub name: String,
    pub role: String,
    pub applications: Vec<Application>,
    pub password: Option<String>,
    /// Earlier passwords, newest last, for the reuse rule.
    pub history: Vec<String>,
    pub locked: bool,
    pub comment: String,
}

/// Accounts keyed by (owner uuid, name), with the owners of each user name indexed: Basic
/// auth and `name=` queries look a name up instead of scanning every account.
#[derive(Default)]
pub struct Accounts {
    by_key: BTreeMap<(String, String), Account>,
    owners_by_name: HashMap<String, BTreeSet<String>>,
}

impl Accounts {
    fn get(&self, owner: &str, name: &str) -> Option<&Account> {
        self.by_key.get(&(owner.to_owned(), name.to_owned()))
    }

    /// For changes to anything but the owner and name, which key the indexes.
    fn get_mut(&mut self, owner: &str, name: &str) -> Option<&mut Account> {
        self.by_key.get_mut(&(owner.to_owned(), name.to_owned()))
    }

    fn insert(&mut self, account: Account) {
        self.owners_by_name
            .entry(account.name.clone())
            .or_default()
            .insert(account.owner_uuid.clone());
        self.by_key
            .insert((account.owner_uuid.clone(), account.name.clone()), account);
    }

    fn remove(&mut self, owner: &str, name: &str) -> Option<Account> {
        let account = self.by_key.remove(&(owner.to_owned(), name.to_owned()))?;
        if let Some(owners) = self.owners_by_name.get_mut(name) {
            owners.remove(owner);
            if owners.is_empty() {
                self.owners_by_name.remove(name);
            }
        }
        Some(account)
    }

    /// The accounts of one SVM, in name order.
    fn of_owner<'a>(&'a self, owner: &str) -> impl Iterator<Item = &'a Account> {
        let owner = owner.to_owned();
        self.by_key
            .range((owner.clone(), String::new())..)
            .take_while(move |((o, _), _)| *o == owner)
            .map(|(_, a)| a)
    }

    pub fn remove_owner(&mut self, owner: &str) {
        let names: Vec<String> = self.of_owner(owner).map(|a| a.name.clone()).collect();
        for name in names {
            self.remove(owner, &name);
        }
    }

    /// Every account with this user name, in owner order.
    fn named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Account> {
        self.owners_by_name
            .get(name)
            .into_iter()
            .flatten()
            .filter_map(move |owner| self.get(owner, name))
    }
}

/// What an account shows (never its password), with its owner's current name.
pub struct AccountRow {
    owner_uuid: String,
    owner_name: String,
    name: String,
    role: String,
    applications: Vec<Application>,
    /// `None` for an account without a password: ONTAP does not report `locked` for it.
    locked: Option<bool>,
    comment: String,
}

impl Row for AccountRow {
    fn to_json(&self) -> Value {
        let mut account = json!({
            "owner": { "uuid": self.owner_uuid, "name": self.owner_name,
                "_links": { "self": { "href": format!("/api/svm/svms/{}", self.owner_uuid) } } },
            "name": self.name,
            "role": { "name": self.role },
            "applications": self.applications,
            "comment": self.comment,
            "scope": "svm",
            "_links": { "self": { "href": format!("/api/security/accounts/{}/{}", self.owner_uuid, self.name) } },
        });
        if let (Some(locked), Some(obj)) = (self.locked, account.as_object_mut()) {
            obj.insert("locked".into(), json!(locked));
        }
        account
    }
}

impl Account {
    fn accepts_http_password(&self, password: &str) -> bool {
        !self.locked
            && self.password.as_deref() == Some(password)
            && self.applications.iter().any(|a| {
                a.application == "http" && a.authentication_methods.iter().any(|m| m == "password")
            })
    }
}

impl Model {
    /// Finds the account a Basic-auth pair belongs to. User names are unique per SVM only, so
    /// the password decides between same-named accounts of different SVMs.
    pub fn authenticate(&self, user: &str, password: &str) -> Option<Principal> {
        self.accounts
            .named(user)
            .find(|a| a.accepts_http_password(password))
            .map(|a| Principal::Svm {
                user: a.name.clone(),
                svm_uuid: a.owner_uuid.clone(),
            })
    }

    /// The role of the account `name` of the SVM `owner`.
    pub(super) fn account_role(&self, owner: &str, name: &str) -> Option<&str> {
        self.accounts.get(owner, name).map(|a| a.role.as_str())
    }

    fn account_row(&self, account: &Account) -> AccountRow {
        AccountRow {
            owner_uuid: account.owner_uuid.clone(),
            owner_name: self
                .svm(&account.owner_uuid)
                .map(|s| s.name.clone())
                .unwrap_or_default(),
            name: account.name.clone(),
            role: account.role.clone(),
            applications: account.applications.clone(),
            locked: account.password.is_some().then_some(account.locked),
            comment: account.comment.clone(),
        }
    }

    /// The accounts the principal may see that can match the query, in (owner uuid, name)
    /// order: one look-up when owner and name are pinned, the owner's accounts or the name's
    /// accounts when one is, else everything from the paging cursor on.
    pub fn account_rows(&self, who: &Principal, q: &ListQuery) -> Vec<AccountRow> {
        let owner = who.svm_scope().or(q.exact("owner.uuid")).or_else(|| {
            q.exact("owner.name")
                .map(|n| self.svms.uuid_of(n).unwrap_or_default())
        });
        let name = q.exact("name");
        let candidates: Vec<&Account> = match (owner, name) {
            (Some(owner), Some(name)) => self.accounts.get(owner, name).into_iter().collect(),
            (Some(owner), None) => self.accounts.of_owner(owner).collect(),
            (None, Some(name)) => self.accounts.named(name).collect(),
            (None, None) => {
                let start = (
                    q.cursor("owner.uuid").unwrap_or_default().to_owned(),
                    q.cursor("name").unwrap_or_default().to_owned(),
                );
                self.accounts
                    .by_key
                    .range(start..)
                    .map(|(_, a)| a)
                    .collect()
            }
        };
        candidates
            .into_iter()
            .filter(|a| who.may_see(&a.owner_uuid))
            .map(|a| self.account_row(a))
            .collect()
    }

    pub fn account_json(&self, who: &Principal, owner: &str, name: &str) -> ApiResult<Value> {
        self.accounts
            .get(owner, name)
            .filter(|a| who.may_see(&a.owner_uuid))
            .map(|a| self.account_row(a).to_json())
            .ok_or_else(|| ApiError::not_found("name"))
    }

    pub fn create_account(
        &mut self,
        who: &Principal,
        req: AccountCreate,
    ) -> ApiResult<(String, String)> {
        let name = req
            .name
            .filter(|n| !n.is_empty())
            .ok_or_else(|| ApiError::missing_field("name"))?;
        validate_username(&name)?;
        let owner = req.owner.ok_or_else(|| ApiError::missing_field("owner"))?;
        let owner_uuid = self
            .usable_svm(owner.uuid.as_deref(), owner.name.as_deref())?
            .uuid
            .clone();
        if !who.may_see(&owner_uuid) {
            return Err(ApiError::forbidden());
        }
        let role = req
            .role
            .and_then(|r| r.name)
            .unwrap_or_else(|| "vsadmin".into());
        self.validate_role(&owner_uuid, &role)?;
        let applications = req.applications.unwrap_or_else(|| {
            vec![Application {
                application: "http".into(),
                authentication_methods: vec!["password".into()],
                second_authentication_method: no_second_method(),
            }]
        });
        validate_applications(&applications)?;
        let wants_password = applications
            .iter()
            .any(|a| a.authentication_methods.iter().any(|m| m == "password"));
        let password = match req.password {
            Some(p) => {
                validate_password(&name, &p, &[])?;
                Some(p)
            }
            None if wants_password => return Err(ApiError::missing_field("password")),
            None => None,
        };
        if self.accounts.get(&owner_uuid, &name).is_some() {
            return Err(ApiError::conflict(
                codes::DUPLICATE_ENTRY,
                format!("duplicate entry: account \"{name}\" already exists in this SVM"),
            ));
        }
        self.accounts.insert(Account {
            owner_uuid: owner_uuid.clone(),
            name: name.clone(),
            role,
            applications,
            password,
            history: Vec::new(),
            locked: req.locked.unwrap_or(false),
            comment: req.comment.unwrap_or_default(),
        });
        Ok((owner_uuid, name))
    }

    pub fn patch_account(
        &mut self,
        who: &Principal,
        owner: &str,
        name: &str,
        patch: AccountPatch,
    ) -> ApiResult<()> {
        let history_len = self.settings.password_history;
        let not_found = || {
            ApiError::new(
                axum::http::StatusCode::NOT_FOUND,
                codes::USER_NOT_FOUND_ON_MODIFY,
                format!("User \"{name}\" does not exist."),
            )
            .with_target("name")
        };
        if !self
            .accounts
            .get(owner, name)
            .is_some_and(|a| who.may_see(&a.owner_uuid))
        {
            return Err(not_found());
        }
        if let Some(role) = patch.role.as_ref().and_then(|r| r.name.as_ref()) {
            self.validate_role(owner, role)?;
        }
        let account = self
            .accounts
            .get_mut(owner, name)
            .filter(|a| who.may_see(&a.owner_uuid))
            .ok_or_else(not_found)?;
        if let Some(applications) = &patch.applications {
            validate_applications(applications)?;
        }
        if patch.locked.is_some() && account.password.is_none() {
            // Even with a password in the same PATCH: the password first, then the lock state.
            return Err(ApiError::bad_request(
                codes::INVALID_FIELD,
                format!(
                    "Cannot lock or unlock user \"{name}\": the account has no password. Set a password first."
                ),
            )
            .with_target("locked"));
        }
        if let Some(password) = &patch.password {
            if account.password.as_deref() == Some(password.as_str()) {
                return Err(ApiError::bad_request(
                    codes::PASSWORD_SAME_AS_CURRENT,
                    "The new password must be different from the current password.",
                )
                .with_target("password"));
            }
            let mut recent: Vec<&str> = account.history.iter().map(String::as_str).collect();
            recent.extend(account.password.as_deref());
            let skip = recent.len().saturating_sub(history_len);
            validate_password(name, password, &recent[skip..])?;
            if let Some(old) = account.password.replace(password.clone()) {
                account.history.push(old);
                let excess = account.history.len().saturating_sub(history_len);
                account.history.drain(..excess);
            }
        }
        if let Some(locked) = patch.locked {
            account.locked = locked;
        }
        if let Some(comment) = patch.comment {
            account.comment = comment;
        }
        if let Some(role) = patch.role.and_then(|r| r.name) {
            account.role = role;
        }
        if let Some(applications) = patch.applications {
            account.applications = applications;
        }
        Ok(())
    }

    pub fn delete_account(&mut self, who: &Principal, owner: &str, name: &str) -> ApiResult<()> {
        match self.accounts.get(owner, name) {
            Some(a) if who.may_see(&a.owner_uuid) => {
                self.accounts.remove(owner, name);
                Ok(())
            }
            _ => Err(ApiError::not_found("name")),
        }
    }

    /// ONTAP creates every SVM with a locked, password-less `vsadmin` account.
    pub(super) fn add_builtin_vsadmin(&mut self, svm_uuid: &str) {
        let app = |name: &str| Application {
            application: name.into(),
            authentication_methods: vec!["password".into()],
            second_authentication_method: no_second_method(),
        };
        self.accounts.insert(Account {
            owner_uuid: svm_uuid.to_owned(),
            name: "vsadmin".into(),
            role: "vsadmin".into(),
            applications: vec![app("http"), app("ontapi"), app("ssh")],
            password: None,
            history: Vec::new(),
            locked: true,
            comment: String::new(),
        });
    }
}

fn validate_username(name: &str) -> ApiResult<()> {
    if !USERNAME_LENGTH.contains(&name.chars().count()) {
        return Err(ApiError::bad_request(
            codes::USERNAME_LENGTH,
            format!(
                "The user name must be between {} and {} characters long.",
                USERNAME_LENGTH.start(),
                USERNAME_LENGTH.end()
            ),
        )
        .with_target("name"));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
    {
        return Err(ApiError::bad_request(
            codes::USERNAME_INVALID_CHARS,
            "The user name contains invalid characters. Valid characters are letters, digits, \"_\", \".\" and \"-\".",
        )
        .with_target("name"));
    }
    Ok(())
}

impl Model {
    /// An SVM account's role: a built-in `vsadmin*` role or a REST role of the same SVM.
    fn validate_role(&self, owner: &str, role: &str) -> ApiResult<()> {
        if self.role_exists(owner, role) {
            Ok(())
        } else {
            Err(ApiError::invalid_value(
                "role.name",
                format!("role \"{role}\" is not a role of this SVM"),
            ))
        }
    }
}

fn validate_applications(applications: &[Application]) -> ApiResult<()> {
    match applications
        .iter()
        .find(|a| !APPLICATIONS.contains(&a.application.as_str()))
    {
        Some(a) => Err(ApiError::invalid_value(
            "applications.application",
            &a.application,
        )),
        None => Ok(()),
    }
}

/// ONTAP's default rules for SVM accounts, checked in the order ONTAP reports them.
fn validate_password(user: &str, password: &str, recent: &[&str]) -> ApiResult<()> {
    let fail = |code: &str, message: &str| {
        Err(ApiError::bad_request(code, message).with_target("password"))
    };
    let length = password.chars().count();
    if length > MAX_PASSWORD {
        return fail(
            codes::PASSWORD_TOO_LONG,
            "The password cannot be longer than 128 characters.",
        );
    }
    if length < MIN_PASSWORD {
        return fail(
            codes::PASSWORD_TOO_SHORT,
            "Minimum length for new password does not meet the policy (8 characters).",
        );
    }
    if password.to_lowercase().contains(&user.to_lowercase()) {
        return fail(
            codes::PASSWORD_CONTAINS_USERNAME,
            "The password cannot contain the username.",
        );
    }
    let letters = password.chars().any(|c| c.is_alphabetic());
    let digits = password.chars().any(|c| c.is_ascii_digit());
    if !(letters && digits) {
        return fail(
            codes::PASSWORD_NEEDS_ALNUM,
            "The password must contain both letters and digits.",
        );
    }
    if recent.contains(&password) {
        return fail(
            codes::PASSWORD_REUSED,
            "The password was used recently; choose a different password.",
        );
    }
    Ok(())
}

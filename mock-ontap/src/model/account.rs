//! SVM-scoped login accounts, keyed by (owner SVM uuid, user name), with ONTAP's default
//! password rules. Passwords never leave the model.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{Model, Principal, svm::NameRef};
use crate::error::{ApiError, ApiResult, codes};

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

impl Account {
    pub fn to_json(&self, model: &Model) -> Value {
        let owner_name = model
            .svm(&self.owner_uuid)
            .map(|s| s.name.clone())
            .unwrap_or_default();
        json!({
            "owner": { "uuid": self.owner_uuid, "name": owner_name,
                "_links": { "self": { "href": format!("/api/svm/svms/{}", self.owner_uuid) } } },
            "name": self.name,
            "role": { "name": self.role },
            "applications": self.applications,
            "locked": self.locked,
            "comment": self.comment,
            "scope": "svm",
            "_links": { "self": { "href": format!("/api/security/accounts/{}/{}", self.owner_uuid, self.name) } },
        })
    }

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
            .values()
            .find(|a| a.name == user && a.accepts_http_password(password))
            .map(|a| Principal::Svm {
                user: a.name.clone(),
                svm_uuid: a.owner_uuid.clone(),
            })
    }

    pub fn accounts_json(&self, who: &Principal) -> Vec<Value> {
        self.accounts
            .values()
            .filter(|a| who.may_see(&a.owner_uuid))
            .map(|a| a.to_json(self))
            .collect()
    }

    pub fn account_json(&self, who: &Principal, owner: &str, name: &str) -> ApiResult<Value> {
        self.accounts
            .get(&(owner.to_owned(), name.to_owned()))
            .filter(|a| who.may_see(&a.owner_uuid))
            .map(|a| a.to_json(self))
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
        validate_role(&role)?;
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
        let key = (owner_uuid.clone(), name.clone());
        if self.accounts.contains_key(&key) {
            return Err(ApiError::conflict(
                codes::DUPLICATE_ENTRY,
                format!("duplicate entry: account \"{name}\" already exists in this SVM"),
            ));
        }
        self.accounts.insert(
            key,
            Account {
                owner_uuid: owner_uuid.clone(),
                name: name.clone(),
                role,
                applications,
                password,
                history: Vec::new(),
                locked: req.locked.unwrap_or(false),
                comment: req.comment.unwrap_or_default(),
            },
        );
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
        let account = self
            .accounts
            .get_mut(&(owner.to_owned(), name.to_owned()))
            .filter(|a| who.may_see(&a.owner_uuid))
            .ok_or_else(not_found)?;
        if let Some(role) = patch.role.as_ref().and_then(|r| r.name.as_ref()) {
            validate_role(role)?;
        }
        if let Some(applications) = &patch.applications {
            validate_applications(applications)?;
        }
        if let Some(password) = &patch.password {
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
        let key = (owner.to_owned(), name.to_owned());
        match self.accounts.get(&key) {
            Some(a) if who.may_see(&a.owner_uuid) => {
                self.accounts.remove(&key);
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
        self.accounts.insert(
            (svm_uuid.to_owned(), "vsadmin".into()),
            Account {
                owner_uuid: svm_uuid.to_owned(),
                name: "vsadmin".into(),
                role: "vsadmin".into(),
                applications: vec![app("http"), app("ontapi"), app("ssh")],
                password: None,
                history: Vec::new(),
                locked: true,
                comment: String::new(),
            },
        );
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

fn validate_role(role: &str) -> ApiResult<()> {
    if role.starts_with("vsadmin") {
        Ok(())
    } else {
        Err(ApiError::invalid_value(
            "role.name",
            format!("role \"{role}\" is not an SVM role"),
        ))
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

//! SVM-scoped REST roles (`/api/security/roles`) and their enforcement. A role is a list of
//! privileges `{path, access}`; a request of an account holding the role is allowed when the
//! privilege whose path is the longest prefix of the request's API path grants its method
//! (NetApp: "In cases where a role has tuples with multiple APIs having the same prefix, the
//! highest match wins out"). No matching privilege: denied. NetApp's privilege paths name APIs
//! without their keys (`/api/storage/volumes/snapshots` for
//! `/api/storage/volumes/{uuid}/snapshots`): a privilege covers a request path when its
//! segments appear in the request's in order, from the start, with at most [`MAX_KEYS`] key
//! segments between two of them.

use std::collections::BTreeMap;

use axum::http::Method;
use serde_json::{Value, json};

use super::{Model, Principal};
use crate::error::{ApiError, ApiResult, codes};

/// What a privilege lets an account do on its path (NetApp's access levels).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    None,
    Readonly,
    ReadCreate,
    ReadModify,
    ReadCreateModify,
    All,
}

impl Access {
    pub fn parse(text: &str) -> Option<Access> {
        Some(match text {
            "none" => Access::None,
            "readonly" => Access::Readonly,
            "read_create" => Access::ReadCreate,
            "read_modify" => Access::ReadModify,
            "read_create_modify" => Access::ReadCreateModify,
            "all" => Access::All,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Access::None => "none",
            Access::Readonly => "readonly",
            Access::ReadCreate => "read_create",
            Access::ReadModify => "read_modify",
            Access::ReadCreateModify => "read_create_modify",
            Access::All => "all",
        }
    }

    /// GET with any access but `none`; POST with a `create`, PATCH with a `modify`, DELETE
    /// only with `all`.
    pub fn allows(self, method: &Method) -> bool {
        use Access::*;
        match *method {
            Method::GET | Method::HEAD => self != None,
            Method::POST => matches!(self, ReadCreate | ReadCreateModify | All),
            Method::PATCH => matches!(self, ReadModify | ReadCreateModify | All),
            _ => self == All,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Privilege {
    pub path: String,
    pub access: Access,
}

#[derive(Debug, Clone)]
pub struct Role {
    pub owner: String,
    pub name: String,
    pub privileges: Vec<Privilege>,
}

/// Roles by (owner SVM uuid, name).
#[derive(Default)]
pub struct Roles {
    by_key: BTreeMap<(String, String), Role>,
}

impl Roles {
    pub fn get(&self, owner: &str, name: &str) -> Option<&Role> {
        self.by_key.get(&(owner.to_owned(), name.to_owned()))
    }

    pub fn remove_owner(&mut self, owner: &str) {
        self.by_key.retain(|(o, _), _| o != owner);
    }
}

/// The most key segments an API path has in a row (`/api/security/accounts/{owner}/{name}`).
const MAX_KEYS: usize = 2;

/// The literal segments of a privilege path (`*` and `{key}` segments stand for keys).
fn literal_segments(path: &str) -> Vec<&str> {
    path.split('/')
        .filter(|s| !s.is_empty() && *s != "*" && !s.starts_with('{'))
        .collect()
}

/// Whether the privilege segments name the request path or an API above it: `api` and the
/// next segment exactly, then each in order with at most [`MAX_KEYS`] segments skipped.
fn covers(privilege: &[&str], request: &[&str]) -> bool {
    let mut next = 0;
    for (i, segment) in privilege.iter().enumerate() {
        let skippable = if i < 2 { 0 } else { MAX_KEYS };
        let found = (next..=next + skippable)
            .take_while(|j| *j < request.len())
            .find(|j| request[*j] == *segment);
        match found {
            Some(j) => next = j + 1,
            None => return false,
        }
    }
    true
}

impl Role {
    /// The access of the privilege with the most segments among those covering `path`.
    pub fn access_to(&self, path: &str) -> Access {
        let request: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        self.privileges
            .iter()
            .map(|p| (literal_segments(&p.path), p.access))
            .filter(|(segments, _)| covers(segments, &request))
            .max_by_key(|(segments, _)| segments.len())
            .map_or(Access::None, |(_, access)| access)
    }

    fn to_json(&self, owner_name: &str) -> Value {
        let base = format!("/api/security/roles/{}/{}", self.owner, self.name);
        let privileges: Vec<Value> = self
            .privileges
            .iter()
            .map(|p| privilege_json(&base, p))
            .collect();
        json!({
            "owner": { "uuid": self.owner, "name": owner_name,
                "_links": { "self": { "href": format!("/api/svm/svms/{}", self.owner) } } },
            "name": self.name,
            "privileges": privileges,
            "builtin": false,
            "scope": "svm",
            "_links": { "self": { "href": base } },
        })
    }
}

fn privilege_json(base: &str, p: &Privilege) -> Value {
    json!({
        "path": p.path,
        "access": p.access.as_str(),
        "_links": { "self": { "href": format!("{base}/privileges/{}", encode_path(&p.path)) } },
    })
}

/// A privilege path as one URL segment (`/` → `%2F`), as NetApp's links carry it.
fn encode_path(path: &str) -> String {
    path.replace('%', "%25")
        .replace('/', "%2F")
        .replace(' ', "%20")
}

/// A privilege of a request body: a REST API path and a known access level.
fn privilege_of(body: &Value) -> ApiResult<Privilege> {
    let path = body
        .get("path")
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::missing_field("privileges.path"))?;
    if !path.starts_with("/api/") {
        // Command-directory (legacy) privileges are not modelled; see the README.
        return Err(ApiError::bad_request(
            codes::ROLE_URI_UNKNOWN,
            format!("URI \"{path}\" does not exist."),
        )
        .with_target("privileges.path"));
    }
    if !path
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '_' | '-' | '.' | '*' | '{' | '}'))
    {
        return Err(ApiError::bad_request(
            codes::ROLE_URI_INVALID_CHARACTER,
            format!("Invalid character in URI \"{path}\"."),
        )
        .with_target("privileges.path"));
    }
    let access = match body.get("access").and_then(Value::as_str) {
        // NetApp's CLI: "The default setting is all."
        None => Access::All,
        Some(text) => Access::parse(text).ok_or_else(|| {
            ApiError::bad_request(
                codes::ROLE_INVALID_ACCESS,
                format!("Invalid value \"{text}\" specified for access level."),
            )
            .with_target("privileges.access")
        })?,
    };
    Ok(Privilege {
        path: path.to_owned(),
        access,
    })
}

impl Model {
    /// Whether the principal's role denies `method` on the request path `path`: only accounts
    /// holding a REST role are checked; the built-in `vsadmin*` roles keep the mock's SVM
    /// scoping.
    pub fn role_denies(&self, who: &Principal, method: &Method, path: &str) -> bool {
        let Principal::Svm { user, svm_uuid } = who else {
            return false;
        };
        let Some(role) = self
            .account_role(svm_uuid, user)
            .and_then(|name| self.roles.get(svm_uuid, name))
        else {
            return false;
        };
        !role.access_to(path).allows(method)
    }

    /// Whether an account of `owner` may hold `role`: a built-in `vsadmin*` role or one of the
    /// SVM's own roles.
    pub(super) fn role_exists(&self, owner: &str, role: &str) -> bool {
        role.starts_with("vsadmin") || self.roles.get(owner, role).is_some()
    }

    fn visible_role(&self, who: &Principal, owner: &str, name: &str) -> ApiResult<&Role> {
        self.roles
            .get(owner, name)
            .filter(|r| who.may_see(&r.owner))
            .ok_or_else(|| ApiError::not_found("name"))
    }

    pub fn role_records(&self, who: &Principal) -> Vec<Value> {
        self.roles
            .by_key
            .values()
            .filter(|r| who.may_see(&r.owner))
            .map(|r| r.to_json(&self.svm_name_of(&r.owner)))
            .collect()
    }

    pub fn role_record(&self, who: &Principal, owner: &str, name: &str) -> ApiResult<Value> {
        self.visible_role(who, owner, name)
            .map(|r| r.to_json(&self.svm_name_of(&r.owner)))
    }

    pub fn privilege_records(
        &self,
        who: &Principal,
        owner: &str,
        name: &str,
    ) -> ApiResult<Vec<Value>> {
        let role = self.visible_role(who, owner, name)?;
        let base = format!("/api/security/roles/{owner}/{name}");
        Ok(role
            .privileges
            .iter()
            .map(|p| privilege_json(&base, p))
            .collect())
    }

    pub fn privilege_record(
        &self,
        who: &Principal,
        owner: &str,
        name: &str,
        path: &str,
    ) -> ApiResult<Value> {
        let role = self.visible_role(who, owner, name)?;
        role.privileges
            .iter()
            .find(|p| p.path == path)
            .map(|p| privilege_json(&format!("/api/security/roles/{owner}/{name}"), p))
            .ok_or_else(|| ApiError::not_found("path"))
    }

    fn svm_name_of(&self, uuid: &str) -> String {
        self.svm(uuid).map(|s| s.name.clone()).unwrap_or_default()
    }

    /// `POST /api/security/roles`: an SVM-scoped REST role (cluster-scoped roles are not
    /// modelled: `owner` is required).
    pub fn create_role(&mut self, body: &Value) -> ApiResult<(String, String)> {
        let name = body
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .ok_or_else(|| ApiError::missing_field("name"))?
            .to_owned();
        let owner = body
            .get("owner")
            .ok_or_else(|| ApiError::missing_field("owner"))?;
        let owner = self
            .usable_svm(
                owner.get("uuid").and_then(Value::as_str),
                owner.get("name").and_then(Value::as_str),
            )?
            .uuid
            .clone();
        let privileges = body
            .get("privileges")
            .and_then(Value::as_array)
            .filter(|p| !p.is_empty())
            .ok_or_else(|| {
                ApiError::bad_request(
                    codes::ROLE_PRIVILEGES_REQUIRED,
                    "Roles is a required field.",
                )
                .with_target("privileges")
            })?
            .iter()
            .map(privilege_of)
            .collect::<ApiResult<Vec<_>>>()?;
        if self.role_exists(&owner, &name) {
            return Err(ApiError::conflict(
                codes::DUPLICATE_ENTRY,
                format!("duplicate entry: role \"{name}\" already exists in this SVM"),
            )
            .with_target("name"));
        }
        self.roles.by_key.insert(
            (owner.clone(), name.clone()),
            Role {
                owner: owner.clone(),
                name: name.clone(),
                privileges,
            },
        );
        Ok((owner, name))
    }

    pub fn delete_role(&mut self, owner: &str, name: &str) -> ApiResult<()> {
        self.roles
            .by_key
            .remove(&(owner.to_owned(), name.to_owned()))
            .map(|_| ())
            .ok_or_else(|| ApiError::not_found("name"))
    }

    /// Adds a privilege, or replaces the one with the same path.
    pub fn add_privilege(&mut self, owner: &str, name: &str, body: &Value) -> ApiResult<String> {
        let privilege = privilege_of(body)?;
        let role = self
            .roles
            .by_key
            .get_mut(&(owner.to_owned(), name.to_owned()))
            .ok_or_else(|| ApiError::not_found("name"))?;
        if role.privileges.iter().any(|p| p.path == privilege.path) {
            return Err(ApiError::conflict(
                codes::DUPLICATE_ENTRY,
                format!(
                    "duplicate entry: the role already has \"{}\"",
                    privilege.path
                ),
            )
            .with_target("path"));
        }
        let path = privilege.path.clone();
        role.privileges.push(privilege);
        Ok(path)
    }

    pub fn patch_privilege(
        &mut self,
        owner: &str,
        name: &str,
        path: &str,
        body: &Value,
    ) -> ApiResult<()> {
        let access = privilege_of(&json!({ "path": path, "access": body.get("access") }))?.access;
        let role = self
            .roles
            .by_key
            .get_mut(&(owner.to_owned(), name.to_owned()))
            .ok_or_else(|| ApiError::not_found("name"))?;
        let privilege = role
            .privileges
            .iter_mut()
            .find(|p| p.path == path)
            .ok_or_else(|| ApiError::not_found("path"))?;
        privilege.access = access;
        Ok(())
    }

    pub fn delete_privilege(&mut self, owner: &str, name: &str, path: &str) -> ApiResult<()> {
        let role = self
            .roles
            .by_key
            .get_mut(&(owner.to_owned(), name.to_owned()))
            .ok_or_else(|| ApiError::not_found("name"))?;
        let before = role.privileges.len();
        role.privileges.retain(|p| p.path != path);
        if role.privileges.len() == before {
            return Err(ApiError::not_found("path"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role(privileges: &[(&str, Access)]) -> Role {
        Role {
            owner: "o".into(),
            name: "r".into(),
            privileges: privileges
                .iter()
                .map(|(path, access)| Privilege {
                    path: (*path).into(),
                    access: *access,
                })
                .collect(),
        }
    }

    #[test]
    fn the_longest_matching_path_decides() {
        // NetApp's example: readonly on /api/cluster, all on /api/cluster/schedules.
        let r = role(&[
            ("/api/cluster", Access::Readonly),
            ("/api/cluster/schedules", Access::All),
        ]);
        assert_eq!(r.access_to("/api/cluster"), Access::Readonly);
        assert_eq!(r.access_to("/api/cluster/jobs"), Access::Readonly);
        assert_eq!(r.access_to("/api/cluster/schedules"), Access::All);
        assert_eq!(
            r.access_to("/api/clusters"),
            Access::None,
            "segments, not characters"
        );
        assert_eq!(
            r.access_to("/api/svm/svms"),
            Access::None,
            "no privilege: denied"
        );
    }

    #[test]
    fn access_levels_grant_methods() {
        let grants = |a: Access| {
            [Method::GET, Method::POST, Method::PATCH, Method::DELETE].map(|m| a.allows(&m))
        };
        assert_eq!(grants(Access::None), [false, false, false, false]);
        assert_eq!(grants(Access::Readonly), [true, false, false, false]);
        assert_eq!(grants(Access::ReadCreate), [true, true, false, false]);
        assert_eq!(grants(Access::ReadModify), [true, false, true, false]);
        assert_eq!(grants(Access::ReadCreateModify), [true, true, true, false]);
        assert_eq!(grants(Access::All), [true, true, true, true]);
    }

    #[test]
    fn privileges_name_apis_without_their_keys() {
        let r = role(&[
            ("/api/storage/volumes", Access::All),
            ("/api/storage/volumes/snapshots", Access::Readonly),
            ("/api/security/accounts", Access::ReadModify),
            (
                "/api/protocols/san/lun-maps/reporting-nodes",
                Access::Readonly,
            ),
        ]);
        assert_eq!(r.access_to("/api/storage/volumes/u1"), Access::All);
        assert_eq!(
            r.access_to("/api/storage/volumes/u1/snapshots"),
            Access::Readonly
        );
        assert_eq!(
            r.access_to("/api/storage/volumes/u1/snapshots/s1"),
            Access::Readonly
        );
        assert_eq!(
            r.access_to("/api/security/accounts/o1/ops"),
            Access::ReadModify
        );
        assert_eq!(
            r.access_to("/api/protocols/san/lun-maps/l1/g1/reporting-nodes"),
            Access::Readonly
        );
        assert_eq!(
            r.access_to("/api/protocols/san/lun-maps/l1/g1"),
            Access::None
        );
        assert_eq!(r.access_to("/api/storage/luns"), Access::None);
        let wildcard = role(&[("/api/storage/volumes/*/snapshots", Access::All)]);
        assert_eq!(
            wildcard.access_to("/api/storage/volumes/u1/snapshots"),
            Access::All
        );
    }
}

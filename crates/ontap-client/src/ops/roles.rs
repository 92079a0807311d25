//! SVM-scoped REST roles: a least-privilege role for an SVM account (for example the
//! privileges NetApp lists for Trident), created once per SVM and kept in step.

use reqwest::Method;

use crate::answers::{DeleteOutcome, deleted, unique_by_name};
use crate::client::{Body, OntapClient, Pages, Request, RetryMode};
use crate::endpoints;
use crate::error::Result;
use crate::model::{ROLE_FIELDS, Role, RoleAccess, RoleCreate, RolePrivilege};
use crate::query::{filter_value, path_value};

impl OntapClient {
    /// The URL of one privilege of a role: the path is one segment, its `/` percent-encoded.
    fn privilege_url(&self, owner_uuid: &str, name: &str, path: &str) -> Result<reqwest::Url> {
        let owner_uuid = path_value("owner uuid", owner_uuid)?;
        let name = path_value("role name", name)?;
        let path = path_value("privilege path", path)?;
        self.url(
            &[
                "api",
                "security",
                "roles",
                owner_uuid,
                name,
                "privileges",
                path,
            ],
            &[],
        )
    }

    /// The role `name` of the SVM `owner_uuid`, if ONTAP reports one.
    pub async fn role(&self, owner_uuid: &str, name: &str) -> Result<Option<Role>> {
        let owner_uuid = filter_value("owner uuid", owner_uuid)?;
        let name = filter_value("role name", name)?;
        let url = self.url(
            &["api", "security", "roles"],
            &[
                ("owner.uuid", owner_uuid),
                ("name", name),
                ("fields", ROLE_FIELDS),
            ],
        )?;
        let records = self.get_all(endpoints::ROLES, url, None).await?;
        unique_by_name(endpoints::ROLES, name, records, |r: &Role| &r.name)
    }

    /// Every role named `name`, one per SVM that has one, `max_records` per page, with the
    /// fields [`role`](Self::role) reads. Only that name: ONTAP lists its built-in roles too
    /// (`vsadmin`, `vsadmin-volume`, … for every SVM), each with its privileges, which would
    /// make a cluster-wide read many times larger.
    pub fn role_pages(&self, max_records: u32, name: &str) -> Result<Pages<Role>> {
        let name = filter_value("role name", name)?;
        self.listing_where(
            endpoints::ROLES,
            &["api", "security", "roles"],
            &[("name", name)],
            ROLE_FIELDS,
            max_records,
        )
    }

    /// Creates a REST role (synchronous in ONTAP). Not retried; after an ambiguous error look
    /// it up with [`role`](Self::role). A name in use is a
    /// [`Conflict`](crate::ErrorClass::Conflict).
    pub async fn create_role(&self, role: &RoleCreate) -> Result<()> {
        filter_value("role name", &role.name)?;
        path_value("owner uuid", &role.owner_uuid)?;
        let req = Request {
            method: Method::POST,
            endpoint: endpoints::ROLES,
            url: self.url(&["api", "security", "roles"], &[])?,
            body: Some(Body::json(&role.body())?),
            auth: None,
            retry: RetryMode::Never,
        };
        self.mutate(&req).await
    }

    /// Adds a privilege to a role. Not retried: after an ambiguous error, read the role.
    pub async fn add_role_privilege(
        &self,
        owner_uuid: &str,
        name: &str,
        privilege: &RolePrivilege,
    ) -> Result<()> {
        let owner_uuid = path_value("owner uuid", owner_uuid)?;
        let name = path_value("role name", name)?;
        let req = Request {
            method: Method::POST,
            endpoint: endpoints::ROLE_PRIVILEGES,
            url: self.url(
                &["api", "security", "roles", owner_uuid, name, "privileges"],
                &[],
            )?,
            body: Some(Body::json(privilege)?),
            auth: None,
            retry: RetryMode::Never,
        };
        self.mutate(&req).await
    }

    /// Changes the access of one of a role's privileges.
    pub async fn set_role_privilege(
        &self,
        owner_uuid: &str,
        name: &str,
        path: &str,
        access: RoleAccess,
    ) -> Result<()> {
        let req = Request {
            method: Method::PATCH,
            endpoint: endpoints::ROLE_PRIVILEGE,
            url: self.privilege_url(owner_uuid, name, path)?,
            body: Some(Body::json(&serde_json::json!({ "access": access }))?),
            auth: None,
            retry: RetryMode::Idempotent,
        };
        self.mutate(&req).await
    }

    /// Removes one of a role's privileges.
    pub async fn delete_role_privilege(
        &self,
        owner_uuid: &str,
        name: &str,
        path: &str,
    ) -> Result<DeleteOutcome> {
        let req = Request {
            method: Method::DELETE,
            endpoint: endpoints::ROLE_PRIVILEGE,
            url: self.privilege_url(owner_uuid, name, path)?,
            body: None,
            auth: None,
            retry: RetryMode::Idempotent,
        };
        deleted(self.mutate(&req).await)
    }

    pub async fn delete_role(&self, owner_uuid: &str, name: &str) -> Result<DeleteOutcome> {
        let owner_uuid = path_value("owner uuid", owner_uuid)?;
        let name = path_value("role name", name)?;
        let req = Request {
            method: Method::DELETE,
            endpoint: endpoints::ROLE,
            url: self.url(&["api", "security", "roles", owner_uuid, name], &[])?,
            body: None,
            auth: None,
            retry: RetryMode::Idempotent,
        };
        deleted(self.mutate(&req).await)
    }
}

//! Least privilege: the role an account holds (`spec.account.role`, else its OntapCluster's
//! `defaults.accountRole`, else `Vsadmin`) and, for `Trident`, the SVM-scoped REST role the
//! operator creates on the SVM and keeps holding exactly NetApp's privileges for Trident
//! ([`TRIDENT_PRIVILEGES`]). The role is shared by every account of that role on the SVM and
//! goes with the SVM; an `AccountOnly` object's delete leaves it to the SVM's other accounts.

use std::sync::LazyLock;

use kube::runtime::reflector::ObjectRef;

use super::SvmReconciler;
use super::errors::{Failed, ontap_error};
use crate::api::{
    AccountRole, ClusterAllowances, ClusterDefaults, StorageVirtualMachine,
    StorageVirtualMachineSpec,
};
use crate::ontap::inventory::Snapshot;
use crate::ontap::trident_api::TRIDENT_PRIVILEGES;
use ontap_client::{ErrorClass, OntapClient, RoleCreate, RolePrivilege};
use reconcile_engine::StepError;

/// ONTAP's built-in SVM administrator role.
pub const VSADMIN_ROLE: &str = "vsadmin";
/// The name of the REST role the operator keeps on an SVM for accounts of role `Trident`:
/// prefixed, so that a `trident` role an administrator made by NetApp's script is not taken.
pub const TRIDENT_ROLE: &str = "ontap-operator-trident";

/// The role `spec` asks for, the cluster's default where it names none.
pub fn effective_role(
    spec: &StorageVirtualMachineSpec,
    defaults: Option<&ClusterDefaults>,
) -> AccountRole {
    spec.account
        .as_ref()
        .and_then(|a| a.role)
        .or_else(|| defaults.and_then(|d| d.account_role))
        .unwrap_or_default()
}

/// Why `role` is refused by the administrator's `allowed` of the cluster `cluster`, if it is.
pub fn role_not_allowed(
    role: AccountRole,
    allowed: &ClusterAllowances,
    cluster: &str,
) -> Option<String> {
    if allowed.account_roles.is_empty() || allowed.account_roles.contains(&role) {
        return None;
    }
    let names: Vec<String> = allowed
        .account_roles
        .iter()
        .map(|r| format!("{r:?}"))
        .collect();
    Some(format!(
        "spec.account.role: the OntapCluster {cluster} does not allow the account role {role:?} (allowed: {})",
        names.join(", ")
    ))
}

/// The ONTAP role name an account of `role` holds.
pub fn role_name(role: AccountRole) -> &'static str {
    match role {
        AccountRole::Vsadmin => VSADMIN_ROLE,
        AccountRole::Trident => TRIDENT_ROLE,
    }
}

/// Whether an account holding the ONTAP role `name` holds one the operator gives, and so may
/// be switched to another: any other role was given by someone else and is left alone.
pub(super) fn gives(name: &str) -> bool {
    name == VSADMIN_ROLE || name == TRIDENT_ROLE
}

/// The privileges of the Trident role, as ONTAP takes them.
pub fn trident_privileges() -> Vec<RolePrivilege> {
    TRIDENT_PRIVILEGES
        .iter()
        .map(|(path, access)| RolePrivilege {
            path: (*path).to_owned(),
            access: *access,
        })
        .collect()
}

/// [`trident_privileges`], made once: every steady object's confirmation compares with them.
static TRIDENT_ROLE_PRIVILEGES: LazyLock<Vec<RolePrivilege>> = LazyLock::new(trident_privileges);

/// Whether `snapshot` shows the Trident role on the SVM `svm_uuid` with exactly
/// [`TRIDENT_PRIVILEGES`]: what [`ensure_trident_role`] would then read and leave as it is.
pub fn trident_role_confirmed(svm_uuid: &str, snapshot: &Snapshot) -> bool {
    snapshot
        .role_privileges(svm_uuid, TRIDENT_ROLE)
        .is_some_and(|held| PrivilegeChanges::between(held, &TRIDENT_ROLE_PRIVILEGES).is_empty())
}

/// What turns a role's `current` privileges into exactly `wanted`.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct PrivilegeChanges {
    pub(super) add: Vec<RolePrivilege>,
    pub(super) change: Vec<RolePrivilege>,
    pub(super) remove: Vec<String>,
}

impl PrivilegeChanges {
    pub(super) fn between(current: &[RolePrivilege], wanted: &[RolePrivilege]) -> Self {
        let mut changes = Self::default();
        for privilege in wanted {
            match current.iter().find(|c| c.path == privilege.path) {
                None => changes.add.push(privilege.clone()),
                Some(c) if c.access != privilege.access => changes.change.push(privilege.clone()),
                Some(_) => {}
            }
        }
        changes.remove = current
            .iter()
            .filter(|c| !wanted.iter().any(|w| w.path == c.path))
            .map(|c| c.path.clone())
            .collect();
        changes
    }

    fn is_empty(&self) -> bool {
        self.add.is_empty() && self.change.is_empty() && self.remove.is_empty()
    }
}

impl SvmReconciler {
    /// The role `svm`'s account is to hold, with its cluster's default.
    pub(super) fn account_role(&self, svm: &StorageVirtualMachine) -> AccountRole {
        let cluster = self
            .clusters
            .get(&ObjectRef::new(&svm.spec.cluster_ref.name));
        effective_role(
            &svm.spec,
            cluster.as_ref().and_then(|c| c.spec.defaults.as_ref()),
        )
    }
}

/// The Trident role exists on the SVM `owner_uuid` with exactly [`TRIDENT_PRIVILEGES`]: created,
/// or a privilege someone removed, changed or added in ONTAP put back as NetApp lists it.
/// Whether it changed anything. One read on a pass that finds it as it should be.
pub(super) async fn ensure_trident_role(
    client: &OntapClient,
    owner_uuid: &str,
) -> Result<bool, StepError> {
    let wanted = trident_privileges();
    let role = client
        .role(owner_uuid, TRIDENT_ROLE)
        .await
        .map_err(|e| ontap_error(Failed::RoleLookup, e))?;
    let Some(role) = role else {
        let create = RoleCreate {
            name: TRIDENT_ROLE.to_owned(),
            owner_uuid: owner_uuid.to_owned(),
            privileges: wanted,
        };
        return match client.create_role(&create).await {
            Ok(()) => Ok(true),
            // Applied by an earlier attempt or made meanwhile: the next pass compares it.
            Err(e) if e.class() == ErrorClass::Conflict => Ok(true),
            Err(e) => Err(ontap_error(Failed::RoleCreate, e)),
        };
    };
    let changes = PrivilegeChanges::between(&role.privileges, &wanted);
    if changes.is_empty() {
        return Ok(false);
    }
    let failed = |e| ontap_error(Failed::RolePrivileges, e);
    for privilege in &changes.add {
        match client
            .add_role_privilege(owner_uuid, TRIDENT_ROLE, privilege)
            .await
        {
            Ok(()) => {}
            // Added by an earlier attempt whose answer was lost: the next pass compares it.
            Err(e) if e.class() == ErrorClass::Conflict => {}
            Err(e) => return Err(failed(e)),
        }
    }
    for privilege in &changes.change {
        client
            .set_role_privilege(owner_uuid, TRIDENT_ROLE, &privilege.path, privilege.access)
            .await
            .map_err(failed)?;
    }
    for path in &changes.remove {
        client
            .delete_role_privilege(owner_uuid, TRIDENT_ROLE, path)
            .await
            .map_err(failed)?;
    }
    tracing::info!(
        role = TRIDENT_ROLE,
        svm = owner_uuid,
        added = changes.add.len(),
        changed = changes.change.len(),
        removed = changes.remove.len(),
        "the Trident role's privileges were put back as NetApp lists them"
    );
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::SvmAccountSpec;
    use ontap_client::RoleAccess;

    fn privilege(path: &str, access: RoleAccess) -> RolePrivilege {
        RolePrivilege {
            path: path.into(),
            access,
        }
    }

    #[test]
    fn the_object_decides_then_the_cluster_then_vsadmin() {
        let spec_with = |role: Option<AccountRole>| {
            let mut spec: StorageVirtualMachineSpec = serde_json::from_value(serde_json::json!({
                "clusterRef": {"name": "lab"},
                "managementLif": {"ip": "192.0.2.10", "prefixLength": 24},
                "dataLifs": [{"ip": "192.0.2.11", "prefixLength": 24}],
            }))
            .unwrap_or_else(|e| panic!("{e}"));
            spec.account = Some(SvmAccountSpec {
                role,
                ..Default::default()
            });
            spec
        };
        let trident = ClusterDefaults {
            account_role: Some(AccountRole::Trident),
            ..Default::default()
        };
        assert_eq!(effective_role(&spec_with(None), None), AccountRole::Vsadmin);
        assert_eq!(
            effective_role(&spec_with(None), Some(&trident)),
            AccountRole::Trident
        );
        assert_eq!(
            effective_role(&spec_with(Some(AccountRole::Vsadmin)), Some(&trident)),
            AccountRole::Vsadmin
        );
    }

    #[test]
    fn an_administrator_may_force_least_privilege() {
        let forced = ClusterAllowances {
            account_roles: vec![AccountRole::Trident],
            ..ClusterAllowances::default()
        };
        assert_eq!(role_not_allowed(AccountRole::Trident, &forced, "lab"), None);
        let refusal = role_not_allowed(AccountRole::Vsadmin, &forced, "lab");
        assert_eq!(
            refusal.as_deref(),
            Some(
                "spec.account.role: the OntapCluster lab does not allow the account role Vsadmin (allowed: Trident)"
            )
        );
        assert_eq!(
            role_not_allowed(AccountRole::Vsadmin, &ClusterAllowances::default(), "lab"),
            None
        );
    }

    #[test]
    fn changes_restore_exactly_the_wanted_privileges() {
        let wanted = vec![
            privilege("/api/storage/volumes", RoleAccess::All),
            privilege("/api/svm/svms", RoleAccess::Readonly),
        ];
        let current = vec![
            privilege("/api/storage/volumes", RoleAccess::Readonly),
            privilege("/api/security/accounts", RoleAccess::All),
        ];
        assert_eq!(
            PrivilegeChanges::between(&current, &wanted),
            PrivilegeChanges {
                add: vec![privilege("/api/svm/svms", RoleAccess::Readonly)],
                change: vec![privilege("/api/storage/volumes", RoleAccess::All)],
                remove: vec!["/api/security/accounts".into()],
            }
        );
        assert!(PrivilegeChanges::between(&wanted, &wanted).is_empty());
    }

    #[test]
    fn the_trident_role_is_netapps_list() {
        let privileges = trident_privileges();
        assert_eq!(privileges.len(), 42);
        assert!(
            privileges
                .iter()
                .any(|p| p.path == "/api/svm/svms" && p.access == RoleAccess::Readonly),
            "the account's password is proven through /api/svm/svms"
        );
        assert!(
            !privileges
                .iter()
                .any(|p| p.path.starts_with("/api/security")),
            "nothing of the account's own security"
        );
    }
}

//! The cleanup: the SVM, its LIFs, its account and the seed Secret deleted (or, for an
//! `AccountOnly` object, only its account), unless `deletionPolicy: Retain` leaves ONTAP alone.

use k8s_openapi::api::core::v1::Secret;
use kube::api::{DeleteParams, Preconditions};
use kube::{Api, ResourceExt};

use super::authority::{Standing, marked_for};
use super::errors::{Failed, Invalid, Waiting, is_entry_not_found, job, kube_error, ontap_error};
use super::limits::ceiling_in;
use super::naming::{Names, names_of};
use super::qos::delete_ceiling;
use super::reconcile::SvmStep;
use super::svm::lookup_svm;
use super::tenancy;
use super::{EXISTING_SVM_RECHECK, ONTAP_SETTLING, SvmReconciler};
use crate::api::rules::RESERVED_ACCOUNTS;
use crate::api::{DeletionPolicy, StorageVirtualMachine, StorageVirtualMachineStatus, SvmMode};
use kube::runtime::reflector::ObjectRef;
use ontap_client::{OntapClient, Svm, SvmState};
use reconcile_engine::{Halt, Outcome, StepError, StepFlow, StepRunner};

impl SvmReconciler {
    /// The live `AccountOnly` objects with accounts on the SVM `svm` provisions: those naming it
    /// as their provider that it shares with and that were let on (a refused or never admitted
    /// object holds nothing, and must not keep the owner's delete waiting). The ones of its
    /// namespace by name, the others only counted (a tenant learns that its SVM is shared, not
    /// with whom).
    fn account_only_users(&self, svm: &StorageVirtualMachine) -> Vec<String> {
        let all = self.svms.store().state();
        let users: Vec<_> = all
            .iter()
            .filter(|other| {
                other.spec.mode == SvmMode::AccountOnly
                    && other.metadata.deletion_timestamp.is_none()
                    && other.spec.provider.as_ref().is_some_and(|p| {
                        p.name == svm.name_any()
                            && p.namespace.as_ref().or(other.metadata.namespace.as_ref())
                                == svm.metadata.namespace.as_ref()
                    })
                    // Let on at least once: one still waiting holds nothing on the SVM (and
                    // may be waiting for this very object to go, to be provisioned anew).
                    && other.status.as_ref().is_some_and(|s| s.uuid.is_some())
                    && self.admitted(other)
                    && tenancy::shares_with(
                        svm,
                        &other.namespace().unwrap_or_default(),
                        &self.standings.namespace_labels(&other.namespace().unwrap_or_default()),
                    )
                    .unwrap_or(false)
            })
            .collect();
        let mut named: Vec<String> = users
            .iter()
            .filter(|u| u.namespace() == svm.namespace())
            .map(|u| format!("the StorageVirtualMachine {}", u.name_any()))
            .collect();
        let elsewhere = users.len() - named.len();
        if elsewhere > 0 {
            named.push(format!("{elsewhere} of other namespaces"));
        }
        named
    }

    /// Deletion by policy and mode: `Retain` leaves ONTAP alone; `Delete` removes an
    /// `AccountOnly` object's account, or an `Owned` object's SVM with its LIFs and account. The
    /// seed Secret goes in every case.
    pub(super) async fn delete(
        &self,
        svm: &StorageVirtualMachine,
        status: &mut StorageVirtualMachineStatus,
        steps: &mut StepRunner<SvmStep>,
    ) -> Result<(), Halt> {
        let mut names = names_of(svm, status);
        // The name it was provisioned under, not one set in the spec afterwards.
        if let Some(provisioned) = &status.svm_name {
            names.svm = provisioned.clone();
        }
        if svm.spec.mode == SvmMode::AccountOnly {
            self.consumers.record(&ObjectRef::from_obj(svm), None);
        }
        match (svm.spec.deletion_policy, svm.spec.mode) {
            // A tenant's retained SVM stays with its data, but nothing accounts for a login
            // left working on it: its account is locked. Gardener's objects retain for a
            // migration, where the shoot keeps using the account until the restore.
            (DeletionPolicy::Retain, _) if self.standings.of(svm) == Standing::Tenant => {
                self.lock_retained(svm, status, &names, steps).await?
            }
            (DeletionPolicy::Retain, _) => {}
            (DeletionPolicy::Delete, SvmMode::AccountOnly) => {
                self.delete_account_only(svm, status, &names, steps).await?
            }
            (DeletionPolicy::Delete, SvmMode::Owned) => {
                self.delete_owned(svm, status, &names, steps).await?
            }
        }
        self.delete_seed_secret(&names, steps).await
    }

    /// A tenant's `Retain` delete: the account it made on the SVM it used is locked, the rest
    /// left as it is. Without the OntapCluster nothing can be reached, and nothing is waited for.
    async fn lock_retained(
        &self,
        svm: &StorageVirtualMachine,
        status: &StorageVirtualMachineStatus,
        names: &Names,
        steps: &mut StepRunner<SvmStep>,
    ) -> Result<(), Halt> {
        let provisioned = status.uuid.is_some();
        let cluster_exists = self
            .clusters
            .get(&ObjectRef::new(&svm.spec.cluster_ref.name))
            .is_some();
        if !provisioned || !cluster_exists {
            return Ok(());
        }
        let (client, found) = self.svm_used(svm, status, names, steps).await?;
        if let Some(found) = found {
            steps
                .step(SvmStep::AccountLocked, || async {
                    self.revoke_account(names, &found, &client).await?;
                    Ok(Outcome::unchanged())
                })
                .await?;
        }
        Ok(())
    }

    /// Step `SVMFound` of a cleanup that touches only the object's account: the client, and
    /// the SVM the object used, the recorded one else the one of its name (`None`: gone, and
    /// the account with it).
    async fn svm_used(
        &self,
        svm: &StorageVirtualMachine,
        status: &StorageVirtualMachineStatus,
        names: &Names,
        steps: &mut StepRunner<SvmStep>,
    ) -> Result<(OntapClient, Option<Svm>), Halt> {
        let client = self.cluster(svm, names, steps).await?;
        let found = steps
            .step(SvmStep::SVMFound, || async {
                Ok(Outcome::Unchanged(
                    lookup_shared_svm(&client, names, status.uuid.as_deref()).await?,
                ))
            })
            .await?;
        Ok((client, found))
    }

    /// An `AccountOnly` object's account on the shared SVM, never the SVM or its LIFs.
    async fn delete_account_only(
        &self,
        svm: &StorageVirtualMachine,
        status: &StorageVirtualMachineStatus,
        names: &Names,
        steps: &mut StepRunner<SvmStep>,
    ) -> Result<(), Halt> {
        let (client, found) = self.svm_used(svm, status, names, steps).await?;
        if let Some(found) = found {
            steps
                .step(SvmStep::AccountDeleted, || {
                    delete_account(&client, &found, names)
                })
                .await?;
        }
        Ok(())
    }

    /// An `Owned` object's SVM, once no `AccountOnly` object holds an account on it: its LIFs,
    /// its account, then the SVM itself in a job slot.
    async fn delete_owned(
        &self,
        svm: &StorageVirtualMachine,
        status: &StorageVirtualMachineStatus,
        names: &Names,
        steps: &mut StepRunner<SvmStep>,
    ) -> Result<(), Halt> {
        let users = self.account_only_users(svm);
        if !users.is_empty() {
            return steps
                .step(SvmStep::SVMDeleted, || async {
                    Err::<Outcome, _>(Waiting::SvmShared.wait(
                        format!(
                            "the SVM {} still holds the accounts of {}; it is deleted once they are gone (or set deletionPolicy: Retain to leave it)",
                            names.svm,
                            users.join(", ")
                        ),
                        EXISTING_SVM_RECHECK,
                    ).into())
                })
                .await;
        }
        let client = self.cluster(svm, names, steps).await?;
        let shared = svm.spec.share_with.is_some();
        let found = steps
            .step(SvmStep::SVMFound, || async {
                let found = find_for_deletion(&client, names, status.uuid.as_deref()).await?;
                match found {
                    Outcome::Unchanged(Some(found)) if shared => {
                        unused(&client, found, &names.account).await
                    }
                    other => Ok(other),
                }
            })
            .await?;
        let Some(found) = found else {
            return self.release_tenant_network(svm, &client, steps).await;
        };
        if found.state == Some(SvmState::Deleting) {
            return steps
                .step(SvmStep::SVMDeleted, || async {
                    Err::<Outcome, _>(
                        Waiting::SvmDeleting
                            .wait(
                                format!(
                                    "ONTAP is deleting the SVM {} ({})",
                                    found.name, found.uuid
                                ),
                                ONTAP_SETTLING,
                            )
                            .into(),
                    )
                })
                .await;
        }
        steps
            .step(SvmStep::LIFsDeleted, || delete_interfaces(&client, &found))
            .await?;
        steps
            .step(SvmStep::AccountDeleted, || {
                delete_account(&client, &found, names)
            })
            .await?;
        let jobs = steps.jobs();
        steps
            .step(SvmStep::SVMDeleted, || async {
                if ceiling_in(status.usage.as_ref()).is_some() {
                    delete_ceiling(&client, &jobs, &found.uuid).await?;
                }
                job(
                    jobs.run(client.delete_svm(&found.uuid)).await?,
                    Failed::SvmDelete,
                )?;
                Ok(Outcome::changed())
            })
            .await?;
        self.release_tenant_network(svm, &client, steps).await
    }

    /// The seed Secret, only the one read as this object's: not one recreated under the name
    /// since.
    async fn delete_seed_secret(
        &self,
        names: &Names,
        steps: &mut StepRunner<SvmStep>,
    ) -> Result<(), Halt> {
        steps
            .step(SvmStep::SecretDeleted, || async {
                let api: Api<Secret> = Api::namespaced(self.kube.clone(), &names.namespace);
                let Some(secret) = api
                    .get_opt(&names.secret)
                    .await
                    .map_err(kube_error(Failed::SecretRead))?
                else {
                    return Ok(Outcome::unchanged());
                };
                let ours = secret
                    .owner_references()
                    .iter()
                    .any(|o| o.controller == Some(true) && o.uid == names.uid);
                if ours {
                    let params = DeleteParams {
                        preconditions: Some(Preconditions {
                            uid: secret.uid(),
                            resource_version: secret.resource_version(),
                        }),
                        ..DeleteParams::default()
                    };
                    match api.delete(&names.secret, &params).await {
                        Err(e) if !is_not_found(&e) => {
                            return Err(
                                StepError::from_kube(Failed::SecretDelete.as_str(), e).into()
                            );
                        }
                        _ => {}
                    }
                }
                Ok(Outcome::changed())
            })
            .await
    }
}

/// Every LIF of `found`.
async fn delete_interfaces(client: &OntapClient, found: &Svm) -> StepFlow<Outcome> {
    let interfaces = client
        .interfaces(&found.uuid)
        .await
        .map_err(|e| ontap_error(Failed::LifLookup, e))?;
    for interface in &interfaces {
        client
            .delete_interface(&interface.uuid)
            .await
            .map_err(|e| ontap_error(Failed::LifDelete, e))?;
    }
    Ok(if interfaces.is_empty() {
        Outcome::unchanged()
    } else {
        Outcome::changed()
    })
}

fn is_not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(status) if status.code == 404)
}

/// The SVM the cleanup deletes: the one recorded in `status.uuid` (whatever it is called in
/// ONTAP now), else the one of our name; only ever one that carries our ownership marker.
/// Only ONTAP's own "entry not found" counts as gone: a proxy's 404 page is an error.
async fn find_for_deletion(
    client: &OntapClient,
    names: &Names,
    recorded: Option<&str>,
) -> StepFlow<Outcome<Option<Svm>>> {
    let ours = |svm: &Svm| marked_for(svm.comment.as_deref(), &names.uid);
    if let Some(uuid) = recorded {
        match client.svm(uuid).await {
            Ok(found) if ours(&found) => return Ok(Outcome::Unchanged(Some(found))),
            Ok(found) => {
                return Err(Invalid::SvmOwnershipChanged
                    .error(format!(
                        "the SVM {uuid} recorded in status.uuid (now named {}) no longer carries this object's ownership marker; it is not deleted. Delete it in ONTAP, or set deletionPolicy: Retain to let the object go",
                        found.name
                    ))
                    .into());
            }
            Err(e) if is_entry_not_found(&e) => {}
            Err(e) => return Err(ontap_error(Failed::SvmLookup, e).into()),
        }
    }
    // No uuid recorded (a crash before the status write), or the recorded SVM is gone: an SVM of
    // ours under the provisioned name is still ours to delete.
    Ok(Outcome::Unchanged(
        lookup_svm(client, &names.svm).await?.filter(ours),
    ))
}

/// A shared SVM about to be deleted, unless ONTAP holds working accounts on it besides `own` and
/// ONTAP's built-in ones: accounts of `AccountOnly` objects this operator cannot see — shoots of a
/// project served by another seed's extension — whose Trident still uses them. Then it waits,
/// saying so, with its finalizer in place; `deletionPolicy: Retain` lets the object go and
/// leaves the SVM to them.
async fn unused(client: &OntapClient, found: Svm, own: &str) -> StepFlow<Outcome<Option<Svm>>> {
    let accounts = client
        .accounts(&found.uuid)
        .await
        .map_err(|e| ontap_error(Failed::AccountLookup, e))?;
    // A locked account is one whose access was revoked (its consumer no longer shared, or
    // retained by a tenant): it holds the SVM for no one.
    let others = foreign_accounts(
        accounts
            .iter()
            .filter(|a| a.locked != Some(true))
            .map(|a| a.name.as_str()),
        own,
    );
    if others.is_empty() {
        return Ok(Outcome::Unchanged(Some(found)));
    }
    Err(Waiting::SvmShared
        .wait(
            format!(
                "the SVM {} still holds the accounts {} that no StorageVirtualMachine here holds (shoots served by another operator installation); it is deleted once they are gone (or set deletionPolicy: Retain to leave it to them)",
                found.name,
                others.join(", ")
            ),
            EXISTING_SVM_RECHECK,
        )
        .into())
}

/// The accounts among `names` other than `own` and ONTAP's built-in ones, sorted.
pub fn foreign_accounts<'a>(names: impl IntoIterator<Item = &'a str>, own: &str) -> Vec<String> {
    let mut others: Vec<String> = names
        .into_iter()
        .filter(|name| {
            *name != own && !RESERVED_ACCOUNTS.contains(&name.to_ascii_lowercase().as_str())
        })
        .map(str::to_owned)
        .collect();
    others.sort();
    others.dedup();
    others
}

/// Step `AccountDeleted`: this object's account is gone from `svm` (already gone counts). Only
/// an account marked with the object's uid is deleted: one it did not create (a name it was
/// refused, or never admitted for) belongs to someone else, whatever the object names.
async fn delete_account(client: &OntapClient, svm: &Svm, names: &Names) -> StepFlow<Outcome> {
    let Some(account) = client
        .account(&svm.uuid, &names.account)
        .await
        .map_err(|e| ontap_error(Failed::AccountLookup, e))?
    else {
        return Ok(Outcome::unchanged());
    };
    if !marked_for(account.comment.as_deref(), &names.uid) {
        tracing::info!(
            account = %names.account,
            svm = %svm.name,
            "the account was not created for this object; cleanup leaves it alone"
        );
        return Ok(Outcome::unchanged());
    }
    client
        .delete_account(&svm.uuid, &names.account)
        .await
        .map_err(|e| ontap_error(Failed::AccountDelete, e))?;
    Ok(Outcome::changed())
}

/// The SVM an `AccountOnly` object made its account on: the recorded one, else the one of its
/// name; `None` when neither exists any more (the account went with the SVM).
async fn lookup_shared_svm(
    client: &OntapClient,
    names: &Names,
    recorded: Option<&str>,
) -> Result<Option<Svm>, StepError> {
    if let Some(uuid) = recorded {
        match client.svm(uuid).await {
            Ok(found) => return Ok(Some(found)),
            Err(e) if is_entry_not_found(&e) => {}
            Err(e) => return Err(ontap_error(Failed::SvmLookup, e)),
        }
    }
    lookup_svm(client, &names.svm).await
}

#[cfg(test)]
mod tests {
    use super::foreign_accounts;

    #[test]
    fn only_accounts_of_others_keep_a_shared_svm() {
        assert!(foreign_accounts(["vsadmin", "project-admin"], "project-admin").is_empty());
        assert_eq!(
            foreign_accounts(
                ["VSADMIN", "web-b", "project-admin", "db-a"],
                "project-admin"
            ),
            vec!["db-a".to_owned(), "web-b".to_owned()]
        );
    }
}

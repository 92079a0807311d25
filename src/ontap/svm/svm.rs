//! Step `SVMReady`: the SVM of an `Owned` object created, marked, running and with the spec's
//! protocols; the SVM an `AccountOnly` object names looked at, never changed.

use std::sync::Arc;

use kube::ResourceExt;
use kube::runtime::reflector::ObjectRef;

use super::errors::{Failed, Invalid, Waiting, is_entry_not_found, job, ontap_busy, ontap_error};
use super::reconcile::{
    EXISTING_SVM_RECHECK, Names, ONTAP_SETTLING, SERVED_ELSEWHERE_RECHECK, SvmReconciler, names_of,
};
use super::steady::confirmed_svm;
use super::takeover::{Takeover, asks_to_adopt, takeover_marked, takeover_unmarked};
use super::tenancy;
use super::{DesiredError, Ownership, marked_namespace, owned_by, ownership_comment};
use crate::api::{ADOPT_SVM_UUID_ANNOTATION, StorageVirtualMachine, SvmMode, SvmProtocols};
use crate::ontap::connections::ClusterConnections;
use crate::ontap::inventory::Snapshot;
use ontap_client::{
    ErrorClass, ObjectRef as OntapRef, OntapClient, OntapError, Protocol, ProtocolState, Svm,
    SvmCreate, SvmPatch, SvmState, SvmTargetState,
};
use reconcile_engine::flow::settle;
use reconcile_engine::{Outcome, StepError, StepFlow, Worker};
use tokio::sync::OwnedSemaphorePermit;

impl SvmReconciler {
    /// Step `SVMReady` of an `AccountOnly` object: the SVM it names exists, runs, and the object
    /// that provisions it shares it with the object's namespace. An account is vsadmin access, so
    /// one tenant must not give itself an account on another's SVM by naming it — nor by
    /// declaring an `Owned` object of that name in its own namespace: the provider that decides
    /// is the one ONTAP's ownership mark names. An SVM marked for an object this operator cannot
    /// see (the project SVM of shoots served by another seed's extension) is shared only by a
    /// provider in the extension's project namespace, where tenants cannot write. A wait while no
    /// object provisions it (the extension declares both at once) or the SVM is not marked yet
    /// (its provider is about to adopt it).
    pub(super) async fn shared_svm(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        client: &OntapClient,
    ) -> Result<Outcome<Svm>, StepError> {
        let providers = self.providers(svm, names);
        let awaited = |why: String| Ok(Waiting::SvmAwaited.outcome(why, EXISTING_SVM_RECHECK));
        if providers.is_empty() {
            return awaited(format!(
                "no StorageVirtualMachine provisions the SVM {} on cluster {}; an AccountOnly object makes its account only on an SVM an Owned object shares with its namespace (spec.shareWith)",
                names.svm, svm.spec.cluster_ref.name
            ));
        }
        let found = match existing_svm(client, names).await? {
            Outcome::Unchanged(found) | Outcome::Changed(found) => found,
            Outcome::Waiting(wait) => return Ok(Outcome::Waiting(wait)),
        };
        let provider = match owned_by(found.comment.as_deref(), "") {
            Ownership::Foreign(creator) if self.alive(&creator) => {
                match providers
                    .iter()
                    .find(|p| p.uid().as_deref() == Some(creator.as_str()))
                {
                    Some(provider) => provider,
                    // Being handed over, or its provider is being deleted.
                    None => {
                        return awaited(format!(
                            "the SVM {} is changing hands between StorageVirtualMachines; the account is made once one provisions it",
                            names.svm
                        ));
                    }
                }
            }
            Ownership::Foreign(_) => {
                let stand_in = providers
                    .iter()
                    .find(|p| self.is_project_namespace(&p.namespace().unwrap_or_default()));
                match stand_in {
                    Some(provider) => provider,
                    None => {
                        return Err(Invalid::SvmNotShared.error(format!(
                            "the SVM {} belongs to a StorageVirtualMachine this operator does not see; only the extension's project namespace may share such an SVM",
                            names.svm
                        )));
                    }
                }
            }
            Ownership::Unmarked | Ownership::Ours => {
                return awaited(format!(
                    "the SVM {} is not marked as provisioned by a StorageVirtualMachine yet; the account is made once its provider has taken it over",
                    names.svm
                ));
            }
        };
        let labels = self
            .namespaces
            .get(&ObjectRef::new(&names.namespace))
            .map(|ns| ns.labels().clone())
            .unwrap_or_default();
        let shared = tenancy::shares_with(provider, &names.namespace, &labels)
            .map_err(|e| Invalid::ShareWith.error(e))?;
        if shared {
            return Ok(Outcome::Unchanged(found));
        }
        Err(Invalid::SvmNotShared.error(format!(
            "the SVM {} is not shared with the namespace {} (the shareWith of the StorageVirtualMachine that provisions it does not admit it)",
            names.svm, names.namespace
        )))
    }

    /// The `Owned` objects that provision the SVM `svm` names on its cluster: live ones, and a
    /// project object while it is being deleted (it keeps the SVM for other seeds' shoots).
    fn providers(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
    ) -> Vec<Arc<StorageVirtualMachine>> {
        self.svms
            .store()
            .state()
            .into_iter()
            .filter(|other| {
                other.spec.mode == SvmMode::Owned
                    && other.spec.cluster_ref == svm.spec.cluster_ref
                    && (other.metadata.deletion_timestamp.is_none()
                        || self.is_project_namespace(&other.namespace().unwrap_or_default()))
                    && {
                        let status = other.status.clone().unwrap_or_default();
                        names_of(other, &status).svm == names.svm
                    }
            })
            .collect()
    }

    /// Whether the object with uid `creator`, which marked the SVM `svm` asks for, has handed
    /// it over: it is now an `AccountOnly` object on that SVM, on the same cluster.
    fn handed_over(&self, svm: &StorageVirtualMachine, creator: &str, names: &Names) -> bool {
        self.svms.store().state().iter().any(|other| {
            other.uid().as_deref() == Some(creator)
                && other.spec.mode == SvmMode::AccountOnly
                && other.spec.cluster_ref == svm.spec.cluster_ref
                && other.spec.svm_name.as_deref() == Some(names.svm.as_str())
        })
    }

    /// The namespace of the object `found` is marked for: the live object's, else the one its
    /// mark records (a `Retain` delete left it).
    fn previous_owner_namespace(&self, creator: &str, found: &Svm) -> Option<String> {
        self.svms
            .store()
            .state()
            .iter()
            .find(|other| other.uid().as_deref() == Some(creator))
            .and_then(|other| other.namespace())
            .or_else(|| marked_namespace(found.comment.as_deref()).map(str::to_owned))
    }

    /// Whether a StorageVirtualMachine with uid `uid` exists (also while it is being deleted).
    fn alive(&self, uid: &str) -> bool {
        self.svms
            .store()
            .state()
            .iter()
            .any(|other| other.uid().as_deref() == Some(uid))
    }

    /// Whether `namespace` is the one where the Extension controller keeps the per-project SVM
    /// objects (`--extension-project-namespace`, the operator's own by default). Tenants cannot
    /// write StorageVirtualMachines there, so only its objects may take decisions an account —
    /// vsadmin access — would otherwise let a tenant take:
    /// - adopt an SVM the operator did not create (no `shareWith` protects what is nobody's
    ///   object in Kubernetes);
    /// - stand in for an SVM marked for an object this operator cannot see (another seed's
    ///   project object): share it with their shoots and leave it alone (no mark, LIFs or
    ///   account);
    /// - while being deleted, still admit accounts on their SVM: a project object keeps the SVM
    ///   while other seeds' shoots hold accounts on it, maybe for good, and a shoot arriving
    ///   meanwhile must not wait for that. Elsewhere a deleting object takes no new users, or its
    ///   deletion could be held up for ever.
    fn is_project_namespace(&self, namespace: &str) -> bool {
        self.adoption.namespace() == Some(namespace)
    }

    /// Step `SVMReady`: exactly one SVM of our name exists, created by us, running, with the
    /// protocols of the spec. A steady object's `snapshot` may confirm all that without a
    /// lookup; whatever it does not confirm is looked up.
    pub(super) async fn ensure_svm(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        recorded: Option<&str>,
        snapshot: Option<&Snapshot>,
        client: &OntapClient,
        worker: &Worker,
    ) -> Result<Outcome<Svm>, StepError> {
        if let Some(found) = snapshot.and_then(|s| confirmed_svm(svm, s)) {
            return Ok(Outcome::Unchanged(found));
        }
        settle(self.svm_flow(svm, names, recorded, client, worker).await)
    }

    async fn svm_flow(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        recorded: Option<&str>,
        client: &OntapClient,
        worker: &Worker,
    ) -> StepFlow<Outcome<Svm>> {
        // The engine added the finalizer before this pass, so deleting the object always cleans
        // up what this step creates.
        let mut slot = JobSlot {
            connections: &self.connections,
            cluster: &svm.spec.cluster_ref.name,
            worker,
            held: None,
        };
        // Never provisioned: the pass is about to start a job. Its slot is taken before the
        // lookup, so that the lookup is fresh however long the wait, and a pass that waits
        // costs ONTAP nothing.
        if recorded.is_none() {
            slot.take().await?;
        }
        let (found, created) = match lookup_svm(client, &names.svm).await? {
            Some(found) => (found, false),
            None => (
                self.create_svm(svm, names, recorded, client, &mut slot)
                    .await?,
                true,
            ),
        };
        let adopted = self
            .take_over(svm, names, recorded, client, &found, &mut slot)
            .await?;
        start_if_stopped(client, &found, &mut slot).await?;
        // A protocol is switched on its service, which is no job: no job slot is needed.
        let changes = protocol_changes(&svm.spec.protocols, &found);
        for (protocol, enabled) in &changes {
            client
                .set_protocol(&found.uuid, *protocol, *enabled)
                .await
                .map_err(|e| ontap_error(Failed::SvmProtocols, e))?;
        }
        Ok(if created || adopted || !changes.is_empty() {
            Outcome::Changed(found)
        } else {
            Outcome::Unchanged(found)
        })
    }

    /// Creates the SVM of `names`, once: after an ambiguous failure it looks again by name
    /// instead of posting again. An SVM recorded in the status that ONTAP now names otherwise
    /// is not created anew: the second one would only fight it for the LIF addresses.
    async fn create_svm(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        recorded: Option<&str>,
        client: &OntapClient,
        slot: &mut JobSlot<'_>,
    ) -> StepFlow<Svm> {
        if let Some(uuid) = recorded {
            match client.svm(uuid).await {
                Ok(renamed) => {
                    return Err(Invalid::SvmRenamedInOntap
                        .error(format!(
                            "the SVM {uuid} provisioned as {} is now named {} in ONTAP; rename it back in ONTAP (SVMs are not renamed by the operator)",
                            names.svm, renamed.name
                        ))
                        .into());
                }
                Err(e) if is_entry_not_found(&e) => {}
                Err(e) => return Err(ontap_error(Failed::SvmLookup, e).into()),
            }
        }
        let mut body =
            svm_create(svm, &names.svm).map_err(|e| Invalid::Spec.error(e.to_string()))?;
        slot.take().await?;
        body.aggregates = self.create_aggregates(svm, client, body.aggregates).await?;
        let cluster = &svm.spec.cluster_ref.name;
        match slot.released_while(client.create_svm(&body)).await {
            Ok(created) => Ok(created),
            Err(e) => {
                if let Some(wait) = ontap_busy(&e) {
                    return Err(wait.into());
                }
                // The POST may have been applied, or a previous attempt's job may be running:
                // never create twice, look again by name.
                if !(e.is_ambiguous() || e.class() == ErrorClass::Conflict) {
                    // An aggregate named in the body may be gone: list them afresh.
                    self.connections.forget_aggregates(cluster);
                    return Err(ontap_error(Failed::SvmCreate, e).into());
                }
                match lookup_svm(client, &names.svm).await? {
                    Some(found) => Ok(found),
                    None => Err(ontap_error(Failed::SvmCreate, e).into()),
                }
            }
        }
    }

    /// The aggregates of a create body: all the cluster's where the spec names none, else the
    /// spec's once each exists. Listed only where there is something to create: the steady
    /// state does not pay for it.
    async fn create_aggregates(
        &self,
        svm: &StorageVirtualMachine,
        client: &OntapClient,
        named: Vec<OntapRef>,
    ) -> StepFlow<Vec<OntapRef>> {
        let aggregates = self
            .connections
            .aggregates(&svm.spec.cluster_ref.name, client)
            .await
            .map_err(|e| ontap_error(Failed::AggregateLookup, e))?;
        if named.is_empty() {
            return Ok(aggregates
                .iter()
                .map(|a| OntapRef::by_name(&a.name))
                .collect());
        }
        if let Some(absent) = svm
            .spec
            .aggregates
            .iter()
            .find(|wanted| !aggregates.iter().any(|a| &a.name == *wanted))
        {
            return Err(Waiting::AggregateNotFound
                .missing(format!(
                    "the aggregate {absent} named in spec.aggregates does not exist in ONTAP"
                ))
                .into());
        }
        Ok(named)
    }

    /// Decides whether `found` is this object's to keep, adopt or leave, and marks an adopted
    /// one; `true` when it marked it.
    async fn take_over(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        recorded: Option<&str>,
        client: &OntapClient,
        found: &Svm,
        slot: &mut JobSlot<'_>,
    ) -> StepFlow<bool> {
        let asks = asks_to_adopt(
            svm.annotations()
                .get(ADOPT_SVM_UUID_ANNOTATION)
                .map(String::as_str),
            &found.uuid,
            recorded,
        );
        let decision = match owned_by(found.comment.as_deref(), &names.uid) {
            Ownership::Ours => Takeover::Keep,
            Ownership::Foreign(creator) => takeover_marked(
                asks,
                self.handed_over(svm, &creator, names),
                self.alive(&creator),
                self.is_project_namespace(&names.namespace),
                self.is_project_namespace(&names.namespace)
                    || self.previous_owner_namespace(&creator, found).as_deref()
                        == Some(names.namespace.as_str()),
            ),
            Ownership::Unmarked => {
                takeover_unmarked(asks, self.is_project_namespace(&names.namespace))
            }
        };
        match decision {
            Takeover::Keep => Ok(false),
            Takeover::Adopt => {
                // An existing account's password is kept, not rotated: `AccountReady` waits
                // for the seed Secret that carries it (see `ensure_account`).
                slot.take().await?;
                let mark = SvmPatch {
                    comment: Some(super::ownership_comment(
                        &names.uid,
                        &names.namespace,
                        &svm.name_any(),
                    )),
                    ..SvmPatch::default()
                };
                slot.released_while(client.patch_svm(&found.uuid, &mark))
                    .await
                    .map_err(|e| ontap_error(Failed::SvmAdopt, e))?;
                Ok(true)
            }
            Takeover::ServeElsewhere => Err(Waiting::SvmServedElsewhere
                .wait(
                    format!(
                        "the SVM {} is provisioned by a StorageVirtualMachine this operator does not see (another seed's, for shoots there); this object shares it with its namespaces and leaves it alone. It takes the SVM over only when asked to by uuid ({ADOPT_SVM_UUID_ANNOTATION}), once that object is gone",
                        names.svm
                    ),
                    SERVED_ELSEWHERE_RECHECK,
                )
                .into()),
            Takeover::Refuse(refusal) => {
                Err(refusal.error(&names.svm, &names.namespace).into())
            }
        }
    }
}

/// A cluster's job slot for one step: taken at the step's first job, held until it returns.
struct JobSlot<'a> {
    connections: &'a ClusterConnections,
    cluster: &'a str,
    worker: &'a Worker,
    held: Option<OwnedSemaphorePermit>,
}

impl JobSlot<'_> {
    /// Takes the slot unless held already; waits (as the step's outcome) while none is free.
    async fn take(&mut self) -> StepFlow<()> {
        if self.held.is_none() {
            self.held = Some(self.connections.job_slot(self.cluster, self.worker).await?);
        }
        Ok(())
    }

    /// Awaits `request`, which runs a job, with the worker handed back until the job is done:
    /// the job slot, taken first, bounds how many passes wait that way.
    async fn released_while<T>(&self, request: impl Future<Output = T>) -> T {
        debug_assert!(self.held.is_some(), "a job is only started under its slot");
        self.worker.released_while(request).await
    }
}

/// Waits while ONTAP settles the SVM's state, and starts a stopped one.
async fn start_if_stopped(
    client: &OntapClient,
    found: &Svm,
    slot: &mut JobSlot<'_>,
) -> StepFlow<()> {
    match found.state {
        Some(SvmState::Initializing | SvmState::Starting | SvmState::Stopping) => {
            Err(Waiting::SvmSettling
                .wait(
                    format!("ONTAP reports the SVM as {:?}", found.state),
                    ONTAP_SETTLING,
                )
                .into())
        }
        Some(SvmState::Deleting) => Err(Waiting::SvmDeleting
            .wait("ONTAP is deleting the SVM", ONTAP_SETTLING)
            .into()),
        Some(SvmState::Stopped) => {
            slot.take().await?;
            let start = SvmPatch {
                state: Some(SvmTargetState::Running),
                ..SvmPatch::default()
            };
            if let Some(wait) = job(
                slot.released_while(client.patch_svm(&found.uuid, &start))
                    .await,
                Failed::SvmStart,
            )? {
                return Err(wait.into());
            }
            Err(Waiting::SvmStarting
                .wait("the SVM was stopped; it is being started", ONTAP_SETTLING)
                .into())
        }
        _ => Ok(()),
    }
}

/// Step `SVMReady` of an `AccountOnly` object: the SVM it names exists and runs. It is only
/// looked at — whoever provisioned it owns it.
pub(super) async fn existing_svm(
    client: &OntapClient,
    names: &Names,
) -> Result<Outcome<Svm>, StepError> {
    let Some(found) = lookup_svm(client, &names.svm).await? else {
        return Ok(Waiting::SvmAwaited.outcome(
            format!(
                "the SVM {} does not exist in ONTAP (yet); this AccountOnly object makes its account once it is provisioned",
                names.svm
            ),
            EXISTING_SVM_RECHECK,
        ));
    };
    match found.state {
        Some(SvmState::Running) => Ok(Outcome::Unchanged(found)),
        state => Ok(Waiting::SvmNotRunning.outcome(
            format!(
                "ONTAP reports the SVM {} as {state:?}; the account is made once it runs",
                names.svm
            ),
            EXISTING_SVM_RECHECK,
        )),
    }
}

/// The SVM of that name; a failed lookup is an error, never "absent".
pub(super) async fn lookup_svm(client: &OntapClient, name: &str) -> Result<Option<Svm>, StepError> {
    client
        .svm_by_name(name)
        .await
        .map_err(|e: OntapError| ontap_error(Failed::SvmLookup, e))
}

// ---------------------------------------------------------------------------------------------
// The create body and the protocol patch

/// The body of `POST /api/svm/svms` for `svm` under the ONTAP name `svm_name`. The comment
/// carries the ownership marker; every protocol is sent explicitly, enabled or not.
pub fn svm_create(svm: &StorageVirtualMachine, svm_name: &str) -> Result<SvmCreate, DesiredError> {
    let uid = svm.uid().ok_or(DesiredError::MissingUid)?;
    let spec = &svm.spec;
    Ok(SvmCreate {
        name: svm_name.to_string(),
        ipspace: spec.ipspace.as_deref().map(OntapRef::by_name),
        aggregates: spec.aggregates.iter().map(OntapRef::by_name).collect(),
        nfs: Some(ProtocolState {
            enabled: spec.protocols.nfs,
        }),
        iscsi: Some(ProtocolState {
            enabled: spec.protocols.iscsi,
        }),
        nvme: Some(ProtocolState {
            enabled: spec.protocols.nvme,
        }),
        comment: Some(ownership_comment(
            &uid,
            &svm.namespace().unwrap_or_default(),
            &svm.name_any(),
        )),
        language: None,
    })
}

/// The protocols to switch on (`true`) or off so that `actual`'s match `desired`, in a stable
/// order. A protocol ONTAP does not report counts as off.
pub fn protocol_changes(desired: &SvmProtocols, actual: &Svm) -> Vec<(Protocol, bool)> {
    [
        (Protocol::Nfs, desired.nfs, actual.nfs),
        (Protocol::Iscsi, desired.iscsi, actual.iscsi),
        (Protocol::Nvme, desired.nvme, actual.nvme),
    ]
    .into_iter()
    .filter(|(_, want, have)| *want != have.is_some_and(|p| p.enabled))
    .map(|(protocol, want, _)| (protocol, want))
    .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::ontap::svm::desired::tests::{UID, base};
    use crate::ontap::svm::takeover::Refusal;

    #[test]
    fn svm_create_body() {
        let body = svm_create(&base(), "k8s_team-a_db").unwrap();
        assert_eq!(
            serde_json::to_value(&body).unwrap(),
            serde_json::json!({
                "name": "k8s_team-a_db",
                "ipspace": { "name": "Default" },
                "aggregates": [ { "name": "aggr1" }, { "name": "aggr2" } ],
                "nfs": { "enabled": true },
                "iscsi": { "enabled": false },
                "nvme": { "enabled": false },
                "comment": format!("ontap-operator:uid={UID} StorageVirtualMachine team-a/db"),
            })
        );
        let mut unstored = base();
        unstored.metadata.uid = None;
        assert_eq!(
            svm_create(&unstored, "x").unwrap_err(),
            DesiredError::MissingUid
        );
    }

    #[test]
    fn unmarked_svms_are_adopted_only_on_request_from_the_admin_namespace() {
        assert_eq!(takeover_unmarked(true, true), Takeover::Adopt);
        assert_eq!(
            takeover_unmarked(true, false),
            Takeover::Refuse(Refusal::AdoptionNotAllowed)
        );
        assert_eq!(
            takeover_unmarked(false, true),
            Takeover::Refuse(Refusal::Unmarked)
        );
        assert_eq!(
            takeover_unmarked(false, false),
            Takeover::Refuse(Refusal::Unmarked)
        );
        let refused = Refusal::AdoptionNotAllowed.error("p1", "team-a");
        assert_eq!(refused.reason(), "AdoptionNotAllowed");
        assert_eq!(refused.category(), reconcile_engine::ErrorCategory::Invalid);
    }

    #[test]
    fn an_adoption_is_asked_for_once() {
        assert!(
            asks_to_adopt(Some("u1"), "u1", None),
            "a restore or a switch"
        );
        assert!(
            !asks_to_adopt(Some("u1"), "u2", None),
            "another SVM created under the name later"
        );
        assert!(
            !asks_to_adopt(Some("u1"), "u1", Some("u1")),
            "held, then lost to a later adoption: not taken back"
        );
        assert!(!asks_to_adopt(None, "u1", None));
    }

    #[test]
    fn marked_svms_change_hands_only_when_their_creator_lets_go() {
        // (asks by uuid, handed over, creator alive, may stand in, from the owner's namespace)
        for stand_in in [false, true] {
            assert_eq!(
                takeover_marked(true, false, false, stand_in, true),
                Takeover::Adopt,
                "a restore: the creator is gone"
            );
            assert_eq!(
                takeover_marked(false, true, true, stand_in, true),
                Takeover::Adopt,
                "a hand-over: the creator became an AccountOnly user"
            );
            assert_eq!(
                takeover_marked(true, false, true, stand_in, true),
                Takeover::Refuse(Refusal::CreatorStillExists),
                "an annotation does not take an SVM from a live object"
            );
            assert_eq!(
                takeover_marked(false, false, true, stand_in, true),
                Takeover::Refuse(Refusal::MarkedForAnother),
                "a live object of this seed keeps its SVM"
            );
        }
        assert_eq!(
            takeover_marked(false, false, false, false, false),
            Takeover::Refuse(Refusal::MarkedForAnother),
            "a tenant's object never serves an SVM it cannot see the provider of"
        );
        assert_eq!(
            takeover_marked(false, false, false, true, true),
            Takeover::ServeElsewhere,
            "the project namespace serves another seed's project SVM as it is: no mark moves"
        );
        assert_eq!(
            takeover_marked(true, false, false, false, false),
            Takeover::Refuse(Refusal::ReleasedElsewhere),
            "a released SVM is not taken from another namespace by naming its uuid"
        );
        assert_eq!(
            takeover_marked(false, true, true, false, false),
            Takeover::Refuse(Refusal::ReleasedElsewhere),
            "nor by naming an SVM another namespace handed over"
        );
        assert_eq!(
            Refusal::CreatorStillExists.error("p1", "ns").category(),
            reconcile_engine::ErrorCategory::Conflict
        );
    }

    #[test]
    fn protocol_changes_switch_only_what_differs() {
        let actual: Svm = serde_json::from_value(serde_json::json!({
            "uuid": "u", "name": "n",
            "nfs": { "enabled": true }, "iscsi": { "enabled": true }
        }))
        .unwrap();
        let want = SvmProtocols {
            nfs: true,
            iscsi: false,
            nvme: true,
        };
        assert_eq!(
            protocol_changes(&want, &actual),
            [(Protocol::Iscsi, false), (Protocol::Nvme, true)]
        );
        let same = SvmProtocols {
            nfs: true,
            iscsi: true,
            nvme: false,
        };
        assert!(protocol_changes(&same, &actual).is_empty());
    }
}

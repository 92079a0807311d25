//! Step `SVMReady`: the SVM of an `Owned` object created, marked, running and with the spec's
//! protocols; the SVM an `AccountOnly` object names looked at, never changed.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

use kube::ResourceExt;
use kube::runtime::reflector::ObjectRef;

use super::DesiredError;
use super::authority::{
    Creator, Mark, Provider, Share, ShareWait, Standing, Takeover, asks_to_adopt, decide_share,
    decide_svm, svm_comment,
};
use super::errors::{Failed, Invalid, Waiting, is_entry_not_found, job, ontap_busy, ontap_error};
use super::naming::{Names, names_of};
use super::reconcile::{
    EXISTING_SVM_RECHECK, ONTAP_SETTLING, SERVED_ELSEWHERE_RECHECK, SvmReconciler,
};
use super::steady::confirmed_svm;
use super::tenancy;
use crate::api::{ADOPT_SVM_UUID_ANNOTATION, StorageVirtualMachine, SvmMode, SvmProtocols};
use crate::ontap::connections::ClusterConnections;
use crate::ontap::fair_slots::FairPermit;
use crate::ontap::inventory::Snapshot;
use ontap_client::{
    ErrorClass, ObjectRef as OntapRef, OntapClient, OntapError, Protocol, ProtocolState, Svm,
    SvmCreate, SvmPatch, SvmState, SvmTargetState,
};
use reconcile_engine::flow::settle;
use reconcile_engine::{Outcome, StepError, StepFlow, Worker};

impl SvmReconciler {
    /// Step `SVMReady` of an `AccountOnly` object: the SVM it names exists, runs, and may carry
    /// its account ([`decide_share`]): the object its `spec.provider` names provisions that SVM,
    /// shares it with this namespace, and ONTAP's mark shows the SVM is that provider's. An
    /// account is vsadmin access, so nothing else — not another object provisioning the name
    /// first, not an SVM of the name someone else made — lets a consumer on. Refused after
    /// having been let on (a narrowed `shareWith`), its account is locked: revocation revokes.
    pub(super) async fn shared_svm(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        client: &OntapClient,
    ) -> Result<Outcome<Svm>, StepError> {
        let provider = self.named_provider(svm);
        let consumer = ObjectRef::from_obj(svm);
        self.consumers.record(&consumer, provider_ref(svm));
        let after = self.consumer_wait(svm);
        let awaited = |why: String| Ok(Waiting::ProviderAwaited.outcome(why, after));
        if provider.is_none() {
            return awaited(format!(
                "the StorageVirtualMachine named in spec.provider does not exist (yet); the account is made on the SVM {} once it provisions it and shares it with this namespace",
                names.svm
            ));
        }
        let found = match existing_svm(client, names, after).await? {
            Outcome::Unchanged(found) | Outcome::Changed(found) => found,
            Outcome::Waiting(wait) => return Ok(Outcome::Waiting(wait)),
        };
        let facts = provider
            .as_deref()
            .map(|p| self.provider_facts(svm, names, p))
            .transpose()?;
        let mark = Mark::read(found.comment.as_deref());
        let creator = match (&mark, &provider) {
            (Some(mark), Some(provider)) => self.creator(provider, &mark.uid, names),
            _ => Creator::Absent,
        };
        match decide_share(facts.as_ref(), mark.as_ref(), creator) {
            Share::Allow => Ok(Outcome::Unchanged(found)),
            Share::Wait(ShareWait::NoProvider) => awaited(format!(
                "the StorageVirtualMachine named in spec.provider is being deleted; it takes no new accounts on the SVM {}",
                names.svm
            )),
            Share::Wait(ShareWait::Unmarked) => awaited(format!(
                "the SVM {} is not marked as provisioned by a StorageVirtualMachine yet; the account is made once its provider has taken it over",
                names.svm
            )),
            Share::Wait(ShareWait::ChangingHands) => awaited(format!(
                "the SVM {} is changing hands to the StorageVirtualMachine named in spec.provider; the account is made once it provisions it",
                names.svm
            )),
            Share::Refuse(refusal) => {
                self.revoke_account(names, &found, client).await?;
                Err(refusal.error(&names.svm, &names.account))
            }
        }
    }

    /// The object `svm.spec.provider` names, if cached.
    fn named_provider(&self, svm: &StorageVirtualMachine) -> Option<Arc<StorageVirtualMachine>> {
        self.svms.get(&provider_ref(svm)?)
    }

    /// How long a waiting consumer waits before it looks again on its own: as long as it has
    /// waited so far, so its looks at ONTAP grow apart, from 5 s up to the sync period. Its
    /// provider's changes wake it sooner ([`super::reconcile::Consumers`]).
    fn consumer_wait(&self, svm: &StorageVirtualMachine) -> Duration {
        let since = svm.status.as_ref().and_then(|s| {
            s.conditions
                .iter()
                .find(|c| c.type_ == "SVMReady" && c.status == "False")
                .map(|c| c.last_transition_time.0)
        });
        let waited = since
            .and_then(|t| Duration::try_from(Timestamp::now().duration_since(t)).ok())
            .unwrap_or_default();
        waited.clamp(
            EXISTING_SVM_RECHECK,
            self.sync_period.max(EXISTING_SVM_RECHECK),
        )
    }

    /// What `consumer` (with `names`) knows of `provider` for [`decide_share`].
    fn provider_facts<'a>(
        &self,
        consumer: &StorageVirtualMachine,
        names: &Names,
        provider: &'a StorageVirtualMachine,
    ) -> Result<Provider<'a>, StepError> {
        let status = provider.status.clone().unwrap_or_default();
        let provisions = provider.spec.mode == SvmMode::Owned
            && self.same_ontap(
                &provider.spec.cluster_ref.name,
                &consumer.spec.cluster_ref.name,
            )
            && names_of(provider, &status).svm == names.svm;
        let shares = tenancy::shares_with(
            provider,
            &names.namespace,
            &self.standings.namespace_labels(&names.namespace),
        )
        .map_err(|e| Invalid::ShareWith.error(e))?;
        let namespace = provider.metadata.namespace.as_deref().unwrap_or_default();
        Ok(Provider {
            uid: provider.metadata.uid.as_deref().unwrap_or_default(),
            namespace,
            standing: self.standings.of(provider),
            svm_name: provider.spec.svm_name.as_deref().unwrap_or_default(),
            provisions,
            shares,
            admitted: self.admitted(provider),
            deleting: provider.metadata.deletion_timestamp.is_some(),
        })
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
        // The inventory confirms the mark's uid; what else the mark records (the standing,
        // which may change while the object is steady: a project bound, a namespace labelled)
        // is compared here.
        if let Some(found) = snapshot.and_then(|s| confirmed_svm(svm, s))
            && Mark::read(found.comment.as_deref())
                == Mark::read(Some(&svm_comment(
                    &names.uid,
                    &self.standings.of(svm),
                    &names.namespace,
                    &svm.name_any(),
                )))
        {
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
            namespace: &names.namespace,
            worker,
            held: None,
        };
        // Never provisioned: the pass is about to start a job. Its slot is taken before the
        // lookup, so that the lookup is fresh however long the wait, and a pass that waits
        // costs ONTAP nothing.
        if recorded.is_none() {
            slot.take().await?;
        }
        let (mut found, created) = match lookup_svm(client, &names.svm).await? {
            Some(found) => (found, false),
            None => (
                self.create_svm(svm, names, recorded, client, &mut slot)
                    .await?,
                true,
            ),
        };
        let adopted = self
            .take_over(svm, names, recorded, client, &mut found, &mut slot)
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
        let mut body = svm_create(svm, &names.svm, &self.standings.of(svm))
            .map_err(|e| Invalid::Spec.error(e.to_string()))?;
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
            // The administrator's aggregates, where it bounds them; else every data aggregate.
            let allowed = self.allowances(svm).aggregates;
            return Ok(aggregates
                .iter()
                .filter(|a| allowed.is_empty() || allowed.contains(&a.name))
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

    /// Decides whether `found` is this object's to keep, adopt or leave ([`decide_svm`]), and
    /// marks an adopted one — or its own one whose mark does not yet record what it should (the
    /// object's standing and Gardener project, which other seeds read); `true` when it marked.
    async fn take_over(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        recorded: Option<&str>,
        client: &OntapClient,
        found: &mut Svm,
        slot: &mut JobSlot<'_>,
    ) -> StepFlow<bool> {
        let standing = self.standings.of(svm);
        let actor = names.actor(&standing);
        let asks = asks_to_adopt(names.adopt.as_deref(), &found.uuid, recorded);
        let mark = Mark::read(found.comment.as_deref());
        let creator = match &mark {
            Some(mark) => self.creator(svm, &mark.uid, names),
            None => Creator::Absent,
        };
        let wanted = svm_comment(&names.uid, &standing, &names.namespace, &svm.name_any());
        match decide_svm(&actor, mark.as_ref(), creator, asks) {
            Takeover::Keep if mark == Mark::read(Some(&wanted)) => Ok(false),
            Takeover::Keep | Takeover::Adopt => {
                // An existing account's password is kept, not rotated: `AccountReady` waits
                // for the seed Secret that carries it (see `ensure_account`).
                slot.take().await?;
                let patch = SvmPatch {
                    comment: Some(wanted.clone()),
                    ..SvmPatch::default()
                };
                if let Some(wait) = job(
                    slot.released_while(client.patch_svm(&found.uuid, &patch))
                        .await,
                    Failed::SvmAdopt,
                )? {
                    return Err(wait.into());
                }
                found.comment = Some(wanted);
                Ok(true)
            }
            Takeover::ServeElsewhere => Err(Waiting::SvmServedElsewhere
                .wait(
                    format!(
                        "the SVM {} is provisioned by a StorageVirtualMachine of the same Gardener project this operator does not see (another seed's, for shoots there); this object shares it with its consumers and leaves it alone. It takes the SVM over only when asked to by uuid ({ADOPT_SVM_UUID_ANNOTATION}), once that object is gone",
                        names.svm
                    ),
                    SERVED_ELSEWHERE_RECHECK,
                )
                .into()),
            Takeover::Refuse(refusal) => {
                Err(refusal.error(&names.svm, &names.account).into())
            }
        }
    }
}

/// A cluster's job slot for one step: taken at the step's first job, held until it returns.
struct JobSlot<'a> {
    connections: &'a ClusterConnections,
    cluster: &'a str,
    namespace: &'a str,
    worker: &'a Worker,
    held: Option<FairPermit>,
}

impl JobSlot<'_> {
    /// Takes the slot unless held already; waits (as the step's outcome) while none is free.
    async fn take(&mut self) -> StepFlow<()> {
        if self.held.is_none() {
            self.held = Some(
                self.connections
                    .job_slot(self.cluster, self.namespace, self.worker)
                    .await?,
            );
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
    after: Duration,
) -> Result<Outcome<Svm>, StepError> {
    let Some(found) = lookup_svm(client, &names.svm).await? else {
        return Ok(Waiting::SvmAwaited.outcome(
            format!(
                "the SVM {} does not exist in ONTAP (yet); this AccountOnly object makes its account once it is provisioned",
                names.svm
            ),
            after,
        ));
    };
    match found.state {
        Some(SvmState::Running) => Ok(Outcome::Unchanged(found)),
        state => Ok(Waiting::SvmNotRunning.outcome(
            format!(
                "ONTAP reports the SVM {} as {state:?}; the account is made once it runs",
                names.svm
            ),
            after,
        )),
    }
}

/// The object an `AccountOnly` object's `spec.provider` names (its namespace by default).
pub(super) fn provider_ref(
    svm: &StorageVirtualMachine,
) -> Option<ObjectRef<StorageVirtualMachine>> {
    let reference = svm.spec.provider.as_ref()?;
    let namespace = reference
        .namespace
        .clone()
        .or_else(|| svm.namespace())
        .unwrap_or_default();
    Some(ObjectRef::new(&reference.name).within(&namespace))
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

/// The body of `POST /api/svm/svms` for `svm`, of `standing`, under the ONTAP name `svm_name`.
/// The comment carries the mark ([`svm_comment`]); every protocol is sent explicitly, enabled
/// or not.
pub fn svm_create(
    svm: &StorageVirtualMachine,
    svm_name: &str,
    standing: &Standing,
) -> Result<SvmCreate, DesiredError> {
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
        comment: Some(svm_comment(
            &uid,
            standing,
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
    use crate::ontap::svm::plan::tests::{UID, base};

    #[test]
    fn svm_create_body() {
        let body = svm_create(&base(), "k8s_team-a_db", &Standing::Tenant).unwrap();
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
            svm_create(&unstored, "x", &Standing::Tenant).unwrap_err(),
            DesiredError::MissingUid
        );
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

//! Step `SVMReady`: the SVM of an `Owned` object brought to its plan ([`super::plan`]):
//! created, marked, running and with the spec's protocols; the SVM an `AccountOnly` object names
//! looked at, never changed.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

use kube::ResourceExt;
use kube::runtime::reflector::ObjectRef;

use super::authority::{
    Creator, Mark, Provider, Share, ShareWait, Takeover, asks_to_adopt, decide_share, decide_svm,
};
use super::errors::{Failed, Invalid, Waiting, is_entry_not_found, job, ontap_error, wait_if_busy};
use super::limits::{cluster_version, desired_limits_on};
use super::naming::{Names, names_of};
use super::plan::{DesiredSvm, StateAction, desired_svm, plan_svm};
use super::steady::confirmed_svm;
use super::tenancy;
use super::{EXISTING_SVM_RECHECK, ONTAP_SETTLING, SERVED_ELSEWHERE_RECHECK, SvmReconciler};
use crate::api::{ADOPT_SVM_UUID_ANNOTATION, StorageVirtualMachine, SvmMode};
use crate::ontap::inventory::Snapshot;
use ontap_client::{
    ErrorClass, ObjectRef as OntapRef, OntapClient, OntapError, Svm, SvmPatch, SvmState,
    SvmTargetState,
};
use reconcile_engine::{Jobs, Outcome, StepError, StepFlow};

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
    ) -> StepFlow<Outcome<Svm>> {
        let provider = self.named_provider(svm);
        let consumer = ObjectRef::from_obj(svm);
        self.consumers.record(&consumer, provider_ref(svm));
        let after = self.consumer_wait(svm);
        let awaited = |why: String| -> StepFlow<Outcome<Svm>> {
            Err(Waiting::ProviderAwaited.wait(why, after).into())
        };
        if provider.is_none() {
            return awaited(format!(
                "the StorageVirtualMachine named in spec.provider does not exist (yet); the account is made on the SVM {} once it provisions it and shares it with this namespace",
                names.svm
            ));
        }
        let found = existing_svm(client, names, after).await?.into_value();
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
                Err(refusal.error(&names.svm, &names.account).into())
            }
        }
    }

    /// The object `svm.spec.provider` names, if cached.
    fn named_provider(&self, svm: &StorageVirtualMachine) -> Option<Arc<StorageVirtualMachine>> {
        self.svms.get(&provider_ref(svm)?)
    }

    /// How long a waiting consumer waits before it looks again on its own: as long as it has
    /// waited so far, so its looks at ONTAP grow apart, from 5 s up to the sync period. Its
    /// provider's changes wake it sooner ([`super::Consumers`]).
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
    /// protocols of the spec: its [`plan_svm`] is empty. A steady object's `snapshot` may confirm
    /// that without a lookup; whatever it does not confirm is looked up.
    pub(super) async fn ensure_svm(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        recorded: Option<&str>,
        snapshot: Option<&Snapshot>,
        client: &OntapClient,
        jobs: &Jobs,
    ) -> StepFlow<Outcome<Svm>> {
        let cluster = self
            .clusters
            .get(&ObjectRef::new(&svm.spec.cluster_ref.name));
        let limits = desired_limits_on(
            svm,
            cluster.as_deref(),
            cluster.as_deref().and_then(cluster_version).as_ref(),
        )
        .map_err(|e| Invalid::Spec.error(e.to_string()))?;
        let desired = desired_svm(svm, &names.svm, &self.standings.of(svm), limits)
            .map_err(|e| Invalid::Spec.error(e.to_string()))?;
        if let Some(found) = snapshot
            .zip(recorded)
            .and_then(|(snapshot, recorded)| confirmed_svm(&desired, recorded, snapshot))
        {
            return Ok(Outcome::Unchanged(found));
        }
        self.create_or_repair_svm(svm, names, &desired, recorded, client, jobs)
            .await
    }

    /// Looks the SVM of `names` up, creates it where ONTAP has none, and carries out its
    /// [`plan_svm`] once the object may keep or adopt it ([`Self::check_takeover`]): marks it,
    /// starts it, switches its protocols.
    async fn create_or_repair_svm(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        desired: &DesiredSvm,
        recorded: Option<&str>,
        client: &OntapClient,
        jobs: &Jobs,
    ) -> StepFlow<Outcome<Svm>> {
        // The engine added the finalizer before this pass, so deleting the object always cleans
        // up what this step creates.
        // Never provisioned: the pass is about to start a job. Its slot is taken before the
        // lookup, so that the lookup is fresh however long the wait, and a pass that waits
        // costs ONTAP nothing.
        if recorded.is_none() {
            jobs.reserve().await?;
        }
        let (mut found, created) = match lookup_svm(client, &names.svm).await? {
            Some(found) => (found, false),
            None => (
                self.create_svm(svm, desired, recorded, client, jobs)
                    .await?,
                true,
            ),
        };
        self.check_takeover(svm, names, desired, recorded, &found)?;
        // The limits are `LimitsReady`'s to read and set.
        let plan = plan_svm(desired, &found, None);
        if plan.mark_anew {
            mark_svm(client, &mut found, &desired.comment, jobs).await?;
        }
        start_if_stopped(client, &found, plan.state, jobs).await?;
        // A protocol is switched on its service, which is no job: no job slot is needed.
        for (protocol, enabled) in &plan.protocols {
            client
                .set_protocol(&found.uuid, *protocol, *enabled)
                .await
                .map_err(|e| ontap_error(Failed::SvmProtocols, e))?;
        }
        Ok(if created || plan.mark_anew || !plan.protocols.is_empty() {
            Outcome::Changed(found)
        } else {
            Outcome::Unchanged(found)
        })
    }

    /// Creates the SVM `desired` describes, once: after an ambiguous failure it looks again by
    /// name instead of posting again. An SVM recorded in the status that ONTAP now names
    /// otherwise is not created anew: the second one would only fight it for the LIF addresses.
    async fn create_svm(
        &self,
        svm: &StorageVirtualMachine,
        desired: &DesiredSvm,
        recorded: Option<&str>,
        client: &OntapClient,
        jobs: &Jobs,
    ) -> StepFlow<Svm> {
        if let Some(uuid) = recorded {
            match client.svm(uuid).await {
                Ok(renamed) => {
                    return Err(Invalid::SvmRenamedInOntap
                        .error(format!(
                            "the SVM {uuid} provisioned as {} is now named {} in ONTAP; rename it back in ONTAP (SVMs are not renamed by the operator)",
                            desired.name, renamed.name
                        ))
                        .into());
                }
                Err(e) if is_entry_not_found(&e) => {}
                Err(e) => return Err(ontap_error(Failed::SvmLookup, e).into()),
            }
        }
        let mut body = desired.create_request();
        // Taken before the aggregates are listed: a pass that waits for it costs ONTAP nothing.
        jobs.reserve().await?;
        body.aggregates = self.create_aggregates(svm, client, body.aggregates).await?;
        let cluster = &svm.spec.cluster_ref.name;
        match jobs.run(client.create_svm(&body)).await? {
            Ok(created) => Ok(created),
            Err(e) => {
                wait_if_busy(&e)?;
                // The POST may have been applied, or a previous attempt's job may be running:
                // never create twice, look again by name.
                if !(e.is_ambiguous() || e.class() == ErrorClass::Conflict) {
                    // An aggregate named in the body may be gone: list them afresh.
                    self.connections.forget_aggregates(cluster);
                    return Err(ontap_error(Failed::SvmCreate, e).into());
                }
                match lookup_svm(client, &desired.name).await? {
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

    /// Whether `found` is this object's to keep or adopt ([`decide_svm`]), so that its plan may
    /// be carried out: a wait while another seed's object of its Gardener project serves it, an
    /// error where it is another's.
    fn check_takeover(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        desired: &DesiredSvm,
        recorded: Option<&str>,
        found: &Svm,
    ) -> StepFlow<()> {
        let actor = names.actor(&desired.standing);
        let asks = asks_to_adopt(names.adopt.as_deref(), &found.uuid, recorded);
        let mark = Mark::read(found.comment.as_deref());
        let creator = match &mark {
            Some(mark) => self.creator(svm, &mark.uid, names),
            None => Creator::Absent,
        };
        match decide_svm(&actor, mark.as_ref(), creator, asks) {
            // An existing account's password is kept, not rotated: `AccountReady` waits for the
            // seed Secret that carries it (see `ensure_account`).
            Takeover::Keep | Takeover::Adopt => Ok(()),
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

/// Sends `patch` for the SVM `uuid`, a job: ONTAP's answer that it is busy is a wait, any other
/// failure is `failed`.
async fn run_svm_patch(
    client: &OntapClient,
    uuid: &str,
    patch: &SvmPatch,
    failed: Failed,
    jobs: &Jobs,
) -> StepFlow<()> {
    job(jobs.run(client.patch_svm(uuid, patch)).await?, failed)?;
    Ok(())
}

/// Writes `comment`, the object's mark, into the SVM `found`: what an adoption does, and what
/// keeps the mark of the object's own SVM recording what it should (its standing and Gardener
/// project, which other seeds read).
async fn mark_svm(
    client: &OntapClient,
    found: &mut Svm,
    comment: &str,
    jobs: &Jobs,
) -> StepFlow<()> {
    let patch = SvmPatch {
        comment: Some(comment.to_string()),
        ..SvmPatch::default()
    };
    run_svm_patch(client, &found.uuid, &patch, Failed::SvmAdopt, jobs).await?;
    found.comment = Some(comment.to_string());
    Ok(())
}

/// Waits while ONTAP settles the SVM's state, and starts a stopped one, as its plan's `state`
/// says.
async fn start_if_stopped(
    client: &OntapClient,
    found: &Svm,
    state: StateAction,
    jobs: &Jobs,
) -> StepFlow<()> {
    match state {
        StateAction::AwaitSettling => Err(Waiting::SvmSettling
            .wait(
                format!("ONTAP reports the SVM as {:?}", found.state),
                ONTAP_SETTLING,
            )
            .into()),
        StateAction::AwaitDeletion => Err(Waiting::SvmDeleting
            .wait("ONTAP is deleting the SVM", ONTAP_SETTLING)
            .into()),
        StateAction::Start => {
            let start = SvmPatch {
                state: Some(SvmTargetState::Running),
                ..SvmPatch::default()
            };
            run_svm_patch(client, &found.uuid, &start, Failed::SvmStart, jobs).await?;
            Err(Waiting::SvmStarting
                .wait("the SVM was stopped; it is being started", ONTAP_SETTLING)
                .into())
        }
        StateAction::Keep | StateAction::Unconfirmed => Ok(()),
    }
}

/// Step `SVMReady` of an `AccountOnly` object: the SVM it names exists and runs. It is only
/// looked at — whoever provisioned it owns it.
pub(super) async fn existing_svm(
    client: &OntapClient,
    names: &Names,
    after: Duration,
) -> StepFlow<Outcome<Svm>> {
    let Some(found) = lookup_svm(client, &names.svm).await? else {
        return Err(Waiting::SvmAwaited
            .wait(
                format!(
                    "the SVM {} does not exist in ONTAP (yet); this AccountOnly object makes its account once it is provisioned",
                    names.svm
                ),
                after,
            )
            .into());
    };
    match found.state {
        Some(SvmState::Running) => Ok(Outcome::Unchanged(found)),
        state => Err(Waiting::SvmNotRunning
            .wait(
                format!(
                    "ONTAP reports the SVM {} as {state:?}; the account is made once it runs",
                    names.svm
                ),
                after,
            )
            .into()),
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

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
}

//! The SVM's throughput ceiling, part of step `LimitsReady`: the operator's fixed QoS policy for
//! the SVM made, kept at the wanted limits and applied to the SVM as [`plan_qos`] says, or
//! deleted once no ceiling is wanted. No other policy is changed or deleted: ONTAP records no
//! creator of a policy, so the operator's is the one of its name in the SVM
//! ([`super::plan::qos_policy_name`]).

use super::SvmReconciler;
use super::errors::{Conflict, Failed, job, ontap_error};
use super::limits::read_limits;
use super::plan::{Ceiling, QosAction, plan_qos, qos_policy_name};
use crate::ontap::inventory::Snapshot;
use ontap_client::{
    ClusterVersion, ObjectRef, OntapClient, QosPolicyPatch, SvmLimits, SvmLimitsPatch,
};
use reconcile_engine::{Jobs, StepFlow};

impl SvmReconciler {
    /// Brings the ceiling of the SVM `limits` describes to `wanted`; whether it changed
    /// anything. `fresh`: `limits` were read on this pass, not taken from `snapshot`. What the
    /// snapshot confirms is not read again; anything else is read afresh before acting on it.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn ensure_ceiling(
        &self,
        wanted: Option<Ceiling>,
        limits: &SvmLimits,
        fresh: bool,
        snapshot: Option<&Snapshot>,
        version: &ClusterVersion,
        client: &OntapClient,
        jobs: &Jobs,
    ) -> StepFlow<bool> {
        let svm_uuid = limits.uuid.as_str();
        let name = qos_policy_name(svm_uuid);
        if let Some(named) = snapshot.and_then(|s| s.qos_policy(&name))
            && plan_qos(wanted, svm_uuid, limits.qos_policy.as_ref(), named) == QosAction::Keep
        {
            return Ok(false);
        }
        let applied = if fresh {
            limits.qos_policy.clone()
        } else {
            read_limits(client, svm_uuid, version).await?.qos_policy
        };
        let named = client
            .qos_policy_by_name(&name)
            .await
            .map_err(|e| ontap_error(Failed::QosPolicyLookup, e))?;
        match plan_qos(wanted, svm_uuid, applied.as_ref(), named.as_ref()) {
            QosAction::Keep => return Ok(false),
            QosAction::Create(body) => {
                let created = job(
                    jobs.run(client.create_qos_policy(&body)).await?,
                    Failed::QosPolicyCreate,
                )?;
                apply(client, jobs, svm_uuid, &created.uuid).await?;
            }
            QosAction::Update {
                uuid,
                fixed,
                apply: reapply,
            } => {
                if let Some(fixed) = fixed {
                    let patch = QosPolicyPatch {
                        name: None,
                        fixed: Some(fixed),
                    };
                    job(
                        jobs.run(client.patch_qos_policy(&uuid, &patch)).await?,
                        Failed::QosPolicyLimits,
                    )?;
                }
                if reapply {
                    apply(client, jobs, svm_uuid, &uuid).await?;
                }
            }
            QosAction::Remove { uuid } => delete_policy(client, jobs, &uuid).await?,
            QosAction::NameTaken { owner } => {
                return Err(Conflict::QosPolicyNameTaken
                    .error(format!(
                        "the QoS policy {name:?}, the name the operator gives this SVM's ceiling, belongs to the SVM {owner:?}; it is left alone"
                    ))
                    .into());
            }
        }
        Ok(true)
    }
}

/// Deletes the operator's QoS policy of the SVM `svm_uuid`, where it has one: before the SVM
/// itself goes, so that no policy outlives it, whatever ONTAP does with a deleted SVM's policies.
pub(super) async fn delete_ceiling(
    client: &OntapClient,
    jobs: &Jobs,
    svm_uuid: &str,
) -> StepFlow<()> {
    let named = client
        .qos_policy_by_name(&qos_policy_name(svm_uuid))
        .await
        .map_err(|e| ontap_error(Failed::QosPolicyLookup, e))?;
    if let QosAction::Remove { uuid } = plan_qos(None, svm_uuid, None, named.as_ref()) {
        delete_policy(client, jobs, &uuid).await?;
    }
    Ok(())
}

async fn delete_policy(client: &OntapClient, jobs: &Jobs, uuid: &str) -> StepFlow<()> {
    job(
        jobs.run(client.delete_qos_policy(uuid)).await?,
        Failed::QosPolicyDelete,
    )
    .map(drop)
}

/// Applies the policy `policy_uuid` to the SVM `svm_uuid`.
async fn apply(
    client: &OntapClient,
    jobs: &Jobs,
    svm_uuid: &str,
    policy_uuid: &str,
) -> StepFlow<()> {
    let patch = SvmLimitsPatch {
        qos_policy: Some(ObjectRef::by_uuid(policy_uuid)),
        ..SvmLimitsPatch::default()
    };
    job(
        jobs.run(client.patch_svm_limits(svm_uuid, &patch)).await?,
        Failed::QosPolicyApply,
    )
}

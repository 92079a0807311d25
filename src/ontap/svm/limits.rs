//! Step `LimitsReady`: the limits ONTAP enforces on an `Owned` object's SVM (`max_volumes`,
//! the capacity limit and its alert) brought to its plan ([`plan_svm`]), its throughput ceiling
//! to [`plan_qos`] (`super::qos`), and what the SVM uses of them recorded in the status. A
//! steady object's limits and ceiling come from its cluster's inventory, so a resync reads none
//! per SVM.
//!
//! It runs last: a limit ONTAP cannot take (a capacity limit before 9.13.1) is a condition of
//! its own while the SVM, its LIFs, its account and its Secret still converge.

use kube::runtime::reflector::ObjectRef;

use super::SvmReconciler;
use super::errors::{Failed, Invalid, Transient, job, ontap_error};
use super::naming::Names;
use super::plan::{
    Ceiling, DesiredError, DesiredLimits, LimitsAction, QosAction, desired_limits, desired_svm,
    human_bytes, plan_qos, plan_svm, qos_policy_name,
};
use crate::api::{OntapCluster, StorageVirtualMachine, SvmMode, SvmUsage};
use crate::ontap::inventory::Snapshot;
use ontap_client::{
    ClusterVersion, MaxVolumes, OntapClient, Svm, SvmLimits, SvmLimitsPatch, SvmStorage,
};
use reconcile_engine::{Jobs, Outcome, StepFlow};

/// The version an OntapCluster's status reports (`9.16.1`), once its controller has read it.
pub fn cluster_version(cluster: &OntapCluster) -> Option<ClusterVersion> {
    let full = cluster.status.as_ref()?.version.as_deref()?;
    let mut parts = full.split('.').map(str::parse::<u32>);
    let (Some(Ok(generation)), Some(Ok(major)), Some(Ok(minor))) =
        (parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    Some(ClusterVersion {
        full: full.to_owned(),
        generation,
        major,
        minor,
    })
}

/// Whether `cluster`'s administrator gives its SVMs limits: defaults or bounds.
pub fn wants_limits(cluster: &OntapCluster) -> bool {
    let spec = &cluster.spec;
    spec.defaults.as_ref().is_some_and(|d| d.limits.is_some())
        || spec.allowed.as_ref().is_some_and(|a| {
            a.max_volumes.is_some()
                || a.max_storage_limit.is_some()
                || a.max_throughput_iops.is_some()
                || a.max_throughput_mbps.is_some()
        })
}

/// Whether `cluster`'s administrator gives its SVMs a throughput ceiling: a default or a bound.
pub fn wants_ceiling(cluster: &OntapCluster) -> bool {
    let spec = &cluster.spec;
    spec.defaults
        .as_ref()
        .and_then(|d| d.limits.as_ref())
        .is_some_and(|l| l.max_throughput_iops.is_some() || l.max_throughput_mbps.is_some())
        || spec
            .allowed
            .as_ref()
            .is_some_and(|a| a.max_throughput_iops.is_some() || a.max_throughput_mbps.is_some())
}

/// The ceiling a status records.
pub(super) fn ceiling_in(usage: Option<&SvmUsage>) -> Option<Ceiling> {
    usage.and_then(|u| {
        Ceiling::of(
            u.max_throughput_iops.unwrap_or(0),
            u.max_throughput_mbps.unwrap_or(0),
        )
    })
}

/// Whether `snapshot` confirms the SVM `svm_uuid`'s ceiling as `wanted` and as the status
/// records it (`recorded`): always where none is wanted or recorded, never from a snapshot that
/// did not read the QoS policies otherwise.
pub fn ceiling_confirmed(
    wanted: Option<Ceiling>,
    recorded: Option<&SvmUsage>,
    svm_uuid: &str,
    snapshot: &Snapshot,
) -> bool {
    if ceiling_in(recorded) != wanted {
        return false;
    }
    match snapshot.qos_policy(&qos_policy_name(svm_uuid)) {
        None => wanted.is_none(),
        Some(named) => {
            let applied = snapshot
                .limits(svm_uuid)
                .and_then(|l| l.qos_policy.as_ref());
            (wanted.is_none() || snapshot.limits(svm_uuid).is_some())
                && plan_qos(wanted, svm_uuid, applied, named) == QosAction::Keep
        }
    }
}

/// The limits `svm` wants on `cluster` ([`desired_limits`]); none for an `AccountOnly` object,
/// which changes nothing of the SVM. On a cluster of `version` before 9.13.1, without the
/// capacity limit it cannot have.
pub fn desired_limits_on(
    svm: &StorageVirtualMachine,
    cluster: Option<&OntapCluster>,
    version: Option<&ClusterVersion>,
) -> Result<DesiredLimits, DesiredError> {
    if svm.spec.mode == SvmMode::AccountOnly {
        return Ok(DesiredLimits::default());
    }
    let spec = cluster.map(|c| &c.spec);
    let limits = desired_limits(
        svm.spec.limits.as_ref(),
        spec.and_then(|s| s.defaults.as_ref()),
        spec.and_then(|s| s.allowed.as_ref()),
    )?;
    Ok(match version {
        Some(version) if !version.has_svm_storage_limit() => limits.without_storage(),
        _ => limits,
    })
}

impl SvmReconciler {
    /// Step `LimitsReady`: the SVM's limits as planned, and its usage of them. `previous` is
    /// the usage the status holds: a pass that counts no volumes keeps its count.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn ensure_limits(
        &self,
        svm: &StorageVirtualMachine,
        names: &Names,
        ontap_svm: &Svm,
        snapshot: Option<&Snapshot>,
        previous: Option<&SvmUsage>,
        client: &OntapClient,
        jobs: &Jobs,
    ) -> StepFlow<Outcome<Option<SvmUsage>>> {
        let cluster = self
            .clusters
            .get(&ObjectRef::new(&svm.spec.cluster_ref.name));
        let wanted = desired_limits_on(svm, cluster.as_deref(), None)
            .map_err(|e| Invalid::Spec.error(e.to_string()))?;
        // A ceiling the status records, or a policy the inventory shows, may be the operator's
        // to remove.
        let ceiling_known = wanted.ceiling.is_some()
            || ceiling_in(previous).is_some()
            || snapshot
                .and_then(|s| s.qos_policy(&qos_policy_name(&ontap_svm.uuid)))
                .flatten()
                .is_some();
        if wanted.is_empty() && !ceiling_known {
            return Ok(Outcome::Unchanged(None));
        }
        let version = cluster
            .as_deref()
            .and_then(cluster_version)
            .ok_or_else(|| {
                Transient::ClusterVersionUnknown.error(
                    "the OntapCluster's status does not report its ONTAP version yet, which says which limits ONTAP has",
                )
            })?;
        let supported = version.has_svm_storage_limit();
        let limits = if supported {
            wanted.clone()
        } else {
            wanted.without_storage()
        };
        let desired = desired_svm(svm, &names.svm, &self.standings.of(svm), limits)
            .map_err(|e| Invalid::Spec.error(e.to_string()))?;
        let from_snapshot = snapshot.and_then(|s| s.limits(&ontap_svm.uuid));
        let confirmed = from_snapshot.filter(|found| {
            plan_svm(&desired, ontap_svm, Some(found)).limits == LimitsAction::Keep
        });
        let (found, fresh, changed) = match confirmed {
            Some(found) => (found.clone(), false, false),
            None => {
                let found = read_limits(client, &ontap_svm.uuid, &version).await?;
                match plan_svm(&desired, ontap_svm, Some(&found)).limits {
                    LimitsAction::Set(patch) => {
                        job(
                            jobs.run(client.patch_svm_limits(&ontap_svm.uuid, &patch))
                                .await?,
                            Failed::SvmLimits,
                        )?;
                        (applied(found, &patch), true, true)
                    }
                    LimitsAction::Keep | LimitsAction::Unread => (found, true, false),
                }
            }
        };
        let ceiling_changed = if ceiling_known {
            self.ensure_ceiling(
                wanted.ceiling,
                &found,
                fresh,
                snapshot,
                &version,
                client,
                jobs,
            )
            .await?
        } else {
            false
        };
        let changed = changed || ceiling_changed;
        if !supported && wanted.wants_storage() {
            return Err(Invalid::StorageLimitUnsupported
                .error(format!(
                    "spec.limits.storageLimit: ONTAP {} has no SVM capacity limit (9.13.1 and later have); the SVM's other limits are set",
                    version.full
                ))
                .into());
        }
        let volumes = snapshot
            .and_then(|s| s.volumes(&ontap_svm.uuid))
            .or_else(|| previous.and_then(|u| u.volumes));
        let usage = (!wanted.is_empty()).then(|| usage_of(&found, volumes, wanted.ceiling));
        Ok(if changed {
            Outcome::Changed(usage)
        } else {
            Outcome::Unchanged(usage)
        })
    }
}

/// The SVM's limits as ONTAP reports them now.
pub(super) async fn read_limits(
    client: &OntapClient,
    uuid: &str,
    version: &ClusterVersion,
) -> StepFlow<SvmLimits> {
    client
        .svm_limits(uuid, version)
        .await
        .map_err(|e| ontap_error(Failed::SvmLimitsLookup, e).into())
}

/// `found` with `patch` set: what ONTAP shows once it took it, without another read. A usage
/// ONTAP reports only while a capacity limit is set stays unknown until the next read.
fn applied(mut found: SvmLimits, patch: &SvmLimitsPatch) -> SvmLimits {
    if let Some(max_volumes) = patch.max_volumes {
        found.max_volumes = Some(max_volumes);
    }
    if let Some(set) = patch.storage {
        let storage = found.storage.get_or_insert_with(SvmStorage::default);
        if let Some(limit) = set.limit {
            storage.limit = (limit > 0).then_some(limit);
        }
        if let Some(alert) = set.limit_threshold_alert {
            storage.limit_threshold_alert = Some(alert);
        }
    }
    found
}

/// What an SVM with `limits`, `volumes` and the throughput `ceiling` uses of its limits.
pub fn usage_of(limits: &SvmLimits, volumes: Option<u64>, ceiling: Option<Ceiling>) -> SvmUsage {
    let max_volumes = match limits.max_volumes {
        Some(MaxVolumes::Limit(n)) => Some(n),
        Some(MaxVolumes::Unlimited) | None => None,
    };
    let storage = limits.storage.unwrap_or_default();
    let storage_limit_bytes = storage.limit.filter(|l| *l > 0);
    let storage_used_bytes = storage.allocated;
    let count = |value: Option<u64>| value.map_or_else(|| "?".to_owned(), |v| v.to_string());
    let bytes = |value: Option<u64>| value.map_or_else(|| "?".to_owned(), human_bytes);
    let limit = |value: Option<String>| value.unwrap_or_else(|| "unlimited".to_owned());
    let mut summary = format!(
        "volumes {}/{}",
        count(volumes),
        limit(max_volumes.map(|n| n.to_string()))
    );
    if limits.storage.is_some() {
        summary.push_str(&format!(
            ", storage {}/{}",
            bytes(storage_used_bytes),
            limit(storage_limit_bytes.map(human_bytes))
        ));
    }
    if let Some(ceiling) = ceiling {
        summary.push_str(&format!(", qos {}", ceiling.summary()));
    }
    let nonzero = |value: u64| (value != 0).then_some(value);
    SvmUsage {
        volumes,
        max_volumes,
        storage_used_bytes,
        storage_limit_bytes,
        max_throughput_iops: ceiling.and_then(|c| nonzero(c.iops)),
        max_throughput_mbps: ceiling.and_then(|c| nonzero(c.mbps)),
        summary,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_ceiling_is_confirmed_from_the_snapshot_only_as_wanted_and_recorded() {
        const SVM: &str = "5d8e7a10-0000-4000-8000-000000000001";
        fn record<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
            serde_json::from_value(value).unwrap()
        }
        let svm_applying = |policy: &str| -> SvmLimits {
            record(serde_json::json!({
                "uuid": SVM, "name": "svm_a", "qos_policy": { "uuid": policy },
            }))
        };
        let ours: ontap_client::QosPolicy = record(serde_json::json!({
            "uuid": "p-1", "name": qos_policy_name(SVM), "svm": { "uuid": SVM },
            "fixed": { "max_throughput_iops": 5000 },
        }));
        let snapshot = |limits: SvmLimits, policies: Option<Vec<ontap_client::QosPolicy>>| {
            let read = Snapshot::new(std::time::Instant::now(), Vec::new(), Vec::new())
                .with_limits(vec![limits], Vec::new());
            match policies {
                Some(policies) => read.with_qos_policies(policies),
                None => read,
            }
        };
        let wanted = Ceiling::of(5000, 0);
        let recorded = usage_of(&svm_applying("p-1"), None, wanted);
        let as_wanted = snapshot(svm_applying("p-1"), Some(vec![ours.clone()]));
        assert!(ceiling_confirmed(wanted, Some(&recorded), SVM, &as_wanted));
        // Another policy applied, or the status not recording the ceiling: not confirmed.
        let other = snapshot(svm_applying("p-2"), Some(vec![ours.clone()]));
        assert!(!ceiling_confirmed(wanted, Some(&recorded), SVM, &other));
        assert!(!ceiling_confirmed(wanted, None, SVM, &as_wanted));
        // A snapshot that did not read the policies confirms only the absence of a ceiling.
        let unread = snapshot(svm_applying("p-1"), None);
        assert!(!ceiling_confirmed(wanted, Some(&recorded), SVM, &unread));
        assert!(ceiling_confirmed(None, None, SVM, &unread));
        // No ceiling wanted, and the operator's policy still there: to be removed.
        assert!(!ceiling_confirmed(None, None, SVM, &as_wanted));
        assert!(ceiling_confirmed(
            None,
            None,
            SVM,
            &snapshot(svm_applying("p-1"), Some(Vec::new()))
        ));
    }

    #[test]
    fn usage_reads_as_used_over_limit() {
        let limits: SvmLimits = serde_json::from_value(serde_json::json!({
            "uuid": "u", "name": "n", "max_volumes": "100",
            "storage": { "limit": 500u64 << 30, "limit_threshold_alert": 90, "allocated": 12u64 << 30 },
        }))
        .unwrap();
        let usage = usage_of(&limits, Some(3), None);
        assert_eq!(usage.summary, "volumes 3/100, storage 12Gi/500Gi");
        assert_eq!(
            (usage.max_volumes, usage.storage_limit_bytes),
            (Some(100), Some(500 << 30))
        );
        let old: SvmLimits = serde_json::from_value(serde_json::json!({
            "uuid": "u", "name": "n", "max_volumes": "unlimited",
        }))
        .unwrap();
        assert_eq!(usage_of(&old, None, None).summary, "volumes ?/unlimited");
        let throttled = usage_of(&old, None, Ceiling::of(5000, 0));
        assert_eq!(throttled.summary, "volumes ?/unlimited, qos 5000iops");
        assert_eq!(
            (throttled.max_throughput_iops, throttled.max_throughput_mbps),
            (Some(5000), None)
        );
    }
}

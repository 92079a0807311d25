//! Gauges of what the caches hold, computed at scrape time: the alerts need the state of the
//! objects (how many SVMs are not Ready and why, which clusters are unreachable), and a gauge
//! set by a reconcile would go stale exactly when reconciles stop.
//!
//! Labels are bounded: namespaces, the names of OntapClusters (cluster-scoped objects that
//! administrators create), phases and condition reasons, which are constants in code. Never an
//! SVM's name in ONTAP or a message. The usage gauges are per object (`namespace`, `name`), one
//! series each, and only for objects whose SVM has limits: an alert has to say which SVM is
//! about to refuse volumes.

use std::sync::atomic::AtomicI64;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use reconcile_engine::SharedCache;
use reconcile_engine::conditions::READY;

use crate::api::{OntapCluster, StorageVirtualMachine, SvmPhase};
use crate::deploy::METRIC_PREFIX;

/// `{namespace, phase, reason}` of StorageVirtualMachines; `reason` is the `Ready` condition's
/// when the object is not Ready, else empty.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SvmLabels {
    pub namespace: String,
    pub phase: String,
    pub reason: String,
}

/// `{namespace, name}`: one StorageVirtualMachine object.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SvmObjectLabels {
    pub namespace: String,
    pub name: String,
}

/// `{cluster, condition, status, reason}`: one condition (its type) of an OntapCluster.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ClusterConditionLabels {
    pub cluster: String,
    pub condition: String,
    pub status: String,
    pub reason: String,
}

/// Encodes `family` as the gauge `name`.
pub fn encode_gauges<L>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    family: &Family<L, Gauge<i64, AtomicI64>>,
) -> Result<(), std::fmt::Error>
where
    L: EncodeLabelSet + Clone + std::hash::Hash + Eq + std::fmt::Debug,
{
    family.encode(encoder.encode_descriptor(name, help, None, family.metric_type())?)
}

/// `ontap_operator_svms`, `ontap_operator_ontap_cluster_condition` and the usage gauges of SVMs
/// with limits (`ontap_operator_svm_volumes`, `…_svm_max_volumes`, `…_svm_storage_used_bytes`,
/// `…_svm_storage_limit_bytes`, `…_svm_max_throughput_iops`, `…_svm_max_throughput_mbps`).
pub struct OntapStateCollector {
    pub svms: SharedCache<StorageVirtualMachine>,
    pub clusters: SharedCache<OntapCluster>,
}

impl std::fmt::Debug for OntapStateCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OntapStateCollector")
            .finish_non_exhaustive()
    }
}

fn phase_name(phase: Option<SvmPhase>) -> String {
    match phase {
        // Before the first pass wrote a status.
        None => "Pending".to_owned(),
        Some(phase) => format!("{phase:?}"),
    }
}

impl Collector for OntapStateCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let svms = Family::<SvmLabels, Gauge>::default();
        let usage_gauges: [Family<SvmObjectLabels, Gauge>; 6] = Default::default();
        for svm in self.svms.store().state() {
            if let Some(usage) = svm.status.as_ref().and_then(|s| s.usage.as_ref()) {
                let labels = SvmObjectLabels {
                    namespace: svm.metadata.namespace.clone().unwrap_or_default(),
                    name: svm.metadata.name.clone().unwrap_or_default(),
                };
                let values = [
                    usage.volumes,
                    usage.max_volumes,
                    usage.storage_used_bytes,
                    usage.storage_limit_bytes,
                    usage.max_throughput_iops,
                    usage.max_throughput_mbps,
                ];
                for (family, value) in usage_gauges.iter().zip(values) {
                    if let Some(value) = value {
                        family
                            .get_or_create(&labels)
                            .set(i64::try_from(value).unwrap_or(i64::MAX));
                    }
                }
            }
            let status = svm.status.as_ref();
            let phase = status.and_then(|s| s.phase);
            let ready = status.and_then(|s| s.conditions.iter().find(|c| c.type_ == READY));
            let reason = match ready {
                Some(c) if c.status != "True" => c.reason.clone(),
                Some(_) => String::new(),
                None => "NotReconciled".to_owned(),
            };
            svms.get_or_create(&SvmLabels {
                namespace: svm.metadata.namespace.clone().unwrap_or_default(),
                phase: phase_name(phase),
                reason,
            })
            .inc();
        }
        encode_gauges(
            &mut encoder,
            &format!("{METRIC_PREFIX}_svms"),
            "StorageVirtualMachines in the cache by namespace, phase and (when not Ready) the Ready condition's reason",
            &svms,
        )?;
        let [
            volumes,
            max_volumes,
            storage_used,
            storage_limit,
            max_iops,
            max_mbps,
        ] = &usage_gauges;
        for (name, help, family) in [
            (
                "svm_volumes",
                "Volumes of an SVM with limits, as the cluster's inventory last counted them",
                volumes,
            ),
            (
                "svm_max_volumes",
                "An SVM's volume limit (ONTAP's max_volumes), where it has one",
                max_volumes,
            ),
            (
                "svm_storage_used_bytes",
                "Bytes an SVM's volumes take of its capacity limit (ONTAP's storage.allocated)",
                storage_used,
            ),
            (
                "svm_storage_limit_bytes",
                "An SVM's capacity limit in bytes (ONTAP's storage.limit), where it has one",
                storage_limit,
            ),
            (
                "svm_max_throughput_iops",
                "An SVM's throughput ceiling in IOPS (its QoS policy's max_throughput_iops), where it has one",
                max_iops,
            ),
            (
                "svm_max_throughput_mbps",
                "An SVM's throughput ceiling in MB/s (its QoS policy's max_throughput_mbps), where it has one",
                max_mbps,
            ),
        ] {
            encode_gauges(
                &mut encoder,
                &format!("{METRIC_PREFIX}_{name}"),
                help,
                family,
            )?;
        }

        let conditions = Family::<ClusterConditionLabels, Gauge>::default();
        for cluster in self.clusters.store().state() {
            let name = cluster.metadata.name.clone().unwrap_or_default();
            for c in cluster.status.iter().flat_map(|s| s.conditions.iter()) {
                conditions
                    .get_or_create(&ClusterConditionLabels {
                        cluster: name.clone(),
                        condition: c.type_.clone(),
                        status: c.status.clone(),
                        reason: c.reason.clone(),
                    })
                    .set(1);
            }
        }
        encode_gauges(
            &mut encoder,
            &format!("{METRIC_PREFIX}_ontap_cluster_condition"),
            "1 for each condition an OntapCluster has, by cluster, condition type, status and reason",
            &conditions,
        )
    }
}

//! `ontap_operator_extension_last_operation`: each Extension of the served type by its last
//! operation's type and state, read from the cache at scrape time, so that an Extension whose
//! operation keeps failing is visible while no reconcile runs. The namespace is the shoot's
//! (one Extension of a type per shoot namespace); type and state are Gardener's enums.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use reconcile_engine::SharedCache;

use super::api::Extension;
use crate::deploy::METRIC_PREFIX;
use crate::ontap::metrics::encode_gauges;

/// `{namespace, operation, state}`; both empty before the first operation is recorded.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ExtensionLabels {
    pub namespace: String,
    pub operation: String,
    pub state: String,
}

pub struct ExtensionStateCollector {
    pub extensions: SharedCache<Extension>,
    /// Only Extensions of this `spec.type` are ours.
    pub extension_type: String,
}

impl std::fmt::Debug for ExtensionStateCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExtensionStateCollector")
            .field("extension_type", &self.extension_type)
            .finish_non_exhaustive()
    }
}

impl Collector for ExtensionStateCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let family = Family::<ExtensionLabels, Gauge>::default();
        for ext in self.extensions.store().state() {
            if ext.spec.type_ != self.extension_type {
                continue;
            }
            let last = ext.status.as_ref().and_then(|s| s.last_operation.as_ref());
            family
                .get_or_create(&ExtensionLabels {
                    namespace: ext.metadata.namespace.clone().unwrap_or_default(),
                    operation: last.map(|op| format!("{:?}", op.type_)).unwrap_or_default(),
                    state: last.map(|op| format!("{:?}", op.state)).unwrap_or_default(),
                })
                .inc();
        }
        encode_gauges(
            &mut encoder,
            &format!("{METRIC_PREFIX}_extension_last_operation"),
            "Extensions of the served type by shoot namespace, last operation type and state",
            &family,
        )
    }
}

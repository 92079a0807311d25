//! `ontap_operator_extension_last_operation`: each Extension of the served type by its last
//! operation's type and state, read from the cache at scrape time, so that an Extension whose
//! operation keeps failing is visible while no reconcile runs. The namespace is the shoot's
//! (one Extension of a type per shoot namespace); type, state and error codes are Gardener's
//! enums.
//!
//! `last_error` is what tells a failing Extension: a retry is `Processing` and keeps
//! `lastError` (gardenlet keeps seeing the error meanwhile), so the state alone alternates
//! between `Error` and `Processing` while the same failure repeats, and only `Succeeded` clears
//! it.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use reconcile_engine::SharedCache;

use super::api::{Extension, LastError};
use crate::deploy::METRIC_PREFIX;
use crate::ontap::metrics::encode_gauges;

/// `{namespace, operation, state, last_error}`; operation and state are empty before the first
/// operation is recorded, `last_error` holds `lastError`'s codes (sorted, comma-separated;
/// `unclassified` when it has none) and is empty without a `lastError`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ExtensionLabels {
    pub namespace: String,
    pub operation: String,
    pub state: String,
    pub last_error: String,
}

fn error_codes(error: Option<&LastError>) -> String {
    let Some(error) = error else {
        return String::new();
    };
    let mut codes: Vec<String> = error
        .codes
        .iter()
        .filter_map(|code| serde_json::to_value(code).ok())
        .filter_map(|code| code.as_str().map(str::to_owned))
        .collect();
    codes.sort();
    codes.dedup();
    if codes.is_empty() {
        "unclassified".to_owned()
    } else {
        codes.join(",")
    }
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
            let status = ext.status.as_ref();
            let last = status.and_then(|s| s.last_operation.as_ref());
            family
                .get_or_create(&ExtensionLabels {
                    namespace: ext.metadata.namespace.clone().unwrap_or_default(),
                    operation: last.map(|op| format!("{:?}", op.type_)).unwrap_or_default(),
                    state: last.map(|op| format!("{:?}", op.state)).unwrap_or_default(),
                    last_error: error_codes(status.and_then(|s| s.last_error.as_ref())),
                })
                .inc();
        }
        encode_gauges(
            &mut encoder,
            &format!("{METRIC_PREFIX}_extension_last_operation"),
            "Extensions of the served type by shoot namespace, last operation type and state, and lastError codes",
            &family,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extension::api::ErrorCode;

    #[test]
    fn error_codes_are_sorted_gardener_names() {
        assert_eq!(error_codes(None), "");
        let mut error = LastError {
            description: "x".into(),
            task_id: None,
            codes: vec![],
            last_update_time: None,
        };
        assert_eq!(error_codes(Some(&error)), "unclassified");
        error.codes = vec![
            ErrorCode::InfraUnauthorized,
            ErrorCode::InfraUnauthenticated,
            ErrorCode::InfraUnauthorized,
        ];
        assert_eq!(
            error_codes(Some(&error)),
            "ERR_INFRA_UNAUTHENTICATED,ERR_INFRA_UNAUTHORIZED"
        );
    }
}

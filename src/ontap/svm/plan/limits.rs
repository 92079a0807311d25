//! The limits an `Owned` object's SVM is to have: the object's own, else the OntapCluster's
//! defaults, within what the cluster allows. Compared with ONTAP's in [`super::plan_svm`].

use super::DesiredError;
use super::qos::Ceiling;
use crate::api::rules::quantity_bytes;
use crate::api::{ClusterAllowances, ClusterDefaults, SvmLimitsSpec};
use ontap_client::MaxVolumes;

/// The limits ONTAP is to enforce on an SVM. `None`: left as ONTAP has it (neither the object
/// nor the cluster sets it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DesiredLimits {
    pub max_volumes: Option<MaxVolumes>,
    /// Bytes; `Some(0)`: no limit.
    pub storage_limit: Option<u64>,
    /// Percent of `storage_limit`.
    pub storage_limit_threshold_alert: Option<u64>,
    /// The SVM's throughput ceiling; `None`: none, and the operator's QoS policy, if the SVM
    /// has one, goes.
    pub ceiling: Option<Ceiling>,
}

impl DesiredLimits {
    /// Whether the operator manages none of the limits.
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }

    /// Whether it asks for limits the SVM itself holds (all but the ceiling, a QoS policy's).
    pub fn sets_svm_limits(&self) -> bool {
        self.max_volumes.is_some() || self.wants_storage()
    }

    /// Whether it asks for the capacity limit, which ONTAP has from 9.13.1 on.
    pub fn wants_storage(&self) -> bool {
        self.storage_limit.is_some() || self.storage_limit_threshold_alert.is_some()
    }

    /// The same without the capacity limit: what a cluster before 9.13.1 can be given.
    pub fn without_storage(&self) -> Self {
        Self {
            max_volumes: self.max_volumes,
            ceiling: self.ceiling,
            ..Self::default()
        }
    }
}

/// The limits of an object with `own` limits on a cluster with `defaults` and `allowed`. A
/// field the object leaves out takes the default; where the cluster bounds a limit, a value
/// above the bound (a default the administrator set too high) is the bound, and an SVM with no
/// value gets the bound. An object's own value beyond the bound is refused before this, by
/// [`beyond_bounds`].
pub fn desired_limits(
    own: Option<&SvmLimitsSpec>,
    defaults: Option<&ClusterDefaults>,
    allowed: Option<&ClusterAllowances>,
) -> Result<DesiredLimits, DesiredError> {
    let default = defaults.and_then(|d| d.limits.as_ref());
    let max_volumes = own
        .and_then(|l| l.max_volumes)
        .or_else(|| default.and_then(|l| l.max_volumes));
    let volume_bound = allowed.and_then(|a| a.max_volumes);
    let max_volumes = match (max_volumes, volume_bound) {
        (None, None) => None,
        (Some(0), None) => Some(MaxVolumes::Unlimited),
        (Some(n), None) => Some(MaxVolumes::Limit(u64::from(n))),
        (Some(n), Some(bound)) if n != 0 => Some(MaxVolumes::Limit(u64::from(n.min(bound)))),
        (_, Some(bound)) => Some(MaxVolumes::Limit(u64::from(bound))),
    };
    let storage_limit = own
        .and_then(|l| l.storage_limit.as_deref())
        .map(|v| ("spec.limits", v))
        .or_else(|| {
            default
                .and_then(|l| l.storage_limit.as_deref())
                .map(|v| ("defaults.limits", v))
        })
        .map(|(at, value)| {
            quantity_bytes(value).ok_or_else(|| DesiredError::InvalidQuantity {
                field: format!("{at}.storageLimit"),
                value: value.to_owned(),
            })
        })
        .transpose()?;
    let storage_bound = allowed
        .and_then(|a| a.max_storage_limit.as_deref())
        .map(|value| {
            quantity_bytes(value).ok_or_else(|| DesiredError::InvalidQuantity {
                field: "allowed.maxStorageLimit".to_owned(),
                value: value.to_owned(),
            })
        })
        .transpose()?;
    let storage_limit = match (storage_limit, storage_bound) {
        (limit, None) => limit,
        (Some(limit), Some(bound)) if limit != 0 => Some(limit.min(bound)),
        (_, Some(bound)) => Some(bound),
    };
    let storage_limit_threshold_alert = own
        .and_then(|l| l.storage_limit_threshold_alert)
        .or_else(|| default.and_then(|l| l.storage_limit_threshold_alert))
        .map(u64::from);
    let iops = within(
        own.and_then(|l| l.max_throughput_iops)
            .or_else(|| default.and_then(|l| l.max_throughput_iops)),
        allowed.and_then(|a| a.max_throughput_iops),
    );
    let mbps = within(
        own.and_then(|l| l.max_throughput_mbps)
            .or_else(|| default.and_then(|l| l.max_throughput_mbps)),
        allowed.and_then(|a| a.max_throughput_mbps),
    );
    Ok(DesiredLimits {
        max_volumes,
        storage_limit,
        storage_limit_threshold_alert,
        ceiling: Ceiling::of(iops.unwrap_or(0), mbps.unwrap_or(0)),
    })
}

/// `asked` (`0`: none) within `bound`: the bound caps it, and is the value where none is asked.
fn within(asked: Option<u64>, bound: Option<u64>) -> Option<u64> {
    match (asked, bound) {
        (asked, None) => asked,
        (Some(asked), Some(bound)) if asked != 0 => Some(asked.min(bound)),
        (_, Some(bound)) => Some(bound),
    }
}

/// Why the object's own `limits` go beyond what the cluster allows, naming the field; `None`
/// when they do not.
pub fn beyond_bounds(
    own: Option<&SvmLimitsSpec>,
    allowed: &ClusterAllowances,
    cluster: &str,
) -> Option<String> {
    let own = own?;
    if let (Some(asked), Some(bound)) = (own.max_volumes, allowed.max_volumes)
        && (asked == 0 || asked > bound)
    {
        return Some(format!(
            "spec.limits.maxVolumes: the OntapCluster {cluster} allows at most {bound} volumes per SVM{}",
            if asked == 0 {
                ", and no SVM without a limit"
            } else {
                ""
            }
        ));
    }
    if let (Some(asked), Some(bound)) = (
        own.storage_limit.as_deref(),
        allowed.max_storage_limit.as_deref(),
    ) {
        let (asked_bytes, bound_bytes) = (quantity_bytes(asked), quantity_bytes(bound));
        if let (Some(asked_bytes), Some(bound_bytes)) = (asked_bytes, bound_bytes)
            && (asked_bytes == 0 || asked_bytes > bound_bytes)
        {
            return Some(format!(
                "spec.limits.storageLimit: the OntapCluster {cluster} allows at most {bound} per SVM{}",
                if asked_bytes == 0 {
                    ", and no SVM without a limit"
                } else {
                    ""
                }
            ));
        }
    }
    for (field, unit, asked, bound) in [
        (
            "maxThroughputIops",
            "IOPS",
            own.max_throughput_iops,
            allowed.max_throughput_iops,
        ),
        (
            "maxThroughputMbps",
            "MB/s",
            own.max_throughput_mbps,
            allowed.max_throughput_mbps,
        ),
    ] {
        if let (Some(asked), Some(bound)) = (asked, bound)
            && (asked == 0 || asked > bound)
        {
            return Some(format!(
                "spec.limits.{field}: the OntapCluster {cluster} allows at most {bound} {unit} per SVM{}",
                if asked == 0 {
                    ", and no SVM without a ceiling"
                } else {
                    ""
                }
            ));
        }
    }
    None
}

/// `bytes` the way a person reads a capacity: the largest binary unit it is a whole number
/// of, else one decimal place of it (`500Gi`, `1.5Ti`, `12345`).
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [(&str, u64); 5] = [
        ("Pi", 1 << 50),
        ("Ti", 1 << 40),
        ("Gi", 1 << 30),
        ("Mi", 1 << 20),
        ("Ki", 1 << 10),
    ];
    for (unit, size) in UNITS {
        if bytes >= size {
            return if bytes.is_multiple_of(size) {
                format!("{}{unit}", bytes / size)
            } else {
                #[allow(clippy::cast_precision_loss)]
                let value = bytes as f64 / size as f64;
                format!("{value:.1}{unit}")
            };
        }
    }
    bytes.to_string()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn spec(max_volumes: Option<u32>, storage: Option<&str>) -> SvmLimitsSpec {
        SvmLimitsSpec {
            max_volumes,
            storage_limit: storage.map(str::to_owned),
            ..SvmLimitsSpec::default()
        }
    }

    #[test]
    fn capacities_read_in_binary_units() {
        assert_eq!(human_bytes(500 << 30), "500Gi");
        assert_eq!(human_bytes(3 << 39), "1.5Ti");
        assert_eq!(human_bytes(1000), "1000");
    }

    #[test]
    fn the_objects_own_limits_override_the_clusters_defaults() {
        let defaults = ClusterDefaults {
            limits: Some(SvmLimitsSpec {
                max_volumes: Some(50),
                storage_limit: Some("1Ti".into()),
                storage_limit_threshold_alert: Some(80),
                ..SvmLimitsSpec::default()
            }),
            ..Default::default()
        };
        let own = spec(Some(10), None);
        let limits = desired_limits(Some(&own), Some(&defaults), None).unwrap();
        assert_eq!(limits.max_volumes, Some(MaxVolumes::Limit(10)));
        assert_eq!(limits.storage_limit, Some(1 << 40));
        assert_eq!(limits.storage_limit_threshold_alert, Some(80));
        let unlimited = desired_limits(Some(&spec(Some(0), Some("0"))), None, None).unwrap();
        assert_eq!(unlimited.max_volumes, Some(MaxVolumes::Unlimited));
        assert_eq!(unlimited.storage_limit, Some(0));
        assert!(desired_limits(None, None, None).unwrap().is_empty());
    }

    #[test]
    fn the_clusters_bounds_cap_and_refuse() {
        let allowed = ClusterAllowances {
            max_volumes: Some(100),
            max_storage_limit: Some("1Ti".into()),
            ..ClusterAllowances::default()
        };
        // Nothing asked: the bound is the limit.
        let bounded = desired_limits(None, None, Some(&allowed)).unwrap();
        assert_eq!(bounded.max_volumes, Some(MaxVolumes::Limit(100)));
        assert_eq!(bounded.storage_limit, Some(1 << 40));
        assert_eq!(
            beyond_bounds(Some(&spec(Some(100), Some("1Ti"))), &allowed, "lab"),
            None
        );
        let many = beyond_bounds(Some(&spec(Some(101), None)), &allowed, "lab").unwrap();
        assert!(many.starts_with("spec.limits.maxVolumes:"), "{many}");
        let cleared = beyond_bounds(Some(&spec(None, Some("0"))), &allowed, "lab").unwrap();
        assert!(
            cleared.starts_with("spec.limits.storageLimit:") && cleared.contains("without"),
            "{cleared}"
        );
        assert!(beyond_bounds(Some(&spec(None, Some("2Ti"))), &allowed, "lab").is_some());
    }

    #[test]
    fn a_ceiling_comes_from_the_object_the_default_or_the_bound() {
        let ceiling = |own: SvmLimitsSpec, default: SvmLimitsSpec, allowed: &ClusterAllowances| {
            let defaults = ClusterDefaults {
                limits: Some(default),
                ..Default::default()
            };
            desired_limits(Some(&own), Some(&defaults), Some(allowed))
                .unwrap()
                .ceiling
        };
        let iops = |n: u64| SvmLimitsSpec {
            max_throughput_iops: Some(n),
            ..SvmLimitsSpec::default()
        };
        let unbounded = ClusterAllowances::default();
        let none = SvmLimitsSpec::default();
        assert_eq!(ceiling(none.clone(), none.clone(), &unbounded), None);
        assert_eq!(ceiling(iops(0), iops(100), &unbounded), None, "0: none");
        assert_eq!(
            ceiling(none.clone(), iops(100), &unbounded),
            Ceiling::of(100, 0)
        );
        let bounded = ClusterAllowances {
            max_throughput_iops: Some(1000),
            ..ClusterAllowances::default()
        };
        assert_eq!(
            ceiling(none.clone(), none.clone(), &bounded),
            Ceiling::of(1000, 0)
        );
        assert_eq!(ceiling(iops(500), none, &bounded), Ceiling::of(500, 0));
        let mbps = SvmLimitsSpec {
            max_throughput_mbps: Some(200),
            ..SvmLimitsSpec::default()
        };
        assert_eq!(
            ceiling(mbps.clone(), iops(100), &bounded),
            Ceiling::of(100, 200)
        );
        assert_eq!(beyond_bounds(Some(&iops(1000)), &bounded, "lab"), None);
        assert_eq!(beyond_bounds(Some(&mbps), &bounded, "lab"), None);
        for asked in [0, 1001] {
            let why = beyond_bounds(Some(&iops(asked)), &bounded, "lab").unwrap();
            assert!(why.starts_with("spec.limits.maxThroughputIops:"), "{why}");
        }
    }
}

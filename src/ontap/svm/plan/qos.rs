//! The SVM's throughput ceiling: a fixed QoS policy the operator creates for the SVM and applies
//! to it (the SVM's `qos_policy`), and what differs from it in ONTAP ([`plan_qos`], the only
//! comparison, which the steady inventory path confirms through as well).
//!
//! ONTAP records no creator of a QoS policy. The operator's is known by its name, derived from
//! the SVM's uuid ([`qos_policy_name`]), and by belonging to that SVM: a policy of any other
//! name is never changed or deleted, and one of this name in another SVM is not the operator's.

use ontap_client::{ObjectRef, QosFixed, QosPolicy, QosPolicyCreate};

/// A throughput ceiling; `0` in a unit: none in that unit. At least one is set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ceiling {
    pub iops: u64,
    pub mbps: u64,
}

impl Ceiling {
    /// The ceiling of `iops` and `mbps`; `None` when both are `0`.
    pub fn of(iops: u64, mbps: u64) -> Option<Self> {
        (iops != 0 || mbps != 0).then_some(Self { iops, mbps })
    }

    /// As ONTAP's CLI writes a `-max-throughput`: `5000iops`, `200MB/s`, `5000iops,200MB/s`.
    pub fn summary(&self) -> String {
        match (self.iops, self.mbps) {
            (iops, 0) => format!("{iops}iops"),
            (0, mbps) => format!("{mbps}MB/s"),
            (iops, mbps) => format!("{iops}iops,{mbps}MB/s"),
        }
    }

    /// The ceiling a policy holds; `None`: none.
    pub fn held_by(policy: &QosPolicy) -> Option<Self> {
        let fixed = policy.fixed.unwrap_or_default();
        Self::of(
            fixed.max_throughput_iops.unwrap_or(0),
            fixed.max_throughput_mbps.unwrap_or(0),
        )
    }
}

/// The name of the operator's QoS policy for the SVM `svm_uuid`. ONTAP keys policies by name
/// across the cluster, and allows letters, digits, `_` and `-`, starting with a letter or digit,
/// at most 127 characters (`qos policy-group create`): a uuid is all of that, and no two SVMs
/// share one, also not an SVM deleted and made anew under its old name.
pub fn qos_policy_name(svm_uuid: &str) -> String {
    format!("ontap-operator-ceiling-{svm_uuid}")
}

/// What the SVM's ceiling calls for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QosAction {
    /// As wanted: the operator's policy holds the ceiling and the SVM applies it, or no ceiling
    /// is wanted and the operator has no policy for the SVM.
    Keep,
    /// Create the policy, then apply it to the SVM.
    Create(QosPolicyCreate),
    /// The operator's policy exists: set its limits (where `fixed`), apply it (where `apply`).
    Update {
        uuid: String,
        fixed: Option<QosFixed>,
        apply: bool,
    },
    /// No ceiling is wanted: delete the operator's policy (ONTAP removes it from the SVM).
    Remove { uuid: String },
    /// A policy of the operator's name belongs to another SVM: not the operator's to touch.
    NameTaken { owner: String },
}

/// Compares the SVM `svm_uuid`, applying the policy `applied`, and the policy of its
/// [`qos_policy_name`] found anywhere in the cluster (`named`), with the ceiling `wanted`.
pub fn plan_qos(
    wanted: Option<Ceiling>,
    svm_uuid: &str,
    applied: Option<&ObjectRef>,
    named: Option<&QosPolicy>,
) -> QosAction {
    let ours = named.filter(|p| p.svm.as_ref().and_then(|s| s.uuid.as_deref()) == Some(svm_uuid));
    match (wanted, named, ours) {
        (None, _, None) => QosAction::Keep,
        (None, _, Some(policy)) => QosAction::Remove {
            uuid: policy.uuid.clone(),
        },
        (Some(_), Some(foreign), None) => QosAction::NameTaken {
            owner: foreign
                .svm
                .as_ref()
                .and_then(|s| s.name.clone().or_else(|| s.uuid.clone()))
                .unwrap_or_default(),
        },
        (Some(ceiling), None, _) => QosAction::Create(QosPolicyCreate {
            name: qos_policy_name(svm_uuid),
            svm: ObjectRef::by_uuid(svm_uuid),
            // Shared: the ceiling holds for everything the SVM serves together.
            fixed: QosFixed {
                capacity_shared: Some(true),
                ..limits_of(ceiling, None)
            },
        }),
        (Some(ceiling), Some(_), Some(policy)) => {
            let held = policy.fixed.unwrap_or_default();
            let floor = held.min_throughput_iops.unwrap_or(0) != 0
                || held.min_throughput_mbps.unwrap_or(0) != 0;
            let fixed = (Ceiling::held_by(policy) != Some(ceiling) || floor)
                .then(|| limits_of(ceiling, floor.then_some(0)));
            let apply = applied.is_none_or(|a| match a.uuid.as_deref() {
                Some(uuid) => uuid != policy.uuid,
                None => a.name.as_deref() != Some(policy.name.as_str()),
            });
            if fixed.is_none() && !apply {
                QosAction::Keep
            } else {
                QosAction::Update {
                    uuid: policy.uuid.clone(),
                    fixed,
                    apply,
                }
            }
        }
    }
}

/// The fixed limits of `ceiling`, with the floors set to `floor` where given (a floor someone
/// added is taken out: ONTAP applies no policy with one to an SVM).
fn limits_of(ceiling: Ceiling, floor: Option<u64>) -> QosFixed {
    QosFixed {
        max_throughput_iops: Some(ceiling.iops),
        max_throughput_mbps: Some(ceiling.mbps),
        min_throughput_iops: floor,
        min_throughput_mbps: floor,
        capacity_shared: None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const SVM: &str = "5d8e7a10-0000-4000-8000-000000000001";

    fn policy(svm: &str, iops: u64, mbps: u64, min_iops: u64) -> QosPolicy {
        serde_json::from_value(serde_json::json!({
            "uuid": "p-1", "name": qos_policy_name(SVM),
            "svm": { "uuid": svm, "name": "svm_a" },
            "fixed": { "max_throughput_iops": iops, "max_throughput_mbps": mbps,
                       "min_throughput_iops": min_iops, "min_throughput_mbps": 0 },
        }))
        .unwrap()
    }

    #[test]
    fn the_name_keeps_ontaps_rules() {
        let name = qos_policy_name(SVM);
        assert!(name.len() <= 127);
        assert!(name.starts_with(|c: char| c.is_ascii_alphanumeric()));
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        );
    }

    #[test]
    fn a_ceiling_is_created_applied_and_repaired() {
        let wanted = Ceiling::of(5000, 0);
        let QosAction::Create(create) = plan_qos(wanted, SVM, None, None) else {
            panic!("a missing policy is created");
        };
        assert_eq!(create.name, qos_policy_name(SVM));
        assert_eq!(create.fixed.max_throughput_iops, Some(5000));
        assert_eq!(create.fixed.capacity_shared, Some(true));
        let ours = policy(SVM, 5000, 0, 0);
        let applied = ObjectRef::by_uuid("p-1");
        assert_eq!(
            plan_qos(wanted, SVM, Some(&applied), Some(&ours)),
            QosAction::Keep
        );
        // Not applied, or another policy applied: applied anew, the limits as they are.
        for applied in [None, Some(ObjectRef::by_uuid("other"))] {
            assert_eq!(
                plan_qos(wanted, SVM, applied.as_ref(), Some(&ours)),
                QosAction::Update {
                    uuid: "p-1".into(),
                    fixed: None,
                    apply: true
                }
            );
        }
        // Limits changed in ONTAP, or a floor added: set back.
        for drifted in [policy(SVM, 7000, 0, 0), policy(SVM, 5000, 0, 100)] {
            let QosAction::Update { fixed, apply, .. } =
                plan_qos(wanted, SVM, Some(&applied), Some(&drifted))
            else {
                panic!("{drifted:?} is set back");
            };
            assert!(!apply);
            assert_eq!(fixed.unwrap().max_throughput_iops, Some(5000));
        }
    }

    #[test]
    fn only_the_operators_own_policy_is_touched() {
        let foreign = policy("another-svm", 100, 0, 0);
        assert!(matches!(
            plan_qos(Ceiling::of(5000, 0), SVM, None, Some(&foreign)),
            QosAction::NameTaken { owner } if owner == "svm_a"
        ));
        assert_eq!(plan_qos(None, SVM, None, Some(&foreign)), QosAction::Keep);
        assert_eq!(
            plan_qos(None, SVM, None, Some(&policy(SVM, 5000, 0, 0))),
            QosAction::Remove { uuid: "p-1".into() }
        );
        assert_eq!(plan_qos(None, SVM, None, None), QosAction::Keep);
    }

    #[test]
    fn a_ceiling_reads_as_ontaps_cli_writes_it() {
        assert_eq!(Ceiling::of(5000, 0).unwrap().summary(), "5000iops");
        assert_eq!(Ceiling::of(0, 200).unwrap().summary(), "200MB/s");
        assert_eq!(
            Ceiling::of(5000, 200).unwrap().summary(),
            "5000iops,200MB/s"
        );
        assert_eq!(Ceiling::of(0, 0), None);
    }
}

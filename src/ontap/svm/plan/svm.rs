//! The SVM plan: the SVM an `Owned` object wants ([`desired_svm`]) and what differs from it in
//! the SVM ONTAP shows ([`plan_svm`]). The `SVMReady` step acts on the plan, and a steady pass
//! takes an SVM from the cluster's inventory only where the plan finds nothing to change, so a
//! property compared here is repaired on every pass, steady or not.

use kube::ResourceExt;

use super::{DesiredError, DesiredLimits};
use crate::api::{StorageVirtualMachine, SvmProtocols};
use crate::ontap::svm::authority::{Mark, Standing, svm_comment};
use ontap_client::{
    MaxVolumes, ObjectRef, Protocol, ProtocolState, Svm, SvmCreate, SvmLimits, SvmLimitsPatch,
    SvmState, SvmStorageLimit,
};

/// The SVM an `Owned` object wants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DesiredSvm {
    /// Its ONTAP name.
    pub name: String,
    pub ipspace: Option<String>,
    /// The aggregates the spec names; none: the cluster's, chosen when the SVM is created.
    pub aggregates: Vec<String>,
    pub protocols: SvmProtocols,
    /// Who the object is: what its mark records, and what decides whether it may take over an
    /// SVM marked otherwise.
    pub standing: Standing,
    /// The comment that carries its mark ([`svm_comment`]).
    pub comment: String,
    /// The limits ONTAP is to enforce ([`super::desired_limits`]).
    pub limits: DesiredLimits,
}

impl DesiredSvm {
    /// The body of `POST /api/svm/svms` creating this SVM. Every protocol is sent explicitly,
    /// enabled or not.
    pub fn create_request(&self) -> SvmCreate {
        SvmCreate {
            name: self.name.clone(),
            ipspace: self.ipspace.as_deref().map(ObjectRef::by_name),
            aggregates: self.aggregates.iter().map(ObjectRef::by_name).collect(),
            nfs: Some(ProtocolState {
                enabled: self.protocols.nfs,
            }),
            iscsi: Some(ProtocolState {
                enabled: self.protocols.iscsi,
            }),
            nvme: Some(ProtocolState {
                enabled: self.protocols.nvme,
            }),
            comment: Some(self.comment.clone()),
            language: None,
        }
    }
}

/// The SVM `svm`, of `standing`, wants under the ONTAP name `svm_name`.
pub fn desired_svm(
    svm: &StorageVirtualMachine,
    svm_name: &str,
    standing: &Standing,
    limits: DesiredLimits,
) -> Result<DesiredSvm, DesiredError> {
    // The mark names the object by its uid: without one, no SVM could be told to be its own.
    let uid = svm
        .uid()
        .filter(|uid| !uid.is_empty())
        .ok_or(DesiredError::MissingUid)?;
    let spec = &svm.spec;
    Ok(DesiredSvm {
        name: svm_name.to_string(),
        ipspace: spec.ipspace.clone(),
        aggregates: spec.aggregates.clone(),
        protocols: spec.protocols.clone(),
        standing: standing.clone(),
        comment: svm_comment(
            &uid,
            standing,
            &svm.namespace().unwrap_or_default(),
            &svm.name_any(),
        ),
        limits,
    })
}

/// What the state ONTAP reports for an SVM calls for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StateAction {
    /// Running, as wanted.
    Keep,
    /// No state reported, or one this client does not know: nothing to act on, and nothing
    /// that shows the SVM running either.
    Unconfirmed,
    /// ONTAP is initializing, starting or stopping it: look again once that is done.
    AwaitSettling,
    /// ONTAP is deleting it.
    AwaitDeletion,
    /// Stopped: start it.
    Start,
}

impl StateAction {
    fn of(state: Option<SvmState>) -> Self {
        match state {
            Some(SvmState::Running) => Self::Keep,
            Some(SvmState::Initializing | SvmState::Starting | SvmState::Stopping) => {
                Self::AwaitSettling
            }
            Some(SvmState::Deleting) => Self::AwaitDeletion,
            Some(SvmState::Stopped) => Self::Start,
            Some(SvmState::Unknown) | None => Self::Unconfirmed,
        }
    }
}

/// What differs between the SVM an object wants and the SVM ONTAP shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SvmPlan {
    /// Its mark is not the one the object writes: none, another object's, or this object's
    /// recording another standing. It is marked anew where the object may keep or adopt it.
    pub mark_anew: bool,
    pub state: StateAction,
    /// The protocols to switch on (`true`) or off, as [`protocol_changes`] orders them.
    pub protocols: Vec<(Protocol, bool)>,
    pub limits: LimitsAction,
}

impl SvmPlan {
    /// Whether the SVM is as wanted: nothing to change, nothing unconfirmed.
    pub fn is_empty(&self) -> bool {
        !self.mark_anew
            && self.state == StateAction::Keep
            && self.protocols.is_empty()
            && self.limits == LimitsAction::Keep
    }
}

/// What an SVM's limits call for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LimitsAction {
    /// As wanted, or none wanted.
    Keep,
    /// Limits are wanted and ONTAP's were not read: nothing confirms them.
    Unread,
    /// Set what differs.
    Set(SvmLimitsPatch),
}

/// Compares the SVM `found` in ONTAP, with its `limits` where they were read, with the one
/// `desired` describes. Which SVM `found` is (the one of the name, the one the status records)
/// is the caller's lookup; whether the object may act on it is
/// [`crate::ontap::svm::authority`]'s decision.
pub fn plan_svm(desired: &DesiredSvm, found: &Svm, limits: Option<&SvmLimits>) -> SvmPlan {
    SvmPlan {
        mark_anew: Mark::read(found.comment.as_deref()) != Mark::read(Some(&desired.comment)),
        state: StateAction::of(found.state),
        protocols: protocol_changes(&desired.protocols, found),
        limits: limit_changes(&desired.limits, limits),
    }
}

/// The limits to set so that `actual`'s match `desired`. ONTAP reports no `storage.limit`
/// while none is set, which is what a wanted `0` means; before 9.13.1 it reports no `storage`
/// at all, and a wanted capacity limit is then a change ONTAP will refuse, for the step to say.
fn limit_changes(desired: &DesiredLimits, actual: Option<&SvmLimits>) -> LimitsAction {
    // The ceiling is a QoS policy's, compared by `plan_qos`.
    if !desired.sets_svm_limits() {
        return LimitsAction::Keep;
    }
    let Some(actual) = actual else {
        return LimitsAction::Unread;
    };
    let max_volumes = desired
        .max_volumes
        .filter(|want| actual.max_volumes.unwrap_or(MaxVolumes::Unlimited) != *want);
    let storage = actual.storage.unwrap_or_default();
    let limit = desired
        .storage_limit
        .filter(|want| storage.limit.unwrap_or(0) != *want);
    let limit_threshold_alert = desired
        .storage_limit_threshold_alert
        .filter(|want| storage.limit_threshold_alert != Some(*want));
    let storage = (limit.is_some() || limit_threshold_alert.is_some()).then_some(SvmStorageLimit {
        limit,
        limit_threshold_alert,
    });
    if max_volumes.is_none() && storage.is_none() {
        return LimitsAction::Keep;
    }
    LimitsAction::Set(SvmLimitsPatch {
        max_volumes,
        storage,
        qos_policy: None,
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

    /// The SVM `base()`, a tenant's object without limits, wants.
    fn tenant_desired() -> DesiredSvm {
        desired_svm(
            &base(),
            "k8s_team-a_db",
            &Standing::Tenant,
            DesiredLimits::default(),
        )
        .unwrap()
    }

    /// The SVM ONTAP shows once `desired` was created as it asks.
    fn as_created(desired: &DesiredSvm) -> Svm {
        serde_json::from_value(serde_json::json!({
            "uuid": "u", "name": desired.name, "state": "running", "comment": desired.comment,
            "nfs": { "enabled": desired.protocols.nfs },
            "iscsi": { "enabled": desired.protocols.iscsi },
            "nvme": { "enabled": desired.protocols.nvme },
        }))
        .unwrap()
    }

    #[test]
    fn the_create_request() {
        let desired = tenant_desired();
        assert_eq!(
            serde_json::to_value(desired.create_request()).unwrap(),
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
            desired_svm(&unstored, "x", &Standing::Tenant, DesiredLimits::default()).unwrap_err(),
            DesiredError::MissingUid
        );
        unstored.metadata.uid = Some(String::new());
        assert_eq!(
            desired_svm(&unstored, "x", &Standing::Tenant, DesiredLimits::default()).unwrap_err(),
            DesiredError::MissingUid
        );
    }

    #[test]
    fn an_svm_as_created_is_as_wanted() {
        let desired = tenant_desired();
        let plan = plan_svm(&desired, &as_created(&desired), None);
        assert!(plan.is_empty(), "{plan:?}");
    }

    #[test]
    fn the_plan_finds_each_property_that_differs() {
        let desired = tenant_desired();
        let plan_of = |change: &dyn Fn(&mut Svm)| {
            let mut found = as_created(&desired);
            change(&mut found);
            plan_svm(&desired, &found, None)
        };
        let unmarked = plan_of(&|s| s.comment = None);
        assert!(unmarked.mark_anew && !unmarked.is_empty());
        // This object's uid, but another standing: the mark other seeds read is out of date.
        let project = Standing::Project {
            project: Some("p1".into()),
        };
        let restanding = plan_of(&|s| {
            s.comment = Some(svm_comment(UID, &project, "team-a", "db"));
        });
        assert!(restanding.mark_anew);
        let another =
            plan_of(&|s| s.comment = Some(svm_comment("other", &Standing::Tenant, "team-a", "db")));
        assert!(another.mark_anew);
        for (state, action) in [
            (Some(SvmState::Stopped), StateAction::Start),
            (Some(SvmState::Starting), StateAction::AwaitSettling),
            (Some(SvmState::Initializing), StateAction::AwaitSettling),
            (Some(SvmState::Stopping), StateAction::AwaitSettling),
            (Some(SvmState::Deleting), StateAction::AwaitDeletion),
            (Some(SvmState::Unknown), StateAction::Unconfirmed),
            (None, StateAction::Unconfirmed),
        ] {
            let plan = plan_of(&|s| s.state = state);
            assert_eq!(plan.state, action, "{state:?}");
            assert!(!plan.is_empty(), "{state:?}");
        }
        let iscsi = plan_of(&|s| s.iscsi = Some(ProtocolState { enabled: true }));
        assert_eq!(iscsi.protocols, [(Protocol::Iscsi, false)]);
        assert!(!iscsi.mark_anew && iscsi.state == StateAction::Keep && !iscsi.is_empty());
    }

    #[test]
    fn the_plan_sets_the_limits_that_differ() {
        let mut desired = tenant_desired();
        let found = as_created(&desired);
        let limits =
            |value: serde_json::Value| -> SvmLimits { serde_json::from_value(value).unwrap() };
        let unlimited = limits(serde_json::json!({
            "uuid": "u", "name": "n", "max_volumes": "unlimited",
            "storage": { "limit_threshold_alert": 90 },
        }));
        assert_eq!(plan_svm(&desired, &found, None).limits, LimitsAction::Keep);
        desired.limits = DesiredLimits {
            max_volumes: Some(MaxVolumes::Limit(10)),
            storage_limit: Some(1 << 30),
            storage_limit_threshold_alert: Some(90),
            ceiling: None,
        };
        assert_eq!(
            plan_svm(&desired, &found, None).limits,
            LimitsAction::Unread
        );
        let plan = plan_svm(&desired, &found, Some(&unlimited));
        assert!(!plan.is_empty());
        assert_eq!(
            plan.limits,
            LimitsAction::Set(SvmLimitsPatch {
                max_volumes: Some(MaxVolumes::Limit(10)),
                storage: Some(SvmStorageLimit {
                    limit: Some(1 << 30),
                    limit_threshold_alert: None,
                }),
                qos_policy: None,
            })
        );
        let as_set = limits(serde_json::json!({
            "uuid": "u", "name": "n", "max_volumes": "10",
            "storage": { "limit": 1u64 << 30, "limit_threshold_alert": 90, "allocated": 0 },
        }));
        assert!(plan_svm(&desired, &found, Some(&as_set)).is_empty());
        // A wanted 0 is ONTAP's "no limit", which it shows as no `storage.limit`.
        desired.limits.storage_limit = Some(0);
        desired.limits.max_volumes = Some(MaxVolumes::Unlimited);
        assert!(plan_svm(&desired, &found, Some(&unlimited)).is_empty());
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

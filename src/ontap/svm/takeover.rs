//! Whether the SVM a lookup found is this object's to keep, adopt or leave: an SVM is vsadmin
//! access to its data, so taking one over is decided from its ownership mark and the object's
//! own words, never inferred.

use kube::ResourceExt;

use crate::api::{ADOPT_SVM_UUID_ANNOTATION, StorageVirtualMachine};
use ontap_client::Svm;
use reconcile_engine::StepError;

use super::errors::{Conflict, Invalid};

/// Whether `svm` asks to take over `found` ([`ADOPT_SVM_UUID_ANNOTATION`]): named by uuid, so
/// another SVM created later under the same name is never taken by mistake.
pub(super) fn adopts(svm: &StorageVirtualMachine, found: &Svm) -> bool {
    svm.annotations().get(ADOPT_SVM_UUID_ANNOTATION) == Some(&found.uuid)
}

/// Whether an object annotated to adopt `annotated` asks to take over the SVM `found` now, having
/// recorded `recorded` as its SVM. Asked once: an object that held the SVM and finds it marked
/// for another lost it to a later adoption (two seeds' project objects asked for the same SVM
/// when switching from metal-stack); taking it back would make them take turns for ever.
pub fn asks_to_adopt(annotated: Option<&str>, found: &str, recorded: Option<&str>) -> bool {
    annotated == Some(found) && recorded != Some(found)
}

/// What an `Owned` object does with the SVM it found under its name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Takeover {
    /// Marked for this object: its own.
    Keep,
    /// Mark it for this object; nothing is recreated.
    Adopt,
    /// Marked for an object this operator cannot see (another seed's): leave it alone, and
    /// share it with this object's namespaces as its provider there would.
    ServeElsewhere,
    /// Leave it alone and report why.
    Refuse(Refusal),
}

/// Why an SVM of the object's name is not taken over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Marked for another object, and not asked for by uuid.
    MarkedForAnother,
    /// Asked for by uuid, but the object it is marked for still exists here: adoption is for
    /// SVMs whose object is gone (a restore on another seed), never a way to take one away.
    CreatorStillExists,
    /// Not created by the operator, and not asked for by uuid.
    Unmarked,
    /// Not created by the operator, asked for by uuid from a namespace that may not adopt.
    AdoptionNotAllowed,
    /// Released by its previous owner (a `Retain` delete, or a hand-over to `AccountOnly`) in
    /// another namespace: only that namespace (or the project namespace) may take it over.
    ReleasedElsewhere,
}

impl Refusal {
    /// The step error: a spec that cannot work is `invalid`; a creator that may still go away
    /// (a migration's old object being deleted) is a `conflict`, retried with backoff.
    pub fn error(self, svm: &str, namespace: &str) -> StepError {
        match self {
            Self::MarkedForAnother => Invalid::SvmNameInUse.error(format!(
                "the SVM {svm} in ONTAP belongs to another StorageVirtualMachine; set another spec.svmName"
            )),
            Self::CreatorStillExists => Conflict::SvmOwnedByAnother.error(format!(
                "the SVM {svm} is marked for another StorageVirtualMachine that still exists; it is adopted only once that object is gone"
            )),
            Self::Unmarked => Invalid::SvmNameInUse.error(format!(
                "an SVM named {svm} exists in ONTAP but was not created by this operator; it is not adopted — set another spec.svmName"
            )),
            Self::ReleasedElsewhere => Invalid::SvmNameInUse.error(format!(
                "the SVM {svm} was released by a StorageVirtualMachine of another namespace; only that namespace may take it over — set another spec.svmName"
            )),
            Self::AdoptionNotAllowed => Invalid::AdoptionNotAllowed.error(format!(
                "the SVM {svm} was not created by this operator; adopting it ({ADOPT_SVM_UUID_ANNOTATION}) gives vsadmin access to everything on it, which only objects of the operator's project namespace may ask for, not those of {namespace}"
            )),
        }
    }
}

/// The decision on an SVM marked for another object (`Foreign`): taken over when its creator
/// handed it over, or when asked for by uuid and the creator is gone — either only from where
/// the previous owner allowed (`from_owner`: its own namespace, or the extension's project
/// namespace); served as it is when its creator is out of sight and the object may stand in
/// for it (`stand_in`: the extension's project namespace) — never marked back and forth
/// between seeds.
pub fn takeover_marked(
    asks: bool,
    handed_over: bool,
    creator_alive: bool,
    stand_in: bool,
    from_owner: bool,
) -> Takeover {
    match (handed_over, asks, creator_alive, stand_in) {
        (true, _, _, _) | (false, true, false, _) if !from_owner => {
            Takeover::Refuse(Refusal::ReleasedElsewhere)
        }
        (true, _, _, _) => Takeover::Adopt,
        (false, true, false, _) => Takeover::Adopt,
        (false, true, true, _) => Takeover::Refuse(Refusal::CreatorStillExists),
        (false, false, false, true) => Takeover::ServeElsewhere,
        (false, false, _, _) => Takeover::Refuse(Refusal::MarkedForAnother),
    }
}

/// The decision on an SVM the operator did not create: adopted only when asked for by uuid
/// from a namespace that may adopt (the project namespace: see `is_project_namespace`).
pub fn takeover_unmarked(asks: bool, may_adopt: bool) -> Takeover {
    match (asks, may_adopt) {
        (true, true) => Takeover::Adopt,
        (true, false) => Takeover::Refuse(Refusal::AdoptionNotAllowed),
        (false, _) => Takeover::Refuse(Refusal::Unmarked),
    }
}

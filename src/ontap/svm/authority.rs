//! The one place that decides whether a StorageVirtualMachine may act on something in ONTAP.
//!
//! An SVM is vsadmin access to its data, so no right here follows from anything a tenant or a
//! shoot owner can write or arrange: an SVM name, an annotation, a label on their own object,
//! being first. A right comes from
//! - the object's [`Standing`], which only an administrator or gardenlet can give it (the
//!   extension's project namespace; a shoot namespace gardenlet labelled, with the Gardener
//!   project the extension recorded on the object);
//! - the [`Mark`] the operator wrote into ONTAP when it created or took over the SVM, which
//!   records the owning object and, for Gardener's objects, the Gardener project — seeds sharing
//!   one ONTAP agree because they read the same mark, and SVM administrators cannot change an
//!   SVM's comment (only cluster administrators modify SVMs);
//! - a grant given on both sides: a consumer names its provider, and the provider's `shareWith`
//!   admits the consumer's namespace; an owner hands its SVM over by naming the new provider.
//!
//! Every function here is pure; the steps gather the facts and act on the verdict.

use super::errors::{Conflict, Invalid};
use crate::api::{ADOPT_SVM_UUID_ANNOTATION, is_metal_stack_svm_name};
use reconcile_engine::StepError;

/// Start of the mark the operator writes into the comment of every SVM it creates or takes
/// over, and of every account it creates.
pub const MARKER: &str = "ontap-operator:uid=";
/// ONTAP's limit on SVM comments.
const COMMENT_MAX: usize = 255;

/// Who an object is, as only an administrator or gardenlet can make it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Standing {
    /// An object of a namespace tenants write to.
    Tenant,
    /// The extension's object for a shoot, in a namespace gardenlet labelled as a shoot's, of
    /// the Gardener project the extension recorded on it (`None`: not recorded yet), and of the
    /// shoot whose uid in the garden it recorded: the same on every seed the shoot's control
    /// plane moves to, which is what lets the shoot's next object take its SVM and account back
    /// without any state carried over (gardenlet may take the ShootState before a migration
    /// saved ours).
    Shoot {
        project: Option<String>,
        shoot: Option<String>,
    },
    /// The extension's object for a metal-stack project's SVM, in the project namespace, bound
    /// to a Gardener project (`None`: not bound yet).
    Project { project: Option<String> },
}

/// Whose an object or a mark is: the party a tenant boundary separates.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Party {
    /// A tenant: everything of one namespace tenants write to.
    Namespace(String),
    /// A Gardener project: its shoots' objects and its project objects.
    Gardener(String),
    /// A Gardener object whose project is not known: it shares nothing with anyone.
    Unknown,
}

impl Standing {
    /// The party of an object of `namespace` with this standing.
    pub fn party(&self, namespace: &str) -> Party {
        match self {
            Self::Tenant => Party::Namespace(namespace.to_owned()),
            Self::Shoot {
                project: Some(p), ..
            }
            | Self::Project { project: Some(p) } => Party::Gardener(p.clone()),
            Self::Shoot { project: None, .. } | Self::Project { project: None } => Party::Unknown,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The mark in ONTAP

/// What the comment of an SVM in ONTAP says about the object it belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mark {
    /// The owning object's uid: the one object that manages the SVM.
    pub uid: String,
    /// The owning object's standing when it marked the SVM. A mark without one (written before
    /// marks recorded it, or a tenant's) counts as a tenant's.
    pub standing: Standing,
    /// The owning object's namespace, `None` where the comment was cut before it.
    pub namespace: Option<String>,
}

impl Mark {
    /// The party the SVM belongs to.
    pub fn party(&self) -> Party {
        match (&self.standing, &self.namespace) {
            (Standing::Tenant, Some(namespace)) => Party::Namespace(namespace.clone()),
            (Standing::Tenant, None) => Party::Unknown,
            (standing, _) => standing.party(""),
        }
    }

    /// Reads the mark of a comment; `None`: the SVM carries none (the operator did not make it).
    pub fn read(comment: Option<&str>) -> Option<Self> {
        let (_, rest) = comment?.split_once(MARKER)?;
        let mut words = rest.split(' ');
        let uid = words.next().filter(|u| !u.is_empty())?.to_owned();
        let mut standing = Standing::Tenant;
        let mut namespace = None;
        while let Some(word) = words.next() {
            if let Some(p) = word.strip_prefix("project=") {
                standing = Standing::Project {
                    project: Some(p.to_owned()),
                };
            } else if let Some(p) = word.strip_prefix("shoot=") {
                let shoot = match standing {
                    Standing::Shoot { shoot, .. } => shoot,
                    _ => None,
                };
                standing = Standing::Shoot {
                    project: Some(p.to_owned()),
                    shoot,
                };
            } else if let Some(uid) = word.strip_prefix("shoot-uid=") {
                let project = match standing {
                    Standing::Shoot { project, .. } => project,
                    _ => None,
                };
                standing = Standing::Shoot {
                    project,
                    shoot: Some(uid.to_owned()),
                };
            } else if word == "StorageVirtualMachine" {
                namespace = words
                    .next()
                    .and_then(|described| described.split_once('/'))
                    .filter(|(ns, name)| !ns.is_empty() && !name.is_empty())
                    .map(|(ns, _)| ns.to_owned());
                break;
            }
        }
        Some(Self {
            uid,
            standing,
            namespace,
        })
    }
}

/// The comment of an SVM owned by the object `uid` (`namespace/name`) with `standing`. The
/// Gardener project comes before the names, so that cutting the comment to ONTAP's 255
/// characters never loses it; the names follow for people reading ONTAP.
pub fn svm_comment(uid: &str, standing: &Standing, namespace: &str, name: &str) -> String {
    let standing = standing_words(standing);
    let mut comment = format!("{MARKER}{uid}{standing} StorageVirtualMachine {namespace}/{name}");
    if comment.len() > COMMENT_MAX {
        // Kubernetes names are ASCII; stay on a character boundary for anything else.
        let mut end = COMMENT_MAX;
        while !comment.is_char_boundary(end) {
            end -= 1;
        }
        comment.truncate(end);
    }
    comment
}

/// What a mark records of the marking object's standing, before any name, so that cutting a
/// comment at ONTAP's limit never loses it.
fn standing_words(standing: &Standing) -> String {
    match standing {
        Standing::Tenant | Standing::Project { project: None } => String::new(),
        Standing::Project { project: Some(p) } => format!(" project={p}"),
        Standing::Shoot { project, shoot } => {
            let project = project
                .as_ref()
                .map(|p| format!(" shoot={p}"))
                .unwrap_or_default();
            let shoot = shoot
                .as_ref()
                .map(|s| format!(" shoot-uid={s}"))
                .unwrap_or_default();
            format!("{project}{shoot}")
        }
    }
}

/// The comment of an account created for the object `uid` of `standing`: the marker, which is
/// what lets cleanup, a lock or a new password touch the account at all, and for a shoot's
/// object the shoot it serves, which lets the shoot's object on another seed take it back.
pub fn account_comment(uid: &str, standing: &Standing) -> String {
    format!("{MARKER}{uid}{}", standing_words(standing))
}

/// Whether the comment of an account or SVM marks it as the object `uid`'s.
pub fn marked_for(comment: Option<&str>, uid: &str) -> bool {
    Mark::read(comment).is_some_and(|m| m.uid == uid)
}

// ---------------------------------------------------------------------------------------------
// The facts a decision reads

/// The object that wants to act.
#[derive(Clone, Debug)]
pub struct Actor<'a> {
    pub uid: &'a str,
    pub namespace: &'a str,
    pub standing: &'a Standing,
    /// The SVM name it provisions or uses: for a project object, whether it has metal-stack's
    /// shape decides whether it may serve an SVM it did not create.
    pub svm_name: &'a str,
}

impl Actor<'_> {
    fn party(&self) -> Party {
        self.standing.party(self.namespace)
    }

    /// Whether `mark` was written for an object of the very shoot this object serves, of the
    /// same Gardener project: the shoot's object on the seed it came from. Both the shoot's uid
    /// and its project come from gardenlet (the shoot's `Cluster`), never from its owner.
    fn same_shoot(&self, mark: &Mark) -> bool {
        match (self.standing, &mark.standing) {
            (
                Standing::Shoot {
                    project: Some(project),
                    shoot: Some(shoot),
                },
                Standing::Shoot {
                    project: Some(marked_project),
                    shoot: Some(marked_shoot),
                },
            ) => project == marked_project && shoot == marked_shoot,
            _ => false,
        }
    }

    /// Whether the SVM `mark` names belongs to this object's own party, so that this object may
    /// take it over once its owner let go of it. A Gardener object's party needs its project
    /// known on both sides; a tenant's, its namespace. A project object, moreover, only for an
    /// SVM named as metal-stack names a project's (`p` and 32 hex digits).
    fn same_party(&self, mark: &Mark) -> bool {
        let party = self.party();
        if party == Party::Unknown || party != mark.party() {
            return false;
        }
        match self.standing {
            Standing::Project { .. } => is_metal_stack_svm_name(self.svm_name),
            // The shoots of one Gardener project are one party (its members edit them all); the
            // SVM to take over comes from gardenlet's state, which no shoot owner writes.
            Standing::Shoot { .. } | Standing::Tenant => true,
        }
    }
}

/// Whether an object annotated to adopt `annotated` asks to take over the SVM `found` now, having
/// recorded `recorded` as its SVM: named by uuid, so another SVM created later under the same
/// name is never taken by mistake. Asked once: an object that held the SVM and finds it marked
/// for another lost it to a later adoption (two seeds' project objects asked for the same SVM
/// when switching from metal-stack); taking it back would make them take turns for ever.
pub fn asks_to_adopt(annotated: Option<&str>, found: &str, recorded: Option<&str>) -> bool {
    annotated == Some(found) && recorded != Some(found)
}

/// What the object whose uid an SVM's mark holds is, in this operator's view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Creator {
    /// No object here has that uid: deleted (`Retain`), or another seed's.
    Absent,
    /// It exists here and keeps the SVM.
    Keeps,
    /// It exists here as an `AccountOnly` object naming the actor as its provider: it hands its
    /// SVM over to the actor, by its own word.
    HandsOverToActor,
}

// ---------------------------------------------------------------------------------------------
// Verdicts

/// What an `Owned` object does with the SVM it found under its name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Takeover {
    /// Marked for this object: its own.
    Keep,
    /// Mark it for this object; nothing is recreated.
    Adopt,
    /// A project SVM marked for another seed's project object of the same Gardener project:
    /// leave it alone, and share it with this object's consumers as its owner there does.
    ServeElsewhere,
    /// Leave it alone and report why.
    Refuse(Refusal),
}

/// Why an action is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The SVM is marked for another object, and not asked for by uuid.
    MarkedForAnother,
    /// Asked for by uuid, but the object it is marked for still exists here: adoption is for
    /// SVMs whose object is gone (a restore on another seed), never a way to take one away.
    CreatorStillExists,
    /// Not created by the operator, and not asked for by uuid.
    Unmarked,
    /// Not created by the operator, asked for by uuid by an object that may not adopt.
    AdoptionNotAllowed,
    /// Released by, or handed over from, an object of another party.
    ReleasedElsewhere,
    /// The provider the consumer names does not share its SVM with the consumer's namespace.
    NotShared,
    /// The SVM in ONTAP is not the named provider's.
    NotTheProvidersSvm,
    /// The named provider does not provision the SVM the consumer names.
    ProviderMismatch,
    /// An account of the name exists that was not created for this object.
    AccountNotOurs,
}

impl Refusal {
    /// The step error: a spec that cannot work is `invalid`; a creator that may still go away
    /// (a migration's old object being deleted) is a `conflict`, retried with backoff. No
    /// message names another party's object.
    pub fn error(self, svm: &str, account: &str) -> StepError {
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
                "the SVM {svm} was let go by a StorageVirtualMachine of another tenant or Gardener project; it is not taken over — set another spec.svmName"
            )),
            Self::AdoptionNotAllowed => Invalid::AdoptionNotAllowed.error(format!(
                "the SVM {svm} was not created by this operator; adopting it ({ADOPT_SVM_UUID_ANNOTATION}) gives vsadmin access to everything on it, which only objects of the operator's project namespace may ask for"
            )),
            Self::NotShared => Invalid::SvmNotShared.error(format!(
                "the StorageVirtualMachine named in spec.provider does not share the SVM {svm} with this namespace (its spec.shareWith does not admit it)"
            )),
            Self::NotTheProvidersSvm => Invalid::SvmNotShared.error(format!(
                "the SVM {svm} in ONTAP is not the one the StorageVirtualMachine named in spec.provider provisions; no account is made on it"
            )),
            Self::ProviderMismatch => Invalid::ProviderMismatch.error(format!(
                "the StorageVirtualMachine named in spec.provider does not provision the SVM {svm} on this object's ONTAP cluster: spec.svmName must be its provider's SVM"
            )),
            Self::AccountNotOurs => Invalid::AccountNotOurs.error(format!(
                "an account {account} exists on the SVM {svm} that was not created for this StorageVirtualMachine; it is left as it is (no unlock, password or delete) — choose another spec.account.name"
            )),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The decisions

/// Whether `actor`, an `Owned` object, keeps, adopts, serves or leaves the SVM it found under
/// its name, marked `mark` (`None`: by no one), whose marking object here is `creator`;
/// `asks`: it names that SVM's uuid in its adopt annotation (and did not hold it before).
///
/// - Its own mark: kept.
/// - Unmarked: adopted only when asked for by uuid by a project object — an administrator's
///   request, made where tenants cannot write.
/// - Marked for an object that hands it over to the actor (that object's own word), or for one
///   gone and asked for by uuid: adopted when the mark is of the actor's own party.
/// - Marked for another seed's project object of the actor's Gardener project: served as it is.
/// - Marked for the object of the actor's own shoot, gone from here (the shoot moved seeds):
///   adopted, asked or not — it is the shoot's, whatever state gardenlet carried over.
pub fn decide_svm(
    actor: &Actor<'_>,
    mark: Option<&Mark>,
    creator: Creator,
    asks: bool,
) -> Takeover {
    let Some(mark) = mark else {
        return match (asks, actor.standing) {
            (true, Standing::Project { .. }) if is_metal_stack_svm_name(actor.svm_name) => {
                Takeover::Adopt
            }
            (true, _) => Takeover::Refuse(Refusal::AdoptionNotAllowed),
            (false, _) => Takeover::Refuse(Refusal::Unmarked),
        };
    };
    if mark.uid == actor.uid {
        return Takeover::Keep;
    }
    if actor.same_shoot(mark) {
        return match creator {
            Creator::Keeps => Takeover::Refuse(Refusal::CreatorStillExists),
            Creator::Absent | Creator::HandsOverToActor => Takeover::Adopt,
        };
    }
    let same_party = actor.same_party(mark);
    match creator {
        Creator::HandsOverToActor if same_party => Takeover::Adopt,
        Creator::HandsOverToActor => Takeover::Refuse(Refusal::ReleasedElsewhere),
        Creator::Keeps if asks => Takeover::Refuse(Refusal::CreatorStillExists),
        Creator::Keeps => Takeover::Refuse(Refusal::MarkedForAnother),
        Creator::Absent if asks && same_party => Takeover::Adopt,
        Creator::Absent if asks => Takeover::Refuse(Refusal::ReleasedElsewhere),
        Creator::Absent
            if same_party
                && matches!(actor.standing, Standing::Project { .. })
                && matches!(mark.standing, Standing::Project { .. }) =>
        {
            Takeover::ServeElsewhere
        }
        Creator::Absent => Takeover::Refuse(Refusal::MarkedForAnother),
    }
}

/// What a consumer (an `AccountOnly` object) knows of the provider its `spec.provider` names.
#[derive(Clone, Debug)]
pub struct Provider<'a> {
    pub uid: &'a str,
    pub namespace: &'a str,
    pub standing: Standing,
    pub svm_name: &'a str,
    /// It is `Owned`, on the consumer's ONTAP cluster, and provisions the SVM the consumer names.
    pub provisions: bool,
    /// Its `shareWith` admits the consumer's namespace (its own namespace always is).
    pub shares: bool,
    /// Its own namespace may use the cluster: a refused provider shares nothing.
    pub admitted: bool,
    /// Being deleted: it takes no new users, but for a project object (which keeps its SVM for
    /// other seeds' shoots, and must not keep a shoot arriving meanwhile waiting for that).
    pub deleting: bool,
}

/// The verdict on a consumer's use of its provider's SVM.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Share {
    /// The consumer may have its account on the SVM.
    Allow,
    /// Not decided yet: the provider is declared, marks or hands the SVM over meanwhile.
    Wait(ShareWait),
    Refuse(Refusal),
}

/// Why a consumer waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShareWait {
    /// No provider of that name exists (yet), or it is being deleted.
    NoProvider,
    /// The SVM carries no mark yet: its provider is about to adopt it.
    Unmarked,
    /// The SVM is being handed over to the provider by the object that marked it.
    ChangingHands,
}

/// Whether a consumer may have its account on the SVM marked `mark`, which its named `provider`
/// provisions (`None`: no such object). Two-sided: the consumer named the provider, the
/// provider shares with the consumer's namespace; and the SVM in ONTAP must be the provider's:
/// marked for it, or — for a project object standing in for another seed's — marked for a
/// project object of the same Gardener project.
pub fn decide_share(
    provider: Option<&Provider<'_>>,
    mark: Option<&Mark>,
    creator: Creator,
) -> Share {
    let Some(provider) = provider else {
        return Share::Wait(ShareWait::NoProvider);
    };
    if provider.deleting && !matches!(provider.standing, Standing::Project { .. }) {
        return Share::Wait(ShareWait::NoProvider);
    }
    if !provider.provisions {
        return Share::Refuse(Refusal::ProviderMismatch);
    }
    if !(provider.shares && provider.admitted) {
        return Share::Refuse(Refusal::NotShared);
    }
    let Some(mark) = mark else {
        return Share::Wait(ShareWait::Unmarked);
    };
    if mark.uid == provider.uid {
        return Share::Allow;
    }
    let actor = Actor {
        uid: provider.uid,
        namespace: provider.namespace,
        standing: &provider.standing,
        svm_name: provider.svm_name,
    };
    match decide_svm(&actor, Some(mark), creator, false) {
        Takeover::ServeElsewhere => Share::Allow,
        Takeover::Adopt => Share::Wait(ShareWait::ChangingHands),
        Takeover::Keep | Takeover::Refuse(_) => Share::Refuse(Refusal::NotTheProvidersSvm),
    }
}

/// How an object may treat an account of its name on an SVM it may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccountRight {
    /// Created for it: it unlocks, re-passwords, grants and deletes it.
    Ours,
    /// Taken over with the SVM the object asked for by uuid: marked for it once its password
    /// is proven.
    Adopt,
    /// Created for the object of the same shoot on the seed the shoot came from: marked for
    /// this object at once, then its own (a lost password is replaced, as for its own).
    Moved,
}

/// Whether `actor` may manage the account marked `account_mark` (`None`: unmarked) on the SVM
/// marked `svm_mark`. Its own account, always; the account of its own shoot's object on the seed
/// the shoot came from; another's only when the actor asked for that SVM by uuid (a restore, a
/// switch from metal-stack), is one of Gardener's objects, and the SVM is of its own Gardener
/// project — never a tenant's, whose accounts are other tenants'.
pub fn decide_account(
    actor: &Actor<'_>,
    account_mark: Option<&Mark>,
    svm_mark: Option<&Mark>,
    asks: bool,
) -> Result<AccountRight, Refusal> {
    if account_mark.is_some_and(|m| m.uid == actor.uid) {
        return Ok(AccountRight::Ours);
    }
    if account_mark.is_some_and(|m| actor.same_shoot(m)) {
        return Ok(AccountRight::Moved);
    }
    let gardener = matches!(
        (actor.standing, actor.party()),
        (
            Standing::Shoot { .. } | Standing::Project { .. },
            Party::Gardener(_)
        )
    );
    let svm_of_party = svm_mark.is_some_and(|m| m.party() == actor.party());
    if asks && gardener && svm_of_party {
        return Ok(AccountRight::Adopt);
    }
    Err(Refusal::AccountNotOurs)
}

/// Whether `actor` may change the SVM marked `mark` — its LIFs, protocols, state — or delete
/// it: only the object the mark names (an adoption marks it first).
pub fn may_manage(actor_uid: &str, mark: Option<&Mark>) -> bool {
    mark.is_some_and(|m| m.uid == actor_uid)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;

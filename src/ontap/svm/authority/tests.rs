use proptest::prelude::*;

use super::*;

const METAL_SVM: &str = "p0b1f9c3eaaaabbbbcccc123456789abc";
const OTHER_METAL_SVM: &str = "p5d7e9a1b2c3d4e5f8a9b0c1d2e3f4a5b";

fn project(p: &str) -> Standing {
    Standing::Project {
        project: Some(p.into()),
    }
}

/// A shoot of project `p`; every shoot here but the attacker's is the same one.
fn shoot(p: &str) -> Standing {
    shoot_of(p, "shoot-1")
}

fn shoot_of(p: &str, uid: &str) -> Standing {
    Standing::Shoot {
        project: Some(p.into()),
        shoot: Some(uid.into()),
    }
}

fn account(uid: &str, standing: &Standing) -> Mark {
    Mark::read(Some(&account_comment(uid, standing))).unwrap()
}

fn mark(uid: &str, standing: Standing, namespace: &str) -> Mark {
    Mark::read(Some(&svm_comment(uid, &standing, namespace, "x"))).unwrap()
}

fn actor<'a>(uid: &'a str, namespace: &'a str, standing: &'a Standing, svm: &'a str) -> Actor<'a> {
    Actor {
        uid,
        namespace,
        standing,
        svm_name: svm,
    }
}

#[test]
fn marks_read_back_what_they_record() {
    let m = mark("u1", project("garden-a"), "ops");
    assert_eq!(m.uid, "u1");
    assert_eq!(m.standing, project("garden-a"));
    assert_eq!(m.party(), Party::Gardener("garden-a".into()));
    let m = mark("u2", Standing::Tenant, "team-a");
    assert_eq!(m.party(), Party::Namespace("team-a".into()));
    // Written before marks recorded a standing: a tenant's of its namespace.
    let legacy = Mark::read(Some("ontap-operator:uid=u3 StorageVirtualMachine ops/p")).unwrap();
    assert_eq!(legacy.standing, Standing::Tenant);
    assert_eq!(legacy.namespace.as_deref(), Some("ops"));
    assert_eq!(Mark::read(Some("made by hand")), None);
    assert_eq!(Mark::read(None), None);
    // Cut to ONTAP's 255 characters: the project survives, the names may not.
    let long = svm_comment(
        "0b1f9c3e-aaaa-bbbb-cccc-123456789abc",
        &project("garden-abcdefghij"),
        &"n".repeat(63),
        &"o".repeat(253),
    );
    assert_eq!(long.len(), 255);
    assert_eq!(
        Mark::read(Some(&long)).unwrap().party(),
        Party::Gardener("garden-abcdefghij".into())
    );
}

#[test]
fn only_the_marked_uid_counts() {
    let uid = "9b2e8c1a-0000-4000-8000-000000000002";
    let comment = svm_comment(uid, &Standing::Tenant, "team-a", "db");
    assert!(marked_for(Some(&comment), uid));
    assert!(!marked_for(Some(&comment), "other"));
    assert!(marked_for(
        Some(&account_comment(uid, &Standing::Tenant)),
        uid
    ));
    assert!(!marked_for(None, uid));
    assert!(!marked_for(Some("made by hand"), uid));
    assert!(!marked_for(Some(MARKER), uid));
    // An admin may prepend a note; the marker still counts.
    assert!(marked_for(Some(&format!("prod! {comment}")), uid));
    // A uid that merely starts like ours is someone else's.
    assert!(!marked_for(Some(&format!("{MARKER}{uid}x")), uid));
}

#[test]
fn an_unmarked_svm_is_adopted_only_by_a_project_object_asked_to() {
    let p = project("garden-a");
    assert_eq!(
        decide_svm(
            &actor("u", "ops", &p, METAL_SVM),
            None,
            Creator::Absent,
            true
        ),
        Takeover::Adopt
    );
    assert_eq!(
        decide_svm(
            &actor("u", "ops", &p, "payroll"),
            None,
            Creator::Absent,
            true
        ),
        Takeover::Refuse(Refusal::AdoptionNotAllowed),
        "a project object whose SVM name is not metal-stack's serves nothing it did not create"
    );
    for standing in [Standing::Tenant, shoot("garden-a")] {
        assert_eq!(
            decide_svm(
                &actor("u", "ns", &standing, METAL_SVM),
                None,
                Creator::Absent,
                true
            ),
            Takeover::Refuse(Refusal::AdoptionNotAllowed)
        );
    }
    assert_eq!(
        decide_svm(
            &actor("u", "ops", &p, METAL_SVM),
            None,
            Creator::Absent,
            false
        ),
        Takeover::Refuse(Refusal::Unmarked)
    );
}

#[test]
fn marked_svms_change_hands_only_within_their_party() {
    let a = project("garden-a");
    let by_a = mark("old", project("garden-a"), "ops");
    let by_b = mark("old", project("garden-b"), "ops");
    let me = actor("new", "ops", &a, METAL_SVM);
    assert_eq!(
        decide_svm(&me, Some(&by_a), Creator::Absent, false),
        Takeover::ServeElsewhere
    );
    assert_eq!(
        decide_svm(&me, Some(&by_a), Creator::Absent, true),
        Takeover::Adopt
    );
    assert_eq!(
        decide_svm(&me, Some(&by_b), Creator::Absent, false),
        Takeover::Refuse(Refusal::MarkedForAnother),
        "another seed's project object of another Gardener project"
    );
    assert_eq!(
        decide_svm(&me, Some(&by_b), Creator::Absent, true),
        Takeover::Refuse(Refusal::ReleasedElsewhere)
    );
    assert_eq!(
        decide_svm(&me, Some(&by_a), Creator::Keeps, true),
        Takeover::Refuse(Refusal::CreatorStillExists)
    );
    // A shoot's own SVM handed over to its project's object.
    let shoots = mark("shoot-uid", shoot("garden-a"), "shoot--a--web");
    assert_eq!(
        decide_svm(&me, Some(&shoots), Creator::HandsOverToActor, false),
        Takeover::Adopt
    );
    // A tenant's SVM, retained or handed over, is never a project object's.
    let tenants = mark("t", Standing::Tenant, "team-a");
    for creator in [Creator::Absent, Creator::HandsOverToActor] {
        for asks in [false, true] {
            assert!(matches!(
                decide_svm(&me, Some(&tenants), creator, asks),
                Takeover::Refuse(_)
            ));
        }
    }
    // Within a tenant's namespace a retained SVM is taken over again by uuid.
    let tenant = Standing::Tenant;
    assert_eq!(
        decide_svm(
            &actor("t2", "team-a", &tenant, "db"),
            Some(&tenants),
            Creator::Absent,
            true
        ),
        Takeover::Adopt
    );
    assert_eq!(
        decide_svm(
            &actor("t2", "team-b", &tenant, "db"),
            Some(&tenants),
            Creator::Absent,
            true
        ),
        Takeover::Refuse(Refusal::ReleasedElsewhere)
    );
    // A restored shoot adopts the SVM gardenlet's state names, if its project's; never
    // another project's.
    let s = shoot("garden-a");
    assert_eq!(
        decide_svm(
            &actor("s2", "shoot--a--web", &s, "k8s"),
            Some(&shoots),
            Creator::Absent,
            true
        ),
        Takeover::Adopt
    );
    let other = shoot("garden-b");
    assert_eq!(
        decide_svm(
            &actor("s2", "shoot--b--web", &other, "k8s"),
            Some(&shoots),
            Creator::Absent,
            true
        ),
        Takeover::Refuse(Refusal::ReleasedElsewhere)
    );
}

#[test]
fn a_consumer_uses_only_its_named_providers_svm() {
    let a = project("garden-a");
    let provider = Provider {
        uid: "prov",
        namespace: "ops",
        standing: a,
        svm_name: METAL_SVM,
        provisions: true,
        shares: true,
        admitted: true,
        deleting: false,
    };
    let own = mark("prov", project("garden-a"), "ops");
    assert_eq!(
        decide_share(Some(&provider), Some(&own), Creator::Keeps),
        Share::Allow
    );
    assert_eq!(
        decide_share(None, Some(&own), Creator::Keeps),
        Share::Wait(ShareWait::NoProvider)
    );
    let other_seed = mark("far", project("garden-a"), "ops");
    assert_eq!(
        decide_share(Some(&provider), Some(&other_seed), Creator::Absent),
        Share::Allow
    );
    let squatter = mark("far", Standing::Tenant, "team-a");
    assert_eq!(
        decide_share(Some(&provider), Some(&squatter), Creator::Keeps),
        Share::Refuse(Refusal::NotTheProvidersSvm)
    );
    let unshared = Provider {
        shares: false,
        ..provider.clone()
    };
    assert_eq!(
        decide_share(Some(&unshared), Some(&own), Creator::Keeps),
        Share::Refuse(Refusal::NotShared)
    );
    let refused = Provider {
        admitted: false,
        ..provider.clone()
    };
    assert_eq!(
        decide_share(Some(&refused), Some(&own), Creator::Keeps),
        Share::Refuse(Refusal::NotShared)
    );
}

#[test]
fn accounts_are_taken_over_only_by_gardeners_objects_on_their_projects_svm() {
    let s = shoot("garden-a");
    let other_shoot = shoot_of("garden-a", "shoot-2");
    let me = actor("s", "shoot--a--web", &s, METAL_SVM);
    let svm_a = mark("prov", project("garden-a"), "ops");
    let svm_b = mark("prov", project("garden-b"), "ops");
    assert_eq!(
        decide_account(&me, Some(&account("s", &s)), Some(&svm_b), false),
        Ok(AccountRight::Ours)
    );
    assert_eq!(
        decide_account(&me, Some(&account("old", &other_shoot)), Some(&svm_a), true),
        Ok(AccountRight::Adopt)
    );
    assert_eq!(
        decide_account(&me, None, Some(&svm_a), true),
        Ok(AccountRight::Adopt)
    );
    assert_eq!(
        decide_account(
            &me,
            Some(&account("old", &other_shoot)),
            Some(&svm_a),
            false
        ),
        Err(Refusal::AccountNotOurs)
    );
    assert_eq!(
        decide_account(&me, Some(&account("old", &other_shoot)), Some(&svm_b), true),
        Err(Refusal::AccountNotOurs)
    );
    let t = Standing::Tenant;
    let tenant = actor("t", "team-a", &t, "db");
    let own_svm = mark("t0", Standing::Tenant, "team-a");
    assert_eq!(
        decide_account(&tenant, Some(&account("other", &t)), Some(&own_svm), true),
        Err(Refusal::AccountNotOurs),
        "a tenant never takes over an account it did not create"
    );
}

// ---------------------------------------------------------------------------------------------
// Worlds: every party's SVMs in ONTAP, and an attacker writing whatever its role lets it write.

/// The parties of a world: two tenants, two Gardener projects.
const TENANTS: [&str; 2] = ["team-a", "team-b"];
const PROJECTS: [&str; 2] = ["garden-a", "garden-b"];
/// What an attacker can write as an SVM name: another's, metal-stack's shape, anything.
const SVM_NAMES: [&str; 4] = [METAL_SVM, OTHER_METAL_SVM, "payroll", "k8s_team-b_db"];

/// An SVM in ONTAP: its mark and what became of the object that holds it.
#[derive(Clone, Debug)]
struct HeldSvm {
    mark: Mark,
    /// The party whose object first held it: whatever happens later, only that party may get it.
    origin: Party,
    /// The object holding it is gone (`Retain`, or another seed's): [`Creator::Absent`].
    released: bool,
}

fn standing_of(kind: u8, project: &str) -> Standing {
    match kind % 3 {
        0 => Standing::Tenant,
        1 => shoot(project),
        _ => Standing::Project {
            project: Some(project.into()),
        },
    }
}

fn namespace_of(standing: &Standing, tenant: &str, shoot_name: &str) -> String {
    match standing {
        Standing::Tenant => tenant.into(),
        Standing::Shoot { project, .. } => format!(
            "shoot--{}--{shoot_name}",
            project.as_deref().unwrap_or_default()
        ),
        Standing::Project { .. } => "ops".into(),
    }
}

prop_compose! {
    fn held_svm()(kind in 0u8..3, t in 0usize..2, p in 0usize..2, uid in "[a-f]{4}", released in any::<bool>()) -> HeldSvm {
        let standing = standing_of(kind, PROJECTS[p]);
        let namespace = namespace_of(&standing, TENANTS[t], "web");
        let mark = mark(&format!("victim-{uid}"), standing, &namespace);
        HeldSvm { origin: mark.party(), mark, released }
    }
}

/// What an attacker controls: a tenant with `edit` in `team-a` writes objects there; a shoot
/// owner of `garden-a` writes the Shoot, whose annotation picks the project object the extension
/// declares for it (bound to `garden-a`, as the shoot's Gardener project is not the owner's to
/// choose), and its providerConfig; either writes any SVM name, any adopt annotation, any provider
/// reference, and their own objects' `shareWith`.
#[derive(Clone, Debug)]
struct AttackerObject {
    standing: Standing,
    namespace: String,
    svm_name: &'static str,
    asks: bool,
    /// Whether the provider it names shares with it: true when the attacker names its own
    /// provider; a victim's provider never shares with the attacker in these worlds.
    names_own_provider: bool,
    account_owner_is_victim: bool,
}

prop_compose! {
    fn attacker_object()(
        shoot_owner in any::<bool>(),
        project_object in any::<bool>(),
        svm in 0usize..4,
        asks in any::<bool>(),
        names_own_provider in any::<bool>(),
        account_owner_is_victim in any::<bool>(),
        shoot_name in "(web|db)",
    ) -> AttackerObject {
        let standing = match (shoot_owner, project_object) {
            (false, _) => Standing::Tenant,
            (true, false) => shoot_of("garden-a", "attacker-shoot"),
            (true, true) => project("garden-a"),
        };
        let namespace = namespace_of(&standing, "team-a", &shoot_name);
        AttackerObject {
            standing,
            namespace,
            svm_name: SVM_NAMES[svm],
            asks,
            names_own_provider,
            account_owner_is_victim,
        }
    }
}

fn attacker_party(object: &AttackerObject) -> Party {
    object.standing.party(&object.namespace)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// No sequence of objects an attacker writes takes over, serves, shares or touches an
    /// account on an SVM another party holds. An SVM the attacker takes over (its own party's)
    /// becomes the attacker's, and later objects see it so.
    #[test]
    fn no_attacker_input_crosses_the_tenant_boundary(
        mut world in proptest::collection::vec(held_svm(), 1..6),
        attacks in proptest::collection::vec(attacker_object(), 1..8),
    ) {
        for (step, object) in attacks.iter().enumerate() {
            let uid = format!("attacker-{step}");
            let me = actor(&uid, &object.namespace, &object.standing, object.svm_name);
            let party = attacker_party(object);
            for held in &mut world {
                let foreign = held.origin != party || party == Party::Unknown;
                let creator = if held.released { Creator::Absent } else { Creator::Keeps };
                match decide_svm(&me, Some(&held.mark), creator, object.asks) {
                    Takeover::Adopt => {
                        prop_assert!(!foreign, "{object:?} adopted {held:?}");
                        held.mark = mark(&uid, object.standing.clone(), &object.namespace);
                        held.released = false;
                    }
                    Takeover::ServeElsewhere => prop_assert!(!foreign, "{object:?} serves {held:?}"),
                    Takeover::Keep => prop_assert!(!foreign, "{object:?} keeps {held:?}"),
                    Takeover::Refuse(_) => {}
                }
                // The attacker's consumer names a provider: its own (which shares with it) or
                // a victim's (which does not).
                let provider = Provider {
                    uid: &uid,
                    namespace: &object.namespace,
                    standing: object.standing.clone(),
                    svm_name: object.svm_name,
                    provisions: true,
                    shares: object.names_own_provider,
                    admitted: true,
                    deleting: false,
                };
                if decide_share(Some(&provider), Some(&held.mark), creator) == Share::Allow {
                    prop_assert!(!foreign, "{object:?} shares {held:?}");
                }
                let owner = object
                    .account_owner_is_victim
                    .then(|| account("victim-account", &held.mark.standing));
                if decide_account(&me, owner.as_ref(), Some(&held.mark), object.asks).is_ok() {
                    prop_assert!(!foreign, "{object:?} manages an account on {held:?}");
                }
                if may_manage(&uid, Some(&held.mark)) {
                    prop_assert!(!foreign, "{object:?} manages {held:?}");
                }
            }
        }
    }

    /// Marks round-trip for every name Kubernetes allows.
    #[test]
    fn a_mark_reads_back_its_party(
        uid in "[0-9a-f-]{36}",
        kind in 0u8..3,
        p in "garden(-[a-z0-9]{1,10})?",
        ns in "[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?",
        name in "[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?",
    ) {
        let standing = standing_of(kind, &p);
        let m = Mark::read(Some(&svm_comment(&uid, &standing, &ns, &name))).unwrap();
        prop_assert_eq!(&m.uid, &uid);
        prop_assert_eq!(&m.standing, &standing);
        if standing == Standing::Tenant && m.namespace.is_some() {
            prop_assert_eq!(m.party(), Party::Namespace(ns.clone()));
        }
    }
}

/// A shoot's control plane moved seeds: the shoot's next object takes back the SVM and account
/// its object on the old seed made, with no state carried over — and nothing of another shoot
/// (even of the same project, for the account), nor of another project under the same shoot uid.
#[test]
fn the_same_shoot_on_another_seed_takes_back_its_svm_and_account() {
    let moved = shoot_of("garden-a", "shoot-1");
    let me = actor("new", "shoot--a--web", &moved, "shoot_a_web");
    let own_svm = mark("old", moved.clone(), "shoot--a--web");
    assert_eq!(
        decide_svm(&me, Some(&own_svm), Creator::Absent, false),
        Takeover::Adopt
    );
    assert_eq!(
        decide_svm(&me, Some(&own_svm), Creator::Keeps, false),
        Takeover::Refuse(Refusal::CreatorStillExists),
        "two objects of one shoot in one seed: the one that holds it keeps it"
    );
    let project_svm = mark("prov", project("garden-a"), "ops");
    assert_eq!(
        decide_account(
            &me,
            Some(&account("old", &moved)),
            Some(&project_svm),
            false
        ),
        Ok(AccountRight::Moved)
    );
    let sibling = shoot_of("garden-a", "shoot-2");
    assert_eq!(
        decide_account(
            &me,
            Some(&account("old", &sibling)),
            Some(&project_svm),
            false
        ),
        Err(Refusal::AccountNotOurs),
        "another shoot's account, even of the same project"
    );
    let elsewhere = shoot_of("garden-b", "shoot-1");
    assert_eq!(
        decide_svm(
            &me,
            Some(&mark("old", elsewhere.clone(), "shoot--b--web")),
            Creator::Absent,
            false
        ),
        Takeover::Refuse(Refusal::MarkedForAnother)
    );
    assert_eq!(
        decide_account(
            &me,
            Some(&account("old", &elsewhere)),
            Some(&project_svm),
            false
        ),
        Err(Refusal::AccountNotOurs)
    );
    let unrecorded = Standing::Shoot {
        project: Some("garden-a".into()),
        shoot: None,
    };
    let legacy = actor("new", "shoot--a--web", &unrecorded, "shoot_a_web");
    assert_eq!(
        decide_account(
            &legacy,
            Some(&account("old", &unrecorded)),
            Some(&project_svm),
            false
        ),
        Err(Refusal::AccountNotOurs),
        "without the shoot's uid on both sides, nothing is taken back"
    );
}

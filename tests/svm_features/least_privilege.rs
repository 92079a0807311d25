//! Least privilege on request (issue 41, item 4): an account of role `Trident` holds the
//! operator's SVM-scoped REST role with exactly the privileges NetApp documents for an
//! SVM-scoped Trident user, the role is repaired when changed in ONTAP, switching the option
//! changes the account's role in place, and a fault during each new ONTAP call heals.

use std::time::Duration;

use kube::api::{Patch, PatchParams, PostParams};
use ontap_operator::api::{AccountRole, StorageVirtualMachine};
use ontap_operator::ontap::svm::role::{TRIDENT_ROLE, VSADMIN_ROLE};
use ontap_operator::ontap::trident_api::TRIDENT_PRIVILEGES;
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::mock::fast_mock;
use crate::support::poll;
use crate::support::svm::SvmWorld;

const WITHIN: Duration = Duration::from_secs(60);
/// Drift is repaired on the next pass: passes come this often.
const SYNC_PERIOD: &str = "--sync-period=2s";

async fn world() -> SvmWorld {
    SvmWorld::with(fast_mock(), &[SYNC_PERIOD]).await
}

pub(super) async fn create(w: &SvmWorld, name: &str, index: u8, role: &str) {
    let svm: StorageVirtualMachine =
        serde_json::from_value(w.svm_with(name, index, &json!({"account": {"role": role}})))
            .unwrap();
    w.svms().create(&PostParams::default(), &svm).await.unwrap();
}

/// The SVM uuid and account name of the Ready object `name`.
pub(super) async fn ready(w: &SvmWorld, name: &str) -> (String, String) {
    let svm = w.wait_ready(name, WITHIN).await;
    let status = svm.status.unwrap();
    let (user, _, _) = w
        .seed_credentials(&format!("{name}-svm-credentials"))
        .await
        .unwrap();
    (status.uuid.unwrap(), user)
}

/// The privileges ONTAP holds for the Trident role of the SVM `uuid`, in NetApp's order.
pub(super) async fn role_privileges(w: &SvmWorld, uuid: &str) -> Option<Vec<(String, String)>> {
    let (status, body) = w
        .mock
        .call(
            Method::GET,
            &format!("/api/security/roles?owner.uuid={uuid}&name={TRIDENT_ROLE}&fields=privileges"),
            None,
        )
        .await;
    assert!(status.is_success(), "{status} {body}");
    let role = body["records"].as_array()?.first()?.clone();
    let mut privileges: Vec<(String, String)> = role["privileges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["path"].as_str().unwrap().to_owned(),
                p["access"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    privileges.sort();
    Some(privileges)
}

pub(super) fn netapps_privileges() -> Vec<(String, String)> {
    let mut privileges: Vec<(String, String)> = TRIDENT_PRIVILEGES
        .iter()
        .map(|(path, access)| {
            let access = serde_json::to_value(access).unwrap();
            ((*path).to_owned(), access.as_str().unwrap().to_owned())
        })
        .collect();
    privileges.sort();
    privileges
}

/// Waits until the role of the SVM `uuid` holds exactly NetApp's privileges.
async fn role_is_netapps(w: &SvmWorld, uuid: &str) {
    let wanted = netapps_privileges();
    poll("the role holds NetApp's privileges", WITHIN, async || {
        let held = role_privileges(w, uuid).await;
        (held.as_ref() == Some(&wanted))
            .then_some(())
            .ok_or_else(|| format!("{held:?}"))
    })
    .await;
}

/// The role ONTAP holds for the account `user`.
pub(super) fn role_of(w: &SvmWorld, user: &str) -> String {
    let accounts = w.state()["accounts"].as_array().cloned().unwrap();
    let account = accounts.iter().find(|a| a["name"] == user).unwrap();
    account["role"]["name"].as_str().unwrap().to_owned()
}

async fn role_becomes(w: &SvmWorld, user: &str, role: &str) {
    poll(&format!("{user} holds {role}"), WITHIN, async || {
        let held = role_of(w, user);
        (held == role).then_some(()).ok_or(held)
    })
    .await;
}

/// A request as the account: its status.
async fn as_account(w: &SvmWorld, name: &str, method: Method, path: &str) -> u16 {
    let (user, password, _) = w
        .seed_credentials(&format!("{name}-svm-credentials"))
        .await
        .unwrap();
    w.mock
        .http
        .request(method, w.mock.url(path))
        .basic_auth(user, Some(password))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// Whether `request` is a login of the account `user` that ONTAP let in: how a Trident-role
/// account's password is proven, once a pass.
pub(super) fn is_login(request: &Value, user: &str) -> bool {
    request["path"] == "/api/svm/svms" && request["user"] == user && request["status"] == 200
}

pub(super) fn privilege_path(uuid: &str, path: &str) -> String {
    format!(
        "/api/security/roles/{uuid}/{TRIDENT_ROLE}/privileges/{}",
        path.replace('/', "%2F")
    )
}

#[tokio::test]
async fn a_trident_account_holds_exactly_netapps_role_and_proves_its_password() {
    let w = world().await;
    create(&w, "lean", 1, "Trident").await;
    let (uuid, user) = ready(&w, "lean").await;
    assert_eq!(role_privileges(&w, &uuid).await, Some(netapps_privileges()));
    assert_eq!(role_of(&w, &user), TRIDENT_ROLE);
    // What NetApp's role grants, and nothing past it: not even the account's own record,
    // which the operator therefore reads as the administrator.
    assert_eq!(
        as_account(&w, "lean", Method::GET, "/api/svm/svms").await,
        200
    );
    assert_eq!(
        as_account(&w, "lean", Method::GET, "/api/security/accounts").await,
        403
    );
    assert_eq!(
        as_account(&w, "lean", Method::GET, "/api/storage/qos/policies").await,
        403
    );
    // Verified on every pass, with no rotation: the password the Secret holds stays.
    let (_, first, _) = w.seed_credentials("lean-svm-credentials").await.unwrap();
    let seq = w.next_seq().await;
    poll("two more passes", WITHIN, async || {
        let logins = w
            .requests()
            .await
            .into_iter()
            .filter(|r| r["seq"].as_u64() >= Some(seq) && is_login(r, &user))
            .count();
        (logins >= 2)
            .then_some(())
            .ok_or(format!("{logins} logins"))
    })
    .await;
    let (_, now, _) = w.seed_credentials("lean-svm-credentials").await.unwrap();
    assert_eq!(first, now, "a verified password is never rotated");
    assert_eq!(w.readiness("lean").await.0, "True");
}

#[tokio::test]
async fn a_privilege_changed_in_ontap_is_put_back() {
    let w = world().await;
    create(&w, "drift", 2, "Trident").await;
    let (uuid, _) = ready(&w, "drift").await;
    // One removed, one narrowed, one added that NetApp's list does not hold.
    let removed = w
        .mock
        .call(
            Method::DELETE,
            &privilege_path(&uuid, "/api/storage/volumes"),
            None,
        )
        .await;
    let narrowed = w
        .mock
        .call(
            Method::PATCH,
            &privilege_path(&uuid, "/api/svm/svms"),
            Some(json!({"access": "none"})),
        )
        .await;
    let added = w
        .mock
        .call(
            Method::POST,
            &format!("/api/security/roles/{uuid}/{TRIDENT_ROLE}/privileges"),
            Some(json!({"path": "/api/security/accounts", "access": "all"})),
        )
        .await;
    for (status, body) in [&removed, &narrowed, &added] {
        assert!(status.is_success(), "{status} {body}");
    }
    assert_ne!(role_privileges(&w, &uuid).await, Some(netapps_privileges()));
    role_is_netapps(&w, &uuid).await;
    assert_eq!(
        as_account(&w, "drift", Method::GET, "/api/svm/svms").await,
        200
    );
    w.wait_ready("drift", WITHIN).await;
}

#[tokio::test]
async fn switching_the_option_changes_the_accounts_role_in_place() {
    let w = world().await;
    create(&w, "switch", 3, "Vsadmin").await;
    let (uuid, user) = ready(&w, "switch").await;
    assert_eq!(role_of(&w, &user), VSADMIN_ROLE);
    assert_eq!(role_privileges(&w, &uuid).await, None, "no role unasked");
    let (_, password, _) = w.seed_credentials("switch-svm-credentials").await.unwrap();
    let set_role = async |role: &str| {
        w.svms()
            .patch(
                "switch",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"account": {"role": role}}})),
            )
            .await
            .unwrap();
    };

    set_role("Trident").await;
    role_becomes(&w, &user, TRIDENT_ROLE).await;
    role_is_netapps(&w, &uuid).await;
    let switched = w.wait_ready("switch", WITHIN).await;
    assert_eq!(
        switched.status.unwrap().account_role,
        Some(AccountRole::Trident)
    );
    assert_eq!(
        as_account(&w, "switch", Method::GET, "/api/security/accounts").await,
        403,
        "narrowed"
    );

    set_role("Vsadmin").await;
    role_becomes(&w, &user, VSADMIN_ROLE).await;
    let back = w.wait_ready("switch", WITHIN).await;
    assert_eq!(
        back.status.unwrap().account_role,
        Some(AccountRole::Vsadmin)
    );
    assert_eq!(
        as_account(&w, "switch", Method::GET, "/api/security/accounts").await,
        200,
        "widened again"
    );
    let (_, after, _) = w.seed_credentials("switch-svm-credentials").await.unwrap();
    assert_eq!(
        password, after,
        "the account kept its password through both switches"
    );
}

/// A fault during each ONTAP call least privilege adds, each in a case of its own: the object
/// still converges to an account of the role with exactly NetApp's privileges.
#[tokio::test]
async fn a_fault_during_each_new_call_heals() {
    let w = world().await;
    let error = |method: &str, path: &str| {
        json!({"method": method, "path": path, "times": 1,
               "action": {"type": "error", "status": 500}})
    };
    // Creating: the role's lookup, then its creation.
    for (index, (name, fault)) in [
        ("lookup", error("GET", "/api/security/roles")),
        ("create", error("POST", "/api/security/roles")),
    ]
    .into_iter()
    .enumerate()
    {
        let id = w.mock.fault_json(fault);
        create(&w, name, 10 + index as u8, "Trident").await;
        let (uuid, user) = ready(&w, name).await;
        assert_eq!(w.mock.hits(&id).await, 1, "{name}: the fault fired");
        role_is_netapps(&w, &uuid).await;
        assert_eq!(role_of(&w, &user), TRIDENT_ROLE, "{name}");
    }

    // Repairing: adding, changing and removing a privilege.
    create(&w, "repair", 20, "Trident").await;
    let (uuid, _) = ready(&w, "repair").await;
    let privileges = format!("/api/security/roles/{uuid}/{TRIDENT_ROLE}/privileges");
    // The test's own change goes first past a fault on its method: `after` lets it through.
    let after_mine = |mut fault: Value| {
        fault["after"] = json!(1);
        fault
    };
    let cases = [
        (
            error("POST", &privileges),
            Method::DELETE,
            privilege_path(&uuid, "/api/storage/luns"),
            None,
        ),
        (
            after_mine(error("PATCH", &format!("{privileges}/*"))),
            Method::PATCH,
            privilege_path(&uuid, "/api/storage/luns"),
            Some(json!({"access": "readonly"})),
        ),
        (
            error("DELETE", &format!("{privileges}/*")),
            Method::POST,
            privileges.clone(),
            Some(json!({"path": "/api/security/accounts", "access": "all"})),
        ),
    ];
    for (fault, method, path, body) in cases {
        let id = w.mock.fault_json(fault.clone());
        let (status, answer) = w.mock.call(method, &path, body).await;
        assert!(status.is_success(), "{status} {answer}");
        role_is_netapps(&w, &uuid).await;
        assert_eq!(w.mock.hits(&id).await, 1, "{fault}: the fault fired");
    }

    // Switching: the account's role change.
    create(&w, "flip", 30, "Vsadmin").await;
    let (_, user) = ready(&w, "flip").await;
    let id = w
        .mock
        .fault_json(error("PATCH", "/api/security/accounts/*"));
    w.svms()
        .patch(
            "flip",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"account": {"role": "Trident"}}})),
        )
        .await
        .unwrap();
    role_becomes(&w, &user, TRIDENT_ROLE).await;
    w.wait_ready("flip", WITHIN).await;
    assert_eq!(w.mock.hits(&id).await, 1, "the role switch's fault fired");
}

/// An administrator's OntapCluster decides: its default gives least privilege to an object
/// naming no role, and its bounds refuse an object asking for vsadmin where it forces it.
#[tokio::test]
async fn the_cluster_defaults_and_bounds_the_role() {
    let w = world().await;
    w.clusters()
        .patch(
            &w.cluster,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"defaults": {"accountRole": "Trident"}}})),
        )
        .await
        .unwrap();
    w.create_svm("defaulted", 40).await;
    let (uuid, user) = ready(&w, "defaulted").await;
    assert_eq!(role_of(&w, &user), TRIDENT_ROLE);
    role_is_netapps(&w, &uuid).await;

    w.clusters()
        .patch(
            &w.cluster,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"allowed": {"accountRoles": ["Trident"]}}})),
        )
        .await
        .unwrap();
    create(&w, "wide", 41, "Vsadmin").await;
    let message = w
        .refused_in(
            &w.env.namespace,
            "wide",
            "ClusterReady",
            "NotAllowedByCluster",
        )
        .await;
    assert!(
        message.contains("spec.account.role") && message.contains("Vsadmin"),
        "{message}"
    );
    assert!(
        !w.state()["svms"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["name"].as_str().is_some_and(|n| n.ends_with("_wide"))),
        "nothing reached ONTAP"
    );
}

/// What least privilege costs ONTAP on a cluster read per object (fewer steady objects than
/// `--ontap-inventory-min-svms`; with the inventory, `role_cost.rs`): a pass over a Ready
/// object whose account has the Trident role sends its login (as the account,
/// `/api/svm/svms`), the administrator's read of the account and of the role: one each. Provisioning's requests are printed beside a vsadmin
/// object's, for the benchmark line.
#[tokio::test]
async fn a_ready_trident_account_costs_a_login_an_account_read_and_a_role_read_per_pass() {
    let w = world().await;
    let mut provisioning = Vec::new();
    for (name, index, role) in [("plain", 50, "Vsadmin"), ("costed", 51, "Trident")] {
        let from = w.next_seq().await;
        create(&w, name, index, role).await;
        ready(&w, name).await;
        let sent = w
            .requests()
            .await
            .into_iter()
            .filter(|r| r["seq"].as_u64() >= Some(from))
            .count();
        provisioning.push(format!("{role}: {sent} requests until Ready"));
    }
    w.svms().delete("plain", &Default::default()).await.unwrap();
    w.wait_gone("plain", WITHIN).await;
    let (_, user) = ready(&w, "costed").await;
    let login = |r: &Value| is_login(r, &user);
    // Two whole passes: from one login to the one two passes later.
    let from = w.next_seq().await;
    let window = poll("three logins", WITHIN, async || {
        let requests: Vec<Value> = w
            .requests()
            .await
            .into_iter()
            .filter(|r| r["seq"].as_u64() >= Some(from))
            .collect();
        let logins: Vec<usize> = requests
            .iter()
            .enumerate()
            .filter(|(_, r)| login(r))
            .map(|(i, _)| i)
            .collect();
        match logins.as_slice() {
            [first, _, third, ..] => Ok(requests[*first..*third].to_vec()),
            _ => Err(format!("{} logins", logins.len())),
        }
    })
    .await;
    let count = |path: &str| window.iter().filter(|r| r["path"] == path).count();
    let per_pass = |path: &str| count(path) as f64 / 2.0;
    println!(
        "least privilege: {}; per pass over the Ready object: {} requests in all, account reads {}, role reads {}",
        provisioning.join(", "),
        window.len() as f64 / 2.0,
        per_pass("/api/security/accounts"),
        per_pass("/api/security/roles"),
    );
    assert_eq!(window.iter().filter(|r| login(r)).count(), 2, "{window:#?}");
    assert_eq!(count("/api/security/accounts"), 2, "{window:#?}");
    assert_eq!(count("/api/security/roles"), 2, "{window:#?}");
}

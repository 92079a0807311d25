//! Least privilege at resync cost (issue 41): a Ready SVM whose account holds the Trident role
//! is confirmed from its cluster's inventory — the role read on every SVM, the accounts holding
//! it — so a pass sends ONTAP its login alone, as a vsadmin account's does; drift made in ONTAP
//! while it is steady is still found and repaired within a sync period, and a failed read of
//! either collection costs nothing but the next read.

use std::time::Duration;

use ontap_operator::ontap::inventory::PAGE_RECORDS;
use ontap_operator::ontap::svm::role::{TRIDENT_ROLE, VSADMIN_ROLE};
use reqwest::Method;
use serde_json::json;

use crate::least_privilege::{
    create, is_login, netapps_privileges, privilege_path, ready, role_of, role_privileges,
};
use crate::support::mock::fast_mock;
use crate::support::resync::{inventory_read, resync_window, resync_world};
use crate::support::svm::SvmWorld;
use crate::support::{poll, tail, try_poll};

const READY_WITHIN: Duration = Duration::from_secs(90);
const ROLES: &str = "/api/security/roles";
const ACCOUNTS: &str = "/api/security/accounts";

/// Creates `count` objects whose accounts hold the Trident role and waits until all are
/// Ready: their SVM uuids and account names.
async fn trident_svms(world: &SvmWorld, count: u8) -> Vec<(String, String)> {
    let names: Vec<String> = (0..count).map(|i| format!("lean-{i}")).collect();
    for (i, name) in names.iter().enumerate() {
        create(world, name, 60 + i as u8, "Trident").await;
    }
    let mut ready_svms = Vec::new();
    for name in &names {
        ready_svms.push(ready(world, name).await);
    }
    ready_svms
}

/// A pass over a Ready SVM whose account holds the Trident role costs ONTAP its login: the
/// role's privileges and the account's record come from the cluster's paged reads, two
/// collections more than a vsadmin cluster's. At a thousand such SVMs those are four pages a
/// read (500 records a page), two reads a sync period: 1.02 requests per SVM and pass.
#[tokio::test]
async fn a_resync_of_ready_trident_svms_costs_ontap_one_login_each_plus_paged_reads() {
    const SVMS: u8 = 4;
    let world = resync_world().await;
    trident_svms(&world, SVMS).await;
    // Past the passes the seed Secrets' events and the first inventory read cause.
    world.operator.quiesce(READY_WITHIN).await;
    inventory_read(&world, ACCOUNTS).await;
    let from = world.next_seq().await;
    let window = resync_window(&world, from).await;
    let reads_of = |path: &str| {
        window
            .all
            .iter()
            .filter(|r| r.starts_with(&format!("GET {path}?")))
            .count()
    };
    let (role_reads, account_reads) = (reads_of(ROLES), reads_of(ACCOUNTS));
    let per_svm = window.logins + window.per_object + window.writes;
    let per_pass = per_svm as f64 / window.logins.max(1) as f64;
    // SVMs, interfaces, roles and accounts at 1,000 SVMs (2 LIFs each), twice a sync period.
    let pages_at_scale =
        (1_000u32.div_ceil(PAGE_RECORDS) * 3 + 2_000u32.div_ceil(PAGE_RECORDS)) * 2;
    eprintln!(
        "a resync with the Trident role: {per_pass:.2} requests per SVM and pass besides the \
         inventory's pages ({role_reads} role and {account_reads} account pages in the window); \
         at 1,000 SVMs {:.3}: {:#?}",
        per_pass + f64::from(pages_at_scale) / 1_000.0,
        window.all
    );
    assert!(
        role_reads >= 1 && account_reads >= 1,
        "the role and its accounts read with the inventory: {:#?}",
        window.all
    );
    assert!(
        per_pass <= 1.1,
        "{per_pass:.2} requests per SVM and pass: {:#?}",
        window.all
    );
    // Four collections: the SVMs, their interfaces, the role and the accounts holding it.
    window.costs_a_login_per_svm(SVMS, 4);
}

/// Whether the role of the SVM `uuid` holds NetApp's privileges and the account `user` the
/// role, within `within`.
async fn repaired_within(world: &SvmWorld, uuid: &str, user: &str, within: Duration) -> bool {
    let wanted = netapps_privileges();
    try_poll(within, async || {
        (role_privileges(world, uuid).await.as_ref() == Some(&wanted)
            && role_of(world, user) == TRIDENT_ROLE)
            .then_some(())
    })
    .await
    .is_ok()
}

/// Waits for a pass over the object whose account is `user`, from now on: its login. Its next
/// periodic pass is then a sync period away.
async fn passed(world: &SvmWorld, user: &str) {
    let from = world.next_seq().await;
    poll(&format!("a pass over {user}"), READY_WITHIN, async || {
        world
            .requests()
            .await
            .iter()
            .any(|r| r["seq"].as_u64() >= Some(from) && is_login(r, user))
            .then_some(())
    })
    .await;
}

/// The snapshot a pass confirms from may be older than a change made in ONTAP: the refresher's
/// next snapshot shows it and has the object re-verified, so a privilege removed from one SVM's
/// role, and another account given vsadmin, are each put back within three quarters of a sync
/// period. Each change is made just after a pass over its object, whose next periodic pass is
/// then more than the bound away: only the refresher can be the one that finds it in time.
#[tokio::test]
async fn drift_made_while_steady_is_repaired_within_a_sync_period_from_the_inventory() {
    const SYNC: Duration = Duration::from_secs(20);
    const FOUND_WITHIN: Duration = Duration::from_secs(15);
    let world = SvmWorld::with(
        fast_mock(),
        &["--sync-period=20s", "--ontap-inventory-min-svms=2"],
    )
    .await;
    world.wait_cluster_ready(READY_WITHIN).await;
    let svms = trident_svms(&world, 3).await;
    world.operator.quiesce(READY_WITHIN).await;
    inventory_read(&world, ROLES).await;
    let (narrowed, narrowed_user) = &svms[0];
    let (switched_uuid, switched) = &svms[1];
    let changes = [
        (
            narrowed,
            narrowed_user,
            Method::DELETE,
            privilege_path(narrowed, "/api/storage/volumes"),
            None,
        ),
        (
            switched_uuid,
            switched,
            Method::PATCH,
            format!("{ACCOUNTS}/{switched_uuid}/{switched}"),
            Some(json!({"role": {"name": VSADMIN_ROLE}})),
        ),
    ];
    for (uuid, user, method, path, body) in changes {
        passed(&world, user).await;
        let (status, answer) = world.mock.call(method, &path, body).await;
        assert!(status.is_success(), "{status} {answer}");
        let changed = std::time::Instant::now();
        assert!(
            !repaired_within(&world, uuid, user, Duration::ZERO).await,
            "{user}: changed"
        );
        assert!(
            repaired_within(&world, uuid, user, FOUND_WITHIN).await,
            "{user}'s role or account was not repaired within {FOUND_WITHIN:?} (sync period \
             {SYNC:?}); {:?} since the change\n{}",
            changed.elapsed(),
            tail(&world.operator.logs(), 40)
        );
    }
    for (uuid, user) in &svms {
        assert!(repaired_within(&world, uuid, user, Duration::ZERO).await);
    }
}

/// A read of the role or of its accounts that fails is the inventory's to retry: the SVMs stay
/// Ready, nothing is written, and the next read takes both again.
#[tokio::test]
async fn a_failed_read_of_the_role_or_its_accounts_costs_only_the_next_read() {
    let world = resync_world().await;
    let svms = trident_svms(&world, 2).await;
    world.operator.quiesce(READY_WITHIN).await;
    inventory_read(&world, ACCOUNTS).await;
    for path in [ROLES, ACCOUNTS] {
        let from = world.next_seq().await;
        let id = world
            .mock
            .fault_json(json!({"method": "GET", "path": path, "times": 1,
            "action": {"type": "error", "status": 400, "code": "262179",
                       "message": "Unexpected argument"}}));
        crate::support::poll(
            &format!("the fault on {path} fired"),
            READY_WITHIN,
            async || (world.mock.hits(&id).await == 1).then_some(()),
        )
        .await;
        inventory_read(&world, path).await;
        let writes: Vec<_> = world
            .requests()
            .await
            .into_iter()
            .filter(|r| r["seq"].as_u64() >= Some(from) && r["method"] != "GET")
            .collect();
        assert!(writes.is_empty(), "{path}: nothing written: {writes:#?}");
    }
    for (i, (uuid, user)) in svms.iter().enumerate() {
        assert_eq!(world.readiness(&format!("lean-{i}")).await.0, "True");
        assert!(repaired_within(&world, uuid, user, Duration::ZERO).await);
    }
}

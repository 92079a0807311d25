//! REST roles against mock-ontap: a least-privilege role, an account holding it, and the
//! role's privileges as that account meets them.

use ontap_client::{
    AccountCheck, AccountCreate, CredentialCheck, DeleteOutcome, ErrorClass, RoleAccess,
    RoleCreate, RolePrivilege,
};
use secrecy::SecretString;
use serde_json::json;
use test_support::ontap::*;

fn privilege(path: &str, access: RoleAccess) -> RolePrivilege {
    RolePrivilege {
        path: path.into(),
        access,
    }
}

#[tokio::test]
async fn a_role_limits_what_its_account_may_do() {
    let env = Env::start().await;
    let c = &env.client;
    let svm = env.create_svm("roles").await;
    let role = RoleCreate {
        name: "narrow".into(),
        owner_uuid: svm.uuid.clone(),
        privileges: vec![privilege("/api/svm/svms", RoleAccess::Readonly)],
    };
    c.create_role(&role).await.unwrap();
    let dup = c.create_role(&role).await.unwrap_err();
    assert_eq!(dup.class(), ErrorClass::Conflict, "{dup}");
    let password = SecretString::from("LeastPriv123x".to_owned());
    c.create_account(&AccountCreate {
        name: "narrow".into(),
        owner_uuid: svm.uuid.clone(),
        role: "narrow".into(),
        password: password.clone(),
        comment: None,
        applications: Vec::new(),
    })
    .await
    .unwrap();

    // The role grants the SVM listing, not the account's own record.
    assert!(
        c.verify_credentials("narrow", &password, "roles")
            .await
            .unwrap()
            .is_valid()
    );
    assert_eq!(
        c.verify_account(&svm.uuid, "narrow", &password)
            .await
            .unwrap(),
        AccountCheck::NotAuthorized
    );
    c.add_role_privilege(
        &svm.uuid,
        "narrow",
        &privilege("/api/security/accounts", RoleAccess::Readonly),
    )
    .await
    .unwrap();
    assert!(matches!(
        c.verify_account(&svm.uuid, "narrow", &password)
            .await
            .unwrap(),
        AccountCheck::Valid(_)
    ));
    c.set_role_privilege(&svm.uuid, "narrow", "/api/svm/svms", RoleAccess::None)
        .await
        .unwrap();
    assert_eq!(
        c.verify_credentials("narrow", &password, "roles")
            .await
            .unwrap(),
        CredentialCheck::NotAuthorized
    );
    let read = c.role(&svm.uuid, "narrow").await.unwrap().unwrap();
    assert_eq!(
        read.privileges,
        vec![
            privilege("/api/svm/svms", RoleAccess::None),
            privilege("/api/security/accounts", RoleAccess::Readonly),
        ]
    );
    assert_eq!(
        c.delete_role_privilege(&svm.uuid, "narrow", "/api/svm/svms")
            .await
            .unwrap(),
        DeleteOutcome::Deleted
    );
    assert_eq!(
        c.delete_account(&svm.uuid, "narrow").await.unwrap(),
        DeleteOutcome::Deleted
    );
    assert_eq!(
        c.delete_role(&svm.uuid, "narrow").await.unwrap(),
        DeleteOutcome::Deleted
    );
    assert_eq!(c.role(&svm.uuid, "narrow").await.unwrap(), None);
}

#[tokio::test]
async fn role_calls_fail_through_the_mock_faults() {
    let env = Env::start().await;
    let c = &env.client;
    let svm = env.create_svm("faulty").await;
    env.mock.fault_json(
        json!({"method": "POST", "path": "/api/security/roles", "times": 1,
        "action": {"type": "error", "status": 400, "code": "5636144",
                   "message": "Invalid value specified for access level."}}),
    );
    let refused = c
        .create_role(&RoleCreate {
            name: "r".into(),
            owner_uuid: svm.uuid.clone(),
            privileges: vec![privilege("/api/cluster", RoleAccess::Readonly)],
        })
        .await
        .unwrap_err();
    assert_eq!(refused.ontap_code(), Some("5636144"));
    assert_eq!(
        c.role(&svm.uuid, "r").await.unwrap(),
        None,
        "a refused POST creates nothing"
    );
    env.mock.fault_json(json!({"path": "/api/security/roles/*", "times": 1,
        "action": {"type": "error", "status": 500, "code": "13434889", "message": "Internal error"}}));
    c.create_role(&RoleCreate {
        name: "r".into(),
        owner_uuid: svm.uuid.clone(),
        privileges: vec![privilege("/api/cluster", RoleAccess::Readonly)],
    })
    .await
    .unwrap();
    // The PATCH is retried past the one 500.
    c.set_role_privilege(&svm.uuid, "r", "/api/cluster", RoleAccess::None)
        .await
        .unwrap();
}

/// The inventory's reads: one role name and the accounts holding it, on every SVM of the
/// cluster, page by page; other roles and other accounts (every SVM's built-in `vsadmin`) are
/// not read.
#[tokio::test]
async fn one_roles_records_and_its_accounts_read_cluster_wide_in_pages() {
    let env = Env::start().await;
    let c = &env.client;
    let mut owners = Vec::new();
    for name in ["paged-a", "paged-b", "paged-c"] {
        let svm = env.create_svm(name).await;
        c.create_role(&RoleCreate {
            name: "lean".into(),
            owner_uuid: svm.uuid.clone(),
            privileges: vec![
                privilege("/api/svm/svms", RoleAccess::Readonly),
                privilege("/api/storage/volumes", RoleAccess::All),
            ],
        })
        .await
        .unwrap();
        c.create_account(&AccountCreate {
            name: format!("{name}-user"),
            owner_uuid: svm.uuid.clone(),
            role: "lean".into(),
            password: SecretString::from("LeastPriv123x".to_owned()),
            comment: Some("ours".into()),
            applications: Vec::new(),
        })
        .await
        .unwrap();
        owners.push(svm.uuid);
    }
    // A role and an account that the reads leave out.
    c.create_role(&RoleCreate {
        name: "other".into(),
        owner_uuid: owners[0].clone(),
        privileges: vec![privilege("/api/cluster", RoleAccess::Readonly)],
    })
    .await
    .unwrap();
    owners.sort_unstable();

    let before = env.requests("GET", "/api/security/roles").await.len();
    let mut pages = c.role_pages(2, "lean").unwrap();
    let mut roles = Vec::new();
    while let Some(page) = pages.next_page().await.unwrap() {
        assert!(page.len() <= 2, "{page:?}");
        roles.extend(page);
    }
    assert_eq!(
        env.requests("GET", "/api/security/roles").await.len(),
        before + 2,
        "three roles at two a page"
    );
    let mut role_owners: Vec<&str> = roles
        .iter()
        .map(|r| r.owner.as_ref().unwrap().uuid.as_deref().unwrap())
        .collect();
    role_owners.sort_unstable();
    assert_eq!(role_owners, owners);
    assert!(roles.iter().all(|r| r.name == "lean"
        && r.privileges
            == [
                privilege("/api/svm/svms", RoleAccess::Readonly),
                privilege("/api/storage/volumes", RoleAccess::All),
            ]));

    let mut pages = c.account_pages(2, "lean").unwrap();
    let mut accounts = Vec::new();
    while let Some(page) = pages.next_page().await.unwrap() {
        accounts.extend(page);
    }
    let mut names: Vec<&str> = accounts.iter().map(|a| a.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["paged-a-user", "paged-b-user", "paged-c-user"]);
    assert!(accounts.iter().all(|a| {
        a.role.as_ref().and_then(|r| r.name.as_deref()) == Some("lean")
            && a.comment.as_deref() == Some("ours")
            && a.owner.as_ref().and_then(|o| o.uuid.as_deref()).is_some()
    }));

    assert!(
        c.role_pages(10, "le*").is_err(),
        "a pattern is no exact name"
    );
    env.mock.fault_json(json!({"method": "GET", "path": "/api/security/accounts", "times": 1,
        "action": {"type": "error", "status": 400, "code": "262179", "message": "Unexpected argument"}}));
    let mut failing = c.account_pages(10, "lean").unwrap();
    assert!(failing.next_page().await.is_err());
}

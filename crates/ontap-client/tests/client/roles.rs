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

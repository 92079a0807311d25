//! The ONTAP client against mock-ontap, in-process over HTTP and over TLS: every operation and
//! every fault action, with request counts read from the mock's request log.

use std::time::Duration;

use ontap_client::{
    AccountCreate, CredentialCheck, DeleteOutcome, ErrorClass, OntapClient, OntapError, Protocol,
    ProtocolState, SvmPatch, SvmState, SvmTargetState, TlsVerification,
};
use secrecy::SecretString;
use serde_json::json;
use test_support::mock::Mock;
use test_support::ontap::*;

// ---------------------------------------------------------------------------------------------
// Operations

#[tokio::test]
async fn cluster_nodes_and_aggregates_across_pages() {
    let env = Env::start_with(mock_config(), |cfg| cfg.page_size = 1).await;
    let info = env.client.cluster().await.unwrap();
    assert!(!info.name.is_empty());
    assert!(!info.uuid.is_empty());
    assert_eq!(info.version.to_string(), "9.16.1");
    let nodes = env.client.nodes().await.unwrap();
    let mut names: Vec<_> = nodes.iter().map(|n| n.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["node-01", "node-02"]);
    let aggrs = env.client.aggregates().await.unwrap();
    assert_eq!(aggrs.len(), 2);
    // One page per record plus none extra: pagination followed the mock's next links.
    assert_eq!(
        env.requests("GET", "/api/cluster/nodes").await.len(),
        2,
        "page size 1, two nodes"
    );
}

#[tokio::test]
async fn svm_lifecycle() {
    let env = Env::start().await;
    let c = &env.client;
    assert_eq!(c.svm_by_name("svm1").await.unwrap(), None);

    let svm = env.create_svm("svm1").await;
    assert_eq!(svm.name, "svm1");
    assert_eq!(svm.state, Some(SvmState::Running));
    assert_eq!(svm.nfs, Some(ProtocolState { enabled: true }));
    assert_eq!(svm.comment.as_deref(), Some("made by the client tests"));

    let by_name = c.svm_by_name("svm1").await.unwrap().unwrap();
    assert_eq!(by_name.uuid, svm.uuid);
    let by_uuid = c.svm(&svm.uuid).await.unwrap();
    assert_eq!(by_uuid.name, "svm1");

    c.patch_svm(
        &svm.uuid,
        &SvmPatch {
            state: Some(SvmTargetState::Stopped),
            comment: Some("stopped".into()),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let stopped = c.svm(&svm.uuid).await.unwrap();
    assert_eq!(stopped.state, Some(SvmState::Stopped));
    assert_eq!(stopped.comment.as_deref(), Some("stopped"));
    c.patch_svm(
        &svm.uuid,
        &SvmPatch {
            state: Some(SvmTargetState::Running),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    // A protocol is switched on its service, not on the SVM.
    c.set_protocol(&svm.uuid, Protocol::Iscsi, true)
        .await
        .unwrap();
    let running = c.svm(&svm.uuid).await.unwrap();
    assert_eq!(running.state, Some(SvmState::Running));
    assert_eq!(running.iscsi, Some(ProtocolState { enabled: true }));

    assert_eq!(
        c.delete_svm(&svm.uuid).await.unwrap(),
        DeleteOutcome::Deleted
    );
    let err = c.svm(&svm.uuid).await.unwrap_err();
    assert_eq!(err.class(), ErrorClass::NotFound, "{err}");
    assert_eq!(c.svm_by_name("svm1").await.unwrap(), None);
    assert_eq!(
        c.delete_svm(&svm.uuid).await.unwrap(),
        DeleteOutcome::AlreadyAbsent
    );
}

#[tokio::test]
async fn interfaces_lifecycle_and_conflicts() {
    let env = Env::start().await;
    let c = &env.client;
    let svm = env.create_svm("svm1").await;
    let data = c
        .create_interface(&lif(&svm.uuid, "data1", "10.1.0.10"))
        .await
        .unwrap();
    assert_eq!(data.name, "data1");
    assert_eq!(data.ip.as_ref().unwrap().address, "10.1.0.10");
    c.create_interface(&lif(&svm.uuid, "mgmt", "10.1.0.11"))
        .await
        .unwrap();
    let all = c.interfaces(&svm.uuid).await.unwrap();
    assert_eq!(all.len(), 2);
    assert!(all.iter().all(|i| i.location.is_some()));

    let dup_ip = c
        .create_interface(&lif(&svm.uuid, "data2", "10.1.0.10"))
        .await
        .unwrap_err();
    assert_eq!(dup_ip.class(), ErrorClass::Conflict, "{dup_ip}");
    assert_eq!(dup_ip.ontap_code(), Some("1376963"));
    let dup_name = c
        .create_interface(&lif(&svm.uuid, "data1", "10.1.0.99"))
        .await
        .unwrap_err();
    assert_eq!(dup_name.class(), ErrorClass::Conflict);
    assert_eq!(dup_name.ontap_code(), Some("1966140"));

    assert_eq!(
        c.interface_by_name(&svm.uuid, "data1")
            .await
            .unwrap()
            .unwrap()
            .uuid,
        data.uuid
    );
    assert_eq!(
        c.delete_interface(&data.uuid).await.unwrap(),
        DeleteOutcome::Deleted
    );
    assert_eq!(
        c.delete_interface(&data.uuid).await.unwrap(),
        DeleteOutcome::AlreadyAbsent
    );
    assert_eq!(c.interface_by_name(&svm.uuid, "data1").await.unwrap(), None);
}

#[tokio::test]
async fn accounts_and_credential_verification() {
    let env = Env::start().await;
    let c = &env.client;
    let svm = env.create_svm("svm1").await;
    let other = env.create_svm("svm2").await;
    let pw = SecretString::from(SVM_PASSWORD.to_owned());

    // ONTAP's built-in vsadmin exists without a password, so ONTAP reports no `locked` for it;
    // taking it over needs the password first, then the unlock.
    let vsadmin = c.account(&svm.uuid, "vsadmin").await.unwrap().unwrap();
    assert_eq!(vsadmin.locked, None);
    assert_eq!(
        c.verify_credentials("vsadmin", &pw, "svm1").await.unwrap(),
        CredentialCheck::Rejected
    );
    take_over_vsadmin(c, &svm.uuid, &pw).await;
    assert_eq!(
        c.verify_credentials("vsadmin", &pw, "svm1").await.unwrap(),
        CredentialCheck::Valid {
            svm_uuid: svm.uuid.clone()
        }
    );

    // A separate account of our own.
    assert_eq!(c.account(&svm.uuid, "opadmin").await.unwrap(), None);
    c.create_account(&AccountCreate {
        name: "opadmin".into(),
        owner_uuid: svm.uuid.clone(),
        role: "vsadmin".into(),
        password: pw.clone(),
        comment: Some("ontap-operator".into()),
        applications: Vec::new(),
    })
    .await
    .unwrap();
    let acct = c.account(&svm.uuid, "opadmin").await.unwrap().unwrap();
    assert_eq!(acct.owner.unwrap().uuid.as_deref(), Some(svm.uuid.as_str()));
    assert_eq!(acct.role.unwrap().name.as_deref(), Some("vsadmin"));
    assert!(
        c.verify_credentials("opadmin", &pw, "svm1")
            .await
            .unwrap()
            .is_valid()
    );
    // It sees only its own SVM.
    assert_eq!(
        c.verify_credentials("opadmin", &pw, "svm2").await.unwrap(),
        CredentialCheck::NotAuthorized
    );
    let wrong = SecretString::from("WrongPassw0rd99".to_owned());
    assert_eq!(
        c.verify_credentials("opadmin", &wrong, "svm1")
            .await
            .unwrap(),
        CredentialCheck::Rejected
    );

    // Duplicate → conflict.
    let dup = c
        .create_account(&AccountCreate {
            name: "opadmin".into(),
            owner_uuid: svm.uuid.clone(),
            role: "vsadmin".into(),
            password: pw.clone(),
            comment: None,
            applications: Vec::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(dup.class(), ErrorClass::Conflict, "{dup}");

    // Rotate the password; the old one stops working.
    let new_pw = SecretString::from("RotatedSecret2024zz".to_owned());
    c.set_account_password(&svm.uuid, "opadmin", &new_pw)
        .await
        .unwrap();
    assert!(
        c.verify_credentials("opadmin", &new_pw, "svm1")
            .await
            .unwrap()
            .is_valid()
    );
    assert_eq!(
        c.verify_credentials("opadmin", &pw, "svm1").await.unwrap(),
        CredentialCheck::Rejected
    );
    // Setting the current password again is invalid (7077925; 7077924 is "used recently"), not
    // transient, and the message does not carry it.
    let reuse = c
        .set_account_password(&svm.uuid, "opadmin", &new_pw)
        .await
        .unwrap_err();
    assert_eq!(reuse.class(), ErrorClass::Invalid, "{reuse}");
    assert_eq!(reuse.ontap_code(), Some("7077925"));
    assert!(!format!("{reuse} {reuse:?}").contains("RotatedSecret2024zz"));
    let short = c
        .set_account_password(&svm.uuid, "opadmin", &SecretString::from("a1".to_owned()))
        .await
        .unwrap_err();
    assert_eq!(short.ontap_code(), Some("7077919"));
    let unknown = c
        .set_account_password(&svm.uuid, "nobody", &new_pw)
        .await
        .unwrap_err();
    assert_eq!(unknown.status(), Some(reqwest::StatusCode::NOT_FOUND));

    assert_eq!(
        c.delete_account(&svm.uuid, "opadmin").await.unwrap(),
        DeleteOutcome::Deleted
    );
    assert_eq!(
        c.delete_account(&svm.uuid, "opadmin").await.unwrap(),
        DeleteOutcome::AlreadyAbsent
    );
    assert_eq!(c.account(&svm.uuid, "opadmin").await.unwrap(), None);
    let _ = other;
}

#[tokio::test]
async fn duplicate_svm_is_a_conflict() {
    let env = Env::start().await;
    env.create_svm("svm1").await;
    let err = env
        .client
        .create_svm(&svm_create("svm1"))
        .await
        .unwrap_err();
    assert_eq!(err.class(), ErrorClass::Conflict, "{err}");
    assert_eq!(err.ontap_code(), Some("13434908"));
    assert!(!err.is_ambiguous());
}

#[tokio::test]
async fn sixth_concurrent_svm_job_is_transient_and_not_retried() {
    let mut config = mock_config();
    config.settings.job_duration_ms = 1500;
    let env = Env::start_with(config, |_| {}).await;
    let creates = (0..6).map(|i| {
        let c = env.client.clone();
        async move { c.create_svm(&svm_create(&format!("par{i}"))).await }
    });
    let results = futures::future::join_all(creates).await;
    let errors: Vec<_> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].ontap_code(), Some("13434894"));
    assert!(errors[0].is_transient());
    assert!(!errors[0].is_ambiguous());
    assert_eq!(env.requests("POST", "/api/svm/svms").await.len(), 6);
}

#[tokio::test]
async fn invalid_input_is_refused_before_sending() {
    let env = Env::start().await;
    let err = env.client.svm_by_name("svm*").await.unwrap_err();
    assert!(matches!(err, OntapError::InvalidInput(_)), "{err:?}");
    let err = env.client.create_svm(&svm_create("a|b")).await.unwrap_err();
    assert!(matches!(err, OntapError::InvalidInput(_)), "{err:?}");
    assert!(env.requests("POST", "/api/svm/svms").await.is_empty());
    let long = "x".repeat(48);
    let err = env.client.create_svm(&svm_create(&long)).await.unwrap_err();
    assert_eq!(err.ontap_code(), Some("13434911"));
    assert_eq!(err.class(), ErrorClass::Invalid);
}

// ---------------------------------------------------------------------------------------------
// Faults

#[tokio::test]
async fn apply_then_reset_on_create_is_ambiguous_and_lookup_finds_the_svm() {
    let env = Env::start().await;
    env.mock
        .fault_json(json!({"method":"POST","path":"/api/svm/svms","times":1,
        "action":{"type":"apply_then_reset"}}));
    let err = env
        .client
        .create_svm(&svm_create("svm1"))
        .await
        .unwrap_err();
    assert!(err.is_ambiguous(), "{err:?}");
    assert!(err.is_transient());
    assert_eq!(env.requests("POST", "/api/svm/svms").await.len(), 1);
    // What a reconciler does next: look it up by name.
    let found = env.client.svm_by_name("svm1").await.unwrap().unwrap();
    assert_eq!(found.name, "svm1");
}

#[tokio::test]
async fn reset_on_create_is_ambiguous_not_retried_and_nothing_exists() {
    let env = Env::start().await;
    env.mock
        .fault_json(json!({"method":"POST","path":"/api/svm/svms","times":1,
        "action":{"type":"reset"}}));
    let err = env
        .client
        .create_svm(&svm_create("svm1"))
        .await
        .unwrap_err();
    // From the client's side a reset cannot be told apart from apply_then_reset.
    assert!(err.is_ambiguous(), "{err:?}");
    assert_eq!(env.requests("POST", "/api/svm/svms").await.len(), 1);
    assert_eq!(env.client.svm_by_name("svm1").await.unwrap(), None);
}

#[tokio::test]
async fn apply_then_reset_on_account_create_then_lookup() {
    let env = Env::start().await;
    let svm = env.create_svm("svm1").await;
    env.mock.fault_json(
        json!({"method":"POST","path":"/api/security/accounts","times":1,
        "action":{"type":"apply_then_reset"}}),
    );
    let pw = SecretString::from(SVM_PASSWORD.to_owned());
    let err = env
        .client
        .create_account(&AccountCreate {
            name: "opadmin".into(),
            owner_uuid: svm.uuid.clone(),
            role: "vsadmin".into(),
            password: pw.clone(),
            comment: None,
            applications: Vec::new(),
        })
        .await
        .unwrap_err();
    assert!(err.is_ambiguous());
    assert!(!format!("{err} {err:?}").contains(SVM_PASSWORD));
    assert_eq!(
        env.requests("POST", "/api/security/accounts").await.len(),
        1
    );
    assert!(
        env.client
            .account(&svm.uuid, "opadmin")
            .await
            .unwrap()
            .is_some()
    );
}

#[tokio::test]
async fn reset_on_get_is_retried_and_succeeds() {
    let env = Env::start().await;
    env.mock
        .fault_json(json!({"method":"GET","path":"/api/cluster","times":1,
        "action":{"type":"reset"}}));
    env.client.cluster().await.unwrap();
    assert_eq!(env.requests("GET", "/api/cluster").await.len(), 2);
}

#[tokio::test]
async fn server_error_on_get_is_retried_with_backoff() {
    let env = Env::start().await;
    env.mock
        .fault_json(json!({"method":"GET","path":"/api/svm/svms","times":2,
        "action":{"type":"error","status":500,"code":"13434889","message":"Internal error"}}));
    assert_eq!(env.client.svm_by_name("svm1").await.unwrap(), None);
    assert_eq!(env.requests("GET", "/api/svm/svms").await.len(), 3);

    // Persistent: three attempts, then a transient error that is not "absent".
    env.mock
        .fault_json(json!({"method":"GET","path":"/api/svm/svms",
        "action":{"type":"error","status":503,"code":"13434889","message":"Internal error"}}));
    let err = env.client.svm_by_name("svm1").await.unwrap_err();
    assert!(err.is_transient());
    assert!(!err.is_ambiguous());
    assert_eq!(err.ontap_code(), Some("13434889"));
    assert_eq!(env.requests("GET", "/api/svm/svms").await.len(), 6);
}

#[tokio::test]
async fn server_error_on_post_is_not_retried() {
    let env = Env::start().await;
    env.mock
        .fault_json(json!({"method":"POST","path":"/api/svm/svms","times":1,
        "action":{"type":"error","status":500,"code":"13434889","message":"Internal error"}}));
    let err = env
        .client
        .create_svm(&svm_create("svm1"))
        .await
        .unwrap_err();
    assert!(err.is_transient());
    assert!(!err.is_ambiguous(), "an answered error is not ambiguous");
    assert_eq!(
        err.status(),
        Some(reqwest::StatusCode::INTERNAL_SERVER_ERROR)
    );
    assert_eq!(env.requests("POST", "/api/svm/svms").await.len(), 1);
}

#[tokio::test]
async fn hang_on_create_past_the_timeout_is_transient_and_ambiguous() {
    let env = Env::start_with(mock_config(), |cfg| {
        cfg.request_timeout = Duration::from_millis(300)
    })
    .await;
    env.mock
        .fault_json(json!({"method":"POST","path":"/api/svm/svms","times":1,
        "action":{"type":"hang"}}));
    let err = env
        .client
        .create_svm(&svm_create("svm1"))
        .await
        .unwrap_err();
    assert!(matches!(err, OntapError::Timeout { .. }), "{err:?}");
    assert!(err.is_transient());
    assert!(err.is_ambiguous());
    assert_eq!(env.requests("POST", "/api/svm/svms").await.len(), 1);
}

#[tokio::test]
async fn hang_on_get_is_retried_after_the_timeout() {
    let env = Env::start_with(mock_config(), |cfg| {
        cfg.request_timeout = Duration::from_millis(300)
    })
    .await;
    env.mock
        .fault_json(json!({"method":"GET","path":"/api/cluster","times":1,
        "action":{"type":"hang"}}));
    env.client.cluster().await.unwrap();
    assert_eq!(env.requests("GET", "/api/cluster").await.len(), 2);
}

#[tokio::test]
async fn delay_within_the_timeout_is_just_slow() {
    let env = Env::start().await;
    env.mock
        .fault_json(json!({"path":"/api/cluster/jobs/*","action":{"type":"delay","ms":200}}));
    let svm = env.create_svm("svm1").await;
    assert_eq!(svm.state, Some(SvmState::Running));
}

#[tokio::test]
async fn failed_job_is_a_typed_error_with_code_and_message() {
    let env = Env::start().await;
    env.mock
        .fault_json(json!({"method":"POST","path":"/api/svm/svms","times":1,
        "action":{"type":"job_failure","code":"13434889","message":"Internal error in job"}}));
    let err = env
        .client
        .create_svm(&svm_create("svm1"))
        .await
        .unwrap_err();
    match &err {
        OntapError::JobFailed { code, message, .. } => {
            assert_eq!(code, "13434889");
            assert!(message.contains("Internal error in job"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert!(err.is_transient());
    assert!(!err.is_ambiguous());
    assert_eq!(env.client.svm_by_name("svm1").await.unwrap(), None);

    env.mock
        .fault_json(json!({"method":"DELETE","path":"/api/svm/svms/*","times":1,
        "action":{"type":"job_failure","code":"2621525","message":"CIFS server exists"}}));
    let svm = env.create_svm("svm2").await;
    let err = env.client.delete_svm(&svm.uuid).await.unwrap_err();
    assert_eq!(err.ontap_code(), Some("2621525"));
    assert_eq!(err.class(), ErrorClass::Invalid);
    assert!(env.client.svm_by_name("svm2").await.unwrap().is_some());
}

#[tokio::test]
async fn expired_job_is_ambiguous() {
    // The job outlasts the time the POST may wait for it (half the request timeout), so it is
    // polled, and gone by the first poll after its end.
    let mut mock = mock_config();
    mock.settings.job_duration_ms = 1500;
    let env = Env::start_with(mock, |cfg| {
        cfg.request_timeout = Duration::from_secs(2);
        cfg.job_poll.initial_interval = Duration::from_millis(300);
    })
    .await;
    env.mock.state().update_settings(|s| s.job_expiry_ms = 0);
    let err = env
        .client
        .create_svm(&svm_create("svm1"))
        .await
        .unwrap_err();
    assert!(matches!(err, OntapError::JobExpired { .. }), "{err:?}");
    assert!(err.is_ambiguous());
    // The SVM was created; the lookup settles it.
    assert!(env.client.svm_by_name("svm1").await.unwrap().is_some());
}

#[tokio::test]
async fn job_past_the_deadline_is_an_ambiguous_timeout() {
    let mut config = mock_config();
    config.settings.job_duration_ms = 5_000;
    let env = Env::start_with(config, |cfg| {
        cfg.job_poll.deadline = Duration::from_millis(400)
    })
    .await;
    let err = env
        .client
        .create_svm(&svm_create("svm1"))
        .await
        .unwrap_err();
    assert!(matches!(err, OntapError::JobTimeout { .. }), "{err:?}");
    assert!(err.is_ambiguous());
    assert!(err.is_transient());
}

#[tokio::test]
async fn patch_is_retried_on_a_transient_error() {
    let env = Env::start().await;
    let svm = env.create_svm("svm1").await;
    env.mock
        .fault_json(json!({"method":"PATCH","path":"/api/svm/svms/*","times":1,
        "action":{"type":"error","status":500,"code":"13434889","message":"Internal error"}}));
    env.client
        .patch_svm(
            &svm.uuid,
            &SvmPatch {
                comment: Some("x".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        env.requests("PATCH", &format!("/api/svm/svms/{}", svm.uuid))
            .await
            .len(),
        2
    );
}

#[tokio::test]
async fn delete_whose_answer_is_lost_is_retried_and_reports_already_absent() {
    let env = Env::start().await;
    let svm = env.create_svm("svm1").await;
    let lif = env
        .client
        .create_interface(&lif(&svm.uuid, "data1", "10.1.0.10"))
        .await
        .unwrap();
    env.mock.fault_json(
        json!({"method":"DELETE","path":"/api/network/ip/interfaces/*","times":1,
        "action":{"type":"apply_then_reset"}}),
    );
    assert_eq!(
        env.client.delete_interface(&lif.uuid).await.unwrap(),
        DeleteOutcome::AlreadyAbsent
    );
    assert_eq!(
        env.requests(
            "DELETE",
            &format!("/api/network/ip/interfaces/{}", lif.uuid)
        )
        .await
        .len(),
        2
    );
}

#[tokio::test]
async fn password_change_with_lost_answer_is_not_retried() {
    let env = Env::start().await;
    let svm = env.create_svm("svm1").await;
    let pw = SecretString::from(SVM_PASSWORD.to_owned());
    take_over_vsadmin(&env.client, &svm.uuid, &pw).await;
    let path = format!("/api/security/accounts/{}/vsadmin", svm.uuid);
    env.mock
        .fault_json(json!({"method":"PATCH","path":path,"times":1,
        "action":{"type":"apply_then_reset"}}));
    let new_pw = SecretString::from("RotatedSecret2024zz".to_owned());
    let err = env
        .client
        .set_account_password(&svm.uuid, "vsadmin", &new_pw)
        .await
        .unwrap_err();
    assert!(err.is_ambiguous(), "{err:?}");
    assert_eq!(
        env.requests("PATCH", &path).await.len(),
        3,
        "password, unlock + one"
    );
    // The caller settles it by trying the new password.
    assert!(
        env.client
            .verify_credentials("vsadmin", &new_pw, "svm1")
            .await
            .unwrap()
            .is_valid()
    );
}

#[tokio::test]
async fn verify_credentials_on_server_errors_is_an_error_not_rejected() {
    let env = Env::start().await;
    env.create_svm("svm1").await;
    env.mock
        .fault_json(json!({"method":"GET","path":"/api/svm/svms",
        "action":{"type":"error","status":500,"code":"13434889","message":"Internal error"}}));
    let pw = SecretString::from(SVM_PASSWORD.to_owned());
    let err = env
        .client
        .verify_credentials("vsadmin", &pw, "svm1")
        .await
        .unwrap_err();
    assert!(err.is_transient());
    env.mock
        .fault_json(json!({"method":"GET","path":"/api/svm/svms","action":{"type":"reset"}}));
    assert!(
        env.client
            .verify_credentials("vsadmin", &pw, "svm1")
            .await
            .is_err()
    );
}

// ---------------------------------------------------------------------------------------------
// TLS

#[tokio::test]
async fn over_tls_trusting_the_mock_certificate() {
    let mock = Mock::start_tls(mock_config()).await;
    let base = mock.base_url();
    assert!(base.starts_with("https://"), "{base}");
    let pem = mock.server.cert_pem().unwrap().as_bytes().to_vec();

    let mut cfg = client_config(&base);
    cfg.tls = TlsVerification::CaBundle(pem);
    let client = OntapClient::new(cfg).unwrap();
    client.cluster().await.unwrap();
    let svm = client.create_svm(&svm_create("tls1")).await.unwrap();
    assert_eq!(svm.state, Some(SvmState::Running));
    client
        .create_interface(&lif(&svm.uuid, "data1", "10.2.0.10"))
        .await
        .unwrap();
    let pw = SecretString::from(SVM_PASSWORD.to_owned());
    take_over_vsadmin(&client, &svm.uuid, &pw).await;
    assert!(
        client
            .verify_credentials("vsadmin", &pw, "tls1")
            .await
            .unwrap()
            .is_valid()
    );
    assert_eq!(
        client.delete_svm(&svm.uuid).await.unwrap(),
        DeleteOutcome::Deleted
    );

    // Without trusting the certificate: a transport error, never "rejected".
    let mut cfg = client_config(&base);
    cfg.retry.max_attempts = 1;
    let untrusting = OntapClient::new(cfg).unwrap();
    let err = untrusting.cluster().await.unwrap_err();
    assert!(matches!(err, OntapError::Transport { .. }), "{err:?}");
    assert!(
        untrusting
            .verify_credentials("vsadmin", &pw, "tls1")
            .await
            .is_err()
    );

    // Explicitly insecure works (and warns).
    let mut cfg = client_config(&base);
    cfg.tls = TlsVerification::InsecureSkipVerify;
    OntapClient::new(cfg).unwrap().cluster().await.unwrap();
}

#[tokio::test]
async fn ambiguous_create_over_tls() {
    let mock = Mock::start_tls(mock_config()).await;
    let mut cfg = client_config(&mock.base_url());
    cfg.tls = TlsVerification::CaBundle(mock.server.cert_pem().unwrap().as_bytes().to_vec());
    let client = OntapClient::new(cfg).unwrap();
    mock.fault_json(json!({"method":"POST","path":"/api/svm/svms","times":1,
        "action":{"type":"apply_then_reset"}}));
    let err = client.create_svm(&svm_create("tls2")).await.unwrap_err();
    assert!(err.is_ambiguous(), "{err:?}");
    assert!(client.svm_by_name("tls2").await.unwrap().is_some());
}

// ---------------------------------------------------------------------------------------------
// Trust and routing

/// The fingerprint of the mock's (self-signed) certificate is enough to trust it; any other
/// fingerprint is a transport error, never a connection.
#[tokio::test]
async fn a_pinned_fingerprint_is_the_whole_trust_decision() {
    use ontap_client::CertificateFingerprint;
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;

    let mock = Mock::start_tls(mock_config()).await;
    let der = CertificateDer::from_pem_slice(mock.server.cert_pem().unwrap().as_bytes()).unwrap();
    let mut cfg = client_config(&mock.base_url());
    cfg.tls = TlsVerification::Pinned(CertificateFingerprint::of(&der));
    OntapClient::new(cfg).unwrap().cluster().await.unwrap();

    let mut cfg = client_config(&mock.base_url());
    cfg.retry.max_attempts = 1;
    cfg.tls = TlsVerification::Pinned(CertificateFingerprint([0; 32]));
    let err = OntapClient::new(cfg).unwrap().cluster().await.unwrap_err();
    assert!(matches!(err, OntapError::Transport { .. }), "{err:?}");
}

/// A configured proxy is used: it sees the CONNECT to the cluster.
#[tokio::test]
async fn a_configured_proxy_carries_the_requests() {
    use tokio::io::AsyncReadExt;
    let proxy = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = proxy.local_addr().unwrap();
    let seen = tokio::spawn(async move {
        let (mut socket, _) = proxy.accept().await.unwrap();
        let mut head = vec![0u8; 1024];
        let n = socket.read(&mut head).await.unwrap();
        String::from_utf8_lossy(&head[..n]).into_owned()
    });
    let mut cfg = client_config("https://ontap.invalid:8443");
    cfg.retry.max_attempts = 1;
    cfg.proxy = Some(format!("http://{address}").parse().unwrap());
    let _ = OntapClient::new(cfg).unwrap().cluster().await;
    let head = seen.await.unwrap();
    assert!(head.starts_with("CONNECT ontap.invalid:8443"), "{head}");
}

/// The proxy variables of the environment are not used for ONTAP: run in a child process of
/// this test binary, with every proxy variable pointing at a port where nothing listens.
#[test]
fn proxy_variables_of_the_environment_are_ignored() {
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "client::requests_go_straight_to_the_cluster",
            "--ignored",
            "--nocapture",
        ])
        .env("HTTPS_PROXY", "http://127.0.0.1:9")
        .env("https_proxy", "http://127.0.0.1:9")
        .env("HTTP_PROXY", "http://127.0.0.1:9")
        .env("ALL_PROXY", "http://127.0.0.1:9")
        .env_remove("NO_PROXY")
        .env_remove("no_proxy")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && out.contains("1 passed"),
        "{out}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[tokio::test]
#[ignore = "run by proxy_variables_of_the_environment_are_ignored with proxy variables set"]
async fn requests_go_straight_to_the_cluster() {
    let mock = Mock::start_tls(mock_config()).await;
    let mut cfg = client_config(&mock.base_url());
    cfg.retry.max_attempts = 1;
    cfg.tls = TlsVerification::CaBundle(mock.server.cert_pem().unwrap().as_bytes().to_vec());
    OntapClient::new(cfg).unwrap().cluster().await.unwrap();
}

/// A job that ends within half the request timeout is answered by the request that started it
/// (`return_timeout`, 200), not polled.
#[tokio::test]
async fn a_short_job_is_answered_without_polling() {
    let mut mock = mock_config();
    mock.settings.job_duration_ms = 300;
    let env = Env::start_with(mock, |cfg| cfg.request_timeout = Duration::from_secs(4)).await;
    let svm = env.client.create_svm(&svm_create("svm1")).await.unwrap();
    env.client.delete_svm(&svm.uuid).await.unwrap();
    let requests = env.mock.requests(&[]).await;
    let polls = requests
        .iter()
        .filter(|r| {
            r["path"]
                .as_str()
                .unwrap_or_default()
                .starts_with("/api/cluster/jobs/")
        })
        .count();
    assert_eq!(polls, 0, "{requests:#?}");
    let waited: Vec<_> = requests
        .iter()
        .filter(|r| r["method"] != "GET")
        .map(|r| (r["query"].clone(), r["status"].clone()))
        .collect();
    assert!(
        waited.iter().all(|(query, status)| query
            .as_str()
            .unwrap_or_default()
            .contains("return_timeout=2")
            && *status == 200),
        "{waited:?}"
    );
    assert!(env.client.svm_by_name("svm1").await.unwrap().is_none());
}

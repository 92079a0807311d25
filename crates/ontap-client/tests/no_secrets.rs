//! No password in logs, spans, errors or metrics while the client works against mock-ontap.
//! A test binary of its own: the capturing subscriber is thread-local, and tests running in
//! parallel in one process would race on tracing's per-callsite interest cache.
#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ontap_client::{AccountCreate, CredentialCheck, OntapMetrics};
use secrecy::SecretString;
use serde_json::json;
use test_support::ontap::*;

// ---------------------------------------------------------------------------------------------
// Secrets, spans and metrics

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Capture {
    type Writer = Capture;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

#[tokio::test]
async fn no_password_in_logs_spans_errors_or_metrics() {
    let capture = Capture::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(capture.clone())
        .with_max_level(tracing::Level::TRACE)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let metrics = OntapMetrics::new();
    let mut registry = prometheus_client::registry::Registry::default();
    metrics.register(&mut registry);
    let m = metrics.clone();
    // The SVM job outlasts the time its POST may wait for it (half the request timeout), so it
    // is polled, and the job's endpoint and outcome reach the metrics checked below.
    let mut mock = mock_config();
    mock.settings.job_duration_ms = 1500;
    let env = Env::start_with(mock, move |cfg| {
        cfg.metrics = Some(m);
        cfg.request_timeout = Duration::from_secs(2);
    })
    .await;
    let c = &env.client;
    let svm = env.create_svm("svm1").await;
    let pw = SecretString::from(SVM_PASSWORD.to_owned());
    let mut errors = Vec::new();
    take_over_vsadmin(c, &svm.uuid, &pw).await;
    c.create_account(&AccountCreate {
        name: "opadmin".into(),
        owner_uuid: svm.uuid.clone(),
        role: "vsadmin".into(),
        password: pw.clone(),
        comment: None,
        applications: Vec::new(),
    })
    .await
    .unwrap();
    // Failures whose requests carried the password.
    errors.push(
        c.create_account(&AccountCreate {
            name: "opadmin".into(),
            owner_uuid: svm.uuid.clone(),
            role: "vsadmin".into(),
            password: pw.clone(),
            comment: None,
            applications: Vec::new(),
        })
        .await
        .unwrap_err(),
    );
    errors.push(
        c.set_account_password(&svm.uuid, "opadmin", &pw)
            .await
            .unwrap_err(),
    );
    // A password containing the user name: ONTAP's message talks about it.
    let with_name = SecretString::from("opadminSecret123".to_owned());
    errors.push(
        c.set_account_password(&svm.uuid, "opadmin", &with_name)
            .await
            .unwrap_err(),
    );
    let wrong = SecretString::from("WrongSecret999xyz".to_owned());
    assert_eq!(
        c.verify_credentials("opadmin", &wrong, "svm1")
            .await
            .unwrap(),
        CredentialCheck::Rejected
    );
    env.mock.fault_json(
        json!({"method":"PATCH","path":"/api/security/accounts/*","times":1,
        "action":{"type":"apply_then_reset"}}),
    );
    errors.push(
        c.set_account_password(
            &svm.uuid,
            "opadmin",
            &SecretString::from("AnotherSecret777q".to_owned()),
        )
        .await
        .unwrap_err(),
    );
    c.verify_credentials("opadmin", &pw, "svm1").await.ok();

    let logs = String::from_utf8(capture.0.lock().unwrap().clone()).unwrap();
    let mut text = logs.clone();
    for e in &errors {
        text.push_str(&format!("{e}\n{e:?}\n"));
    }
    text.push_str(&format!("{:?} {:?}", env.client, metrics));
    let mut encoded = String::new();
    prometheus_client::encoding::text::encode(&mut encoded, &registry).unwrap();
    text.push_str(&encoded);
    for secret in [
        ADMIN_PASSWORD,
        SVM_PASSWORD,
        "opadminSecret123",
        "WrongSecret999xyz",
        "AnotherSecret777q",
    ] {
        assert!(!text.contains(secret), "{secret} leaked");
    }
    // Basic auth headers (base64 of user:password) must not show either.
    for (user, pw) in [("admin", ADMIN_PASSWORD), ("opadmin", SVM_PASSWORD)] {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pw}"));
        assert!(!text.contains(&b64), "auth header of {user} leaked");
    }

    // The spans are there, with template paths and outcomes.
    assert!(logs.contains("ontap.request"), "{logs}");
    assert!(logs.contains(r#"path="/api/svm/svms""#), "{logs}");
    assert!(
        logs.contains(r#"path="/api/security/accounts/{owner.uuid}/{name}""#),
        "{logs}"
    );
    assert!(logs.contains("status=409"), "{logs}");
    assert!(logs.contains("ontap_code="), "{logs}");
    assert!(logs.contains("attempt=1"), "{logs}");
    // Metrics use templates, never concrete uuids.
    assert!(
        encoded.contains("endpoint=\"/api/svm/svms/{uuid}\"")
            || encoded.contains("endpoint=\"/api/cluster/jobs/{uuid}\""),
        "{encoded}"
    );
    assert!(!encoded.contains(&svm.uuid), "{encoded}");
    assert!(
        encoded.contains("ontap_client_jobs_total{outcome=\"success\"}"),
        "{encoded}"
    );
    assert!(encoded.contains("code=\"1\""), "{encoded}");
}

//! Property tests of the response parsers: whatever ONTAP (or something pretending to be it)
//! sends, parsing yields a value or a typed error, never a panic, and no error text quotes the
//! body.
#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use reqwest::{Method, StatusCode};
use serde_json::Value;

use super::error::{ApiError, OntapError};
use super::model::{
    Account, Aggregate, ClusterInfo, Collection, IpInterface, Job, JobLink, Node, Svm, decode,
    resolve_next,
};

/// Field names the parsers look at, so random documents often hit the interesting paths.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(vec![
            "uuid", "name", "state", "records", "num_records", "_links", "next", "href", "error",
            "code", "message", "target", "arguments", "job", "version", "generation", "major",
            "minor", "full", "ip", "address", "netmask", "svm", "owner", "role", "locked",
            "applications", "space", "description", "aggregates", "nfs", "enabled",
        ])
        .prop_map(str::to_owned),
        1 => "[a-z_.]{0,8}",
    ]
}

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        prop::sample::select(vec![
            "queued", "running", "success", "failure", "paused", "stopped", "1", "13434894", "",
        ])
        .prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 96, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(key(), inner, 0..8)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Runs every parser over the bytes; each must return, and a failure must be a Decode error.
fn parse_all(body: &[u8]) {
    fn check<T: serde::de::DeserializeOwned>(body: &[u8]) {
        match decode::<T>(&Method::GET, "/api/x", StatusCode::OK, body) {
            Ok(_) | Err(OntapError::Decode { .. }) => {}
            Err(other) => panic!("unexpected error kind: {other:?}"),
        }
    }
    let _ = ApiError::parse(body);
    check::<ClusterInfo>(body);
    check::<Job>(body);
    check::<JobLink>(body);
    check::<Svm>(body);
    check::<Collection<Svm>>(body);
    check::<Collection<Node>>(body);
    check::<Collection<Aggregate>>(body);
    check::<Collection<IpInterface>>(body);
    check::<Collection<Account>>(body);
    if let Ok(c) = serde_json::from_slice::<Collection<Node>>(body)
        && let Some(href) = c.next_href()
    {
        let base = reqwest::Url::parse("https://cluster.example:443/").unwrap();
        if let Ok(next) = resolve_next(&base, href) {
            assert_eq!(next.origin(), base.origin());
            assert!(next.path().starts_with("/api/"));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_bytes_never_panic(body in prop::collection::vec(any::<u8>(), 0..512)) {
        parse_all(&body);
    }

    #[test]
    fn random_json_never_panics(doc in json()) {
        parse_all(&serde_json::to_vec(&doc).unwrap());
    }

    #[test]
    fn truncated_valid_documents_are_decode_errors(cut in 0usize..200) {
        let full = br#"{"records":[{"uuid":"u1","name":"svm1","state":"running"}],"num_records":1,"_links":{"next":{"href":"/api/svm/svms?start.uuid=u1"}}}"#;
        let cut = cut.min(full.len() - 1);
        let r = decode::<Collection<Svm>>(&Method::GET, "/api/svm/svms", StatusCode::OK, &full[..cut]);
        let is_decode = matches!(r, Err(OntapError::Decode { .. }));
        prop_assert!(is_decode, "{:?}", r);
    }

    #[test]
    fn error_codes_survive_as_strings(code in prop_oneof![
        any::<u32>().prop_map(Value::from),
        "[0-9]{1,9}".prop_map(Value::from),
    ], message in ".{0,40}") {
        let body = serde_json::json!({"error": {"code": code.clone(), "message": message}});
        let e = ApiError::parse(&serde_json::to_vec(&body).unwrap()).unwrap();
        let expected = match code { Value::String(s) => s, other => other.to_string() };
        prop_assert_eq!(e.code, expected);
    }

    #[test]
    fn job_state_strings_parse_to_some_state(state in ".{0,12}") {
        let body = serde_json::json!({"uuid": "j", "state": state});
        let job: Job = serde_json::from_value(body).unwrap();
        prop_assert_eq!(job.state.is_terminal(), state == "success" || state == "failure");
    }

    #[test]
    fn decode_errors_never_quote_body_values(secret in "[A-Za-z0-9]{12,24}", doc in json()) {
        // The secret sits where the parser expects something else, among random siblings.
        let body = serde_json::json!({"uuid": secret.clone(), "name": 7, "state": {"x": secret.clone()}, "junk": doc});
        let bytes = serde_json::to_vec(&body).unwrap();
        for text in [
            decode::<Svm>(&Method::GET, "/api/x", StatusCode::OK, &bytes).err().map(|e| format!("{e} {e:?}")),
            decode::<Job>(&Method::GET, "/api/x", StatusCode::OK, &bytes).err().map(|e| format!("{e} {e:?}")),
            decode::<ClusterInfo>(&Method::GET, "/api/x", StatusCode::OK, &bytes).err().map(|e| format!("{e} {e:?}")),
        ].into_iter().flatten() {
            prop_assert!(!text.contains(&secret), "{}", text);
        }
    }

    #[test]
    fn redaction_removes_secret_everywhere(secret in "[A-Za-z0-9]{8,24}", prefix in ".{0,20}", suffix in ".{0,20}") {
        let body = serde_json::json!({"error": {
            "code": "7077919",
            "message": format!("{prefix}{secret}{suffix}"),
            "target": secret.clone(),
            "arguments": [{"code": "1", "message": secret.clone()}],
        }});
        let mut e = ApiError::parse(&serde_json::to_vec(&body).unwrap()).unwrap();
        e.redact(&secret);
        let shown = format!("{e:?}");
        prop_assert!(!shown.contains(&secret), "{}", shown);
    }
}

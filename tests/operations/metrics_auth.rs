//! `/metrics` names every tenant's namespace and failure, so it answers only a bearer token the
//! API server authenticates and authorizes for `get /metrics` (issue 38, item 8). The operator
//! asks with a TokenReview and a SubjectAccessReview, as its ServiceAccount with the generated
//! ClusterRole; the caller here is a ServiceAccount with a token from the API server, first
//! without the permission, then bound to the chart's `ontap-operator-metrics-reader` rule.

use std::time::Duration;

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{Api, PostParams};
use serde_json::json;

use crate::support::mock::fast_mock;
use crate::support::poll;
use crate::support::svm::SvmWorld;

#[tokio::test]
async fn metrics_answer_only_a_token_allowed_to_read_them() {
    let world = SvmWorld::with(fast_mock(), &["--metrics-auth=kubernetes"]).await;
    world
        .operator
        .wait_readyz(200, Duration::from_secs(60))
        .await;
    let url = format!("http://{}/metrics", world.operator.metrics);
    let http = reqwest::Client::new();
    let status = |token: Option<String>| {
        let request = http.get(&url);
        let request = match token {
            Some(token) => request.bearer_auth(token),
            None => request,
        };
        async move { request.send().await.unwrap().status().as_u16() }
    };
    assert_eq!(status(None).await, 401, "no token");
    assert_eq!(
        status(Some("not-a-token".into())).await,
        401,
        "a token nobody issued"
    );

    let ns = &world.env.namespace;
    let accounts: Api<ServiceAccount> = Api::namespaced(world.env.client.clone(), ns);
    accounts
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "scraper"}})).unwrap(),
        )
        .await
        .unwrap();
    let token = accounts
        .create_token_request(
            "scraper",
            &PostParams::default(),
            &TokenRequest {
                spec: TokenRequestSpec {
                    expiration_seconds: Some(600),
                    ..TokenRequestSpec::default()
                },
                ..TokenRequest::default()
            },
        )
        .await
        .unwrap()
        .status
        .unwrap()
        .token;
    assert_eq!(
        status(Some(token.clone())).await,
        403,
        "authenticated, not allowed"
    );

    // The chart's reader role, bound as an administrator binds it to Prometheus.
    let role = format!("metrics-reader-{ns}");
    Api::<ClusterRole>::all(world.env.client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": role},
                "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    Api::<ClusterRoleBinding>::all(world.env.client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": role},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                "subjects": [{"kind": "ServiceAccount", "name": "scraper", "namespace": ns}]
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    // A decision is reused for 30 s: the permission shows within that.
    poll(
        "the bound token reads /metrics",
        Duration::from_secs(60),
        async || match status(Some(token.clone())).await {
            200 => Ok(()),
            other => Err(format!("status {other}")),
        },
    )
    .await;
    let body = http
        .get(&url)
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(body.contains("# EOF"), "the metrics themselves: {body}");
}

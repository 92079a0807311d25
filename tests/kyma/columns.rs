//! What `kubectl get kyma` and `kubectl get helmcomponent` print (the API server's Table, which
//! kubectl asks for) and the short names they answer to (API discovery), from the CRDs of
//! `crds/` as the test harness installs them.

use kube::api::{Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::support::kyma::{helm_component, kyma};
use crate::support::{env, table};

/// The column names of a Table and the first row's cells, by column name.
fn columns(table: &Value) -> (Vec<String>, Vec<(String, Value)>) {
    let names: Vec<String> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_owned())
        .collect();
    let cells = table["rows"][0]["cells"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let row = names.iter().cloned().zip(cells).collect();
    (names, row)
}

fn cell<'a>(row: &'a [(String, Value)], name: &str) -> &'a Value {
    &row.iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no column {name}: {row:?}"))
        .1
}

#[tokio::test]
async fn kubectl_get_shows_status_and_what_a_kyma_waits_for() {
    let env = env().await;
    let ns = &env.namespace;
    let kymas: kube::Api<kyma_inventory::api::Kyma> = kube::Api::namespaced(env.client.clone(), ns);
    kymas
        .create(
            &PostParams::default(),
            &kyma("k", &[("ory", None), ("kiali", None)]),
        )
        .await
        .unwrap();
    kymas
        .patch_status(
            "k",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"status": {"status": "reconciling", "waitingFor": ["ory", "kiali"]}}),
            ),
        )
        .await
        .unwrap();
    let components: kube::Api<kyma_inventory::api::HelmComponent> =
        kube::Api::namespaced(env.client.clone(), ns);
    components
        .create(&PostParams::default(), &helm_component("k-ory", "ory"))
        .await
        .unwrap();
    components
        .patch_status(
            "k-ory",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {
                "status": "failing",
                "lastReconciliation": "2026-01-02T03:04:05.000000Z"
            }})),
        )
        .await
        .unwrap();

    let base = "/apis/inventory.kyma-project.io/v1alpha1/namespaces";
    let (names, row) = columns(&table(&env.client, &format!("{base}/{ns}/kymas")).await);
    for want in ["Name", "Status", "WaitingFor", "Age"] {
        assert!(names.iter().any(|n| n == want), "kyma columns {names:?}");
    }
    assert_eq!(cell(&row, "Name"), "k");
    assert_eq!(cell(&row, "Status"), "reconciling");
    let waiting = cell(&row, "WaitingFor").to_string();
    assert!(
        waiting.contains("ory") && waiting.contains("kiali"),
        "WaitingFor cell {waiting}"
    );

    let (names, row) = columns(&table(&env.client, &format!("{base}/{ns}/helmcomponents")).await);
    for want in ["Name", "Component", "Status", "Last Reconciliation", "Age"] {
        assert!(
            names.iter().any(|n| n == want),
            "helmcomponent columns {names:?}"
        );
    }
    assert_eq!(cell(&row, "Component"), "ory");
    assert_eq!(cell(&row, "Status"), "failing");
    // A date column prints as an age ("…d", "…y"), never empty once set.
    let age = cell(&row, "Last Reconciliation")
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        !age.is_empty() && age != "<unknown>",
        "Last Reconciliation cell {age:?}"
    );
}

#[tokio::test]
async fn kyma_kinds_answer_to_their_short_names() {
    let env = env().await;
    let request = http::Request::get("/apis/inventory.kyma-project.io/v1alpha1")
        .body(Vec::new())
        .unwrap();
    let list: Value = env.client.request(request).await.unwrap();
    let short = |plural: &str| -> Vec<String> {
        list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == plural)
            .unwrap_or_else(|| panic!("{plural} not served: {list}"))["shortNames"]
            .as_array()
            .map(|a| a.iter().map(|s| s.as_str().unwrap().to_owned()).collect())
            .unwrap_or_default()
    };
    assert_eq!(short("kymas"), ["ky"]);
    assert_eq!(short("helmcomponents"), ["hc"]);
    assert_eq!(short("clusters"), ["kcluster"]);
}

//! Issue 10, point 5: with the toy's backend down, what `kubectl get toys -o wide` shows (the
//! failing step, its reason, the attempts so far and the trace), and the trace id in the
//! Event.

use std::time::Duration;

use k8s_openapi::api::events::v1::Event;
use kube::Api;
use kube::api::ListParams;
use reconcile_engine::StepName;
use serde_json::Value;

use super::{fast_backoff, unlimited};
use crate::toy::toy;
use crate::toy::{ToyController, ToyStep, create};
use test_support::{env, poll, table};

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

/// The wide columns of toy `name`: step, reason, attempts, trace.
fn wide(table: &Value, name: &str) -> Option<(String, String, i64, String)> {
    let columns: Vec<&str> = table["columnDefinitions"]
        .as_array()?
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    let cell = |row: &Value, column: &str| -> Value {
        columns
            .iter()
            .position(|c| *c == column)
            .map(|i| row["cells"][i].clone())
            .unwrap_or_default()
    };
    let row = table["rows"]
        .as_array()?
        .iter()
        .find(|r| r["cells"][0] == name)?;
    Some((
        cell(row, "Step").as_str()?.to_owned(),
        cell(row, "Reason").as_str()?.to_owned(),
        cell(row, "Attempts").as_i64()?,
        cell(row, "Trace").as_str()?.to_owned(),
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wide_output_shows_the_failing_step_its_reason_attempts_and_trace() {
    let env = env().await;
    let ctl = ToyController::new(fast_backoff())
        .limits(unlimited())
        .trace_id(TRACE)
        .start(&env)
        .await;
    ctl.world.set_down("down", true);
    create(&env, toy("down").value(1).build()).await;
    let path = format!(
        "/apis/enginetest.ontap.storage.dev/v1/namespaces/{}/toys",
        env.namespace
    );

    let first = poll(
        "a failed attempt in the table",
        Duration::from_secs(30),
        async || wide(&table(&env.client, &path).await, "down").filter(|w| w.2 >= 1),
    )
    .await;
    assert_eq!(first.0, ToyStep::BackendReady.as_str());
    assert_eq!(first.1, "BackendDown");
    assert_eq!(first.3, TRACE);
    let later = poll(
        "more attempts in the table",
        Duration::from_secs(30),
        async || wide(&table(&env.client, &path).await, "down").filter(|w| w.2 >= first.2 + 2),
    )
    .await;
    assert_eq!(
        (later.0.as_str(), later.1.as_str()),
        (first.0.as_str(), first.1.as_str())
    );

    let columns = table(&env.client, &path).await["columnDefinitions"].clone();
    for name in ["Step", "Reason", "Attempts", "Trace"] {
        let column = columns
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no column {name}: {columns}"));
        assert_eq!(column["priority"], 1, "{name} is for -o wide");
    }

    let events: Api<Event> = Api::namespaced(env.client.clone(), &env.namespace);
    let list = events.list(&ListParams::default()).await.unwrap().items;
    let warning = list
        .iter()
        .find(|e| e.reason.as_deref() == Some("BackendDown"))
        .unwrap_or_else(|| panic!("no BackendDown Event: {list:?}"));
    assert!(
        warning.note.as_deref().unwrap_or_default().contains(TRACE),
        "{:?}",
        warning.note
    );

    // Recovered: the columns are empty again.
    ctl.world.set_down("down", false);
    poll("the halt cleared", Duration::from_secs(30), async || {
        let t = table(&env.client, &path).await;
        let row = t["rows"]
            .as_array()?
            .iter()
            .find(|r| r["cells"][0] == "down")?
            .clone();
        let step = t["columnDefinitions"]
            .as_array()?
            .iter()
            .position(|c| c["name"] == "Step")?;
        row["cells"][step]
            .as_str()
            .is_none_or(str::is_empty)
            .then_some(())
    })
    .await;
    ctl.stop().await;
}

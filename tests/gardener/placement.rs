//! What `OntapConfig` says of a shoot's own SVM beyond its LIF addresses reaches ONTAP through
//! the Extension: the SVM's limits (its throughput ceiling too), a LIF's home node, home port
//! and service policy, and the SVM's routes.

use kube::api::Api;
use ontap_operator::api::StorageVirtualMachine;
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::gardener::Gardener;

use super::gardenlet::*;

const GIB: u64 = 1 << 30;

#[tokio::test]
async fn limits_lif_placement_and_routes_travel_through_ontap_config_into_ontap() {
    let g = Gardener::start().await;
    let w = world(&g).await;
    let ns = g.namespace.clone();
    create_cluster(&g, &ns, json!({})).await;
    let mut config = nfs_config(&w.cluster, "192.0.2.56", "192.0.2.57");
    config["svm"]["limits"] = json!({
        "maxVolumes": 40, "storageLimit": "200Gi", "storageLimitThresholdAlert": 80,
        "maxThroughputIops": 5000
    });
    config["svm"]["dataLifs"][0]["homeNode"] = json!("node-02");
    config["svm"]["dataLifs"][0]["homePort"] = json!("e0d");
    config["svm"]["dataLifs"][0]["servicePolicy"] = json!("default-data-blocks");
    config["svm"]["routes"] = json!([
        { "destination": "0.0.0.0/0", "gateway": "192.0.2.1" },
        { "destination": "198.51.100.0/24", "gateway": "192.0.2.2" }
    ]);
    let ts = create_extension(&g, &ns, config, "reconcile").await;
    wait_ready(&g, &w, &ns, &ts).await;

    let object = Api::<StorageVirtualMachine>::namespaced(g.seed.clone(), &ns)
        .get("ontap")
        .await
        .unwrap();
    let svm_name = object.status.unwrap().svm_name.unwrap();

    let limits = w
        .mock
        .as_admin(
            Method::GET,
            &format!("/api/svm/svms?name={svm_name}&fields=max_volumes,storage,qos_policy"),
            Value::Null,
        )
        .await["records"][0]
        .clone();
    // ONTAP answers `max_volumes` as a string.
    assert_eq!(limits["max_volumes"], "40", "{limits}");
    assert_eq!(limits["storage"]["limit"], 200 * GIB, "{limits}");
    assert_eq!(limits["storage"]["limit_threshold_alert"], 80, "{limits}");
    let ceiling = w
        .mock
        .as_admin(
            Method::GET,
            &format!(
                "/api/storage/qos/policies/{}?fields=fixed",
                limits["qos_policy"]["uuid"].as_str().unwrap()
            ),
            Value::Null,
        )
        .await;
    assert_eq!(
        ceiling["fixed"]["max_throughput_iops"], 5000,
        "the SVM applies its ceiling: {ceiling}"
    );

    let data = w.interface(&svm_name, "192.0.2.57");
    assert_eq!(data["location"]["home_node"]["name"], "node-02", "{data}");
    assert_eq!(data["location"]["home_port"]["name"], "e0d", "{data}");
    assert_eq!(
        data["service_policy"]["name"], "default-data-blocks",
        "{data}"
    );
    assert_eq!(
        w.routes(&svm_name).await,
        ["0.0.0.0/0 via 192.0.2.1", "198.51.100.0/24 via 192.0.2.2"]
    );
}

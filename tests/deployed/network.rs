//! The node itself: Pods get addresses of the Pod network in network namespaces the node made, and
//! from inside a Pod both a Service of other Pods and the `kubernetes` Service answer.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, Service, ServiceAccount};
use kube::api::{Api, LogParams, PostParams};
use serde_json::json;

use crate::release::shipped;
use crate::runtime::{network_namespace, pod_processes};
use crate::support::{create_namespace, poll};

const POD_NETWORK: &str = "10.252.0.";

#[tokio::test]
async fn pods_get_addresses_of_their_own_and_reach_services() {
    let shipped = shipped();
    let client = shipped.client().await;
    let toolbox = shipped.node.import("toolbox");
    let namespace = "network-check";
    create_namespace(&client, namespace, json!({})).await;
    // Pods wait for the namespace's ServiceAccount, which the controller-manager creates.
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), namespace);
    poll(
        "the default ServiceAccount",
        Duration::from_secs(30),
        async || accounts.get_opt("default").await.ok().flatten(),
    )
    .await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let services: Api<Service> = Api::namespaced(client.clone(), namespace);
    let pod = |name: &str, restart: &str, script: &str| -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {"app": name}},
            "spec": {"restartPolicy": restart, "containers": [{
                "name": name, "image": toolbox, "imagePullPolicy": "Never",
                "command": ["/bin/sh", "-c", script],
            }]}
        }))
        .unwrap()
    };
    pods.create(
        &PostParams::default(),
        &pod(
            "web",
            "Always",
            "mkdir -p /tmp/www && echo hello-through-a-service > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www",
        ),
    )
    .await
    .unwrap();
    services
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "web"},
                "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    let web = poll("the web Pod Running", Duration::from_secs(60), async || {
        let pod = pods.get("web").await.ok()?;
        let status = pod.status.clone()?;
        (status.phase.as_deref() == Some("Running")).then_some(pod)
    })
    .await;
    let ip = web.status.clone().unwrap().pod_ip.unwrap();
    assert!(
        ip.starts_with(POD_NETWORK),
        "the Pod's address {ip} is not of the Pod network"
    );
    let uid = web.metadata.uid.clone().unwrap();
    let processes = pod_processes(&uid);
    assert!(
        !processes.is_empty(),
        "no process of the web Pod on the host"
    );
    let own = network_namespace(std::process::id());
    for pid in processes {
        assert_ne!(
            network_namespace(pid),
            own,
            "the Pod's process {pid} runs in the host's network namespace"
        );
    }

    // Service variables are set for Services that exist when the Pod starts; busybox's wget
    // needs a resolver static glibc cannot load, so HTTP goes over nc.
    pods.create(
        &PostParams::default(),
        &pod(
            "client",
            "Never",
            "echo | nc -w 5 $KUBERNETES_SERVICE_HOST $KUBERNETES_SERVICE_PORT && echo kubernetes-service-connects && \
             printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 5 $WEB_SERVICE_HOST $WEB_SERVICE_PORT",
        ),
    )
    .await
    .unwrap();
    let phase = poll(
        "the client Pod finished",
        Duration::from_secs(60),
        async || {
            let status = pods.get("client").await.ok()?.status?;
            status.phase.filter(|p| p == "Succeeded" || p == "Failed")
        },
    )
    .await;
    let logs = pods.logs("client", &LogParams::default()).await.unwrap();
    assert_eq!(phase, "Succeeded", "the client Pod failed: {logs}");
    assert!(logs.contains("kubernetes-service-connects"), "{logs}");
    assert!(logs.contains("hello-through-a-service"), "{logs}");
}

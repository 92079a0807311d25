//! Images a landscape can relocate (issue 40 item 5): the image vector overwrite the landscape
//! gives the operator (`IMAGEVECTOR_OVERWRITE`, the chart's `imageVectorOverwrite`) decides
//! every image the shoot gets, and a shoot owner's providerConfig names one only where the
//! operator allows it (`--extension-allow-shoot-images`).

use crate::support::gardener::Gardener;
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use ontap_operator::extension::api::ErrorCode;
use ontap_operator::extension::imagevector::OVERWRITE_ENV;
use ontap_operator::extension::shoot::{INIT_MANAGED_RESOURCE, ShootImages};
use serde_json::{Value, json};

use super::gardenlet::*;

const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// The objects the `trident-init` ManagedResource carries.
async fn delivered_objects(g: &Gardener) -> Vec<Value> {
    let mr = g
        .managed_resources()
        .get(INIT_MANAGED_RESOURCE)
        .await
        .unwrap();
    let secret_name = mr.data["spec"]["secretRefs"][0]["name"].as_str().unwrap();
    let secret = Api::<Secret>::namespaced(g.seed.clone(), &g.namespace)
        .get(secret_name)
        .await
        .unwrap();
    secret
        .data
        .unwrap()
        .values()
        .map(|manifest| serde_yaml::from_slice(&manifest.0).unwrap())
        .collect()
}

/// The images of the workloads the `trident-init` ManagedResource carries, sorted.
async fn delivered_images(g: &Gardener) -> Vec<String> {
    let mut found = Vec::new();
    for object in delivered_objects(g).await {
        let pod = &object["spec"]["template"]["spec"];
        for list in ["initContainers", "containers"] {
            for container in pod[list].as_array().into_iter().flatten() {
                found.push(container["image"].as_str().unwrap().to_owned());
            }
        }
    }
    found.sort();
    found
}

/// What the delivered TridentOrchestrator has the Trident operator pull: `tridentImage`,
/// `autosupportImage` and `imageRegistry` (the CSI sidecars'), `null` where it names none.
async fn delivered_trident_images(g: &Gardener) -> [Value; 3] {
    let objects = delivered_objects(g).await;
    let orchestrator = objects
        .iter()
        .find(|o| o["kind"] == "TridentOrchestrator")
        .unwrap_or_else(|| panic!("no TridentOrchestrator in {objects:#?}"));
    ["tridentImage", "autosupportImage", "imageRegistry"]
        .map(|field| orchestrator["spec"][field].clone())
}

/// The image of the Trident operator's Deployment in the shoot, once the resource manager put
/// it there.
async fn trident_operator_in_shoot(g: &Gardener, w: &crate::support::svm::SvmWorld) -> String {
    let mut image = None;
    wait_for(
        w,
        "the Trident operator's Deployment in the shoot",
        async || {
            image = trident_operator_image_in_shoot(g).await;
            image.as_ref().map(|_| ())
        },
    )
    .await;
    image.unwrap_or_default()
}

fn nvme_config(cluster: &str) -> Value {
    json!({
        "apiVersion": "ontap.extensions.storage.dev/v1alpha1", "kind": "OntapConfig",
        "cluster": cluster,
        "svm": {"managementLif": {"ip": "192.0.2.90", "prefixLength": 24},
                "dataLifs": [{"ip": "192.0.2.91", "prefixLength": 24}], "protocols": ["nvme"]}
    })
}

/// As an air-gapped landscape writes it: every image moved to its mirror, some keeping the
/// embedded tag (no `tag`), one retagged, one pinned by digest, the CSI sidecars' registry, and
/// a name the extension does not deliver, which changes nothing.
#[tokio::test]
async fn an_image_vector_overwrite_relocates_every_image_the_shoot_gets() {
    let g = Gardener::start().await;
    let dir = tempfile::tempdir().unwrap();
    let overwrite = dir.path().join("images_overwrite.yaml");
    std::fs::write(
        &overwrite,
        format!(
            "images:
- name: trident-operator
  repository: mirror.example/netapp/trident-operator
- name: nvme-module-loader
  repository: mirror.example/library/busybox
  tag: \"1.36-mirrored\"
- name: pause-container
  repository: mirror.example/pause
  tag: \"{DIGEST}\"
- name: trident
  repository: mirror.example/netapp/trident
- name: trident-autosupport
  ref: mirror.example/netapp/trident-autosupport@{DIGEST}
- name: csi-sidecar-registry
  repository: mirror.example/sig-storage
- name: registry
  repository: mirror.example/registry
  tag: \"2\"
"
        ),
    )
    .unwrap();
    let w = world_with_env(&g, &[(OVERWRITE_ENV, overwrite.to_str().unwrap())]).await;
    let ns = g.namespace.clone();
    create_cluster(&g, &ns, json!({})).await;
    let ts = create_extension(&g, &ns, nvme_config(&w.cluster), "reconcile").await;
    wait_ready(&g, &w, &ns, &ts).await;

    let embedded = ShootImages::embedded().unwrap();
    let (_, trident_tag) = embedded.trident_operator.rsplit_once(':').unwrap();
    let trident = format!("mirror.example/netapp/trident-operator:{trident_tag}");
    let mut expected = vec![
        trident.clone(),
        "mirror.example/library/busybox:1.36-mirrored".to_owned(),
        format!("mirror.example/pause@{DIGEST}"),
    ];
    expected.sort();
    assert_eq!(delivered_images(&g).await, expected);
    let (_, release) = embedded.trident.rsplit_once(':').unwrap();
    assert_eq!(
        delivered_trident_images(&g).await,
        [
            json!(format!("mirror.example/netapp/trident:{release}")),
            json!(format!(
                "mirror.example/netapp/trident-autosupport@{DIGEST}"
            )),
            json!("mirror.example/sig-storage"),
        ]
    );
    assert_eq!(trident_operator_in_shoot(&g, &w).await, trident);
}

/// A providerConfig naming the Trident operator image is a configuration error naming the field
/// until the operator runs with `--extension-allow-shoot-images`; then that image is delivered.
#[tokio::test]
async fn a_shoot_s_own_image_needs_the_operator_s_permission() {
    const SHOOTS_IMAGE: &str = "registry.example/trident-operator:26.02.0";
    let g = Gardener::start().await;
    let mut w = world(&g).await;
    let ns = g.namespace.clone();
    create_cluster(&g, &ns, json!({})).await;
    let mut config = nvme_config(&w.cluster);
    config["trident"] = json!({"operatorImage": SHOOTS_IMAGE});
    create_extension(&g, &ns, config, "reconcile").await;

    wait_error_code(&g, &w, &ns, ErrorCode::ConfigurationProblem).await;
    let ext = extensions(&g, &ns).get("ontap").await.unwrap();
    let description = ext.status.unwrap().last_error.unwrap().description;
    assert!(
        description.contains("providerConfig.trident.operatorImage"),
        "{description}"
    );
    assert!(
        g.managed_resources()
            .get_opt(INIT_MANAGED_RESOURCE)
            .await
            .unwrap()
            .is_none(),
        "nothing delivered"
    );

    w.operator.kill();
    w.operator = seed_operator_with(&w, &ns, &["--extension-allow-shoot-images".to_owned()], &[]);
    let ts = request(&g, &ns, "reconcile").await;
    wait_ready(&g, &w, &ns, &ts).await;
    let embedded = ShootImages::embedded().unwrap();
    let mut expected = vec![
        SHOOTS_IMAGE.to_owned(),
        embedded.nvme_init.clone(),
        embedded.pause.clone(),
    ];
    expected.sort();
    assert_eq!(delivered_images(&g).await, expected);
    // That operator's release picks Trident's images: the vector's are of another one.
    assert_eq!(
        delivered_trident_images(&g).await,
        [Value::Null, Value::Null, Value::Null]
    );
    assert_eq!(trident_operator_in_shoot(&g, &w).await, SHOOTS_IMAGE);
}

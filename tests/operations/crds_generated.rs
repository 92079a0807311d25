//! `crds/`, `deploy/rbac.yaml` and the chart's ClusterRole rules are generated from the
//! controllers' registrations and never edited by hand: fail when they drift.

use std::path::Path;

#[test]
fn crds_folder_matches_the_registrations() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("crds");
    let generated = ontap_operator::manifests::crd_files().unwrap();
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    on_disk.sort();
    let mut expected: Vec<String> = generated.iter().map(|(n, _)| n.clone()).collect();
    expected.sort();
    assert_eq!(
        on_disk, expected,
        "crds/ holds other files than the registrations generate: run `make manifests`"
    );
}

#[test]
fn every_generated_manifest_is_current() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (path, contents) in ontap_operator::manifests::files().unwrap() {
        let current = std::fs::read_to_string(root.join(&path)).unwrap_or_default();
        assert!(
            current == contents,
            "{path} differs from what the registrations generate: run `make manifests`"
        );
    }
}

#[test]
fn rbac_grants_what_the_controllers_declare_and_no_more() {
    let rules = ontap_operator::manifests::rules().unwrap();
    let verbs = |group: &str, resource: &str| -> Vec<String> {
        rules
            .iter()
            .filter(|r| r.api_groups.as_deref() == Some(&[group.to_owned()][..]))
            .filter(|r| r.resources.iter().flatten().any(|x| x == resource))
            .flat_map(|r| r.verbs.clone())
            .collect()
    };
    // The engine patches status and finalizers; nothing updates whole objects.
    assert_eq!(
        verbs("ontap.storage.dev", "storagevirtualmachines"),
        ["get", "list", "patch", "watch"]
    );
    assert_eq!(
        verbs("ontap.storage.dev", "storagevirtualmachines/status"),
        ["patch"]
    );
    assert_eq!(verbs("events.k8s.io", "events"), ["create", "patch"]);
    assert!(verbs("", "configmaps").is_empty());
}

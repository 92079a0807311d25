//! The ClusterRole rules generated from the controllers' registrations (`make manifests`) grant
//! what the controllers need and no more. Whether the committed generated files are current is
//! `make check-generated`'s (hack/check-generated.sh).

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

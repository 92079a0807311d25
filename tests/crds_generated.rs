//! `crds/` is generated from the Rust types and never edited by hand: fail when they drift.
#![allow(clippy::unwrap_used)]

use std::path::Path;

#[test]
fn crds_folder_matches_the_rust_types() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("crds");
    let generated = ontap_operator::api::crd_files().unwrap();
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
        "crds/ holds other files than the Rust types generate: run `make crds`"
    );
    for (name, yaml) in generated {
        let current = std::fs::read_to_string(dir.join(&name)).unwrap();
        assert!(
            current == yaml,
            "crds/{name} differs from the Rust types: run `make crds`"
        );
    }
}

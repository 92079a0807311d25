//! The verdict on a Shoot: what of its ontap configuration can be known in the garden. Pure, so
//! that every rule is tested without a server; the seed's own checks are the same functions
//! ([`parse_provider_config`], [`shoot_rules::metal_project`]).

use serde_json::Value;

use crate::extension::api::{ShootExtension, ShootView};
use crate::extension::config::{
    ConfigDefaults, ConfigError, ExtensionConfig, SvmSharing, parse_provider_config, refuse_change,
};
use crate::extension::shoot_rules::{self, ShootRefusal};

/// A refusal, naming the field as the shoot owner wrote it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldRefusal {
    /// `spec.extensions[0].providerConfig.svm.dataLifs[1].ip`.
    pub field: String,
    pub message: String,
}

impl std::fmt::Display for FieldRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// What the admission needs to know besides the Shoot.
#[derive(Clone, Debug)]
pub struct Rules {
    /// The extension type the webhook guards (`--extension-type`).
    pub extension_type: String,
    /// What the seed allows; [`ConfigDefaults::strict`] is set for the garden.
    pub config: ConfigDefaults,
}

/// Reviews a Shoot being created (`old` is `None`) or updated. Shoots that do not enable the
/// extension type, and Shoots being deleted, pass untouched.
pub fn review(new: &ShootView, old: Option<&ShootView>, rules: &Rules) -> Vec<FieldRefusal> {
    if new.metadata.deletion_timestamp.is_some() {
        return Vec::new();
    }
    let Some((index, extension)) = enabled(new, &rules.extension_type) else {
        return Vec::new();
    };
    let old_extension = old.and_then(|o| enabled(o, &rules.extension_type));
    let base = format!("spec.extensions[{index}].providerConfig");
    let at = |e: &ConfigError| FieldRefusal {
        field: match e.field() {
            "" => base.clone(),
            f => format!("{base}.{f}"),
        },
        message: e.detail(),
    };
    let project_refusal = |e: ShootRefusal| FieldRefusal {
        field: e.field(),
        message: e.to_string(),
    };

    // A configuration that was accepted before is not judged again by the rules of today: the
    // owner of a shoot that predates this webhook can still annotate it for deletion or
    // maintenance. What an update changes is judged in full.
    let unchanged = old_extension
        .is_some_and(|(_, o)| o.provider_config == extension.provider_config)
        && old.is_some_and(|o| o.metal_project() == new.metal_project());
    if unchanged {
        return Vec::new();
    }

    let config = match parse_provider_config(extension.provider_config.as_ref(), &rules.config) {
        Ok(config) => config,
        Err(e) => return vec![at(&e)],
    };
    if let Err(e) = shoot_rules::metal_project(&config, new) {
        return vec![project_refusal(e)];
    }

    let (Some(old), Some((_, old_extension))) = (old, old_extension) else {
        return Vec::new();
    };
    if !provisioned(old) {
        return Vec::new();
    }
    // The old configuration is read as the seed read it: leniently, images allowed, so only
    // what it says counts here, not whether today's rules would accept it.
    let lenient = ConfigDefaults {
        strict: false,
        allow_shoot_images: true,
        ..rules.config
    };
    let Ok(before) = parse_provider_config(old_extension.provider_config.as_ref(), &lenient) else {
        return Vec::new();
    };
    if let Err(e) = refuse_change(&before, &config) {
        return vec![at(&e)];
    }
    if let Some(refusal) = project_moved(&before, old, new) {
        return vec![refusal];
    }
    Vec::new()
}

/// The first entry of `spec.extensions` of this type that is not disabled.
fn enabled<'a>(shoot: &'a ShootView, type_: &str) -> Option<(usize, &'a ShootExtension)> {
    shoot
        .spec
        .extensions
        .iter()
        .enumerate()
        .find(|(_, e)| e.type_ == type_ && e.disabled != Some(true))
}

/// Whether gardenlet has reconciled the shoot since it was created: from then on its SVM may
/// exist, and what would orphan or move it is refused. A shoot whose creation has not succeeded
/// yet can still be corrected.
fn provisioned(shoot: &ShootView) -> bool {
    shoot
        .status
        .last_operation
        .as_ref()
        .is_some_and(|op| !(op.type_ == "Create" && op.state != "Succeeded"))
}

/// A per-project SVM is the metal-stack project's: a shoot cannot take its storage to another.
fn project_moved(
    before: &ExtensionConfig,
    old: &ShootView,
    new: &ShootView,
) -> Option<FieldRefusal> {
    if before.sharing != SvmSharing::PerProject || old.metal_project() == new.metal_project() {
        return None;
    }
    Some(FieldRefusal {
        field: ShootRefusal::MissingProject.field(),
        message: format!(
            "the shoot's storage is on the SVM of metal-stack project {:?}; the project cannot change",
            old.metal_project().unwrap_or_default()
        ),
    })
}

/// Decodes the object of an admission request as far as the review reads it.
pub fn shoot_of(object: &Value) -> Result<ShootView, serde_json::Error> {
    serde_json::from_value(object.clone())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    const P1: &str = "0b1f9c3e-aaaa-bbbb-cccc-123456789abc";
    const P2: &str = "0b1f9c3e-aaaa-bbbb-cccc-123456789abd";

    fn rules() -> Rules {
        Rules {
            extension_type: "ontap".into(),
            config: ConfigDefaults {
                strict: true,
                ..ConfigDefaults::default()
            },
        }
    }

    fn ontap(lifs: &[&str]) -> Value {
        json!({
            "apiVersion": "ontap.extensions.storage.dev/v1alpha1", "kind": "OntapConfig",
            "svm": {"managementLif": {"ip": "192.0.2.10", "prefixLength": 24},
                    "dataLifs": lifs.iter().map(|ip| json!({"ip": ip, "prefixLength": 24})).collect::<Vec<_>>()},
        })
    }

    fn trident() -> Value {
        json!({
            "apiVersion": "ontap.metal.extensions.gardener.cloud/v1alpha1", "kind": "TridentConfig",
            "svmIpaddresses": {"managementLif": "192.0.2.10", "dataLifs": ["192.0.2.11"]},
        })
    }

    fn shoot(config: Value, project: Option<&str>, reconciled: bool) -> ShootView {
        let mut annotations = json!({});
        if let Some(p) = project {
            annotations["cluster.metal-stack.io/project"] = json!(p);
        }
        let mut shoot = json!({
            "metadata": {"name": "web", "namespace": "garden-a", "annotations": annotations},
            "spec": {"extensions": [{"type": "dns"}, {"type": "ontap", "providerConfig": config}]},
        });
        if reconciled {
            shoot["status"] = json!({"lastOperation": {"type": "Reconcile", "state": "Succeeded"}});
        }
        shoot_of(&shoot).unwrap()
    }

    fn fields(refusals: Vec<FieldRefusal>) -> Vec<String> {
        refusals.into_iter().map(|r| r.field).collect()
    }

    #[test]
    fn a_refusal_names_the_field_as_written() {
        let config = ontap(&["192.0.2.11", "192.0.2.300"]);
        let refused = review(&shoot(config, None, false), None, &rules());
        assert_eq!(
            fields(refused),
            ["spec.extensions[1].providerConfig.svm.dataLifs[1].ip"]
        );
        let mut typo = ontap(&["192.0.2.11"]);
        typo["svm"]["dataLif"] = json!([]);
        assert_eq!(
            fields(review(&shoot(typo, None, false), None, &rules())),
            ["spec.extensions[1].providerConfig.svm.dataLif"]
        );
        assert_eq!(
            fields(review(&shoot(Value::Null, None, false), None, &rules())),
            ["spec.extensions[1].providerConfig"]
        );
    }

    #[test]
    fn metal_stack_fields_are_strict_in_the_garden_but_its_old_ones_pass() {
        let mut config = trident();
        config["protocols"] = json!(["nvme"]);
        assert!(review(&shoot(config.clone(), Some(P1), false), None, &rules()).is_empty());
        config["svmIpaddresses"]["mangementLif"] = json!("192.0.2.12");
        assert_eq!(
            fields(review(&shoot(config, Some(P1), false), None, &rules())),
            ["spec.extensions[1].providerConfig.svmIpaddresses.mangementLif"]
        );
    }

    #[test]
    fn the_project_annotation_is_checked_where_the_seed_checks_it() {
        let refused = review(&shoot(trident(), None, false), None, &rules());
        assert_eq!(
            fields(refused),
            ["metadata.annotations[cluster.metal-stack.io/project]"]
        );
        let mut disagreeing = serde_json::to_value(shoot_json(trident(), Some(P1))).unwrap();
        disagreeing["spec"]["provider"] =
            json!({"type": "metal", "infrastructureConfig": {"projectID": P2}});
        let refused = review(&shoot_of(&disagreeing).unwrap(), None, &rules());
        assert!(refused[0].message.contains("disagrees"), "{refused:?}");
    }

    fn shoot_json(config: Value, project: Option<&str>) -> Value {
        let annotations = match project {
            Some(p) => json!({"cluster.metal-stack.io/project": p}),
            None => json!({}),
        };
        json!({
            "metadata": {"name": "web", "namespace": "garden-a", "annotations": annotations},
            "spec": {"extensions": [{"type": "ontap", "providerConfig": config}]},
        })
    }

    #[test]
    fn what_would_move_storage_is_refused_once_the_shoot_was_reconciled() {
        let before = shoot(ontap(&["192.0.2.11"]), None, true);
        let moved = shoot(ontap(&["192.0.2.12"]), None, false);
        assert_eq!(
            fields(review(&moved, Some(&before), &rules())),
            ["spec.extensions[1].providerConfig.svm.dataLifs"]
        );
        let added = shoot(ontap(&["192.0.2.11", "192.0.2.12"]), None, false);
        assert!(review(&added, Some(&before), &rules()).is_empty());
        let mut elsewhere = ontap(&["192.0.2.11"]);
        elsewhere["cluster"] = json!("other");
        assert_eq!(
            fields(review(
                &shoot(elsewhere, None, false),
                Some(&before),
                &rules()
            )),
            ["spec.extensions[1].providerConfig.cluster"]
        );
        let mut shared = ontap(&["192.0.2.11"]);
        shared["svm"]["sharing"] = json!("PerProject");
        assert_eq!(
            fields(review(
                &shoot(shared, Some(P1), false),
                Some(&before),
                &rules()
            )),
            ["spec.extensions[1].providerConfig.svm.sharing"]
        );
        // Before its creation succeeded, a shoot can still be corrected.
        let failed_create = {
            let mut s = shoot(ontap(&["192.0.2.11"]), None, true);
            s.status.last_operation.as_mut().unwrap().type_ = "Create".into();
            s.status.last_operation.as_mut().unwrap().state = "Error".into();
            s
        };
        assert!(review(&moved, Some(&failed_create), &rules()).is_empty());
    }

    #[test]
    fn the_metal_project_of_a_shared_svm_cannot_change() {
        let before = shoot(trident(), Some(P1), true);
        let after = shoot(trident(), Some(P2), false);
        assert_eq!(
            fields(review(&after, Some(&before), &rules())),
            ["metadata.annotations[cluster.metal-stack.io/project]"]
        );
    }

    #[test]
    fn an_accepted_configuration_is_not_judged_again() {
        // Accepted before this webhook existed: the owner can still annotate it.
        let mut config = trident();
        config["svmIpaddresses"]["typo"] = json!(1);
        let before = shoot(config.clone(), Some(P1), true);
        let after = shoot(config, Some(P1), true);
        assert!(review(&after, Some(&before), &rules()).is_empty());
        assert!(!review(&after, None, &rules()).is_empty());
    }

    #[test]
    fn images_are_refused_unless_the_landscape_allows_them() {
        let mut config = ontap(&["192.0.2.11"]);
        config["trident"] = json!({"operatorImage": "evil.example/trident:1"});
        assert_eq!(
            fields(review(&shoot(config.clone(), None, false), None, &rules())),
            ["spec.extensions[1].providerConfig.trident.operatorImage"]
        );
        let mut allowing = rules();
        allowing.config.allow_shoot_images = true;
        assert!(review(&shoot(config, None, false), None, &allowing).is_empty());
    }

    #[test]
    fn other_shoots_and_deletions_pass_untouched() {
        let mut other = serde_json::to_value(shoot_json(Value::Null, None)).unwrap();
        other["spec"]["extensions"][0]["type"] = json!("registry-cache");
        assert!(review(&shoot_of(&other).unwrap(), None, &rules()).is_empty());
        let mut disabled = shoot_json(Value::Null, None);
        disabled["spec"]["extensions"][0]["disabled"] = json!(true);
        assert!(review(&shoot_of(&disabled).unwrap(), None, &rules()).is_empty());
        let mut deleting = shoot_json(Value::Null, None);
        deleting["metadata"]["deletionTimestamp"] = json!("2026-11-28T10:00:00Z");
        assert!(review(&shoot_of(&deleting).unwrap(), None, &rules()).is_empty());
    }
}

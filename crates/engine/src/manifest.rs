//! What a registration declares besides its controller: the RBAC rules it needs and the
//! printer columns of the engine's conventions on its CRD. Re-exported by
//! [`manager`](crate::manager), where these functions have always been.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::rbac::v1::PolicyRule;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceColumnDefinition, CustomResourceDefinition,
};
use kube::Resource;

/// `verbs` and the three that read: get, list, watch.
pub(crate) fn with_read(verbs: &[&str]) -> Vec<String> {
    let mut all: BTreeSet<String> = ["get", "list", "watch"]
        .into_iter()
        .map(str::to_owned)
        .collect();
    all.extend(verbs.iter().map(|v| (*v).to_owned()));
    all.into_iter().collect()
}

/// A rule granting `verbs` on kind `K`.
pub fn rule<K: Resource<DynamicType = ()>>(verbs: &[String]) -> PolicyRule {
    resource_rule(&K::group(&()), &K::plural(&()), verbs)
}

/// A rule granting `verbs` on `resource` of `group` (`""` for the core group).
pub fn resource_rule(group: &str, resource: &str, verbs: &[String]) -> PolicyRule {
    PolicyRule {
        api_groups: Some(vec![group.to_owned()]),
        resources: Some(vec![resource.to_owned()]),
        verbs: verbs.to_vec(),
        ..PolicyRule::default()
    }
}

/// What the engine itself does with a reconciled kind: read it, patch its status, patch its
/// finalizers (and let children block its deletion), and publish Events about it.
pub(crate) fn own_rules<K: Resource<DynamicType = ()>>(finalizer: bool) -> Vec<PolicyRule> {
    let group = K::group(&());
    let plural = K::plural(&());
    let mut verbs = with_read(&[]);
    if finalizer {
        verbs.push("patch".to_owned());
    }
    let mut rules = vec![
        resource_rule(&group, &plural, &verbs),
        resource_rule(&group, &format!("{plural}/status"), &["patch".to_owned()]),
        resource_rule(
            "events.k8s.io",
            "events",
            &["create".to_owned(), "patch".to_owned()],
        ),
    ];
    if finalizer {
        rules.push(resource_rule(
            &group,
            &format!("{plural}/finalizers"),
            &["update".to_owned()],
        ));
    }
    rules
}

/// Merges rules of plain resources: one rule per API group and verb set, resources sorted.
/// Rules with resource names or non-resource URLs are kept as they are.
pub fn merge_rules(rules: &[PolicyRule]) -> Vec<PolicyRule> {
    let mut verbs: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    let mut special = Vec::new();
    for rule in rules {
        if rule.resource_names.is_some() || rule.non_resource_urls.is_some() {
            special.push(rule.clone());
            continue;
        }
        for group in rule.api_groups.iter().flatten() {
            for resource in rule.resources.iter().flatten() {
                verbs
                    .entry((group.clone(), resource.clone()))
                    .or_default()
                    .extend(rule.verbs.iter().cloned());
            }
        }
    }
    let mut grouped: BTreeMap<(String, Vec<String>), BTreeSet<String>> = BTreeMap::new();
    for ((group, resource), verbs) in verbs {
        grouped
            .entry((group, verbs.into_iter().collect()))
            .or_default()
            .insert(resource);
    }
    let mut merged: Vec<PolicyRule> = grouped
        .into_iter()
        .map(|((group, verbs), resources)| PolicyRule {
            api_groups: Some(vec![group]),
            resources: Some(resources.into_iter().collect()),
            verbs,
            ..PolicyRule::default()
        })
        .collect();
    merged.extend(special);
    merged
}

/// The printer columns of the engine's conventions, shown by `kubectl get -o wide`: where the
/// last pass stopped, why, after how many attempts, and the trace of the last failed pass.
pub fn engine_columns() -> Vec<CustomResourceColumnDefinition> {
    let column =
        |name: &str, type_: &str, path: &str, description: &str| CustomResourceColumnDefinition {
            name: name.to_owned(),
            type_: type_.to_owned(),
            json_path: path.to_owned(),
            description: Some(description.to_owned()),
            priority: Some(1),
            format: None,
        };
    vec![
        column(
            "Step",
            "string",
            ".status.halted.step",
            "The step where the last reconcile stopped",
        ),
        column(
            "Reason",
            "string",
            ".status.halted.reason",
            "Why it stopped there",
        ),
        column(
            "Attempts",
            "integer",
            ".status.halted.attempts",
            "Consecutive failed reconciles at that step",
        ),
        column(
            "Trace",
            "string",
            ".status.halted.traceId",
            "Trace id of the last failed reconcile",
        ),
    ]
}

/// `crd` with the [`engine_columns`] appended to every version (once).
pub fn with_engine_columns(mut crd: CustomResourceDefinition) -> CustomResourceDefinition {
    for version in &mut crd.spec.versions {
        let columns = version
            .additional_printer_columns
            .get_or_insert_with(Vec::new);
        for column in engine_columns() {
            if !columns.iter().any(|c| c.name == column.name) {
                columns.push(column);
            }
        }
    }
    crd
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ConfigMap, Secret};

    #[test]
    fn rules_merge_by_group_and_verbs() {
        let read = with_read(&[]);
        let rules = merge_rules(&[
            rule::<ConfigMap>(&read),
            rule::<Secret>(&with_read(&["create"])),
            rule::<Secret>(&read),
            resource_rule("", "configmaps", &["patch".to_owned()]),
        ]);
        assert_eq!(rules.len(), 2, "{rules:?}");
        assert_eq!(
            rules[0].resources.as_deref(),
            Some(&["secrets".to_owned()][..])
        );
        assert_eq!(rules[0].verbs, ["create", "get", "list", "watch"]);
        assert_eq!(
            rules[1].resources.as_deref(),
            Some(&["configmaps".to_owned()][..])
        );
        assert_eq!(rules[1].verbs, ["get", "list", "patch", "watch"]);
    }

    #[test]
    fn engine_columns_are_added_once_and_only_for_wide_output() {
        let crd = CustomResourceDefinition {
            spec: k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinitionSpec {
                versions: vec![Default::default()],
                ..Default::default()
            },
            ..Default::default()
        };
        let crd = with_engine_columns(with_engine_columns(crd));
        let columns = crd.spec.versions[0]
            .additional_printer_columns
            .clone()
            .unwrap_or_default();
        assert_eq!(columns.len(), 4);
        assert!(columns.iter().all(|c| c.priority == Some(1)));
    }
}

//! Admission validation of the CRDs (OpenAPI schema + CEL `x-kubernetes-validations`) against a
//! real kube-apiserver: every invalid spec is refused with a 422 whose causes name exactly the
//! offending field, and valid specs (IPv4 and IPv6) go through.

use crate::support::fixtures::{ontap_cluster, svm};

use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use ontap_operator::api::{OntapCluster, StorageVirtualMachine};
use serde_json::{Value, json};

/// Sets (or, with `Value::Null`, removes) the value at a JSON pointer, creating parent objects.
fn set(doc: &mut Value, pointer: &str, value: Value) {
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    let mut node = doc;
    for part in parent.split('/').skip(1) {
        node = match node {
            Value::Array(items) => &mut items[part.parse::<usize>().unwrap()],
            Value::Object(map) => map.entry(part).or_insert_with(|| json!({})),
            other => panic!("{pointer}: cannot descend into {other}"),
        };
    }
    match node {
        Value::Array(items) => items[key.parse::<usize>().unwrap()] = value,
        Value::Object(map) if value.is_null() => {
            map.remove(key);
        }
        Value::Object(map) => {
            map.insert(key.to_string(), value);
        }
        other => panic!("{pointer}: cannot set a key on {other}"),
    }
}

/// JSON-pointer edits applied to a base manifest.
type Edits = Vec<(&'static str, Value)>;

fn lifs(ips: &[&str], prefix: u8) -> Value {
    ips.iter()
        .map(|ip| json!({ "ip": ip, "prefixLength": prefix }))
        .collect()
}

/// Data LIFs at `/24`, each naming the protocol it serves, if any.
fn lifs_serving(lifs: &[(&str, Option<&str>)]) -> Value {
    lifs.iter()
        .map(|(ip, protocol)| {
            let mut lif = json!({ "ip": ip, "prefixLength": 24 });
            if let Some(protocol) = protocol {
                lif["protocols"] = json!([protocol]);
            }
            lif
        })
        .collect()
}

fn dynamic_api<K: kube::Resource<DynamicType = ()>>(
    env: &crate::support::TestEnv,
    namespaced: bool,
) -> Api<DynamicObject> {
    let resource = ApiResource::erase::<K>(&());
    if namespaced {
        Api::namespaced_with(env.client.clone(), &env.namespace, &resource)
    } else {
        Api::all_with(env.client.clone(), &resource)
    }
}

fn object(manifest: Value) -> DynamicObject {
    serde_json::from_value(manifest).unwrap()
}

/// Asserts a 422 whose causes all name `field` (or an element of it) and whose message says
/// `says`: one clear complaint about the offending field, not a cascade of unrelated ones.
#[track_caller]
fn assert_rejected(
    result: Result<DynamicObject, kube::Error>,
    case: &str,
    field: &str,
    says: &str,
) {
    let status = match result {
        Err(kube::Error::Api(status)) => status,
        Err(other) => panic!("{case}: expected a 422 from the API server, got {other:?}"),
        Ok(_) => panic!("{case}: accepted, expected a 422 naming {field}"),
    };
    assert_eq!(status.code, 422, "{case}: {status:?}");
    assert!(
        status.message.contains(field) && status.message.contains(says),
        "{case}: message does not name {field} with {says:?}: {}",
        status.message
    );
    let causes: Vec<_> = status
        .details
        .map(|d| d.causes)
        .unwrap_or_default()
        .into_iter()
        // Added by the API server when a schema error stopped it before the CEL rules.
        .filter(|c| !c.message.contains("some validation rules were not checked"))
        .collect();
    assert!(!causes.is_empty(), "{case}: no causes in the 422");
    for cause in &causes {
        assert!(
            cause.field == field || cause.field.starts_with(&format!("{field}[")),
            "{case}: a cause names {} rather than {field}: {causes:?}",
            cause.field
        );
    }
}

#[tokio::test]
async fn invalid_svm_specs_are_rejected_naming_the_field() {
    let env = crate::support::env().await;
    let api = dynamic_api::<StorageVirtualMachine>(&env, true);
    let seventeen: Vec<String> = (1..=17).map(|i| format!("192.0.2.{}", 100 + i)).collect();
    let seventeen: Vec<&str> = seventeen.iter().map(String::as_str).collect();
    let many_aggregates: Vec<String> = (0..65).map(|i| format!("aggr{i}")).collect();

    // (case, edits, field the error must name, fragment of the message)
    let cases: Vec<(&str, Edits, &str, &str)> = vec![
        (
            "AccountOnly without the SVM it uses",
            vec![("/spec/mode", json!("AccountOnly"))],
            "spec.svmName",
            "names the existing SVM",
        ),
        (
            "AccountOnly naming no provider",
            vec![
                ("/spec/mode", json!("AccountOnly")),
                ("/spec/svmName", json!("shared")),
            ],
            "spec.provider",
            "names the StorageVirtualMachine that provisions its SVM",
        ),
        (
            "Owned naming a provider",
            vec![("/spec/provider", json!({"name": "other"}))],
            "spec.provider",
            "only an AccountOnly object names a provider",
        ),
        (
            "AccountOnly sharing an SVM it does not provision",
            vec![
                ("/spec/mode", json!("AccountOnly")),
                ("/spec/svmName", json!("shared")),
                ("/spec/provider", json!({"name": "other"})),
                ("/spec/shareWith", json!({"matchLabels": {"a": "b"}})),
            ],
            "spec.shareWith",
            "shareWith belongs on the object that provisions it",
        ),
        (
            "not an IP",
            vec![("/spec/managementLif/ip", json!("300.1.1.1"))],
            "spec.managementLif.ip",
            "valid IPv4 or IPv6",
        ),
        (
            "hostname as IP",
            vec![("/spec/managementLif/ip", json!("svm.example.com"))],
            "spec.managementLif.ip",
            "valid IPv4 or IPv6",
        ),
        (
            "bad IPv6",
            vec![("/spec/dataLifs/0/ip", json!("2001:db8::zz"))],
            "spec.dataLifs[0].ip",
            "valid IPv4 or IPv6",
        ),
        (
            "leading zeros",
            vec![("/spec/dataLifs/0/ip", json!("192.0.2.011"))],
            "spec.dataLifs[0].ip",
            "valid IPv4 or IPv6",
        ),
        (
            "IPv6 zone",
            vec![("/spec/dataLifs/0/ip", json!("fe80::1%eth0"))],
            "spec.dataLifs[0].ip",
            "valid IPv4 or IPv6",
        ),
        (
            "IPv4-mapped IPv6",
            vec![("/spec/dataLifs/0/ip", json!("::ffff:192.0.2.1"))],
            "spec.dataLifs[0].ip",
            "valid IPv4 or IPv6",
        ),
        (
            "CIDR in ip",
            vec![("/spec/managementLif/ip", json!("192.0.2.10/24"))],
            "spec.managementLif.ip",
            "valid IPv4 or IPv6",
        ),
        (
            "unspecified",
            vec![("/spec/managementLif/ip", json!("0.0.0.0"))],
            "spec.managementLif.ip",
            "unicast",
        ),
        (
            "loopback",
            vec![("/spec/managementLif/ip", json!("127.0.0.1"))],
            "spec.managementLif.ip",
            "unicast",
        ),
        (
            "IPv6 loopback",
            vec![("/spec/dataLifs/0/ip", json!("::1"))],
            "spec.dataLifs[0].ip",
            "unicast",
        ),
        (
            "link-local",
            vec![("/spec/dataLifs/0/ip", json!("fe80::10"))],
            "spec.dataLifs[0].ip",
            "unicast",
        ),
        (
            "multicast",
            vec![("/spec/dataLifs/0/ip", json!("224.0.0.5"))],
            "spec.dataLifs[0].ip",
            "unicast",
        ),
        (
            "broadcast",
            vec![("/spec/dataLifs/0/ip", json!("255.255.255.255"))],
            "spec.dataLifs[0].ip",
            "unicast",
        ),
        (
            "IPv4 /33",
            vec![("/spec/managementLif/prefixLength", json!(33))],
            "spec.managementLif.prefixLength",
            "at most 32",
        ),
        (
            "IPv4 /64 on a data LIF",
            vec![("/spec/dataLifs/0/prefixLength", json!(64))],
            "spec.dataLifs[0].prefixLength",
            "at most 32",
        ),
        (
            "IPv6 /129",
            vec![(
                "/spec/dataLifs/0",
                json!({"ip": "2001:db8::11", "prefixLength": 129}),
            )],
            "spec.dataLifs[0].prefixLength",
            "128",
        ),
        (
            "a VIP LIF in a subnet",
            vec![(
                "/spec/dataLifs/0",
                json!({"ip": "192.0.2.11", "prefixLength": 24, "vip": true}),
            )],
            "spec.dataLifs[0].prefixLength",
            "a VIP LIF is in no subnet",
        ),
        (
            "prefix 0",
            vec![("/spec/managementLif/prefixLength", json!(0))],
            "spec.managementLif.prefixLength",
            "1",
        ),
        (
            "svmName starts with a digit",
            vec![("/spec/svmName", json!("1svm"))],
            "spec.svmName",
            "must start with a letter or '_'",
        ),
        (
            "svmName with a space",
            vec![("/spec/svmName", json!("svm one"))],
            "spec.svmName",
            "must start with a letter or '_'",
        ),
        (
            "svmName with a slash",
            vec![("/spec/svmName", json!("team/svm"))],
            "spec.svmName",
            "only letters, digits",
        ),
        (
            "svmName non-ASCII",
            vec![("/spec/svmName", json!("svm_ä"))],
            "spec.svmName",
            "only letters, digits",
        ),
        (
            "svmName all",
            vec![("/spec/svmName", json!("all"))],
            "spec.svmName",
            "reserved",
        ),
        (
            "svmName too long",
            vec![("/spec/svmName", json!("s".repeat(48)))],
            "spec.svmName",
            "47",
        ),
        (
            "account name admin",
            vec![("/spec/account/name", json!("admin"))],
            "spec.account.name",
            "built-in",
        ),
        (
            "account name vsadmin",
            vec![("/spec/account/name", json!("VSADMIN"))],
            "spec.account.name",
            "built-in",
        ),
        (
            "account name chars",
            vec![("/spec/account/name", json!("ops:admin"))],
            "spec.account.name",
            "only letters, digits",
        ),
        (
            "account name short",
            vec![("/spec/account/name", json!("op"))],
            "spec.account.name",
            "at least 3",
        ),
        (
            "account name long",
            vec![("/spec/account/name", json!("a".repeat(65)))],
            "spec.account.name",
            "64",
        ),
        (
            "secretName uppercase",
            vec![("/spec/secretName", json!("Creds"))],
            "spec.secretName",
            "RFC 1123 subdomain",
        ),
        (
            "secretName underscore",
            vec![("/spec/secretName", json!("svm_creds"))],
            "spec.secretName",
            "RFC 1123 subdomain",
        ),
        (
            "clusterRef bad name",
            vec![("/spec/clusterRef/name", json!("Lab_1"))],
            "spec.clusterRef.name",
            "RFC 1123 subdomain",
        ),
        (
            "ipspace chars",
            vec![("/spec/ipspace", json!("ip space"))],
            "spec.ipspace",
            "only letters, digits",
        ),
        (
            "aggregate with a dash",
            vec![("/spec/aggregates", json!(["aggr1", "aggr-2"]))],
            "spec.aggregates",
            "aggregate names",
        ),
        (
            "aggregate twice",
            vec![("/spec/aggregates", json!(["aggr1", "aggr1"]))],
            "spec.aggregates",
            "Duplicate value",
        ),
        (
            "too many aggregates",
            vec![("/spec/aggregates", json!(many_aggregates))],
            "spec.aggregates",
            "64",
        ),
        (
            "no data LIF",
            vec![("/spec/dataLifs", json!([]))],
            "spec.dataLifs",
            "1",
        ),
        (
            "17 data LIFs",
            vec![("/spec/dataLifs", lifs(&seventeen, 24))],
            "spec.dataLifs",
            "16",
        ),
        (
            "data LIF reuses the management IP",
            vec![("/spec/dataLifs", lifs(&["192.0.2.11", "192.0.2.10"], 24))],
            "spec.dataLifs",
            "management LIF's IP",
        ),
        (
            "data LIFs share an IP",
            vec![(
                "/spec/dataLifs",
                lifs(&["192.0.2.11", "192.0.2.12", "192.0.2.11"], 24),
            )],
            "spec.dataLifs",
            "IP address of its own",
        ),
        (
            "same IPv6 written twice differently",
            vec![
                (
                    "/spec/managementLif",
                    json!({"ip": "2001:db8::10", "prefixLength": 64}),
                ),
                ("/spec/dataLifs", lifs(&["2001:DB8:0:0::10"], 64)),
            ],
            "spec.dataLifs",
            "management LIF's IP",
        ),
        (
            "several protocols, a data LIF naming none",
            vec![
                ("/spec/protocols", json!({"nfs": true, "nvme": true})),
                (
                    "/spec/dataLifs",
                    lifs_serving(&[
                        ("192.0.2.11", Some("nfs")),
                        ("192.0.2.12", None),
                        ("192.0.2.13", Some("nvme")),
                    ]),
                ),
            ],
            "spec.dataLifs",
            "spec.dataLifs[1].protocols: required when the SVM enables more than one protocol",
        ),
        (
            "a protocol no data LIF serves",
            vec![
                (
                    "/spec/protocols",
                    json!({"nfs": true, "iscsi": true, "nvme": true}),
                ),
                (
                    "/spec/dataLifs",
                    lifs_serving(&[("192.0.2.11", Some("nfs")), ("192.0.2.12", Some("iscsi"))]),
                ),
            ],
            "spec.dataLifs",
            "spec.dataLifs: nvme, which the SVM enables, is served by no data LIF",
        ),
        (
            "a data LIF naming a protocol the SVM does not enable",
            vec![
                ("/spec/protocols", json!({"nfs": true})),
                (
                    "/spec/dataLifs",
                    lifs_serving(&[("192.0.2.11", None), ("192.0.2.12", Some("iscsi"))]),
                ),
            ],
            "spec.dataLifs",
            "spec.dataLifs[1].protocols: iscsi is not among the protocols the SVM enables",
        ),
        (
            "a data LIF naming two protocols",
            vec![
                ("/spec/protocols", json!({"nfs": true, "nvme": true})),
                ("/spec/dataLifs/0/protocols", json!(["nfs", "nvme"])),
            ],
            "spec.dataLifs[0].protocols",
            "a data LIF serves exactly one protocol",
        ),
        (
            "the management LIF naming a protocol",
            vec![
                ("/spec/protocols", json!({"nfs": true})),
                ("/spec/managementLif/protocols", json!(["nfs"])),
            ],
            "spec.managementLif.protocols",
            "the management LIF serves no data protocol",
        ),
        (
            "deletion policy",
            vec![("/spec/deletionPolicy", json!("Sometimes"))],
            "spec.deletionPolicy",
            "Unsupported value",
        ),
        (
            "clusterRef missing",
            vec![("/spec/clusterRef", Value::Null)],
            "spec.clusterRef",
            "Required value",
        ),
        (
            "rotation period below a minute",
            vec![("/spec/account", json!({"rotationPeriod": "30s"}))],
            "spec.account.rotationPeriod",
            "at least 1m",
        ),
        (
            "rotation period in days",
            vec![("/spec/account", json!({"rotationPeriod": "30d"}))],
            "spec.account.rotationPeriod",
            "hours, minutes and seconds",
        ),
    ];

    let count = cases.len();
    for (i, (case, edits, field, says)) in cases.into_iter().enumerate() {
        let mut manifest = svm(&format!("invalid-{i}")).json();
        for (pointer, value) in edits {
            set(&mut manifest, pointer, value);
        }
        let result = api.create(&PostParams::default(), &object(manifest)).await;
        assert_rejected(result, case, field, says);
    }
    assert!(count >= 40, "the table lost cases: {count}");
}

#[tokio::test]
async fn valid_svm_specs_are_accepted() {
    let env = crate::support::env().await;
    let api = dynamic_api::<StorageVirtualMachine>(&env, true);
    let full = json!({
        "clusterRef": { "name": "lab.example" },
        "svmName": "_team-a.svm_01",
        "ipspace": "Default",
        "aggregates": ["aggr1", "_aggr_2"],
        "protocols": { "nfs": true, "iscsi": true, "nvme": true },
        "managementLif": { "ip": "10.1.0.10", "prefixLength": 16, "homeNode": "cluster1-01" },
        "dataLifs": [
            { "ip": "10.1.0.11", "prefixLength": 16, "homeNode": "cluster1-01", "protocols": ["nfs"] },
            { "ip": "10.1.0.12", "prefixLength": 32, "homeNode": "cluster1-02", "protocols": ["iscsi"] },
            { "ip": "2001:db8::12", "prefixLength": 64, "protocols": ["nvme"] },
            { "ip": "10.2.0.13", "prefixLength": 32, "vip": true, "protocols": ["nvme"] },
            { "ip": "2001:db8:2::13", "prefixLength": 128, "vip": true, "protocols": ["nfs"] }
        ],
        "account": { "name": "vsadmin-team-a" },
        "secretName": "team-a.svm-credentials",
        "deletionPolicy": "Retain"
    });
    let sixteen_v6: Vec<String> = (1..=16).map(|i| format!("2001:db8::{i:x}")).collect();
    let sixteen_v6: Vec<&str> = sixteen_v6.iter().map(String::as_str).collect();
    let cases: Vec<(&str, Edits)> = vec![
        ("minimal IPv4", vec![]),
        ("every field set", vec![("/spec", full)]),
        (
            "IPv6 /64",
            vec![
                (
                    "/spec/managementLif",
                    json!({"ip": "2001:db8::10", "prefixLength": 64}),
                ),
                ("/spec/dataLifs", lifs(&["2001:db8::11"], 64)),
            ],
        ),
        (
            "IPv6 /128 and an IPv4 /32",
            vec![
                (
                    "/spec/managementLif",
                    json!({"ip": "2001:db8:1::1", "prefixLength": 128}),
                ),
                ("/spec/dataLifs", lifs(&["198.51.100.7"], 32)),
            ],
        ),
        (
            "one protocol, named by one data LIF of two",
            vec![
                (
                    "/spec/protocols",
                    json!({"nfs": false, "iscsi": true, "nvme": false}),
                ),
                (
                    "/spec/dataLifs",
                    lifs_serving(&[("192.0.2.11", None), ("192.0.2.12", Some("iscsi"))]),
                ),
            ],
        ),
        (
            "sixteen data LIFs",
            vec![("/spec/dataLifs", lifs(&sixteen_v6, 64))],
        ),
        (
            "svmName of 47 characters",
            vec![("/spec/svmName", json!("s".repeat(47)))],
        ),
        (
            "account name vsadmin-like",
            vec![("/spec/account/name", json!("vsadmin2"))],
        ),
        (
            "svmName All (only lowercase all is reserved)",
            vec![("/spec/svmName", json!("All"))],
        ),
        (
            "rotation period of hours and minutes",
            vec![("/spec/account", json!({"rotationPeriod": "1h30m"}))],
        ),
    ];
    for (i, (case, edits)) in cases.into_iter().enumerate() {
        let mut manifest = svm(&format!("valid-{i}")).json();
        for (pointer, value) in edits {
            set(&mut manifest, pointer, value);
        }
        let sent = manifest["spec"].clone();
        let created = api
            .create(&PostParams::default(), &object(manifest))
            .await
            .unwrap_or_else(|e| panic!("{case}: rejected: {e}"));
        for key in sent.as_object().unwrap().keys() {
            assert_eq!(
                created.data["spec"][key], sent[key],
                "{case}: {key} changed"
            );
        }
    }
}

#[tokio::test]
async fn svm_name_and_cluster_ref_are_immutable() {
    let env = crate::support::env().await;
    let api = dynamic_api::<StorageVirtualMachine>(&env, true);
    let patch = |spec: Value| Patch::Merge(json!({ "spec": spec }));
    let pp = PatchParams::default();

    let mut named = svm("named").json();
    set(&mut named, "/spec/svmName", json!("svm_a"));
    api.create(&PostParams::default(), &object(named))
        .await
        .unwrap();

    // Re-sending the same value alongside another change is fine.
    let same = api
        .patch(
            "named",
            &pp,
            &patch(json!({"svmName": "svm_a", "secretName": "x-creds"})),
        )
        .await
        .unwrap();
    assert_eq!(same.data["spec"]["svmName"], "svm_a");
    assert_eq!(same.metadata.generation, Some(2));

    let changed = api
        .patch("named", &pp, &patch(json!({"svmName": "svm_b"})))
        .await;
    assert_rejected(
        changed,
        "svmName changed",
        "spec.svmName",
        "svmName is immutable once set",
    );
    let removed = api
        .patch("named", &pp, &patch(json!({"svmName": null})))
        .await;
    assert_rejected(
        removed,
        "svmName removed",
        "spec.svmName",
        "svmName is immutable once set",
    );

    let moved = api
        .patch(
            "named",
            &pp,
            &patch(json!({"clusterRef": {"name": "other"}})),
        )
        .await;
    assert_rejected(
        moved,
        "clusterRef changed",
        "spec.clusterRef",
        "clusterRef is immutable",
    );
    api.patch("named", &pp, &patch(json!({"clusterRef": {"name": "lab"}})))
        .await
        .unwrap();

    // An object created on the default name may have its name written down later.
    api.create(&PostParams::default(), &object(svm("unnamed").json()))
        .await
        .unwrap();
    let adopted = api
        .patch("unnamed", &pp, &patch(json!({"svmName": "k8s_ns_unnamed"})))
        .await
        .unwrap();
    assert_eq!(adopted.data["spec"]["svmName"], "k8s_ns_unnamed");
    let renamed = api
        .patch("unnamed", &pp, &patch(json!({"svmName": "k8s_other"})))
        .await;
    assert_rejected(
        renamed,
        "svmName changed after adoption",
        "spec.svmName",
        "immutable",
    );

    // The mode stays, but for one hand-over: an Owned object that would leave its SVM in ONTAP
    // anyway may share it and keep only its account.
    let shared = api
        .patch(
            "named",
            &pp,
            &patch(json!({"mode": "AccountOnly", "provider": {"name": "other"}})),
        )
        .await;
    assert_rejected(
        shared,
        "Owned with Delete → AccountOnly",
        "spec.mode",
        "mode is immutable",
    );
    api.patch("named", &pp, &patch(json!({"deletionPolicy": "Retain"})))
        .await
        .unwrap();
    let handed_over = api
        .patch(
            "named",
            &pp,
            &patch(json!({"mode": "AccountOnly", "provider": {"name": "other"}})),
        )
        .await
        .unwrap();
    assert_eq!(handed_over.data["spec"]["mode"], "AccountOnly");
    let back = api
        .patch(
            "named",
            &pp,
            &patch(json!({"mode": "Owned", "provider": null})),
        )
        .await;
    assert_rejected(
        back,
        "AccountOnly → Owned",
        "spec.mode",
        "mode is immutable",
    );

    // A full replace (PUT) goes through the same transition rules.
    let mut current = api.get("named").await.unwrap();
    current.data["spec"]["svmName"] = json!("svm_c");
    let replaced = api.replace("named", &PostParams::default(), &current).await;
    assert_rejected(
        replaced,
        "svmName changed by PUT",
        "spec.svmName",
        "immutable",
    );
}

#[tokio::test]
async fn invalid_cluster_specs_are_rejected_naming_the_field() {
    let env = crate::support::env().await;
    let api = dynamic_api::<OntapCluster>(&env, false);
    let prefix = &env.namespace;
    let cases: Vec<(&str, &str, Value, &str, &str)> = vec![
        (
            "rotation period default below a minute",
            "/spec/defaults",
            json!({"credentialRotationPeriod": "59s"}),
            "spec.defaults.credentialRotationPeriod",
            "at least 1m",
        ),
        (
            "plain http",
            "/spec/endpoint",
            json!("http://10.0.0.10"),
            "spec.endpoint",
            "must be an https:// URL",
        ),
        (
            "no scheme",
            "/spec/endpoint",
            json!("10.0.0.10"),
            "spec.endpoint",
            "must be an https:// URL",
        ),
        (
            "uppercase scheme elsewhere",
            "/spec/endpoint",
            json!("ftp://10.0.0.10"),
            "spec.endpoint",
            "https://",
        ),
        (
            "no host",
            "/spec/endpoint",
            json!("https://"),
            "spec.endpoint",
            "https://<host>[:<port>]",
        ),
        (
            "a path",
            "/spec/endpoint",
            json!("https://10.0.0.10/api"),
            "spec.endpoint",
            "without credentials, path",
        ),
        (
            "a query",
            "/spec/endpoint",
            json!("https://10.0.0.10?x=1"),
            "spec.endpoint",
            "without credentials, path",
        ),
        (
            "credentials in the URL",
            "/spec/endpoint",
            json!("https://admin:pw@10.0.0.10"),
            "spec.endpoint",
            "without credentials",
        ),
        (
            "a space",
            "/spec/endpoint",
            json!("https://10.0.0 .10"),
            "spec.endpoint",
            "https://<host>[:<port>]",
        ),
        (
            "credentials ref missing",
            "/spec/credentialsSecretRef",
            Value::Null,
            "spec.credentialsSecretRef",
            "Required value",
        ),
        (
            "credentials ref bad namespace",
            "/spec/credentialsSecretRef/namespace",
            json!("Ontap_System"),
            "spec.credentialsSecretRef.namespace",
            "RFC 1123 label",
        ),
        (
            "credentials ref bad name",
            "/spec/credentialsSecretRef/name",
            json!("-admin"),
            "spec.credentialsSecretRef.name",
            "RFC 1123 subdomain",
        ),
        (
            "CA ref bad name",
            "/spec/caSecretRef",
            json!({"namespace": "ontap-system", "name": "CA"}),
            "spec.caSecretRef.name",
            "RFC 1123 subdomain",
        ),
        (
            "insecure flag not a bool",
            "/spec/insecureSkipTLSVerify",
            json!("yes"),
            "spec.insecureSkipTLSVerify",
            "boolean",
        ),
        (
            "fingerprint too short",
            "/spec/caFingerprint",
            json!("AB:CD:EF"),
            "spec.caFingerprint",
            "SHA-256 fingerprint",
        ),
        (
            "fingerprint not hex",
            "/spec/caFingerprint",
            json!("ZZ".repeat(32)),
            "spec.caFingerprint",
            "SHA-256 fingerprint",
        ),
        (
            "fingerprint and insecure",
            "/spec/insecureSkipTLSVerify",
            json!(true),
            "spec",
            "one way to trust",
        ),
        (
            "CA Secret and insecure",
            "/spec/insecureSkipTLSVerify",
            json!(true),
            "spec",
            "one way to trust",
        ),
    ];
    for (i, (case, pointer, value, field, says)) in cases.into_iter().enumerate() {
        let mut manifest = ontap_cluster(&format!("{prefix}-invalid-{i}")).json();
        // The two trust settings that must not be combined with the flag the case sets.
        match case {
            "fingerprint and insecure" => set(
                &mut manifest,
                "/spec/caFingerprint",
                json!(["AB"; 32].join(":")),
            ),
            "CA Secret and insecure" => set(
                &mut manifest,
                "/spec/caSecretRef",
                json!({"namespace": "ontap-system", "name": "lab-ca"}),
            ),
            _ => {}
        }
        set(&mut manifest, pointer, value);
        let result = api.create(&PostParams::default(), &object(manifest)).await;
        assert_rejected(result, case, field, says);
    }
}

#[tokio::test]
async fn valid_cluster_specs_are_accepted() {
    let env = crate::support::env().await;
    let api = dynamic_api::<OntapCluster>(&env, false);
    let prefix = &env.namespace;
    let endpoints = [
        "https://10.0.0.10",
        "https://10.0.0.10/",
        "https://cluster1.example.com:8443",
        "https://[2001:db8::10]",
        "https://[2001:db8::10]:443",
        "https://mock-ontap.ontap-system.svc:8443",
    ];
    for (i, endpoint) in endpoints.iter().enumerate() {
        let mut manifest = ontap_cluster(&format!("{prefix}-valid-{i}")).json();
        set(&mut manifest, "/spec/endpoint", json!(endpoint));
        if i == 0 {
            set(
                &mut manifest,
                "/spec/caSecretRef",
                json!({"namespace": "ontap-system", "name": "lab-ca"}),
            );
        }
        // Both spellings of a fingerprint: with colons (openssl's) and without.
        if i == 1 {
            set(
                &mut manifest,
                "/spec/caFingerprint",
                json!(["ab"; 32].join(":")),
            );
        }
        if i == 2 {
            set(&mut manifest, "/spec/caFingerprint", json!("0F".repeat(32)));
        }
        let created = api
            .create(&PostParams::default(), &object(manifest))
            .await
            .unwrap_or_else(|e| panic!("{endpoint}: rejected: {e}"));
        assert_eq!(created.data["spec"]["endpoint"], *endpoint);
        assert_eq!(
            created.data["spec"]["insecureSkipTLSVerify"], false,
            "the flag defaults to false, under its serde name"
        );
        api.delete(
            created.metadata.name.as_deref().unwrap(),
            &Default::default(),
        )
        .await
        .unwrap();
    }

    // The typed API round-trips too.
    let typed: Api<OntapCluster> = Api::all(env.client.clone());
    let mut cluster: OntapCluster =
        serde_json::from_value(ontap_cluster(&format!("{prefix}-typed")).json()).unwrap();
    cluster.spec.insecure_skip_tls_verify = true;
    let created = typed
        .create(&PostParams::default(), &cluster)
        .await
        .unwrap();
    assert_eq!(created.spec, cluster.spec);
    typed
        .delete(&format!("{prefix}-typed"), &Default::default())
        .await
        .unwrap();
}

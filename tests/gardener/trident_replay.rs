//! What Trident's ONTAP drivers send, replayed as the account the Extension delivered into the
//! shoot, against mock ONTAP: every request of a backend's initialization, AddBackend's node
//! access reconcile, the periodic state poll and a volume's lifecycle (create, get, resize,
//! snapshot, publish, unpublish, delete) for `ontap-nas` with `autoExportPolicy`, `ontap-san`
//! iSCSI and `ontap-san` NVMe, with the query parameters and bodies Trident sends and the
//! checks it makes of each answer.
//!
//! Derived from Trident's driver code, call by call: `trident_calls.md` beside this file keeps
//! the table of what was derived from where (file and function in Trident), and the row ids
//! below (`A1.1`, `D1.4`, …) are that table's. The newest Trident addresses iSCSI LUNs by uuid
//! in places the table marks ⚠ (their REST shape was not in the sources read); the replay sends
//! the name-based calls there. Below ONTAP 9.12.1 Trident speaks ZAPI after two REST calls: the
//! replay sends those and no more (Part G of the table; mock ONTAP serves no ZAPI).

use std::time::Duration;

use crate::support::gardener::Gardener;
use crate::support::poll;
use crate::support::svm::SvmWorld;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use super::gardenlet::*;

/// Trident's ONTAP client as the shoot's Trident runs it: the delivered account, the SVM it
/// derived, and the cluster's version.
pub(crate) struct Trident<'a> {
    w: &'a SvmWorld,
    user: String,
    password: String,
    pub(crate) svm: String,
    pub(crate) svm_uuid: String,
    version: (u64, u64, u64),
    /// Every request sent, `METHOD path?query`, for failure messages.
    pub(crate) sent: std::cell::RefCell<Vec<String>>,
}

/// Go's `url.Values.Encode`, which Trident's generated client writes queries with: keys sorted,
/// every byte but `A–Z a–z 0–9 - _ . ~` percent-encoded.
fn go_query(params: &[(&str, &str)]) -> String {
    let escape = |s: &str| {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                    (b as char).to_string()
                }
                b' ' => "+".to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect::<String>()
    };
    let mut params = params.to_vec();
    params.sort_by_key(|(k, _)| *k);
    params
        .iter()
        .map(|(k, v)| format!("{}={}", escape(k), escape(v)))
        .collect::<Vec<_>>()
        .join("&")
}

impl<'a> Trident<'a> {
    /// Logs in as Trident does on `Initialize` (A1.1–A1.3): the version, then the SVM derived
    /// from the account, which must be exactly one.
    pub(crate) async fn connect(w: &'a SvmWorld, user: &str, password: &str) -> Self {
        let mut trident = Self {
            w,
            user: user.to_owned(),
            password: password.to_owned(),
            svm: String::new(),
            svm_uuid: String::new(),
            version: (0, 0, 0),
            sent: Default::default(),
        };
        trident.version = trident.cluster_version().await;
        let svms = trident
            .ok(
                Method::GET,
                "/api/svm/svms",
                &[("fields", ""), ("name", "*")],
            )
            .await;
        assert_eq!(
            svms["num_records"], 1,
            "A1.3a: the SVM follows from the account: {svms}"
        );
        trident.svm = svms["records"][0]["name"].as_str().unwrap().to_owned();
        trident.svm_uuid = svms["records"][0]["uuid"].as_str().unwrap().to_owned();
        trident
    }

    /// A1.1 (and A1.2 from 9.16.1, fatal like A1.1): `GET /api/cluster`.
    async fn cluster_version(&self) -> (u64, u64, u64) {
        let cluster = self
            .ok(Method::GET, "/api/cluster", &[("fields", "**")])
            .await;
        let part = |k: &str| {
            cluster["version"][k]
                .as_u64()
                .unwrap_or_else(|| panic!("A1.1: version.{k}: {cluster}"))
        };
        let version = (part("generation"), part("major"), part("minor"));
        if version >= (9, 16, 1) {
            self.ok(
                Method::GET,
                "/api/cluster",
                &[
                    ("fields", "san_optimized,disaggregated"),
                    ("ignore_unknown_fields", "true"),
                ],
            )
            .await;
        }
        version
    }

    /// One request as the account: its status and body.
    async fn send(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let query = go_query(query);
        let url = if query.is_empty() {
            format!("{}{path}", self.w.mock.base_url())
        } else {
            format!("{}{path}?{query}", self.w.mock.base_url())
        };
        self.sent
            .borrow_mut()
            .push(format!("{method} {}", &url[self.w.mock.base_url().len()..]));
        let mut request = self
            .w
            .mock
            .http
            .request(method, &url)
            .basic_auth(&self.user, Some(&self.password));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status();
        let text = response.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// A request whose failure is fatal to Trident: it must succeed.
    async fn ok(&self, method: Method, path: &str, query: &[(&str, &str)]) -> Value {
        self.ok_with(method, path, query, None).await
    }

    async fn ok_with(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        body: Option<Value>,
    ) -> Value {
        let (status, answer) = self.send(method.clone(), path, query, body).await;
        assert!(
            status.is_success(),
            "{method} {path}?{}: {status} {answer}\nsent so far:\n{}",
            go_query(query),
            self.sent.borrow().join("\n")
        );
        answer
    }

    /// A request Trident sends expecting `202 Accepted` with a job, then polls as
    /// `PollJobStatus` does: `fields=state` until done, then `fields=**`; the job must succeed.
    async fn job(&self, method: Method, path: &str, query: &[(&str, &str)], body: Option<Value>) {
        let (status, answer) = self.send(method.clone(), path, query, body).await;
        assert_eq!(
            status,
            StatusCode::ACCEPTED,
            "{method} {path}: Trident requires 202 with a job: {answer}"
        );
        self.wait_job(&answer).await;
    }

    async fn wait_job(&self, answer: &Value) {
        let uuid = answer["job"]["uuid"]
            .as_str()
            .unwrap_or_else(|| panic!("a 202 without job.uuid: {answer}"))
            .to_owned();
        let path = format!("/api/cluster/jobs/{uuid}");
        poll(
            &format!("job {uuid} ending within Trident's 2 min"),
            Duration::from_secs(120),
            async || {
                let job = self.ok(Method::GET, &path, &[("fields", "state")]).await;
                match job["state"].as_str() {
                    Some("success" | "failure") => Ok(()),
                    Some(state @ ("queued" | "running" | "paused")) => Err(state.to_owned()),
                    other => panic!("job state {other:?} is an error to Trident: {job}"),
                }
            },
        )
        .await;
        let done = self.ok(Method::GET, &path, &[("fields", "**")]).await;
        assert_eq!(done["state"], "success", "{done}");
    }

    /// A request whose answer Trident creates or modifies with: sync (200/201) or a job (202).
    async fn sync_or_job(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        body: Value,
    ) -> Value {
        let (status, answer) = self.send(method.clone(), path, query, Some(body)).await;
        match status {
            StatusCode::ACCEPTED => {
                self.wait_job(&answer).await;
                answer
            }
            s if s.is_success() => answer,
            s => panic!("{method} {path}: {s} {answer}"),
        }
    }

    fn svm_filter(&self) -> (&'static str, &str) {
        ("svm.uuid", self.svm_uuid.as_str())
    }

    // -----------------------------------------------------------------------------------------
    // Part A: Initialize

    /// The rest of A1 and the driver's own checks (A2–A4), in `Initialize`'s order.
    pub(crate) async fn initialize(&self, driver: Driver) {
        // A1.4: a warning only: an SVM account may be refused node serial numbers.
        self.send(
            Method::GET,
            "/api/cluster/nodes",
            &[("fields", "serial_number"), ("name", "*")],
            None,
        )
        .await;
        if driver != Driver::Nas {
            self.data_lifs(driver).await;
        }
        // A1.5: the error is ignored.
        self.send(
            Method::GET,
            "/api/svm/peers",
            &[("fields", "peer.svm.name"), self.svm_filter()],
            None,
        )
        .await;
        self.pools().await;
        // A1.7: logged only.
        self.send(
            Method::GET,
            "/api/storage/aggregates",
            &[("fields", "block_storage.primary.disk_type"), ("name", "*")],
            None,
        )
        .await;
        match driver {
            Driver::Nas => {
                self.data_lifs(driver).await;
            }
            Driver::Iscsi => {
                // A3.2: exactly one record for the default initiator, of type none.
                let credentials = self
                    .ok(
                        Method::GET,
                        "/api/protocols/san/iscsi/credentials",
                        &[
                            (
                                "fields",
                                "svm.name,chap.inbound.user,chap.outbound.user,initiator,authentication_type",
                            ),
                            ("initiator", "default"),
                            ("return_records", "true"),
                            self.svm_filter(),
                        ],
                    )
                    .await;
                assert_eq!(credentials["num_records"], 1, "A3.2: {credentials}");
                assert!(
                    credentials["records"][0]["authentication_type"]
                        .as_str()
                        .is_some_and(|t| t.eq_ignore_ascii_case("none")),
                    "A3.2: without useCHAP the default initiator's auth type must be none: {credentials}"
                );
            }
            Driver::Nvme => {}
        }
        // A1.8: ten seconds after Initialize; the answer is ignored, but sent it is.
        self.send(
            Method::POST,
            "/api/support/ems/application-logs",
            &[("return_records", "true")],
            Some(json!({
                "app_version": "1", "autosupport_required": false, "category": "heartbeat",
                "computer_name": "trident-controller", "event_description": "{}", "event_id": 1,
                "event_source": "trident", "severity": "notice",
            })),
        )
        .await;
    }

    /// A2.1 / A3.1 / A4.1 and P3: the SVM's data LIFs serving the driver's protocol, up, with
    /// an address; at least one. Returns their addresses.
    pub(crate) async fn data_lifs(&self, driver: Driver) -> Vec<String> {
        let lifs = self
            .ok(
                Method::GET,
                "/api/network/ip/interfaces",
                &[
                    ("fields", "ip.address,state"),
                    ("services", driver.service()),
                    self.svm_filter(),
                ],
            )
            .await;
        let addresses: Vec<String> = lifs["records"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|l| l["state"] == "up")
            .filter_map(|l| l["ip"]["address"].as_str().map(str::to_owned))
            .collect();
        assert!(
            !addresses.is_empty(),
            "no {} data LIFs found (Trident refuses the backend): {lifs}",
            driver.service()
        );
        addresses
    }

    /// A1.6 / P2: the SVM's aggregates, Trident's pools: at least one.
    async fn pools(&self) -> Vec<String> {
        let svm = self
            .ok(
                Method::GET,
                &format!("/api/svm/svms/{}", self.svm_uuid),
                &[],
            )
            .await;
        let pools: Vec<String> = svm["aggregates"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| a["name"].as_str().map(str::to_owned))
            .collect();
        assert!(!pools.is_empty(), "A1.6: the SVM has no aggregates: {svm}");
        pools
    }

    // -----------------------------------------------------------------------------------------
    // Parts B and C

    /// B: AddBackend's node access reconcile, right after Initialize.
    pub(crate) async fn add_backend(&self, driver: Driver, backend_uuid: &str) {
        match driver {
            Driver::Nas => {
                let policies = self.export_policy(&format!("trident-{backend_uuid}")).await;
                assert!(
                    policies.is_none(),
                    "a new backend's policy does not exist yet"
                );
            }
            Driver::Iscsi => {
                self.ok(
                    Method::GET,
                    "/api/protocols/san/igroups",
                    &[("fields", ""), ("name", "*"), self.svm_filter()],
                )
                .await;
            }
            Driver::Nvme => {}
        }
    }

    /// C: the periodic state poll: the SVM running, its aggregates, its data LIFs, the version.
    pub(crate) async fn poll_state(&self, driver: Driver) {
        let svm = self
            .ok(
                Method::GET,
                &format!("/api/svm/svms/{}", self.svm_uuid),
                &[],
            )
            .await;
        assert_eq!(svm["state"], "running", "P1: {svm}");
        assert!(svm["uuid"].is_string(), "P1: {svm}");
        self.pools().await;
        self.data_lifs(driver).await;
        assert_eq!(self.cluster_version().await, self.version, "P4");
    }

    // -----------------------------------------------------------------------------------------
    // Volumes, as the drivers share them (Parts D, E, F)

    /// VGET: the one volume of `name` with `fields`; `None` when there is none.
    async fn volume(&self, name: &str, fields: &str) -> Option<Value> {
        let volumes = self
            .ok(
                Method::GET,
                "/api/storage/volumes",
                &[
                    ("fields", fields),
                    ("name", name),
                    ("style", "flexvol"),
                    self.svm_filter(),
                ],
            )
            .await;
        match volumes["num_records"].as_u64() {
            Some(0) => None,
            Some(1) => Some(volumes["records"][0].clone()),
            other => panic!("VGET {name}: {other:?} records: {volumes}"),
        }
    }

    /// VEXIST.
    async fn volume_exists(&self, name: &str) -> bool {
        self.volume(name, "").await.is_some()
    }

    /// VINFO: what Trident reads of a volume; it must exist.
    async fn volume_info(&self, name: &str) -> Value {
        let volume = self
            .volume(
                name,
                "type,size,comment,aggregates,nas,guarantee,snapshot_policy,\
                 snapshot_directory_access_enabled,space.snapshot.used,\
                 space.snapshot.reserve_percent,nas.export_policy.name",
            )
            .await
            .unwrap_or_else(|| panic!("VINFO: no volume {name}"));
        assert!(volume["uuid"].is_string(), "VINFO: {volume}");
        volume
    }

    /// VPATCH: a volume PATCH that must answer with a job.
    async fn patch_volume(&self, name: &str, body: Value) {
        let uuid = self.volume(name, "").await.unwrap()["uuid"]
            .as_str()
            .unwrap()
            .to_owned();
        self.job(
            Method::PATCH,
            &format!("/api/storage/volumes/{uuid}"),
            &[],
            Some(body),
        )
        .await;
    }

    /// D1.4 / E1.2 / F1.2: the FlexVol, with the body Trident sends, then `waitForVolume`.
    async fn create_volume(&self, name: &str, size: u64, aggregate: &str, nas_policy: &str) {
        assert!(
            !self.volume_exists(name).await,
            "D1.1: {name} must not exist yet"
        );
        self.job(
            Method::POST,
            "/api/storage/volumes",
            &[],
            Some(json!({
                "name": name, "size": size,
                "guarantee": {"type": "none"}, "snapshot_policy": {"name": "none"},
                "comment": "{\"provisioning\":{\"trident\":\"true\"}}",
                "state": "online", "style": "flexvol",
                "aggregates": [{"name": aggregate}],
                "space": {"snapshot": {"reserve_percent": 0}},
                "svm": {"uuid": self.svm_uuid},
                "tiering": {"policy": "none"},
                "nas": {"security_style": "unix", "unix_permissions": 777,
                        "export_policy": {"name": nas_policy}},
            })),
        )
        .await;
        assert!(self.volume_exists(name).await, "D1.5: waitForVolume");
    }

    /// D4/E3/F3: a snapshot made and found by name (CS3–CS6); its uuid.
    async fn snapshot(&self, volume: &str, snapshot: &str) -> String {
        let uuid = self.volume_info(volume).await["uuid"]
            .as_str()
            .unwrap()
            .to_owned();
        let path = format!("/api/storage/volumes/{uuid}/snapshots");
        self.job(
            Method::POST,
            &path,
            &[],
            Some(json!({"name": snapshot, "svm": {"uuid": self.svm_uuid}})),
        )
        .await;
        self.volume_info(volume).await;
        self.snapshot_named(&path, snapshot).await
    }

    /// CS6 / DS2: the one snapshot of `name` in the snapshots at `path`, with the name and
    /// creation time Trident reads; its uuid.
    async fn snapshot_named(&self, path: &str, name: &str) -> String {
        let found = self
            .ok(
                Method::GET,
                path,
                &[
                    ("fields", "name,create_time"),
                    ("name", name),
                    self.svm_filter(),
                ],
            )
            .await;
        assert_eq!(found["num_records"], 1, "CS6/DS2: {found}");
        let record = &found["records"][0];
        assert!(
            record["name"].is_string() && record["create_time"].is_string(),
            "CS6: {record}"
        );
        record["uuid"]
            .as_str()
            .expect("DS2: the snapshot's uuid")
            .to_owned()
    }

    /// DS1–DS3.
    async fn delete_snapshot(&self, volume: &str, snapshot: &str) {
        let uuid = self.volume_info(volume).await["uuid"]
            .as_str()
            .unwrap()
            .to_owned();
        let path = format!("/api/storage/volumes/{uuid}/snapshots");
        let snapshot_uuid = self.snapshot_named(&path, snapshot).await;
        self.job(
            Method::DELETE,
            &format!("{path}/{snapshot_uuid}"),
            &[],
            None,
        )
        .await;
    }

    /// The volume part of every Resize: it exists, its size, its snapshot reserve and
    /// aggregate (VINFO twice), then a PATCH of the FlexVol's size (200 or a job).
    async fn resize_volume(&self, name: &str, size: u64) {
        assert!(self.volume_exists(name).await, "R1");
        let volume = self.volume(name, "size").await.unwrap();
        assert!(volume["size"].is_u64(), "R2: {volume}");
        self.volume_info(name).await;
        let info = self.volume_info(name).await;
        assert!(
            info["aggregates"][0]["name"].is_string(),
            "aggregate info not available: {info}"
        );
        let uuid = info["uuid"].as_str().unwrap();
        self.sync_or_job(
            Method::PATCH,
            &format!("/api/storage/volumes/{uuid}"),
            &[],
            json!({"size": size}),
        )
        .await;
    }

    /// D7 / E6 / F6: Destroy: the volume exists, no SnapMirror relationship holds it (four
    /// GETs, each must answer), then the DELETE with its job.
    async fn destroy_volume(&self, name: &str) {
        assert!(self.volume_exists(name).await);
        let destination = format!("{}:{name}", self.svm);
        for fields in [
            Some("source.path,destination.path"),
            None,
            Some("source.path,destination.path"),
            Some("source.path,destination.path"),
        ] {
            let answer = match fields {
                Some(fields) => {
                    self.ok(
                        Method::GET,
                        "/api/snapmirror/relationships",
                        &[("fields", fields), ("list_destinations_only", "true")],
                    )
                    .await
                }
                None => {
                    self.ok(
                        Method::GET,
                        "/api/snapmirror/relationships",
                        &[("fields", "destination.path,source.path")],
                    )
                    .await
                }
            };
            assert!(
                !answer["records"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|r| r["destination"]["path"] == destination.as_str()),
                "SMCLEAN: {answer}"
            );
        }
        let uuid = self.volume(name, "").await.unwrap()["uuid"]
            .as_str()
            .unwrap()
            .to_owned();
        self.job(
            Method::DELETE,
            &format!("/api/storage/volumes/{uuid}"),
            &[("force", "false")],
            None,
        )
        .await;
        assert!(!self.volume_exists(name).await, "the volume is gone");
    }

    // -----------------------------------------------------------------------------------------
    // Part D: ontap-nas with autoExportPolicy

    /// EPGET: the export policy's id, `None` when absent.
    async fn export_policy(&self, name: &str) -> Option<u64> {
        let policies = self
            .ok(
                Method::GET,
                "/api/protocols/nfs/export-policies",
                &[("fields", ""), ("name", name), self.svm_filter()],
            )
            .await;
        match policies["num_records"].as_u64() {
            Some(0) => None,
            Some(1) => Some(policies["records"][0]["id"].as_u64().expect("EPGET: id")),
            other => panic!("EPGET {name}: {other:?}: {policies}"),
        }
    }

    /// EPCREATE.
    async fn ensure_export_policy(&self, name: &str) -> u64 {
        if let Some(id) = self.export_policy(name).await {
            return id;
        }
        let (status, answer) = self
            .send(
                Method::POST,
                "/api/protocols/nfs/export-policies",
                &[],
                Some(json!({"name": name, "svm": {"uuid": self.svm_uuid}})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "EPCREATE {name}: {answer}");
        self.export_policy(name)
            .await
            .expect("the policy just created")
    }

    /// RULES: the policy's rules, `(index, clients)`.
    async fn export_rules(&self, policy: &str) -> Vec<(u64, String)> {
        let id = self.export_policy(policy).await.expect("RULES: the policy");
        let rules = self
            .ok(
                Method::GET,
                &format!("/api/protocols/nfs/export-policies/{id}/rules"),
                &[("fields", "clients")],
            )
            .await;
        rules["records"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| {
                let clients = r["clients"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|c| c["match"].as_str())
                    .collect::<Vec<_>>()
                    .join(",");
                (r["index"].as_u64().expect("RULES: index"), clients)
            })
            .collect()
    }

    /// The NFS volume's whole life, D1–D7, published to `node`.
    pub(crate) async fn nas_volume_lifecycle(&self, node: &str) {
        let volume = "trident_pvc_5f3c0e2a_7b1d_4c8e_9a6f_2d4b8e1c3a70";
        let aggregate = self.pools().await.remove(0);
        // D1: Create.
        assert!(!self.volume_exists(volume).await, "D1.1");
        self.ensure_export_policy("trident_empty").await;
        self.create_volume(volume, 1 << 30, &aggregate, "trident_empty")
            .await;
        self.patch_volume(volume, json!({"snapshot_directory_access_enabled": false}))
            .await;
        let mounted = self.volume(volume, "nas.path").await.unwrap();
        if mounted["nas"]["path"] != format!("/{volume}").as_str() {
            self.patch_volume(volume, json!({"nas": {"path": format!("/{volume}")}}))
                .await;
        }
        let info = self.volume_info(volume).await;
        assert_eq!(
            info["nas"]["path"],
            format!("/{volume}").as_str(),
            "D1.9: the junction"
        );
        // D2: Get.
        assert!(self.volume_exists(volume).await);
        // D5: Publish to the node: the volume's own policy, a rule for the node, the policy
        // on the volume.
        assert!(self.export_policy(volume).await.is_none());
        self.ensure_export_policy(volume).await;
        let rules = self.export_rules(volume).await;
        if !rules
            .iter()
            .any(|(_, clients)| clients.split(',').any(|c| c == node))
        {
            let id = self.export_policy(volume).await.unwrap();
            let (status, answer) = self
                .send(
                    Method::POST,
                    &format!("/api/protocols/nfs/export-policies/{id}/rules"),
                    &[],
                    Some(json!({
                        "clients": [{"match": node}], "protocols": ["nfs"],
                        "ro_rule": ["any"], "rw_rule": ["any"], "superuser": ["any"],
                    })),
                )
                .await;
            assert_eq!(status, StatusCode::CREATED, "RULEADD: {answer}");
        }
        self.patch_volume(volume, json!({"nas": {"export_policy": {"name": volume}}}))
            .await;
        let info = self.volume_info(volume).await;
        assert_eq!(info["nas"]["export_policy"]["name"], volume, "{info}");
        // D4: a snapshot (the volume's used size first: GetSnapshot's existence check).
        assert!(self.volume_exists(volume).await);
        let used = self
            .volume(volume, "space.logical_space.used")
            .await
            .unwrap();
        assert!(
            used["space"]["logical_space"]["used"].is_u64(),
            "CS2: {used}"
        );
        self.snapshot(volume, "snapshot-1").await;
        // D3: Resize.
        self.resize_volume(volume, 2 << 30).await;
        assert_eq!(
            self.volume(volume, "size").await.unwrap()["size"],
            2u64 << 30
        );
        self.delete_snapshot(volume, "snapshot-1").await;
        // D6: Unpublish from the last node: its rule, then the empty policy on the volume, then
        // the volume's policy goes.
        self.volume_info(volume).await;
        let id = self.export_policy(volume).await.unwrap();
        for (index, clients) in self.export_rules(volume).await {
            assert_eq!(clients, node);
            self.ok(
                Method::DELETE,
                &format!("/api/protocols/nfs/export-policies/{id}/rules/{index}"),
                &[],
            )
            .await;
        }
        assert!(self.export_rules(volume).await.is_empty());
        self.ensure_export_policy("trident_empty").await;
        self.patch_volume(
            volume,
            json!({"nas": {"export_policy": {"name": "trident_empty"}}}),
        )
        .await;
        let id = self.export_policy(volume).await.unwrap();
        self.ok(
            Method::DELETE,
            &format!("/api/protocols/nfs/export-policies/{id}"),
            &[],
        )
        .await;
        // D7: Delete.
        self.destroy_volume(volume).await;
    }

    // -----------------------------------------------------------------------------------------
    // Part F: ontap-san NVMe

    /// NSGET: the one namespace of `path`.
    async fn namespace(&self, path: &str, fields: &str) -> Value {
        let found = self
            .ok(
                Method::GET,
                "/api/storage/namespaces",
                &[("fields", fields), ("name", path), self.svm_filter()],
            )
            .await;
        assert_eq!(found["num_records"], 1, "NSGET {path}: {found}");
        found["records"][0].clone()
    }

    /// The NVMe volume's whole life, F1–F6, published to the host `host_nqn`.
    pub(crate) async fn nvme_volume_lifecycle(&self, host_nqn: &str) {
        let volume = "trident_pvc_8e2d4a61_0c3b_4f5e_a7d9_1b6c3e8f2a45";
        let path = format!("/vol/{volume}/namespace0");
        let size: u64 = 1 << 30;
        let aggregate = self.pools().await.remove(0);
        // F1: Create: the FlexVol, the namespace in it.
        self.create_volume(volume, size + (size / 10), &aggregate, "default")
            .await;
        let created = self
            .sync_or_job(
                Method::POST,
                "/api/storage/namespaces",
                &[("return_records", "true")],
                json!({
                    "name": path, "os_type": "linux",
                    "space": {"size": size, "block_size": 4096},
                    "comment": "{\"nsAttribute\":{\"com.netapp.ndvp.fstype\":\"ext4\",\"LUKS\":\"false\",\"driverContext\":\"csi\"}}",
                    "svm": {"uuid": self.svm_uuid},
                }),
            )
            .await;
        if created["job"].is_null() {
            assert_eq!(created["num_records"], 1, "F1.3: {created}");
            assert_eq!(
                created["records"][0]["name"],
                path.as_str(),
                "F1.3: {created}"
            );
        }
        let namespace = self
            .namespace(
                &path,
                "os_type,location.volume.name,space.size,space.block_size,status.state,comment",
            )
            .await;
        let namespace_uuid = namespace["uuid"].as_str().expect("F1.4: uuid").to_owned();
        // F4: Publish: the node's subsystem, the host in it, the namespace mapped.
        let info = self.volume_info(volume).await;
        assert_eq!(info["type"], "rw", "F4.1: {info}");
        let subsystem = "node-1_7c1f3b2e-4d5a-4e6f-8a9b-0c1d2e3f4a5b";
        let found = self
            .ok(
                Method::GET,
                "/api/protocols/nvme/subsystems",
                &[
                    ("fields", "target_nqn"),
                    ("name", subsystem),
                    self.svm_filter(),
                ],
            )
            .await;
        assert_eq!(
            found["num_records"], 0,
            "F4.2: num_records must be there: {found}"
        );
        let created = self
            .ok_with(
                Method::POST,
                "/api/protocols/nvme/subsystems",
                &[("return_records", "true")],
                Some(json!({
                    "name": subsystem, "os_type": "linux",
                    "svm": {"uuid": self.svm_uuid}, "comment": subsystem,
                })),
            )
            .await;
        assert_eq!(created["num_records"], 1, "F4.3: {created}");
        let record = &created["records"][0];
        assert_eq!(record["name"], subsystem, "F4.3: {record}");
        assert!(
            record["target_nqn"].is_string(),
            "F4.3: target_nqn: {record}"
        );
        let subsystem_uuid = record["uuid"].as_str().expect("F4.3: uuid").to_owned();
        let hosts_path = format!("/api/protocols/nvme/subsystems/{subsystem_uuid}/hosts");
        let hosts = self.ok(Method::GET, &hosts_path, &[]).await;
        assert!(
            !hosts["records"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|h| h["nqn"] == host_nqn),
            "F4.4: {hosts}"
        );
        self.ok_with(
            Method::POST,
            &hosts_path,
            &[],
            Some(json!({"nqn": host_nqn})),
        )
        .await;
        let maps = self
            .ok(
                Method::GET,
                "/api/protocols/nvme/subsystem-maps",
                &[("subsystem.uuid", &subsystem_uuid)],
            )
            .await;
        assert_eq!(maps["num_records"], 0, "F4.6: {maps}");
        self.ok_with(
            Method::POST,
            "/api/protocols/nvme/subsystem-maps",
            &[],
            Some(json!({
                "namespace": {"uuid": namespace_uuid}, "subsystem": {"uuid": subsystem_uuid},
                "svm": {"uuid": self.svm_uuid},
            })),
        )
        .await;
        // F3: a snapshot, the namespace's size first.
        assert!(self.volume_exists(volume).await);
        let sized = self
            .ok(
                Method::GET,
                "/api/storage/namespaces",
                &[
                    ("fields", "space.size"),
                    ("name", &format!("/vol/{volume}/*")),
                    self.svm_filter(),
                ],
            )
            .await;
        assert_eq!(sized["num_records"], 1, "{sized}");
        assert!(
            sized["records"][0]["space"]["size"].is_u64(),
            "F3: space.size: {sized}"
        );
        self.snapshot(volume, "snapshot-1").await;
        // F2: Resize: the FlexVol, then the namespace.
        let grown: u64 = 2 << 30;
        self.namespace(
            &path,
            "os_type,location.volume.name,space.size,space.block_size,status.state,comment",
        )
        .await;
        self.resize_volume(volume, grown + grown / 10).await;
        self.sync_or_job(
            Method::PATCH,
            &format!("/api/storage/namespaces/{namespace_uuid}"),
            &[],
            json!({"space": {"size": grown}}),
        )
        .await;
        assert_eq!(
            self.namespace(&path, "space.size").await["space"]["size"],
            grown
        );
        self.delete_snapshot(volume, "snapshot-1").await;
        // F5: Unpublish the only host: the map goes, then the empty subsystem.
        let maps = self
            .ok(
                Method::GET,
                "/api/protocols/nvme/subsystem-maps",
                &[("subsystem.uuid", &subsystem_uuid)],
            )
            .await;
        assert_eq!(maps["num_records"], 1, "F5.1: {maps}");
        let hosts = self.ok(Method::GET, &hosts_path, &[]).await;
        assert_eq!(hosts["num_records"], 1, "F5.2: {hosts}");
        self.ok(
            Method::DELETE,
            &format!("/api/protocols/nvme/subsystem-maps/{subsystem_uuid}/{namespace_uuid}"),
            &[],
        )
        .await;
        let maps = self
            .ok(
                Method::GET,
                "/api/protocols/nvme/subsystem-maps",
                &[("subsystem.uuid", &subsystem_uuid)],
            )
            .await;
        assert_eq!(maps["num_records"], 0, "F5.5: {maps}");
        self.ok(
            Method::DELETE,
            &format!("/api/protocols/nvme/subsystems/{subsystem_uuid}"),
            &[("allow_delete_with_hosts", "true")],
        )
        .await;
        // F6: Delete: the namespace goes with its volume.
        self.destroy_volume(volume).await;
        let left = self
            .ok(
                Method::GET,
                "/api/storage/namespaces",
                &[("fields", "space.size"), ("name", &path), self.svm_filter()],
            )
            .await;
        assert_eq!(left["num_records"], 0, "{left}");
    }

    // -----------------------------------------------------------------------------------------
    // Part E: ontap-san iSCSI

    /// LGET: the one LUN of `path`.
    async fn lun(&self, path: &str, fields: &str) -> Value {
        let found = self
            .ok(
                Method::GET,
                "/api/storage/luns",
                &[("fields", fields), ("name", path), self.svm_filter()],
            )
            .await;
        assert_eq!(found["num_records"], 1, "LGET {path}: {found}");
        found["records"][0].clone()
    }

    /// The igroup of `name`, `None` when absent.
    async fn igroup(&self, name: &str, fields: &str) -> Option<Value> {
        let found = self
            .ok(
                Method::GET,
                "/api/protocols/san/igroups",
                &[("fields", fields), ("name", name), self.svm_filter()],
            )
            .await;
        match found["num_records"].as_u64() {
            Some(0) => None,
            Some(1) => Some(found["records"][0].clone()),
            other => panic!("igroup {name}: {other:?}: {found}"),
        }
    }

    /// `LunMapInfo`: the LUN's maps as Trident asks for them (no SVM filter, the CLI spelling
    /// of the unit number).
    async fn lun_maps(&self, lun: &str, igroup: Option<&str>) -> Value {
        let mut query = vec![
            ("fields", "svm,lun,igroup,logical-unit-number"),
            ("lun.name", lun),
        ];
        if let Some(igroup) = igroup {
            query.push(("igroup.name", igroup));
        }
        self.ok(Method::GET, "/api/protocols/san/lun-maps", &query)
            .await
    }

    /// The iSCSI volume's whole life, E1–E6, published to the node `node` with initiator `iqn`.
    pub(crate) async fn iscsi_volume_lifecycle(&self, node: &str, iqn: &str) {
        let volume = "trident_pvc_3b9e7c14_2a6d_4e8f_b1c0_5d7a9e2f4c68";
        let lun_path = format!("/vol/{volume}/lun0");
        let size: u64 = 1 << 30;
        let aggregate = self.pools().await.remove(0);
        // E1: Create: the FlexVol, the LUN, its attributes.
        self.create_volume(volume, size + size / 10, &aggregate, "default")
            .await;
        self.sync_or_job(
            Method::POST,
            "/api/storage/luns",
            &[("return_records", "true")],
            json!({
                "name": lun_path, "os_type": "linux",
                "space": {"size": size, "guarantee": {"requested": false},
                          "scsi_thin_provisioning_support_enabled": true},
                "svm": {"uuid": self.svm_uuid},
            }),
        )
        .await;
        let lun_uuid = self.lun(&lun_path, "").await["uuid"]
            .as_str()
            .expect("E1.4: uuid")
            .to_owned();
        for (name, value) in [
            ("com.netapp.ndvp.fstype", "ext4"),
            ("context", "csi"),
            ("LUKS", "false"),
        ] {
            let attributes = self.lun(&lun_path, "attributes.name").await;
            let present = attributes["attributes"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|a| a["name"] == name);
            assert!(!present, "E1.5: {name} is new: {attributes}");
            let (status, answer) = self
                .send(
                    Method::POST,
                    &format!("/api/storage/luns/{lun_uuid}/attributes"),
                    &[],
                    Some(json!({"name": name, "value": value})),
                )
                .await;
            assert!(status.is_success(), "E1.5 {name}: {status} {answer}");
        }
        // E4: Publish: the node's igroup with its initiator, the target, the map, the
        // reporting nodes' portals.
        let info = self.volume_info(volume).await;
        assert_eq!(info["type"], "rw", "E4.1: {info}");
        let igroup = format!("{node}-7c1f3b2e-4d5a-4e6f-8a9b-0c1d2e3f4a5b");
        assert!(self.igroup(&igroup, "").await.is_none(), "E4.2");
        let created = self
            .ok_with(
                Method::POST,
                "/api/protocols/san/igroups",
                &[("return_records", "true")],
                Some(json!({
                    "name": igroup, "protocol": "iscsi", "os_type": "linux",
                    "svm": {"uuid": self.svm_uuid},
                })),
            )
            .await;
        assert_eq!(created["num_records"], 1, "E4.3: {created}");
        self.ok(
            Method::GET,
            &format!("/api/svm/svms/{}", self.svm_uuid),
            &[],
        )
        .await;
        let service = self
            .ok(
                Method::GET,
                &format!("/api/protocols/san/iscsi/services/{}", self.svm_uuid),
                &[("fields", "target.name")],
            )
            .await;
        assert!(service["target"]["name"].is_string(), "E4.5: {service}");
        let services = self
            .ok(
                Method::GET,
                "/api/protocols/san/iscsi/services",
                &[
                    ("fields", "target.name,enabled"),
                    ("return_records", "true"),
                    self.svm_filter(),
                ],
            )
            .await;
        assert!(
            services["records"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|s| s["enabled"] == true && s["target"]["name"].is_string()),
            "E4.6: no active iSCSI interfaces: {services}"
        );
        let attributes = self
            .lun(&lun_path, "attributes.name,attributes.value")
            .await;
        assert!(
            attributes["attributes"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|a| a["name"] == "com.netapp.ndvp.fstype" && a["value"] == "ext4"),
            "E4.7: {attributes}"
        );
        let lun = self
            .lun(
                &lun_path,
                "lun_maps.igroup.name,lun_maps.logical_unit_number,space.size,comment,\
                 qos_policy.name,status.mapped,location.volume.name,create_time,enabled,\
                 serial_number,status.state,os_type",
            )
            .await;
        assert!(
            lun["serial_number"].as_str().is_some_and(|s| !s.is_empty()),
            "E4.9: the LUN's serial number: {lun}"
        );
        let group = self.igroup(&igroup, "initiators.name").await.unwrap();
        assert!(
            !group["initiators"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|i| i["name"] == iqn),
            "E4.10: {group}"
        );
        let group_uuid = self.igroup(&igroup, "").await.unwrap()["uuid"]
            .as_str()
            .unwrap()
            .to_owned();
        self.ok_with(
            Method::POST,
            &format!("/api/protocols/san/igroups/{group_uuid}/initiators"),
            &[],
            Some(json!({"name": iqn})),
        )
        .await;
        let maps = self.lun_maps(&lun_path, None).await;
        assert!(
            !maps["records"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|m| m["igroup"]["name"] == igroup.as_str()),
            "E4.12: {maps}"
        );
        self.lun(&lun_path, "").await;
        let mapped = self
            .ok_with(
                Method::POST,
                "/api/protocols/san/lun-maps",
                &[("return_records", "true")],
                Some(json!({
                    "igroup": {"name": igroup}, "lun": {"name": lun_path, "uuid": lun_uuid},
                    "svm": {"uuid": self.svm_uuid},
                })),
            )
            .await;
        assert_eq!(mapped["num_records"], 1, "E4.13: {mapped}");
        assert!(
            mapped["records"][0]["logical_unit_number"].is_u64(),
            "E4.13: {mapped}"
        );
        let reporting = self
            .ok(
                Method::GET,
                &format!("/api/protocols/san/lun-maps/{lun_uuid}/{group_uuid}/reporting-nodes"),
                &[],
            )
            .await;
        let nodes: Vec<&str> = reporting["records"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|n| n["name"].as_str())
            .collect();
        assert!(
            !nodes.is_empty(),
            "E4.14: no reporting nodes found: {reporting}"
        );
        let iscsi_lifs = self.data_lifs(Driver::Iscsi).await;
        let interfaces = self
            .ok(
                Method::GET,
                "/api/network/ip/interfaces",
                &[
                    ("fields", "location.node.name,ip.address"),
                    self.svm_filter(),
                ],
            )
            .await;
        assert!(
            interfaces["records"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|i| {
                    i["ip"]["address"]
                        .as_str()
                        .is_some_and(|a| iscsi_lifs.iter().any(|l| l == a))
                        && i["location"]["node"]["name"]
                            .as_str()
                            .is_some_and(|n| nodes.contains(&n))
                }),
            "E4.15: no iSCSI LIF on a reporting node ({nodes:?}): {interfaces}"
        );
        // E3: a snapshot, the LUN's size first.
        assert!(self.volume_exists(volume).await);
        assert!(self.lun(&lun_path, "space.size").await["space"]["size"].is_u64());
        self.snapshot(volume, "snapshot-1").await;
        // E2: Resize: the FlexVol, then the LUN.
        let grown: u64 = 2 << 30;
        self.lun(&lun_path, "space.size").await;
        self.resize_volume(volume, grown + grown / 10).await;
        self.lun(&lun_path, "").await;
        self.sync_or_job(
            Method::PATCH,
            &format!("/api/storage/luns/{lun_uuid}"),
            &[],
            json!({"space": {"size": grown}}),
        )
        .await;
        assert_eq!(
            self.lun(&lun_path, "space.size").await["space"]["size"],
            grown
        );
        self.delete_snapshot(volume, "snapshot-1").await;
        // E5: Unpublish: the map goes, then the igroup with no LUN left.
        let maps = self.lun_maps(&lun_path, Some(&igroup)).await;
        assert_eq!(maps["num_records"], 1, "E5.1: {maps}");
        assert!(
            maps["records"][0]["igroup"]["uuid"].is_string(),
            "E5.2: {maps}"
        );
        self.lun(&lun_path, "").await;
        self.ok(
            Method::DELETE,
            &format!("/api/protocols/san/lun-maps/{lun_uuid}/{group_uuid}"),
            &[],
        )
        .await;
        let left = self
            .ok(
                Method::GET,
                "/api/protocols/san/lun-maps",
                &[("fields", ""), ("igroup.name", &igroup), ("lun.name", "*")],
            )
            .await;
        assert_eq!(left["num_records"], 0, "E5.3: {left}");
        self.igroup(&igroup, "").await.unwrap();
        self.ok(
            Method::DELETE,
            &format!("/api/protocols/san/igroups/{group_uuid}"),
            &[],
        )
        .await;
        // E6: Delete.
        self.destroy_volume(volume).await;
    }
}

/// The driver a TridentBackendConfig names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Driver {
    Nas,
    Iscsi,
    Nvme,
}

impl Driver {
    /// The LIF service Trident's `services=` filter asks for.
    pub(crate) fn service(self) -> &'static str {
        match self {
            Driver::Nas => "data_nfs",
            Driver::Iscsi => "data_iscsi",
            Driver::Nvme => "data_nvme_tcp",
        }
    }

    fn of(spec: &Value) -> Self {
        match (spec["storageDriverName"].as_str(), spec["sanType"].as_str()) {
            (Some("ontap-nas"), _) => Driver::Nas,
            (Some("ontap-san"), Some("nvme")) => Driver::Nvme,
            (Some("ontap-san"), _) => Driver::Iscsi,
            other => panic!("not an ONTAP backend: {other:?}"),
        }
    }
}

impl Trident<'_> {
    /// Initialization, AddBackend, the state poll and a volume's whole life of `driver`.
    pub(crate) async fn whole_life(&self, driver: Driver) {
        self.initialize(driver).await;
        self.add_backend(driver, "0d6f3a9c-5b2e-4c71-8e4d-a19b2c3d4e5f")
            .await;
        self.poll_state(driver).await;
        match driver {
            Driver::Nas => self.nas_volume_lifecycle("10.250.0.10").await,
            Driver::Nvme => {
                self.nvme_volume_lifecycle(
                    "nqn.2014-08.org.nvmexpress:uuid:4c4c4544-0031-3510-8052-b4c04f4e3332",
                )
                .await
            }
            Driver::Iscsi => {
                self.iscsi_volume_lifecycle("node-1", "iqn.1994-05.com.redhat:node-1")
                    .await
            }
        }
    }
}

/// A shoot with all three protocols on an ONTAP of `version`: each delivered backend is
/// replayed through initialization, AddBackend, the state poll and a volume's whole life, as
/// the delivered account.
async fn every_backend_works_on(version: &str) {
    let g = Gardener::start().await;
    let mut mock = crate::support::mock::fast_mock();
    mock.cluster.version = version.into();
    let args = operator_args(&g.namespace);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let w = SvmWorld::with(mock, &args).await;
    bind_extension_rules(&w.env.client).await;
    let ns = g.namespace.clone();
    create_cluster(&g, &ns, json!({})).await;
    let config = json!({
        "apiVersion": "ontap.extensions.storage.dev/v1alpha1", "kind": "OntapConfig",
        "cluster": w.cluster,
        "svm": {"managementLif": {"ip": "192.0.2.90", "prefixLength": 24},
                "dataLifs": [
                    {"ip": "192.0.2.91", "prefixLength": 24, "protocols": ["nvme"]},
                    {"ip": "192.0.2.92", "prefixLength": 24, "protocols": ["iscsi"]},
                    {"ip": "192.0.2.93", "prefixLength": 24, "protocols": ["nfs"]}],
                "protocols": ["nvme", "iscsi", "nfs"]}
    });
    let ts = create_extension(&g, &ns, config, "reconcile").await;
    wait_ready(&g, &w, &ns, &ts).await;

    let backends = backend_configs(&g).list(&Default::default()).await.unwrap();
    assert_eq!(backends.items.len(), 3, "one backend per protocol");
    let mut backends: Vec<(Driver, &Value)> = backends
        .items
        .iter()
        .map(|b| (Driver::of(&b.data["spec"]), &b.data["spec"]))
        .collect();
    backends.sort_by_key(|(driver, _)| *driver as u8);
    for (driver, spec) in backends {
        let (user, password) = shoot_credentials(&g, spec["credentials"]["name"].as_str().unwrap())
            .await
            .unwrap();
        assert_eq!(spec["useREST"], true, "REST from 9.12.1: {spec}");
        let trident = Trident::connect(&w, &user, &password).await;
        trident.whole_life(driver).await;
        println!(
            "{version} {driver:?}: {} requests replayed",
            trident.sent.borrow().len()
        );
    }
}

/// The first release whose REST API Trident uses (on request).
#[tokio::test]
async fn every_backend_works_on_ontap_9_12_1() {
    every_backend_works_on("9.12.1").await;
}

/// Before `ignore_unknown_fields` is sent.
#[tokio::test]
async fn every_backend_works_on_ontap_9_13_1() {
    every_backend_works_on("9.13.1").await;
}

/// What `make up` reports; Trident adds the ASA r2 probe (A1.2) from 9.16.1 on.
#[tokio::test]
async fn every_backend_works_on_ontap_9_16_1() {
    every_backend_works_on("9.16.1").await;
}

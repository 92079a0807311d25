//! NFS export policies and their rules, and the iSCSI default initiator security.

use serde_json::{Value, json};

use super::{ExportPolicy, Rule, at, link, rule_body, str_at};
use crate::error::{ApiError, ApiResult, codes};
use crate::model::{Model, Principal};

impl Model {
    // ---------------------------------------------------------------- export policies

    pub(super) fn rule_json(&self, policy: &ExportPolicy, rule: &Rule) -> Value {
        let mut out = rule.body.clone();
        if let Some(obj) = out.as_object_mut() {
            obj.insert("index".into(), json!(rule.index));
            obj.insert(
                "_links".into(),
                link(format!(
                    "/api/protocols/nfs/export-policies/{}/rules/{}",
                    policy.id, rule.index
                )),
            );
        }
        out
    }

    pub(super) fn policy_json(&self, p: &ExportPolicy) -> Value {
        let rules: Vec<Value> = p.rules.iter().map(|r| self.rule_json(p, r)).collect();
        json!({
            "id": p.id,
            "name": p.name,
            "svm": self.svm_ref(&p.svm),
            "rules": rules,
            "_links": link(format!("/api/protocols/nfs/export-policies/{}", p.id)),
        })
    }

    pub fn policy_records(&self, who: &Principal) -> Vec<Value> {
        self.storage
            .policies
            .values()
            .filter(|p| who.may_see(&p.svm))
            .map(|p| self.policy_json(p))
            .collect()
    }

    pub(super) fn visible_policy(&self, who: &Principal, id: &str) -> ApiResult<&ExportPolicy> {
        id.parse::<u64>()
            .ok()
            .and_then(|id| self.storage.policies.get(&id))
            .filter(|p| who.may_see(&p.svm))
            .ok_or_else(|| ApiError::not_found("id"))
    }

    pub fn policy_record(&self, who: &Principal, id: &str) -> ApiResult<Value> {
        self.visible_policy(who, id).map(|p| self.policy_json(p))
    }

    pub(super) fn check_policy_name(&self, svm: &str, name: &str) -> ApiResult<()> {
        if name.is_empty() {
            return Err(ApiError::missing_field("name"));
        }
        if self.storage.policy_by_name(svm, name).is_some() {
            return Err(ApiError::conflict(
                codes::EXPORT_POLICY_EXISTS,
                format!("Export policy \"{name}\" already exists."),
            )
            .with_target("name"));
        }
        Ok(())
    }

    pub fn create_policy(&mut self, who: &Principal, body: &Value) -> ApiResult<(u64, Value)> {
        let (svm, _) = self.target_svm(who, body)?;
        let name = str_at(body, "name").unwrap_or_default().to_owned();
        self.check_policy_name(&svm, &name)?;
        let rules = match at(body, "rules").and_then(Value::as_array) {
            Some(rules) => rules
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    rule_body(r).map(|body| Rule {
                        index: i as u64 + 1,
                        body,
                    })
                })
                .collect::<ApiResult<Vec<_>>>()?,
            None => Vec::new(),
        };
        let id = self.storage.next_policy_id(&svm);
        self.storage.policies.insert(
            id,
            ExportPolicy {
                id,
                name: name.clone(),
                svm,
                rules,
            },
        );
        Ok((id, json!({ "id": id, "name": name })))
    }

    pub fn patch_policy(&mut self, who: &Principal, id: &str, body: &Value) -> ApiResult<()> {
        let policy = self.visible_policy(who, id)?;
        let (key, svm) = (policy.id, policy.svm.clone());
        if let Some(name) = str_at(body, "name")
            && name != policy.name
        {
            self.check_policy_name(&svm, name)?;
            let old = policy.name.clone();
            for v in self.storage.volumes.values_mut() {
                if v.svm == svm && v.export_policy == old {
                    v.export_policy = name.to_owned();
                }
            }
            if let Some(p) = self.storage.policies.get_mut(&key) {
                p.name = name.to_owned();
            }
        }
        if let Some(rules) = at(body, "rules").and_then(Value::as_array) {
            let rules = rules
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    rule_body(r).map(|body| Rule {
                        index: i as u64 + 1,
                        body,
                    })
                })
                .collect::<ApiResult<Vec<_>>>()?;
            if let Some(p) = self.storage.policies.get_mut(&key) {
                p.rules = rules;
            }
        }
        Ok(())
    }

    pub fn delete_policy(&mut self, who: &Principal, id: &str) -> ApiResult<()> {
        let policy = self.visible_policy(who, id)?;
        let in_use = self
            .storage
            .volumes
            .values()
            .any(|v| v.svm == policy.svm && v.export_policy == policy.name);
        if policy.name == "default" || in_use {
            return Err(ApiError::bad_request(
                codes::EXPORT_POLICY_IN_USE,
                format!(
                    "Export policy \"{}\" is the default policy or is in use by a volume.",
                    policy.name
                ),
            ));
        }
        let key = policy.id;
        self.storage.policies.remove(&key);
        Ok(())
    }

    pub fn rule_records(&self, who: &Principal, id: &str) -> ApiResult<Vec<Value>> {
        let p = self.visible_policy(who, id)?;
        let mut rules: Vec<Value> = p.rules.iter().map(|r| self.rule_json(p, r)).collect();
        let policy = json!({ "id": p.id, "name": p.name });
        for rule in &mut rules {
            if let Some(obj) = rule.as_object_mut() {
                obj.insert("policy".into(), policy.clone());
                obj.insert("svm".into(), self.svm_ref(&p.svm));
            }
        }
        Ok(rules)
    }

    pub fn rule_record(&self, who: &Principal, id: &str, index: &str) -> ApiResult<Value> {
        self.rule_records(who, id)?
            .into_iter()
            .find(|r| r["index"].as_u64().is_some_and(|i| i.to_string() == index))
            .ok_or_else(|| ApiError::not_found("index"))
    }

    pub fn create_rule(&mut self, who: &Principal, id: &str, body: &Value) -> ApiResult<Value> {
        let key = self.visible_policy(who, id)?.id;
        let body = rule_body(body)?;
        let policy = self
            .storage
            .policies
            .get_mut(&key)
            .ok_or_else(|| ApiError::not_found("id"))?;
        let index = policy.rules.iter().map(|r| r.index).max().unwrap_or(0) + 1;
        policy.rules.push(Rule { index, body });
        Ok(json!({ "index": index }))
    }

    pub fn delete_rule(&mut self, who: &Principal, id: &str, index: &str) -> ApiResult<()> {
        let key = self.visible_policy(who, id)?.id;
        let policy = self
            .storage
            .policies
            .get_mut(&key)
            .ok_or_else(|| ApiError::not_found("id"))?;
        let before = policy.rules.len();
        policy.rules.retain(|r| r.index.to_string() != index);
        if policy.rules.len() == before {
            return Err(ApiError::not_found("index"));
        }
        Ok(())
    }

    // ---------------------------------------------------------------- iSCSI credentials

    /// The `default` initiator security of each SVM with an iSCSI service.
    pub fn iscsi_credential_records(&self, who: &Principal) -> Vec<Value> {
        self.svms
            .starting_at("")
            .filter(|s| s.creating.is_none() && who.may_see(&s.uuid))
            .filter(|s| s.iscsi.service.is_some())
            .map(|s| {
                json!({
                    "svm": s.reference(),
                    "initiator": "default",
                    "authentication_type": "none",
                    "_links": link(format!(
                        "/api/protocols/san/iscsi/credentials/{}/default",
                        s.uuid
                    )),
                })
            })
            .collect()
    }
}

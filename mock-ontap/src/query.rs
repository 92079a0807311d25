//! ONTAP's query language on collections: field filters with `*`, `|` and `!`, `fields=`
//! projection and `max_records` paging with a `start.<key>` cursor in `_links.next`.
//!
//! Records are filtered and projected as JSON in their full (`fields=**`) shape, so every
//! resource gets the same semantics without per-field code.

use serde_json::{Map, Value, json};

use crate::error::{ApiError, ApiResult, codes};
use crate::schema::Schema;

/// Parameters that steer the request rather than filter records.
const CONTROL_PARAMS: &[&str] = &[
    "fields",
    "max_records",
    "return_records",
    "return_timeout",
    "order_by",
    "ignore_unknown_fields",
];

/// `ignore_unknown_fields=true|false`: NetApp's own clients send it (Trident to ONTAP 9.16.1
/// and later for fields older releases lack, Harvest to 9.11.1 and later), though ONTAP's API
/// reference lists it for no endpoint. With it true an unknown `fields=` name is dropped
/// instead of refused, which is what lets one query serve several ONTAP releases.
fn ignores_unknown_fields(pairs: &[(String, String)]) -> ApiResult<bool> {
    let mut ignore = false;
    for (_, value) in pairs.iter().filter(|(k, _)| k == "ignore_unknown_fields") {
        ignore = match value.as_str() {
            "true" => true,
            "false" => false,
            other => return Err(ApiError::invalid_value("ignore_unknown_fields", other)),
        };
    }
    Ok(ignore)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fields {
    /// Only the key fields of each record.
    Default,
    /// `fields=*` or `fields=**`.
    All,
    /// Key fields plus these dotted paths.
    Some(Vec<String>),
}

#[derive(Debug, Clone)]
pub struct Filter {
    pub path: String,
    pub pattern: String,
}

#[derive(Debug, Clone)]
pub struct ListQuery {
    pub filters: Vec<Filter>,
    pub fields: Fields,
    pub max_records: Option<usize>,
    pub return_records: bool,
    start: Vec<(String, String)>,
    /// Everything except the cursor, to rebuild `_links.next`.
    passthrough: Vec<(String, String)>,
    raw: Vec<(String, String)>,
}

impl ListQuery {
    /// No filters, no paging, every field: all records as they are.
    pub fn everything() -> Self {
        ListQuery {
            filters: Vec::new(),
            fields: Fields::All,
            max_records: None,
            return_records: false,
            start: Vec::new(),
            passthrough: Vec::new(),
            raw: Vec::new(),
        }
    }

    /// Parses a collection query, refusing what `schema` does not know as ONTAP does: an unknown
    /// `fields=` name with 262197, an unknown parameter with 262179.
    pub fn parse(pairs: Vec<(String, String)>, schema: &Schema) -> ApiResult<Self> {
        Self::parse_with(pairs, schema, &[])
    }

    /// As [`ListQuery::parse`], also taking the parameters in `extra` that one collection
    /// documents besides the common ones (`list_destinations_only` on SnapMirror
    /// relationships); the caller reads their values.
    pub fn parse_with(
        pairs: Vec<(String, String)>,
        schema: &Schema,
        extra: &[&str],
    ) -> ApiResult<Self> {
        let lenient = ignores_unknown_fields(&pairs)?;
        let mut query = ListQuery {
            filters: Vec::new(),
            fields: Fields::Default,
            max_records: None,
            return_records: false,
            start: Vec::new(),
            passthrough: Vec::new(),
            raw: pairs.clone(),
        };
        for (key, value) in pairs {
            if let Some(cursor_key) = key.strip_prefix("start.") {
                query.start.push((cursor_key.to_owned(), value));
                continue;
            }
            match key.as_str() {
                "fields" => query.fields = parse_fields(&value, schema, lenient)?,
                "max_records" => {
                    let n: usize = value
                        .parse()
                        .map_err(|_| ApiError::invalid_value("max_records", &value))?;
                    query.max_records = Some(n);
                }
                "return_records" => query.return_records = value == "true",
                k if CONTROL_PARAMS.contains(&k) || extra.contains(&k) => {}
                k if !schema.knows(k) => return Err(ApiError::unexpected_argument(k)),
                _ => query.filters.push(Filter {
                    path: key.clone(),
                    pattern: value.clone(),
                }),
            }
            query.passthrough.push((key, value));
        }
        Ok(query)
    }

    /// The value of a filter on `path` when it can only match one exact string, which lets a
    /// handler use an index instead of scanning every record.
    pub fn exact(&self, path: &str) -> Option<&str> {
        let mut found = None;
        for f in self.filters.iter().filter(|f| f.path == path) {
            if f.pattern.contains(['*', '|', '!', '<', '>']) || found.is_some() {
                return None;
            }
            found = Some(f.pattern.as_str());
        }
        found
    }

    /// The `start.<key>` value of a paging cursor, if the query carries one.
    pub fn cursor(&self, key: &str) -> Option<&str> {
        self.start
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub fn matches(&self, record: &Value) -> bool {
        self.filters.iter().all(|f| filter_matches(record, f))
    }

    /// Answers `GET` on a collection. `records` must come sorted by `keys` (the cursor fields)
    /// and already restricted to what the caller may see.
    pub fn collection<I>(
        &self,
        base: &str,
        keys: &[&str],
        default_fields: &[&str],
        records: I,
    ) -> Value
    where
        I: IntoIterator<Item = Value>,
    {
        let cursor: Option<Vec<&str>> = if self.start.is_empty() {
            None
        } else {
            Some(
                keys.iter()
                    .map(|k| {
                        self.start
                            .iter()
                            .find(|(ck, _)| ck == k)
                            .map_or("", |(_, v)| v.as_str())
                    })
                    .collect(),
            )
        };
        let limit = self.max_records.unwrap_or(usize::MAX);
        let mut page = Vec::new();
        let mut next_key = None;
        for record in records {
            if let Some(cursor) = &cursor {
                let key = key_of(&record, keys);
                if key.iter().map(String::as_str).lt(cursor.iter().copied()) {
                    continue;
                }
            }
            if !self.matches(&record) {
                continue;
            }
            if page.len() == limit {
                next_key = Some(key_of(&record, keys));
                break;
            }
            page.push(project(&record, &self.fields, default_fields));
        }
        let mut links = json!({ "self": { "href": href(base, &self.raw) } });
        if let (Some(next_key), Some(obj)) = (next_key, links.as_object_mut()) {
            let mut params = self.passthrough.clone();
            params.extend(
                keys.iter()
                    .zip(next_key)
                    .map(|(k, v)| (format!("start.{k}"), v)),
            );
            obj.insert("next".into(), json!({ "href": href(base, &params) }));
        }
        json!({ "records": page, "num_records": page.len(), "_links": links })
    }
}

/// Checks a by-key GET's query as ONTAP does: `fields=` names `schema` knows and no other
/// parameter than the control ones.
pub fn check_single(pairs: &[(String, String)], schema: &Schema) -> ApiResult<()> {
    let lenient = ignores_unknown_fields(pairs)?;
    for (key, value) in pairs {
        match key.as_str() {
            "fields" => {
                parse_fields(value, schema, lenient)?;
            }
            k if CONTROL_PARAMS.contains(&k) => {}
            k => return Err(ApiError::unexpected_argument(k)),
        }
    }
    Ok(())
}

/// A single record's `fields=` handling: by-key GETs default to every field. The query must
/// have passed [`check_single`].
pub fn project_single(
    pairs: &[(String, String)],
    record: &Value,
    default_fields: &[&str],
) -> Value {
    let fields = pairs
        .iter()
        .rev()
        .find(|(k, _)| k == "fields")
        .map(|(_, v)| parse_fields_unchecked(v));
    match fields {
        Some(fields) => project(record, &fields, default_fields),
        None => record.clone(),
    }
}

pub fn href(base: &str, params: &[(String, String)]) -> String {
    if params.is_empty() {
        return base.to_owned();
    }
    let query = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(params)
        .finish();
    format!("{base}?{query}")
}

/// `fields=a,b.c`, each name known to `schema` (else 262197, as ONTAP answers), or with
/// `lenient` (`ignore_unknown_fields=true`) the known ones only.
fn parse_fields(value: &str, schema: &Schema, lenient: bool) -> ApiResult<Fields> {
    let mut fields = parse_fields_unchecked(value);
    if lenient && let Fields::Some(list) = &mut fields {
        list.retain(|f| schema.knows(f));
    }
    if let Fields::Some(list) = &fields
        && let Some(unknown) = list.iter().find(|f| !schema.knows(f))
    {
        return Err(ApiError::bad_request(
            codes::INVALID_FIELD_VALUE,
            format!("The value \"{unknown}\" is invalid for field \"fields\" (<field,...>)."),
        )
        .with_target("fields"));
    }
    Ok(fields)
}

fn parse_fields_unchecked(value: &str) -> Fields {
    let list: Vec<String> = value
        .split(',')
        .map(str::trim)
        .filter(|f| !f.is_empty())
        .map(str::to_owned)
        .collect();
    if list.iter().any(|f| f == "*" || f == "**") {
        Fields::All
    } else {
        Fields::Some(list)
    }
}

fn key_of(record: &Value, keys: &[&str]) -> Vec<String> {
    keys.iter()
        .map(|k| {
            let mut values = Vec::new();
            values_at(record, &split(k), &mut values);
            values.first().map(|v| scalar_text(v)).unwrap_or_default()
        })
        .collect()
}

pub fn project(record: &Value, fields: &Fields, default_fields: &[&str]) -> Value {
    let requested: Vec<&str> = match fields {
        Fields::All => return record.clone(),
        Fields::Default => default_fields.to_vec(),
        Fields::Some(extra) => default_fields
            .iter()
            .copied()
            .chain(extra.iter().map(String::as_str))
            .collect(),
    };
    let mut out = Value::Object(Map::new());
    for path in requested.into_iter().chain(["_links"]) {
        copy_path(record, &mut out, &split(path));
    }
    out
}

fn split(path: &str) -> Vec<&str> {
    path.split('.').collect()
}

fn copy_path(src: &Value, dst: &mut Value, path: &[&str]) {
    let Some((head, rest)) = path.split_first() else {
        return;
    };
    let (Some(src_obj), Some(dst_obj)) = (src.as_object(), dst.as_object_mut()) else {
        return;
    };
    let Some(child) = src_obj.get(*head) else {
        return;
    };
    if rest.is_empty() {
        dst_obj.insert((*head).to_owned(), child.clone());
        return;
    }
    match child {
        Value::Object(_) => {
            let slot = dst_obj
                .entry((*head).to_owned())
                .or_insert_with(|| Value::Object(Map::new()));
            copy_path(child, slot, rest);
        }
        Value::Array(items) => {
            let slot = dst_obj.entry((*head).to_owned()).or_insert_with(|| {
                Value::Array(items.iter().map(|_| Value::Object(Map::new())).collect())
            });
            if let Some(slots) = slot.as_array_mut() {
                for (item, slot) in items.iter().zip(slots.iter_mut()) {
                    copy_path(item, slot, rest);
                }
            }
        }
        _ => {}
    }
}

/// Every value at `path`, descending into arrays, so `aggregates.name=x` matches any element.
fn values_at<'a>(value: &'a Value, path: &[&str], out: &mut Vec<&'a Value>) {
    match value {
        Value::Array(items) => items.iter().for_each(|item| values_at(item, path, out)),
        _ => match path.split_first() {
            None => out.push(value),
            Some((head, rest)) => {
                if let Some(child) = value.get(*head) {
                    values_at(child, rest, out);
                }
            }
        },
    }
}

fn scalar_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn filter_matches(record: &Value, filter: &Filter) -> bool {
    let mut values = Vec::new();
    values_at(record, &split(&filter.path), &mut values);
    let texts: Vec<String> = values.into_iter().map(scalar_text).collect();
    filter
        .pattern
        .split('|')
        .any(|alternative| match alternative.strip_prefix('!') {
            Some(negated) => !texts.iter().any(|t| glob(negated, t)),
            None => texts.iter().any(|t| glob(alternative, t)),
        })
}

/// `*` matches any run of characters; everything else literally.
pub fn glob(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let [first, middle @ .., last] = parts.as_slice() else {
        return pattern == text;
    };
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    for part in middle {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn q(s: &str) -> ListQuery {
        let pairs = form_urlencoded::parse(s.as_bytes()).into_owned().collect();
        let schema = crate::schema::Schema {
            path: "/api/x",
            modelled: &["uuid", "name", "aggregates.name", "nfs.enabled"],
            absent: &[],
            ontap: &["missing"],
        };
        ListQuery::parse(pairs, &schema).unwrap()
    }

    #[test]
    fn ignore_unknown_fields_drops_unknown_names() {
        let schema = crate::schema::Schema {
            path: "/api/x",
            modelled: &["uuid", "name"],
            absent: &[],
            ontap: &[],
        };
        let pairs = |s: &str| form_urlencoded::parse(s.as_bytes()).into_owned().collect();
        let refused = ListQuery::parse(pairs("fields=name,bogus"), &schema).unwrap_err();
        assert_eq!(refused.code, codes::INVALID_FIELD_VALUE);
        let q = ListQuery::parse(
            pairs("fields=name,bogus&ignore_unknown_fields=true"),
            &schema,
        )
        .unwrap();
        assert_eq!(q.fields, Fields::Some(vec!["name".into()]));
        assert!(check_single(&pairs("ignore_unknown_fields=true&fields=bogus"), &schema).is_ok());
        assert!(check_single(&pairs("ignore_unknown_fields=maybe"), &schema).is_err());
    }

    #[test]
    fn glob_semantics() {
        assert!(glob("svm*", "svm1"));
        assert!(glob("*1", "svm1"));
        assert!(glob("s*m*1", "svm1"));
        assert!(glob("*", ""));
        assert!(!glob("svm", "svm1"));
        assert!(!glob("a*a", "a"));
    }

    #[test]
    fn filters_alternatives_negation_and_arrays() {
        let rec = json!({"name":"svm1","aggregates":[{"name":"a1"},{"name":"a2"}],"nfs":{"enabled":true}});
        assert!(q("name=svm1|svm2").matches(&rec));
        assert!(!q("name=!svm1").matches(&rec));
        assert!(q("aggregates.name=a2").matches(&rec));
        assert!(q("nfs.enabled=true").matches(&rec));
        assert!(!q("missing.field=x").matches(&rec));
        assert_eq!(q("name=svm1").exact("name"), Some("svm1"));
        assert_eq!(q("name=svm*").exact("name"), None);
    }

    #[test]
    fn projection_keeps_keys_links_and_nested_paths() {
        let rec = json!({"uuid":"u","name":"n","state":"running","ipspace":{"name":"Default","uuid":"i"},
            "aggregates":[{"name":"a","uuid":"x"}],"_links":{"self":{"href":"/x"}}});
        let out = project(
            &rec,
            &Fields::Some(vec!["ipspace.name".into(), "aggregates.name".into()]),
            &["uuid", "name"],
        );
        assert_eq!(
            out,
            json!({"uuid":"u","name":"n","ipspace":{"name":"Default"},
            "aggregates":[{"name":"a"}],"_links":{"self":{"href":"/x"}}})
        );
    }

    #[test]
    fn paging_follows_the_cursor() {
        let records: Vec<Value> = (0..5)
            .map(|i| json!({"uuid": format!("u{i}"), "name": format!("n{i}")}))
            .collect();
        let first =
            q("max_records=2").collection("/api/x", &["uuid"], &["uuid", "name"], records.clone());
        assert_eq!(first["num_records"], 2);
        let next = first["_links"]["next"]["href"].as_str().unwrap();
        assert_eq!(next, "/api/x?max_records=2&start.uuid=u2");
        let second = q(next.split_once('?').unwrap().1).collection(
            "/api/x",
            &["uuid"],
            &["uuid", "name"],
            records,
        );
        assert_eq!(second["records"][0]["uuid"], "u2");
    }
}

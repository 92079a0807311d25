//! Read-only cluster inventory. SVM-scoped accounts may read `/api/cluster` (clients use it as
//! a cheap credentials probe and to read the version) but not the node or port inventory.

use axum::{
    Extension, Json,
    extract::{Path, Query, State},
};
use serde_json::Value;

use super::{Pairs, require_admin};
use crate::{
    error::{ApiError, ApiResult},
    model::Principal,
    query::{ListQuery, check_single, project_single},
    schema,
    state::MockState,
};

pub async fn cluster(
    State(state): State<MockState>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    check_single(&query, &schema::CLUSTER)?;
    let (model, _) = state.model();
    Ok(Json(project_single(
        &query,
        &model.cluster.to_json(),
        &["name", "uuid"],
    )))
}

pub async fn nodes(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    require_admin(&who)?;
    let q = ListQuery::parse(query, &schema::NODES)?;
    let (model, _) = state.model();
    let cluster = &model.cluster;
    let mut records: Vec<Value> = cluster.nodes.iter().map(|n| n.to_json(cluster)).collect();
    sort_by_uuid(&mut records);
    Ok(Json(q.collection(
        "/api/cluster/nodes",
        &["uuid"],
        &["uuid", "name"],
        records,
    )))
}

pub async fn node(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path(uuid): Path<String>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    require_admin(&who)?;
    check_single(&query, &schema::NODES)?;
    let (model, _) = state.model();
    let cluster = &model.cluster;
    let node = cluster
        .node_by(Some(&uuid), None)
        .ok_or_else(|| ApiError::not_found("uuid"))?;
    Ok(Json(project_single(
        &query,
        &node.to_json(cluster),
        &["uuid", "name"],
    )))
}

pub async fn aggregates(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    require_admin(&who)?;
    let q = ListQuery::parse(query, &schema::AGGREGATES)?;
    let (model, _) = state.model();
    let mut records: Vec<Value> = model
        .cluster
        .aggregates
        .iter()
        .map(|a| with_usage(a.to_json(), model.aggregate_usage(&a.uuid)))
        .collect();
    sort_by_uuid(&mut records);
    Ok(Json(q.collection(
        "/api/storage/aggregates",
        &["uuid"],
        &["uuid", "name"],
        records,
    )))
}

pub async fn aggregate(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path(uuid): Path<String>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    require_admin(&who)?;
    check_single(&query, &schema::AGGREGATES)?;
    let (model, _) = state.model();
    let aggregate = model
        .cluster
        .aggregate_by(Some(&uuid), None)
        .ok_or_else(|| ApiError::not_found("uuid"))?;
    let record = with_usage(aggregate.to_json(), model.aggregate_usage(&aggregate.uuid));
    Ok(Json(project_single(&query, &record, &["uuid", "name"])))
}

fn sort_by_uuid(records: &mut [Value]) {
    records.sort_by(|a, b| a["uuid"].as_str().cmp(&b["uuid"].as_str()));
}

/// An aggregate's volume count and the space its volumes take: a volume with guarantee
/// `volume` reserves its size, a thin one (`none`) nothing until written, and nothing is.
fn with_usage(mut record: Value, (count, used): (u64, u64)) -> Value {
    let size = record["space"]["block_storage"]["size"]
        .as_u64()
        .unwrap_or_default();
    record["volume-count"] = count.into();
    record["space"]["block_storage"]["used"] = used.into();
    record["space"]["block_storage"]["available"] = size.saturating_sub(used).into();
    record
}

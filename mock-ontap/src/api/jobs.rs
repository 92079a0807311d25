use axum::{
    Json,
    extract::{Path, Query, State},
};
use serde_json::Value;

use super::Pairs;
use crate::{
    error::ApiResult,
    model::Row,
    query::{ListQuery, check_single, project_single},
    schema,
    state::MockState,
};

const KEYS: &[&str] = &["uuid"];

pub async fn list(
    State(state): State<MockState>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    let q = ListQuery::parse(query, &schema::JOBS)?;
    let rows = {
        let (model, now) = state.model();
        model.job_rows(&q, now)
    };
    Ok(Json(q.collection(
        "/api/cluster/jobs",
        KEYS,
        KEYS,
        rows.iter().map(Row::to_json),
    )))
}

pub async fn get(
    State(state): State<MockState>,
    Path(uuid): Path<String>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    check_single(&query, &schema::JOBS)?;
    let (model, now) = state.model();
    let job = model.job_json(&uuid, now)?;
    Ok(Json(project_single(&query, &job, KEYS)))
}

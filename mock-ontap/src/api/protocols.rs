//! The protocol services of SVMs: NFS, iSCSI, NVMe. Synchronous, as ONTAP documents them
//! (`POST` 201, `PATCH` and `DELETE` 200). Creating and deleting a service is for the cluster
//! admin; an SVM account reads and switches its own SVM's services.

use axum::{
    Extension, Json, Router,
    body::Bytes,
    extract::{Path, Query, State},
    response::Response,
    routing::get,
};
use serde_json::Value;

use super::{Pairs, created, ok_empty, parse_body, require_admin, wants_records};
use crate::{
    error::ApiResult,
    model::{Principal, Protocol, Row, ServiceCreate, ServicePatch},
    query::{ListQuery, check_single, project_single},
    schema::{self, Schema},
    state::MockState,
};

const KEYS: &[&str] = &["svm.uuid"];
const DEFAULT_FIELDS: &[&str] = &["svm.uuid", "svm.name"];

fn schema_of(protocol: Protocol) -> &'static Schema {
    match protocol {
        Protocol::Nfs => &schema::NFS_SERVICES,
        Protocol::Iscsi => &schema::ISCSI_SERVICES,
        Protocol::Nvme => &schema::NVME_SERVICES,
    }
}

/// The collection and instance routes of one protocol.
pub fn routes(protocol: Protocol) -> Router<MockState> {
    let collection = protocol.path();
    let instance = format!("{collection}/{{svm_uuid}}");
    Router::new()
        .route(
            collection,
            get(move |s, w, q| list(protocol, s, w, q))
                .post(move |s, w, q, b| create(protocol, s, w, q, b)),
        )
        .route(
            &instance,
            get(move |s, w, p, q| get_one(protocol, s, w, p, q))
                .patch(move |s, w, p, b| patch(protocol, s, w, p, b))
                .delete(move |s, w, p| delete(protocol, s, w, p)),
        )
}

async fn list(
    protocol: Protocol,
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    let q = ListQuery::parse(query, schema_of(protocol))?;
    let rows = state.model().0.service_rows(protocol, &who, &q);
    Ok(Json(q.collection(
        protocol.path(),
        KEYS,
        DEFAULT_FIELDS,
        rows.iter().map(Row::to_json),
    )))
}

async fn get_one(
    protocol: Protocol,
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path(svm_uuid): Path<String>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    check_single(&query, schema_of(protocol))?;
    let record = state.model().0.service_json(protocol, &who, &svm_uuid)?;
    Ok(Json(project_single(&query, &record, DEFAULT_FIELDS)))
}

async fn create(
    protocol: Protocol,
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Query(query): Query<Pairs>,
    body: Bytes,
) -> ApiResult<Response> {
    require_admin(&who)?;
    let req: ServiceCreate = parse_body(&body, ServiceCreate::FIELDS)?;
    let (svm_uuid, record) = state.model().0.create_service(protocol, req)?;
    Ok(created(
        &format!("{}/{svm_uuid}", protocol.path()),
        wants_records(&query).then_some(record),
    ))
}

async fn patch(
    protocol: Protocol,
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path(svm_uuid): Path<String>,
    body: Bytes,
) -> ApiResult<Response> {
    let req: ServicePatch = parse_body(&body, ServicePatch::FIELDS)?;
    state
        .model()
        .0
        .patch_service(protocol, &who, &svm_uuid, req)?;
    Ok(ok_empty())
}

async fn delete(
    protocol: Protocol,
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path(svm_uuid): Path<String>,
) -> ApiResult<Response> {
    require_admin(&who)?;
    state.model().0.delete_service(protocol, &who, &svm_uuid)?;
    Ok(ok_empty())
}

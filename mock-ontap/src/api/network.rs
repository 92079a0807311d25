//! Network placement: ethernet ports (VLAN ports created and deleted), broadcast domains and
//! SVM routes, synchronous in ONTAP (POST 201, DELETE 200). Ports and broadcast domains are
//! cluster inventory, for the cluster admin only; an SVM's accounts read their SVM's routes.

use axum::{
    Extension, Json, Router,
    body::Bytes,
    extract::{Path, Query, State},
    response::Response,
    routing::get,
};
use serde_json::{Value, json};

use super::{Pairs, created, ok_empty, parse_body, require_admin, wants_records};
use crate::{
    error::ApiResult,
    model::{DomainCreate, PortCreate, Principal, RouteCreate},
    query::{ListQuery, check_single, project_single},
    schema,
    state::MockState,
};

const PORTS: &str = "/api/network/ethernet/ports";
const DOMAINS: &str = "/api/network/ethernet/broadcast-domains";
const ROUTES: &str = "/api/network/ip/routes";
const PORT_DEFAULT_FIELDS: &[&str] = &["uuid", "name", "node.name"];
const DEFAULT_FIELDS: &[&str] = &["uuid", "name"];
const ROUTE_DEFAULT_FIELDS: &[&str] = &["uuid"];

pub fn routes() -> Router<MockState> {
    Router::new()
        .route(PORTS, get(ports).post(create_port))
        .route(&format!("{PORTS}/{{uuid}}"), get(port).delete(delete_port))
        .route(DOMAINS, get(domains).post(create_domain))
        .route(
            &format!("{DOMAINS}/{{uuid}}"),
            get(domain).delete(delete_domain),
        )
        .route(ROUTES, get(ip_routes).post(create_route))
        .route(
            &format!("{ROUTES}/{{uuid}}"),
            get(ip_route).delete(delete_route),
        )
}

async fn ports(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    require_admin(&who)?;
    let q = ListQuery::parse(query, &schema::PORTS)?;
    let records = state.model().0.port_records();
    Ok(Json(q.collection(
        PORTS,
        &["uuid"],
        PORT_DEFAULT_FIELDS,
        records,
    )))
}

async fn port(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path(uuid): Path<String>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    require_admin(&who)?;
    check_single(&query, &schema::PORTS)?;
    let record = state.model().0.port_record(&uuid)?;
    Ok(Json(project_single(&query, &record, PORT_DEFAULT_FIELDS)))
}

async fn create_port(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Query(query): Query<Pairs>,
    body: Bytes,
) -> ApiResult<Response> {
    require_admin(&who)?;
    let req: PortCreate = parse_body(&body, PortCreate::FIELDS)?;
    let (uuid, name) = state.model().0.create_vlan(req)?;
    let record = wants_records(&query).then(|| json!({ "uuid": uuid, "name": name }));
    Ok(created(&format!("{PORTS}/{uuid}"), record))
}

async fn delete_port(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path(uuid): Path<String>,
) -> ApiResult<Response> {
    require_admin(&who)?;
    state.model().0.delete_port(&uuid)?;
    Ok(ok_empty())
}

async fn domains(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    require_admin(&who)?;
    let q = ListQuery::parse(query, &schema::BROADCAST_DOMAINS)?;
    let records = state.model().0.broadcast_domain_records(&q);
    Ok(Json(q.collection(
        DOMAINS,
        &["uuid"],
        DEFAULT_FIELDS,
        records,
    )))
}

async fn domain(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path(uuid): Path<String>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    require_admin(&who)?;
    check_single(&query, &schema::BROADCAST_DOMAINS)?;
    let record = state.model().0.broadcast_domain_record(&uuid)?;
    Ok(Json(project_single(&query, &record, DEFAULT_FIELDS)))
}

async fn create_domain(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Query(query): Query<Pairs>,
    body: Bytes,
) -> ApiResult<Response> {
    require_admin(&who)?;
    let req: DomainCreate = parse_body(&body, DomainCreate::FIELDS)?;
    let (uuid, name) = state.model().0.create_broadcast_domain(req)?;
    let record = wants_records(&query).then(|| json!({ "uuid": uuid, "name": name }));
    Ok(created(&format!("{DOMAINS}/{uuid}"), record))
}

async fn delete_domain(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path(uuid): Path<String>,
) -> ApiResult<Response> {
    require_admin(&who)?;
    state.model().0.delete_broadcast_domain(&uuid)?;
    Ok(ok_empty())
}

async fn ip_routes(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    let q = ListQuery::parse(query, &schema::ROUTES)?;
    let records = state.model().0.route_records(&who, &q);
    Ok(Json(q.collection(
        ROUTES,
        &["uuid"],
        ROUTE_DEFAULT_FIELDS,
        records,
    )))
}

async fn ip_route(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path(uuid): Path<String>,
    Query(query): Query<Pairs>,
) -> ApiResult<Json<Value>> {
    check_single(&query, &schema::ROUTES)?;
    let record = state.model().0.route_record(&who, &uuid)?;
    Ok(Json(project_single(&query, &record, ROUTE_DEFAULT_FIELDS)))
}

async fn create_route(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Query(query): Query<Pairs>,
    body: Bytes,
) -> ApiResult<Response> {
    require_admin(&who)?;
    let req: RouteCreate = parse_body(&body, RouteCreate::FIELDS)?;
    let uuid = state.model().0.create_route(req)?;
    let record = wants_records(&query).then(|| json!({ "uuid": uuid }));
    Ok(created(&format!("{ROUTES}/{uuid}"), record))
}

async fn delete_route(
    State(state): State<MockState>,
    Extension(who): Extension<Principal>,
    Path(uuid): Path<String>,
) -> ApiResult<Response> {
    require_admin(&who)?;
    state.model().0.delete_route(&uuid)?;
    Ok(ok_empty())
}

//! Step `RoutesReady`: the SVM's static routes brought to the spec's route plan
//! ([`super::plan`]), for an object that lists routes.

use super::errors::{Failed, Invalid, ontap_error};
use super::lifs::owner_changes;
use super::plan::{desired_routes, plan_routes};
use super::steady::routes_confirmed;
use crate::api::StorageVirtualMachine;
use crate::ontap::inventory::Snapshot;
use ontap_client::{ErrorClass, OntapClient, Svm, codes};
use reconcile_engine::{Outcome, StepError, StepFlow};

/// Step `RoutesReady`: the SVM has exactly the spec's routes. A steady object's `snapshot` may
/// confirm them without a lookup; otherwise they are looked up.
pub(super) async fn ensure_routes(
    svm: &StorageVirtualMachine,
    ontap_svm: &Svm,
    snapshot: Option<&Snapshot>,
    client: &OntapClient,
) -> StepFlow<Outcome> {
    let Some(desired) = desired_routes(svm).map_err(|e| Invalid::Routes.error(e.to_string()))?
    else {
        return Ok(Outcome::unchanged());
    };
    if snapshot.is_some_and(|s| routes_confirmed(svm, &ontap_svm.uuid, s)) {
        return Ok(Outcome::unchanged());
    }
    let actual = client
        .routes(&ontap_svm.uuid)
        .await
        .map_err(|e| ontap_error(Failed::RouteLookup, e))?;
    let plan = plan_routes(&desired, &actual);
    if plan.is_empty() {
        return Ok(Outcome::unchanged());
    }
    // Another's routes are its data path: only the SVM's marked owner changes them.
    owner_changes(svm, ontap_svm, "routes")?;
    for route in &plan.create {
        // An ambiguous failure is settled by the next pass, which reads the routes again; a
        // route that exists meanwhile is the one wanted.
        match client
            .create_route(&route.create_request(&ontap_svm.uuid))
            .await
        {
            Ok(_) => {}
            Err(e) if e.ontap_code() == Some(codes::DUPLICATE_ROUTE) => {}
            // ONTAP refusing the route itself (a gateway no LIF's subnet reaches): the
            // condition names the route.
            Err(e) if e.class() == ErrorClass::Invalid => {
                return Err(StepError::rejected(
                    Failed::RouteCreate.as_str(),
                    format!("{} ({route}): {e}", route.field),
                )
                .into());
            }
            Err(e) => return Err(ontap_error(Failed::RouteCreate, e).into()),
        }
    }
    for uuid in &plan.delete {
        client
            .delete_route(uuid)
            .await
            .map_err(|e| ontap_error(Failed::RouteDelete, e))?;
    }
    Ok(Outcome::changed())
}

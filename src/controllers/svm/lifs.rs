//! Step `LIFsReady`: the SVM's interfaces brought to the spec's LIF plan.

use super::errors::{Failed, ontap_error};
use super::{DesiredLif, desired_lifs, plan_lifs};
use crate::api::StorageVirtualMachine;
use crate::engine::{Outcome, StepError};
use crate::ontap::{OntapClient, OntapError, Svm, codes};

/// Step `LIFsReady`: the management and data LIFs exist with the spec's addresses.
pub(super) async fn ensure_lifs(
    svm: &StorageVirtualMachine,
    ontap_svm: &Svm,
    client: &OntapClient,
) -> Result<Outcome, StepError> {
    let desired =
        desired_lifs(svm).map_err(|e| StepError::invalid("InvalidLIFs", e.to_string()))?;
    let actual = client
        .interfaces(&ontap_svm.uuid)
        .await
        .map_err(|e| ontap_error(Failed::LifLookup, e))?;
    let plan = plan_lifs(&desired, &actual);
    if plan.is_empty() {
        return Ok(Outcome::unchanged());
    }
    for removal in &plan.delete {
        client
            .delete_interface(&removal.uuid)
            .await
            .map_err(|e| ontap_error(Failed::LifDelete, e))?;
    }
    for (name, lif) in &plan.create {
        // An ambiguous failure is settled by the next pass, which lists the interfaces again.
        match client
            .create_interface(&lif.create_request(name, &ontap_svm.uuid))
            .await
        {
            Ok(_) => {}
            Err(e) if e.ontap_code() == Some(codes::DUPLICATE_IP) => {
                return Err(address_in_use(client, lif, ontap_svm, e).await);
            }
            Err(e) => return Err(ontap_error(Failed::LifCreate, e)),
        }
    }
    Ok(Outcome::changed())
}

/// A LIF address another interface holds: a conflict that lasts until someone frees it, so it
/// backs off and names the holder.
async fn address_in_use(
    client: &OntapClient,
    lif: &DesiredLif,
    ontap_svm: &Svm,
    error: OntapError,
) -> StepError {
    let holders = match client.interfaces_by_address(&lif.address.to_string()).await {
        Ok(holders) => holders
            .iter()
            .filter(|i| i.svm.as_ref().and_then(|s| s.uuid.as_deref()) != Some(&ontap_svm.uuid))
            .map(|i| {
                format!(
                    "interface {} of SVM {}",
                    i.name,
                    i.svm
                        .as_ref()
                        .and_then(|s| s.name.as_deref())
                        .unwrap_or("unknown")
                )
            })
            .collect::<Vec<_>>()
            .join(", "),
        Err(_) => String::new(),
    };
    let holder = if holders.is_empty() {
        "another interface".to_string()
    } else {
        holders
    };
    StepError::conflict(
        "AddressInUse",
        format!(
            "the address {} is held by {holder} in ONTAP; free it there or choose another address ({error})",
            lif.address
        ),
    )
}

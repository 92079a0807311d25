//! Step `LIFsReady`: the SVM's interfaces brought to the spec's LIF plan ([`super::plan`]).

use super::authority::{Mark, may_manage};
use super::errors::{Conflict, Failed, Invalid, ontap_error};
use super::plan::{DesiredLif, desired_lifs, place_vips, plan_lifs};
use super::steady::lifs_confirmed;
use crate::api::StorageVirtualMachine;
use crate::ontap::inventory::Snapshot;
use ontap_client::{OntapClient, OntapError, Svm, codes};
use reconcile_engine::{Outcome, StepError, StepFlow};

/// Step `LIFsReady`: the management and data LIFs exist with the spec's addresses. A steady
/// object's `snapshot` may confirm them without a lookup; otherwise they are looked up.
pub(super) async fn ensure_lifs(
    svm: &StorageVirtualMachine,
    ontap_svm: &Svm,
    snapshot: Option<&Snapshot>,
    client: &OntapClient,
    allowed_nodes: &[String],
    tenant_domain: Option<&str>,
) -> StepFlow<Outcome> {
    if snapshot.is_some_and(|s| lifs_confirmed(svm, &ontap_svm.uuid, s)) {
        return Ok(Outcome::unchanged());
    }
    let mut desired = desired_lifs(svm).map_err(|e| Invalid::Lifs.error(e.to_string()))?;
    // A tenant's LIF that names no place of its own is created on its tenant network (a VIP
    // LIF is on no port). Never compared: ONTAP does not report a LIF's broadcast domain.
    if let Some(domain) = tenant_domain {
        desired
            .iter_mut()
            .filter(|l| !l.vip && l.home_port.is_none() && l.broadcast_domain.is_none())
            .for_each(|l| l.broadcast_domain = Some(domain.to_owned()));
    }
    let actual = client
        .interfaces(&ontap_svm.uuid)
        .await
        .map_err(|e| ontap_error(Failed::LifLookup, e))?;
    let mut plan = plan_lifs(&desired, &actual);
    if plan.is_empty() {
        return Ok(Outcome::unchanged());
    }
    // Replacing another's LIFs cuts its data path: only the SVM's marked owner changes them.
    owner_changes(svm, ontap_svm, "LIFs")?;
    if plan.create.iter().any(|(_, l)| l.needs_home_node()) {
        let nodes = client
            .nodes()
            .await
            .map_err(|e| ontap_error(Failed::NodeLookup, e))?;
        // Only on the nodes the administrator allows, where it bounds them.
        let names: Vec<String> = nodes
            .into_iter()
            .map(|n| n.name)
            .filter(|n| allowed_nodes.is_empty() || allowed_nodes.contains(n))
            .collect();
        place_vips(&mut plan, &names);
    }
    for removal in &plan.delete {
        client
            .delete_interface(&removal.uuid)
            .await
            .map_err(|e| ontap_error(Failed::LifDelete, e))?;
    }
    for update in &plan.update {
        client
            .patch_interface(&update.uuid, &update.patch())
            .await
            .map_err(|e| placement_refused(&update.lif, e, Failed::LifUpdate))?;
    }
    for (name, lif) in &plan.create {
        let request = lif.create_request(name, &ontap_svm.uuid);
        // An ambiguous failure is settled by the next pass, which lists the interfaces again.
        let created = match &lif.broadcast_domain {
            Some(domain) => {
                client
                    .create_interface_in_broadcast_domain(&request, domain)
                    .await
            }
            None => client.create_interface(&request).await,
        };
        match created {
            Ok(_) => {}
            Err(e) if e.ontap_code() == Some(codes::DUPLICATE_IP) => {
                return Err(address_in_use(client, lif, ontap_svm, e).await.into());
            }
            Err(e) => return Err(placement_refused(lif, e, Failed::LifCreate).into()),
        }
    }
    Ok(Outcome::changed())
}

/// ONTAP's refusal of a name the LIF gives (a port, a broadcast domain, a service policy that
/// does not exist) as a condition naming the spec's field, with ONTAP's own code and message:
/// invalid until the spec or the cluster's network changes. Any other failure as `reason`.
fn placement_refused(lif: &DesiredLif, error: OntapError, reason: Failed) -> StepError {
    let Some(code) = error.ontap_code() else {
        return ontap_error(reason, error);
    };
    let part = match code {
        codes::HOME_PORT_NOT_FOUND => "homePort",
        codes::BROADCAST_DOMAIN_NOT_FOUND | codes::BROADCAST_DOMAIN_UUID_NOT_FOUND => {
            "broadcastDomain"
        }
        codes::HOME_PORT_NOT_IN_DOMAIN | codes::NO_SUITABLE_PORT => {
            if lif.broadcast_domain.is_some() {
                "broadcastDomain"
            } else if lif.home_port.is_some() {
                "homePort"
            } else {
                "homeNode"
            }
        }
        codes::SERVICE_POLICY_NOT_FOUND => "servicePolicy",
        _ => return ontap_error(reason, error),
    };
    Invalid::LifPlacement.error(format!("{}.{part}: refused by ONTAP: {error}", lif.field))
}

/// Whether `svm` is the marked owner of `ontap_svm`, the only object that changes its network
/// (`what`: its LIFs, its routes); otherwise the error saying they are left as they are.
pub(super) fn owner_changes(
    svm: &StorageVirtualMachine,
    ontap_svm: &Svm,
    what: &str,
) -> Result<(), StepError> {
    let uid = svm.metadata.uid.as_deref().unwrap_or_default();
    if may_manage(uid, Mark::read(ontap_svm.comment.as_deref()).as_ref()) {
        return Ok(());
    }
    Err(Invalid::SvmOwnershipChanged.error(format!(
        "the SVM {} is not marked for this StorageVirtualMachine; its {what} are left as they are",
        ontap_svm.name
    )))
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
    Conflict::AddressInUse.error(format!(
        "the address {} is held by {holder} in ONTAP; free it there or choose another address ({error})",
        lif.address
    ))
}

//! Network placement: ethernet ports (VLAN ports), broadcast domains and SVM routes, all
//! synchronous in ONTAP.
//!
//! A resync reads the routes of every SVM in one paged listing
//! ([`OntapClient::route_pages`]) and, where tenant networks are managed, the ports and the
//! broadcast domains in one each ([`OntapClient::port_pages`],
//! [`OntapClient::broadcast_domain_pages`]), so its cost does not grow with the SVMs.

use reqwest::Method;

use crate::answers::{DeleteOutcome, created_name, deleted, same_destination, unique_by_name};
use crate::client::{Body, OntapClient, Pages, Request, RetryMode};
use crate::endpoints;
use crate::error::{OntapError, Result};
use crate::model::{
    BROADCAST_DOMAIN_FIELDS, BroadcastDomain, BroadcastDomainCreate, CreatedKey, EthernetPort,
    ObjectRef, PORT_FIELDS, PortVlan, ROUTE_FIELDS, Route, RouteCreate, VlanCreate,
};
use crate::query::{filter_value, path_value};

impl OntapClient {
    // -----------------------------------------------------------------------------------------
    // Ethernet ports

    /// Every ethernet port of the cluster with its node, type, VLAN and broadcast domain.
    pub async fn ethernet_ports(&self) -> Result<Vec<EthernetPort>> {
        let url = self.url(
            &["api", "network", "ethernet", "ports"],
            &[("fields", PORT_FIELDS)],
        )?;
        self.get_all(endpoints::PORTS, url, None).await
    }

    /// Every ethernet port of the cluster, `max_records` per page, with the fields
    /// [`ethernet_ports`](Self::ethernet_ports) reads: an inventory's read of the ports.
    pub fn port_pages(&self, max_records: u32) -> Result<Pages<EthernetPort>> {
        self.listing(
            endpoints::PORTS,
            &["api", "network", "ethernet", "ports"],
            PORT_FIELDS,
            max_records,
        )
    }

    /// The port of this name on this node, if ONTAP reports one.
    pub async fn ethernet_port(&self, node: &str, name: &str) -> Result<Option<EthernetPort>> {
        let node = filter_value("node name", node)?;
        let name = filter_value("port name", name)?;
        let url = self.url(
            &["api", "network", "ethernet", "ports"],
            &[("node.name", node), ("name", name), ("fields", PORT_FIELDS)],
        )?;
        let records = self.get_all(endpoints::PORTS, url, None).await?;
        unique_by_name(endpoints::PORTS, name, records, |p: &EthernetPort| &p.name)
    }

    /// Creates a VLAN port and returns it as created.
    ///
    /// Not retried; after an ambiguous error look it up with
    /// [`ethernet_port`](Self::ethernet_port) and [`VlanCreate::port_name`]. A VLAN that
    /// exists is a [`Conflict`](crate::ErrorClass::Conflict).
    pub async fn create_vlan(&self, vlan: &VlanCreate) -> Result<EthernetPort> {
        filter_value("node name", &vlan.node)?;
        filter_value("port name", &vlan.base_port)?;
        let name = vlan.port_name();
        let req = Request {
            method: Method::POST,
            endpoint: endpoints::PORTS,
            url: self.url(
                &["api", "network", "ethernet", "ports"],
                &[("return_records", "true")],
            )?,
            body: Some(Body::json(&vlan.body())?),
            auth: None,
            retry: RetryMode::Never,
        };
        if let Some(created) = self.mutate_returning::<CreatedKey>(&req).await? {
            created_name(endpoints::PORTS, &name, &created)?;
            return Ok(EthernetPort {
                uuid: created.uuid,
                name,
                node: Some(ObjectRef::by_name(&vlan.node)),
                port_type: Some("vlan".into()),
                broadcast_domain: vlan.broadcast_domain.as_deref().map(ObjectRef::by_name),
                vlan: Some(PortVlan {
                    tag: vlan.tag,
                    base_port: None,
                }),
                mtu: None,
            });
        }
        self.ethernet_port(&vlan.node, &name).await?.ok_or_else(|| {
            OntapError::Inconsistent(format!(
                "VLAN port {name:?} was created but a lookup by name finds nothing"
            ))
        })
    }

    /// Deletes a VLAN (or LAG) port. ONTAP refuses while an interface is homed on it
    /// ([`Conflict`](crate::ErrorClass::Conflict)) and never deletes a physical port.
    pub async fn delete_port(&self, uuid: &str) -> Result<DeleteOutcome> {
        let uuid = path_value("port uuid", uuid)?;
        let req = Request {
            method: Method::DELETE,
            endpoint: endpoints::PORT,
            url: self.url(&["api", "network", "ethernet", "ports", uuid], &[])?,
            body: None,
            auth: None,
            retry: RetryMode::Idempotent,
        };
        deleted(self.mutate(&req).await)
    }

    // -----------------------------------------------------------------------------------------
    // Broadcast domains

    /// Every broadcast domain of the cluster with its ports.
    pub async fn broadcast_domains(&self) -> Result<Vec<BroadcastDomain>> {
        let url = self.url(
            &["api", "network", "ethernet", "broadcast-domains"],
            &[("fields", BROADCAST_DOMAIN_FIELDS)],
        )?;
        self.get_all(endpoints::BROADCAST_DOMAINS, url, None).await
    }

    /// Every broadcast domain of the cluster, `max_records` per page, with the fields
    /// [`broadcast_domains`](Self::broadcast_domains) reads.
    pub fn broadcast_domain_pages(&self, max_records: u32) -> Result<Pages<BroadcastDomain>> {
        self.listing(
            endpoints::BROADCAST_DOMAINS,
            &["api", "network", "ethernet", "broadcast-domains"],
            BROADCAST_DOMAIN_FIELDS,
            max_records,
        )
    }

    /// The broadcast domain with exactly this name.
    pub async fn broadcast_domain_by_name(&self, name: &str) -> Result<Option<BroadcastDomain>> {
        let name = filter_value("broadcast domain name", name)?;
        let url = self.url(
            &["api", "network", "ethernet", "broadcast-domains"],
            &[("name", name), ("fields", BROADCAST_DOMAIN_FIELDS)],
        )?;
        let records = self
            .get_all(endpoints::BROADCAST_DOMAINS, url, None)
            .await?;
        unique_by_name(
            endpoints::BROADCAST_DOMAINS,
            name,
            records,
            |d: &BroadcastDomain| &d.name,
        )
    }

    /// Creates a broadcast domain (without ports) and returns it.
    ///
    /// Not retried; after an ambiguous error use
    /// [`broadcast_domain_by_name`](Self::broadcast_domain_by_name).
    pub async fn create_broadcast_domain(
        &self,
        domain: &BroadcastDomainCreate,
    ) -> Result<BroadcastDomain> {
        let name = filter_value("broadcast domain name", &domain.name)?;
        let req = Request {
            method: Method::POST,
            endpoint: endpoints::BROADCAST_DOMAINS,
            url: self.url(
                &["api", "network", "ethernet", "broadcast-domains"],
                &[("return_records", "true")],
            )?,
            body: Some(Body::json(domain)?),
            auth: None,
            retry: RetryMode::Never,
        };
        if let Some(created) = self.mutate_returning::<CreatedKey>(&req).await? {
            created_name(endpoints::BROADCAST_DOMAINS, name, &created)?;
            return Ok(BroadcastDomain {
                uuid: created.uuid,
                name: domain.name.clone(),
                mtu: Some(domain.mtu),
                ipspace: domain.ipspace.clone(),
                ports: Vec::new(),
            });
        }
        self.broadcast_domain_by_name(name).await?.ok_or_else(|| {
            OntapError::Inconsistent(format!(
                "broadcast domain {name:?} was created but a lookup by name finds nothing"
            ))
        })
    }

    /// Deletes a broadcast domain; ONTAP refuses one that still has ports
    /// ([`Conflict`](crate::ErrorClass::Conflict)).
    pub async fn delete_broadcast_domain(&self, uuid: &str) -> Result<DeleteOutcome> {
        let uuid = path_value("broadcast domain uuid", uuid)?;
        let req = Request {
            method: Method::DELETE,
            endpoint: endpoints::BROADCAST_DOMAIN,
            url: self.url(
                &["api", "network", "ethernet", "broadcast-domains", uuid],
                &[],
            )?,
            body: None,
            auth: None,
            retry: RetryMode::Idempotent,
        };
        deleted(self.mutate(&req).await)
    }

    // -----------------------------------------------------------------------------------------
    // Routes

    /// The static routes of an SVM.
    pub async fn routes(&self, svm_uuid: &str) -> Result<Vec<Route>> {
        let svm_uuid = filter_value("SVM uuid", svm_uuid)?;
        let url = self.url(
            &["api", "network", "ip", "routes"],
            &[("svm.uuid", svm_uuid), ("fields", ROUTE_FIELDS)],
        )?;
        self.get_all(endpoints::ROUTES, url, None).await
    }

    /// Every route of the cluster, `max_records` per page, with the fields
    /// [`routes`](Self::routes) reads: cluster-scoped ones carry no `svm`.
    pub fn route_pages(&self, max_records: u32) -> Result<Pages<Route>> {
        self.listing(
            endpoints::ROUTES,
            &["api", "network", "ip", "routes"],
            ROUTE_FIELDS,
            max_records,
        )
    }

    /// Creates an SVM route and returns it as created. `route.svm` must carry the SVM's uuid.
    ///
    /// Not retried; after an ambiguous error read [`routes`](Self::routes). A route the SVM
    /// has already is a [`Conflict`](crate::ErrorClass::Conflict).
    pub async fn create_route(&self, route: &RouteCreate) -> Result<Route> {
        let svm_uuid = route
            .svm
            .uuid
            .as_deref()
            .ok_or_else(|| OntapError::InvalidInput("route without SVM uuid".into()))?;
        let req = Request {
            method: Method::POST,
            endpoint: endpoints::ROUTES,
            url: self.url(
                &["api", "network", "ip", "routes"],
                &[("return_records", "true")],
            )?,
            body: Some(Body::json(route)?),
            auth: None,
            retry: RetryMode::Never,
        };
        let Some(created) = self.mutate_returning::<CreatedKey>(&req).await? else {
            // A route has no name to look it up by: find it by what it was created with.
            return self
                .routes(svm_uuid)
                .await?
                .into_iter()
                .find(|r| r.gateway == route.gateway && same_destination(r, route))
                .ok_or_else(|| {
                    OntapError::Inconsistent(format!(
                        "route via {} was created but the SVM's routes do not show it",
                        route.gateway
                    ))
                });
        };
        Ok(Route {
            uuid: created.uuid,
            destination: route.destination.clone(),
            gateway: route.gateway.clone(),
            svm: Some(route.svm.clone()),
            metric: None,
        })
    }

    pub async fn delete_route(&self, uuid: &str) -> Result<DeleteOutcome> {
        let uuid = path_value("route uuid", uuid)?;
        let req = Request {
            method: Method::DELETE,
            endpoint: endpoints::ROUTE,
            url: self.url(&["api", "network", "ip", "routes", uuid], &[])?,
            body: None,
            auth: None,
            retry: RetryMode::Idempotent,
        };
        deleted(self.mutate(&req).await)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::{ErrorClass, classify_code, codes};

    #[test]
    fn network_refusals_that_depend_on_state_are_conflicts() {
        for code in [
            codes::DUPLICATE_ROUTE,
            codes::PORT_HOSTS_INTERFACE,
            codes::PORT_HAS_INTERFACE_BOUND,
            codes::BROADCAST_DOMAIN_HAS_PORTS,
        ] {
            assert_eq!(classify_code(code), Some(ErrorClass::Conflict), "{code}");
        }
    }

    #[test]
    fn a_vlan_is_named_after_its_port_and_tag() {
        let vlan = VlanCreate {
            node: "node-01".into(),
            base_port: "e0c".into(),
            tag: 100,
            broadcast_domain: Some("storage".into()),
        };
        assert_eq!(vlan.port_name(), "e0c-100");
        let body = vlan.body();
        assert_eq!(body["type"], "vlan");
        assert_eq!(body["vlan"]["base_port"]["node"]["name"], "node-01");
        assert_eq!(body["broadcast_domain"]["name"], "storage");
    }
}

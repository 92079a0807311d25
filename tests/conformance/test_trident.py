"""The calls Trident's ONTAP drivers make while a backend initializes, with netapp-ontap's
classes (Trident's REST client: storage_drivers/ontap/api/ontap_rest.go and the drivers'
Initialize): the cluster version, the SVM by name, its aggregates, the SVM's data LIFs by
service (`NetInterfaceGetDataLIFs`: an empty answer fails the backend), SVM peers
(`IsSVMDRCapable`), the iSCSI and NVMe services, node serial numbers and the EMS heartbeat
(`EmsAutosupportLog`). As the cluster admin and as the SVM's vsadmin."""

import pytest
from netapp_ontap.error import NetAppRestError
from netapp_ontap.resources import (
    Account,
    Aggregate,
    Cluster,
    EmsApplicationLog,
    IpInterface,
    IscsiService,
    Node,
    NvmeService,
    Svm,
    SvmPeer,
)

from conftest import ontap_error

PROTOCOLS = {
    "nfs": ("default-data-files", "10.20.0.1"),
    "iscsi": ("default-data-blocks", "10.20.0.2"),
    "nvme_tcp": ("default-data-nvme-tcp", "10.20.0.3"),
}


@pytest.fixture
def backend_svm(mock, admin):
    svm = Svm(name="trident_svm", nfs={"enabled": True}, iscsi={"enabled": True},
              nvme={"enabled": True}, aggregates=[{"name": "aggr1_node01"}])
    svm.post()
    for protocol, (policy, address) in PROTOCOLS.items():
        IpInterface(
            name=f"lif_{protocol}", svm={"name": "trident_svm"},
            ip={"address": address, "netmask": "24"},
            location={"home_node": {"name": "node-01"}},
            service_policy={"name": policy},
        ).post()
    vsadmin = Account(owner={"uuid": svm.uuid}, name="vsadmin")
    vsadmin.password = "Trident123x"
    vsadmin.patch()
    unlock = Account(owner={"uuid": svm.uuid}, name="vsadmin")
    unlock.locked = False
    unlock.patch()
    return svm


def initialize_backend(svm_uuid, cluster_admin, nvme_service=True):
    cluster = Cluster()
    cluster.get(fields="version")
    assert (cluster.version.generation, cluster.version.major) >= (9, 12)

    svms = list(Svm.get_collection(name="trident_svm", fields="uuid,name,state"))
    assert [s.uuid for s in svms] == [svm_uuid]
    svm = Svm(uuid=svm_uuid)
    svm.get(fields="aggregates,state")
    assert [a.name for a in svm.aggregates] == ["aggr1_node01"]

    for service in ("data_nfs", "data_iscsi", "data_nvme_tcp"):
        lifs = list(IpInterface.get_collection(
            services=service, fields="ip.address,state,location.node.name",
            **{"svm.uuid": svm_uuid}))
        assert len(lifs) == 1, f"Trident fails the backend without {service} LIFs"
        assert lifs[0].state == "up"

    peers = list(SvmPeer.get_collection(fields="peer.svm.name", **{"svm.uuid": svm_uuid}))
    assert peers == []

    iscsi = list(IscsiService.get_collection(fields="target.name,enabled", **{"svm.uuid": svm_uuid}))
    assert iscsi[0].enabled is True and iscsi[0].target.name.startswith("iqn.")
    if nvme_service:
        nvme = list(NvmeService.get_collection(fields="enabled", **{"svm.uuid": svm_uuid}))
        assert nvme[0].enabled is True

    if cluster_admin:
        aggregates = list(Aggregate.get_collection(
            fields="name,block_storage.primary.disk_type", name="aggr1_node01"))
        assert len(aggregates) == 1
        assert len(list(Node.get_collection(fields="serial_number"))) == 2
    else:
        with pytest.raises(NetAppRestError) as failure:
            list(Node.get_collection(fields="serial_number"))
        assert ontap_error(failure.value)["status"] == 403

    heartbeat = EmsApplicationLog(
        computer_name="k8s-node-1", event_source="trident", app_version="25.06.0",
        event_id=1, category="heartbeat", event_description='{"version":"25.06.0"}',
        severity="notice", autosupport_required=False,
    )
    assert heartbeat.post().http_response.status_code == 201


def test_backend_initialization_as_cluster_admin(mock, admin, backend_svm):
    initialize_backend(backend_svm.uuid, cluster_admin=True)
    logs = mock.control("GET", "/_mock/state").json()["ems_application_logs"]
    assert logs[-1]["category"] == "heartbeat"


def test_backend_initialization_as_vsadmin(mock, backend_svm):
    with mock.connection("vsadmin", "Trident123x"):
        initialize_backend(backend_svm.uuid, cluster_admin=False)


def test_no_data_lifs_is_an_empty_answer(mock, admin):
    svm = Svm(name="bare")
    svm.post()
    lifs = list(IpInterface.get_collection(services="data_nfs", **{"svm.uuid": svm.uuid}))
    assert lifs == []


def test_an_account_gets_ontapi_for_a_zapi_trident(mock, admin, backend_svm):
    """Below ONTAP 9.12.1 Trident speaks ZAPI, which logs in through the `ontapi` application:
    the operator creates the account with it, or adds it to an account that lacks it (the whole
    list is PATCHed, as ONTAP replaces it)."""
    uuid = backend_svm.uuid
    password = [{"application": "http", "authentication_methods": ["password"]}]
    both = password + [{"application": "ontapi", "authentication_methods": ["password"]}]
    Account(owner={"uuid": uuid}, name="shoot-a", role={"name": "vsadmin"},
            applications=both, password="Trident123x").post()
    Account(owner={"uuid": uuid}, name="shoot-b", role={"name": "vsadmin"},
            applications=password, password="Trident123x").post()
    grant = Account(owner={"uuid": uuid}, name="shoot-b")
    grant.applications = both
    grant.patch()
    for name in ("shoot-a", "shoot-b"):
        account = Account(owner={"uuid": uuid}, name=name)
        account.get(fields="applications")
        assert sorted(a.application for a in account.applications) == ["http", "ontapi"]


def test_cluster_probe_with_ignore_unknown_fields(mock, backend_svm):
    """Trident on ONTAP 9.16.1+ asks for two fields older releases lack, with
    `ignore_unknown_fields=true`, and fails the backend on any error (ontap_rest.go)."""
    with mock.connection("vsadmin", "Trident123x"):
        cluster = Cluster()
        cluster.get(fields="san_optimized,disaggregated", ignore_unknown_fields="true")
        assert cluster.uuid
    answer = mock.raw("GET", "/api/cluster",
                      params={"fields": "version,not_a_field", "ignore_unknown_fields": "true"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["version"]["generation"] == 9
    refused = mock.raw("GET", "/api/cluster", params={"fields": "version,not_a_field"})
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "262197"

"""ONTAP's documented answers to wrong requests, through netapp-ontap.

Generic codes (ONTAP REST API, "generic error codes"): 262179 unexpected argument, 262196 field
cannot be set in this operation, 262197 invalid value. Interface codes: 1967146/1967147 from
the error tables of NetApp's REST reference; the others as mock-ontap/README.md cites them."""

import pytest
from netapp_ontap.error import NetAppRestError
from netapp_ontap.resources import (
    Account,
    Aggregate,
    BgpPeerGroup,
    IpInterface,
    IscsiService,
    NfsService,
    NvmeService,
    Svm,
)

from conftest import ontap_error


def failure(call) -> dict:
    with pytest.raises(NetAppRestError) as caught:
        call()
    return ontap_error(caught.value)


@pytest.fixture
def svm(admin):
    svm = Svm(name="errs")
    svm.post()
    return svm


def test_unknown_fields_name_is_262197(admin):
    error = failure(lambda: list(Svm.get_collection(fields="name,nmae")))
    assert (error["status"], error["code"]) == (400, "262197")


def test_unknown_query_filter_is_262179(admin):
    error = failure(lambda: list(Svm.get_collection(nmae="x")))
    assert (error["status"], error["code"]) == (400, "262179")
    assert error["message"] == 'Unexpected argument "nmae".'


@pytest.mark.parametrize("protocol", ["nfs", "iscsi", "nvme"])
def test_svm_protocol_enabled_cannot_be_patched(mock, svm, protocol):
    answer = mock.raw("PATCH", f"/api/svm/svms/{svm.uuid}", json={protocol: {"enabled": True}})
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "262196"


@pytest.mark.parametrize("cls", [NfsService, IscsiService, NvmeService])
def test_protocol_services(svm, cls):
    assert list(cls.get_collection(**{"svm.uuid": svm.uuid})) == []
    cls(svm={"name": "errs"}).post()
    service = cls(svm={"uuid": svm.uuid})
    service.get()
    assert service.enabled is True
    service.enabled = False
    service.patch()
    svm_now = Svm(uuid=svm.uuid)
    svm_now.get()
    key = {NfsService: "nfs", IscsiService: "iscsi", NvmeService: "nvme"}[cls]
    assert getattr(svm_now, key).enabled is False
    error = failure(lambda: cls(svm={"uuid": svm.uuid}).post())
    assert error["status"] == 409


def lif(**changes):
    body = dict(
        name="e", svm={"name": "errs"}, ip={"address": "10.30.0.1", "netmask": "24"},
        location={"home_node": {"name": "node-01"}, "home_port": {"name": "e0c"}},
    )
    body.update(changes)
    return IpInterface(**body)


def test_interface_codes(svm):
    assert failure(lambda: lif(svm={"name": "nosuch"}).post())["code"] == "1967146"
    assert failure(lambda: lif(svm={"uuid": "00000000-0000-4000-8000-000000000001"}).post())["code"] == "1967147"
    assert failure(lambda: lif(ip={"address": "10.30.0.1", "netmask": "40"}).post())["code"] == "1966269"
    bad_port = {"home_node": {"name": "node-01"}, "home_port": {"name": "e9z"}}
    assert failure(lambda: lif(location=bad_port).post())["code"] == "1967130"


def test_vip_codes(svm):
    vip = dict(vip=True, ip={"address": "203.0.113.9", "netmask": "32"},
               location={"home_node": {"name": "node-01"}})
    assert failure(lambda: lif(**vip).post())["code"] == "1967384", "no BGP sessions"
    BgpPeerGroup(
        name="pg", ipspace={"name": "Default"},
        local={"interface": {"name": "bgp_lif"}, "ip": {"address": "198.51.100.2", "netmask": "24"},
               "port": {"name": "e0d", "node": {"name": "node-01"}}},
        peer={"address": "198.51.100.1", "asn": 65000},
    ).post()
    with_port = dict(vip, location={"home_node": {"name": "node-01"}, "home_port": {"name": "e0c"}})
    assert failure(lambda: lif(**with_port).post())["code"] == "1967383"
    wide = dict(vip, ip={"address": "203.0.113.9", "netmask": "24"})
    assert failure(lambda: lif(**wide).post())["code"] == "1967385"
    lif(**vip).post()


def test_interface_patch(svm):
    interface = lif()
    interface.post()
    change = IpInterface(uuid=interface.uuid)
    change.enabled = False
    change.name = "e2"
    change.service_policy = {"name": "default-data-blocks"}
    change.patch()
    now = IpInterface(uuid=interface.uuid)
    now.get(fields="name,enabled,services")
    assert (now.name, now.enabled, now.services) == ("e2", False, ["data_core", "data_iscsi"])


def test_password_codes(svm):
    Account(name="ops", owner={"uuid": svm.uuid}, role={"name": "vsadmin"},
            applications=[{"application": "http", "authentication_methods": ["password"]}],
            password="First1234x").post()
    same = Account(owner={"uuid": svm.uuid}, name="ops")
    same.password = "First1234x"
    assert failure(same.patch)["code"] == "7077925"
    other = Account(owner={"uuid": svm.uuid}, name="ops")
    other.password = "Second1234x"
    other.patch()
    back = Account(owner={"uuid": svm.uuid}, name="ops")
    back.password = "First1234x"
    assert failure(back.patch)["code"] == "7077924"


def test_volume_count_is_spelled_with_a_hyphen(mock, admin):
    records = mock.raw("GET", "/api/storage/aggregates?fields=volume-count").json()["records"]
    assert all("volume-count" in r for r in records)
    assert all(a.volume_count == 0 for a in Aggregate.get_collection(fields="volume-count"))

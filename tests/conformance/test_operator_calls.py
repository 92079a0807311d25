"""Every call crates/ontap-client makes, made with netapp-ontap's resource classes against the
mock, with the operator's own `fields=` lists. Where the operator's request shape differs from
what ONTAP accepts, the test asserts ONTAP's answer (see the report)."""

import pytest
from netapp_ontap import HostConnection
from netapp_ontap.error import NetAppRestError
from netapp_ontap.utils import watch_job
from netapp_ontap.resources import (
    Account,
    Aggregate,
    BgpPeerGroup,
    Cluster,
    IpInterface,
    Job,
    NfsService,
    Node,
    Svm,
)

import operator_client
from conftest import ontap_error

F = operator_client.constants()


def create_svm(name, **extra):
    svm = Svm(name=name, ipspace={"name": "Default"}, aggregates=[{"name": "aggr1_node01"}], **extra)
    # The library polls the job to its end (the last answer it returns is the job's).
    job = svm.post(return_records=True).http_response.json()
    assert job["state"] == "success", job
    assert svm.uuid
    return svm


def test_cluster_inventory(admin):
    cluster = Cluster()
    cluster.get(fields="name,uuid,version")
    assert cluster.version.generation == 9
    assert len(list(Node.get_collection(fields="uuid,name"))) == 2
    aggregates = list(Aggregate.get_collection(fields="uuid,name,space,volume-count"))
    assert len(aggregates) == 2
    assert aggregates[0].volume_count == 0
    assert aggregates[0].space.block_storage.size > 0
    assert list(BgpPeerGroup.get_collection(fields="uuid,name")) == []


def test_svm_lifecycle(admin):
    svm = create_svm("op1", nfs={"enabled": True}, comment="made by the operator", language="c.utf_8")
    found = list(Svm.get_collection(name="op1", fields=F["SVM_FIELDS"]))
    assert len(found) == 1 and found[0].uuid == svm.uuid
    one = Svm(uuid=svm.uuid)
    one.get(fields=F["SVM_FIELDS"])
    assert one.state == "running"
    assert one.nfs.enabled is True and one.iscsi.enabled is False

    change = Svm(uuid=svm.uuid)
    change.comment = "changed"
    change.state = "stopped"
    assert change.patch().http_response.json()["state"] == "success"
    one.get(fields="state,comment")
    assert (one.state, one.comment) == ("stopped", "changed")

    job_uuid = Svm(uuid=svm.uuid).delete(poll=False).http_response.json()["job"]["uuid"]
    job = Job(uuid=job_uuid)
    job.get(fields="uuid,state,message,code,description,svm")
    assert job.state in ("queued", "running", "success")
    watch_job(f"/api/cluster/jobs/{job_uuid}", interval=0.05)
    assert list(Svm.get_collection(name="op1")) == []


def test_operator_svm_patch_with_protocols_is_refused_as_ontap_does(mock, admin):
    """An SVM PATCH with `nfs|iscsi|nvme.enabled` (what the operator once sent to switch a
    protocol): netapp-ontap never sends that (`SvmNfs.patchable_fields` is `["allowed"]`), and
    ONTAP refuses it with 262196. The operator's client switches the protocol's service."""
    from netapp_ontap.models.svm_nfs import SvmNfsSchema

    assert SvmNfsSchema.patchable_fields == ["allowed"]
    svm = create_svm("op2")
    answer = mock.raw("PATCH", f"/api/svm/svms/{svm.uuid}", json={"nfs": {"enabled": True}})
    error = answer.json()["error"]
    assert (answer.status_code, error["code"], error["target"]) == (400, "262196", "nfs.enabled")
    service = NfsService(svm={"uuid": svm.uuid}, enabled=True)
    service.post()
    probe = Svm(uuid=svm.uuid)
    probe.get(fields="nfs.enabled")
    assert probe.nfs.enabled is True


def test_interfaces(admin):
    svm = create_svm("op3")
    lif = IpInterface(
        name="op3_data",
        enabled=True,
        svm={"uuid": svm.uuid},
        ip={"address": "10.10.0.1", "netmask": "24"},
        location={"home_node": {"name": "node-01"}, "home_port": {"name": "e0c"}},
        service_policy={"name": "default-data-files"},
    )
    assert lif.post(return_records=True).http_response.status_code == 201
    assert lif.uuid
    fields = F["INTERFACE_FIELDS"]
    by_svm = list(IpInterface.get_collection(fields=fields, **{"svm.uuid": svm.uuid}))
    assert [i.name for i in by_svm] == ["op3_data"]
    by_ip = list(IpInterface.get_collection(fields=fields, **{"ip.address": "10.10.0.1"}))
    assert by_ip[0].svm.uuid == svm.uuid
    by_name = list(IpInterface.get_collection(fields=fields, name="op3_data", **{"svm.uuid": svm.uuid}))
    assert by_name[0].location.home_port.name == "e0c"
    IpInterface(uuid=by_name[0].uuid).delete()
    assert list(IpInterface.get_collection(**{"svm.uuid": svm.uuid})) == []


def test_accounts_and_the_vsadmin_takeover(mock, admin):
    svm = create_svm("op4")
    account = Account(
        name="trident",
        owner={"uuid": svm.uuid},
        role={"name": "vsadmin"},
        applications=[{"application": "http", "authentication_methods": ["password"]}],
        password="Initial123x",
        locked=False,
    )
    assert account.post().http_response.status_code == 201
    fields = F["ACCOUNT_FIELDS"]
    found = list(Account.get_collection(fields=fields, name="trident", **{"owner.uuid": svm.uuid}))
    assert found[0].locked is False
    names = {a.name for a in Account.get_collection(fields=fields, **{"owner.uuid": svm.uuid})}
    assert names == {"trident", "vsadmin"}

    rotate = Account(owner={"uuid": svm.uuid}, name="trident")
    rotate.password = "Rotated123x"
    rotate.patch()

    vsadmin = Account(owner={"uuid": svm.uuid}, name="vsadmin")
    vsadmin.get(fields=fields)
    assert "locked" not in vsadmin.to_dict(), "no password: ONTAP omits `locked`"
    # `{password, locked: false}` in one PATCH is refused; ONTAP wants two (the password first).
    both = Account(owner={"uuid": svm.uuid}, name="vsadmin")
    both.password = "Takeover123x"
    both.locked = False
    with pytest.raises(NetAppRestError) as failure:
        both.patch()
    assert ontap_error(failure.value)["target"] == "locked"
    first = Account(owner={"uuid": svm.uuid}, name="vsadmin")
    first.password = "Takeover123x"
    first.patch()
    then = Account(owner={"uuid": svm.uuid}, name="vsadmin")
    then.locked = False
    then.patch()

    with mock.connection("vsadmin", "Takeover123x"):
        own = Account(owner={"uuid": svm.uuid}, name="vsadmin")
        own.get(fields=fields)
        assert own.locked is False
        visible = list(Svm.get_collection(name="op4", fields="uuid,name"))
        assert [s.uuid for s in visible] == [svm.uuid]

    Account(owner={"uuid": svm.uuid}, name="trident").delete()
    with pytest.raises(NetAppRestError) as failure:
        Account(owner={"uuid": svm.uuid}, name="trident").delete()
    assert ontap_error(failure.value)["status"] == 404


def test_wrong_credentials_are_a_401(mock):
    with mock.connection("admin", "wrong"):
        with pytest.raises(NetAppRestError) as failure:
            Cluster().get()
        assert failure.value.status_code == 401

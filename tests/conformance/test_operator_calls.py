"""Every call crates/ontap-client makes, made with netapp-ontap's resource classes against the
mock, with the operator's own `fields=` lists. Where the operator's request shape differs from
what ONTAP accepts, the test asserts ONTAP's answer (see the report)."""

import time

import pytest
from netapp_ontap import HostConnection
from netapp_ontap.error import NetAppRestError
from netapp_ontap.utils import watch_job
from netapp_ontap.resources import (
    Account,
    Aggregate,
    BgpPeerGroup,
    BroadcastDomain,
    Cluster,
    IpInterface,
    Job,
    NetworkRoute,
    NfsService,
    Node,
    Port,
    QosPolicy,
    Role,
    Svm,
    Volume,
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


MIB = 1 << 20


def _job_of(mock, answer, timeout=20):
    """The finished job of a 202 answer, polled with the client's own `fields=`."""
    assert answer.status_code == 202, answer.text
    uuid = answer.json()["job"]["uuid"]
    deadline = time.monotonic() + timeout
    while True:
        job = Job(uuid=uuid)
        job.get(fields=operator_client.job_poll_fields())
        if job.state in ("success", "failure"):
            return job.to_dict()
        assert time.monotonic() < deadline, f"job {uuid} did not end"
        time.sleep(0.02)


def _volume(mock, svm_uuid, name, size):
    return _job_of(mock, mock.raw("POST", "/api/storage/volumes", json={
        "name": name, "svm": {"uuid": svm_uuid}, "size": size,
        "aggregates": [{"name": "aggr1_node01"}]}))


def test_svm_limits_and_the_cluster_wide_usage_listing(mock, admin):
    svm = create_svm("lim1", max_volumes="10")
    change = Svm(uuid=svm.uuid)
    change.max_volumes = "3"
    change.storage = {"limit": "1GB", "limit_threshold_alert": 80}
    assert change.patch().http_response.json()["state"] == "success"
    assert _volume(mock, svm.uuid, "v1", 100 * MIB)["state"] == "success"

    [limits] = list(Svm.get_collection(name="lim1", fields=F["SVM_LIMIT_FIELDS"]))
    assert limits.max_volumes == "3"
    storage = limits.storage
    assert (storage.limit, storage.limit_threshold_alert) == (1 << 30, 80)
    assert (storage.allocated, storage.available) == (100 * MIB, (1 << 30) - 100 * MIB)
    assert (storage.used_percentage, storage.limit_threshold_exceeded) == (9, False)
    one = Svm(uuid=svm.uuid)
    one.get(fields=F["SVM_LIMIT_FIELDS"])
    assert one.storage.allocated == 100 * MIB

    usage = list(Volume.get_collection(fields=F["VOLUME_USAGE_FIELDS"]))
    assert [(v.name, v.svm.uuid, v.size) for v in usage] == [("v1", svm.uuid, 100 * MIB)]

    # Without a limit ONTAP reports no allocation: the volume listing is the operator's count.
    unlimited = create_svm("lim2")
    bare = Svm(uuid=unlimited.uuid)
    bare.get(fields=F["SVM_LIMIT_FIELDS"])
    assert bare.max_volumes == "unlimited"
    assert not hasattr(bare.storage, "allocated") and bare.storage.limit_threshold_alert == 90


def test_volumes_beyond_the_svm_limits_fail_in_their_job(mock, admin):
    svm = create_svm("lim3", max_volumes="1")
    assert _volume(mock, svm.uuid, "first", 100 * MIB)["state"] == "success"
    refused = _volume(mock, svm.uuid, "second", 100 * MIB)
    assert (refused["state"], refused["code"]) == ("failure", 13001)
    assert "Maximum volume count for Vserver lim3 reached." in refused["message"]
    assert [v.name for v in Volume.get_collection(**{"svm.uuid": svm.uuid})] == ["first"]

    raise_count = Svm(uuid=svm.uuid)
    raise_count.max_volumes = "unlimited"
    raise_count.storage = {"limit": 300 * MIB}
    raise_count.patch()
    too_big = _volume(mock, svm.uuid, "big", 250 * MIB)
    assert too_big["state"] == "failure"
    assert "insufficient storage available in the Vserver" in too_big["message"]
    assert _volume(mock, svm.uuid, "fits", 200 * MIB)["state"] == "success"
    [first] = list(Volume.get_collection(name="first", **{"svm.uuid": svm.uuid}))
    grow = _job_of(mock, mock.raw("PATCH", f"/api/storage/volumes/{first.uuid}",
                                  json={"size": 101 * MIB}))
    assert (grow["state"], grow["code"]) == ("failure", 13001)


def test_qos_policies_and_the_svm_qos_policy(mock, admin):
    svm = create_svm("qos1")
    policy = QosPolicy(name="qos1_gold", svm={"uuid": svm.uuid},
                       fixed={"max_throughput_iops": 5000, "min_throughput_iops": 100})
    assert policy.post(return_records=True).http_response.json()["state"] == "success"
    assert policy.uuid
    fields = F["QOS_POLICY_FIELDS"]
    [listed] = list(QosPolicy.get_collection(fields=fields, **{"svm.uuid": svm.uuid}))
    assert (listed.name, listed.fixed.max_throughput_iops, listed.object_count) == ("qos1_gold", 5000, 0)
    assert [p.uuid for p in QosPolicy.get_collection(name="qos1_gold", fields=fields)] == [policy.uuid]

    # NetApp: a policy group that defines a throughput floor cannot be applied to an SVM.
    apply = Svm(uuid=svm.uuid)
    apply.qos_policy = {"name": "qos1_gold"}
    with pytest.raises(NetAppRestError) as failure:
        apply.patch()
    assert (ontap_error(failure.value)["status"], ontap_error(failure.value)["target"]) == (400, "qos_policy")
    no_floor = QosPolicy(uuid=policy.uuid)
    no_floor.fixed = {"min_throughput_iops": 0}
    no_floor.patch()
    apply = Svm(uuid=svm.uuid)
    apply.qos_policy = {"name": "qos1_gold"}
    apply.patch()
    applied = Svm(uuid=svm.uuid)
    applied.get(fields=F["SVM_LIMIT_FIELDS"])
    assert applied.qos_policy.uuid == policy.uuid

    change = QosPolicy(uuid=policy.uuid)
    change.fixed = {"max_throughput_iops": 8000}
    change.patch()
    one = QosPolicy(uuid=policy.uuid)
    one.get(fields=fields)
    assert (one.fixed.max_throughput_iops, one.object_count) == (8000, 1)

    # Names are unique across the cluster: another SVM cannot take it.
    other = create_svm("qos2")
    # and keep `qos policy-group create`'s rule: letters, digits, "_" and "-", a letter or digit first.
    for bad in ("-gold", "gold.plus", "g" * 128):
        with pytest.raises(NetAppRestError) as failure:
            QosPolicy(name=bad, svm={"uuid": other.uuid}, fixed={"max_throughput_iops": 1}).post()
        assert (ontap_error(failure.value)["status"], ontap_error(failure.value)["target"]) == (400, "name")
    with pytest.raises(NetAppRestError) as failure:
        QosPolicy(name="qos1_gold", svm={"uuid": other.uuid}, fixed={"max_throughput_iops": 1}).post()
    assert (ontap_error(failure.value)["status"], ontap_error(failure.value)["code"]) == (409, "8454154")

    QosPolicy(uuid=policy.uuid).delete()
    assert list(QosPolicy.get_collection(**{"svm.uuid": svm.uuid})) == []
    cleared = Svm(uuid=svm.uuid)
    cleared.get(fields="qos_policy")
    assert not hasattr(cleared, "qos_policy"), "deleting a policy removes it from the SVM"


def test_svm_storage_limit_is_unknown_before_9_13_1(mock_at_version):
    with mock_at_version("9.12.1") as old:
        with old.connection():
            svm = create_svm("old1", max_volumes="5")
            asked = old.raw("GET", "/api/svm/svms", params={"fields": F["SVM_LIMIT_FIELDS"]})
            error = asked.json()["error"]
            assert (asked.status_code, error["code"]) == (400, "262197")
            refused = old.raw("PATCH", f"/api/svm/svms/{svm.uuid}", json={"storage": {"limit": 1 << 30}})
            error = refused.json()["error"]
            assert (refused.status_code, error["code"], error["target"]) == (400, "262179", "storage")
            [limits] = list(Svm.get_collection(fields=F["SVM_LIMIT_FIELDS_BEFORE_9_13_1"]))
            assert limits.max_volumes == "5"
            everything = old.raw("GET", f"/api/svm/svms/{svm.uuid}", params={"fields": "**"}).json()
            assert "storage" not in everything and everything["max_volumes"] == "5"


def test_network_placement_vlans_broadcast_domains_and_interface_moves(mock, admin):
    svm = create_svm("net1")
    domain = BroadcastDomain(name="storage", mtu=9000, ipspace={"name": "Default"})
    assert domain.post(return_records=True).http_response.status_code == 201
    vlan = Port(type="vlan", node={"name": "node-02"}, enabled=True,
                vlan={"tag": 100, "base_port": {"name": "e0d", "node": {"name": "node-02"}}},
                broadcast_domain={"name": "storage", "ipspace": {"name": "Default"}})
    assert vlan.post(return_records=True).http_response.status_code == 201
    assert vlan.uuid

    ports = list(Port.get_collection(fields=F["PORT_FIELDS"]))
    [listed] = [p for p in ports if p.uuid == vlan.uuid]
    assert (listed.name, listed.type, listed.vlan.tag, listed.broadcast_domain.name) == (
        "e0d-100", "vlan", 100, "storage")
    assert {p.broadcast_domain.name for p in ports if p.type == "physical"} == {"Default"}
    [by_name] = list(Port.get_collection(fields=F["PORT_FIELDS"], name="e0d-100",
                                         **{"node.name": "node-02"}))
    assert by_name.uuid == vlan.uuid
    [found] = list(BroadcastDomain.get_collection(fields=F["BROADCAST_DOMAIN_FIELDS"], name="storage"))
    assert (found.mtu, [p.name for p in found.ports]) == (9000, ["e0d-100"])
    assert {d.name for d in BroadcastDomain.get_collection(fields=F["BROADCAST_DOMAIN_FIELDS"])} == {
        "Default", "storage"}
    # The inventory's reads of tenant networks: both collections a page at a time, as
    # netapp-ontap follows the next links.
    paged = list(Port.get_collection(fields=F["PORT_FIELDS"], max_records=2))
    assert len(ports) > 2 and sorted(p.uuid for p in paged) == sorted(p.uuid for p in ports)
    assert {d.name for d in BroadcastDomain.get_collection(
        fields=F["BROADCAST_DOMAIN_FIELDS"], max_records=1)} == {"Default", "storage"}

    # Placed by broadcast domain (postable only: netapp-ontap's IpInterfaceLocation).
    lif = IpInterface(name="net1_data", enabled=True, svm={"uuid": svm.uuid},
                      ip={"address": "10.60.0.1", "netmask": "24"},
                      location={"broadcast_domain": {"name": "storage"}},
                      service_policy={"name": "default-data-files"})
    lif.post(return_records=True)
    placed = IpInterface(uuid=lif.uuid)
    placed.get(fields=F["INTERFACE_FIELDS"])
    assert (placed.location.home_node.name, placed.location.home_port.name) == ("node-02", "e0d-100")
    with pytest.raises(NetAppRestError) as failure:
        IpInterface(name="net1_x", svm={"uuid": svm.uuid}, ip={"address": "10.60.0.2", "netmask": "24"},
                    location={"broadcast_domain": {"name": "nope"}}).post()
    assert ontap_error(failure.value)["code"] == "1967136"
    with pytest.raises(NetAppRestError) as failure:
        Port(uuid=vlan.uuid).delete()
    assert ontap_error(failure.value)["code"] == "1966189"
    with pytest.raises(NetAppRestError) as failure:
        BroadcastDomain(uuid=domain.uuid).delete()
    assert ontap_error(failure.value)["code"] == "1967103"

    move = IpInterface(uuid=lif.uuid)
    move.location = {"home_node": {"name": "node-01"}, "home_port": {"name": "e0c"}}
    move.service_policy = {"name": "default-data-blocks"}
    move.patch()
    moved = IpInterface(uuid=lif.uuid)
    moved.get(fields=F["INTERFACE_FIELDS"])
    assert (moved.location.home_port.name, moved.service_policy.name) == ("e0c", "default-data-blocks")
    with pytest.raises(NetAppRestError) as failure:
        bad = IpInterface(uuid=lif.uuid)
        bad.service_policy = {"name": "no-such-policy"}
        bad.patch()
    assert ontap_error(failure.value)["code"] == "53281065"

    Port(uuid=vlan.uuid).delete()
    BroadcastDomain(uuid=domain.uuid).delete()
    assert [d.name for d in BroadcastDomain.get_collection(name="storage")] == []


def test_svm_routes_and_the_cluster_wide_route_listing(mock, admin):
    a = create_svm("rt1")
    b = create_svm("rt2")
    default = NetworkRoute(svm={"uuid": a.uuid}, gateway="10.70.0.1")
    assert default.post(return_records=True).http_response.status_code == 201
    subnet = NetworkRoute(svm={"uuid": b.uuid}, gateway="10.70.1.1",
                          destination={"address": "10.80.0.0", "netmask": "16"})
    subnet.post()
    with pytest.raises(NetAppRestError) as failure:
        NetworkRoute(svm={"uuid": b.uuid}, gateway="10.70.1.1",
                     destination={"address": "10.80.0.0", "netmask": "16"}).post()
    assert ontap_error(failure.value)["code"] == "1966345"

    [of_a] = list(NetworkRoute.get_collection(fields=F["ROUTE_FIELDS"], **{"svm.uuid": a.uuid}))
    assert of_a.uuid == default.uuid
    assert (of_a.destination.address, of_a.destination.netmask, of_a.metric) == ("0.0.0.0", "0", 20)
    everything = list(NetworkRoute.get_collection(fields=F["ROUTE_FIELDS"], max_records=10))
    assert sorted(r.svm.name for r in everything) == ["rt1", "rt2"]

    NetworkRoute(uuid=default.uuid).delete()
    assert list(NetworkRoute.get_collection(**{"svm.uuid": a.uuid})) == []


def test_one_role_and_the_accounts_holding_it_read_on_every_svm(admin):
    """The inventory's reads for least privilege: `GET /api/security/roles?name=…` and
    `GET /api/security/accounts?role.name=…`, cluster-wide, `max_records` at a time, with the
    operator's fields; other roles and accounts (every SVM's `vsadmin`) are left out."""
    owners = []
    for name in ("inv1", "inv2", "inv3"):
        svm = create_svm(name)
        Role(name="lean", owner={"uuid": svm.uuid},
             privileges=[{"path": "/api/svm/svms", "access": "readonly"}]).post()
        Account(name=f"{name}_user", owner={"uuid": svm.uuid}, role={"name": "lean"},
                applications=[{"application": "http", "authentication_methods": ["password"]}],
                password="Inventory123x", comment="ours").post()
        owners.append(svm.uuid)
    Role(name="other", owner={"uuid": owners[0]},
         privileges=[{"path": "/api/cluster", "access": "readonly"}]).post()

    roles = list(Role.get_collection(name="lean", fields=F["ROLE_FIELDS"], max_records=2))
    assert sorted(r.owner.uuid for r in roles) == sorted(owners)
    assert all([(p.path, p.access) for p in r.privileges] == [("/api/svm/svms", "readonly")]
               for r in roles)
    accounts = list(Account.get_collection(fields=F["ACCOUNT_FIELDS"], max_records=2,
                                           **{"role.name": "lean"}))
    assert sorted(a.name for a in accounts) == ["inv1_user", "inv2_user", "inv3_user"]
    assert {a.owner.uuid for a in accounts} == set(owners)
    assert all(a.role.name == "lean" and a.comment == "ours" for a in accounts)

"""The volume path of Trident's ONTAP drivers (ontap-nas, ontap-san, ontap-san NVMe), driven
with netapp-ontap's resource classes as the SVM's vsadmin, as Trident's REST client does it
(storage_drivers/ontap/api/ontap_rest.go): look the volume up by name and style, create it
(202 + job), export it through an export policy and a rule per client, snapshot it, resize it,
delete it; the same for a namespace or LUN in its volume, mapped to a subsystem or igroup."""

import pytest
from netapp_ontap.error import NetAppRestError
from netapp_ontap.resources import (
    Account,
    Aggregate,
    ExportPolicy,
    ExportRule,
    Igroup,
    IgroupInitiator,
    IpInterface,
    IscsiCredentials,
    Job,
    Lun,
    LunAttribute,
    LunMap,
    LunMapReportingNode,
    NvmeNamespace,
    NvmeSubsystem,
    NvmeSubsystemHost,
    NvmeSubsystemMap,
    Snapshot,
    SnapmirrorRelationship,
    Svm,
    Volume,
)

from conftest import ontap_error

GIB = 1 << 30


def _svm_with_vsadmin(name, password):
    svm = Svm(name=name, nfs={"enabled": True}, iscsi={"enabled": True},
              nvme={"enabled": True}, aggregates=[{"name": "aggr1_node01"}])
    svm.post()
    vsadmin = Account(owner={"uuid": svm.uuid}, name="vsadmin")
    vsadmin.password = password
    vsadmin.patch()
    unlock = Account(owner={"uuid": svm.uuid}, name="vsadmin")
    unlock.locked = False
    unlock.patch()
    return svm


@pytest.fixture
def svm(mock, admin):
    return _svm_with_vsadmin("trident_svm", "Trident123x")


@pytest.fixture
def vsadmin(mock, svm):
    with mock.connection("vsadmin", "Trident123x") as conn:
        yield conn


def _volume(svm, name, size=GIB, **extra):
    fields = {"guarantee": {"type": "none"}, **extra}
    volume = Volume(name=name, size=size, svm={"uuid": svm.uuid},
                    aggregates=[{"name": "aggr1_node01"}], snapshot_policy={"name": "none"},
                    state="online", style="flexvol", **fields)
    volume.post(poll=True)
    return volume


def _by_name(name, fields):
    return list(Volume.get_collection(name=name, style="flexvol", fields=fields))


def test_nfs_volume_create_export_snapshot_resize_delete(mock, svm, vsadmin):
    assert _by_name("trident_pvc_1", "") == [], "an absent volume is an empty answer"

    volume = _volume(svm, "trident_pvc_1", nas={"path": "/trident_pvc_1",
                                               "security_style": "unix",
                                               "unix_permissions": 755,
                                               "export_policy": {"name": "default"}})
    [found] = _by_name("trident_pvc_1", "type,size,comment,aggregates,nas,guarantee,"
                       "snapshot_policy,snapshot_directory_access_enabled,"
                       "space.snapshot.used,space.snapshot.reserve_percent")
    assert found.uuid == volume.uuid and found.size == GIB
    assert found.nas.export_policy.name == "default" and found.guarantee.type == "none"

    # autoExportPolicy: ExportPolicyExists, create, list rules, add one per node, drop one.
    policy_name = "trident-0b8c1b9e"
    assert list(ExportPolicy.get_collection(name=policy_name, **{"svm.uuid": svm.uuid})) == []
    policy = ExportPolicy(name=policy_name, svm={"uuid": svm.uuid})
    policy.post()
    assert policy.id > 1 << 32
    for client in ("10.0.0.1", "10.0.0.2"):
        ExportRule(policy.id, clients=[{"match": client}], protocols=["nfs"],
                   ro_rule=["any"], rw_rule=["any"], superuser=["any"]).post()
    rules = list(ExportRule.get_collection(policy.id, fields="clients"))
    assert [(r.index, r.clients[0].match) for r in rules] == [(1, "10.0.0.1"), (2, "10.0.0.2")]
    ExportRule(policy.id, index=1).delete()
    rules = list(ExportRule.get_collection(policy.id, fields="clients"))
    assert [(r.index, r.clients[0].match) for r in rules] == [(2, "10.0.0.2")]

    # netapp-ontap PATCHes what changed after construction, so set fields afterwards.
    patch = Volume(uuid=volume.uuid)
    patch.nas = {"export_policy": {"name": policy_name}}
    patch.patch(poll=True)
    [found] = _by_name("trident_pvc_1", "nas.export_policy")
    assert found.nas.export_policy.name == policy_name
    assert found.nas.export_policy.id == policy.id

    snapshot = Snapshot(volume.uuid, name="snapshot-1")
    snapshot.post(poll=True)
    snapshots = list(Snapshot.get_collection(volume.uuid, name="snapshot-1",
                                             fields="name,create_time"))
    assert [s.name for s in snapshots] == ["snapshot-1"] and snapshots[0].create_time
    [used] = _by_name("trident_pvc_1", "space.logical_space.used")
    assert used.space.logical_space.used == 0

    resize = Volume(uuid=volume.uuid)
    resize.size = 2 * GIB
    resize.patch(poll=True)
    [found] = _by_name("trident_pvc_1", "size,space.size,space.available")
    assert found.size == 2 * GIB and found.space.size == 2 * GIB

    Snapshot(volume.uuid, uuid=snapshots[0].uuid).delete(poll=True)
    assert list(Snapshot.get_collection(volume.uuid)) == []
    Volume(uuid=volume.uuid).delete(poll=True)
    assert _by_name("trident_pvc_1", "") == []
    policy.delete()
    assert list(ExportPolicy.get_collection(name=policy_name)) == []


def test_each_svm_has_its_default_export_policy(mock, admin, svm):
    policies = list(ExportPolicy.get_collection(name="default", fields="svm,rules"))
    assert [(p.svm.uuid, p.name) for p in policies] == [(svm.uuid, "default")]
    assert policies[0].id == (2 << 32) | 1


def test_nvme_namespace_subsystem_host_map_snapshot_unmap_delete(mock, svm, vsadmin):
    volume = _volume(svm, "trident_pvc_2")
    path = "/vol/trident_pvc_2/namespace0"
    assert list(NvmeNamespace.get_collection(name=path, fields="space.size")) == []
    namespace = NvmeNamespace(name=path, os_type="linux", space={"size": GIB, "block_size": 4096},
                              comment="{}", svm={"uuid": svm.uuid})
    namespace.post(hydrate=True)
    subsystem = NvmeSubsystem(name="s_node1", os_type="linux", svm={"uuid": svm.uuid})
    subsystem.post(hydrate=True)
    host_nqn = "nqn.2014-08.org.nvmexpress:uuid:node1"
    NvmeSubsystemHost(subsystem.uuid, nqn=host_nqn).post()
    hosts = list(NvmeSubsystemHost.get_collection(subsystem.uuid))
    assert [h.nqn for h in hosts] == [host_nqn]
    NvmeSubsystemMap(svm={"uuid": svm.uuid}, subsystem={"uuid": subsystem.uuid},
                     namespace={"uuid": namespace.uuid}).post()

    [found] = list(NvmeNamespace.get_collection(name=path, fields="space.size,status,subsystem_map"))
    assert found.status.mapped is True and found.subsystem_map.subsystem.uuid == subsystem.uuid
    [sub] = list(NvmeSubsystem.get_collection(name="s_node1", fields="target_nqn,hosts"))
    assert sub.target_nqn.startswith("nqn.1992-08.com.netapp:sn.")

    Snapshot(volume.uuid, name="snap-nvme").post(poll=True)
    resize = NvmeNamespace(uuid=namespace.uuid)
    resize.space = {"size": 2 * GIB}
    resize.patch()
    namespace.get(fields="space.size")
    assert namespace.space.size == 2 * GIB

    with pytest.raises(NetAppRestError) as mapped:
        NvmeNamespace(uuid=namespace.uuid).delete()
    assert ontap_error(mapped.value)["status"] == 400

    NvmeSubsystemMap(subsystem={"uuid": subsystem.uuid}, namespace={"uuid": namespace.uuid}).delete()
    NvmeSubsystemHost(subsystem.uuid, nqn=host_nqn).delete()
    NvmeSubsystem(uuid=subsystem.uuid).delete()
    NvmeNamespace(uuid=namespace.uuid).delete()
    Volume(uuid=volume.uuid).delete(poll=True)
    assert list(NvmeNamespace.get_collection()) == []


def test_iscsi_lun_igroup_initiator_map_delete(mock, svm, vsadmin):
    [credentials] = list(IscsiCredentials.get_collection(
        initiator="default", return_records=True, fields="authentication_type,initiator",
        **{"svm.uuid": svm.uuid}))
    assert credentials.authentication_type == "none"

    volume = _volume(svm, "trident_pvc_3")
    lun = Lun(name="/vol/trident_pvc_3/lun0", os_type="linux", space={"size": GIB},
              svm={"uuid": svm.uuid})
    lun.post(hydrate=True)
    assert list(Igroup.get_collection(name="trident-*", **{"svm.uuid": svm.uuid})) == []
    igroup = Igroup(name="trident-node1", os_type="linux", protocol="iscsi",
                    svm={"uuid": svm.uuid})
    igroup.post(hydrate=True)
    IgroupInitiator(igroup.uuid, name="iqn.1993-08.org.debian:01:node1").post()
    assert [i.name for i in IgroupInitiator.get_collection(igroup.uuid)] == [
        "iqn.1993-08.org.debian:01:node1"]
    lun_map = LunMap(svm={"uuid": svm.uuid}, igroup={"name": "trident-node1"},
                     lun={"name": lun.name})
    lun_map.post()
    maps = list(LunMap.get_collection(**{"lun.name": lun.name}, fields="svm,lun,igroup,logical_unit_number"))
    assert [(m.igroup.uuid, m.logical_unit_number) for m in maps] == [(igroup.uuid, 0)]

    resize = Lun(uuid=lun.uuid)
    resize.space = {"size": 2 * GIB}
    resize.patch()
    lun.get(fields="space.size,status.mapped")
    assert lun.space.size == 2 * GIB and lun.status.mapped is True

    LunMap(lun={"uuid": lun.uuid}, igroup={"uuid": igroup.uuid}).delete()
    with pytest.raises(NetAppRestError) as gone:
        LunMap(lun={"uuid": lun.uuid}, igroup={"uuid": igroup.uuid}).delete()
    assert ontap_error(gone.value)["code"] == "5374922"
    IgroupInitiator(igroup.uuid, name="iqn.1993-08.org.debian:01:node1").delete()
    igroup.delete()
    lun.delete()
    Volume(uuid=volume.uuid).delete(poll=True)


def test_volumes_use_aggregate_space_and_block_svm_delete(mock, admin, svm):
    volume = _volume(svm, "thick", guarantee={"type": "volume"})
    Volume(uuid=volume.uuid).get()  # the admin sees it too
    [aggregate] = list(Aggregate.get_collection(name="aggr1_node01",
                                                fields="space.block_storage,volume-count"))
    assert aggregate.space.block_storage.used == GIB
    with pytest.raises(NetAppRestError) as refused:
        Svm(uuid=svm.uuid).delete()
    assert ontap_error(refused.value)["code"] == "2621525"


# ------------------------------------------------------------------ what Trident's volume
# lifecycle needs beyond the objects themselves (trident-calls.md D7, E1, E4, F4)


@pytest.fixture
def iscsi_lif(mock, admin, svm):
    """The SVM's iSCSI data LIF, homed on node-01 (the node of aggr1_node01)."""
    IpInterface(name="lif_iscsi", svm={"uuid": svm.uuid},
                ip={"address": "10.0.0.11", "netmask": "24"},
                location={"home_node": {"name": "node-01"}},
                service_policy={"name": "default-data-iscsi"}).post()


def test_snapmirror_relationships_are_listed_empty_before_a_delete(mock, svm, vsadmin):
    volume = _volume(svm, "trident_pvc_sm")
    # SMCLEAN: the two shapes Trident's Destroy sends, neither filtered by SVM.
    assert list(SnapmirrorRelationship.get_collection(
        fields="source.path,destination.path", list_destinations_only="true")) == []
    assert list(SnapmirrorRelationship.get_collection(fields="destination.path,source.path")) == []
    Volume(uuid=volume.uuid).delete(poll=True)
    with pytest.raises(NetAppRestError) as unknown:
        list(SnapmirrorRelationship.get_collection(fields="source.path", bogus="x"))
    assert ontap_error(unknown.value)["code"] == "262179"


def test_lun_attributes(mock, svm, vsadmin):
    _volume(svm, "trident_pvc_attr")
    path = "/vol/trident_pvc_attr/lun0"
    lun = Lun(name=path, os_type="linux", space={"size": GIB}, svm={"uuid": svm.uuid},
              attributes=[{"name": "context", "value": "csi"}])
    lun.post(hydrate=True)

    # LunSetAttribute: read the names, POST an absent one, PATCH a present one.
    [found] = list(Lun.get_collection(name=path, fields="attributes.name",
                                      **{"svm.uuid": svm.uuid}))
    assert [a.name for a in found.attributes] == ["context"]
    LunAttribute(lun.uuid, name="com.netapp.ndvp.fstype", value="ext4").post()
    with pytest.raises(NetAppRestError) as duplicate:
        LunAttribute(lun.uuid, name="com.netapp.ndvp.fstype", value="xfs").post()
    assert ontap_error(duplicate.value)["code"] == "5374930"
    change = LunAttribute(lun.uuid, name="context")
    change.value = "docker"
    change.patch()

    # LunGetAttribute: the LUN record with attributes.name,attributes.value.
    [found] = list(Lun.get_collection(name=path, fields="attributes.name,attributes.value",
                                      **{"svm.uuid": svm.uuid}))
    assert {a.name: a.value for a in found.attributes} == {
        "context": "docker", "com.netapp.ndvp.fstype": "ext4"}
    assert sorted(a.name for a in LunAttribute.get_collection(lun.uuid, fields="*")) == [
        "com.netapp.ndvp.fstype", "context"]
    one = LunAttribute(lun.uuid, name="com.netapp.ndvp.fstype")
    one.get()
    assert one.value == "ext4"
    # An expensive property: not in a LUN's record unless fields= names it.
    plain = Lun(uuid=lun.uuid)
    plain.get()
    assert not hasattr(plain, "attributes")

    LunAttribute(lun.uuid, name="context").delete()
    with pytest.raises(NetAppRestError) as gone:
        LunAttribute(lun.uuid, name="context").get()
    assert ontap_error(gone.value)["code"] == "5374931"
    # netapp-ontap refuses an empty value itself; Trident's client does not.
    incomplete = mock.raw("POST", f"/api/storage/luns/{lun.uuid}/attributes",
                          auth=("vsadmin", "Trident123x"), json={"name": "empty", "value": ""})
    assert (incomplete.status_code, incomplete.json()["error"]["code"]) == (400, "5374928")


def test_iscsi_publish_finds_the_lun_id_and_a_reporting_node_with_a_lif(
        mock, svm, iscsi_lif, vsadmin):
    _volume(svm, "trident_pvc_pub")
    path = "/vol/trident_pvc_pub/lun0"
    lun = Lun(name=path, os_type="linux", space={"size": GIB}, svm={"uuid": svm.uuid})
    lun.post(hydrate=True)
    igroup = Igroup(name="node1-trident", os_type="linux", protocol="iscsi",
                    svm={"uuid": svm.uuid})
    igroup.post(hydrate=True)
    LunMap(igroup={"name": "node1-trident"}, lun={"name": path, "uuid": lun.uuid},
           svm={"uuid": svm.uuid}).post()

    # LunMapInfo: the hyphenated name Trident sends, answered as logical_unit_number.
    [info] = list(LunMap.get_collection(**{"lun.name": path},
                                        fields="svm,lun,igroup,logical-unit-number"))
    assert (info.igroup.name, info.logical_unit_number) == ("node1-trident", 0)
    one = LunMap(lun={"uuid": lun.uuid}, igroup={"uuid": igroup.uuid})
    one.get(fields="logical-unit-number")
    assert one.logical_unit_number == 0

    # getISCSIDataLIFsForReportingNodes: reporting nodes, then the LIFs' home nodes.
    nodes = list(LunMapReportingNode.get_collection(lun.uuid, igroup.uuid))
    assert sorted(n.name for n in nodes) == ["node-01", "node-02"]
    lifs = list(IpInterface.get_collection(fields="location.node.name,ip.address",
                                           **{"svm.uuid": svm.uuid}))
    portals = [lif.ip.address for lif in lifs
               if lif.location.node.name in {n.name for n in nodes}]
    assert portals == ["10.0.0.11"]
    node = LunMapReportingNode(lun.uuid, igroup.uuid, uuid=nodes[0].uuid)
    node.get()
    assert node.name == nodes[0].name

    LunMap(lun={"uuid": lun.uuid}, igroup={"uuid": igroup.uuid}).delete()
    with pytest.raises(NetAppRestError) as unmapped:
        list(LunMapReportingNode.get_collection(lun.uuid, igroup.uuid))
    assert ontap_error(unmapped.value)["code"] == "5374922"


def test_answers_trident_dereferences(mock, svm, vsadmin):
    """202 + job for volume changes, jobs read with fields=state and fields=**, and num_records
    with the records Trident reads in POST answers with return_records=true."""
    auth = ("vsadmin", "Trident123x")
    answer = mock.raw("POST", "/api/storage/volumes", auth=auth, json={
        "name": "trident_pvc_raw", "size": GIB, "svm": {"uuid": svm.uuid},
        "aggregates": [{"name": "aggr1_node01"}], "style": "flexvol"})
    assert answer.status_code == 202 and set(answer.json()) == {"job"}

    def wait(uuid):
        """PollJobStatus: fields=state until a final state, then the whole job (fields=**)."""
        job = Job(uuid=uuid)
        for _ in range(200):
            job.get(fields="state")
            assert job.state in ("queued", "running", "success")
            if job.state == "success":
                break
        full = mock.raw("GET", f"/api/cluster/jobs/{uuid}", auth=auth, params={"fields": "**"})
        assert full.status_code == 200
        assert {"state", "message", "code", "description", "start_time", "end_time"} <= set(
            full.json())

    wait(answer.json()["job"]["uuid"])
    volume = _by_name("trident_pvc_raw", "")[0]
    resize = mock.raw("PATCH", f"/api/storage/volumes/{volume.uuid}", auth=auth,
                      json={"size": 2 * GIB})
    assert resize.status_code in (200, 202)
    mount = mock.raw("PATCH", f"/api/storage/volumes/{volume.uuid}", auth=auth,
                     json={"nas": {"path": "/trident_pvc_raw"}})
    assert mount.status_code == 202
    wait(mount.json()["job"]["uuid"])

    def post(path, body):
        answer = mock.raw("POST", path, auth=auth, params={"return_records": "true"}, json=body)
        assert answer.status_code == 201, answer.text
        assert answer.json()["num_records"] == 1
        return answer.json()["records"][0]

    lun = post("/api/storage/luns", {"name": "/vol/trident_pvc_raw/lun0", "os_type": "linux",
                                     "space": {"size": GIB}, "svm": {"uuid": svm.uuid}})
    post("/api/protocols/san/igroups", {"name": "n1-t", "protocol": "iscsi", "os_type": "linux",
                                        "svm": {"uuid": svm.uuid}})
    lun_map = post("/api/protocols/san/lun-maps", {
        "igroup": {"name": "n1-t"}, "lun": {"name": lun["name"], "uuid": lun["uuid"]},
        "svm": {"uuid": svm.uuid}})
    assert lun_map["logical_unit_number"] == 0
    namespace = post("/api/storage/namespaces", {
        "name": "/vol/trident_pvc_raw/namespace0", "os_type": "linux",
        "space": {"size": GIB, "block_size": 4096}, "svm": {"uuid": svm.uuid}})
    assert namespace["name"] == "/vol/trident_pvc_raw/namespace0"
    subsystem = post("/api/protocols/nvme/subsystems", {
        "name": "n1_t", "os_type": "linux", "svm": {"uuid": svm.uuid}, "comment": "n1_t"})
    assert subsystem["name"] == "n1_t" and subsystem["uuid"]
    assert subsystem["target_nqn"].endswith(":subsystem.n1_t")
    delete = mock.raw("DELETE", f"/api/storage/volumes/{volume.uuid}", auth=auth,
                      params={"force": "false"})
    assert delete.status_code == 202
    wait(delete.json()["job"]["uuid"])

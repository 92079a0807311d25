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
    IscsiCredentials,
    Lun,
    LunMap,
    NvmeNamespace,
    NvmeSubsystem,
    NvmeSubsystemHost,
    NvmeSubsystemMap,
    Snapshot,
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

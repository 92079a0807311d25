"""Trident's backend initialization with an SVM account that holds exactly the REST role NetApp
publishes for Trident (NetApp/trident `contrib/ontap/trident_role/cli_pastable/
rest_custom_role_output.txt`, `security login rest-role create -role "trident" -api … -access …`),
made with netapp-ontap's `Role` and `Account`; the mock enforces the role's privileges."""

import pytest
from netapp_ontap.error import NetAppRestError
from netapp_ontap.resources import (
    Account,
    IscsiService,
    NvmeService,
    QosPolicy,
    Role,
    RolePrivilege,
)

import operator_client
from conftest import ontap_error
from test_trident import backend_svm, initialize_backend  # noqa: F401 (fixture)

# NetApp's list, verbatim: (API path, access).
TRIDENT_ROLE = [
    ("/api/application/consistency-groups", "all"),
    ("/api/application/consistency-groups/snapshots", "read_create"),
    ("/api/application/containers", "read_create"),
    ("/api/cluster", "readonly"),
    ("/api/cluster/jobs", "readonly"),
    ("/api/cluster/nodes", "readonly"),
    ("/api/cluster/schedules", "readonly"),
    ("/api/network/fc/interfaces", "readonly"),
    ("/api/network/ip/interfaces", "readonly"),
    ("/api/private/cli/volume/recovery-queue", "all"),
    ("/api/private/cli/volume/recovery-queue/purge", "all"),
    ("/api/private/cli/vserver/nvme/subsystem/delete", "all"),
    ("/api/protocols/cifs/shares", "all"),
    ("/api/protocols/cifs/shares/acls", "all"),
    ("/api/protocols/nfs/export-policies", "all"),
    ("/api/protocols/nfs/export-policies/rules", "all"),
    ("/api/protocols/nvme/subsystem-maps", "all"),
    ("/api/protocols/nvme/subsystems", "all"),
    ("/api/protocols/nvme/subsystems/hosts", "all"),
    ("/api/protocols/san/fcp/services", "readonly"),
    ("/api/protocols/san/igroups", "all"),
    ("/api/protocols/san/igroups/initiators", "all"),
    ("/api/protocols/san/iscsi/credentials", "read_modify"),
    ("/api/protocols/san/iscsi/services", "readonly"),
    ("/api/protocols/san/lun-maps", "all"),
    ("/api/protocols/san/lun-maps/reporting-nodes", "all"),
    ("/api/snapmirror/policies", "readonly"),
    ("/api/snapmirror/relationships", "all"),
    ("/api/snapmirror/relationships/transfers", "read_create_modify"),
    ("/api/storage/aggregates", "readonly"),
    ("/api/storage/luns", "all"),
    ("/api/storage/luns/attributes", "read_create_modify"),
    ("/api/storage/namespaces", "all"),
    ("/api/storage/qtrees", "all"),
    ("/api/storage/quota/rules", "read_create_modify"),
    ("/api/storage/storage-units", "read_create_modify"),
    ("/api/storage/storage-units/snapshots", "all"),
    ("/api/storage/volumes", "all"),
    ("/api/storage/volumes/snapshots", "all"),
    ("/api/support/ems/application-logs", "read_create"),
    ("/api/svm/peers", "readonly"),
    ("/api/svm/svms", "readonly"),
]
PASSWORD = "Backend456role"
F = operator_client.constants()


@pytest.fixture
def trident_account(mock, admin, backend_svm):  # noqa: F811 (fixture)
    role = Role(name="trident", owner={"uuid": backend_svm.uuid},
                privileges=[{"path": p, "access": a} for p, a in TRIDENT_ROLE])
    assert role.post().http_response.status_code == 201
    Account(owner={"uuid": backend_svm.uuid}, name="trident", role={"name": "trident"},
            applications=[{"application": "http", "authentication_methods": ["password"]}],
            password=PASSWORD, locked=False).post()
    return backend_svm


def test_the_role_reads_back_as_created(mock, trident_account):
    role = Role(name="trident", **{"owner.uuid": trident_account.uuid})
    role.get(fields="privileges,scope,builtin")
    assert [(p.path, p.access) for p in role.privileges] == TRIDENT_ROLE
    assert (role.scope, role.builtin) == ("svm", False)
    privileges = list(RolePrivilege.get_collection(
        trident_account.uuid, "trident", fields="access"))
    assert len(privileges) == len(TRIDENT_ROLE)
    # The operator's client looks the role up by owner and name with its own fields.
    [found] = list(Role.get_collection(
        name="trident", fields=F["ROLE_FIELDS"], **{"owner.uuid": trident_account.uuid}))
    assert len(found.privileges) == len(TRIDENT_ROLE)


def test_backend_initialization_with_netapps_trident_role(mock, trident_account):
    """Every call of the replay but the NVMe service read, which NetApp's role does not grant
    (no `/api/protocols/nvme/services`) and which Trident v26.06's measured initialization does
    not send (shared reference trident-driver-facts.md, "REST and ZAPI calls")."""
    with mock.connection("trident", PASSWORD):
        initialize_backend(trident_account.uuid, cluster_admin=False, nvme_service=False)
        with pytest.raises(NetAppRestError) as failure:
            list(NvmeService.get_collection(**{"svm.uuid": trident_account.uuid}))
        assert ontap_error(failure.value)["status"] == 403


def test_the_role_denies_what_it_does_not_grant(mock, trident_account):
    uuid = trident_account.uuid
    with mock.connection("trident", PASSWORD):
        # readonly on iSCSI services: GET yes, PATCH no.
        assert list(IscsiService.get_collection(**{"svm.uuid": uuid}))
        with pytest.raises(NetAppRestError) as failure:
            change = IscsiService(**{"svm.uuid": uuid})
            change.enabled = False
            change.patch()
        assert (ontap_error(failure.value)["status"], ontap_error(failure.value)["code"]) == (403, "6")
        # No privilege at all: denied, GET included.
        for denied in (lambda: list(QosPolicy.get_collection()),
                       lambda: Account(owner={"uuid": uuid}, name="trident").get()):
            with pytest.raises(NetAppRestError) as failure:
                denied()
            error = ontap_error(failure.value)
            assert (error["status"], error["code"], error["message"]) == (
                403, "6", "not authorized for that command")


def test_a_changed_privilege_applies_to_the_next_request(mock, trident_account):
    uuid = trident_account.uuid
    change = RolePrivilege(uuid, "trident", path="/api/svm/svms")
    change.access = "none"
    change.patch()
    denied = mock.raw("GET", "/api/svm/svms", auth=("trident", PASSWORD))
    assert denied.status_code == 403
    change.access = "readonly"
    change.patch()
    assert mock.raw("GET", "/api/svm/svms", auth=("trident", PASSWORD)).status_code == 200


def test_role_errors_are_netapps_codes(mock, admin, backend_svm):  # noqa: F811 (fixture)
    uuid = backend_svm.uuid
    for privileges, code in (
        ([{"path": "/api/storage/volumes", "access": "sometimes"}], "5636144"),
        ([{"path": "/api/storage/vol umes", "access": "all"}], "5636169"),
        ([], "13434892"),
    ):
        answer = mock.raw("POST", "/api/security/roles",
                          json={"name": "bad", "owner": {"uuid": uuid}, "privileges": privileges})
        assert (answer.status_code, answer.json()["error"]["code"]) == (400, code), privileges


def test_the_operator_keeps_the_role_and_switches_an_accounts_role(mock, admin, backend_svm):  # noqa: F811 (fixture)
    """The calls the operator adds for least privilege, as netapp-ontap makes them: a privilege
    added back and one removed (`RolePrivilege` POST and DELETE), and an account's role changed
    in place by `PATCH /api/security/accounts/{owner.uuid}/{name}` with `role.name`, after which
    the account's requests are checked against the new role."""
    uuid = backend_svm.uuid
    Role(name="trident", owner={"uuid": uuid},
         privileges=[{"path": p, "access": a} for p, a in TRIDENT_ROLE if p != "/api/svm/peers"]
         ).post()
    added = RolePrivilege(uuid, "trident", path="/api/svm/peers", access="readonly")
    assert added.post().http_response.status_code == 201
    extra = RolePrivilege(uuid, "trident", path="/api/security/accounts", access="all")
    extra.post()
    RolePrivilege(uuid, "trident", path="/api/security/accounts").delete()
    [role] = list(Role.get_collection(
        name="trident", fields=F["ROLE_FIELDS"], **{"owner.uuid": uuid}))
    assert sorted((p.path, p.access) for p in role.privileges) == sorted(TRIDENT_ROLE)

    Account(owner={"uuid": uuid}, name="lean", role={"name": "vsadmin"},
            applications=[{"application": "http", "authentication_methods": ["password"]}],
            password=PASSWORD, locked=False).post()
    assert mock.raw("GET", "/api/security/accounts", auth=("lean", PASSWORD)).status_code == 200
    switch = Account(owner={"uuid": uuid}, name="lean")
    switch.role = {"name": "trident"}
    switch.patch()
    found = Account(owner={"uuid": uuid}, name="lean")
    found.get(fields=F["ACCOUNT_FIELDS"])
    assert found.role.name == "trident"
    assert mock.raw("GET", "/api/security/accounts", auth=("lean", PASSWORD)).status_code == 403
    assert mock.raw("GET", "/api/svm/svms", auth=("lean", PASSWORD)).status_code == 200

"""Names checked against netapp-ontap's schemas: what the operator's client asks for, and what
the mock claims to model, so a typo on either side fails here."""

import pytest

import operator_client
from schemas import has_path, resource_for, top_level

CONTROL = {"fields", "max_records", "return_records", "return_timeout", "order_by",
           "ignore_unknown_fields"}


def _operator_names():
    for segments, pairs in operator_client.url_calls():
        path = operator_client.rest_path(segments)
        for key, value in pairs:
            if key == "fields":
                for name in value.split(","):
                    yield path, "fields", name
            elif key not in CONTROL:
                yield path, "filter", key


OPERATOR_NAMES = sorted(set(_operator_names()))


def test_the_operator_client_was_read():
    paths = {p for p, _, _ in OPERATOR_NAMES}
    assert {"/api/svm/svms", "/api/network/ip/interfaces", "/api/security/accounts"} <= paths
    assert len(OPERATOR_NAMES) > 30


@pytest.mark.parametrize("path,kind,name", OPERATOR_NAMES)
def test_operator_fields_and_filters_exist_in_ontap(path, kind, name):
    cls = resource_for(path)
    assert has_path(cls, name), f"{kind} {name!r} of {path} is not in netapp-ontap's {cls.__name__}"


def test_mock_schema_matches_netapp_ontap(mock):
    collections = mock.control("GET", "/_mock/schema").json()["collections"]
    assert len(collections) >= 26
    for collection in collections:
        cls = resource_for(collection["path"])
        assert set(collection["ontap"]) == top_level(cls), collection["path"]
        missing = [p for p in collection["modelled"] if not has_path(cls, p)]
        assert not missing, f"{collection['path']} models fields ONTAP does not have: {missing}"

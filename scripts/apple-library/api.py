"""Apple's App Store Server Library (Python) calling the App Store simulator's App Store Server API.

Usage: python api.py SPEC.json
SPEC holds {"baseURL", "key" (the In-App Purchase key, PEM), "keyId", "issuerId", "bundleId", "environment",
"calls": [{"method": "get_transaction_info", "args": [...], "models": {"2": "TransactionHistoryRequest"},
"enums": {"3": "GetTransactionHistoryVersion"}}]}: each call is one of the library's AppStoreServerAPIClient
methods, its arguments as JSON; an argument named in "models" is built into that model of the library, one in
"enums" into that enum (a list into a list of them).
Prints one JSON array: for each call {"answer": the response as the library decoded it (null for none)} or
{"error": {"status", "code", "message"}} from the library's APIException. Exits 0 when it ran.
"""
import importlib
import json
import sys

from appstoreserverlibrary.api_client import APIException, AppStoreServerAPIClient
from appstoreserverlibrary.models.Environment import Environment
from appstoreserverlibrary.models.LibraryUtility import _get_cattrs_converter


def library_type(name: str):
    """A model or enum of the library: in its own module under models, or in api_client (the history's version)."""
    try:
        return getattr(importlib.import_module(f"appstoreserverlibrary.models.{name}"), name)
    except ModuleNotFoundError:
        return getattr(importlib.import_module("appstoreserverlibrary.api_client"), name)


def argument(call: dict, index: int, value):
    key = str(index)
    if key in call.get("models", {}):
        model = library_type(call["models"][key])
        return _get_cattrs_converter(model).structure(value, model)
    if key in call.get("enums", {}):
        enum = library_type(call["enums"][key])
        return [enum(item) for item in value] if isinstance(value, list) else enum(value)
    return value


def main() -> int:
    spec = json.load(open(sys.argv[1]))
    client = AppStoreServerAPIClient(
        spec["key"].encode(), spec["keyId"], spec["issuerId"], spec["bundleId"], Environment(spec["environment"])
    )
    # The library knows Apple's hosts only; the simulator stands in for them at its own address.
    client._base_url = spec["baseURL"]
    results = []
    for call in spec["calls"]:
        arguments = [argument(call, index, value) for index, value in enumerate(call.get("args", []))]
        try:
            answer = getattr(client, call["method"])(*arguments)
            unstructured = None if answer is None else _get_cattrs_converter(type(answer)).unstructure(answer)
            results.append({"answer": unstructured})
        except APIException as error:
            results.append(
                {
                    "error": {
                        "status": error.http_status_code,
                        "code": error.raw_api_error,
                        "message": error.error_message,
                    }
                }
            )
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Apple's App Store Server Library (Python) judging data the App Store simulator signed.

Usage: python verify.py FOLDER
FOLDER holds root.der (the simulator's root) and items.json: {"bundleId", "appAppleId", "environment",
"items": [{"kind": "transaction" | "renewal" | "notification" | "app-transaction", "jws": "..."}]}.
Prints one JSON array: for each item, "OK" or the library's refusal. Exits 0 when it ran.
"""
import json
import sys

from appstoreserverlibrary.models.Environment import Environment
from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier, VerificationException


def main() -> int:
    folder = sys.argv[1]
    root = open(f"{folder}/root.der", "rb").read()
    spec = json.load(open(f"{folder}/items.json"))
    environment = Environment(spec["environment"])
    verifier = SignedDataVerifier([root], False, environment, spec["bundleId"], spec.get("appAppleId"))
    calls = {
        "transaction": verifier.verify_and_decode_signed_transaction,
        "renewal": verifier.verify_and_decode_renewal_info,
        "notification": verifier.verify_and_decode_notification,
        "app-transaction": verifier.verify_and_decode_app_transaction,
    }
    verdicts = []
    for item in spec["items"]:
        try:
            calls[item["kind"]](item["jws"])
            verdicts.append("OK")
        except VerificationException as error:
            verdicts.append(f"refused: {error.status.name}")
        except Exception as error:  # the library raises other errors for malformed data
            verdicts.append(f"refused: {type(error).__name__}: {error}")
    print(json.dumps(verdicts))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Apple's App Store Server Library (Python) signing the same offers Coffer signed, for comparison.

Usage: python offers.py SPEC.json
SPEC holds {"key" (the In-App Purchase key, PEM), "keyId", "issuerId", "bundleId",
"promotional": {"productId", "offerIdentifier", "transactionId" (or null), "coffer": JWS},
"introductory": {"productId", "allowIntroductoryOffer", "transactionId", "coffer": JWS},
"v1": {"productId", "offerIdentifier", "appAccountToken" (or ""), "nonce", "timestamp", "coffer": base64}}.
For each JWS: the library's PromotionalOfferV2SignatureCreator or IntroductoryOfferEligibilitySignatureCreator
signs the same inputs; both tokens are decoded with the key's public half (signature and audience checked) and
printed as {"coffer": {"header", "claims"}, "library": {"header", "claims"}}. For v1, the library's
PromotionalOfferSignatureCreator is run with a key that hands over the exact bytes it signs, and Coffer's signature is
verified over those bytes: {"verified": true|false, "libraryVerified": true}. Prints one JSON object; exits 0.
"""
import base64
import json
import sys
import uuid

import jwt
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ec import ECDSA
from cryptography.hazmat.primitives.hashes import SHA256

from appstoreserverlibrary.jws_signature_creator import (
    IntroductoryOfferEligibilitySignatureCreator,
    PromotionalOfferV2SignatureCreator,
)
from appstoreserverlibrary.promotional_offer import PromotionalOfferSignatureCreator


def decoded(token: str, public_key, audience: str) -> dict:
    # iat is the caller's clock (a test's, in the past): not judged here, only compared.
    claims = jwt.decode(token, public_key, algorithms=["ES256"], audience=audience, options={"verify_iat": False})
    return {"header": jwt.get_unverified_header(token), "claims": claims}


class Capturing:
    """Stands in for the private key: records what the library signs, then signs it with the real key."""

    def __init__(self, key):
        self.key = key
        self.signed = None

    def sign(self, data, algorithm):
        self.signed = data
        return self.key.sign(data, algorithm)


def main() -> int:
    spec = json.load(open(sys.argv[1]))
    pem = spec["key"].encode()
    private_key = serialization.load_pem_private_key(pem, password=None)
    public_key = private_key.public_key()
    result = {}

    promotional = spec["promotional"]
    creator = PromotionalOfferV2SignatureCreator(pem, spec["keyId"], spec["issuerId"], spec["bundleId"])
    library = creator.create_signature(promotional["productId"], promotional["offerIdentifier"],
                                       promotional["transactionId"])
    result["promotional"] = {"coffer": decoded(promotional["coffer"], public_key, "promotional-offer"),
                             "library": decoded(library, public_key, "promotional-offer")}

    introductory = spec["introductory"]
    creator = IntroductoryOfferEligibilitySignatureCreator(pem, spec["keyId"], spec["issuerId"], spec["bundleId"])
    library = creator.create_signature(introductory["productId"], introductory["allowIntroductoryOffer"],
                                       introductory["transactionId"])
    audience = "introductory-offer-eligibility"
    result["introductory"] = {"coffer": decoded(introductory["coffer"], public_key, audience),
                              "library": decoded(library, public_key, audience)}

    v1 = spec["v1"]
    creator = PromotionalOfferSignatureCreator(pem, spec["keyId"], spec["bundleId"])
    capturing = Capturing(private_key)
    creator._signing_key = capturing
    library = creator.create_signature(v1["productId"], v1["offerIdentifier"], v1["appAccountToken"],
                                       uuid.UUID(v1["nonce"]), v1["timestamp"])

    def verifies(signature: str) -> bool:
        try:
            public_key.verify(base64.b64decode(signature, validate=True), capturing.signed, ECDSA(SHA256()))
            return True
        except (InvalidSignature, ValueError):
            return False

    result["v1"] = {"verified": verifies(v1["coffer"]), "libraryVerified": verifies(library)}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The schemas of Coffer's OpenAPI document (components.schemas) and the helpers that write them, for
scripts/openapi.py. Edit here, then run scripts/openapi.py.
"""

def ref(name):
    return {"$ref": f"#/components/schemas/{name}"}

def obj(props, required=None, description=None):
    schema = {"type": "object", "properties": props, "additionalProperties": False}
    schema["required"] = required if required is not None else list(props)
    if description:
        schema["description"] = description
    return schema

S = lambda d=None, **k: {"type": "string", **({"description": d} if d else {}), **k}
I = lambda d=None, **k: {"type": "integer", "format": "int64", **({"description": d} if d else {}), **k}
DATE = {"type": "string", "format": "date-time"}
NULLABLE = lambda schema: {"anyOf": [schema, {"type": "null"}]}

schemas = {
    "Error": obj({"error": obj({"code": S("A stable code: unauthorized, wrong-user, not-found, bad-request, "
                                         "body-too-large, version-conflict, insufficient-balance, balance-changed, key-reused, "
                                         "device-wallet, refused, unknown-product, internal, or Apple's "
                                         "verification status (VERIFICATION_FAILURE, INVALID_CHAIN, ...)"),
                                   "message": S("For people")})}),
    "CreateUserResponse": obj({"supportId": S("`_` and 12 lowercase hex characters", pattern="^_[0-9a-f]{12}$"),
                               "token": S("The bearer token; shown once, stored hashed"),
                               "appAccountToken": S("Pass to StoreKit as the purchase's appAccountToken",
                                                    format="uuid")}),
    "Backup": obj({"value": I(), "lastUpdated": DATE, "version": I(),
                   "writer": S(enum=["device", "admin"]),
                   "deficit": I("What refunds left owed, backed up with the balance"),
                   "applied": {"type": "array", "items": S(), "description":
                               "The device wallet's mailbox keys the balance holds (absent: none)"},
                   "currencies": {"type": "object", "additionalProperties": ref("BackupCurrency"),
                                  "description": "The other currencies' wallets by catalog id, those holding "
                                                 "something (absent: none)"}},
                  required=["value", "lastUpdated", "version", "writer", "deficit"]),
    "BackupCurrency": obj({"value": I(minimum=0, maximum=1 << 52),
                           "deficit": I("0 when absent", minimum=0, maximum=1 << 52)},
                          required=["value"]),
    "MeResponse": obj({"supportId": S(), "balance": I(), "deficit": I(),
                       "entitlements": {"type": "array", "items": S()}, "backup": NULLABLE(ref("Backup")),
                       "wallet": S("Who keeps the balance (the server's wallet setting): an app configured for "
                                   "the other wallet stops", enum=["server", "device"]),
                       "consent": ref("ConsentResponse"),
                       "grantedEntitlements": {"type": "array", "items": ref("GrantedEntitlement"),
                                               "description": "Entitlements support granted for a time that unlock "
                                                              "now, with their ends"},
                       "balances": {"type": "object", "additionalProperties": I(),
                                    "description": "The balance of each currency the catalog lists, by id "
                                                   "(balance is the default currency's)"},
                       "deficits": {"type": "object", "additionalProperties": I(),
                                    "description": "What refunds could not take back, of each currency, by id"},
                       "expiring": {"type": "array", "description": "Credits that expire (support's grants with an "
                                    "end), what is left of each, soonest to end first; in balances too, and spent "
                                    "first",
                                    "items": obj({"currency": S("The currency's catalog id"), "amount": I(),
                                                  "expiresAt": DATE})}},
                      required=["supportId", "balance", "deficit", "entitlements", "backup", "wallet"]),
    "ConsentRequest": obj({"customerConsented": {"type": "boolean", "description":
                                                 "Whether the customer consents to share consumption data with "
                                                 "Apple when they ask for a refund; false withdraws it"}},
                          required=["customerConsented"]),
    "ConsentResponse": obj({"customerConsented": {"type": "boolean"}, "at": S(format="date-time")},
                           required=["customerConsented", "at"],
                           description="The customer's answer, absent until they answered: the app asks once"),
    "RefundRequestView": obj({"requestedAt": S(format="date-time"), "transactionId": S(),
                              "sent": {"type": "boolean", "description": "Whether Send Consumption Information "
                                                                         "was sent and Apple took it"},
                              "answer": S("What was sent, Apple's JSON"),
                              "reason": S("How the answer was reached, or why nothing was sent")},
                             required=["requestedAt", "transactionId", "sent", "reason"]),
    "CatalogProduct": obj({"id": S(), "kind": S(enum=["consumable", "nonConsumable", "autoRenewable",
                                                      "nonRenewing"]),
                           "credits": I("Credits of the default currency per unit", minimum=0),
                           "otherCredits": {"type": "object", "additionalProperties": I(minimum=0),
                                            "description": "Credits of the catalog's other currencies per unit, by "
                                                           "currency id (absent: none)"},
                           "entitlements": {"type": "array", "items": S()},
                           "group": S("The subscription group (auto-renewable products)"),
                           "durationDays": I("A non-renewing subscription's length", minimum=1),
                           "name": S("The name support and the app show"),
                           "offers": {"type": "array", "items": S(), "description":
                                      "An auto-renewable subscription's promotional offers Coffer signs; absent: "
                                      "any the app asks for"},
                           "allowance": {"type": "object", "additionalProperties": I(minimum=0),
                                         "description": "An auto-renewable subscription's allowance: the credits "
                                                        "each paid period gives, by currency id (the default "
                                                        "currency's too), ending with the period (absent: none)"}},
                          required=["id", "kind", "credits", "entitlements"]),
    "EntitlementGrantRequest": obj({"supportId": S(), "entitlement": S("One the catalog's products or loyalty "
                                                                      "rules unlock"),
                                    "days": I("1 to 3650", minimum=1, maximum=3650), "reason": S()}),
    "EntitlementGrantView": obj({"id": S(format="uuid"), "supportId": S(), "entitlement": S(),
                                 "startsAt": S(format="date-time"), "endsAt": S(format="date-time"), "reason": S(),
                                 "createdBy": S(), "cancelledAt": S(format="date-time"), "cancelledBy": S(),
                                 "active": {"type": "boolean"}},
                                required=["id", "supportId", "entitlement", "startsAt", "endsAt", "reason",
                                          "createdBy", "active"]),
    "DiscrepancyView": obj({"supportId": S(), "kind": {"type": "string", "enum": [
                                "missing-purchase", "missing-refund", "missing-reversal", "unknown-to-apple",
                                "differs"]},
                            "words": S(), "transactionId": S(), "productId": S(),
                            "detail": S("What differs, or empty"), "foundAt": S(format="date-time"),
                            "repairedAt": S("When it was applied through the ledger; absent while it is support's "
                                            "to look at", format="date-time")},
                           required=["supportId", "kind", "words", "transactionId", "productId", "detail",
                                     "foundAt"]),
    "GrantedEntitlement": obj({"entitlement": S(), "endsAt": S(format="date-time")}),
    "ExtendSubscriptionRequest": obj({"days": I("1 to 90", minimum=1, maximum=90),
                                      "reasonCode": I("Apple's: 0 undeclared, 1 customer satisfaction, 2 other, "
                                                      "3 service issue or outage", minimum=0, maximum=3),
                                      "reason": S("Support's words; the reason code's when absent"),
                                      "productId": S("Only this subscription's group")},
                                     required=["days", "reasonCode"]),
    "SubscriptionExtensionView": obj({"originalTransactionId": S(), "productId": S(),
                                      "extended": {"type": "boolean"}, "effectiveDate": S(format="date-time"),
                                      "error": S("Apple's refusal")},
                                     required=["originalTransactionId", "productId", "extended"]),
    "ExtendSubscriptionResponse": obj({"supportId": S(), "days": I(), "reasonCode": I(),
                                       "extensions": {"type": "array", "items": ref("SubscriptionExtensionView")}}),
    "MassExtensionRequest": obj({"productId": S(), "days": I("1 to 90", minimum=1, maximum=90),
                                 "reasonCode": I(minimum=0, maximum=3), "reason": S(),
                                 "storefronts": {"type": "array", "items": S(pattern="^[A-Z]{3}$")}},
                                required=["productId", "days", "reasonCode"]),
    "MassExtensionView": obj({"requestIdentifier": S(), "productId": S(), "days": I(), "reasonCode": I(),
                              "requestedBy": S(), "requestedAt": S(format="date-time"),
                              "complete": {"type": "boolean"}, "completeDate": S(format="date-time"),
                              "succeededCount": I(), "failedCount": I()},
                             required=["requestIdentifier", "productId", "days", "reasonCode", "requestedBy",
                                       "requestedAt"]),
    "MassExtensionsResponse": obj({"extensions": {"type": "array", "items": ref("MassExtensionView")}}),
    "OfferSignatureRequest": obj({"productId": S("An auto-renewable subscription of the catalog"),
                                  "offerId": S("The promotional offer's identifier in App Store Connect",
                                               pattern="^[A-Za-z0-9._-]{1,100}$")}),
    "PromotionalOfferSignatureV1": obj({"encodedSignature": S("DER ECDSA P-256 SHA-256, base64"),
                                        "productId": S(), "nonce": S(format="uuid"),
                                        "timestamp": I("Milliseconds since 1970"), "keyId": S(),
                                        "offerIdentifier": S(),
                                        "appAccountToken": S("Lowercase; the purchase passes the same",
                                                             format="uuid")},
                                       required=["encodedSignature", "productId", "nonce", "timestamp", "keyId",
                                                 "offerIdentifier"]),
    "OfferSignatureResponse": obj({"productId": S(), "offerId": S(),
                                   "transactionId": S("The customer's appTransactionId, else their latest "
                                                      "transaction: the signatures serve them alone"),
                                   "promotionalOfferSignatureV2": S("Compact JWS for "
                                                                    "Product.PurchaseOption.promotionalOffer(_:compactJWS:)"),
                                   "promotionalOfferSignatureV1": ref("PromotionalOfferSignatureV1")}),
    "IntroductoryOfferRequest": obj({"productId": S("An auto-renewable subscription of the catalog")}),
    "IntroductoryOfferResponse": obj({"productId": S(), "allowIntroductoryOffer": {"type": "boolean"},
                                      "transactionId": S("The transaction the signature is tied to"),
                                      "signature": S("Compact JWS for "
                                                     "Product.PurchaseOption.introductoryOfferEligibility(compactJWS:); "
                                                     "absent when Coffer signs nothing (a yes for a customer "
                                                     "without an Apple account): StoreKit's own rule applies")},
                                     required=["productId", "allowIntroductoryOffer"]),
    "LoyaltyRule": obj({"group": S(), "periods": I(minimum=1), "entitlements": {"type": "array", "items": S()}}),
    "Catalog": obj({"products": {"type": "array", "items": ref("CatalogProduct")},
                    "loyalty": {"type": "array", "items": ref("LoyaltyRule")},
                    "currencies": {"type": "array", "items": obj({"id": S(), "name": S()}),
                                   "description": "The catalog's currencies, the default first (absent: one, "
                                                  "credits)"}},
                   required=["products", "loyalty"]),
    "PurchaseRecord": obj({"transactionId": S(), "productId": S(),
                           "status": S(enum=["pending", "delivered", "revoked", "restored"]),
                           "credits": I(), "deliveredAt": DATE,
                           "environment": S("Apple's data environment, when known", enum=["Sandbox", "Production"]),
                           "purchaseDate": DATE,
                           "deliveredBeforeCoffer": {"type": "boolean", "description":
                                                     "true for a purchase the app delivered before it used Coffer"}},
                          required=["transactionId", "productId", "status"]),
    "PurchasesResponse": obj({"purchases": {"type": "array", "items": ref("PurchaseRecord")}}),
    "PushTokenRequest": obj({"token": S("The APNs device token, hex (16 to 100 bytes)"),
                             "environment": S("The APNs the token belongs to; default production",
                                              enum=["sandbox", "production"])},
                            required=["token"]),
    "VerifyReportRequest": obj({"items": {"type": "array", "maxItems": 500, "items": obj({
        "transactionId": S("1 to 64 printable ASCII characters"), "productId": S("1 to 200 printable ASCII characters"),
        "finished": {"type": "boolean"}, "verified": {"type": "boolean"},
        "verdict": S(enum=["deliverNow", "alreadyRecorded", "finishOnly", "couldNotBeVerified"])})}}),
    "VerifyReportResponse": obj({"items": I("The items kept")}),
    "MergeCodeResponse": obj({"code": S("Eight characters shown as XXXX-XXXX: the customer reads it to support"),
                              "expiresAt": DATE,
                              "appleAccount": {"type": "boolean",
                                               "description": "Whether the customer is an Apple account's: the "
                                               "code then lets support move another install into this account "
                                               "(intoCode); otherwise it moves this install (code)"}}),
    "MilestoneRequest": obj({"name": S("The milestone, e.g. loyalty:pro (1 to 64 of a-z, 0-9, '.', '_', '-', ':')")}),
    "MilestoneResponse": obj({"name": S(), "first": {"type": "boolean",
                                                     "description": "Whether this is the first time for the customer"}}),
    "CloudKitClaimRequest": obj({"userRecordName": S("The customer's CloudKit user record name "
                                                     "(CKContainer.userRecordID().recordName)",
                                                     minLength=1, maxLength=255),
                                 "claimKey": S("A random secret this install chose and kept before asking",
                                               minLength=16, maxLength=128),
                                 "signedAppTransaction": S("StoreKit's AppTransaction, signed (JWS), when the app "
                                                           "registers by Apple account: the customer becomes that "
                                                           "account's unless it has one already")},
                                required=["userRecordName", "claimKey"]),
    "CreateUserRequest": obj({"signedAppTransaction": S("StoreKit's AppTransaction.shared, signed (JWS)")},
                             required=[]),
    "TransactionRequest": obj({"signedTransaction": S("A StoreKit 2 signed transaction (JWS)"),
                               "previouslyDelivered": {
                                   "type": "boolean",
                                   "description": "true: the app delivered it before it used Coffer; recorded "
                                                  "without credits (outcome recorded), a refund takes them back"}},
                              required=["signedTransaction"]),
    "TransactionResponse": obj({"outcome": S(enum=["delivered", "duplicate", "revoked", "recorded"]),
                                "transactionId": S(),
                                "credits": I(), "balance": I(),
                                "entitlements": {"type": "array", "items": S()}}),
    "BackupRequest": obj({"value": I(minimum=0, maximum=1 << 52), "device": S("A name for the writing device"),
                          "deficit": I("The deficit to back up with the balance; 0 when absent", minimum=0,
                                       maximum=1 << 52),
                          "applied": {"type": "array", "items": S(maxLength=200), "maxItems": 1000,
                                      "description": "The mailbox keys (GET /v1/me/adjustments) this balance holds; "
                                                     "the server keeps those of the customer's mailbox"},
                          "currencies": {"type": "object", "additionalProperties": ref("BackupCurrency"),
                                         "description": "The catalog's other currencies than the default by id: each "
                                                        "named is set (0 clears it), one left out keeps what the "
                                                        "server holds; an id the catalog does not list is refused "
                                                        "(400)"}},
                         required=["value"]),
    "BackupConflict": obj({"error": obj({"code": S(), "message": S()}), "current": NULLABLE(ref("Backup"))}),
    "Grant": obj({"id": S(format="uuid"), "credits": I(), "reason": S(), "createdAt": DATE,
                  "claimedAt": NULLABLE(DATE), "cancelledAt": NULLABLE(DATE),
                  "currency": S("The currency of the credits by its catalog id, when not the default"),
                  "expiresInDays": I("For credits that expire: how many days after the claim they end")},
                 required=["id", "credits", "reason", "createdAt"]),
    "GrantsResponse": obj({"grants": {"type": "array", "items": ref("Grant")}}),
    "ClaimResponse": obj({"grant": ref("Grant"), "balance": I()}),
    "SpendRequest": obj({"amount": I(minimum=1),
                         "currency": S("The currency to spend, by its catalog id; absent, the default currency")},
                        required=["amount"]),
    "BalanceResponse": obj({"balance": I()}),
    "Adjustment": obj({"key": S("Apply each key once, e.g. revocation:2000000123, or gems:revocation:2000000123 "
                                "for another currency"),
                       "kind": S(enum=["revocation", "reversal", "adjustment", "merge"]),
                       "amount": I("Credits to add; negative to take back"), "transactionId": S(),
                       "productId": S(), "reason": S(), "createdAt": DATE,
                       "currency": S("The currency by catalog id when not the default (only with ?currencies=1)")},
                      required=["key", "kind", "amount", "createdAt"]),
    "AdjustmentsResponse": obj({"adjustments": {"type": "array", "items": ref("Adjustment")}}),
    "ServerEvent": obj({"type": S(enum=["grant", "adjustment", "backup", "entitlements", "consent-rescinded"]),
                        "key": S()},
                       required=["type"]),
    "ReceiptVerifyRequest": obj({"receiptData": S("The legacy app receipt, base64")}),
    "ReceiptTransaction": obj({"transactionId": S(), "productId": S(),
                               "outcome": S("delivered, duplicate, revoked, wrong-user or unknown-product")}),
    "ReceiptVerifyResponse": obj({"transactions": {"type": "array", "items": ref("ReceiptTransaction")},
                                  "balance": I(), "entitlements": {"type": "array", "items": S()}}),
    "NotificationRequest": obj({"signedPayload": S("App Store Server Notification V2 (JWS)")}),
    "NotificationResponse": obj({"outcome": S(enum=["applied", "duplicate", "unattributed", "logged"])}),
    # The admin API (signed requests).
    "BackupView": obj({"value": I(), "lastUpdated": DATE, "version": I(), "writer": S(enum=["device", "admin"]),
                       "writerName": S(),
                       "currencies": {"type": "object", "additionalProperties": I(),
                                      "description": "The other currencies' balances backed up, by catalog id "
                                                     "(absent: none)"}},
                      required=["value", "lastUpdated", "version", "writer", "writerName"]),
    "UserSummary": obj({"supportId": S(), "createdAt": DATE, "balance": I(), "deficit": I(),
                        "backup": ref("BackupView"),
                        "deletedAt": {**DATE, "description": "When support deleted the customer at their request"}},
                       required=["supportId", "createdAt", "balance", "deficit"]),
    "DeletionView": obj({"supportId": S(), "closedBalance": I("The balance the closing ledger entry took to zero"),
                         "closedDeficit": I("The deficit it took to zero"),
                         "users": I("User records anonymised: the customer and the installs merged into them"),
                         "cancelledGrants": I("Pending grants cancelled")}),
    "ReconciliationItem": obj({"transaction": obj({"transactionId": S(), "productId": S(),
                                                   "isFinished": {"type": "boolean"},
                                                   "isVerified": {"type": "boolean"}}),
                               "verdict": S(enum=["deliverNow", "alreadyRecorded", "finishOnly",
                                                  "couldNotBeVerified"])}),
    "VerifyReportView": obj({"reportedAt": DATE, "items": {"type": "array", "items": ref("ReconciliationItem")}}),
    "UserSearchResult": obj({"users": {"type": "array", "items": ref("UserSummary")},
                             "matchedBy": S(enum=["all", "support-id", "transaction-id", "order-id",
                                                  "cloudkit-record-name", "nothing"]),
                             "page": I(), "hasMore": {"type": "boolean"}}),
    "GrantView": obj({"id": S(format="uuid"), "supportId": S(), "credits": I(), "reason": S(), "createdBy": S(),
                      "createdAt": DATE, "claimedAt": DATE, "cancelledAt": DATE, "cancelledBy": S(),
                      "status": S(enum=["pending", "claimed", "cancelled"]),
                      "currency": S("The currency of the credits by its catalog id, when not the default"),
                      "expiresInDays": I("For credits that expire: how many days after the claim they end")},
                     required=["id", "supportId", "credits", "reason", "createdBy", "createdAt", "status"]),
    "TimelineItem": obj({"at": DATE, "kind": S(enum=["purchase", "refund", "reversal", "grant-created",
                                                     "grant-claimed", "grant-cancelled", "adjustment", "spend", "backup", "merge", "admin",
                                                     "expiry", "allowance"]),
                         "summary": S(), "credits": I(), "balanceAfter": I(), "reference": S(),
                         "dataEnvironment": S("The environment Apple's data came from (purchases, refunds, "
                                              "reversals): Sandbox on a Production server marks App Review and "
                                              "TestFlight; Xcode marks StoreKit testing in Xcode",
                                              enum=["Sandbox", "Production", "Xcode"]),
                         "currency": S("The currency of a ledger entry of another currency than the default, by "
                                       "its catalog id (its summary names it)")},
                        required=["at", "kind", "summary"]),
    "SubscriptionSummary": obj({"group": S(), "product": S("The catalog's name for the current period's product"),
                             "state": S(enum=["active", "expiring", "in grace", "in billing retry", "expired",
                                              "refunded"]),
                             "startedAt": DATE, "expiresAt": DATE, "graceUntil": DATE,
                             "renewsInto": S("The product it renews into, when another"),
                             "originalTransactionId": S(), "dataEnvironment": S(enum=["Sandbox", "Production", "Xcode"]),
                             "paidPeriods": I(),
                             "upgradedFrom": S("The product the current period was upgraded from"),
                             "upgradedAt": DATE},
                            required=["group", "product", "state", "originalTransactionId", "paidPeriods"]),
    "PurchaseView": obj({"transactionId": S(), "productId": S(), "product": S("The catalog's name, or the id"),
                         "purchaseDate": DATE, "quantity": I(),
                         "price": I("What Apple's data says the customer paid, in milliunits of currency"),
                         "currency": S("ISO 4217"), "storefront": S("ISO 3166-1 alpha-3"),
                         "dataEnvironment": S(enum=["Sandbox", "Production", "Xcode"]), "familyShared": {"type": "boolean"},
                         "status": S(enum=["pending", "delivered", "revoked", "restored"]),
                         "credits": I("Credits it delivered"), "refundedAt": DATE,
                         "refundReason": I("Apple's revocationReason while refunded: 0 another reason, 1 an issue "
                                           "in the app")},
                        required=["transactionId", "productId", "product", "purchaseDate", "quantity",
                                  "familyShared", "status"]),
    "UserDetail": obj({"user": ref("UserSummary"), "environment": S(enum=["Sandbox", "Production"]),
                       "walletMode": S(enum=["device", "server"]), "entitlements": {"type": "array", "items": S()},
                       "grants": {"type": "array", "items": ref("GrantView")},
                       "timeline": {"type": "array", "items": ref("TimelineItem")},
                       "balances": {"type": "object", "additionalProperties": I(),
                                    "description": "The ledger's balance of each currency the catalog lists and any "
                                                   "other the customer holds, by id (user.balance is the default "
                                                   "currency's)"},
                       "deficits": {"type": "object", "additionalProperties": I(),
                                    "description": "The deficit of each currency, by id"},
                       "appleAccount": obj({"appTransactionId": S(),
                                            "environment": S(enum=["Sandbox", "Production"])},
                                           description="The Apple account the customer is; absent for an "
                                                       "anonymous install"),
                       "mergedInto": S("The Support ID this anonymous customer was merged into"),
                       "sandboxMarked": {"type": "boolean", "description":
                                         "Whether the customer's data is Apple's Sandbox (App Review, TestFlight, "
                                         "sandbox testers): their AppTransaction says Sandbox, or a purchase of "
                                         "theirs is Sandbox data"},
                       "subscriptions": {"type": "array", "items": ref("SubscriptionSummary")},
                       "purchases": {"type": "array", "items": ref("PurchaseView"),
                                     "description": "Newest first"},
                       "verifyReport": ref("VerifyReportView"),
                       "refundRequests": {"type": "array", "items": ref("RefundRequestView"),
                                          "description": "Apple's refund requests and what was answered, latest "
                                                         "first"},
                       "consent": ref("ConsentResponse"),
                       "entitlementGrants": {"type": "array", "items": ref("EntitlementGrantView")},
                       "discrepancies": {"type": "array", "items": ref("DiscrepancyView"),
                                         "description": "What the latest reconciliation with Apple's history found "
                                                        "for the customer, by transaction"},
                       "appTransaction": ref("AppTransactionView")},
                      required=["user", "environment", "walletMode", "entitlements", "grants", "timeline"]),
    "AppTransactionView": obj({"appTransactionId": S(), "originalPurchaseDate": S(format="date-time"),
                               "originalApplicationVersion": S(), "applicationVersion": S(),
                               "originalPlatform": S(), "environment": S()},
                              required=["appTransactionId"],
                              description="Apple's app transaction of an Apple account customer (Get App "
                                          "Transaction Info), when the server has an App Store Server API key"),
    "GrantRequest": obj({"supportId": S(), "credits": I(minimum=1), "reason": S(maxLength=500),
                         "id": S("The grant's id, chosen by the caller: the same request again (after a lost "
                                 "answer) answers this grant, never a second", format="uuid"),
                         "currency": S("The currency of the credits by its catalog id; absent, the default. "
                                       "Another currency needs the server wallet"),
                         "expiresInDays": I("The credits expire this many days after the app claims them (the "
                                            "server wallet): spent before credits that never expire, and what is "
                                            "left then leaves the balance by its expiry:<grant id> entry",
                                            minimum=1, maximum=3650)},
                        required=["supportId", "credits", "reason"]),
    "BalanceRequest": obj({"balance": I(minimum=0), "reason": S(maxLength=500),
                           "expected": I("The balance support saw (the server wallet's balance, or the device "
                                         "wallet's backed-up balance): when given, the edit is refused with 409 "
                                         "balance-changed, and nothing changes, unless the balance is still this",
                                         minimum=0),
                           "currency": S("The currency whose balance to set, by its catalog id; absent, the "
                                         "default. Another currency needs the server wallet")},
                          required=["balance", "reason"]),
    "BalanceChange": obj({"supportId": S(), "before": I(), "after": I(), "via": S(enum=["ledger", "backup"]),
                          "currency": S("The currency whose balance was set, when not the default")},
                         required=["supportId", "before", "after", "via"]),
    "DeletedGrants": obj({"deleted": I()}),
    "MergeRequest": obj({"from": S("The anonymous user's Support ID"),
                         "into": S("The Apple account customer's Support ID"),
                         "code": S("The merge code the merged customer's app shows (POST /v1/me/merge-code); "
                                   "or overrideReason"),
                         "overrideReason": S("Without a code: an owner's override, and why (audited as "
                                             "user.merge.override)"),
                         "intoCode": S("A merge code an install on the account shows: the account owner's word "
                                       "that the merged installs sign in as the account's customer (without it "
                                       "their tokens end and they register again)")},
                        required=["from", "into"]),
    "MergeResponse": obj({"from": S(), "into": S(), "movedBalance": I(), "movedDeficit": I(), "balance": I(),
                          "deficit": I(), "receipts": I(), "grants": I(),
                          "tokensMoved": I("Device tokens of installs that registered themselves, moved with "
                                           "intoCode: they sign in as the account customer from now on"),
                          "tokensEnded": I("Device tokens of installs that registered themselves, ended because "
                                           "no intoCode was given: those installs register again"),
                          "claimTokensEnded": I("Device tokens a CloudKit claim issued to the merged customer: "
                                                "ended, never moved")}),
    "AuditEvent": obj({"id": S(format="uuid"), "environment": S(), "actor": S(), "action": S(), "subject": S(),
                       "before": S("JSON"), "after": S("JSON"), "at": DATE},
                      required=["id", "environment", "actor", "action", "subject", "at"]),
    "DayFigures": obj({"day": DATE, "purchases": I(), "refunds": I()}),
    "DashboardFigures": obj({"users": I(), "pendingGrants": I(), "claimedGrants": I(), "purchases": I(),
                             "refunds": I(), "usersInDeficit": I(), "outstandingDeficit": I(),
                             "days": {"type": "array", "items": ref("DayFigures")},
                             "otherEnvironmentPurchases": I(
                                 description="Purchases made with the other environment's data (App Review and "
                                             "TestFlight on a Production server), left out of the other figures"),
                             "revenue": {"type": "array", "items": ref("MoneyFigures"),
                                         "description": "What Apple's prices say was paid for purchases delivered in "
                                                        "the window, per UTC day, product and currency"},
                             "refunded": {"type": "array", "items": ref("MoneyFigures"),
                                          "description": "What the refunds recorded in the window had paid"},
                             "activeSubscriptions": I("Subscriptions in a period now and not refunded"),
                             "loyaltyLifetimes": {"type": "array", "items": ref("GroupCount"),
                                                  "description": "Customers who earned each group's loyalty "
                                                                 "lifetime"},
                             "otherEnvironmentCustomers": I("Customers whose own AppTransaction says the other "
                                                            "environment (App Review, TestFlight on Production)"),
                             "otherEnvironmentCredits": I("Credits delivered by the other environment's purchases, "
                                                          "not refunded"),
                             "otherEnvironmentSubscriptions": I("The other environment's subscriptions in a period "
                                                                "now and not refunded"),
                             "currencyDeficits": {"type": "array", "items": ref("CurrencyDeficit"),
                                                  "description": "The catalog's other currencies' deficits (the "
                                                                 "default currency's are usersInDeficit and "
                                                                 "outstandingDeficit), each currency some customer "
                                                                 "owes"}},
                            required=["users", "pendingGrants", "claimedGrants", "purchases", "refunds",
                                      "usersInDeficit", "outstandingDeficit", "days", "otherEnvironmentPurchases",
                                      "revenue", "refunded", "activeSubscriptions", "loyaltyLifetimes",
                                      "otherEnvironmentCustomers", "otherEnvironmentCredits",
                                      "otherEnvironmentSubscriptions", "currencyDeficits"]),
    "CurrencyDeficit": obj({"currency": S("The currency's catalog id"), "usersInDeficit": I(),
                            "outstandingDeficit": I()}),
    "MoneyFigures": obj({"day": DATE, "productId": S(), "currency": S("ISO 4217"), "count": I(),
                         "amount": I("Prices summed, in milliunits of the currency")}),
    "GroupCount": obj({"group": S(), "count": I()}),
}

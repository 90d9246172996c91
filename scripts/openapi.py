#!/usr/bin/env python3
"""Writes Sources/CofferServer/openapi.json, the OpenAPI 3.1 document of Coffer's HTTP API.

The document is kept in the repository and served at /openapi.json; a test checks that every route the
server has is in it and every path in it is a route. Edit this script, not the JSON, then run it.
"""
import json
import os

from openapi_schemas import DATE, I, NULLABLE, S, obj, ref, schemas


def json_body(name):
    return {"required": True, "content": {"application/json": {"schema": ref(name)}}}

def answer(description, name=None, headers=None):
    """A response: `name` is a schema's name under components/schemas, or a schema itself (a list, ...)."""
    response = {"description": description}
    if name:
        response["content"] = {"application/json": {"schema": ref(name) if isinstance(name, str) else name}}
    if headers:
        response["headers"] = headers
    return response

ERR = lambda d: answer(d, "Error")
AUTH = [{"bearer": []}]
SIGNED = [{"adminKeyId": [], "adminDate": [], "adminSignature": []}]
ENV = {"name": "environment", "in": "query", "required": False,
       "description": "Sandbox or Production; the server's own by default",
       "schema": {"type": "string", "enum": ["Sandbox", "Production"]}}
SID = {"name": "supportId", "in": "path", "required": True, "schema": {"type": "string"}}
REFUSED = ERR("Not signed, unknown or revoked key, bad signature, stale date or replay (the code says which)")

BAD_ENVIRONMENT = ("an environment other than Sandbox or Production, or a write that names none "
                   "(environment-required)")

def admin(summary, operation, ok, name, parameters=(), body=None, errors=None):
    errors = dict(errors or {})
    # Every admin operation reads ?environment=, and every write must name it.
    specific = errors.get("400", {}).get("description")
    errors["400"] = ERR(f"{specific}; or {BAD_ENVIRONMENT}" if specific else f"Bad environment: {BAD_ENVIRONMENT}")
    operation_object = {"summary": summary, "operationId": operation, "security": SIGNED,
                        "parameters": [ENV, *parameters],
                        "responses": {ok: answer("Done", name), "401": REFUSED, **errors}}
    if body:
        operation_object["requestBody"] = json_body(body)
    return operation_object
ETAG = {"ETag": {"description": "The backup's version", "schema": {"type": "string"}}}

paths = {
    "/v1/users": {"post": {
        "summary": "Create a user, or register this device to its Apple account's user", "operationId": "createUser",
        "security": [],
        "description": "With no body or `{}`: a new anonymous user (found again only by its token). With "
                       "`{\"signedAppTransaction\": JWS}` (StoreKit's AppTransaction): verified like any of "
                       "Apple's signed data (chain to Apple's root, bundle id, app Apple id, environment; a "
                       "Production server takes Sandbox ones from App Review and TestFlight unless "
                       "sandbox.in.production is off) and at most app.transaction.max.age seconds old (its "
                       "receiptCreationDate). The user is keyed by the server's environment, the AppTransaction's "
                       "environment and its appTransactionId: the first call for an account answers 201, later "
                       "calls from other devices or reinstalls 200, each with the account's Support ID and "
                       "appAccountToken and a token of the device's own (all valid together; "
                       "DELETE /v1/me/token revokes one). A copied AppTransaction registers a device to the "
                       "account for as long as it is young enough: keep it off logs.",
        "requestBody": {"required": False,
                        "content": {"application/json": {"schema": ref("CreateUserRequest")}}},
        "responses": {"201": answer("Created; the token is shown once", "CreateUserResponse"),
                      "200": answer("Another device of an Apple account Coffer knows: the account's ids and this "
                                    "device's token, shown once", "CreateUserResponse"),
                      "400": ERR("Not JSON, or signedAppTransaction is not a string"),
                      "413": ERR("Body too large"),
                      "422": ERR("The AppTransaction is refused: Apple's verification status as the code "
                                 "(INVALID_CHAIN, INVALID_APP_IDENTIFIER, INVALID_ENVIRONMENT, "
                                 "VERIFICATION_FAILURE), or stale-app-transaction (older than "
                                 "app.transaction.max.age: ask StoreKit for a fresh one with "
                                 "AppTransaction.refresh())"),
                      "429": ERR("Too many new users from this address (rate-limited); "
                                 "see Retry-After"),
                      "503": ERR("Verification could not be completed now: try again")}}},
    "/v1/users/cloudkit": {"post": {
        "summary": "Claim the customer `coffer import cloudkit` brought in, by their CloudKit user record name",
        "operationId": "claimCloudKitCustomer",
        "security": [],
        "description": "Moving in from a CloudKit setup (docs/cloudkit.md): the app names the CloudKit user record "
                       "name it reads on the device and a random claimKey it kept before asking. The first claim "
                       "keeps the customer: it answers the customer's Support ID and appAccountToken with a token "
                       "of this install's own; the same claimKey claims again (an answer lost on the way); any "
                       "other key is refused with 409 (and the same key a day after the first claim). With "
                       "signedAppTransaction (verified like POST /v1/users's), the customer becomes that Apple "
                       "account's when neither has the other yet, so the account's other devices register to it. "
                       "A customer support merged since answers as the customer it was merged into. "
                       "Rate-limited per address like POST /v1/users.",
        "requestBody": {"required": True,
                        "content": {"application/json": {"schema": ref("CloudKitClaimRequest")}}},
        "responses": {"200": answer("Claimed; the token is shown once", "CreateUserResponse"),
                      "400": ERR("Not JSON, a userRecordName that is not 1 to 255 printable ASCII characters, or a "
                                 "claimKey that is not 16 to 128"),
                      "404": ERR("No customer was imported from CloudKit with this name (or it was deleted at the "
                                 "customer's request): register as new"),
                      "409": ERR("already-claimed: another install claimed this customer; register as new (support "
                                 "can merge the two)"),
                      "422": ERR("The signedAppTransaction is refused (Apple's verification status, or "
                                 "stale-app-transaction): nothing is used up; ask again with a fresh one, or without"),
                      "413": ERR("Body too large"),
                      "429": ERR("Too many claims from this address (rate-limited); see Retry-After"),
                      "503": ERR("The database did not answer in time, or the customer's import is not finished "
                                 "(try-again): try again with the same claimKey")}}},
    "/v1/me/purchases": {"get": {
        "summary": "Every purchase the server recorded for the customer, from any of its devices, oldest first",
        "operationId": "purchases",
        "responses": {"200": answer("The purchases", "PurchasesResponse"), "401": ERR("No valid token")}}},
    "/v1/me/token": {"delete": {
        "summary": "Sign this device out: its token stops working, the account's other devices keep theirs",
        "operationId": "revokeToken",
        "responses": {"204": {"description": "Revoked (other instances honour it for at most 60 s more)"},
                      "401": ERR("No valid token")}}},
    "/v1/me/push-token": {
        "put": {"summary": "Register this device's APNs token: the server sends it a background push when support "
                           "grants or edits a balance, or a refund touches the customer (when an APNs key is set)",
                "operationId": "putPushToken", "requestBody": json_body("PushTokenRequest"),
                "responses": {"204": {"description": "Registered"},
                              "400": ERR("Not a device token, or an unknown environment"),
                              "401": ERR("No valid token")}},
        "delete": {"summary": "Forget this device's APNs token", "operationId": "deletePushToken",
                   "requestBody": json_body("PushTokenRequest"),
                   "responses": {"204": {"description": "Forgotten"}, "400": ERR("Not a device token"),
                                 "401": ERR("No valid token"), "404": ERR("The user has no such push token")}}},
    "/v1/me/milestones": {"post": {
        "summary": "Record a milestone once per customer (the loyalty lifetime earned): the app celebrates when "
                   "first is true, on whichever device asks first",
        "operationId": "recordMilestone", "requestBody": json_body("MilestoneRequest"),
        "responses": {"200": answer("Recorded", "MilestoneResponse"), "400": ERR("Not a milestone name"),
                      "422": ERR("milestone-not-earned: not a loyalty lifetime the customer earned by the server's "
                                 "records"),
                      "401": ERR("No valid token")}}},
    "/v1/me/merge-code": {"post": {
        "summary": "A one-time code (15 minutes) the customer reads to support, who types it in to merge this customer "
                   "into their Apple account's (replaces the code before)",
        "operationId": "mergeCode",
        "responses": {"201": answer("The code", "MergeCodeResponse"), "401": ERR("No valid token")}}},
    "/v1/me/verify-report": {"put": {
        "summary": "The app's last Verify Purchases results, for support's customer page (replaces the one before)",
        "operationId": "saveVerifyReport", "requestBody": json_body("VerifyReportRequest"),
        "responses": {"200": answer("Kept", "VerifyReportResponse"),
                      "400": ERR("More than 500 items, a bad id or product, or an unknown verdict"),
                      "401": ERR("No valid token")}}},
    "/v1/catalog": {"get": {
        "summary": "The catalog the server loaded, in the catalog file's shape (served from memory with an ETag; "
                   "304 for If-None-Match): the app takes its products, credits and entitlements from it",
        "operationId": "catalog", "security": [],
        "responses": {"200": answer("The catalog", "Catalog"),
                      "304": {"description": "The app holds this version (If-None-Match)"}}}},
    "/v1/me": {"get": {"summary": "The user's balance, deficit, entitlements and backup", "operationId": "me",
                       "responses": {"200": answer("The user", "MeResponse"), "401": ERR("No valid token")}}},
    "/v1/transactions": {"post": {
        "summary": "Deliver a StoreKit 2 transaction once", "operationId": "postTransaction",
        "requestBody": json_body("TransactionRequest"),
        "responses": {"200": answer("Delivered, a duplicate, revoked, or recorded (previouslyDelivered)",
                                    "TransactionResponse"),
                      "400": ERR("Not JSON, or a repeated key"), "401": ERR("No valid token"),
                      "403": ERR("The transaction belongs to another user (wrong-user)"),
                      "413": ERR("Body too large"),
                      "422": ERR("Signed data refused (Apple's status as the code) or unknown-product"),
                      "503": ERR("Verification could not be completed now (RETRYABLE_VERIFICATION_FAILURE): "
                                 "try again")}}},
    "/v1/me/backup": {
        "get": {"summary": "The device's backup", "operationId": "getBackup",
                "responses": {"200": answer("The backup", "Backup", ETAG), "404": ERR("No backup yet (no-backup)"),
                              "401": ERR("No valid token")}},
        "put": {"summary": "Write the backup", "operationId": "putBackup",
                "parameters": [{"name": "If-Match", "in": "header", "required": False,
                                "description": "The version read; absent for the first write",
                                "schema": {"type": "string"}}],
                "requestBody": json_body("BackupRequest"),
                "responses": {"200": answer("Written", "Backup", ETAG),
                              "412": answer("The backup changed; the current record comes back", "BackupConflict"),
                              "400": ERR("Bad body or If-Match"), "401": ERR("No valid token")}}},
    "/v1/me/grants": {"get": {
        "summary": "Support grants for the user", "operationId": "grants",
        "parameters": [{"name": "currencies", "in": "query", "required": False,
                        "description": "Device wallet: 1 lists grants in another currency than the default too (an "
                                       "app that does not ask is never handed one)",
                        "schema": {"type": "string", "enum": ["0", "1", "true", "false"]}},
                       {"name": "status", "in": "query", "required": False,
                        "schema": {"type": "string", "enum": ["pending", "claimed", "cancelled"]}}],
        "responses": {"200": answer("Newest first", "GrantsResponse"), "400": ERR("Unknown status"),
                      "401": ERR("No valid token")}}},
    "/v1/me/grants/{id}/claim": {"post": {
        "summary": "Claim a grant (idempotent)", "operationId": "claimGrant",
        "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string", "format": "uuid"}}],
        "responses": {"200": answer("Claimed (again)", "ClaimResponse"),
                      "404": ERR("No such grant for this user"), "401": ERR("No valid token"),
                      "409": ERR("grant-cancelled: support cancelled the grant before it was claimed; nothing "
                                 "was credited, and the app should drop it")}}},
    "/v1/me/spend": {"post": {
        "summary": "Spend credits (server wallet)", "operationId": "spend",
        "parameters": [{"name": "Idempotency-Key", "in": "header", "required": True,
                        "schema": {"type": "string", "maxLength": 200}}],
        "requestBody": json_body("SpendRequest"),
        "responses": {"200": answer("The balance after", "BalanceResponse"),
                      "409": ERR("insufficient-balance, or device-wallet"),
                      "422": ERR("key-reused for another amount, or refused (an amount below 1)"),
                      "400": ERR("No Idempotency-Key"),
                      "401": ERR("No valid token")}}},
    "/v1/me/consent": {"put": {
        "summary": "The customer's answer to sharing consumption data with Apple for refund requests",
        "operationId": "saveConsent", "requestBody": json_body("ConsentRequest"),
        "responses": {"200": answer("Recorded", "ConsentResponse"), "400": ERR("The body is not valid"),
                      "401": ERR("No valid token")}}},
    "/v1/me/offers/sign": {"post": {
        "summary": "A promotional offer signed for the customer with the In-App Purchase key (JWS and v1)",
        "operationId": "signOffer", "requestBody": json_body("OfferSignatureRequest"),
        "responses": {"200": answer("Signed", "OfferSignatureResponse"),
                      "400": ERR("The body is not valid, the product is not an auto-renewable subscription, or "
                                 "the offer identifier is malformed"),
                      "401": ERR("No valid token"),
                      "404": ERR("The catalog lists the product's offers, and not this one; or the customer has "
                                 "neither an Apple account nor a subscription of the group to tie it to"),
                      "429": ERR("Too many signatures for this customer (rate-limited); Retry-After says when"),
                      "422": ERR("The catalog does not sell the product (unknown-product)"),
                      "503": ERR("No In-App Purchase key is configured (offers-unavailable)")}}},
    "/v1/me/offers/introductory-eligibility": {"post": {
        "summary": "Whether the customer may take a subscription's introductory offer, signed",
        "operationId": "signIntroductoryOfferEligibility", "requestBody": json_body("IntroductoryOfferRequest"),
        "responses": {"200": answer("Signed", "IntroductoryOfferResponse"),
                      "400": ERR("The body is not valid, or the product is not an auto-renewable subscription"),
                      "401": ERR("No valid token"),
                      "429": ERR("Too many signatures for this customer (rate-limited); Retry-After says when"),
                      "422": ERR("The catalog does not sell the product (unknown-product)"),
                      "503": ERR("No In-App Purchase key is configured (offers-unavailable)")}}},
    "/v1/me/adjustments": {"get": {
        "summary": "The device wallet's mailbox: refunds, reversals and admin edits to apply once",
        "operationId": "adjustments",
        "parameters": [{"name": "currencies", "in": "query", "required": False,
                        "description": "1: the other currencies' items too, after the default's (keyed "
                                       "<currency>:<key>); absent or 0: the default currency's alone",
                        "schema": {"type": "string", "enum": ["0", "1", "true", "false"]}}],
        "responses": {"200": answer("Oldest first", "AdjustmentsResponse"), "401": ERR("No valid token"),
                      "400": ERR("currencies is not 1 or 0")}}},
    "/v1/me/events": {"get": {
        "summary": "Server-Sent Events: grant, adjustment, backup, entitlements", "operationId": "events",
        "responses": {"200": {"description": "`event: KIND` and `data: ServerEvent` per change; keep-alive comments",
                              "content": {"text/event-stream": {"schema": ref("ServerEvent")}}},
                      "401": ERR("No valid token"),
                      "429": ERR("This user has as many streams open as allowed (too-many-streams)"),
                      "503": ERR("The server has as many streams open as it allows")}}},
    "/v1/receipts/verify": {"post": {
        "summary": "Deliver the purchases of a legacy app receipt", "operationId": "verifyReceipt",
        "requestBody": json_body("ReceiptVerifyRequest"),
        "responses": {"200": answer("One outcome per purchase", "ReceiptVerifyResponse"),
                      "400": ERR("Not JSON, or no receiptData"), "401": ERR("No valid token"),
                      "422": ERR("Refused: VERIFICATION_FAILURE, INVALID_CHAIN, INVALID_APP_IDENTIFIER, "
                                 "INVALID_ENVIRONMENT")}}},
    "/v1/apple/notifications": {"post": {
        "summary": "App Store Server Notifications V2 (Apple posts here)", "operationId": "appleNotification",
        "security": [], "requestBody": json_body("NotificationRequest"),
        "responses": {"200": answer("Durable (or seen before)", "NotificationResponse"),
                      "400": ERR("Not a notification body"),
                      "422": ERR("Forged or foreign data; nothing applied"),
                      "429": ERR("This address sent too many notifications that failed verification; "
                                 "Apple's, which verify, are never counted"),
                      "500": ERR("Storage failed; Apple retries"),
                      "503": ERR("Verification could not finish now; Apple retries")}}},
    "/v1/admin/dashboard": {"get": admin("Users, grants, purchases, refunds, deficits, 30 days per day",
                                         "adminDashboard", "200", "DashboardFigures")},
    "/v1/admin/users": {"get": admin(
        "Find users by Support ID prefix, transaction id or order id; everyone, newest first, without search",
        "adminUsers", "200", "UserSearchResult",
        parameters=[{"name": "search", "in": "query", "required": False, "schema": {"type": "string"}},
                    {"name": "page", "in": "query", "required": False, "schema": {"type": "integer"}}],
        errors={"400": ERR("A bad page, a search over 200 characters, or an order id looked up outside the "
                           "server's environment")})},
    "/v1/admin/users/{supportId}": {"get": admin(
        "A user's figures, entitlements, grants and timeline", "adminUser", "200", "UserDetail",
        parameters=[SID], errors={"400": ERR("Not a Support ID"), "404": ERR("No such user here")})},
    "/v1/admin/users/{supportId}/balance": {"post": admin(
        "Set the balance: a ledger adjustment (server wallet) or an admin backup (device wallet)",
        "adminSetBalance", "200", "BalanceChange", parameters=[SID], body="BalanceRequest",
        errors={"400": ERR("Bad balance or reason"), "404": ERR("No such user here"),
                "409": ERR("balance-changed: the balance is not the expected one; nothing changed")})},
    "/v1/admin/entitlement-grants": {"post": admin(
        "Grant an entitlement for a number of days: it unlocks for the customer until it ends (GET /v1/me, the SDK), "
        "never counts toward loyalty; audited entitlement.grant",
        "adminGrantEntitlement", "201", "EntitlementGrantView", body="EntitlementGrantRequest",
        errors={"400": ERR("An entitlement the catalog does not know, days out of 1 to 3650, no reason, or a "
                           "customer deleted or merged"),
                "404": ERR("No such user here")})},
    "/v1/admin/entitlement-grants/{id}/cancel": {"post": admin(
        "Cancel an entitlement grant: it stops unlocking now; audited entitlement.cancel",
        "adminCancelEntitlementGrant", "200", "EntitlementGrantView",
        parameters=[{"name": "id", "in": "path", "required": True, "schema": {"type": "string", "format": "uuid"}}],
        errors={"404": ERR("No such grant here")})},
    "/v1/admin/users/{supportId}/extend": {"post": admin(
        "Extend the customer's active subscriptions (one product's group with productId) through Apple's Extend a "
        "Subscription Renewal Date; Apple's answer per subscription; audited subscription.extend, on the timeline",
        "adminExtendSubscription", "200", "ExtendSubscriptionResponse", parameters=[SID],
        body="ExtendSubscriptionRequest",
        errors={"400": ERR("Days, reason code or reason out of Apple's rules, or no active subscription"),
                "404": ERR("No such user here"),
                "503": ERR("No App Store Server API key (unavailable)")})},
    "/v1/admin/subscriptions/extend": {"post": admin(
        "Extend every active subscriber of a product (an outage) through Apple's Extend Renewal Dates for All "
        "Active Subscribers; owner keys only; audited subscription.extend-all",
        "adminExtendAllSubscribers", "202", "MassExtensionView", body="MassExtensionRequest",
        errors={"400": ERR("Not a subscription of the catalog, or days, reason code, reason or storefronts out "
                           "of Apple's rules"),
                "403": ERR("A support key: owners only"),
                "503": ERR("No App Store Server API key, or Apple did not take it (unavailable)")})},
    "/v1/admin/subscriptions/extensions": {"get": admin(
        "The latest mass extensions, newest first, with Apple's status now (3 seconds for Apple to answer)",
        "adminMassExtensions", "200", "MassExtensionsResponse")},
    "/v1/admin/users/{supportId}/delete": {"post": admin(
        "Delete a customer at their request (App Store guideline 5.1.1(v)), once: a ledger entry closes the "
        "wallet; tokens, push tokens, backups, the Apple account link and support's written reasons go; pending "
        "grants are cancelled; receipts and the ledger's amounts stay, anonymised; audited customer.delete",
        "adminDeleteUser", "200", "DeletionView", parameters=[SID],
        errors={"400": ERR("Not a Support ID, merged into another customer, or deleted already"),
                "404": ERR("No such user here")})},
    "/v1/admin/users/merge": {"post": admin(
        "Merge an anonymous user into an Apple account's customer, once: balance and deficit (server wallet; "
        "in the device wallet the balance the anonymous install last backed up, delivered to the account's "
        "app through its mailbox), receipts, grants and subscription states move; the installs' tokens move "
        "with intoCode and end without it; audited",
        "adminMerge", "200", "MergeResponse", body="MergeRequest",
        errors={"400": ERR("Not an anonymous user and an account user, the same user, or merged already"),
                "404": ERR("No such user here")})},
    "/v1/admin/grants": {
        "get": admin("Grants, newest first", "adminGrants", "200", {"type": "array", "items": ref("GrantView")},
                     parameters=[{"name": "status", "in": "query", "required": False,
                                  "schema": {"type": "string",
                                             "enum": ["pending", "claimed", "cancelled", "all"]}}],
                     errors={"400": ERR("An unknown status")}),
        "post": admin("Grant credits with a reason", "adminGrant", "201", "GrantView", body="GrantRequest",
                      errors={"400": ERR("Bad credits or reason"), "404": ERR("No such user here")})},
    "/v1/admin/grants/{id}/cancel": {"post": admin(
        "Cancel a grant the app has not claimed (Production too); audited. Cancelling again answers the "
        "cancelled grant", "adminCancelGrant", "200", "GrantView",
        parameters=[{"name": "id", "in": "path", "required": True, "schema": {"type": "string", "format": "uuid"}}],
        errors={"400": ERR("The app claimed it already: answer it with a new adjustment"),
                "404": ERR("No such grant here")})},
    "/v1/admin/grants/delete-all": {"post": admin(
        "Delete every grant (Sandbox only)", "adminDeleteGrants", "200", "DeletedGrants",
        errors={"403": ERR("Production's grants are never bulk-deleted")})},
    "/v1/admin/audit": {"get": admin(
        "The audit log, newest first; filtered by admin (an actor, or NAME from ADDRESS), customer (the subject) "
        "and action (exact, or a family: grant matches grant.create and grant.cancel)", "adminAudit", "200",
        {"type": "array", "items": ref("AuditEvent")},
        parameters=[{"name": "limit", "in": "query", "required": False, "schema": {"type": "integer"}},
                    {"name": "admin", "in": "query", "required": False, "schema": {"type": "string"}},
                    {"name": "customer", "in": "query", "required": False, "schema": {"type": "string"}},
                    {"name": "action", "in": "query", "required": False, "schema": {"type": "string"}}],
        errors={"400": ERR("A bad limit, or a filter over 200 characters")})},
    "/healthz": {"get": {"summary": "Alive", "operationId": "healthz", "security": [],
                         "responses": {"200": {"description": "ok", "content": {"text/plain": {"schema": S()}}}}}},
    "/readyz": {"get": {"summary": "Ready: the database answers", "operationId": "readyz", "security": [],
                        "responses": {"200": {"description": "ready", "content": {"text/plain": {"schema": S()}}},
                                      "503": {"description": "the store does not answer",
                                              "content": {"text/plain": {"schema": S()}}}}}},
    "/metrics": {"get": {"summary": "Prometheus metrics", "operationId": "metrics", "security": [],
                         "description": "Open unless metrics.token is set; then `Authorization: Bearer TOKEN` "
                                        "with that token",
                         "responses": {"200": {"description": "Text exposition format",
                                               "content": {"text/plain": {"schema": S()}}},
                                       "401": ERR("metrics.token is set and the request does not carry it")}}},
    "/openapi.json": {"get": {"summary": "This document", "operationId": "openapi", "security": [],
                              "responses": {"200": {"description": "OpenAPI 3.1",
                                                    "content": {"application/json": {"schema": {"type": "object"}}}}}}},
}

# What every route may answer besides its own: a body over the limit (413, before any route reads it), and a
# database that does not answer or a request past request.timeout (503 with Retry-After). The operations that never
# touch the store (healthz, metrics, this document) are left out; readyz says so in its own 503.
TOO_LARGE = "Body too large (body-too-large)"
UNAVAILABLE = ("The database did not answer (database-unavailable) or the request took longer than request.timeout "
               "(timeout); Retry-After says when to try again")
for path, item in paths.items():
    for method, operation in item.items():
        responses = operation["responses"]
        if "requestBody" in operation and "413" not in responses:
            responses["413"] = ERR(TOO_LARGE)
        if path in ("/healthz", "/readyz", "/metrics", "/openapi.json", "/v1/catalog"):
            continue
        if "503" in responses:
            if "database" not in responses["503"]["description"].lower():
                responses["503"] = ERR(f"{responses['503']['description']}; or: {UNAVAILABLE}")
        else:
            responses["503"] = ERR(UNAVAILABLE)

document = {
    "openapi": "3.1.0",
    "info": {"title": "Coffer", "version": "1",
             "description": "Self-hosted in-app purchase safety for App Store apps: the client API the app "
                            "talks to, the endpoint Apple posts notifications to, the signed admin API support tools use, "
                            "and the operations routes. "
                            "Every request may carry X-Request-Id, echoed in the answer."},
    "servers": [{"url": "http://127.0.0.1:8080"}],
    "security": AUTH,
    "paths": paths,
    "components": {"schemas": schemas,
                   "securitySchemes": {
                       "bearer": {"type": "http", "scheme": "bearer", "description": "The token from POST /v1/users"},
                       "adminKeyId": {"type": "apiKey", "in": "header", "name": "X-Coffer-Request-KeyID",
                                      "description": "An admin key from `coffer keys create`"},
                       "adminDate": {"type": "apiKey", "in": "header", "name": "X-Coffer-Request-ISO8601Date",
                                     "description": "yyyy-MM-ddTHH:mm:ssZ, within 5 minutes of the server"},
                       "adminSignature": {"type": "apiKey", "in": "header", "name": "X-Coffer-Request-SignatureV1",
                                          "description": "base64 DER ECDSA P-256 SHA-256 signature of six lines "
                                                         "joined by \\n: METHOD, Host header, environment "
                                                         "(the query's, or empty), date, base64(SHA-256(body)), "
                                                         "path-with-query; each accepted once; writes must name "
                                                         "?environment= (else 400 environment-required)"}}},
}

root = os.path.join(os.path.dirname(__file__), "..")
with open(os.path.join(root, "Sources/CofferServer/openapi.json"), "w") as out:
    json.dump(document, out, indent=2, sort_keys=True)
    out.write("\n")

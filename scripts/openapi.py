#!/usr/bin/env python3
"""Writes Sources/CofferServer/openapi.json, the OpenAPI 3.1 document of Coffer's HTTP API.

The document is kept in the repository and served at /openapi.json; a test checks that every route the
server has is in it and every path in it is a route. Edit this script, not the JSON, then run it.
"""
import json
import os

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
                                         "body-too-large, version-conflict, insufficient-balance, key-reused, "
                                         "device-wallet, refused, unknown-product, internal, or Apple's "
                                         "verification status (VERIFICATION_FAILURE, INVALID_CHAIN, ...)"),
                                   "message": S("For people")})}),
    "CreateUserResponse": obj({"supportId": S("`_` and 12 lowercase hex characters", pattern="^_[0-9a-f]{12}$"),
                               "token": S("The bearer token; shown once, stored hashed"),
                               "appAccountToken": S("Pass to StoreKit as the purchase's appAccountToken",
                                                    format="uuid")}),
    "Backup": obj({"value": I(), "lastUpdated": DATE, "version": I(),
                   "writer": S(enum=["device", "admin"])}),
    "MeResponse": obj({"supportId": S(), "balance": I(), "deficit": I(),
                       "entitlements": {"type": "array", "items": S()}, "backup": NULLABLE(ref("Backup"))}),
    "TransactionRequest": obj({"signedTransaction": S("A StoreKit 2 signed transaction (JWS)")}),
    "TransactionResponse": obj({"outcome": S(enum=["delivered", "duplicate", "revoked"]), "transactionId": S(),
                                "credits": I(), "balance": I(),
                                "entitlements": {"type": "array", "items": S()}}),
    "BackupRequest": obj({"value": I(minimum=0), "device": S("A name for the writing device")},
                         required=["value"]),
    "BackupConflict": obj({"error": obj({"code": S(), "message": S()}), "current": NULLABLE(ref("Backup"))}),
    "Grant": obj({"id": S(format="uuid"), "credits": I(), "reason": S(), "createdAt": DATE,
                  "claimedAt": NULLABLE(DATE)}, required=["id", "credits", "reason", "createdAt"]),
    "GrantsResponse": obj({"grants": {"type": "array", "items": ref("Grant")}}),
    "ClaimResponse": obj({"grant": ref("Grant"), "balance": I()}),
    "SpendRequest": obj({"amount": I(minimum=1)}),
    "BalanceResponse": obj({"balance": I()}),
    "Adjustment": obj({"key": S("Apply each key once, e.g. revocation:2000000123"),
                       "kind": S(enum=["revocation", "reversal", "adjustment"]),
                       "amount": I("Credits to add; negative to take back"), "transactionId": S(),
                       "productId": S(), "reason": S(), "createdAt": DATE},
                      required=["key", "kind", "amount", "createdAt"]),
    "AdjustmentsResponse": obj({"adjustments": {"type": "array", "items": ref("Adjustment")}}),
    "ServerEvent": obj({"type": S(enum=["grant", "adjustment", "backup", "entitlements"]), "key": S()},
                       required=["type"]),
    "ReceiptVerifyRequest": obj({"receiptData": S("The legacy app receipt, base64")}),
    "ReceiptTransaction": obj({"transactionId": S(), "productId": S(),
                               "outcome": S("delivered, duplicate, revoked, wrong-user or unknown-product")}),
    "ReceiptVerifyResponse": obj({"transactions": {"type": "array", "items": ref("ReceiptTransaction")},
                                  "balance": I(), "entitlements": {"type": "array", "items": S()}}),
    "NotificationRequest": obj({"signedPayload": S("App Store Server Notification V2 (JWS)")}),
    "NotificationResponse": obj({"outcome": S(enum=["applied", "duplicate", "unattributed", "logged"])}),
}

def json_body(name):
    return {"required": True, "content": {"application/json": {"schema": ref(name)}}}

def answer(description, name=None, headers=None):
    response = {"description": description}
    if name:
        response["content"] = {"application/json": {"schema": ref(name)}}
    if headers:
        response["headers"] = headers
    return response

ERR = lambda d: answer(d, "Error")
AUTH = [{"bearer": []}]
ETAG = {"ETag": {"description": "The backup's version", "schema": {"type": "string"}}}

paths = {
    "/v1/users": {"post": {"summary": "Create a user", "operationId": "createUser", "security": [],
                           "responses": {"201": answer("Created; the token is shown once", "CreateUserResponse")}}},
    "/v1/me": {"get": {"summary": "The user's balance, deficit, entitlements and backup", "operationId": "me",
                       "responses": {"200": answer("The user", "MeResponse"), "401": ERR("No valid token")}}},
    "/v1/transactions": {"post": {
        "summary": "Deliver a StoreKit 2 transaction once", "operationId": "postTransaction",
        "requestBody": json_body("TransactionRequest"),
        "responses": {"200": answer("Delivered, a duplicate, or revoked", "TransactionResponse"),
                      "400": ERR("Not JSON, or a repeated key"), "401": ERR("No valid token"),
                      "403": ERR("The transaction belongs to another user (wrong-user)"),
                      "413": ERR("Body too large"),
                      "422": ERR("Signed data refused (Apple's status as the code) or unknown-product")}}},
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
        "parameters": [{"name": "status", "in": "query", "required": False,
                        "schema": {"type": "string", "enum": ["pending", "claimed"]}}],
        "responses": {"200": answer("Newest first", "GrantsResponse"), "400": ERR("Unknown status"),
                      "401": ERR("No valid token")}}},
    "/v1/me/grants/{id}/claim": {"post": {
        "summary": "Claim a grant (idempotent)", "operationId": "claimGrant",
        "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string", "format": "uuid"}}],
        "responses": {"200": answer("Claimed (again)", "ClaimResponse"),
                      "404": ERR("No such grant for this user"), "401": ERR("No valid token")}}},
    "/v1/me/spend": {"post": {
        "summary": "Spend credits (server wallet)", "operationId": "spend",
        "parameters": [{"name": "Idempotency-Key", "in": "header", "required": True,
                        "schema": {"type": "string", "maxLength": 200}}],
        "requestBody": json_body("SpendRequest"),
        "responses": {"200": answer("The balance after", "BalanceResponse"),
                      "409": ERR("insufficient-balance, or device-wallet"),
                      "422": ERR("key-reused for another amount"), "400": ERR("No Idempotency-Key"),
                      "401": ERR("No valid token")}}},
    "/v1/me/adjustments": {"get": {
        "summary": "The device wallet's mailbox: refunds, reversals and admin edits to apply once",
        "operationId": "adjustments",
        "responses": {"200": answer("Oldest first", "AdjustmentsResponse"), "401": ERR("No valid token")}}},
    "/v1/me/events": {"get": {
        "summary": "Server-Sent Events: grant, adjustment, backup, entitlements", "operationId": "events",
        "responses": {"200": {"description": "`event: KIND` and `data: ServerEvent` per change; keep-alive comments",
                              "content": {"text/event-stream": {"schema": ref("ServerEvent")}}},
                      "401": ERR("No valid token")}}},
    "/v1/receipts/verify": {"post": {
        "summary": "Deliver the purchases of a legacy app receipt", "operationId": "verifyReceipt",
        "requestBody": json_body("ReceiptVerifyRequest"),
        "responses": {"200": answer("One outcome per purchase", "ReceiptVerifyResponse"),
                      "401": ERR("No valid token"),
                      "422": ERR("Refused: VERIFICATION_FAILURE, INVALID_CHAIN, INVALID_APP_IDENTIFIER, "
                                 "INVALID_ENVIRONMENT")}}},
    "/v1/apple/notifications": {"post": {
        "summary": "App Store Server Notifications V2 (Apple posts here)", "operationId": "appleNotification",
        "security": [], "requestBody": json_body("NotificationRequest"),
        "responses": {"200": answer("Durable (or seen before)", "NotificationResponse"),
                      "400": ERR("Not a notification body"),
                      "422": ERR("Forged or foreign data; nothing applied"),
                      "500": ERR("Storage failed; Apple retries"),
                      "503": ERR("Verification could not finish now; Apple retries")}}},
    "/healthz": {"get": {"summary": "Alive", "operationId": "healthz", "security": [],
                         "responses": {"200": {"description": "ok", "content": {"text/plain": {"schema": S()}}}}}},
    "/readyz": {"get": {"summary": "Ready: the database answers", "operationId": "readyz", "security": [],
                        "responses": {"200": {"description": "ready", "content": {"text/plain": {"schema": S()}}},
                                      "503": {"description": "the store does not answer"}}}},
    "/metrics": {"get": {"summary": "Prometheus metrics", "operationId": "metrics", "security": [],
                         "responses": {"200": {"description": "Text exposition format",
                                               "content": {"text/plain": {"schema": S()}}}}}},
    "/openapi.json": {"get": {"summary": "This document", "operationId": "openapi", "security": [],
                              "responses": {"200": {"description": "OpenAPI 3.1",
                                                    "content": {"application/json": {"schema": {"type": "object"}}}}}}},
}

document = {
    "openapi": "3.1.0",
    "info": {"title": "Coffer", "version": "1",
             "description": "Self-hosted in-app purchase safety for App Store apps: the client API the app "
                            "talks to, the endpoint Apple posts notifications to, and the operations routes. "
                            "Every request may carry X-Request-Id, echoed in the answer."},
    "servers": [{"url": "http://127.0.0.1:8080"}],
    "security": AUTH,
    "paths": paths,
    "components": {"schemas": schemas,
                   "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                                  "description": "The token from POST /v1/users"}}},
}

root = os.path.join(os.path.dirname(__file__), "..")
with open(os.path.join(root, "Sources/CofferServer/openapi.json"), "w") as out:
    json.dump(document, out, indent=2, sort_keys=True)
    out.write("\n")

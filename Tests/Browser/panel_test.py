#!/usr/bin/env python3
"""The admin panel in a real browser: headless Chromium driven by Selenium against a running `coffer serve`.

Run by scripts/test after the Swift suites:

    python Tests/Browser/panel_test.py --coffer .build/debug/coffer --screenshots .build/panel-screenshots

It starts the App Store simulator and a Coffer server on free loopback ports in a temporary folder, makes a
customer with purchases and a refund, then does what support does: sign in, find the customer by Support ID,
grant credits, see the grant pending, claim it through the client API as the app would, see it claimed, set
the balance, read the audit log, switch to Production and back. It also checks the refusals: a form without
its CSRF token, pages without a session, and admin API requests that are unsigned, wrongly signed, stale or
replayed (signed here with Python's `cryptography`, independently of Coffer's Swift signer). Every page is
saved as a screenshot, at laptop and phone widths.
"""
import argparse
import base64
import datetime
import hashlib
import hmac
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature
from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import Select, WebDriverWait

CHECKS = []


def check(condition, what):
    """Records and asserts one expectation, naming it on failure."""
    CHECKS.append(what)
    if not condition:
        raise AssertionError(what)
    print(f"  ok: {what}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(method, url, body=None, headers=None, raw=None):
    """One request; returns (status, parsed JSON or text)."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    if body is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            status, text = response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        status, text = error.code, error.read().decode()
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def totp(secret, step):
    """RFC 6238's code (HMAC-SHA1, six digits) for a 30-second step, written here apart from Coffer's Swift."""
    digest = hmac.new(secret.encode(), struct.pack(">Q", step), hashlib.sha1).digest()
    offset = digest[-1] & 15
    return "%06d" % ((struct.unpack(">I", digest[offset:offset + 4])[0] & 0x7FFFFFFF) % 1_000_000)


def signed_headers(key, key_id, method, host, path, body=b"", date=None):
    """CloudKit-style headers: ECDSA P-256 over the method, host, environment, date, base64(sha256(body)) and
    path with its query, one per line (the environment is the path's `environment` parameter, empty if none)."""
    date = date or datetime.datetime.now(datetime.timezone.utc)
    stamp = date.strftime("%Y-%m-%dT%H:%M:%SZ")
    digest = base64.b64encode(hashlib.sha256(body).digest()).decode()
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query)
    environment = query.get("environment", [""])[0]
    message = "\n".join([method, host.lower(), environment, stamp, digest, path])
    signature = key.sign(message.encode(), ec.ECDSA(hashes.SHA256()))
    return {"X-Coffer-Request-KeyID": key_id, "X-Coffer-Request-ISO8601Date": stamp,
            "X-Coffer-Request-SignatureV1": base64.b64encode(signature).decode()}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--coffer", required=True)
    parser.add_argument("--screenshots", required=True)
    parser.add_argument("--catalog", default="Examples/catalog.json")
    arguments = parser.parse_args()
    coffer = os.path.abspath(arguments.coffer)
    shots = os.path.abspath(arguments.screenshots)
    os.makedirs(shots, exist_ok=True)
    folder = tempfile.mkdtemp(prefix="coffer-browser-")
    shutil.copy(arguments.catalog, os.path.join(folder, "catalog.json"))
    processes = []

    def run(*args):
        result = subprocess.run([coffer, *args], cwd=folder, capture_output=True, text=True, timeout=60)
        if result.returncode != 0:
            raise AssertionError(f"coffer {' '.join(args)} failed: {result.stderr}")
        return result.stdout

    try:
        sim_port, port = free_port(), free_port()
        base = f"http://127.0.0.1:{port}"
        run("appstore-sim", "init", "sim")
        processes.append(subprocess.Popen(
            [coffer, "appstore-sim", "serve", "--folder", "sim", "--catalog", "catalog.json", "--bundle-id",
             "com.example.app", "--port", str(sim_port), "--notify", f"{base}/v1/apple/notifications"],
            cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        log = open(os.path.join(folder, "serve.log"), "w+")
        processes.append(subprocess.Popen(
            [coffer, "serve", "--bundle-id", "com.example.app", "--apple-root", "sim/root.der", "--port", str(port),
             "--wallet", "server"], cwd=folder, stdout=log, stderr=subprocess.STDOUT))
        password = None
        for _ in range(200):
            log.seek(0)
            # Standard output is a file, not a terminal: the password is in an owner-only file beside the database.
            found = re.search(r"sign in as admin with the password in (\S+)", log.read())
            if found and os.path.exists(found.group(1)):
                check(os.stat(found.group(1)).st_mode & 0o777 == 0o600, "the first-run password file is owner-only")
                with open(found.group(1)) as file:
                    password = file.read().strip()
                break
            time.sleep(0.1)
        check(password is not None, "the first run of coffer serve gives a one-time admin login")
        for _ in range(100):
            try:
                if http("GET", base + "/healthz")[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.1)

        # A customer who bought credits three times, one of them refunded.
        status, customer = http("POST", base + "/v1/users")
        check(status == 201, "a user is created through the client API")
        support_id, token = customer["supportId"], customer["token"]
        bearer = {"Authorization": f"Bearer {token}"}
        simulator = ["--server", f"http://127.0.0.1:{sim_port}"]
        transactions = []
        for _ in range(3):
            bought = json.loads(run("appstore-sim", "purchase", "--account", "alice", "--product",
                                    "com.example.credits.400k", "--app-account-token", customer["appAccountToken"],
                                    "--json", *simulator))
            transactions += bought["transactionIds"]
        for transaction in transactions:
            signed = run("appstore-sim", "signed", transaction, *simulator).strip()
            status, _ = http("POST", base + "/v1/transactions", {"signedTransaction": signed}, bearer)
            check(status == 200, f"purchase {transaction} delivered")
        run("appstore-sim", "refund", transactions[-1], *simulator)
        for _ in range(100):
            if http("GET", base + "/v1/me", headers=bearer)[1]["balance"] == 800_000:
                break
            time.sleep(0.1)
        check(http("GET", base + "/v1/me", headers=bearer)[1]["balance"] == 800_000,
              "the refund notification took one purchase back")
        http("PUT", base + "/v1/me/backup", {"value": 800_000, "device": "iPhone"}, bearer)
        # The app's Verify Purchases results, as the SDK reports them.
        status, _ = http("PUT", base + "/v1/me/verify-report", {"items": [
            {"transactionId": transactions[0], "productId": "com.example.credits.400k", "finished": True,
             "verified": True, "verdict": "alreadyRecorded"},
            {"transactionId": "2000000999", "productId": "com.example.credits.400k", "finished": True,
             "verified": True, "verdict": "couldNotBeVerified"}]}, bearer)
        check(status == 200, "the app reports its Verify Purchases results")
        # A second customer, who will ask for their account to be deleted.
        status, leaving = http("POST", base + "/v1/users")
        check(status == 201, "a second customer is created")

        options = webdriver.ChromeOptions()
        for flag in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,900"]:
            options.add_argument(flag)
        driver = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"),
                                  options=options)
        driver.implicitly_wait(3)

        def shot(name):
            driver.save_screenshot(os.path.join(shots, f"{name}.png"))

        def click(by, value):
            """Clicks a link or button and waits until the next page has replaced this one (a sign-in
            hashes its password first, so the old page can still be there when click() returns)."""
            page = driver.find_element(By.TAG_NAME, "html")
            driver.find_element(by, value).click()

            def replaced(_):
                # Chrome may answer for the old page's node while the new document loads with "does not
                # belong to the document" instead of a stale-element error: that is the page being replaced.
                try:
                    return expected_conditions.staleness_of(page)(driver)
                except WebDriverException as error:
                    if "does not belong to the document" in str(error):
                        return True
                    raise

            WebDriverWait(driver, 10).until(replaced)

        try:
            driver.get(base + "/admin")
            check(driver.current_url.endswith("/admin/login"), "a page without a session redirects to sign-in")
            check("only on this machine" in driver.find_element(By.ID, "binding").text,
                  "the sign-in page says the panel answers on this machine only")
            shot("login")
            driver.find_element(By.ID, "name").send_keys("admin")
            driver.find_element(By.ID, "password").send_keys("not the password")
            click(By.ID, "sign-in")
            check("Wrong name or password" in driver.find_element(By.ID, "error").text,
                  "a wrong password is refused")
            driver.find_element(By.ID, "password").send_keys(password)
            click(By.ID, "sign-in")
            check(driver.current_url == base + "/admin", "signing in opens the dashboard")
            check(driver.find_element(By.ID, "environment").text == "Sandbox", "the dashboard says Sandbox")
            check(driver.find_element(By.ID, "purchases-count").text == "3", "the dashboard counts 3 purchases")
            check(driver.find_element(By.ID, "refunds-count").text == "1", "the dashboard counts 1 refund")
            check(len(driver.find_elements(By.CSS_SELECTOR, "#chart rect")) >= 2,
                  "the chart draws today's purchases and refunds")
            money = driver.find_element(By.ID, "money-currencies").text
            check("2.97 USD" in money and "0.99 USD" in money and "1.98 USD" in money,
                  "the dashboard's money: 2.97 USD paid, 0.99 USD refunded, 1.98 USD net (Apple's prices)")
            check("400,000 credits (com.example.credits.400k)" in driver.find_element(By.ID, "money-products").text,
                  "the dashboard's money per product")
            check(driver.find_element(By.ID, "refund-rate").text == "33.3%", "the refund rate: 1 of 3")
            apple = driver.find_element(By.ID, "apple-health").text
            check("Last notification: REFUND" in apple and "REFUND 1" in apple,
                  "the dashboard shows Apple's last notification and the week's by type")
            driver.set_window_size(1280, 2000)
            shot("dashboard")
            driver.set_window_size(1280, 900)

            # Find the customer by a Support ID prefix, typed in capitals without the underscore.
            click(By.LINK_TEXT, "Users")
            driver.find_element(By.ID, "search").send_keys(support_id[1:6].upper())
            click(By.ID, "search-button")
            rows = driver.find_elements(By.CSS_SELECTOR, "#users tbody tr")
            check(len(rows) == 1 and support_id in rows[0].text, "the customer is found by Support ID prefix")
            shot("users")
            click(By.LINK_TEXT, support_id)
            check(driver.find_element(By.ID, "support-id").text == support_id, "the user page opens")
            check(driver.find_element(By.ID, "balance").text == "800,000",
                  "the user page shows the balance with thousands separators")
            timeline = driver.find_element(By.ID, "timeline").text
            check("purchase" in timeline and "refund" in timeline and "backup" in timeline,
                  "the timeline shows purchases, the refund and the backup")
            check("Purchase of 400,000 credits (com.example.credits.400k)" in timeline,
                  "purchases show the catalog's name for the product")
            check("2 transactions: 1 could not be verified, 1 already recorded" in
                  driver.find_element(By.ID, "verify-summary").text
                  and "2000000999" in driver.find_element(By.ID, "verify-report").text,
                  "the customer page shows the app's last Verify Purchases")
            purchases = driver.find_element(By.ID, "purchases").text
            check(purchases.count("0.99 USD") == 3 and "USA" in purchases,
                  "each purchase shows its price, currency and storefront")
            check("refunded" in purchases and "Apple refunded for another reason" in purchases,
                  "the refund shows Apple's reason")
            check("The server keeps this customer's balance" in driver.find_element(By.ID, "wallet-story").text,
                  "the page says in words which balance is the customer's and what the backup is")

            # Grant credits with a reason: a confirmation with the balance before and after first; the grant is
            # pending until the app claims it.
            driver.find_element(By.ID, "grant-credits").send_keys("400000")
            driver.find_element(By.ID, "grant-reason").send_keys("Ticket #42")
            click(By.ID, "grant-button")
            check("Grant 400,000 credits to" in driver.find_element(By.TAG_NAME, "h1").text,
                  "granting asks for a confirmation first")
            check(driver.find_element(By.ID, "before").text == "800,000"
                  and driver.find_element(By.ID, "after").text == "1,200,000",
                  "the confirmation shows the balance before and after")
            shot("confirm-grant")
            click(By.ID, "confirm")
            check("Grant created" in driver.find_element(By.ID, "notice").text, "the grant is created")
            check("granted 400,000 credits: Ticket #42" in driver.find_element(By.ID, "timeline").text,
                  "the timeline shows the grant with its reason")
            driver.set_window_size(1280, 1900)
            shot("user")
            driver.set_window_size(1280, 900)
            click(By.LINK_TEXT, "Grants")
            click(By.ID, "tab-pending")
            check(support_id in driver.find_element(By.ID, "grants").text and "pending" in
                  driver.find_element(By.ID, "grants").text, "the grant is listed as pending")
            shot("grants")

            # The app picks it up on its next refresh, through the client API.
            status, pending = http("GET", base + "/v1/me/grants?status=pending", headers=bearer)
            check(status == 200 and len(pending["grants"]) == 1, "the app sees the pending grant")
            status, claimed = http("POST", base + f"/v1/me/grants/{pending['grants'][0]['id']}/claim",
                                   headers=bearer)
            check(status == 200 and claimed["balance"] == 1_200_000, "the app claims it: 400000 credits more")
            click(By.ID, "tab-claimed")
            check(support_id in driver.find_element(By.ID, "grants").text and "claimed" in
                  driver.find_element(By.ID, "grants").text, "the grant is listed as claimed")

            # A grant made by mistake is cancelled before the app claims it (a confirmation first).
            driver.get(base + f"/admin/users/{support_id}")
            driver.find_element(By.ID, "grant-credits").send_keys("1200000")
            driver.find_element(By.ID, "grant-reason").send_keys("Ticket #44, typo")
            click(By.ID, "grant-button")
            click(By.ID, "confirm")
            pending_rows = driver.find_elements(By.CSS_SELECTOR, "#pending-grants tbody tr")
            check(len(pending_rows) == 1 and "1,200,000" in pending_rows[0].text,
                  "the customer page lists the pending grant with a cancel button")
            click(By.CSS_SELECTOR, "#pending-grants .cancel-grant")
            check("Cancel the grant of 1,200,000 credits" in driver.find_element(By.TAG_NAME, "h1").text,
                  "cancelling asks for a confirmation")
            shot("cancel-grant")
            click(By.ID, "confirm")
            check("Grant cancelled" in driver.find_element(By.ID, "notice").text, "the grant is cancelled")
            check("None waiting" in driver.find_element(By.ID, "pending-grants").text,
                  "no grant is pending any more")
            check("cancelled the grant of 1,200,000 credits" in driver.find_element(By.ID, "timeline").text,
                  "the timeline shows the cancellation")
            status, pending = http("GET", base + "/v1/me/grants?status=pending", headers=bearer)
            check(status == 200 and pending["grants"] == [], "the app is offered no cancelled grant")

            # Set the balance as an admin override: a confirmation with before and after first.
            driver.find_element(By.ID, "balance-value").send_keys("5,000")
            driver.find_element(By.ID, "balance-reason").send_keys("Ticket #43")
            click(By.ID, "balance-button")
            check(driver.find_element(By.ID, "before").text == "1,200,000"
                  and driver.find_element(By.ID, "after").text == "5,000",
                  "setting the balance shows it before and after first")
            shot("confirm-balance")
            click(By.ID, "confirm")
            check(driver.find_element(By.ID, "balance").text == "5,000", "the balance is set")
            check(http("GET", base + "/v1/me", headers=bearer)[1]["balance"] == 5000, "the app sees the new balance")

            click(By.LINK_TEXT, "Audit log")
            audit = driver.find_element(By.ID, "audit").text
            check("grant.create" in audit and "grant.cancel" in audit and "balance.set" in audit and "admin" in audit,
                  "the audit log records the grants, the cancellation and the balance, and who did them")
            check('"balance":1200000' in audit and '"balance":5000' in audit,
                  "the audit log keeps the balance before and after")
            driver.find_element(By.ID, "filter-action").send_keys("grant")
            click(By.ID, "filter-button")
            actions = [row.find_elements(By.TAG_NAME, "td")[2].text
                       for row in driver.find_elements(By.CSS_SELECTOR, "#audit tbody tr")]
            check(actions and all(action.startswith("grant.") for action in actions) and "grant.cancel" in actions,
                  "the audit log filters by action family")
            check(driver.find_element(By.ID, "audit-csv").get_attribute("href").endswith("/admin/audit.csv?action=grant"),
                  "the filtered log exports as CSV")
            shot("audit")

            # Each admin's own time zone, shown beside UTC on every page.
            click(By.LINK_TEXT, "Settings")
            Select(driver.find_element(By.ID, "time-zone")).select_by_visible_text("Asia/Tokyo")
            click(By.ID, "save-settings")
            check("Settings saved" in driver.find_element(By.ID, "notice").text
                  and "Asia/Tokyo" in driver.find_element(By.ID, "time-example").text,
                  "an admin chooses a time zone, shown beside UTC")
            shot("settings")
            click(By.LINK_TEXT, "Audit log")
            check("UTC" in driver.find_element(By.ID, "audit").text and "Asia/Tokyo" in
                  driver.find_element(By.ID, "audit").text, "times show in UTC with the admin's zone beside them")

            # A data request: the customer asks for their account to be deleted.
            driver.get(base + "/admin/users/" + leaving["supportId"])
            click(By.ID, "delete-button")
            check("at the customer's request?" in driver.find_element(By.TAG_NAME, "h1").text,
                  "deleting a customer asks for confirmation, saying what goes and what stays")
            shot("delete-customer")
            click(By.ID, "confirm")
            check("Customer deleted" in driver.find_element(By.ID, "notice").text
                  and "Deleted at the customer's request" in driver.find_element(By.ID, "deleted").text,
                  "the customer is deleted and the page says so")
            check(len(driver.find_elements(By.ID, "grant-form")) == 0, "a deleted customer is offered no grant")
            shot("customer-deleted")
            status, _ = http("GET", base + "/v1/me", headers={"Authorization": f"Bearer {leaving['token']}"})
            check(status == 401, "the deleted customer's app token is refused")

            # Production is a confirmed switch; no page mixes the two.
            click(By.ID, "switch-production")
            check("Switch to Production?" in driver.page_source, "switching to Production asks for confirmation")
            shot("switch-production")
            click(By.ID, "confirm")
            check(driver.find_element(By.ID, "environment").text == "Production", "the panel is in Production")
            click(By.LINK_TEXT, "Users")
            check(support_id not in driver.page_source, "Production's users page shows no Sandbox user")
            driver.get(base + "/admin/grants")
            check(len(driver.find_elements(By.ID, "delete-all")) == 0, "Production offers no delete-all")
            shot("production-grants")
            click(By.ID, "switch-sandbox")
            check(driver.find_element(By.ID, "environment").text == "Sandbox", "back in Sandbox")

            # A form post without its CSRF token is refused and changes nothing.
            cookie = driver.get_cookie("coffer-session")
            session = {"Cookie": f"coffer-session={cookie['value']}",
                       "Content-Type": "application/x-www-form-urlencoded"}
            form = f"supportId={support_id}&credits=999&reason=forged".encode()
            status, _ = http("POST", base + "/admin/grants", headers=session, raw=form)
            check(status == 403, "a form post without its CSRF token is refused (403)")
            status, _ = http("POST", base + "/admin/grants", headers=session, raw=form + b"&csrf=guess")
            check(status == 403, "a form post with a wrong CSRF token is refused (403)")
            driver.get(base + "/admin/grants")
            check("forged" not in driver.page_source, "the refused posts created nothing")

            # An owner adds a webhook endpoint on the Settings page: its secret is shown once, and the Webhooks
            # page lists it.
            driver.get(base + "/admin/settings")
            driver.find_element(By.ID, "webhook-url").send_keys("https://api.example.com/coffer-events")
            driver.find_element(By.NAME, "event-purchase.refunded").click()
            click(By.ID, "webhook-add")
            secret = driver.find_element(By.ID, "webhook-secret").text
            check(secret.startswith("whsec_") and len(secret) == 70, "adding an endpoint shows its secret once")
            shot("webhook-secret")
            driver.get(base + "/admin/settings")
            check("https://api.example.com/coffer-events" in driver.page_source and secret not in driver.page_source,
                  "Settings lists the endpoint without its secret")
            click(By.LINK_TEXT, "Webhooks")
            check("https://api.example.com/coffer-events" in driver.page_source, "the Webhooks page lists the endpoint")
            check(driver.find_element(By.ID, "webhook-dead").text == "0", "no dead letters yet")
            shot("webhooks")

            # Phone width: the same pages stay readable.
            driver.set_window_size(390, 844)
            driver.get(base + "/admin")
            shot("dashboard-phone")
            driver.get(base + f"/admin/users/{support_id}")
            shot("user-phone")
            driver.set_window_size(1280, 900)

            # An owner makes a support admin who may grant up to 50,000 credits.
            click(By.LINK_TEXT, "Admins")
            driver.find_element(By.ID, "new-admin-name").send_keys("sam")
            Select(driver.find_element(By.ID, "new-admin-role")).select_by_visible_text("support")
            driver.find_element(By.ID, "new-admin-limit").send_keys("50,000")
            click(By.ID, "new-admin-button")
            found = re.search(r"with the password (\w{20})", driver.find_element(By.ID, "created").text)
            check(found is not None, "a new support admin's password is shown once")
            sam_password = found.group(1)
            check("50,000" in driver.find_element(By.ID, "admin-sam").text, "the admins page shows sam's limit")
            shot("admins")

            # The owner turns on two-factor sign-in with an authenticator app (here: TOTP computed in Python).
            click(By.LINK_TEXT, "Settings")
            click(By.ID, "two-factor-begin")
            secret = driver.find_element(By.NAME, "secret").get_attribute("value")
            check("otpauth://totp/Coffer:admin" in driver.find_element(By.ID, "authenticator-url").get_attribute("href"),
                  "setting up two-factor gives the key and an otpauth link")
            shot("two-factor-setup")
            step = int(time.time()) // 30
            driver.find_element(By.ID, "two-factor-code").send_keys(totp(secret, step))
            click(By.ID, "two-factor-confirm")
            codes = driver.find_elements(By.CSS_SELECTOR, "#recovery-codes li")
            check(len(codes) == 10, "turning two-factor on shows ten recovery codes once")
            click(By.ID, "sign-out")
            driver.find_element(By.ID, "name").send_keys("admin")
            driver.find_element(By.ID, "password").send_keys(password)
            click(By.ID, "sign-in")
            check(driver.current_url.endswith("/admin/login/code"), "with two-factor on, the password leads to the code")
            driver.find_element(By.ID, "code").send_keys("000000" if totp(secret, step + 1) != "000000" else "111111")
            click(By.ID, "check-code")
            check("not right" in driver.find_element(By.ID, "error").text, "a wrong code is refused")
            shot("login-code")
            driver.get(base + "/admin")
            check(driver.current_url.endswith("/admin/login/code"), "no page opens before the code")
            driver.find_element(By.ID, "code").send_keys(totp(secret, step + 1))
            click(By.ID, "check-code")
            check(driver.current_url == base + "/admin", "the right code signs in")
            click(By.ID, "sign-out")

            # Support signs in and cannot grant over the limit an owner set.
            driver.find_element(By.ID, "name").send_keys("sam")
            driver.find_element(By.ID, "password").send_keys(sam_password)
            click(By.ID, "sign-in")
            driver.get(base + f"/admin/users/{support_id}")
            check(len(driver.find_elements(By.ID, "balance-form")) == 0, "support is not offered the balance form")
            driver.find_element(By.ID, "grant-credits").send_keys("60,000")
            driver.find_element(By.ID, "grant-reason").send_keys("Ticket #45")
            click(By.ID, "grant-button")
            check("over your grant limit of 50,000" in driver.find_element(By.ID, "error").text,
                  "a support admin over the grant limit is refused")
            shot("support-over-limit")
            status, pending = http("GET", base + "/v1/me/grants?status=pending", headers=bearer)
            check(pending["grants"] == [], "the refused grant was not made")

            click(By.ID, "sign-out")
            check(driver.current_url.endswith("/admin/login"), "signing out returns to sign-in")
            driver.get(base + "/admin/grants")
            check(driver.current_url.endswith("/admin/login"), "after signing out pages redirect to sign-in")
        finally:
            driver.quit()

        # The admin API refuses unsigned, wrongly signed, stale and replayed requests.
        run("keys", "create", "--name", "browser test", "--out", "key.pem")
        key_id = json.loads(run("keys", "list", "--json"))[0]["id"]
        with open(os.path.join(folder, "key.pem"), "rb") as file:
            key = serialization.load_pem_private_key(file.read(), password=None)
        path = "/v1/admin/users?search=" + support_id
        status, answer = http("GET", base + path)
        check(status == 401 and answer["error"]["code"] == "unsigned", "an unsigned admin request is refused")
        host = urllib.parse.urlsplit(base).netloc
        headers = signed_headers(ec.generate_private_key(ec.SECP256R1()), key_id, "GET", host, path)
        status, answer = http("GET", base + path, headers=headers)
        check(status == 401 and answer["error"]["code"] == "bad-signature", "a wrongly signed request is refused")
        stale = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=6)
        status, answer = http("GET", base + path, headers=signed_headers(key, key_id, "GET", host, path, date=stale))
        check(status == 401 and answer["error"]["code"] == "stale", "a request dated 6 minutes ago is refused")
        headers = signed_headers(key, key_id, "GET", host, path)
        status, answer = http("GET", base + path, headers=headers)
        check(status == 200 and [u["supportId"] for u in answer["users"]] == [support_id],
              "a request signed with Python's cryptography is accepted")
        status, answer = http("GET", base + path, headers=headers)
        check(status == 401 and answer["error"]["code"] == "replayed", "the same signed request again is refused")
        # ECDSA signatures are malleable: (r, n - s) verifies too; it is still the same request.
        r, s = decode_dss_signature(base64.b64decode(headers["X-Coffer-Request-SignatureV1"]))
        order = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
        twin = {**headers, "X-Coffer-Request-SignatureV1": base64.b64encode(encode_dss_signature(r, order - s)).decode()}
        status, answer = http("GET", base + path, headers=twin)
        check(status == 401 and answer["error"]["code"] == "replayed",
              "the same request with the signature's other form (s -> n - s) is refused as a replay")
        body = json.dumps({"supportId": support_id, "credits": 5, "reason": "API"}).encode()
        grants = "/v1/admin/grants?environment=Sandbox"
        headers = signed_headers(key, key_id, "POST", host, grants, body)
        status, answer = http("GET", base + grants, headers=headers)
        check(status == 401 and answer["error"]["code"] == "bad-signature",
              "a signature made for POST does not open GET")
        headers = signed_headers(key, key_id, "POST", host, grants, body)
        status, answer = http("POST", base + grants, headers={**headers, "Content-Type": "application/json"},
                              raw=body)
        check(status == 201 and answer["status"] == "pending", "a signed grant is created")
    finally:
        for process in processes:
            process.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
        shutil.rmtree(folder, ignore_errors=True)
    print(f"panel browser test: {len(CHECKS)} checks passed; screenshots in {shots}")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as failure:
        print(f"FAILED: {failure}", file=sys.stderr)
        sys.exit(1)

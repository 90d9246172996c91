import CofferAPI
import CofferAdmin
import CofferCore
import CofferServer
import CofferStore
import CofferStorePostgres
import CofferStoreSQLite
import CofferTestSupport
import Foundation
import GRDB
import Hummingbird
import HummingbirdTesting
import Synchronization
import Testing

/// Every query behind support's pages, the admin API's reads, the probes and `GET /v1/me` reads only what its answer
/// needs, through an index (issue 38 §1): the pages are opened over HTTP on each SQL engine, every statement the
/// store ran is explained (SQLite's `EXPLAIN QUERY PLAN`; PostgreSQL's own plans, logged by auto_explain with
/// sequential scans off), and no plan may read a table that grows with customers beyond their rows or a page of it
/// (``QueryPlans``).
@Suite("Page query plans", .timeLimit(.minutes(2)))
struct PageQueryPlanTests {
    typealias Fixture = ClientAPITests

    /// Customers with purchases, a refund, grants in every state, a merge, audit entries, Apple's notifications and
    /// a webhook endpoint with deliveries.
    static func seed(_ store: any CofferStore, owner: User) async throws -> (supportId: String, transaction: String) {
        let start = AdminAPITests.now.addingTimeInterval(-86_400)
        var others: [User] = []
        for index in 0..<6 {
            let user = User(
                environment: .sandbox, supportId: SupportID(String(format: "_%012x", 0xabc000 + index))!,
                tokenHash: "seed-\(index)", createdAt: start.addingTimeInterval(Double(index)))
            try await store.createUser(user)
            others.append(user)
        }
        try await store.saveWebhookEndpoint(
            WebhookEndpoint(
                id: "wh_seed", environment: .sandbox, url: "https://hooks.example.com",
                secret: "secret-0123456789abcdef",
                createdAt: start))
        for (index, user) in ([owner] + others).enumerated() {
            for purchase in 0..<3 {
                let fact = TransactionFact(
                    transactionId: "t\(index)-\(purchase)", originalTransactionId: "t\(index)-0",
                    productId: purchase == 0 ? "com.example.pro.monthly" : "com.example.credits", quantity: 1,
                    purchaseDate: start, expiresDate: purchase == 0 ? start.addingTimeInterval(30 * 86_400) : nil,
                    revocationDate: nil, isFamilyShared: false, isTrial: false, isUpgraded: false, price: 990,
                    currency: "EUR")
                _ = try await store.apply(
                    LedgerRequest(
                        owner: user.id, environment: .sandbox, event: .purchase(fact, credits: 100),
                        at: start.addingTimeInterval(Double(purchase))))
            }
            let grant = Grant(
                environment: .sandbox, recipient: user.id, credits: 5, reason: "seed", createdBy: "ada",
                createdAt: start)
            try await store.createGrant(
                grant,
                audit: [
                    AuditEvent(
                        environment: .sandbox, actor: "admin:ada", action: "grant.create",
                        subject: user.supportId.rawValue,
                        at: start)
                ])
            _ = try await store.recordNotification(
                NotificationRecord(
                    uuid: "n-\(index)", environment: .sandbox, type: "DID_RENEW", subtype: nil,
                    transactionId: "t\(index)-0", originalTransactionId: "t\(index)-0", owner: user.id,
                    signedDate: start, receivedAt: start.addingTimeInterval(60), outcome: .applied))
        }
        var refund = try #require(try await store.receipt(transactionId: "t1-1", environment: .sandbox)).transaction
        refund.revocationDate = start.addingTimeInterval(600)
        _ = try await store.apply(
            LedgerRequest(
                owner: others[0].id, environment: .sandbox, event: .revocation(refund),
                at: start.addingTimeInterval(600)))
        return (owner.supportId.rawValue, "t0-1")
    }

    /// What support opens: every panel page, the admin API's reads, the probes, and the app's `GET /v1/me`.
    static func visit(
        _ client: some TestClientProtocol, _ browser: inout PanelTests.Browser, user: CreateUserResponse,
        transaction: String, signer: AdminRequestSigner
    ) async throws {
        let id = user.supportId
        let pages = [
            "/admin", "/admin/users", "/admin/users?q=\(id.prefix(6))", "/admin/users?q=\(id)",
            "/admin/users?q=\(transaction)", "/admin/users?page=2", "/admin/users/\(id)",
            "/admin/users/\(id)/export.json", "/admin/users/\(id)/export.csv", "/admin/grants",
            "/admin/grants?status=pending", "/admin/grants?status=claimed", "/admin/grants?status=cancelled",
            "/admin/audit", "/admin/audit?customer=\(id)", "/admin/audit?action=grant", "/admin/audit?admin=ada",
            "/admin/audit.csv", "/admin/webhooks", "/admin/settings", "/admin/admins", "/admin/extensions",
        ]
        for page in pages {
            let response = try await browser.get(client, page)
            #expect(response.status == .ok, "\(page): \(response.status)")
        }
        for probe in ["/healthz", "/readyz", "/metrics"] {
            #expect(try await client.execute(uri: probe, method: .get).status == .ok, "\(probe)")
        }
        let me = try await client.execute(uri: "/v1/me", method: .get, headers: Fixture.bearer(user.token))
        #expect(me.status == .ok)
        for read in [
            "/v1/admin/dashboard?environment=Sandbox", "/v1/admin/users?environment=Sandbox",
            "/v1/admin/users?environment=Sandbox&search=\(id)", "/v1/admin/users/\(id)?environment=Sandbox",
            "/v1/admin/grants?environment=Sandbox", "/v1/admin/audit?environment=Sandbox",
            "/v1/admin/subscriptions/extensions?environment=Sandbox",
        ] {
            let response = try await AdminAPITests.send(client, signer, .get, read)
            #expect(response.status == .ok, "\(read): \(response.status)")
        }
    }

    /// Seeds `store`, signs in, and opens every page: `seeded` runs between the seeding and the pages, `visited`
    /// after them (the caller collects what ran between). On a Production server, its Sandbox view's pages: App
    /// Review's and TestFlight's customers and their grants.
    static func open(
        _ store: any CofferStore, server: AppStoreEnvironment, seeded: @escaping @Sendable () async throws -> Void,
        visited: @escaping @Sendable () async throws -> Void
    ) async throws {
        let signer = try await AdminAPITests.key(in: store)
        try await PanelTests.signedIn(store, server: server) { client, user, browser in
            guard server == .production else {
                let owner = try #require(
                    try await store.user(supportId: SupportID(user.supportId)!, environment: .sandbox))
                let (_, transaction) = try await seed(store, owner: owner)
                try await seeded()
                try await visit(client, &browser, user: user, transaction: transaction, signer: signer)
                try await visited()
                return
            }
            let reviewer = try await seedSandboxView(store)
            try await seeded()
            let csrf = try PanelTests.Browser.csrf(try await browser.get(client, "/admin"))
            _ = try await browser.post(client, "/admin/environment", [("environment", "Sandbox"), ("csrf", csrf)])
            for page in [
                "/admin", "/admin/users", "/admin/users?q=\(reviewer.prefix(6))", "/admin/users/\(reviewer)",
                "/admin/grants", "/admin/grants?status=pending", "/admin/grants/delete-all",
            ] {
                let response = try await browser.get(client, page)
                #expect(response.status == .ok, "\(page): \(response.status)")
            }
            try await visited()
        }
    }

    /// A Production server's App Review install (its AppTransaction says Sandbox), a TestFlight install whose
    /// purchase is Sandbox data, and a real customer, each with a grant.
    ///
    /// - Returns: The App Review customer's Support ID.
    static func seedSandboxView(_ store: any CofferStore) async throws -> String {
        let now = AdminAPITests.now
        var reviewer = User(
            environment: .production, supportId: try #require(SupportID("_aaaaaaaaaaa1")), tokenHash: "r",
            createdAt: now)
        reviewer.appleAccount = AppleAccount(appTransactionId: "7001", environment: .sandbox)
        let tester = User(
            environment: .production, supportId: try #require(SupportID("_bbbbbbbbbbb2")), tokenHash: "t",
            createdAt: now)
        let customer = User(
            environment: .production, supportId: try #require(SupportID("_ccccccccccc3")), tokenHash: "c",
            createdAt: now)
        for user in [reviewer, tester, customer] { try await store.createUser(user) }
        for (index, (user, data)) in [
            (tester, AppStoreEnvironment.sandbox), (customer, .production),
        ].enumerated() {
            let fact = TransactionFact(
                transactionId: "20000001\(index)", productId: "com.example.credits", purchaseDate: now,
                environment: data)
            _ = try await store.apply(
                LedgerRequest(owner: user.id, environment: .production, event: .purchase(fact, credits: 100), at: now))
        }
        for user in [reviewer, tester, customer] {
            try await store.createGrant(
                Grant(
                    environment: .production, recipient: user.id, credits: 5, reason: "Ticket", createdBy: "ada",
                    createdAt: now))
        }
        return reviewer.supportId.rawValue
    }

    /// Thousands of customers, receipts, ledger entries, grants, audit entries and notifications written straight
    /// into PostgreSQL, then analyzed: the planner weighs its indexes by the tables' statistics, and on a few rows
    /// every path costs the same.
    static func volume(_ environment: AppStoreEnvironment) -> [String] {
        let volume = [
            """
            INSERT INTO users (id, environment, support_id, token_hash, app_account_token, created_at)
            SELECT upper(md5('user' || i)::uuid::text), 'Sandbox', '_' || lpad(to_hex(i + 268435456), 12, '0'),
                'bulk-token-' || i, upper(md5('token' || i)::uuid::text), 1700000000000 + i
            FROM generate_series(1, 3000) i
            """,
            """
            INSERT INTO wallets (user_id, balance, deficit)
            SELECT upper(md5('user' || i)::uuid::text), 100, CASE WHEN i % 7 = 0 THEN 5 ELSE 0 END
            FROM generate_series(1, 3000) i
            """,
            """
            INSERT INTO receipts (environment, transaction_id, owner, original_transaction_id, product_id, quantity,
                purchase_date, family_shared, trial, upgraded, taken_from_balance, added_to_deficit, delivered_credits,
                delivered_at, data_environment, price, currency, expires_date, revoked_at)
            SELECT 'Sandbox', 'bulk-t-' || i, upper(md5('user' || (i % 3000 + 1))::uuid::text),
                'bulk-t-' || (i - i % 5),
                CASE WHEN i % 5 = 0 THEN 'com.example.pro.monthly' ELSE 'com.example.credits' END, 1,
                1700000000000 + i, false, false, false, 0, 0, 100, 1700000000000 + i * 1000, 'Sandbox', 990, 'EUR',
                CASE WHEN i % 5 = 0 THEN 1800000000000 END, CASE WHEN i % 50 = 0 THEN 1700000500000 + i END
            FROM generate_series(1, 15000) i
            """,
            """
            INSERT INTO ledger_entries (environment, owner, key, kind, amount, balance_delta, deficit_delta, balance_after,
                deficit_after, created_at)
            SELECT 'Sandbox', upper(md5('user' || (i % 3000 + 1))::uuid::text), 'purchase:bulk-t-' || i, 'purchase',
                100, 100, 0, 100, 0,
                1700000000000 + i
            FROM generate_series(1, 15000) i
            """,
            """
            INSERT INTO grants (id, environment, recipient, credits, reason, created_by, created_at, claimed_at,
                cancelled_at)
            SELECT upper(md5('grant' || i)::uuid::text), 'Sandbox', upper(md5('user' || (i % 3000 + 1))::uuid::text), 5, 'bulk', 'ada', 1700000000000 + i,
                CASE WHEN i % 3 = 0 THEN 1700000001000 + i END, CASE WHEN i % 3 = 1 THEN 1700000001000 + i END
            FROM generate_series(1, 3000) i
            """,
            """
            INSERT INTO audit_events (id, environment, actor, action, subject, at)
            SELECT upper(md5('audit' || i)::uuid::text), 'Sandbox', 'admin:ada', 'balance.set', '_' || lpad(to_hex(i + 268435456), 12, '0'),
                1700000000000 + i
            FROM generate_series(1, 3000) i
            """,
            """
            INSERT INTO notifications (environment, uuid, type, signed_date, received_at, outcome, source)
            SELECT 'Sandbox', 'bulk-n-' || i, 'DID_RENEW', 1700000000000 + i, 1700000000000 + i * 1000, 'applied', 'apple'
            FROM generate_series(1, 3000) i
            """,
            "ANALYZE",
        ]
        return volume.map { $0.replacingOccurrences(of: "'Sandbox'", with: "'\(environment.rawValue)'") }
    }

    @Test(
        "SQLite: every statement behind the pages searches an index or walks one page of it",
        arguments: [AppStoreEnvironment.sandbox, .production])
    func sqlite(server: AppStoreEnvironment) async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-\(UUID().uuidString).sqlite")
        let log = StatementLog()
        let store = try SQLiteStore(path: path.path, statements: { log.append($0) })
        let statements = Mutex<[String]>([])
        try await Self.open(store, server: server) {
            _ = log.take()
        } visited: {
            statements.withLock { $0 = log.take() }
        }
        // Queries and writes (a transaction's BEGIN and COMMIT, GRDB's savepoints and pragmas have no plan).
        let ran = Set(
            statements.withLock { $0 }.filter { statement in
                ["SELECT", "WITH", "INSERT", "UPDATE", "DELETE"].contains { statement.uppercased().hasPrefix($0) }
            })
        #expect(ran.count > 10, "only \(ran.count) statements ran")
        let database = try DatabaseQueue(path: path.path)
        var problems: [String] = []
        for statement in ran.sorted() {
            let plan = try await database.read { db in
                try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + statement).map { $0["detail"] as String }
            }
            for problem in QueryPlans.problems(sqlitePlan: plan, statement: statement) {
                problems.append("\(problem)\n    in: \(statement.prefix(400))")
            }
        }
        #expect(
            problems.isEmpty,
            "\(problems.count) plans read more than their answer:\n\(problems.joined(separator: "\n"))")
    }

    @Test(
        "PostgreSQL: every plan behind the pages uses an index (sequential scans off) for more than the environment",
        arguments: [AppStoreEnvironment.sandbox, .production])
    func postgres(server: AppStoreEnvironment) async throws {
        guard ServerEngine.allCases.contains(.postgres) else { return }
        let url = try await ServerEngine.migratedDatabase()
        try await QueryPlans.explainPostgres(databaseURL: url)
        let store = try await PostgresStore(url: url, maximumConnections: 8)
        defer { store.close() }
        let name = String(URLComponents(string: url)?.path.dropFirst() ?? "")
        let marker = "coffer-plans-\(UUID().uuidString)"
        let seeded = "coffer-seeded-\(UUID().uuidString)"
        try await Self.open(store, server: server) {
            try await TestPostgres.execute(Self.volume(server) + ["SELECT '\(seeded)'"], on: url)
        } visited: {
            try await TestPostgres.execute(["SELECT '\(marker)'"], on: url)
        }
        let plans = try await QueryPlans.postgresPlans(database: name, marker: marker)
        // Only what the pages ran: the plans after the seeding's marker.
        let start = (plans.firstIndex { $0.statement.contains(seeded) }).map { $0 + 1 } ?? 0
        let pages = plans[start...].filter { !$0.statement.contains(seeded) }
        #expect(pages.count > 10, "only \(pages.count) plans were logged")
        var problems: [String] = []
        for (statement, plan) in pages {
            for problem in QueryPlans.problems(postgresPlan: plan) {
                problems.append("\(problem)\n    in: \(statement.prefix(400))")
            }
        }
        #expect(
            problems.isEmpty,
            "\(problems.count) plans read more than their answer:\n\(problems.joined(separator: "\n"))")
    }
}

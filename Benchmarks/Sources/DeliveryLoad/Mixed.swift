// The mixed load: deliveries, GET /v1/me, spends with an Idempotency-Key, grant claims and one refund
// notification for every 50 deliveries, at once, each route by its own wrk process so each has its own
// throughput and latency.
import CofferCore
import CofferStore
import CofferStorePostgres
import CofferStoreSQLite
import Foundation

enum Mixed {
    /// What the mixed load acknowledged, to check against the ledger afterwards.
    struct Outcome {
        var acknowledged: [String]
        var spends = 0
        var claims = 0
        var refunds = 0
        /// Connections of the spend, claim and notification routes: requests in flight at the stop.
        var inFlight = 0
        var passed = true

        /// Whether the ledger holds what was acknowledged: every acknowledged spend, claim and refund, and no
        /// more than the requests in flight at the stop besides (the delivery phases before make purchases only).
        func matches(_ ledger: LedgerCheck) -> Bool {
            (spends...(spends + inFlight)).contains(ledger.spends)
                && (claims...(claims + inFlight)).contains(ledger.grants)
                && (refunds...(refunds + inFlight)).contains(ledger.revocations)
        }
    }

    static func run(
        servers: [Child], customers: [Customer], fixture: Fixture, databaseURL: String, connections: Int,
        seconds: Double, deliveryRate: Double, deliveryLatency: Double, refundable: [String]
    ) async throws -> Outcome {
        let folder = fixture.folder.path
        let instances = servers.count
        // 64 connections: 40 deliveries, 8 reads, 8 spends, 4 grant claims (each pausing 20 ms between claims),
        // and two connections for Apple's refund notifications, paced at one for every 50 deliveries expected (a
        // connection waits its pause plus a request's time, taken as the deliveries' median latency).
        let deliveryConnections = max(instances, connections * 5 / 8)
        let readConnections = max(1, connections / 8)
        let spendConnections = max(1, connections / 8)
        let claimConnections = max(1, connections / 16)
        let claimPause = 20
        let expectedDeliveries = deliveryRate * Double(deliveryConnections) / Double(connections)
        let notificationConnections = 2
        let notificationPause = max(
            1, Int(Double(notificationConnections) * 1000 * 50 / max(1, expectedDeliveries) - deliveryLatency))

        var jobs: [WrkJob] = []
        for index in 0..<instances {
            jobs.append(
                WrkJob(
                    name: "deliveries \(index)", port: servers[index].port,
                    connections: deliveryConnections / instances, threads: 1, seconds: seconds,
                    prefix: "\(folder)/mixed-deliveries-\(index)", expect: "delivered"))
        }
        let reads = WrkJob(
            name: "GET /v1/me", port: servers[0].port, connections: readConnections, threads: 1, seconds: seconds,
            prefix: "\(folder)/mixed-me", expect: "ok", rewind: true)
        let spends = WrkJob(
            name: "POST /v1/me/spend", port: servers[1 % instances].port, connections: spendConnections, threads: 1,
            seconds: seconds, prefix: "\(folder)/mixed-spend", expect: "ok")
        let claims = WrkJob(
            name: "POST /v1/me/grants/{id}/claim", port: servers[0].port, connections: claimConnections, threads: 1,
            seconds: seconds, prefix: "\(folder)/mixed-claim", expect: "ok", delay: claimPause)
        let notifications = WrkJob(
            name: "POST /v1/apple/notifications (REFUND)", port: servers[1 % instances].port,
            connections: notificationConnections, threads: 1, seconds: seconds, prefix: "\(folder)/mixed-notifications",
            expect: "ok",
            delay: notificationPause)
        jobs += [reads, spends, claims, notifications]

        // The requests.
        let preparing = ContinuousClock.now
        try await writeDeliveries(
            count: Int(deliveryRate * seconds * 1.2), firstId: 5_000_000_000_000, customers: customers,
            files: jobs.filter { $0.expect == "delivered" }.flatMap(\.files), fixture: fixture)
        let me = try RequestFile(path: reads.files[0])
        for customer in customers { me.append(method: "GET", path: "/v1/me", token: customer.token, body: nil) }
        try me.close()
        let spend = try RequestFile(path: spends.files[0])
        for index in 0..<Int(max(20_000, deliveryRate * seconds)) {
            spend.append(
                method: "POST", path: "/v1/me/spend", token: customers[index % customers.count].token,
                headers: [("Idempotency-Key", "load-spend-\(index)")], body: #"{"amount":1}"#)
        }
        try spend.close()
        let grantCount = Int(Double(claimConnections) * 1000 / Double(claimPause) * seconds * 1.5)
        try await createGrants(grantCount, customers: customers, databaseURL: databaseURL, file: claims.files[0])
        let notificationCount = min(
            refundable.count,
            Int(Double(notificationConnections) * 1000 / Double(notificationPause) * seconds * 1.5) + 10)
        let refunds = try RequestFile(path: notifications.files[0])
        for id in refundable.prefix(notificationCount) {
            guard let number = Int(id) else { continue }
            let signed = try fixture.refundNotification(id: number, customer: customers[number % customers.count])
            refunds.append(
                method: "POST", path: "/v1/apple/notifications", token: nil, body: #"{"signedPayload":"\#(signed)"}"#)
        }
        try refunds.close()
        progress("prepared the mixed load (\(grantCount) grants) in \(ContinuousClock.now - preparing)")

        let before = CPUSnapshot(servers)
        let results = try await WrkBenchmark.runAll(jobs)
        let after = CPUSnapshot(servers)
        let total = results.reduce(0) { $0 + $1.good }
        let window = results.map(\.seconds).max() ?? seconds
        print(
            """
            == Mixed load: \(servers.count) instance\(instances == 1 ? "" : "s"), \
            \(jobs.reduce(0) { $0 + $1.connections }) connections, \(format(window, 1)) s
            | route | connections | answered/s | errors | p50 | p90 | p99 | max |
            |---|---|---|---|---|---|---|---|
            """)
        var outcome = Outcome(acknowledged: [])
        for route in ["deliveries", reads.name, spends.name, claims.name, notifications.name] {
            let parts = results.filter { $0.job.name.hasPrefix(route) }
            let good = parts.reduce(0) { $0 + $1.good }
            let errors = parts.reduce(0) { $0 + $1.errors }
            if errors > 0 { outcome.passed = false }
            // With several instances, the worse instance's percentiles.
            let worst = { (value: (WrkResult) -> Double) in format(parts.map(value).max() ?? 0) }
            let routeName = route == "deliveries" ? "POST /v1/transactions" : route
            print(
                "| \(routeName) | \(parts.reduce(0) { $0 + $1.job.connections }) | \(format(Double(good) / window, 0)) | "
                    + "\(errors) | \(worst(\.p50)) ms | \(worst(\.p90)) ms | \(worst(\.p99)) ms | \(worst(\.max)) ms |")
            for part in parts { if let sample = part.samples.first { print("  first error: \(sample)") } }
        }
        outcome.acknowledged = results.flatMap(\.acknowledged)
        outcome.spends = results.first { $0.job.name == spends.name }?.good ?? 0
        outcome.claims = results.first { $0.job.name == claims.name }?.good ?? 0
        outcome.refunds = results.first { $0.job.name == notifications.name }?.good ?? 0
        outcome.inFlight = spendConnections + claimConnections + notificationConnections
        let deliveries = results.filter { $0.job.name.hasPrefix("deliveries") }.reduce(0) { $0 + $1.good }
        print(
            "refund notifications: one for every \(format(Double(deliveries) / Double(max(1, outcome.refunds)), 0)) "
                + "deliveries; CPU per answered request: \(CPUSnapshot.per(total, from: before, to: after))")
        return outcome
    }

    /// Creates `count` pending grants of 1 credit through the store (support would make them in the panel) and
    /// writes a claim request for each.
    static func createGrants(_ count: Int, customers: [Customer], databaseURL: String, file: String) async throws {
        let store = try await openStore(databaseURL)
        defer { (store as? PostgresStore)?.close() }
        let users = try await withThrowingTaskGroup(of: (Int, UUID).self) { group in
            for (index, customer) in customers.enumerated() {
                group.addTask {
                    guard let supportId = SupportID(customer.supportId),
                        let user = try await store.user(supportId: supportId, environment: .sandbox)
                    else { throw LoadFailure("customer \(customer.supportId) is not in the database") }
                    return (index, user.id)
                }
            }
            var users = [UUID](repeating: UUID(), count: customers.count)
            for try await (index, id) in group { users[index] = id }
            return users
        }
        let grants: [(Int, UUID)] = try await withThrowingTaskGroup(of: [(Int, UUID)].self) { group in
            let lanes = 8
            for lane in 0..<lanes {
                group.addTask {
                    var made: [(Int, UUID)] = []
                    for index in stride(from: lane, to: count, by: lanes) {
                        let grant = Grant(
                            environment: .sandbox, recipient: users[index % users.count], credits: 1,
                            reason: "load test", createdBy: "load", createdAt: Date())
                        try await store.createGrant(grant)
                        made.append((index, grant.id))
                    }
                    return made
                }
            }
            var grants: [(Int, UUID)] = []
            for try await made in group { grants += made }
            return grants.sorted { $0.0 < $1.0 }
        }
        let requests = try RequestFile(path: file)
        for (index, id) in grants {
            requests.append(
                method: "POST", path: "/v1/me/grants/\(id.uuidString.lowercased())/claim",
                token: customers[index % customers.count].token, body: nil)
        }
        try requests.close()
    }
}

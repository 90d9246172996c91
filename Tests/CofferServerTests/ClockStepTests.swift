import CofferAPI
import CofferAdmin
import CofferAppStore
import CofferCore
import CofferServer
import CofferService
import CofferSimulator
import CofferStore
import CofferTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Synchronization
import Testing

/// How far the server's clock is from the true time: NTP steps it back and forward.
final class ClockStep: Sendable {
    private let value = Mutex<TimeInterval>(0)

    /// The offset in seconds.
    var seconds: TimeInterval {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }

    /// A clock reading `base()` moved by the offset.
    func clock(_ base: @escaping @Sendable () -> Date) -> @Sendable () -> Date {
        { base().addingTimeInterval(self.seconds) }
    }
}

/// The server's clock stepping back or forward (an NTP correction) breaks no rule: Apple's signed dates are
/// checked by Apple's clock, sessions end by their hours, rate limits neither lock out nor refill past their
/// burst, grants and backups keep their order by what was written, not by when the clock said it was.
@Suite("The server's clock steps", .timeLimit(.minutes(1)))
struct ClockStepTests {
    static let start = ClientAPITests.start

    /// A server's client and support services over one in-memory store, on a clock that steps, and Apple on a
    /// true clock of its own.
    static func make(wallet: WalletMode, step: ClockStep) throws -> (ClientService, AdminService, SimulatedAppStore) {
        let (pki, catalog, apple) = try SimulatedApple.make(
            at: start,
            selling: [
                CatalogProduct(id: "com.example.credits", kind: .consumable, credits: 100),
                CatalogProduct(id: "com.example.noads", kind: .nonConsumable, entitlements: ["adFree"]),
            ])
        var configuration = ServerConfiguration(bundleId: ClientAPITests.bundleId)
        configuration.wallet = wallet
        let store = InMemoryStore()
        let now = step.clock { start.addingTimeInterval(3_600) }
        let dependencies = try ServerDependencies(
            store: store,
            verifier: try SignedDataVerifier(
                rootCertificates: [pki.rootDER()], bundleId: ClientAPITests.bundleId, appAppleId: 1_234,
                environment: .sandbox, now: now),
            catalog: catalog, now: now)
        let client = ClientService(
            ServiceParts(
                configuration: configuration.service, dependencies: dependencies, events: EventHub(),
                ledger: LedgerBatcher(store: store)))
        return (client, AdminService(store: store, catalog: catalog, walletMode: wallet, now: now), apple)
    }

    @Test(
        "Apple's signed dates: taken with the server's clock behind or ahead of Apple's; what was bought shows at once")
    func signedDates() async throws {
        let step = ClockStep()
        let (client, _, apple) = try Self.make(wallet: .server, step: step)
        _ = try await apple.advanceClock(by: 3_600)  // Apple's clock reads what the server's does, unstepped
        // Registration takes a fresh AppTransaction with the server's clock behind Apple's by up to an hour, or ahead.
        for offset: TimeInterval in [-3_000, -240, 240] {
            step.seconds = offset
            let signed = try await apple.signedAppTransaction(account: "ann")
            let (registered, _) = try await client.register(signedAppTransaction: signed)
            #expect(!registered.supportId.isEmpty)
        }
        step.seconds = -7_200
        await #expect(throws: ServiceError.self) {
            _ = try await client.register(signedAppTransaction: try await apple.signedAppTransaction(account: "bob"))
        }

        let created = try await client.createUser()
        let user = try await client.authenticate(token: created.token)
        // The server's clock half an hour behind Apple's: the purchase Apple just signed is delivered and unlocks
        // what it sells now, not half an hour later.
        step.seconds = -1_800
        let bought = try await apple.purchase(
            account: "cy", productId: "com.example.noads", appAccountToken: created.appAccountToken)
        let noAds = try await client.present(
            try await apple.signedTransaction(id: try #require(bought.transactionIds.first)), user: user)
        #expect(noAds.outcome == .delivered)
        #expect(noAds.entitlements == ["adFree"])
        // A year ahead (past nothing Apple signed with): Apple's data is checked by Apple's signing date.
        step.seconds = 365 * 86_400
        let credits = try await apple.purchase(
            account: "cy", productId: "com.example.credits", appAccountToken: created.appAccountToken)
        let signed = try await apple.signedTransaction(id: try #require(credits.transactionIds.first))
        #expect(try await client.present(signed, user: user).outcome == .delivered)
        // Back to the true time: the same purchase again is a duplicate, credited once.
        step.seconds = 0
        let again = try await client.present(signed, user: user)
        #expect(again.outcome == .duplicate && again.balance == 100)
        #expect(try await client.me(user: user).entitlements == ["adFree"])
    }

    @Test("rate limits: a step back neither refills nor locks out; a step forward refills the burst, no more")
    func rateLimits() {
        let step = ClockStep()
        let limiter = RateLimiter(
            limit: RateLimit(burst: 3, perSecond: 1), now: step.clock { Self.start })
        let address = "192.0.2.7"
        for _ in 0..<3 { #expect(limiter.take(address) == nil) }
        #expect(limiter.take(address) == 1)
        // A day back: no token comes from it, and the wait stays a second, not a day.
        step.seconds = -86_400
        #expect(limiter.take(address) == 1)
        step.seconds = -86_400 + 2
        #expect(limiter.take(address) == nil)
        #expect(limiter.take(address) == nil)
        #expect(limiter.take(address) != nil)
        // Ten years ahead: the burst, no more.
        step.seconds = 10 * 366 * 86_400
        for _ in 0..<3 { #expect(limiter.take(address) == nil) }
        #expect(limiter.take(address) == 1)
        // The far ends of time trap nothing.
        for extreme in [Date.distantPast, Date.distantFuture] {
            step.seconds = extreme.timeIntervalSince(Self.start)
            let wait = limiter.take(address)
            #expect(wait == nil || (1...86_400).contains(wait!))
        }
    }

    @Test("grants made either side of a step back are each claimed once; backups keep their order by version")
    func grantsAndBackups() async throws {
        let step = ClockStep()
        let (client, support, _) = try Self.make(wallet: .server, step: step)
        let created = try await client.createUser()
        let user = try await client.authenticate(token: created.token)
        let first = try await support.createGrant(
            environment: .sandbox, supportId: created.supportId, credits: 40, reason: "before the step", actor: "ada")
        step.seconds = -3_600
        let second = try await support.createGrant(
            environment: .sandbox, supportId: created.supportId, credits: 2, reason: "after the step", actor: "ada")
        #expect(Set(try await client.grants(of: user, status: .pending).map(\.id)) == [first.id, second.id])
        #expect(try await client.claimGrant(second.id, for: user).balance == 2)
        step.seconds = 0
        #expect(try await client.claimGrant(first.id, for: user).balance == 42)
        #expect(try await client.claimGrant(second.id, for: user).balance == 42)
        #expect(try await client.grants(of: user, status: .pending).isEmpty)
        let spent = try await client.spend(5, key: "after", for: user)
        #expect(spent == 37)

        // The device wallet's backup: a write after a step back is newer by version, though its date is older.
        let (device, _, _) = try Self.make(wallet: .device, step: step)
        let owner = try await device.authenticate(token: try await device.createUser().token)
        guard
            case .saved(let one) = try await device.saveBackup(of: owner, value: 10, device: "a", precondition: .absent)
        else { throw Broken(description: "the first backup was not saved") }
        step.seconds = -3_600
        guard
            case .saved(let two) = try await device.saveBackup(
                of: owner, value: 20, device: "b", precondition: .version(one.version))
        else { throw Broken(description: "the second backup was not saved") }
        #expect(two.version == one.version + 1 && two.lastUpdated < one.lastUpdated)
        #expect(
            try await device.saveBackup(of: owner, value: 30, device: "a", precondition: .version(one.version))
                == .conflict(current: two))
        // The app that wrote the first learns the second is newer: by its version, not its earlier date.
        #expect(
            BackupRule.decide(
                localBalance: 10, defaultBalance: 0, lastBackupAt: one.lastUpdated, lastVersion: one.version,
                server: two) == .acceptServer(20))
    }

    @Test("a panel session survives a step back and ends when the clock passes its hours")
    func sessions() async throws {
        let step = ClockStep()
        let store = InMemoryStore()
        try await PanelTests.admin(in: store)
        let setup = try ClientAPITests.Setup(store: store, now: step.clock { Self.start.addingTimeInterval(3_600) })
        try await setup.app.test(.router) { client in
            var browser = PanelTests.Browser()
            #expect(try await browser.signIn(client).status == .seeOther)
            #expect(try await browser.get(client, "/admin").status == .ok)
            step.seconds = -3_600
            #expect(try await browser.get(client, "/admin").status == .ok)
            step.seconds = 9 * 3_600
            let ended = try await browser.get(client, "/admin")
            #expect(ended.status == .seeOther && ended.headers[.location] == "/admin/login")
            #expect(try await browser.signIn(client).status == .seeOther)
            step.seconds = 0
            #expect(try await browser.get(client, "/admin").status == .ok)
        }
    }

    @Test("a signed admin request stays a replay when the clock steps forward past its window and back")
    func signatureReplay() async throws {
        let step = ClockStep()
        let store = InMemoryStore()
        let signer = try await AdminAPITests.key(in: store)
        let setup = try ClientAPITests.Setup(store: store, now: step.clock { AdminAPITests.now })
        try await setup.app.test(.router) { client in
            var headers = HTTPFields()
            for header in try signer.headers(
                method: "GET", host: "localhost", body: Data(), path: "/v1/admin/users", at: AdminAPITests.now)
            {
                headers[HTTPField.Name(header.name)!] = header.value
            }
            let first = try await client.execute(uri: "/v1/admin/users", method: .get, headers: headers)
            #expect(first.status == .ok)
            // An hour ahead, another request is signed and served (its record-keeping forgets what it may).
            step.seconds = 3_600
            let later = try await AdminAPITests.send(
                client, signer, .get, "/v1/admin/users", at: AdminAPITests.now.addingTimeInterval(3_600))
            #expect(later.status == .ok)
            // NTP steps the clock back: the first request, inside its window again, is still a replay.
            step.seconds = 0
            let again = try await client.execute(uri: "/v1/admin/users", method: .get, headers: headers)
            #expect(again.status == .unauthorized)
            #expect(try AdminAPITests.errorCode(again) == "replayed")
        }
    }
}

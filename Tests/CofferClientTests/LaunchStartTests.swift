import CofferClient
import CofferCore
import CofferSimulator
import CofferStore
import CofferStoreKit
import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The first frame and the launch's deadline (seed 003): the model starts from what the app showed when it last
/// ran, and a launch that cannot finish in time lets the app go on with it.
@Suite("SDK: the cached start and the launch deadline", .timeLimit(.minutes(2)))
struct LaunchStartTests {
    @Test("a new launch's model shows the last run's entitlements and balance before anything is asked")
    @MainActor
    func cachedStart() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .device) { world in
            let first = try world.app()
            try await first.launch()
            #expect(await CofferModel(sdk: first).entitlements.isEmpty)  // a first launch has nothing cached
            guard case .delivered = try await first.purchase(productId: PurchaseFlowTests.noAds),
                case .delivered = try await first.purchase(productId: PurchaseFlowTests.product, quantity: 2)
            else {
                Issue.record("not delivered")
                return
            }
            #expect(try await first.spend(30) == 170)
            #expect(try await first.refreshEntitlements().names == ["adFree"])
            await first.enteredBackground()
            // The app is killed; the next launch's first frame, before launch() or a refresh: the gate is open, the
            // balance is the one the customer last saw.
            let again = try world.app()
            #expect(again.cachedStart == CofferSDK.CachedStart(entitlements: ["adFree"], balance: 170, deficit: 0))
            let model = await CofferModel(sdk: again)
            #expect(await model.entitlements == ["adFree"])
            #expect(await model.balance == 170)
        }
    }

    /// A server that takes connections and never answers: the kernel queues them, nobody accepts.
    final class SilentServer: Sendable {
        let socket: Int32
        let port: Int

        init() throws {
            let fd = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
            }
            guard bound == 0, listen(fd, 16) == 0 else {
                close(fd)
                throw POSIXError(.EADDRINUSE)
            }
            _ = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
            socket = fd
            port = Int(UInt16(bigEndian: address.sin_port))
        }

        deinit { close(socket) }
    }

    @Test("a subscription that ended since the last run closes the gate from StoreKit while the server hangs")
    func endedWhileAway() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .device, products: CofferModelTests.products) { world in
            try await Self.endedWhileAway(world)
        }
    }

    @MainActor
    static func endedWhileAway(_ world: PurchaseFlowTests.World) async throws {
        do {
            let first = try world.app()
            try await first.launch()
            guard case .delivered(let id, _) = try await first.purchase(productId: CofferModelTests.pro) else {
                Issue.record("the subscription was not delivered")
                return
            }
            #expect(try await first.refreshEntitlements().names == ["premium"])
            // It expires while the app is away.
            try await world.apple.expireNow(originalTransactionId: id)
            let silent = try SilentServer()
            let hanging = try CofferSDK(
                configuration: SDKConfiguration(
                    wallet: .device, environment: .sandbox, catalog: world.catalog, deviceName: "iPhone",
                    launchDeadline: nil),
                storeKit: world.apple.device(account: "alice"),
                server: ServerClient(baseURL: URL(string: "http://127.0.0.1:\(silent.port)")!, timeout: 60),
                folder: world.folder.appendingPathComponent("app"),
                credentials: FileCredentialStore(path: world.folder.appendingPathComponent("credentials.json").path))
            // The launch puts StoreKit's entitlements first, before its first server step: the kept gate closes
            // though the server never answers.
            #expect(try await hanging.cachedEntitlements() == ["premium"])
            let launching = Task { try await hanging.launch() }
            defer { launching.cancel() }
            var closed = false
            for _ in 0..<200 where !closed {
                closed = try await hanging.cachedEntitlements().isEmpty
                if !closed { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(closed)
            // A screen's first frame shows the last run's gate (read as the SDK started); StoreKit's answer closes
            // it, the server never answering.
            let model = CofferModel(sdk: hanging)
            #expect(model.entitlements == ["premium"])
            let running = Task { await model.run() }
            defer { running.cancel() }
            #expect(try await CofferModelTests.eventually { model.entitlements.isEmpty })
        }
    }

    @Test("a launch past its deadline answers pastDeadline and goes on in the background; the next one completes")
    func deadline() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .device) { world in
            let online = try world.app()
            try await online.launch()
            _ = try await online.purchase(productId: PurchaseFlowTests.product)
            // The server hangs: every request waits (the client's own timeout is a minute).
            let silent = try SilentServer()
            let client = ServerClient(baseURL: URL(string: "http://127.0.0.1:\(silent.port)")!, timeout: 60)
            // The deadline is kept on a clock the test moves: the launch answers when the clock passes it.
            let clock = TestClock()
            var configuration = SDKConfiguration(
                wallet: .device, environment: .sandbox, catalog: world.catalog, deviceName: "iPhone",
                launchDeadline: 0.2)
            configuration.timerClock = clock
            let hanging = try CofferSDK(
                configuration: configuration, storeKit: world.apple.device(account: "alice"), server: client,
                folder: world.folder.appendingPathComponent("app"),
                credentials: FileCredentialStore(path: world.folder.appendingPathComponent("credentials.json").path))
            let launching = Task { try await hanging.launch() }
            await clock.waitForSleepers()
            clock.advance(0.1)
            #expect(clock.sleepers == 1)  // not yet past the deadline: the launch still waits
            clock.advance(0.1)
            let report = try await launching.value
            #expect(report.pastDeadline && report.recovered.isEmpty)
            // Launched again while the first launch's steps still wait (on the server, which never answers): it waits
            // for them, it does not run them twice.
            while client.requestsSent == 0 { await Task.yield() }
            let sent = client.requestsSent
            let again = Task { try await hanging.launch() }
            await clock.waitForSleepers()
            clock.advance(0.2)
            #expect(try await again.value.pastDeadline)
            #expect(client.requestsSent == sent)
            #expect(hanging.cachedStart.balance == 100)  // what the app shows meanwhile
            // The same install against the server that answers: the whole launch, no deadline met.
            let back = try world.app(launchDeadline: 30)
            let full = try await back.launch()
            #expect(!full.pastDeadline && !full.offline)
            #expect(try await back.balance() == 100)
        }
    }

    @Test("the refresh button picks up support's grant and takes support's balance edit (seed 000, Plan D)")
    @MainActor
    func refreshButton() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .device) { world in
            let app = try world.app()
            try await app.launch()
            let model = await CofferModel(sdk: app)
            let text = try #require(await app.credentials?.supportId)
            let supportId = try #require(SupportID(text))
            let user = try #require(try await world.serverStore.user(supportId: supportId, environment: .sandbox))
            try await world.serverStore.createGrant(
                Grant(
                    environment: .sandbox, recipient: user.id, credits: 500, reason: "Ticket #9", createdBy: "support",
                    createdAt: Date()))
            await model.refresh()
            #expect(await model.balance == 500)
            // Support sets the balance to 1,234 (an admin edit of the backup): the button takes it.
            _ = try await world.serverStore.saveBackup(
                owner: user.id, environment: .sandbox, value: 1_234, precondition: .overwrite,
                writer: .admin("support"), at: Date().addingTimeInterval(60))
            await model.refresh()
            #expect(await model.balance == 1_234)
            #expect(await model.lastError == nil)
        }
    }
}

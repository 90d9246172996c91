import AsyncHTTPClient
import CofferAPI
import CofferAppStore
import CofferClient
import CofferCore
import CofferService
import CofferStore
import Foundation
import Synchronization
import Testing

/// Grants reach a sleeping app: the device registers its APNs token, and support's grant, a balance edit or a
/// refund sends it a background push (APNs' provider API over HTTP/2, played by ``APNsStandIn``), which the
/// SDK acts on.
@Suite("Background pushes (APNs)", .timeLimit(.minutes(3)))
struct PushTests {
    static let deviceToken = Data((0..<32).map { UInt8($0 * 7 % 256) })
    static var hex: String { deviceToken.map { String(format: "%02x", $0) }.joined() }

    static func client(_ standIn: APNsStandIn, _ base: String, http: HTTPClient, timeout: Int64 = 10) -> APNsClient {
        APNsClient(
            httpClient: http, credentials: .init(keyId: standIn.keyId, teamId: standIn.teamId, privateKey: standIn.key),
            topic: standIn.topic, baseURL: base, timeout: .seconds(timeout),
            retryDelays: [.milliseconds(10), .milliseconds(10)])
    }

    @Test("the client speaks APNs' provider API: HTTP/2, Apple's headers, an ES256 provider token; and its answers")
    func protocolAndAnswers() async throws {
        let standIn = try APNsStandIn(topic: PurchaseFlowTests.bundleId)
        let http = HTTPClient(
            eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: try standIn.clientTLS()))
        try await Self.shuttingDown(http) {
            try await standIn.run { base in
                let apns = Self.client(standIn, base, http: http)
                #expect(
                    await apns.sendBackground(deviceToken: Self.hex, gateway: .production, data: ["type": "grant"])
                        == .delivered)
                let first = try #require(standIn.received.first)
                #expect(first.refusal == nil && first.overHTTP2)
                #expect(
                    first.deviceToken == Self.hex && first.payload == ["type": "grant"] && first.contentAvailable == 1)
                #expect(first.headers["apns-push-type"] == "background" && first.headers["apns-priority"] == "5")
                #expect(first.headers["apns-topic"] == PurchaseFlowTests.bundleId)

                // Busy and failing servers are retried; a provider token Apple calls expired is made again once.
                standIn.answer([(429, "TooManyRequests"), (503, "ServiceUnavailable")])
                #expect(await apns.sendBackground(deviceToken: Self.hex, gateway: .sandbox, data: [:]) == .delivered)
                standIn.answer([
                    (500, "InternalServerError"), (500, "InternalServerError"), (500, "InternalServerError"),
                ])
                #expect(
                    await apns.sendBackground(deviceToken: Self.hex, gateway: .sandbox, data: [:])
                        == .failed(status: 500, reason: "InternalServerError"))
                standIn.answer([(403, "ExpiredProviderToken")])
                #expect(await apns.sendBackground(deviceToken: Self.hex, gateway: .sandbox, data: [:]) == .delivered)
                // Tokens APNs no longer knows.
                standIn.answer([(410, "Unregistered")])
                #expect(
                    await apns.sendBackground(deviceToken: Self.hex, gateway: .sandbox, data: [:])
                        == .unregistered(reason: "Unregistered"))
                standIn.answer([(400, "BadDeviceToken")])
                #expect(
                    await apns.sendBackground(deviceToken: Self.hex, gateway: .sandbox, data: [:])
                        == .unregistered(reason: "BadDeviceToken"))
                // A topic the token is not for says the setting may be wrong as much as the token: not forgotten.
                standIn.answer([(400, "DeviceTokenNotForTopic")])
                #expect(
                    await apns.sendBackground(deviceToken: Self.hex, gateway: .sandbox, data: [:])
                        == .failed(status: 400, reason: "DeviceTokenNotForTopic"))
                standIn.answer([(400, "BadPriority")])
                #expect(
                    await apns.sendBackground(deviceToken: Self.hex, gateway: .sandbox, data: [:])
                        == .failed(status: 400, reason: "BadPriority"))
                // Not a token: never sent.
                let count = standIn.received.count
                #expect(
                    await apns.sendBackground(deviceToken: "not-hex", gateway: .sandbox, data: [:])
                        == .unregistered(reason: "BadDeviceToken"))
                #expect(standIn.received.count == count)
                #expect(standIn.received.allSatisfy { $0.refusal == nil })
                #expect(count == 1 + 3 + 3 + 2 + 1 + 1 + 1 + 1)
            }
            // Nobody answers: failed, quickly, with status 0.
            let gone = Self.client(standIn, "https://127.0.0.1:1", http: http, timeout: 1)
            guard case .failed(0, _) = await gone.sendBackground(deviceToken: Self.hex, gateway: .sandbox, data: [:])
            else {
                Issue.record("an unreachable APNs is a failure")
                return
            }
        }
    }

    /// Runs `body`, then shuts the client down, whether or not `body` threw.
    static func shuttingDown(_ http: HTTPClient, _ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch {
            try? await http.shutdown()
            throw error
        }
        try await http.shutdown()
    }

    @Test("support's grant wakes the app: a push to its registered token, which the SDK acts on; 410 forgets the token")
    func grantWakesTheApp() async throws {
        let standIn = try APNsStandIn(topic: PurchaseFlowTests.bundleId)
        let http = HTTPClient(
            eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: try standIn.clientTLS()))
        try await Self.shuttingDown(http) {
            try await standIn.run { base in
                try await PurchaseFlowTests.withWorld(wallet: .device, push: Self.client(standIn, base, http: http)) {
                    world in
                    let app = try world.app()
                    try await app.launch()
                    try await app.registerPushToken(Self.deviceToken)
                    let user = try await SupportFlowTests.serverUser(world, app)
                    #expect(
                        try await world.serverStore.pushTokens(owner: user.id, environment: .sandbox).map(\.token) == [
                            Self.hex
                        ])
                    // A bad token is refused and changes nothing.
                    await #expect(throws: ServerClientError.self) {
                        try await world.server.registerPushToken(
                            "zz", environment: "production", bearer: try #require(await app.credentials?.token))
                    }
                    let supportId = try #require(await app.credentials?.supportId)
                    let status = try await LiveSyncTests.admin(
                        world, "/v1/admin/grants?environment=Sandbox",
                        body: GrantRequest(supportId: supportId, credits: 400, reason: "Ticket #7"))
                    #expect(status == 201)
                    try await LiveSyncTests.eventually("the push arrives") { standIn.received.count == 1 }
                    let push = try #require(standIn.received.first)
                    #expect(push.refusal == nil && push.payload["type"] == "grant" && push.deviceToken == Self.hex)
                    // The app, woken in the background, hands the push to the SDK.
                    #expect(await app.handlePush(push.payload))
                    #expect(try await app.balance() == 400)
                    #expect(await app.handlePush(["other": "app"]) == false)

                    // Support's balance edit (the device wallet's: through the backup) wakes it too.
                    let edited = try await LiveSyncTests.admin(
                        world, "/v1/admin/users/\(supportId)/balance?environment=Sandbox",
                        body: BalanceRequest(balance: 1_000, reason: "fix"))
                    #expect(edited == 200)
                    try await LiveSyncTests.eventually("the second push arrives") { standIn.received.count == 2 }
                    let editPush = try #require(standIn.received.last)
                    #expect(editPush.refusal == nil && editPush.payload["type"] == "backup")
                    #expect(await app.handlePush(editPush.payload))
                    #expect(try await app.balance() == 1_000)
                    // The app's own backups wake nobody.
                    await app.backupSettled()
                    try await Task.sleep(for: .milliseconds(200))
                    #expect(standIn.received.count == 2)

                    // APNs says the device is gone: the next push forgets the token.
                    standIn.answer([(410, "Unregistered")])
                    let again = try await LiveSyncTests.admin(
                        world, "/v1/admin/grants?environment=Sandbox",
                        body: GrantRequest(supportId: supportId, credits: 100, reason: "Ticket #8"))
                    #expect(again == 201)
                    try await LiveSyncTests.eventually("the token is forgotten") {
                        try await world.serverStore.pushTokens(owner: user.id, environment: .sandbox).isEmpty
                    }
                    // The app unregisters a token it no longer has: 404, nothing changes.
                    await #expect(throws: ServerClientError.self) {
                        try await world.server.unregisterPushToken(
                            Self.hex, bearer: try #require(await app.credentials?.token))
                    }
                }
            }
        }
    }

    /// Records what it is asked to send.
    final class RecordingSender: PushSender {
        let sent = Mutex<[[String: String]]>([])
        func sendBackground(deviceToken: String, gateway: APNsGateway, data: [String: String]) async -> APNsResult {
            sent.withLock { $0.append(data) }
            return .delivered
        }
    }

    @Test("grants, adjustments (refunds, balance edits) and withdrawn consent wake the apps; own backups do not")
    func whatIsPushed() async throws {
        let store = InMemoryStore()
        let user = User(
            environment: .sandbox, supportId: SupportID("_aaaaaaaaaaa1")!, tokenHash: "hash", createdAt: Date())
        try await store.createUser(user)
        try await store.savePushToken(
            PushToken(token: Self.hex, owner: user.id, environment: .sandbox, gateway: .production, updatedAt: Date()))
        let sender = RecordingSender()
        let notifier = PushNotifier(store: store, sender: sender, environment: .sandbox, logger: .init(label: "test"))
        let running = Task { try await notifier.run() }
        defer { running.cancel() }
        let hub = EventHub(onPublish: { event, user, wakes in if wakes { notifier.enqueue(event, to: user) } })
        for kind in ServerEventKind.allCases { await hub.publish(ServerEventBody(type: kind, key: "k"), to: user.id) }
        // Support's balance edit in the device wallet is a backup its publisher marks as waking.
        await hub.publish(ServerEventBody(type: .backup, key: "7"), to: user.id, wakes: true)
        try await LiveSyncTests.eventually("the pushes are sent") { sender.sent.withLock { $0.count } >= 4 }
        try await Task.sleep(for: .milliseconds(100))
        #expect(
            sender.sent.withLock { $0 } == [
                ["type": "grant", "key": "k"], ["type": "adjustment", "key": "k"],
                ["type": "consent-rescinded", "key": "k"], ["type": "backup", "key": "7"],
            ])
    }
}

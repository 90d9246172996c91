import CofferStoreKit
import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// StoreKit for an app that runs where there is no StoreKit (Linux, a test rig, `coffer simulate`): one
/// account's device on an App Store simulator running in another process (`coffer appstore-sim serve`),
/// driven over its HTTP controls. Purchases always succeed; refunds, renewals and the clock are moved through
/// the simulator's other controls.
public final class SimulatorStoreKit: StoreKitProvider {
    /// The simulator, e.g. `http://127.0.0.1:9090`.
    public let baseURL: URL
    /// The App Store account signed in on this device.
    public let account: String
    /// How often ``updates()`` asks the simulator what changed.
    public let pollInterval: Duration
    private let session: URLSession
    private let failure = Mutex<String?>(nil)
    private let choices = Mutex(SimulatedSheetChoices())

    /// A device of `account` on the simulator at `baseURL`.
    public init(baseURL: URL, account: String, pollInterval: Duration = .seconds(1), timeout: TimeInterval = 20) {
        self.baseURL = baseURL
        self.account = account
        self.pollInterval = pollInterval
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        session = URLSession(configuration: configuration)
    }

    /// Why the last request to the simulator failed, if it did (the StoreKit calls that cannot throw answer
    /// as if the device had nothing then).
    public var lastFailure: String? { failure.withLock { $0 } }

    /// Buys through the simulator's payment sheet (always paid).
    public func purchase(productId: String, quantity: Int, appAccountToken: UUID?) async throws -> StorePurchaseResult {
        try await purchase(productId: productId, quantity: quantity, appAccountToken: appAccountToken, offer: nil)
    }

    /// Buys through the simulator's payment sheet with an offer, which the simulator checks as the App Store does.
    public func purchase(productId: String, quantity: Int, appAccountToken: UUID?, offer: StorePurchaseOffer?)
        async throws -> StorePurchaseResult
    {
        let report: Report = try await send(
            "POST", "simulator/purchase",
            body: PurchaseBody(
                account: account, productId: productId, quantity: quantity, appAccountToken: appAccountToken,
                offer: offer))
        let state = try await deviceState()
        guard
            let transaction = state.transactions.last(where: {
                report.transactionIds.contains($0.id) && !$0.isFamilyShared
            })
        else { return .pending }
        return .success(transaction)
    }

    /// Polls the simulator: every unfinished transaction first, then each new transaction and each newly
    /// refunded one, until the reader stops.
    public func updates() async -> AsyncStream<StoreTransaction> {
        let (stream, continuation) = AsyncStream<StoreTransaction>.makeStream()
        let task = Task {
            var seen: [String: StoreTransaction] = [:]
            var first = true
            while !Task.isCancelled {
                if let state = try? await deviceState() {
                    let unfinished = Set(state.unfinished)
                    for transaction in state.transactions {
                        let known = seen[transaction.id]
                        let wanted =
                            first
                            ? unfinished.contains(transaction.id)
                            : known == nil || known?.revocationDate != transaction.revocationDate
                        if wanted { continuation.yield(transaction) }
                        seen[transaction.id] = transaction
                    }
                    first = false
                }
                try? await Task.sleep(for: pollInterval)
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// Unfinished transactions.
    public func unfinished() async -> [StoreTransaction] {
        guard let state = try? await deviceState() else { return [] }
        let ids = Set(state.unfinished)
        return state.transactions.filter { ids.contains($0.id) }
    }

    /// Every transaction of the account StoreKit verified.
    public func all() async -> [StoreTransaction] {
        (try? await deviceState())?.transactions.filter(\.isVerified) ?? []
    }

    /// The latest transaction of each product the account is entitled to now.
    public func currentEntitlements() async -> [StoreTransaction] {
        guard let state = try? await deviceState() else { return [] }
        let ids = Set(state.entitled)
        return state.transactions.filter { ids.contains($0.id) && $0.isVerified }
    }

    /// Finishes a transaction on the simulator.
    public func finish(transactionId: String) async {
        let _: Report? = try? await send("POST", "simulator/finish", body: FinishBody(transactionId: transactionId))
    }

    /// Nothing to sync: every call reads the simulator's state.
    public func sync() async throws {}

    /// The account's app transaction, freshly signed by the simulator (`GET /simulator/app-transaction`).
    public func appTransaction(refresh: Bool) async -> String? {
        guard let data = try? await data("GET", "simulator/app-transaction?account=\(Self.escape(account))") else {
            return nil
        }
        return String(data: data, encoding: .utf8)
    }

    /// What the customer does on StoreKit's sheets on this device.
    public var sheetChoices: SimulatedSheetChoices {
        get { choices.withLock { $0 } }
        set { choices.withLock { $0 = newValue } }
    }

    /// The simulator's products as the account's device shows them (`GET /simulator/products`).
    public func products(ids: [String]) async throws -> [StoreProduct] {
        let list = ids.joined(separator: ",")
        let data = try await data("GET", "simulator/products?account=\(Self.escape(account))&ids=\(Self.escape(list))")
        return try JSONDecoder().decode([StoreProduct].self, from: data)
    }

    /// The account's subscriptions in a billing grace period now (from `GET /simulator/device`); none when the
    /// simulator is out of reach.
    public func gracePeriods(groups: [String]) async -> [String: Date] {
        // The device state names each grace period by its subscription; the groups asked for filter them.
        guard let state = try? await deviceState() else { return [:] }
        let asked = Set(groups)
        let inGroups = Set(
            state.transactions.filter { $0.subscriptionGroupId.map(asked.contains) ?? false }.map(\.originalId))
        return state.gracePeriods.filter { inGroups.contains($0.key) }
    }

    /// Sends a refund request for one of the account's transactions (`POST /simulator/request-refund`), unless
    /// ``sheetChoices`` has the customer close the sheet.
    public func beginRefundRequest(transactionId: String) async throws -> RefundRequestStatus {
        guard sheetChoices.refundRequest == .success else { return .userCancelled }
        _ = try await control("request-refund", ControlBody(transactionId: transactionId, account: account))
        return .success
    }

    /// The subscription management sheet: turns auto-renew off when ``sheetChoices`` says so
    /// (`POST /simulator/cancel-subscriptions`).
    public func showManageSubscriptions() async throws {
        let cancels = choices.withLock { choices in
            choices.manageSubscriptionsShown += 1
            return choices.cancelsSubscriptions
        }
        if cancels { _ = try await control("cancel-subscriptions", ControlBody(account: account)) }
    }

    /// The offer-code sheet: redeems the sheet choices' `offerCode` once (`POST /simulator/redeem-offer-code`);
    /// what it buys arrives through ``updates()``.
    public func presentOfferCodeRedeemSheet() async throws {
        let code = choices.withLock { choices in
            defer { choices.offerCode = nil }
            return choices.offerCode
        }
        if let code { _ = try await control("redeem-offer-code", ControlBody(account: account, code: code)) }
    }

    /// The simulator's clock.
    public func clock() async throws -> Date {
        let body: ClockBody = try await send("GET", "simulator/clock")
        return Date(timeIntervalSince1970: Double(body.now) / 1_000)
    }

    /// Apple refunds a transaction (the simulator notifies the app's server).
    ///
    /// - Returns: What happened, in the simulator's words.
    @discardableResult
    public func refund(transactionId: String) async throws -> [String] {
        try await control("refund", ControlBody(transactionId: transactionId))
    }

    /// Turns a subscription's auto-renew on or off, as the customer does in Settings.
    @discardableResult
    public func setAutoRenew(originalTransactionId: String, _ on: Bool) async throws -> [String] {
        try await control("auto-renew", ControlBody(originalTransactionId: originalTransactionId, on: on))
    }

    /// Moves the simulator's clock forward; renewals and expiries due in between happen.
    @discardableResult
    public func advanceClock(by seconds: TimeInterval) async throws -> [String] {
        try await control("advance-clock", ControlBody(seconds: seconds))
    }

    private struct ControlBody: Encodable {
        var transactionId: String?
        var originalTransactionId: String?
        var on: Bool?
        var seconds: Double?
        var account: String?
        var code: String?
    }

    private func control(_ name: String, _ body: ControlBody) async throws -> [String] {
        let report: Report = try await send("POST", "simulator/\(name)", body: body)
        return report.happened
    }

    /// The account's device.
    public func deviceState() async throws -> SimulatedDeviceState {
        let data = try await data("GET", "simulator/device?account=\(Self.escape(account))")
        return try SimulatedDeviceState.decode(data)
    }

    private struct PurchaseBody: Encodable {
        var account: String
        var productId: String
        var quantity: Int
        var appAccountToken: UUID?
        var offer: StorePurchaseOffer?
    }

    private struct FinishBody: Encodable {
        var transactionId: String
    }

    private struct ClockBody: Decodable {
        var now: Int64
    }

    private struct Report: Decodable {
        var happened: [String]
        var transactionIds: [String]
    }

    private struct Refusal: Decodable {
        var code: String
        var message: String
    }

    private static func escape(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text
    }

    private func send<Answer: Decodable>(_ method: String, _ path: String, body: (some Encodable)? = String?.none)
        async throws -> Answer
    {
        let data = try await data(method, path, body: body.map { try JSONEncoder().encode($0) })
        return try JSONDecoder().decode(Answer.self, from: data)
    }

    private func data(_ method: String, _ path: String, body: Data? = nil) async throws -> Data {
        guard let url = URL(string: path, relativeTo: baseURL) else { throw SimulatorStoreKitError("bad path \(path)") }
        var request = URLRequest(url: url)
        request.httpMethod = method
        if let body {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = body
        }
        do {
            let (data, response) = try await session.data(for: request)
            let status = (response as? HTTPURLResponse)?.statusCode ?? 0
            guard (200..<300).contains(status) else {
                let refusal = try? JSONDecoder().decode(Refusal.self, from: data)
                throw SimulatorStoreKitError(
                    "the simulator answered \(status): \(refusal.map { "\($0.code): \($0.message)" } ?? "")")
            }
            failure.withLock { $0 = nil }
            return data
        } catch let error as SimulatorStoreKitError {
            failure.withLock { $0 = error.description }
            throw error
        } catch {
            let wrapped = SimulatorStoreKitError("the simulator at \(baseURL) is out of reach: \(error)")
            failure.withLock { $0 = wrapped.description }
            throw wrapped
        }
    }
}

/// Why a request to the simulator failed.
public struct SimulatorStoreKitError: Error, CustomStringConvertible, Sendable {
    /// What went wrong.
    public let description: String

    init(_ description: String) { self.description = description }
}

import CofferAppStore
import CofferStoreKit
import Foundation
import Hummingbird
import NIOCore
import NIOFoundationCompat

/// Apple's servers, locally, in one Hummingbird router:
///
/// - `POST /verifyReceipt/production` and `POST /verifyReceipt/sandbox`: verifyReceipt on Apple's two
///   hosts (21007 and 21008 included);
/// - `/inApps/...`: the App Store Server API endpoints, behind the same JWT check Apple makes;
/// - `/simulator/...`: the controls `coffer appstore-sim` drives (purchase, refund, renew, advance the
///   clock, history), each answering with a ``SimulatorReport``;
/// - `/database/1/...`: the app's CloudKit public database, when given one (``SimulatedCloudKit``).
public enum SimulatorServer {
    /// The largest request body accepted.
    public static let maximumBodySize = 1 << 20

    /// Builds the router.
    ///
    /// - Parameters:
    ///   - store: The simulated App Store.
    ///   - tokens: Checks App Store Server API bearer tokens.
    ///   - cloudKit: The app's CloudKit public database, when simulated (``SimulatedCloudKit``).
    public static func router(store: SimulatedAppStore, tokens: APITokenVerifier, cloudKit: SimulatedCloudKit? = nil)
        -> Router<BasicRequestContext>
    {
        let router = Router()
        cloudKit?.addRoutes(to: router)
        addVerifyReceipt(to: router, store: store)
        addServerAPI(
            to: router.group("inApps").add(middleware: TokenMiddleware(tokens: tokens))
                .add(middleware: RateLimitMiddleware(store: store)), store: store)
        addControls(to: router.group("simulator"), store: store)
        return router
    }

    // MARK: verifyReceipt

    private static func addVerifyReceipt(to router: Router<BasicRequestContext>, store: SimulatedAppStore) {
        for host in [SignedDataEnvironment.production, .sandbox] {
            let path = RouterPath("verifyReceipt/\(host == .production ? "production" : "sandbox")")
            router.post(path) { request, _ -> Response in
                let body = try await request.body.collect(upTo: maximumBodySize)
                return json(await store.verifyReceipt(body: Data(buffer: body), host: host))
            }
            router.get(path) { _, _ -> Response in json(Data(#"{"status":21000}"#.utf8)) }
        }
    }

    // MARK: App Store Server API

    private static func addServerAPI(to api: RouterGroup<BasicRequestContext>, store: SimulatedAppStore) {
        // Routes by one id, and by one id with a revision: each answers what the simulated store says.
        let byId: [(String, @Sendable (SimulatedAppStore, String) async throws -> any Encodable)] = [
            ("v1/transactions/:id", { try await $0.transactionInfo($1) }),
            ("v1/lookup/:id", { try await $0.lookUpOrder($1) }),
            ("v1/transactions/appTransactions/:id", { try await $0.appTransactionInfo($1) }),
            ("v1/notifications/test/:id", { try await $0.testNotificationStatus($1) }),
        ]
        for (path, read) in byId {
            api.get(RouterPath(path)) { _, context in
                let id = try context.parameters.require("id")
                return try await answer { try await read(store, id) }
            }
        }
        let byRevision: [(String, @Sendable (SimulatedAppStore, String, String?) async throws -> any Encodable)] = [
            ("v2/refund/lookup/:id", { try await $0.refundHistory($1, revision: $2) })
        ]
        for (path, read) in byRevision {
            api.get(RouterPath(path)) { request, context in
                let revision = request.uri.queryParameters.get("revision")
                let id = try context.parameters.require("id")
                return try await answer { try await read(store, id, revision) }
            }
        }
        // Version 1 of the history (Apple's libraries' default) answers as version 2 does here, filters included.
        for version in ["v1", "v2"] {
            api.get(RouterPath("\(version)/history/:id")) { request, context in
                let id = try context.parameters.require("id")
                let query = request.uri.queryParameters
                return try await answer {
                    let filter = try HistoryFilter { query.getAll($0) }
                    return try await store.transactionHistory(id, revision: query.get("revision"), filter: filter)
                }
            }
        }
        api.get("v1/subscriptions/:id") { request, context in
            let id = try context.parameters.require("id")
            let values = request.uri.queryParameters.getAll("status")
            return try await answer {
                var statuses: Set<Int32> = []
                for value in values {
                    guard let status = Int32(value), (1...5).contains(status) else {
                        throw SimulatedAPIError.invalidStatus
                    }
                    statuses.insert(status)
                }
                return try await store.subscriptionStatuses(id, statuses: statuses)
            }
        }
        api.post("v1/notifications/history") { request, _ in
            let token = request.uri.queryParameters.get("paginationToken")
            return try await answer {
                let body: NotificationHistoryRequest = try await decode(request)
                return try await store.notificationHistory(body, paginationToken: token)
            }
        }
        api.post("v1/notifications/test") { _, _ in
            try await answer { try await store.requestTestNotification() }
        }
        api.put("v2/transactions/consumption/:id") { request, context in
            let id = try context.parameters.require("id")
            return try await done(.accepted) { try await store.recordConsumption(id, decode(request)) }
        }
        api.put("v1/transactions/consumption/:id") { request, context in
            let id = try context.parameters.require("id")
            return try await done(.accepted) { try await store.recordConsumptionV1(id, decode(request)) }
        }
        api.put("v1/transactions/:id/appAccountToken") { request, context in
            let id = try context.parameters.require("id")
            return try await done { try await store.setAppAccountToken(id, decode(request)) }
        }
        api.post("v1/transactions/:id/finish") { _, context in
            let id = try context.parameters.require("id")
            return try await done { try await store.finishTransaction(id) }
        }
        api.put("v1/subscriptions/extend/:id") { request, context in
            let id = try context.parameters.require("id")
            return try await answer { try await store.extendRenewalDate(id, decode(request)) }
        }
        api.post("v1/subscriptions/extend/mass") { request, _ in
            try await answer { try await store.extendRenewalDates(decode(request)) }
        }
        api.get("v1/subscriptions/extend/mass/:productId/:requestIdentifier") { _, context in
            let productId = try context.parameters.require("productId")
            let requestIdentifier = try context.parameters.require("requestIdentifier")
            return try await answer {
                try await store.renewalExtensionStatus(productId: productId, requestIdentifier: requestIdentifier)
            }
        }
    }

    // MARK: Controls

    /// The body of a control request; each control reads the fields it needs.
    struct Control: Decodable {
        var account: String?
        var productId: String?
        var quantity: Int?
        var appAccountToken: UUID?
        var outcome: PurchaseOutcome?
        var transactionId: String?
        var originalTransactionId: String?
        var percentage: Int32?
        var approve: Bool?
        var on: Bool?
        var seconds: Double?
        var accounts: [String]?
        var code: String?
        var price: Int64?
        var consentRequired: Bool?
        var days: Int32?
        var storefronts: [String]?
        var offer: StorePurchaseOffer?
        var endpoint: String?
        var perHour: Int?

        func require<T>(_ value: T?, _ name: String) throws(SimulatorError) -> T {
            guard let value else { throw SimulatorError("invalid-request", "\(name) is required") }
            return value
        }
    }

    /// A control: the request's fields in, what happened out.
    typealias ControlAction = @Sendable (Control) async throws(SimulatorError) -> SimulatorReport

    private static func addControls(to controls: RouterGroup<BasicRequestContext>, store: SimulatedAppStore) {
        typealias Action = ControlAction
        typealias IdAction = @Sendable (String) async throws(SimulatorError) -> SimulatorReport
        /// An action on the transaction named by `transactionId`.
        func onTransaction(_ action: @escaping IdAction) -> Action {
            { control throws(SimulatorError) in
                try await action(control.require(control.transactionId, "transactionId"))
            }
        }
        /// An action on the subscription named by `originalTransactionId`.
        func onSubscription(_ action: @escaping IdAction) -> Action {
            { control throws(SimulatorError) in
                try await action(control.require(control.originalTransactionId, "originalTransactionId"))
            }
        }
        let actions: [(String, Action)] = [
            (
                "purchase",
                { control throws(SimulatorError) in
                    if let offer = control.offer {
                        return try await store.purchase(
                            account: control.require(control.account, "account"),
                            productId: control.require(control.productId, "productId"),
                            appAccountToken: control.appAccountToken, offer: offer,
                            outcome: control.outcome ?? .success)
                    }
                    return try await store.purchase(
                        account: control.require(control.account, "account"),
                        productId: control.require(control.productId, "productId"), quantity: control.quantity ?? 1,
                        appAccountToken: control.appAccountToken, outcome: control.outcome ?? .success)
                }
            ),
            (
                "forge",
                { control throws(SimulatorError) in
                    try await store.forgeTransaction(
                        account: control.require(control.account, "account"),
                        productId: control.require(control.productId, "productId"), quantity: control.quantity ?? 1,
                        appAccountToken: control.appAccountToken)
                }
            ),
            (
                "ask-to-buy",
                { control throws(SimulatorError) in
                    try await store.answerAskToBuy(
                        control.require(control.transactionId, "transactionId"),
                        approve: control.require(control.approve, "approve"))
                }
            ),
            (
                "refund",
                { control throws(SimulatorError) in
                    try await store.refund(
                        transactionId: control.require(control.transactionId, "transactionId"),
                        percentage: control.percentage)
                }
            ),
            (
                "request-refund",
                { control throws(SimulatorError) in
                    let id = try control.require(control.transactionId, "transactionId")
                    // From a device's refund sheet the account is named, and must own the transaction.
                    if let account = control.account {
                        return try await store.requestRefund(transactionId: id, account: account)
                    }
                    return try await store.requestRefund(transactionId: id)
                }
            ),
            (
                "redeem-offer-code",
                { control throws(SimulatorError) in
                    try await store.redeemOfferCode(
                        control.require(control.code, "code"), account: control.require(control.account, "account"))
                }
            ),
            (
                "cancel-subscriptions",
                { control throws(SimulatorError) in
                    try await store.cancelSubscriptions(account: control.require(control.account, "account"))
                }
            ),
            (
                "decline-refund",
                onTransaction { id throws(SimulatorError) in try await store.declineRefund(transactionId: id) }
            ),
            (
                "reverse-refund",
                onTransaction { id throws(SimulatorError) in try await store.reverseRefund(transactionId: id) }
            ),
            (
                "renew",
                onSubscription { id throws(SimulatorError) in try await store.renewNow(originalTransactionId: id) }
            ),
            (
                "expire",
                onSubscription { id throws(SimulatorError) in try await store.expireNow(originalTransactionId: id) }
            ),
            (
                "auto-renew",
                { control throws(SimulatorError) in
                    try await store.setAutoRenew(
                        originalTransactionId: control.require(control.originalTransactionId, "originalTransactionId"),
                        control.require(control.on, "on"))
                }
            ),
            (
                "billing",
                { control throws(SimulatorError) in
                    try await store.setBillingFails(
                        account: control.require(control.account, "account"), !(control.require(control.on, "on")))
                }
            ),
            (
                "advance-clock",
                { control throws(SimulatorError) in
                    try await store.advanceClock(by: control.require(control.seconds, "seconds"))
                }
            ),
            (
                "rate-limit",
                { control throws(SimulatorError) in
                    try await store.setRateLimit(
                        control.require(control.endpoint, "endpoint"), perHour: control.perHour)
                }
            ),
            (
                "family",
                { control throws(SimulatorError) in
                    let accounts = try control.require(control.accounts, "accounts")
                    await store.formFamily(accounts)
                    var report = SimulatorReport()
                    report.happened.append("family formed: \(accounts.joined(separator: ", "))")
                    return report
                }
            ),
            (
                "leave-family",
                { control throws(SimulatorError) in
                    try await store.leaveFamily(control.require(control.account, "account"))
                }
            ),
        ]
        for (name, action) in actions + eventControls(store) {
            controls.post(RouterPath(name)) { request, _ -> Response in
                let control: Control
                do {
                    control = try JSONDecoder().decode(
                        Control.self, from: Data(buffer: try await request.body.collect(upTo: maximumBodySize)))
                } catch {
                    return try encoded(
                        SimulatorError("invalid-request", "the body is not valid: \(error)"), .badRequest)
                }
                let report: SimulatorReport
                do {
                    report = await store.namingOrders(try await action(control))
                } catch let error as SimulatorError {
                    return try encoded(error, error.code.hasPrefix("unknown") ? .notFound : .badRequest)
                }
                return try encoded(report, .ok)
            }
        }
        controls.get("history") { request, _ -> Response in
            guard let account = request.uri.queryParameters.get("account") else {
                return try encoded(SimulatorError("invalid-request", "account is required"), .badRequest)
            }
            return try encoded(await store.history(account: account), .ok)
        }
        controls.get("device") { request, _ -> Response in
            guard let account = request.uri.queryParameters.get("account"), !account.isEmpty else {
                return try encoded(SimulatorError("invalid-request", "account is required"), .badRequest)
            }
            return json(try SimulatedDeviceState.encode(await store.deviceState(account: String(account))))
        }
        controls.get("products") { request, _ -> Response in
            guard let account = request.uri.queryParameters.get("account"), !account.isEmpty else {
                return try encoded(SimulatorError("invalid-request", "account is required"), .badRequest)
            }
            let ids = (request.uri.queryParameters.get("ids") ?? "").split(separator: ",").map(String.init)
            return try encoded(await store.products(ids: Array(ids.prefix(200)), account: account), .ok)
        }
        controls.post("finish") { request, _ -> Response in
            let control: Control
            do {
                control = try JSONDecoder().decode(
                    Control.self, from: Data(buffer: try await request.body.collect(upTo: maximumBodySize)))
            } catch {
                return try encoded(SimulatorError("invalid-request", "the body is not valid: \(error)"), .badRequest)
            }
            guard let id = control.transactionId else {
                return try encoded(SimulatorError("invalid-request", "transactionId is required"), .badRequest)
            }
            await store.finish(transactionId: id)
            var report = SimulatorReport()
            report.happened.append("finished transaction \(id)")
            report.transactionIds = [id]
            return try encoded(report, .ok)
        }
        controls.get("clock") { _, _ -> Response in
            try encoded(ClockBody(now: await store.clock.now()), .ok)
        }
        controls.get("signed") { request, _ -> Response in
            let id = request.uri.queryParameters.get("transactionId") ?? ""
            do {
                let signed = try await store.signedTransaction(id: id)
                return Response(
                    status: .ok, headers: [.contentType: "text/plain"],
                    body: .init(byteBuffer: ByteBuffer(string: signed)))
            } catch let error as SimulatorError {
                return try encoded(error, .notFound)
            }
        }
        controls.get("app-transaction") { request, _ -> Response in
            let account = request.uri.queryParameters.get("account") ?? ""
            do {
                let signed = try await store.signedAppTransaction(account: account)
                return Response(
                    status: .ok, headers: [.contentType: "text/plain"],
                    body: .init(byteBuffer: ByteBuffer(string: signed)))
            } catch let error as SimulatorError {
                return try encoded(error, .badRequest)
            }
        }
        controls.get("receipt") { request, _ -> Response in
            let account = request.uri.queryParameters.get("account") ?? ""
            return Response(
                status: .ok, headers: [.contentType: "text/plain"],
                body: .init(byteBuffer: ByteBuffer(string: await store.appReceipt(account: account))))
        }
    }

    /// `GET /simulator/clock`: the simulated time now.
    struct ClockBody: Encodable {
        var now: Date
    }

    // MARK: Encoding

    private struct ErrorBody: Encodable {
        var errorCode: Int64
        var errorMessage: String
    }

    private static func answer(_ body: () async throws -> any Encodable) async throws -> Response {
        let value: any Encodable
        do {
            value = try await body()
        } catch let error as SimulatedAPIError {
            return try apiError(error)
        }
        return json(try AppleJSON.encode(value))
    }

    /// Runs `body`, answering `status` (200 unless told) with no body, as Apple does for a request that returns
    /// nothing.
    private static func done(_ status: HTTPResponse.Status = .ok, _ body: () async throws -> Void) async throws
        -> Response
    {
        do {
            try await body()
        } catch let error as SimulatedAPIError {
            return try apiError(error)
        }
        return Response(status: status)
    }

    private static func apiError(_ error: SimulatedAPIError) throws -> Response {
        var response = json(
            try AppleJSON.encode(ErrorBody(errorCode: error.errorCode, errorMessage: error.errorMessage)))
        response.status = .init(code: error.status)
        return response
    }

    /// The request's JSON body; one that does not decode is Apple's general bad request (4000000).
    private static func decode<T: Decodable>(_ request: Request) async throws -> T {
        let body = try await request.body.collect(upTo: maximumBodySize)
        do {
            return try AppleJSON.decode(T.self, from: Data(buffer: body))
        } catch {
            throw SimulatedAPIError.generalBadRequest
        }
    }

    private static func encoded(_ value: some Encodable, _ status: HTTPResponse.Status) throws -> Response {
        var response = json(try AppleJSON.encode(value, pretty: true))
        response.status = status
        return response
    }

    private static func json(_ data: Data) -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(data: data)))
    }
}

extension SimulatorError: Encodable {
    /// Encodes as `{"code", "message"}`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(code, forKey: .code)
        try container.encode(message, forKey: .message)
    }

    private enum CodingKeys: String, CodingKey { case code, message }
}

/// Answers 401, as Apple does, to an App Store Server API request without a valid bearer token.
struct TokenMiddleware<Context: RequestContext>: RouterMiddleware {
    let tokens: APITokenVerifier

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        guard let authorization = request.headers[.authorization], authorization.hasPrefix("Bearer "),
            (try? tokens.verify(String(authorization.dropFirst(7)))) != nil
        else { return Response(status: .unauthorized) }
        return try await next(request, context)
    }
}

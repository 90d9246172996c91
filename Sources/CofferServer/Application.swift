import CofferAPI
import CofferAdmin
import CofferAppStore
import CofferCore
import CofferHTTP
import CofferPanel
import CofferService
import CofferStore
import Crypto
import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOFoundationCompat
import ServiceLifecycle

/// The one composition root of a Coffer server: the client API, Apple's notifications, the operations
/// routes and the notification recovery service, over the given store, verifier and catalog.
///
/// - Parameter beforeServing: Work run once the services run and before the server listens (what needs the database
///   running in the group: the first admin, say); what it throws ends the server.
/// - Throws: When the panel's templates are not installed with the server (a broken install).
public func buildApplication(
    configuration: ServerConfiguration, dependencies: ServerDependencies,
    beforeServing: (@Sendable () async throws -> Void)? = nil
) throws -> some ApplicationProtocol {
    let (router, intake, background) = try makeRouter(configuration: configuration, dependencies: dependencies)
    var services: [any Service] = dependencies.services + background
    if configuration.recoveryInterval > 0, let recovery = NotificationRecovery(intake: intake) {
        services.append(recovery)
    }
    if configuration.reconcileInterval > 0, let reconciler = Reconciler(intake: intake) {
        services.append(reconciler)
    }
    if let expiry = CreditExpiry(configuration: configuration.service, dependencies: dependencies) {
        services.append(expiry)
    }
    var dispatcher: WebhookDispatcher?
    if let sender = dependencies.webhookSender {
        dispatcher = WebhookDispatcher(
            store: dependencies.store, catalog: dependencies.catalog, environment: configuration.environment,
            settings: configuration.service.webhook, forwardURLs: configuration.service.appleForwardURLs,
            sender: sender, metrics: dependencies.metrics, logger: dependencies.logger, now: dependencies.now,
            clock: dependencies.timerClock)
        services += [dispatcher].compactMap { $0 }
    }
    let readTimeout = TimeAmount.seconds(Int64(configuration.readTimeout))
    var application = Application(
        router: router,
        server: .http1(
            configuration: .init(
                additionalChannelHandlers: [ReadDeadlineHandler(timeout: readTimeout)],
                idleTimeout: .seconds(Int64(configuration.idleTimeout)))),
        // A backlog for a thousand clients connecting at once (the kernel caps it at net.core.somaxconn); past
        // the connection limit, new connections wait there.
        configuration: .init(
            address: .hostname(configuration.host, port: configuration.port), serverName: "coffer", backlog: 1_024,
            availableConnectionsDelegate: MaximumAvailableConnections(
                configuration.maximumConnections, logger: dependencies.logger)),
        services: services,
        logger: dependencies.logger)
    // The settings' endpoints are in the store before the first request is answered: from the first change on,
    // nothing is acknowledged without its event.
    let published = dispatcher
    application.beforeServerStarts {
        try await published?.publishSettings()
        try await beforeServing?()
    }
    return application
}

/// The server's routes as one responder, without a listener: for driving every route in-process (the fuzz
/// target). Background services (notification recovery) do not run.
public func serverResponder(configuration: ServerConfiguration, dependencies: ServerDependencies)
    throws -> RouterResponder<CofferRequestContext>
{
    try makeRouter(configuration: configuration, dependencies: dependencies).router.buildResponder()
}

/// Every route of the server, as `buildApplication` serves them (for tests that check the API document).
///
/// - Returns: `METHOD /path` for each route, with parameters as `{name}`.
public func serverRoutes(configuration: ServerConfiguration, dependencies: ServerDependencies) throws
    -> [String]
{
    try makeRouter(configuration: configuration, dependencies: dependencies).router.routes.map { route in
        let path = route.path.description.split(separator: "/").map { component in
            component.hasPrefix(":") ? "{\(component.dropFirst())}" : String(component)
        }
        return "\(route.method.rawValue) /" + path.joined(separator: "/")
    }
}

private func makeRouter(configuration: ServerConfiguration, dependencies: ServerDependencies)
    throws -> (router: Router<CofferRequestContext>, intake: NotificationIntake, background: [any Service])
{
    let router = Router(context: CofferRequestContext.self)
    router.add(middleware: ClientAddressMiddleware(proxies: configuration.trustedProxies))
    router.add(middleware: RequestLogMiddleware(metrics: dependencies.metrics))
    router.add(middleware: ErrorMiddleware())
    router.add(middleware: BodyLimitMiddleware(limit: configuration.maximumBodySize))
    router.add(middleware: TimeoutMiddleware(seconds: configuration.requestTimeout))
    let notifier = dependencies.push.map {
        PushNotifier(
            store: dependencies.store, sender: $0, environment: configuration.environment, logger: dependencies.logger)
    }
    let relay = dependencies.broadcast.map {
        EventRelay(broadcast: $0, logger: dependencies.logger, clock: dependencies.timerClock)
    }
    let events = EventHub(
        perUser: configuration.eventStreamsPerUser, perAddress: configuration.eventStreamsPerAddress,
        total: configuration.eventStreamsTotal,
        onPublish: { event, user, wakes in
            if wakes { notifier?.enqueue(event, to: user) }
            relay?.send(event, to: user)
        })
    relay?.connect(events)
    let ledger = LedgerBatcher(
        store: dependencies.store, maximumBatch: configuration.ledgerBatch, writers: configuration.ledgerWriters)
    let parts = ServiceParts(
        configuration: configuration.service, dependencies: dependencies, events: events, ledger: ledger)
    let api = ClientAPI(service: ClientService(parts), configuration: configuration)
    router.addRoutes(api.routes)
    let intake = NotificationIntake(parts)
    let notifications = NotificationsAPI(
        api: api, intake: intake, failures: RateLimiter(limit: configuration.notificationFailureLimit))
    router.addRoutes(notifications.routes)
    let service = adminService(
        configuration: configuration, dependencies: dependencies, events: events,
        forgetTokens: { [client = api.service] user in client.forgetTokens(of: user) })
    router.addRoutes(AdminAPI(api: api, service: service).routes)
    let logger = dependencies.logger
    let signIn = AdminSignIn(
        store: dependencies.store, service: service, hasher: dependencies.passwordHasher, throttle: LoginThrottle(),
        sessionHours: configuration.panel.sessionHours, environment: configuration.environment, now: dependencies.now,
        timerClock: dependencies.timerClock, failureLog: { logger.error("\($0)") })
    let panel = AdminPanel(
        dependencies: dependencies, environment: configuration.environment, service: service,
        renderer: try PanelRenderer(), signIn: signIn, configuration: configuration.panel)
    router.addRoutes(panel.routes)
    let operations = OperationsAPI(
        dependencies: dependencies, environment: configuration.environment, metricsToken: configuration.metricsToken)
    router.addRoutes(operations.routes)
    let background: [any Service] = [notifier as (any Service)?, relay].compactMap { $0 }
    return (router, intake, background)
}

/// Support's operations over the server's store, with order ids looked up through the App Store Server API
/// when the server has a key (for its own environment).
func adminService(
    configuration: ServerConfiguration, dependencies: ServerDependencies, events: EventHub,
    forgetTokens: @escaping @Sendable (UUID) -> Void = { _ in }
) -> AdminService {
    var orderLookup: AdminService.OrderLookup?
    if let appStoreAPI = dependencies.appStoreAPI {
        let verifier = dependencies.verifier
        let served = configuration.environment
        orderLookup = { orderId, environment in
            guard environment == served else {
                throw AdminError.invalid("order ids are looked up in \(served.rawValue) only, the server's environment")
            }
            let response = try await appStoreAPI.lookUpOrderId(orderId)
            var ids: [String] = []
            for signed in response.signedTransactions ?? [] {
                if let id = try await verifier.verifyTransaction(signed).transactionId { ids.append(id) }
            }
            return ids
        }
    }
    var service = AdminService(
        store: dependencies.store, catalog: dependencies.catalog, walletMode: configuration.wallet,
        now: dependencies.now, orderLookup: orderLookup,
        onChange: { user, change in
            // The app hears of support's change at once on its event stream (when it has one open here).
            guard let (event, wakes) = SupportEvents.event(for: change) else {
                // A merged install's token signs in as the account's customer from now on, a deleted customer's
                // not at all: forgotten here at once (other instances within the token cache's 5 seconds).
                forgetTokens(user)
                return
            }
            await events.publish(event, to: user, wakes: wakes)
        })
    if let appStoreAPI = dependencies.appStoreAPI {
        let (verifier, served) = (dependencies.verifier, configuration.environment)
        service.appTransactionLookup = { appTransactionId, environment in
            // The client speaks to this server's environment only.
            guard environment == served else { throw AdminError.invalid("another environment's app transaction") }
            let response = try await appStoreAPI.getAppTransactionInfo(appTransactionId)
            guard let signed = response.signedAppTransactionInfo else { throw AdminError.invalid("no app transaction") }
            let app = try await verifier.verifyAppTransaction(signed)
            return AppTransactionView(
                appTransactionId: app.appTransactionId ?? appTransactionId,
                originalPurchaseDate: app.originalPurchaseDate,
                originalApplicationVersion: app.originalApplicationVersion, applicationVersion: app.applicationVersion,
                originalPlatform: app.rawOriginalPlatform, environment: app.rawReceiptType)
        }
    }
    if let appStoreAPI = dependencies.appStoreAPI {
        service.renewalExtensions = renewalExtensions(appStoreAPI, environment: configuration.environment)
    }
    return service
}

/// Apple's renewal extensions through the server's App Store Server API client.
private func renewalExtensions(_ api: AppStoreServerAPIClient, environment: AppStoreEnvironment)
    -> RenewalExtensions
{
    RenewalExtensions(
        environment: environment,
        extend: { originalTransactionId, days, code, requestIdentifier in
            var request = ExtendRenewalDateRequest()
            (request.extendByDays, request.extendReasonCode) = (days, code)
            request.requestIdentifier = requestIdentifier
            let answer = try await api.extendSubscriptionRenewalDate(originalTransactionId, request)
            return (answer.success == true, answer.effectiveDate)
        },
        extendAll: { productId, days, code, storefronts, requestIdentifier in
            var request = MassExtendRenewalDateRequest()
            (request.extendByDays, request.extendReasonCode) = (days, code)
            (request.productId, request.requestIdentifier) = (productId, requestIdentifier)
            request.storefrontCountryCodes = storefronts
            _ = try await api.extendRenewalDatesForAllActiveSubscribers(request)
        },
        status: { productId, requestIdentifier in
            let answer = try await api.getStatusOfRenewalDateExtensions(
                productId: productId, requestIdentifier: requestIdentifier)
            return RenewalExtensions.Status(
                complete: answer.complete, completeDate: answer.completeDate, succeededCount: answer.succeededCount,
                failedCount: answer.failedCount)
        })
}

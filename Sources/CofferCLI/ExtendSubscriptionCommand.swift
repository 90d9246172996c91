import ArgumentParser
import CofferAPI
import CofferAdmin
import CofferCore
import Foundation
import NIOHTTP1

/// `coffer extend-subscription`: support extends a customer's subscription through Apple (`--recipient`), or every
/// active subscriber of a product after an outage (`--all --product`), and follows the mass extensions (`--status`).
struct ExtendSubscriptionCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "extend-subscription",
        abstract: "Extend a customer's subscription, or every active subscriber of a product, through Apple.",
        discussion: """
            Apple's Extend a Subscription Renewal Date moves the customer's renewal by 1 to 90 days (at most twice a \
            year per subscription); --all --product asks Apple to extend every active subscriber of the product \
            (an outage) and --status shows how far Apple got. Each is audited. The server calls Apple with its \
            In-App Purchase key, so run it with --server.
            """)

    @Option(help: "The customer's Support ID, e.g. _abc123def456.")
    var recipient: String?

    @Flag(help: "Every active subscriber of --product (Apple's mass extension).")
    var all = false

    @Option(help: "The subscription product: with --all, the one to extend; with --recipient, only its group.")
    var product: String?

    @Option(help: "Days to add, 1 to 90.")
    var days: Int?

    @Option(
        name: .customLong("reason-code"),
        help: "Apple's reason: 0 undeclared, 1 customer satisfaction, 2 other, 3 service issue or outage.")
    var reasonCode: Int?

    @Option(help: "Why, e.g. \"Ticket #42\", kept in the audit log. Default: the reason code's words.")
    var reason: String?

    @Option(name: .customLong("storefront"), help: "With --all: only this storefront (ISO 3166-1 alpha-3; repeatable).")
    var storefronts: [String] = []

    @Flag(help: "List the latest mass extensions with Apple's status.")
    var status = false

    @OptionGroup var options: SupportOptions

    func validate() throws {
        let modes = [recipient != nil, all, status].filter { $0 }.count
        guard modes == 1 else { throw ValidationError("give one of --recipient, --all --product or --status") }
        if all, product == nil { throw ValidationError("--all needs --product") }
        if !status, days == nil || reasonCode == nil { throw ValidationError("--days and --reason-code are required") }
        if !all, !storefronts.isEmpty { throw ValidationError("--storefront goes with --all") }
    }

    func run() async throws {
        if status {
            let extensions = try await withSupport(options) { try await $0.massExtensions() }
            if options.json { return print(try JSONText.encode(extensions)) }
            if extensions.isEmpty { print("No mass extensions yet.") }
            for item in extensions { print(Self.line(item)) }
            return
        }
        guard let days, let reasonCode else { return }
        if all, let product {
            let request = MassExtensionRequest(
                productId: product, days: days, reasonCode: reasonCode, reason: reason,
                storefronts: storefronts.isEmpty ? nil : storefronts)
            let view = try await withSupport(options) { try await $0.extendAllSubscribers(request) }
            if options.json { return print(try JSONText.encode(view)) }
            print("Apple is extending every active subscriber of \(view.productId) by \(view.days) days.")
            print("Request \(view.requestIdentifier); follow it with: coffer extend-subscription --status")
            return
        }
        guard let recipient else { return }
        let request = ExtendSubscriptionRequest(days: days, reasonCode: reasonCode, reason: reason, productId: product)
        let answer = try await withSupport(options) { try await $0.extendSubscriptions(supportId: recipient, request) }
        if options.json { return print(try JSONText.encode(answer)) }
        for item in answer.extensions {
            if item.extended {
                let until = item.effectiveDate.map { ", now renewing \($0.formatted(.iso8601))" } ?? ""
                print("Extended \(item.productId) (\(item.originalTransactionId)) by \(answer.days) days\(until)")
            } else {
                print(
                    "Apple did not extend \(item.productId) (\(item.originalTransactionId)): \(item.error ?? "refused")"
                )
            }
        }
        // Any subscription Apple did not extend fails the command: support reads why above.
        if answer.extensions.contains(where: { !$0.extended }) { throw ExitCode(1) }
    }

    static func line(_ item: MassExtensionView) -> String {
        let progress =
            switch item.complete {
            case true?:
                "complete: \(item.succeededCount ?? 0) extended, \(item.failedCount ?? 0) not"
            case false?:
                "under way: \(item.succeededCount ?? 0) extended, \(item.failedCount ?? 0) not so far"
            case nil: "status unknown (Apple did not answer now)"
            }
        return "\(item.requestedAt.formatted(.iso8601)) \(item.productId) +\(item.days) days by \(item.requestedBy) "
            + "(\(item.requestIdentifier)): \(progress)"
    }
}

extension LocalSupport {
    func extendSubscriptions(supportId: String, _ request: ExtendSubscriptionRequest) async throws
        -> ExtendSubscriptionResponse
    {
        try await service.extendSubscriptions(
            environment: environment, supportId: supportId, request: request, actor: actor)
    }
    func extendAllSubscribers(_ request: MassExtensionRequest) async throws -> MassExtensionView {
        try await service.extendAllSubscribers(environment: environment, request: request, actor: actor)
    }
    func massExtensions() async throws -> [MassExtensionView] {
        try await service.massExtensions(environment: environment)
    }
}

extension RemoteSupport {
    func extendSubscriptions(supportId: String, _ request: ExtendSubscriptionRequest) async throws
        -> ExtendSubscriptionResponse
    {
        try await send(.POST, "/v1/admin/users/\(URLText.escape(supportId))/extend", body: request)
    }
    func extendAllSubscribers(_ request: MassExtensionRequest) async throws -> MassExtensionView {
        try await send(.POST, "/v1/admin/subscriptions/extend", body: request)
    }
    func massExtensions() async throws -> [MassExtensionView] {
        let answer: MassExtensionsResponse = try await send(.GET, "/v1/admin/subscriptions/extensions")
        return answer.extensions
    }
}

import ArgumentParser
import CofferAPI
import CofferAdmin
import Foundation
import NIOHTTP1

/// What `coffer cancel-grant` cancelled: a grant of credits or an entitlement's for a time.
enum CancelledGrant: Sendable {
    case credits(GrantView)
    case entitlement(EntitlementGrantView)

    /// Whether `error` says no grant of credits has the id (locally, or the server's 404).
    static func isNotFound(_ error: any Error) -> Bool {
        if case AdminError.notFound = error { return true }
        return (error as? CommandFailure)?.description.contains("(404 ") == true
    }
}

extension LocalSupport {
    func grantEntitlement(_ request: EntitlementGrantRequest) async throws -> EntitlementGrantView {
        try await service.grantEntitlement(environment: environment, request: request, actor: actor)
    }
    func cancelEntitlementGrant(id: String) async throws -> EntitlementGrantView {
        try await service.cancelEntitlementGrant(environment: environment, id: id, actor: actor)
    }
}

extension RemoteSupport {
    func grantEntitlement(_ request: EntitlementGrantRequest) async throws -> EntitlementGrantView {
        try await send(.POST, "/v1/admin/entitlement-grants", body: request)
    }
    func cancelEntitlementGrant(id: String) async throws -> EntitlementGrantView {
        try await send(.POST, "/v1/admin/entitlement-grants/\(URLText.escape(id))/cancel")
    }
}

/// `coffer grant`: credits for a customer, picked up by the app on its next refresh; or an entitlement for a number
/// of days (`--entitlement NAME --days N`), theirs until it ends.
struct GrantCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "grant",
        abstract: "Grant credits, or an entitlement for a number of days, to a customer by Support ID, with a reason.")

    @Option(help: "The credits to grant.")
    var credits: Int64?

    @Option(
        help: "With --credits: the currency by id, e.g. gems (one the catalog lists). Default: the catalog's first.")
    var currency: String?

    @Option(
        help: ArgumentHelp(
            "With --credits: the credits expire this many days after the app claims them (1 to 3650; the server "
                + "wallet), spent before credits that never expire; what is left then leaves the balance."))
    var expiresInDays: Int?

    @Option(help: "An entitlement to grant for --days instead, e.g. premium (one the catalog unlocks).")
    var entitlement: String?

    @Option(help: "With --entitlement: for how many days, from now (1 to 3650).")
    var days: Int?

    @OptionGroup var change: CustomerChange

    func validate() throws {
        if currency != nil, credits == nil { throw ValidationError("--currency goes with --credits") }
        if expiresInDays != nil, credits == nil { throw ValidationError("--expires-in-days goes with --credits") }
        switch (credits, entitlement, days) {
        case (_?, nil, nil), (nil, _?, _?): return
        case (nil, _?, nil): throw ValidationError("--entitlement needs --days")
        case (_?, _, _): throw ValidationError("grant --credits or --entitlement with --days, not both")
        default: throw ValidationError("grant --credits N, or --entitlement NAME --days N")
        }
    }

    func run() async throws {
        if let entitlement, let days {
            return try await change.run {
                try await $0.grantEntitlement(
                    EntitlementGrantRequest(supportId: $1, entitlement: entitlement, days: days, reason: $2))
            } lines: { grant in
                [
                    "Granted \(grant.entitlement) to \(grant.supportId) for \(days) days, until \(grant.endsAt.formatted(.iso8601)) (\(grant.reason)); grant \(grant.id.uuidString.lowercased())",
                    "The app unlocks it on its next refresh; coffer cancel-grant \(grant.id.uuidString.lowercased()) ends it.",
                ]
            }
        }
        guard let credits else { return }
        try await change.run {
            try await $0.grant(
                supportId: $1, credits: credits, reason: $2, currency: currency, expiresInDays: expiresInDays)
        } lines: { grant in
            [
                "Granted \(grant.credits) \(grant.currency ?? "credits") to \(grant.supportId) (\(grant.reason)); grant \(grant.id.uuidString.lowercased()), pending",
                "The app picks it up on its next launch, foreground or refresh."
                    + (grant.expiresInDays.map { " They expire \($0) days after it does." } ?? ""),
            ]
        }
    }
}

/// `coffer cancel-grant`: takes back a grant the app has not claimed (Production too), audited.
struct CancelGrantCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel-grant",
        abstract:
            "Cancel a grant the app has not claimed yet (a claimed one is answered by set-balance), or end an "
            + "entitlement granted for a time.")

    @Argument(help: "The grant's id, as `coffer grants` lists it (an entitlement's, as `coffer user` shows it).")
    var id: String

    @OptionGroup var options: SupportOptions

    func run() async throws {
        // A grant of credits, else an entitlement's for a time: one id names either.
        let cancelled = try await withSupport(options) { backend -> CancelledGrant in
            do {
                return .credits(try await backend.cancelGrant(id: id))
            } catch let error where CancelledGrant.isNotFound(error) {
                return .entitlement(try await backend.cancelEntitlementGrant(id: id))
            }
        }
        switch cancelled {
        case .credits(let grant):
            if options.json { return print(try JSONText.encode(grant)) }
            print(
                "Cancelled the grant of \(grant.credits) credits to \(grant.supportId) (\(grant.reason)); "
                    + "the app will not get it")
        case .entitlement(let grant):
            if options.json { return print(try JSONText.encode(grant)) }
            print("Cancelled the grant of \(grant.entitlement) to \(grant.supportId) (\(grant.reason)): it ends now")
        }
    }
}

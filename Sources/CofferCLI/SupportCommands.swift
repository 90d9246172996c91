import ArgumentParser
import AsyncHTTPClient
import CofferAPI
import CofferAdmin
import CofferCore
import CofferService
import CofferStore
import CofferStorePostgres
import Configuration
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// Where a support command acts: a remote server through the signed admin API (`--server` with a key), or a
/// local database directly.
struct SupportOptions: ParsableArguments {
    @Option(
        help: "A Coffer server's URL, e.g. https://coffer.example.com (or COFFER_SERVER); signs requests with --key.")
    var server: String?

    @Option(name: .customLong("key-id"), help: "The admin key's id, from `coffer keys create` (or COFFER_KEY_ID).")
    var keyId: String?

    @Option(name: .customLong("key"), help: "The admin key's private key file, PEM (or COFFER_KEY_FILE).")
    var keyFile: String?

    @Option(
        name: .customLong("database-url"),
        help:
            "Without --server: sqlite:PATH or postgres://... Default: as coffer serve finds it, else sqlite:coffer.sqlite."
    )
    var databaseURL: String?

    @Option(
        help: ArgumentHelp(
            "Without --server: the JSON config file coffer serve runs with (default COFFER_CONFIG, else coffer.json "
                + "when there is one): its database, environment, wallet and catalog."))
    var config: String?

    @Option(help: "Sandbox or Production. Default: as coffer serve finds it, else Sandbox.")
    var environment: String?

    @Option(help: "Without --server: who owns the balance, device or server. Default: as coffer serve finds it.")
    var wallet: String?

    @Option(help: "Without --server: the product catalog, for entitlements. Default: as coffer serve finds it.")
    var catalog: String?

    @Flag(help: "Print JSON instead of tables.")
    var json = false

    private static func variable(_ name: String) -> String? {
        ProcessInfo.processInfo.environment[name].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The settings coffer serve would read with these flags: the flags first, then `COFFER_*`, then the config file.
    func settings() async throws -> SupportSettings {
        try await Composition.settings(
            flags: ["database.url": databaseURL, "environment": environment, "wallet": wallet, "catalog": catalog],
            config: config)
    }

    /// The backend the options describe; close it when done.
    func backend() async throws -> any SupportBackend {
        if let server = server ?? Self.variable("COFFER_SERVER") {
            let text = environment ?? Self.variable("COFFER_ENVIRONMENT") ?? "Sandbox"
            guard let environment = AppStoreEnvironment(rawValue: text) else {
                throw ValidationError("environment must be Sandbox or Production, not \(text)")
            }
            guard let keyId = keyId ?? Self.variable("COFFER_KEY_ID"),
                let keyFile = keyFile ?? Self.variable("COFFER_KEY_FILE")
            else { throw ValidationError("--server needs --key-id and --key (or COFFER_KEY_ID and COFFER_KEY_FILE)") }
            let pem: String
            do {
                pem = try String(contentsOfFile: keyFile, encoding: .utf8)
            } catch {
                throw CommandFailure("cannot read the key file \(keyFile): \(error.localizedDescription)")
            }
            let signer: AdminRequestSigner
            do {
                signer = try AdminRequestSigner(keyId: keyId, privateKeyPEM: pem)
            } catch {
                throw CommandFailure("\(keyFile) is not a P-256 private key in PEM")
            }
            return try RemoteSupport(server: server, signer: signer, environment: environment)
        }
        let settings = try await settings()
        let composition = try await Composition.open(settings)
        do {
            let served = try await composition.served(settings)
            return LocalSupport(
                composition: composition, environment: served.environment,
                service: composition.support(wallet: served.wallet))
        } catch {
            await composition.close()
            throw error
        }
    }
}

/// What support commands do, locally or over the admin API.
protocol SupportBackend: Sendable {
    func users(search: String?, page: Int) async throws -> UserSearchResult
    func user(_ supportId: String) async throws -> UserDetail
    func grants(status: GrantStatus?) async throws -> [GrantView]
    func grant(supportId: String, credits: Int64, reason: String, currency: String?, expiresInDays: Int?)
        async throws -> GrantView
    func cancelGrant(id: String) async throws -> GrantView
    func setBalance(supportId: String, balance: Int64, expected: Int64?, reason: String, currency: String?)
        async throws -> BalanceChange
    func merge(from: String, into: String, consent: MergeConsent, intoCode: String?) async throws -> MergeResponse
    func deleteCustomer(_ supportId: String) async throws -> DeletionView
    func grantEntitlement(_ request: EntitlementGrantRequest) async throws -> EntitlementGrantView
    func cancelEntitlementGrant(id: String) async throws -> EntitlementGrantView
    func extendSubscriptions(supportId: String, _ request: ExtendSubscriptionRequest) async throws
        -> ExtendSubscriptionResponse
    func extendAllSubscribers(_ request: MassExtensionRequest) async throws -> MassExtensionView
    func massExtensions() async throws -> [MassExtensionView]
    func close() async
}

/// Support commands on a local database, through the same ``AdminService`` as the server.
struct LocalSupport: SupportBackend {
    let composition: Composition
    let environment: AppStoreEnvironment
    let service: AdminService

    /// Who acts, for the audit log: the person at this terminal.
    static var actor: String { "cli:" + (ProcessInfo.processInfo.environment["USER"] ?? "unknown") }
    var actor: String { Self.actor }

    /// Records an action taken at this terminal on the server's database (a key, an admin account).
    static func audit(
        _ store: any CofferStore, _ environment: AppStoreEnvironment, action: String, subject: String,
        after: [String: String]? = nil
    ) async throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try await store.recordAudit(
            AuditEvent(
                environment: environment, actor: actor, action: action, subject: subject,
                after: try after.map { String(decoding: try encoder.encode($0), as: UTF8.self) }, at: Date()))
    }

    func users(search: String?, page: Int) async throws -> UserSearchResult {
        try await service.searchUsers(environment: environment, query: search, page: page)
    }
    func user(_ supportId: String) async throws -> UserDetail {
        try await service.user(environment: environment, supportId: supportId)
    }
    func grants(status: GrantStatus?) async throws -> [GrantView] {
        try await service.grants(environment: environment, status: status)
    }
    func grant(supportId: String, credits: Int64, reason: String, currency: String?, expiresInDays: Int?)
        async throws -> GrantView
    {
        try await service.createGrant(
            environment: environment, supportId: supportId, credits: credits, reason: reason, actor: actor,
            currency: currency, expiresInDays: expiresInDays)
    }
    func cancelGrant(id: String) async throws -> GrantView {
        try await service.cancelGrant(environment: environment, id: id, actor: actor)
    }
    func setBalance(supportId: String, balance: Int64, expected: Int64?, reason: String, currency: String?)
        async throws -> BalanceChange
    {
        try await service.setBalance(
            environment: environment, supportId: supportId, balance: balance, expected: expected, reason: reason,
            actor: actor, currency: currency)
    }
    func merge(from: String, into: String, consent: MergeConsent, intoCode: String?) async throws -> MergeResponse {
        try await service.mergeUsers(
            environment: environment, from: from, into: into, consent: consent, intoCode: intoCode, actor: actor)
    }
    func deleteCustomer(_ supportId: String) async throws -> DeletionView {
        try await service.deleteUser(environment: environment, supportId: supportId, actor: actor)
    }
    func close() async { await composition.close() }
}

/// Support commands on a remote server: each request signed with the admin key.
struct RemoteSupport: SupportBackend {
    let base: String
    let signer: AdminRequestSigner
    let environment: AppStoreEnvironment
    let http = HTTPClient(eventLoopGroupProvider: .singleton)

    init(server: String, signer: AdminRequestSigner, environment: AppStoreEnvironment) throws {
        guard let url = URL(string: server), let scheme = url.scheme, ["http", "https"].contains(scheme),
            url.host != nil
        else { throw ValidationError("--server must be an http or https URL, not \(server)") }
        base = server.hasSuffix("/") ? String(server.dropLast()) : server
        self.signer = signer
        self.environment = environment
    }

    func users(search: String?, page: Int) async throws -> UserSearchResult {
        var query = [("page", String(page))]
        if let search { query.append(("search", search)) }
        return try await send(.GET, "/v1/admin/users", query: query)
    }
    func user(_ supportId: String) async throws -> UserDetail {
        try await send(.GET, "/v1/admin/users/\(URLText.escape(supportId))")
    }
    func grants(status: GrantStatus?) async throws -> [GrantView] {
        try await send(.GET, "/v1/admin/grants", query: status.map { [("status", $0.rawValue)] } ?? [])
    }
    func grant(supportId: String, credits: Int64, reason: String, currency: String?, expiresInDays: Int?)
        async throws -> GrantView
    {
        try await send(
            .POST, "/v1/admin/grants",
            body: GrantRequest(
                supportId: supportId, credits: credits, reason: reason, currency: currency,
                expiresInDays: expiresInDays))
    }
    func cancelGrant(id: String) async throws -> GrantView {
        try await send(.POST, "/v1/admin/grants/\(URLText.escape(id))/cancel")
    }
    func setBalance(supportId: String, balance: Int64, expected: Int64?, reason: String, currency: String?)
        async throws -> BalanceChange
    {
        try await send(
            .POST, "/v1/admin/users/\(URLText.escape(supportId))/balance",
            body: BalanceRequest(balance: balance, reason: reason, expected: expected, currency: currency))
    }
    func merge(from: String, into: String, consent: MergeConsent, intoCode: String?) async throws -> MergeResponse {
        let body =
            switch consent {
            case .code(let code): MergeRequest(from: from, into: into, code: code, intoCode: intoCode)
            case .override(let reason):
                MergeRequest(from: from, into: into, overrideReason: reason, intoCode: intoCode)
            }
        return try await send(.POST, "/v1/admin/users/merge", body: body)
    }
    func deleteCustomer(_ supportId: String) async throws -> DeletionView {
        try await send(.POST, "/v1/admin/users/\(URLText.escape(supportId))/delete")
    }
    func close() async { try? await http.shutdown() }

    /// The Host header for a server URL, which the request is signed for and sends: the host (IPv6 in
    /// brackets) and the port unless it is the scheme's default.
    static func host(of server: String) -> String {
        guard let url = URL(string: server), let name = url.host else { return "" }
        let host = name.contains(":") ? "[\(name)]" : name
        let defaultPort = url.scheme == "https" ? 443 : 80
        guard let port = url.port, port != defaultPort else { return host }
        return "\(host):\(port)"
    }

    func send<T: Decodable>(
        _ method: HTTPMethod, _ path: String, query: [(String, String)] = [], body: (some Encodable)? = String?.none
    ) async throws -> T {
        let items = [("environment", environment.rawValue)] + query
        let target = path + "?" + items.map { "\($0.0)=\(URLText.escape($0.1))" }.joined(separator: "&")
        let bytes = try body.map { try AdminJSON.encoder.encode($0) } ?? Data()
        var request = HTTPClientRequest(url: base + target)
        request.method = method
        let host = Self.host(of: base)
        for header in try signer.headers(method: method.rawValue, host: host, body: bytes, path: target, at: Date()) {
            request.headers.add(name: header.name, value: header.value)
        }
        request.headers.replaceOrAdd(name: "Host", value: host)
        if body != nil {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(data: bytes))
        }
        let response: HTTPClientResponse
        do {
            response = try await http.execute(request, timeout: .seconds(30))
        } catch {
            throw CommandFailure("cannot reach \(base): \(error)")
        }
        let data = Data(buffer: try await response.body.collect(upTo: 16 * 1024 * 1024))
        guard (200..<300).contains(response.status.code) else {
            if let failure = try? JSONDecoder().decode(RemoteError.self, from: data) {
                throw CommandFailure(
                    "the server refused (\(response.status.code) \(failure.error.code)): \(failure.error.message)")
            }
            throw CommandFailure("the server answered \(response.status.code)")
        }
        do {
            return try AdminJSON.decoder.decode(T.self, from: data)
        } catch {
            throw CommandFailure("the server's answer is not readable: \(error)")
        }
    }

    private struct RemoteError: Decodable {
        struct Detail: Decodable {
            var code: String
            var message: String
        }
        var error: Detail
    }

}

/// Runs a support command against its backend, closing it afterwards.
func withSupport<T>(_ options: SupportOptions, _ body: (any SupportBackend) async throws -> T) async throws -> T {
    let backend = try await options.backend()
    do {
        let value = try await body(backend)
        await backend.close()
        return value
    } catch let error as AdminError {
        await backend.close()
        throw CommandFailure(error.description)
    } catch {
        await backend.close()
        throw error
    }
}

/// Whose credits support changes, and why: `coffer grant` and `coffer set-balance`.
struct CustomerChange: ParsableArguments {
    @Option(help: "The customer's Support ID, e.g. _abc123def456.")
    var recipient: String

    @Option(help: "Why, e.g. \"Ticket #42\"; kept in the audit log and shown to support.")
    var reason: String

    @OptionGroup var options: SupportOptions

    /// Makes the change for the recipient, printing its JSON with `--json`, else `lines` of it.
    func run<T: Encodable>(
        _ change: (any SupportBackend, _ recipient: String, _ reason: String) async throws -> T,
        lines: (T) -> [String]
    ) async throws {
        let done = try await withSupport(options) { try await change($0, recipient, reason) }
        if options.json { return print(try JSONText.encode(done)) }
        for line in lines(done) { print(line) }
    }
}

/// `coffer users`: find customers (`coffer users list`, the default), or merge two (`coffer users merge`).
struct UsersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "users",
        abstract: "List customers, newest first, or find them by Support ID prefix, transaction id or order id.",
        subcommands: [UsersListCommand.self, MergeCommand.self], defaultSubcommand: UsersListCommand.self)
}

/// `coffer users merge FROM INTO`: an anonymous user joins an Apple account's customer.
struct MergeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "merge",
        abstract:
            "Merge an anonymous customer (FROM) into an Apple account's customer (INTO), once: balance, receipts, "
            + "grants and history move; audited.")

    @Argument(help: "The anonymous customer's Support ID.")
    var from: String

    @Argument(help: "The Apple account customer's Support ID.")
    var into: String

    @Option(help: "The merge code FROM's app shows (Purchase History, Move to my Apple account): the customer's word.")
    var code: String?

    @Option(help: "Without a code: an owner's override, and why (audited as user.merge.override).")
    var overrideReason: String?

    @Option(
        help: ArgumentHelp(
            "The merge code an install on INTO's Apple account shows: FROM's installs then sign in as INTO. Without "
                + "it they are signed out and register again."))
    var intoCode: String?

    @OptionGroup var options: SupportOptions

    func run() async throws {
        guard let consent = try? MergeConsent(code: code, overrideReason: overrideReason) else {
            throw ValidationError(
                "give --code CODE (the merge code FROM's app shows: Purchase History, Move to my Apple account) or, "
                    + "as an owner, --override-reason TEXT; one of the two")
        }
        let done = try await withSupport(options) {
            try await $0.merge(from: from, into: into, consent: consent, intoCode: intoCode)
        }
        if options.json { return print(try JSONText.encode(done)) }
        print(
            "Merged \(done.from) into \(done.into): \(done.movedBalance) credits, \(done.movedDeficit) deficit, "
                + "\(done.receipts) receipts, \(done.grants) grants moved; \(done.into) now has balance "
                + "\(done.balance), deficit \(done.deficit); " + PanelText.mergedDevices(done))
    }
}

/// `coffer users list`: find customers.
struct UsersListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List customers, newest first, or find them by Support ID prefix, transaction id or order id.")

    @Option(help: "A Support ID prefix, a transaction or original transaction id, or an order id.")
    var search: String?

    @Option(help: "The page, from 1 (25 per page).")
    var page = 1

    @OptionGroup var options: SupportOptions

    func run() async throws {
        let result = try await withSupport(options) { try await $0.users(search: search, page: page) }
        if options.json { return print(try JSONText.encode(result)) }
        guard !result.users.isEmpty else { return print("no users" + (search.map { " match \($0)" } ?? "")) }
        var table = TextTable(["support id", "created (UTC)", "balance", "deficit", "backup", "backed up (UTC)"])
        for user in result.users {
            table.add([
                user.supportId, JSONText.timestamp(user.createdAt), String(user.balance), String(user.deficit),
                user.backup.map { String($0.value) } ?? "-",
                user.backup.map { JSONText.timestamp($0.lastUpdated) } ?? "-",
            ])
        }
        print(table.render())
        if result.hasMore { print("more on page \(result.page + 1)") }
    }
}

/// `coffer user SUPPORT_ID`: one customer's story.
struct UserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user", abstract: "Show a customer's balance, backup, entitlements and timeline.")

    @Argument(help: "The customer's Support ID.")
    var supportId: String

    @OptionGroup var options: SupportOptions

    func run() async throws {
        let detail = try await withSupport(options) { try await $0.user(supportId) }
        if options.json { return print(try JSONText.encode(detail)) }
        let user = detail.user
        print("\(user.supportId)  \(detail.environment.rawValue)  \(detail.walletMode.rawValue) wallet")
        print("balance \(user.balance)  deficit \(user.deficit)")
        // A catalog of several currencies: each one's balance, and its deficit where it owes.
        if detail.balances.count > 1 {
            print(
                "currencies "
                    + detail.balances.sorted { $0.key < $1.key }.map { id, balance in
                        let owed = detail.deficits[id] ?? 0
                        return "\(id) \(balance)" + (owed > 0 ? " (deficit \(owed))" : "")
                    }.joined(separator: ", "))
        }
        if let backup = user.backup {
            print(
                "backup \(backup.value) (version \(backup.version), by \(backup.writer.rawValue) \(backup.writerName), "
                    + "\(JSONText.timestamp(backup.lastUpdated)))")
        } else {
            print("backup none")
        }
        print("entitlements " + (detail.entitlements.isEmpty ? "none" : detail.entitlements.joined(separator: ", ")))
        // Support's entitlements for a time still running, with the id `coffer cancel-grant` takes.
        for grant in detail.entitlementGrants where grant.active {
            print(
                "granted \(grant.entitlement) until \(JSONText.timestamp(grant.endsAt)) by \(grant.createdBy) "
                    + "(\(grant.reason)); grant \(grant.id.uuidString.lowercased())")
        }
        var table = TextTable(["when (UTC)", "what", "credits", "balance", "details"])
        for item in detail.timeline {
            table.add([
                JSONText.timestamp(item.at), item.kind.rawValue, item.credits.map(String.init) ?? "",
                item.balanceAfter.map(String.init) ?? "", item.summary,
            ])
        }
        print(detail.timeline.isEmpty ? "no history" : table.render())
    }
}

/// `coffer grants`: grants, newest first.
struct GrantsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "grants", abstract: "List grants, newest first: all, pending, claimed or cancelled.")

    @Option(help: "pending, claimed or cancelled; all by default.")
    var status: GrantStatus?

    @OptionGroup var options: SupportOptions

    func run() async throws {
        let grants = try await withSupport(options) { try await $0.grants(status: status) }
        if options.json { return print(try JSONText.encode(grants)) }
        guard !grants.isEmpty else { return print("no grants") }
        var table = TextTable(["created (UTC)", "support id", "credits", "status", "by", "reason"])
        for grant in grants {
            table.add([
                JSONText.timestamp(grant.createdAt), grant.supportId, String(grant.credits), grant.status.rawValue,
                grant.createdBy, grant.reason,
            ])
        }
        print(table.render())
    }
}

/// `coffer delete-customer`: a customer's data request (App Store guideline 5.1.1(v)), audited.
struct DeleteCustomerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete-customer",
        abstract: "Delete a customer at their request: sign-in, devices, backups and written reasons removed; "
            + "the purchases and the ledger kept, anonymised, so totals add up.")

    @Argument(help: "The customer's Support ID.")
    var supportId: String

    @Flag(help: "Confirm: this cannot be undone.")
    var yes = false

    @OptionGroup var options: SupportOptions

    func run() async throws {
        guard yes else {
            throw CommandFailure(
                "deleting \(supportId) cannot be undone: run again with --yes to confirm the customer's request")
        }
        let done = try await withSupport(options) { try await $0.deleteCustomer(supportId) }
        if options.json { return print(try JSONText.encode(done)) }
        print(
            "Deleted \(done.supportId) at the customer's request: balance \(done.closedBalance) and deficit "
                + "\(done.closedDeficit) closed in the ledger, \(done.users) user record(s) anonymised, "
                + "\(done.cancelledGrants) pending grant(s) cancelled")
    }
}

/// `coffer set-balance`: an admin override of a customer's balance.
struct SetBalanceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set-balance",
        abstract: "Set a customer's balance: a ledger adjustment (server wallet) or an admin backup the app accepts.")

    @Option(help: "The new balance.")
    var balance: Int64

    @Option(
        help: ArgumentHelp(
            "The balance you saw (`coffer user`: the balance line in the server wallet, the backup line in the "
                + "device wallet): the change is refused, and nothing changes, when it moved since.",
            valueName: "credits"))
    var expected: Int64?

    @Option(help: "The currency by id, e.g. gems (one the catalog lists; server wallet). Default: the catalog's first.")
    var currency: String?

    @OptionGroup var change: CustomerChange

    func run() async throws {
        try await change.run {
            try await $0.setBalance(supportId: $1, balance: balance, expected: expected, reason: $2, currency: currency)
        } lines: { done in
            [
                "\(done.supportId): \(done.currency ?? "balance") \(done.before) -> \(done.after) "
                    + "(via \(done.via.rawValue))"
            ]
        }
    }
}

extension GrantStatus: ExpressibleByArgument {}

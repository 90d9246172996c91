import ArgumentParser
import AsyncHTTPClient
import CofferAPI
import CofferAppStore
import CofferCore
import CofferService
import CofferStore
import Foundation
import Logging

/// `coffer reconcile`: the ledger's books checked against Apple's Transaction History and Refund History, and with
/// `--repair` what is missing applied through the ledger's own rules.
struct ReconcileCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reconcile",
        abstract: "Check the ledger against Apple's Transaction History and Refund History; --repair settles it.",
        discussion: """
            For each customer with any transaction (or only --customer), Apple's history is read through the App \
            Store Server API with coffer serve's In-App Purchase key and compared with the ledger: purchases Apple \
            charged that the ledger lacks, refunds it did not take back, reversed refunds, purchases Apple does not \
            know, and products, quantities or prices that differ. --repair applies the missing purchases, refunds \
            and reversals through the same ledger rules and keys as Apple's notifications, so running it twice is \
            safe; the rest is listed for support and shown on the customer page. Settings are read as coffer serve \
            reads them. A run is saved after each customer and resumed where it stopped; calls keep within Apple's \
            rate limits and wait out a 429 until its Retry-After. Exits 0 when every customer was read (the output and \
            --json's run.left say what is left for support), 1 when some could not be (they are tried again next run).
            """)

    @Option(help: "Only this customer's Support ID, e.g. _abc123def456.")
    var customer: String?

    @Option(help: "Only transactions bought or refunded from this date on (2026-11-30 or 2026-11-30T12:00:00Z).")
    var since: String?

    @Flag(help: "Apply what is missing (Apple's purchases, refunds and reversals) through the ledger.")
    var repair = false

    @Flag(help: "Print JSON instead of lines.")
    var json = false

    @OptionGroup var flags: ServeFlags

    func run() async throws {
        let sinceDate = try since.map { text in
            guard let date = WebhooksCommand.Replay.date(text) else {
                throw ValidationError("--since is \(text); expected a date like 2026-11-30 or 2026-11-30T12:00:00Z")
            }
            return date
        }
        let supportId = try customer.map { text in
            guard let id = SupportID(text.trimmingCharacters(in: .whitespaces)) else {
                throw ValidationError("--customer is \(text); a Support ID looks like _abc123def456")
            }
            return id
        }
        let settings = try await flags.settings()
        let server = settings.server
        guard let environment = SignedDataEnvironment(name: server.environment.rawValue) else {
            throw ValidationError("unknown environment \(server.environment.rawValue)")
        }
        let apple: AppleParts
        do {
            apple = try AppleParts(settings, environment: environment)
        } catch {
            throw CommandFailure("\(error)")
        }
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            try await reconcile(settings: settings, apple: apple, http: http, since: sinceDate, supportId: supportId)
        } catch {
            try? await http.shutdown()
            throw error
        }
        try await http.shutdown()
    }

    private func reconcile(
        settings: ServeSettings, apple: AppleParts, http: HTTPClient, since sinceDate: Date?, supportId: SupportID?
    ) async throws {
        guard let api = try apple.appStoreAPI(http) else {
            throw CommandFailure(
                "coffer reconcile reads Apple's history with the In-App Purchase key: set appstore.key.id, "
                    + "appstore.issuer.id and appstore.private.key as coffer serve has them")
        }
        let composition: Composition
        do {
            composition = try await Composition.open(
                database: settings.database, timeout: settings.databaseTimeout, catalog: apple.catalog)
        } catch {
            throw CommandFailure("cannot open the database \(settings.database.shown): \(error)")
        }
        let report: Reconciler.Report
        do {
            report = try await reconcile(
                composition, settings: settings, api: api, apple: apple, since: sinceDate, supportId: supportId)
        } catch {
            await composition.close()
            throw error
        }
        await composition.close()
        try output(report)
        // A run that could not read every customer fails the command; what it found is in its output either way.
        if report.run.failedCustomers > 0 || report.run.error != nil { throw ExitCode(1) }
    }

    private func reconcile(
        _ composition: Composition, settings: ServeSettings, api: AppStoreServerAPIClient, apple: AppleParts,
        since: Date?, supportId: SupportID?
    ) async throws -> Reconciler.Report {
        let server = settings.server
        let logger = settings.logFormat.logger(label: "coffer", level: .warning)
        let dependencies = try ServerDependencies(
            store: composition.store, verifier: apple.verifier, catalog: apple.catalog, appStoreAPI: api,
            logger: logger)
        guard let reconciler = Reconciler(configuration: server.service, dependencies: dependencies) else {
            throw CommandFailure("no App Store Server API client")
        }
        var options = Reconciler.Options(since: since, repair: repair)
        if let supportId {
            guard let user = try await composition.store.user(supportId: supportId, environment: server.environment)
            else { throw CommandFailure("no customer \(supportId.rawValue) in \(server.environment.rawValue)") }
            options.customer = user.id
        }
        let quiet = json
        do {
            return try await reconciler.reconcile(options) { line in
                if !quiet { FileHandle.standardError.write(Data((line + "\n").utf8)) }
            }
        } catch let refusal as Reconciler.RefusalError {
            throw CommandFailure(refusal.description)
        }
    }

    private func output(_ report: Reconciler.Report) throws {
        let run = report.run
        let views = report.discrepancies.map { supportId, record, _ in
            DiscrepancyView(
                supportId: supportId, kind: record.kind, transactionId: record.transactionId,
                productId: record.productId, detail: record.detail, foundAt: record.foundAt,
                repairedAt: record.repairedAt)
        }
        if json {
            let view = ReconciliationRunView(
                id: run.id, startedAt: run.startedAt, finishedAt: run.finishedAt, since: run.since, repair: run.repair,
                resumed: report.resumed, customers: run.customers, appleTransactions: run.appleTransactions,
                found: run.found, repaired: run.repaired, failedCustomers: run.failedCustomers, error: run.error)
            return print(try JSONText.encode(ReconciliationReport(run: view, discrepancies: views)))
        }
        for (view, item) in zip(views, report.discrepancies) {
            let state =
                view.repairedAt != nil
                ? "repaired"
                : !item.repairable ? "for support" : run.repair ? "not applied: see the log" : "--repair applies it"
            let detail = view.detail.isEmpty ? "" : " (\(view.detail))"
            print(
                "\(view.supportId)  \(view.kind)  \(view.transactionId)  \(view.productId): \(view.words)\(detail); \(state)"
            )
        }
        let resumed = report.resumed ? " (resumed)" : ""
        let count = { (n: Int, one: String, many: String) in "\(n) \(n == 1 ? one : many)" }
        var summary = "Checked \(count(run.customers, "customer", "customers"))\(resumed) against "
        summary += "\(count(run.appleTransactions, "of Apple's transactions", "of Apple's transactions")): "
        summary += "\(count(run.found, "discrepancy", "discrepancies")), \(run.repaired) repaired, "
        summary += "\(run.left) left for support"
        if run.failedCustomers > 0 {
            summary +=
                "; \(count(run.failedCustomers, "customer", "customers")) could not be read (the next run tries again)"
        }
        if let error = run.error { summary += "; stopped: \(error)" }
        print(summary + ".")
        if run.found == 0 { print("The ledger agrees with Apple.") }
    }
}

import ArgumentParser
import AsyncHTTPClient
import CofferAdmin
import CofferAppStore
import CofferCore
import CofferService
import CofferStore
import Foundation

/// `coffer import ...`: customers brought in from the system an app used before Coffer.
struct ImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Bring customers in from the system the app used before Coffer.",
        subcommands: [ImportCloudKitCommand.self])
}

/// `coffer import cloudkit`: the seeds' CloudKit setup (`BankrollBackup` and `CreditGrant` records in the public
/// database) read through CloudKit Web Services and brought into Coffer's database.
struct ImportCloudKitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cloudkit",
        abstract: "Import customers' balances and unclaimed grants from the app's CloudKit public database.",
        discussion: """
            Reads every BankrollBackup record (ownerRecordName, bankroll, lastUpdated) and CreditGrant record \
            (targetUserRecordName, credits, reason, processed) of the container's public database with a \
            server-to-server key, and makes a Coffer user per CloudKit user record name holding the balance (a \
            ledger adjustment in the server wallet, the backup in the device wallet) and a grant per unclaimed \
            CreditGrant. Safe to run twice: what an earlier run brought in is found and left. The app claims its \
            customer once, on first launch, with the user record name it reads on the device (docs/cloudkit.md). \
            Writes to the database coffer serve uses (found as it finds it); the server may be running.
            """)

    @Option(help: "The CloudKit container, e.g. iCloud.com.example.app.")
    var container: String

    @Option(help: "The CloudKit environment to read: development or production.")
    var cloudkitEnvironment = "production"

    @Option(help: "The server-to-server key's id from CloudKit Console (or COFFER_CLOUDKIT_KEY_ID).")
    var keyId: String?

    @Option(help: "The server-to-server private key, PEM (or COFFER_CLOUDKIT_KEY_FILE).")
    var keyFile: String?

    @Option(help: "CloudKit Web Services' address (the simulator's, to rehearse).")
    var cloudkitURL = CloudKitClient.appleURL

    @Option(
        help: """
            The Coffer environment to import into: Sandbox or Production (default: as coffer serve's settings say, \
            else Sandbox, as coffer serve).
            """)
    var environment: String?

    @Option(help: "device or server: the wallet coffer serve runs (default: as its settings say, else device).")
    var wallet: String?

    @Option(
        name: .customLong("grant-creator"),
        help: """
            The user record name that created support's CreditGrant records (the developer's, or the key's); \
            repeat for several. Only grants these created, and last modified, are imported: without one, no \
            CreditGrant is (any signed-in app can create and edit them in the public database).
            """)
    var grantCreators: [String] = []

    @Option(help: "Skip and report any balance larger than this (a backup's bankroll is written by the app).")
    var maxBalance: Int64?

    @Option(help: "Skip and report any grant larger than this.")
    var maxGrant: Int64?

    @OptionGroup var database: DatabaseLocationOptions

    @Flag(help: "Read CloudKit and report what would be imported; change nothing.")
    var dryRun = false

    @Flag(help: "Print the report as JSON.")
    var json = false

    func run() async throws {
        guard ["development", "production"].contains(cloudkitEnvironment) else {
            throw ValidationError("--cloudkit-environment is development or production")
        }
        let variables = ProcessInfo.processInfo.environment
        guard let keyId = keyId ?? variables["COFFER_CLOUDKIT_KEY_ID"],
            let keyFile = keyFile ?? variables["COFFER_CLOUDKIT_KEY_FILE"]
        else { throw ValidationError("--key-id and --key-file (the CloudKit server-to-server key) are needed") }
        // As coffer serve reads them; the import then goes where the database's server keeps its customers.
        let settings = try await Composition.settings(
            flags: ["database.url": database.databaseURL, "environment": environment, "wallet": wallet],
            config: database.config)
        let key: CloudKitKey
        do {
            key = try CloudKitKey(keyId: keyId, pemFile: keyFile)
        } catch {
            throw CommandFailure(error.description)
        }
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        let customers: [CustomerImport]
        let skipped: [CloudKitSkip]
        do {
            let client = try CloudKitClient(
                httpClient: http, container: container, environment: cloudkitEnvironment, key: key,
                baseURL: cloudkitURL)
            let backups = try await client.allRecords(ofType: CloudKitCustomers.backupType)
            let grants = try await client.allRecords(ofType: CloudKitCustomers.grantType)
            (customers, skipped) = CloudKitCustomers.customers(
                backups: backups, grants: grants,
                policy: CloudKitImportPolicy(
                    grantCreators: Set(grantCreators), maxBalance: maxBalance, maxGrant: maxGrant))
            try await http.shutdown()
        } catch {
            try? await http.shutdown()
            throw CommandFailure("\(error)")
        }
        for line in skipped { FileHandle.standardError.write(Data("skipped: \(line)\n".utf8)) }
        if dryRun {
            let grants = customers.reduce(0) { $0 + $1.grants.count }
            print(
                "would import \(customers.count { $0.balance != nil || !$0.grants.isEmpty }) customers "
                    + "(\(customers.count { $0.balance != nil }) balances, "
                    + "\(grants) unclaimed grants) into \(settings.environment.rawValue); nothing changed")
            print(CloudKitCustomers.largest(customers))
            if !skipped.isEmpty { print(CloudKitCustomers.skippedSummary(skipped)) }
            return
        }
        let report = try await Composition.with(settings, withCatalog: false) { composition in
            let (environment, wallet) = try await composition.served(settings)
            do {
                return try await composition.support(wallet: wallet).importCustomers(
                    customers, source: ClientService.cloudKitSource, environment: environment,
                    actor: "import:cloudkit:" + LocalSupport.actor)
            } catch {
                throw CommandFailure("the import stopped (run it again to go on; nothing is made twice): \(error)")
            }
        }
        if json {
            print(try JSONText.encode(report))
        } else {
            print(Self.summary(report, skipped: skipped.count))
            if !skipped.isEmpty { print(CloudKitCustomers.skippedSummary(skipped)) }
        }
        if report.problems > 0 { throw ExitCode(1) }
    }

    static func summary(_ report: ImportReport, skipped: Int) -> String {
        var lines = [
            "imported from CloudKit into \(report.environment.rawValue): \(report.customers.count) customers, "
                + "\(report.usersCreated) users made, \(report.balancesImported) balances, "
                + "\(report.grantsCreated) grants made"
                + (skipped > 0 ? ", \(skipped) records skipped" : "")
        ]
        let onFile = report.customers.count {
            !$0.created && !["imported", "updated"].contains($0.balance) && $0.grantsCreated == 0
                && $0.grantsWithdrawn == 0
        }
        if onFile > 0 { lines.append("\(onFile) customers were on file from an earlier run: left as they are") }
        var table = TextTable(["USER RECORD NAME", "SUPPORT ID", "USER", "BALANCE", "GRANTS", "NOTES"])
        for line in report.customers {
            table.add([
                line.externalId, line.supportId ?? "-", line.created ? "made" : "on file", line.balance,
                "\(line.grantsCreated) made, \(line.grantsOnFile) on file"
                    + (line.grantsWithdrawn > 0 ? ", \(line.grantsWithdrawn) withdrawn" : ""),
                (line.problems.map { "PROBLEM: " + $0 } + line.notes).joined(separator: "; "),
            ])
        }
        lines.append(table.render())
        return lines.joined(separator: "\n")
    }
}

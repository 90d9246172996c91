import ArgumentParser

/// The `coffer` command: the root of every subcommand.
public struct Coffer: AsyncParsableCommand {
    /// The command's name, help and subcommands.
    public static let configuration = CommandConfiguration(
        commandName: "coffer",
        abstract: "Coffer: self-hosted in-app purchase safety for App Store apps.",
        discussion: """
            Coffer keeps an exactly-once credit ledger for App Store purchases, takes refunds back with a \
            recorded deficit, and gives support a purchase story for every customer.
            """,
        version: CofferVersion.current,
        subcommands: [
            CatalogCommand.self, LedgerCommand.self, MigrateCommand.self, VerifyCommand.self, ReceiptCommand.self,
            AppStoreCommand.self, AppStoreSimCommand.self, ServeCommand.self, AdminCommand.self, KeysCommand.self,
            GrantCommand.self, CancelGrantCommand.self, DeleteCustomerCommand.self,
            UsersCommand.self, UserCommand.self, GrantsCommand.self, SetBalanceCommand.self, SimulateCommand.self,
            BackupCommand.self, RestoreCommand.self, DoctorCommand.self, SettingsCommand.self, ImportCommand.self,
            ExtendSubscriptionCommand.self, WebhooksCommand.self, ReconcileCommand.self,
        ]
    )

    /// Creates the command (argument parsing fills it in).
    public init() {}
}

/// Where a command finds the local database.
struct DatabaseOptions: ParsableArguments {
    @Option(name: .long, help: "The SQLite database file.")
    var database: String = "coffer.sqlite"

    @Option(name: .long, help: "The environment to read: Sandbox or Production.")
    var environment: String = "Sandbox"
}

/// A failure a command reports to the user in one line, with exit code 1.
struct CommandFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The version of this build of Coffer, as `coffer --version` prints it and CHANGELOG.md records it.
public enum CofferVersion {
    /// The version: the latest in CHANGELOG.md once released; before that, the next one with `-dev` (what
    /// CHANGELOG.md lists under "Unreleased" is in it).
    public static let current = "0.23.0-dev"
}

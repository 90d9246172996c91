import ArgumentParser
import CofferAdmin
import CofferCore
import CofferStore
import Foundation

/// `coffer admin ...`: the people who sign in to the panel, on the server's database.
struct AdminCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "admin",
        abstract: "Create panel admins, set their roles, reset their passwords or two-factor, and list them.",
        subcommands: [
            Create.self, SetRole.self, ResetPassword.self, ResetTwoFactor.self, Disable.self, Enable.self, List.self,
        ]
    )

    /// The password options both commands share.
    struct PasswordOptions: ParsableArguments {
        @Option(help: "The admin's name: letters, digits, dots, dashes or underscores.")
        var name: String

        @Flag(help: "Read the password from standard input instead of generating one (at least 12 characters).")
        var passwordStdin = false

        @OptionGroup var options: KeysCommand.Options

        /// The password to set: read, or generated and to be shown.
        func password() throws -> (password: String, generated: Bool) {
            try AdminAccounts.check(name: name)
            guard passwordStdin else { return (PasswordHasher.generate(), true) }
            let text = readLine(strippingNewline: true) ?? ""
            try PasswordHasher.check(text)
            return (text, false)
        }
    }

    /// `coffer admin create --name NAME`.
    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a panel admin.")

        @OptionGroup var password: PasswordOptions

        @Option(help: "owner (everything) or support (reads, grants up to --grant-limit, cancels pending grants).")
        var role: AdminRole = .owner

        @Option(help: "For support: the most credits one grant may carry.")
        var grantLimit: Int64?

        func validate() throws {
            if role == .support, !(0...SupportRules.maximumAmount).contains(grantLimit ?? -1) {
                throw ValidationError("a support admin needs --grant-limit, from 0 to \(SupportRules.maximumAmount)")
            }
        }

        func run() async throws {
            let (secret, generated) = try password.password()
            do {
                try await password.options.withDatabase { store, environment in
                    let admin = Admin(
                        name: password.name, passwordHash: await PasswordHasher().hash(secret), createdAt: Date(),
                        role: role, grantLimit: role == .support ? grantLimit : nil)
                    try await store.createAdmin(admin)
                    try await LocalSupport.audit(
                        store, environment, action: "admin.create", subject: "admin \(admin.name)")
                }
            } catch StoreError.alreadyExists {
                throw CommandFailure("an admin named \(password.name) exists; use `coffer admin reset-password`")
            }
            print(
                "Created \(role.rawValue) \(password.name)" + (generated ? " with password \(secret) (shown once)" : "")
            )
        }
    }

    /// `coffer admin set-role --name NAME --role owner|support [--grant-limit N]`.
    struct SetRole: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-role", abstract: "Set an admin's role and, for support, grant limit.")

        @Option(help: "The admin's name.")
        var name: String

        @Option(help: "owner or support.")
        var role: AdminRole

        @Option(help: "For support: the most credits one grant may carry.")
        var grantLimit: Int64?

        @OptionGroup var options: KeysCommand.Options

        func run() async throws {
            let admin = try await options.withAdminService { service, environment in
                try await service.setRole(
                    environment: environment, name: name, role: role, grantLimit: grantLimit, actor: LocalSupport.actor)
            }
            print(
                "\(admin.name) is \(admin.role.rawValue)"
                    + (admin.grantLimit.map { " with a grant limit of \($0) credits" } ?? ""))
        }
    }

    /// `coffer admin disable --name NAME`: an admin who left; their sessions end at once.
    struct Disable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Take an admin off: they cannot sign in, and their sessions end at once (not the last owner).")

        @OptionGroup var admin: NamedAdmin

        func run() async throws { try await admin.set(disabled: true) }
    }

    /// `coffer admin enable --name NAME`.
    struct Enable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Let a disabled admin sign in again.")

        @OptionGroup var admin: NamedAdmin

        func run() async throws { try await admin.set(disabled: false) }
    }

    /// The admin `disable` and `enable` name, and the database they are on.
    struct NamedAdmin: ParsableArguments {
        @Option(help: "The admin's name.")
        var name: String

        @OptionGroup var options: KeysCommand.Options

        /// Disables or enables the admin, audited, and says so.
        func set(disabled: Bool) async throws {
            try await options.withAdminService { service, environment in
                try await service.setDisabled(
                    environment: environment, name: name, disabled: disabled, actor: LocalSupport.actor)
            }
            print(
                disabled
                    ? "\(name) is disabled: they cannot sign in, and their sessions have ended"
                    : "\(name) is enabled: they can sign in again")
        }
    }

    /// `coffer admin reset-two-factor --name NAME`: for an admin who lost their phone and recovery codes.
    struct ResetTwoFactor: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reset-two-factor",
            abstract: "Turn an admin's two-factor sign-in off (a lost phone and lost recovery codes).")

        @Option(help: "The admin's name.")
        var name: String

        @OptionGroup var options: KeysCommand.Options

        func run() async throws {
            try await options.withAdminService { service, environment in
                try await service.disableTwoFactor(
                    environment: environment, name: name, code: nil, actor: LocalSupport.actor)
            }
            print("Two-factor sign-in is off for \(name): they sign in with their password and can turn it on again")
        }
    }

    /// `coffer admin reset-password --name NAME`.
    struct ResetPassword: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reset-password", abstract: "Set a new password for an admin and end their sessions.")

        @OptionGroup var password: PasswordOptions

        func run() async throws {
            let (secret, generated) = try password.password()
            let found = try await password.options.withDatabase { store, environment in
                let found = try await store.setAdminPassword(
                    name: password.name, passwordHash: await PasswordHasher().hash(secret), at: Date())
                if found {
                    try await LocalSupport.audit(
                        store, environment, action: "admin.reset-password", subject: "admin \(password.name)")
                }
                return found
            }
            guard found else { throw CommandFailure("no admin named \(password.name)") }
            print(
                "New password for \(password.name)" + (generated ? ": \(secret) (shown once)" : " set")
                    + "; their sessions have ended")
        }
    }

    /// `coffer admin list`.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List panel admins.")

        @OptionGroup var options: KeysCommand.Options

        func run() async throws {
            let admins = try await options.withDatabase { store, _ in try await store.admins() }
            guard !admins.isEmpty else { return print("no admins (the first `coffer serve` creates one)") }
            var table = TextTable(["name", "role", "grant limit", "two-factor", "created (UTC)", "password set (UTC)"])
            for admin in admins {
                table.add([
                    admin.name + (admin.isEnabled ? "" : " (disabled)"), admin.role.rawValue,
                    admin.grantCeiling.map(String.init) ?? "-",
                    admin.hasTwoFactor ? "on" : "off", JSONText.timestamp(admin.createdAt),
                    JSONText.timestamp(admin.passwordChangedAt),
                ])
            }
            print(table.render())
        }
    }
}

extension AdminRole: ExpressibleByArgument {}

extension KeysCommand.Options {
    /// Runs `body` with the support service over the server's database, closed after; a refusal is the
    /// command's failure, in words.
    func withAdminService<T>(_ body: (AdminService, AppStoreEnvironment) async throws -> T) async throws -> T {
        try await withComposition { composition, environment in
            do {
                // An admin's account changes nothing a wallet holds: the wallet is the default's.
                return try await body(composition.support(wallet: .device), environment)
            } catch let error as AdminError {
                throw CommandFailure(error.description)
            }
        }
    }
}

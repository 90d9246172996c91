import ArgumentParser
import CofferAdmin
import CofferCore
import CofferStore
import Foundation

/// `coffer admin ...`: the people who sign in to the panel, on the server's database.
struct AdminCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "admin",
        abstract: "Create panel admins, reset their passwords, and list them.",
        subcommands: [Create.self, ResetPassword.self, List.self]
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

        func run() async throws {
            let (secret, generated) = try password.password()
            let (store, environment) = try await password.options.open()
            do {
                let admin = Admin(
                    name: password.name, passwordHash: await PasswordHasher().hash(secret), createdAt: Date())
                try await store.createAdmin(admin)
                try await LocalSupport.audit(store, environment, action: "admin.create", subject: "admin \(admin.name)")
                await LocalDatabase.close(store)
            } catch StoreError.alreadyExists {
                await LocalDatabase.close(store)
                throw CommandFailure("an admin named \(password.name) exists; use `coffer admin reset-password`")
            } catch {
                await LocalDatabase.close(store)
                throw error
            }
            print("Created admin \(password.name)" + (generated ? " with password \(secret) (shown once)" : ""))
        }
    }

    /// `coffer admin reset-password --name NAME`.
    struct ResetPassword: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reset-password", abstract: "Set a new password for an admin and end their sessions.")

        @OptionGroup var password: PasswordOptions

        func run() async throws {
            let (secret, generated) = try password.password()
            let (store, environment) = try await password.options.open()
            let found: Bool
            do {
                found = try await store.setAdminPassword(
                    name: password.name, passwordHash: await PasswordHasher().hash(secret), at: Date())
                if found {
                    try await LocalSupport.audit(
                        store, environment, action: "admin.reset-password", subject: "admin \(password.name)")
                }
                await LocalDatabase.close(store)
            } catch {
                await LocalDatabase.close(store)
                throw error
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
            let (store, _) = try await options.open()
            let admins = try await store.admins()
            await LocalDatabase.close(store)
            guard !admins.isEmpty else { return print("no admins (the first `coffer serve` creates one)") }
            var table = TextTable(["name", "created (UTC)", "password set (UTC)"])
            for admin in admins {
                table.add([
                    admin.name, JSONText.timestamp(admin.createdAt), JSONText.timestamp(admin.passwordChangedAt),
                ])
            }
            print(table.render())
        }
    }
}

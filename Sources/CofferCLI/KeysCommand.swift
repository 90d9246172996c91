import ArgumentParser
import CofferAdmin
import CofferAppStore
import CofferCore
import CofferStore
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `coffer keys ...`: the keys that sign admin API requests. Run on the server's machine, against its database:
/// the public half is stored there, the private half written to a file for the CLI and never sent anywhere.
struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Create, list and revoke the keys that sign admin API requests.",
        subcommands: [Create.self, List.self, Revoke.self]
    )

    /// Where the keys live, and the environment their audit entries go to.
    struct Options: ParsableArguments {
        @Option(
            name: .customLong("database-url"),
            help: "sqlite:PATH or postgres://... Default: as coffer serve finds it, else sqlite:coffer.sqlite.")
        var databaseURL: String?

        @Option(help: "The JSON config file coffer serve runs with, to read its database.url.")
        var config: String?

        @Option(help: "The environment whose audit log records the change. Default Sandbox.")
        var environment: String = "Sandbox"

        /// Runs `body` on the server's database (``Composition``), closed after whatever happens.
        func withComposition<T>(_ body: (Composition, AppStoreEnvironment) async throws -> T) async throws -> T {
            guard let environment = AppStoreEnvironment(rawValue: environment) else {
                throw ValidationError("environment must be Sandbox or Production")
            }
            let settings = try await Composition.settings(flags: ["database.url": databaseURL], config: config)
            return try await Composition.with(settings, withCatalog: false) { try await body($0, environment) }
        }

        /// Runs `body` on the server's store, closed after whatever happens.
        func withDatabase<T>(_ body: (any CofferStore, AppStoreEnvironment) async throws -> T) async throws -> T {
            try await withComposition { composition, environment in try await body(composition.store, environment) }
        }
    }

    /// `coffer keys create --name NAME`.
    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make a P-256 key: store its public half, write its private half to a file only you can read.")

        @Option(help: "A name for people, e.g. \"support laptop\".")
        var name: String

        @Option(help: "Where to write the private key. Default coffer-admin-KEYID.pem in the working folder.")
        var out: String?

        @Option(
            help: """
                owner (everything) or support (reads, grants up to --grant-limit over a rolling 24 hours, cancels \
                pending grants; no balances, merges or deletions).
                """)
        var role: AdminRole = .owner

        @Option(help: "For a support key: the most credits its grants may carry over a rolling 24 hours.")
        var grantLimit: Int64?

        @OptionGroup var options: Options

        func validate() throws {
            if role == .support, !(0...SupportRules.maximumAmount).contains(grantLimit ?? -1) {
                throw ValidationError("a support key needs --grant-limit, from 0 to \(SupportRules.maximumAmount)")
            }
            if role == .owner, grantLimit != nil {
                throw ValidationError("--grant-limit is for support keys (--role support): owners have no limit")
            }
        }

        func run() async throws {
            let name = name.trimmingCharacters(in: .whitespaces)
            guard !name.isEmpty, name.count <= 100 else { throw ValidationError("--name needs 1 to 100 characters") }
            try await options.withDatabase { store, environment in
                try await create(name: name, store: store, environment: environment)
            }
        }

        private func create(name: String, store: any CofferStore, environment: AppStoreEnvironment) async throws {
            let key = NewAdminKey(name: name, at: Date(), role: role, grantLimit: grantLimit)
            let path = out ?? "coffer-admin-\(key.record.id).pem"
            // The file is created owner-only and must not exist: a key is never written over another.
            do {
                try OwnerOnlyFile.write(Data(key.privateKeyPEM.utf8), to: path, exclusive: true)
            } catch {
                throw CommandFailure(error.exists ? "\(path) exists; choose another --out" : error.description)
            }
            do {
                try await store.createAdminKey(key.record)
            } catch {
                try? FileManager.default.removeItem(atPath: path)
                throw error
            }
            try await LocalSupport.audit(
                store, environment, action: "key.create", subject: "key \(key.record.id)",
                after: [
                    "name": name, "role": role.rawValue,
                    "grantLimit": key.record.grantCeiling.map(String.init) ?? "none",
                ])
            print(
                "Created admin key \(key.record.id) (\(name), \(role.rawValue)"
                    + (key.record.grantCeiling.map { ", grants up to \($0) credits a day" } ?? "")
                    + "); private key in \(path)")
            print("Use it with: --key-id \(key.record.id) --key \(path) --server URL")
        }
    }

    /// `coffer keys list`.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List admin keys.")

        @OptionGroup var options: Options

        @Flag(help: "Print JSON instead of a table.")
        var json = false

        func run() async throws {
            let keys = try await options.withDatabase { store, _ in try await store.adminKeys() }
            if json { return print(try JSONText.encode(keys.map(KeyView.init))) }
            guard !keys.isEmpty else { return print("no admin keys") }
            var table = TextTable(["key id", "name", "role", "grant limit", "created (UTC)", "status"])
            for key in keys {
                table.add([
                    key.id, key.name, key.role.rawValue, key.grantCeiling.map(String.init) ?? "-",
                    JSONText.timestamp(key.createdAt),
                    key.revokedAt.map { "revoked \(JSONText.timestamp($0))" } ?? "active",
                ])
            }
            print(table.render())
        }
    }

    /// `coffer keys revoke KEY_ID`.
    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke an admin key; its requests are refused.")

        @Argument(help: "The key id.")
        var keyId: String

        @OptionGroup var options: Options

        func run() async throws {
            let revoked = try await options.withDatabase { store, environment in
                let revoked = try await store.revokeAdminKey(id: keyId, at: Date())
                if revoked {
                    try await LocalSupport.audit(store, environment, action: "key.revoke", subject: "key \(keyId)")
                }
                return revoked
            }
            guard revoked else { throw CommandFailure("no active admin key \(keyId)") }
            print("Revoked admin key \(keyId)")
        }
    }

    /// A key as listed: never its key material.
    struct KeyView: Encodable {
        var id: String
        var name: String
        var createdAt: Date
        var revokedAt: Date?
        var role: String
        var grantLimit: Int64?

        init(_ key: AdminKey) {
            id = key.id
            name = key.name
            role = key.role.rawValue
            grantLimit = key.grantCeiling
            createdAt = key.createdAt
            revokedAt = key.revokedAt
        }
    }
}

import CofferCore
import CofferStore
import Foundation
import Testing

@testable import CofferCLI

/// What a database says of the server that keeps it, and what support's commands on it then take or refuse.
@Suite("The wallet a database's server keeps")
struct ServedWalletTests {
    @Test(
        "commands take the environment and wallet the database's server keeps; another named, or two environments unnamed, are refused"
    )
    func resolve() async throws {
        let store = InMemoryStore()
        let unnamed = try await Composition.settings(flags: [:], config: nil)
        func settings(_ flags: [String: String?]) async throws -> SupportSettings {
            try await Composition.settings(flags: flags, config: nil)
        }
        // A database no server ran on says nothing: the defaults.
        var taken = try await ServedWallet.resolve(store, unnamed)
        #expect(taken.environment == .sandbox && taken.wallet == .device)

        // A Production server keeping the server wallet: taken when nothing is named.
        try await store.saveCursor(ServedWallet.cursor, value: "server", environment: .production)
        taken = try await ServedWallet.resolve(store, unnamed)
        #expect(taken.environment == .production && taken.wallet == .server)
        taken = try await ServedWallet.resolve(store, try await settings(["wallet": "server"]))
        #expect(taken.environment == .production && taken.wallet == .server)
        await #expect {
            _ = try await ServedWallet.resolve(store, try await settings(["wallet": "device"]))
        } throws: { error in
            "\(error)".contains("keeps the server wallet, not the device one")
        }
        await #expect {
            _ = try await ServedWallet.resolve(store, try await settings(["environment": "Sandbox"]))
        } throws: { error in
            "\(error)".contains("it holds no Sandbox customers")
        }

        // A Sandbox server on the same database too: which one is asked for.
        try await store.saveCursor(ServedWallet.cursor, value: "device", environment: .sandbox)
        await #expect {
            _ = try await ServedWallet.resolve(store, unnamed)
        } throws: { error in
            "\(error)".contains("give --environment Sandbox or --environment Production")
        }
        taken = try await ServedWallet.resolve(store, try await settings(["environment": "Sandbox"]))
        #expect(taken.environment == .sandbox && taken.wallet == .device)
    }
}

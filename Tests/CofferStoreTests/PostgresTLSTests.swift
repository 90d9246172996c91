import CofferCore
import CofferStore
import CofferStorePostgres
import CofferTestSupport
import Foundation
import Testing

/// `sslmode` in a PostgreSQL URL, against the test server (which offers no TLS).
@Suite("PostgreSQL sslmode")
struct PostgresTLSTests {
    @Test("an unknown sslmode is refused before connecting")
    func unknownMode() throws {
        #expect(throws: StoreError.self) {
            _ = try PostgresStore.configuration(url: "postgres://coffer@127.0.0.1:5432/coffer?sslmode=sometimes")
        }
        for mode in ["disable", "prefer", "require", "verify-ca", "verify-full"] {
            _ = try PostgresStore.configuration(url: "postgres://coffer@127.0.0.1:5432/coffer?sslmode=\(mode)")
        }
    }

    @Test(
        "disable and prefer connect to a server without TLS; require and verify-full refuse to",
        .enabled(if: TestPostgres.url != nil || TestPostgres.required, "\(TestPostgres.missing)"))
    func modes() async throws {
        let url = try await TestPostgres.freshDatabase()
        for mode in ["disable", "prefer"] {
            do {
                let store = try await PostgresStore(url: url + "?sslmode=\(mode)")
                #expect(try await store.userCount(environment: .sandbox) == 0)
                store.close()
            } catch {
                Issue.record("sslmode=\(mode): \(error)")
            }
        }
        for mode in ["require", "verify-full"] {
            await #expect(throws: (any Error).self, "sslmode=\(mode) without TLS") {
                let store = try await PostgresStore(url: url + "?sslmode=\(mode)", startupTimeout: .seconds(3))
                store.close()
            }
        }
    }
}

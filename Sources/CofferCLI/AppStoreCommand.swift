import ArgumentParser
import AsyncHTTPClient
import CofferAppStore
import Foundation

/// `coffer appstore ...`: call the App Store Server API with the app's In-App Purchase key.
struct AppStoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "appstore",
        abstract: "Call the App Store Server API (transaction info, history, statuses, refunds, notifications).",
        subcommands: [
            Transaction.self, History.self, Statuses.self, Lookup.self, Refunds.self, Notifications.self,
            TestNotification.self,
        ]
    )

    /// The key and where to send requests.
    struct Connection: ParsableArguments {
        @Option(help: "The In-App Purchase key id (kid).")
        var keyId: String

        @Option(help: "The issuer id (iss) from App Store Connect.")
        var issuerId: String

        @Option(help: "The app's bundle id (bid).")
        var bundleId: String

        @Option(help: "The .p8 private key file.")
        var privateKey: String

        @Option(help: "Sandbox or Production: picks Apple's host.")
        var environment: String = "Sandbox"

        @Option(help: "Another host, e.g. the App Store simulator.")
        var baseURL: String?

        @Option(help: "Seconds one call may take before it is given up (and retried).")
        var timeout: Int = 15

        /// Runs `body` with a client, printing the JSON it returns; API errors exit 1.
        func run(_ body: (AppStoreServerAPIClient) async throws(AppStoreAPIError) -> any Encodable) async throws {
            guard let environment = SignedDataEnvironment(name: environment), !environment.isLocal else {
                throw ValidationError("unknown environment \(self.environment): use Sandbox or Production")
            }
            let pem: String
            do {
                pem = try String(contentsOf: URL(fileURLWithPath: privateKey), encoding: .utf8)
            } catch {
                FileHandle.standardError.write(
                    Data("Error: cannot read \(privateKey): \(error.localizedDescription)\n".utf8))
                throw ExitCode(2)
            }
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            let outcome: Result<any Encodable, AppStoreAPIError>
            do {
                let credentials = try AppStoreServerAPIClient.Credentials(
                    keyId: keyId, issuerId: issuerId, bundleId: bundleId, privateKeyPEM: pem)
                var retry = AppStoreServerAPIClient.RetryPolicy()
                retry.callTimeout = .seconds(max(1, timeout))
                let client = AppStoreServerAPIClient(
                    httpClient: http, credentials: credentials, environment: environment, baseURL: baseURL, retry: retry
                )
                outcome = .success(try await body(client))
            } catch {
                outcome = .failure(error)
            }
            try await http.shutdown()
            switch outcome {
            case .success(let value): print(String(decoding: try AppleJSON.encode(value, pretty: true), as: UTF8.self))
            case .failure(let error):
                FileHandle.standardError.write(Data("Error: \(error)\n".utf8))
                throw ExitCode(1)
            }
        }
    }

    /// A transaction id and a connection: what `transaction`, `history` and `statuses` take.
    struct ByTransaction: ParsableArguments {
        @Argument(help: "A transaction id.") var transactionId: String
        @OptionGroup var connection: Connection

        /// Runs `call` for the transaction with a client, printing what it returns.
        func run(_ call: (AppStoreServerAPIClient, String) async throws(AppStoreAPIError) -> any Encodable)
            async throws
        {
            try await connection.run { client throws(AppStoreAPIError) in try await call(client, transactionId) }
        }
    }

    /// `coffer appstore transaction ID`.
    struct Transaction: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Get Transaction Info.")
        @OptionGroup var options: ByTransaction
        func run() async throws {
            try await options.run { client, id throws(AppStoreAPIError) in try await client.getTransactionInfo(id) }
        }
    }

    /// `coffer appstore history ID`: every page.
    struct History: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Get Transaction History (all pages).")
        @OptionGroup var options: ByTransaction
        func run() async throws {
            try await options.run { client, id throws(AppStoreAPIError) in try await client.allTransactions(id) }
        }
    }

    /// `coffer appstore statuses ID`.
    struct Statuses: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Get All Subscription Statuses.")
        @OptionGroup var options: ByTransaction
        func run() async throws {
            try await options.run { client, id throws(AppStoreAPIError) in
                try await client.getAllSubscriptionStatuses(id)
            }
        }
    }

    /// `coffer appstore lookup ORDER`.
    struct Lookup: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Look Up Order ID.")
        @Argument(help: "The order id from the customer's receipt email.") var orderId: String
        @OptionGroup var connection: Connection
        func run() async throws {
            try await connection.run { client throws(AppStoreAPIError) in try await client.lookUpOrderId(orderId) }
        }
    }

    /// `coffer appstore refunds ID`.
    struct Refunds: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Get Refund History (first page, or --revision).")
        @Argument(help: "A transaction id.") var transactionId: String
        @Option(help: "The revision token of the page to fetch.") var revision: String?
        @OptionGroup var connection: Connection
        func run() async throws {
            try await connection.run { client throws(AppStoreAPIError) in
                try await client.getRefundHistory(transactionId, revision: revision)
            }
        }
    }

    /// `coffer appstore notifications [--hours N] [--only-failures]`.
    struct Notifications: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Get Notification History (one page).")
        @Option(help: "How many hours back to look (1-4320: Apple keeps 180 days, 30 in the sandbox).")
        var hours: Int = 24
        @Option(help: "The pagination token of the page to fetch.") var paginationToken: String?
        @Flag(help: "Only notifications Apple failed to deliver.") var onlyFailures = false
        @OptionGroup var connection: Connection
        func validate() throws {
            guard (1...4_320).contains(hours) else { throw ValidationError("--hours must be 1-4320") }
        }

        func run() async throws {
            var request = NotificationHistoryRequest()
            request.endDate = Date()
            request.startDate = Date().addingTimeInterval(-Double(hours) * 3_600)
            request.onlyFailures = onlyFailures ? true : nil
            try await connection.run { client throws(AppStoreAPIError) in
                try await client.getNotificationHistory(request, paginationToken: paginationToken)
            }
        }
    }

    /// `coffer appstore test-notification`.
    struct TestNotification: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "test-notification", abstract: "Request a Test Notification.")
        @OptionGroup var connection: Connection
        func run() async throws {
            try await connection.run { client throws(AppStoreAPIError) in try await client.requestTestNotification() }
        }
    }
}

import CofferCore
import Foundation

extension CofferSDK {
    /// What the app showed when it last ran: the entitlements and the balance, for the first frame after a launch.
    public struct CachedStart: Sendable, Equatable {
        /// The entitlements as last computed.
        public var entitlements: [String]
        /// The balance as last read (the local ledger's, or the server's in the server wallet).
        public var balance: Int64
        /// The deficit as last read.
        public var deficit: Int64

        /// Creates a cached start.
        public init(entitlements: [String], balance: Int64, deficit: Int64) {
            self.entitlements = entitlements
            self.balance = balance
            self.deficit = deficit
        }
    }

    /// The state's record of the last wallet read.
    static let keptWalletKey = "lastWallet"

    /// What the state holds from the last run (nothing for a first launch).
    static func cachedStart(_ state: SDKState) -> CachedStart {
        let entitlements = ((try? state.value("entitlements")) ?? nil).map {
            $0.split(separator: "\n").map(String.init)
        }
        let wallet = ((try? state.value(keptWalletKey)) ?? nil)?.split(separator: " ").compactMap { Int64($0) }
        let (balance, deficit) = wallet?.count == 2 ? (wallet![0], wallet![1]) : (0, 0)
        return CachedStart(entitlements: entitlements ?? [], balance: balance, deficit: deficit)
    }

    /// The launch's steps are over: the next ``launch()`` runs them again.
    func launchEnded(_ id: UUID) {
        guard launchId == id else { return }
        launchInFlight = nil
        launchId = nil
    }

    /// Keeps the wallet for the next launch's first frame, when it changed.
    func keepWallet(_ wallet: Wallet) {
        guard wallet != keptWallet else { return }
        keptWallet = wallet
        try? state.set(Self.keptWalletKey, "\(wallet.balance) \(wallet.deficit)")
    }

    /// Starts the SDK (``launch()``'s steps) within ``SDKConfiguration/launchDeadline``: past it the report says
    /// ``LaunchReport/pastDeadline`` and the steps go on in the background, so the app shows its cached state and
    /// the customer goes on ("Continue anyway"). Without a deadline it waits for every step.
    ///
    /// A launch called while another one's steps still run (one that went past its deadline, say) waits for those
    /// steps instead of running them a second time beside them. The steps run on their own: a caller that is
    /// cancelled stops waiting, not the launch.
    @discardableResult
    public func launch() async throws -> LaunchReport {
        let steps: Task<LaunchReport, any Error>
        if let running = launchInFlight {
            steps = running
        } else {
            let id = UUID()
            launchId = id
            // The task runs on the SDK's actor: it lets go of `launchInFlight` in the same turn it ends, so a launch
            // asked for after that runs the steps again.
            steps = Task {
                defer { self.launchEnded(id) }
                return try await self.launchSteps()
            }
            launchInFlight = steps
        }
        guard let deadline = configuration.launchDeadline else { return try await steps.value }
        let (answers, answer) = AsyncStream.makeStream(of: Result<LaunchReport, any Error>?.self)
        Task {
            let result: Result<LaunchReport, any Error>
            do {
                result = .success(try await steps.value)
            } catch {
                result = .failure(error)
            }
            answer.yield(result)
            answer.finish()
        }
        let timer = Task {
            try? await self.configuration.timerClock.sleep(
                for: .milliseconds(Int(min(max(deadline, 0), 86_400) * 1_000)))
            answer.yield(nil)
            answer.finish()
        }
        var first: Result<LaunchReport, any Error>?? = .none
        for await next in answers {
            first = next
            break
        }
        timer.cancel()
        try Task.checkCancellation()
        switch first {
        case .some(.some(let result)): return try result.get()
        default:
            configuration.log(
                .notice, .launch,
                "launch: past its \(deadline) s deadline; the app shows its cached state, the steps go on in the background"
            )
            return .pastDeadline
        }
    }
}

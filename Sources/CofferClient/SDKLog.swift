// The SDK's log: os.Logger on Apple platforms (Console.app and Xcode's console show it, filtered by subsystem
// and category), swift-log elsewhere when the package's Server trait brings it (Linux tests, `coffer simulate`,
// CI), and the app's own sink when it sets one. Only this file names a logging framework.
import Foundation

#if canImport(os)
    import os
#elseif canImport(Logging)
    import Logging
#endif

/// How much a line of the SDK's log matters.
public enum SDKLogLevel: Int, Sendable, Comparable, CaseIterable {
    /// Each server call and other detail.
    case debug
    /// A step done: a launch, a purchase, a recovery, a refund taken back, a grant, a backup.
    case info
    /// Something the app or support should know: a refusal, a launch past its deadline.
    case notice
    /// A step that failed and is tried again later.
    case warning

    /// Orders the levels by how much they matter.
    public static func < (lhs: SDKLogLevel, rhs: SDKLogLevel) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// What a line of the SDK's log is about: its os.Logger category, and its swift-log label's last part.
public enum SDKLogCategory: String, Sendable, CaseIterable {
    /// ``CofferSDK/launch()`` and the catch-up when the app comes to the foreground.
    case launch
    /// A purchase, from the intent to the finished transaction.
    case purchase
    /// What a dead process or an earlier launch left: unfinished transactions, interrupted purchases.
    case recovery
    /// A refund taken back, or its reversal.
    case refund
    /// Support's grants picked up.
    case grant
    /// The device wallet's backups.
    case backup
    /// Each request to the Coffer server, with its request id.
    case server
}

/// One line of the SDK's log. It never holds a credential, a signed transaction or a customer's data beyond ids.
public struct SDKLogEntry: Sendable, Equatable {
    /// How much it matters.
    public var level: SDKLogLevel
    /// What it is about.
    public var category: SDKLogCategory
    /// The line, in words.
    public var message: String

    /// Creates a line.
    public init(level: SDKLogLevel, category: SDKLogCategory, message: String) {
        self.level = level
        self.category = category
        self.message = message
    }
}

/// Where the SDK writes what it does (``SDKConfiguration/log``): the platform's logger under `subsystem`, and
/// `sink` when the app gives one (to show the lines in its own diagnostics, or a test to read them).
public struct SDKLog: Sendable {
    /// The os.Logger subsystem (Apple platforms) and the swift-log label's first part (elsewhere).
    public var subsystem: String
    /// Lines below this level are not written.
    public var minimumLevel: SDKLogLevel
    /// Also called with every line written, on the caller's task; keep it short.
    public var sink: (@Sendable (SDKLogEntry) -> Void)?
    /// Whether lines go to the platform's logger too.
    public var toPlatform: Bool

    /// A log under `subsystem` (e.g. your bundle id plus `.coffer`).
    public init(
        subsystem: String = "Coffer", minimumLevel: SDKLogLevel = .debug, toPlatform: Bool = true,
        sink: (@Sendable (SDKLogEntry) -> Void)? = nil
    ) {
        self.subsystem = subsystem
        self.minimumLevel = minimumLevel
        self.toPlatform = toPlatform
        self.sink = sink
    }

    /// No lines anywhere.
    public static let silent = SDKLog(minimumLevel: .warning, toPlatform: false)

    /// Writes a line.
    func callAsFunction(_ level: SDKLogLevel, _ category: SDKLogCategory, _ message: @autoclosure () -> String) {
        guard level >= minimumLevel, toPlatform || sink != nil else { return }
        let text = message()
        sink?(SDKLogEntry(level: level, category: category, message: text))
        if toPlatform { Self.platform(subsystem, level, category, text) }
    }

    #if canImport(os)
        /// os.Logger (`Logger(subsystem:category:)`, `log(level:_:)`): ids and counts are public, nothing else is
        /// ever written.
        private static func platform(
            _ subsystem: String, _ level: SDKLogLevel, _ category: SDKLogCategory, _ text: String
        ) {
            let type: OSLogType =
                switch level {
                case .debug: .debug
                case .info: .info
                case .notice: .default
                case .warning: .error
                }
            Logger(subsystem: subsystem, category: category.rawValue).log(level: type, "\(text, privacy: .public)")
        }
    #elseif canImport(Logging)
        /// swift-log (`Logger(label:)`, `log(level:_:)`), under the label `<subsystem>.<category>`.
        private static func platform(
            _ subsystem: String, _ level: SDKLogLevel, _ category: SDKLogCategory, _ text: String
        ) {
            let swiftLogLevel: Logging.Logger.Level =
                switch level {
                case .debug: .debug
                case .info: .info
                case .notice: .notice
                case .warning: .warning
                }
            Logging.Logger(label: "\(subsystem).\(category.rawValue)").log(level: swiftLogLevel, "\(text)")
        }
    #else
        /// No logging framework here (Linux with the Server trait off): the sink alone.
        private static func platform(
            _ subsystem: String, _ level: SDKLogLevel, _ category: SDKLogCategory, _ text: String
        ) {}
    #endif
}

import Foundation
import Logging
import Synchronization

/// How `coffer serve` writes its log lines to standard output (`log.format`).
enum LogFormat: String, Sendable, CaseIterable {
    /// One line of text each: time, level, label, message, metadata (swift-log's stream handler).
    case text
    /// One JSON object each: `time`, `level`, `label`, `message` and every metadata value (the request id as
    /// `request_id`), for a log collector.
    case json

    /// A logger with this format at `level`.
    func logger(label: String, level: Logger.Level) -> Logger {
        var logger = Logger(label: label, factory: handler)
        logger.logLevel = level
        return logger
    }

    /// The handler for a logger labelled `label`.
    func handler(_ label: String) -> any LogHandler {
        switch self {
        case .text: StreamLogHandler.standardOutput(label: label)
        case .json: JSONLogHandler(label: label)
        }
    }
}

/// Writes each log line as one JSON object on standard output: `{"time", "level", "label", "message", ...}`
/// with the logger's and the call's metadata as members (a key the line itself uses keeps the line's value).
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    /// One write at a time, so lines from several threads never interleave.
    private static let output = Mutex(())

    init(label: String) {
        self.label = label
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var members: [String: Any] = [:]
        var all = metadata
        if let provided = metadataProvider?.get() { all.merge(provided) { $1 } }
        if let given = event.metadata { all.merge(given) { $1 } }
        for (key, value) in all { members[key] = Self.json(value) }
        members["time"] = Self.timestamp(Date())
        members["level"] = event.level.rawValue
        members["label"] = label
        members["message"] = event.message.description
        guard
            var line = try? JSONSerialization.data(
                withJSONObject: members, options: [.sortedKeys, .withoutEscapingSlashes])
        else { return }
        line.append(0x0A)
        // A closed pipe or a full disk loses the line; it never stops the server.
        Self.output.withLock { _ in try? FileHandle.standardOutput.write(contentsOf: line) }
    }

    /// A metadata value as JSON: strings and string-convertibles as strings, arrays and dictionaries as such.
    static func json(_ value: Logger.Metadata.Value) -> Any {
        switch value {
        case .string(let text): text
        case .stringConvertible(let convertible): convertible.description
        case .array(let values): values.map(json)
        case .dictionary(let members): members.mapValues(json)
        }
    }

    /// UTC with milliseconds, e.g. `2026-11-26T05:31:07.123Z`.
    static func timestamp(_ date: Date) -> String {
        date.formatted(
            .iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
    }
}

/// One Server-Sent Event of `GET /v1/me/events` (`event:` is the kind, `data:` this JSON).
public struct ServerEventBody: Codable, Sendable, Equatable {
    /// What changed.
    public var type: ServerEventKind
    /// The ledger key or grant id it is about, when there is one.
    public var key: String?

    /// Creates the event.
    public init(type: ServerEventKind, key: String? = nil) {
        self.type = type
        self.key = key
    }
}

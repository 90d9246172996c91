/// `GET /v1/me/adjustments` answers with this: the device wallet's mailbox.
public struct AdjustmentsResponse: Codable, Sendable, Equatable {
    /// The adjustments, oldest first.
    public var adjustments: [AdjustmentBody]

    /// Creates the answer.
    public init(adjustments: [AdjustmentBody]) { self.adjustments = adjustments }
}

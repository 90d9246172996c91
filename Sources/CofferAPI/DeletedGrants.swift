/// `POST /v1/admin/grants/delete-all`: how many grants were deleted.
public struct DeletedGrants: Sendable, Hashable, Codable {
    /// The count.
    public var deleted: Int

    /// Creates a result.
    public init(deleted: Int) { self.deleted = deleted }
}

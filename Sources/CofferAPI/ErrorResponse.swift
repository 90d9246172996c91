/// Every error of the API: `{"error": {"code", "message"}}`.
public struct ErrorResponse: Codable, Sendable, Equatable, Error {
    /// The error.
    public struct Body: Codable, Sendable, Equatable {
        /// A stable code, e.g. `unauthorized`, `wrong-user`, or Apple's status name for refused signed data.
        public var code: String
        /// What went wrong, for people.
        public var message: String

        /// Creates the error body.
        public init(code: String, message: String) {
            self.code = code
            self.message = message
        }
    }

    /// The error.
    public var error: Body

    /// Creates an error.
    public init(code: String, message: String) { error = Body(code: code, message: message) }
}

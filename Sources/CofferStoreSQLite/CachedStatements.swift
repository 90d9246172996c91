import GRDB

// The store's statements run through each connection's statement cache: compiled once per connection, with the
// triggers they fire (the webhook outbox, the dashboard's rollups, the Sandbox marks), rather than at every call
// (GRDB's authorizer reads every column of a statement and of its triggers as it compiles: in a debug build, most of
// the model simulation's SQLite time). Each takes one statement.

extension Database {
    /// Runs one statement, compiled once per connection.
    func execute(cached sql: String, arguments: StatementArguments = StatementArguments()) throws {
        try cachedStatement(sql: sql).execute(arguments: arguments)
    }
}

extension Row {
    /// The rows of one statement, compiled once per connection.
    static func fetchAll(_ db: Database, cached sql: String, arguments: StatementArguments = StatementArguments())
        throws -> [Row]
    {
        try fetchAll(db.cachedStatement(sql: sql), arguments: arguments)
    }

    /// The first row of one statement, compiled once per connection.
    static func fetchOne(_ db: Database, cached sql: String, arguments: StatementArguments = StatementArguments())
        throws -> Row?
    {
        try fetchOne(db.cachedStatement(sql: sql), arguments: arguments)
    }
}

extension DatabaseValueConvertible {
    /// The first value of one statement, compiled once per connection.
    static func fetchOne(_ db: Database, cached sql: String, arguments: StatementArguments = StatementArguments())
        throws -> Self?
    {
        try fetchOne(db.cachedStatement(sql: sql), arguments: arguments)
    }

    /// The values of one statement, compiled once per connection.
    static func fetchAll(_ db: Database, cached sql: String, arguments: StatementArguments = StatementArguments())
        throws -> [Self]
    {
        try fetchAll(db.cachedStatement(sql: sql), arguments: arguments)
    }
}

import Dispatch
import HummingbirdBcrypt

/// Hashes and checks admin passwords with bcrypt. Hashing takes about a quarter of a second at cost 12, so
/// it runs on a dispatch queue, never on the server's event loops or Swift's cooperative threads.
public struct PasswordHasher: Sendable {
    /// The bcrypt cost (log2 of the rounds).
    public let cost: UInt8
    /// The shortest password accepted.
    public static let minimumLength = 12

    /// A hasher at `cost` (12 unless a test needs speed).
    public init(cost: UInt8 = 12) {
        self.cost = cost
    }

    /// The bcrypt hash of a password.
    public func hash(_ password: String) async -> String {
        let cost = cost
        return await Self.offThread { Bcrypt.hash(password, cost: cost) }
    }

    /// Whether a password matches a hash.
    public func verify(_ password: String, hash: String) async -> Bool {
        await Self.offThread { Bcrypt.verify(password, hash: hash) }
    }

    /// A random password of 20 letters and digits (about 119 bits), easy to copy from a terminal.
    public static func generate() -> String {
        let alphabet = Array("abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789")
        var generator = SystemRandomNumberGenerator()
        return String((0..<20).map { _ in alphabet.randomElement(using: &generator)! })
    }

    /// Refuses a password too short to keep.
    public static func check(_ password: String) throws(AdminError) {
        guard password.count >= minimumLength else {
            throw .invalid("a password needs at least \(minimumLength) characters")
        }
    }

    private static func offThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: work()) }
        }
    }
}

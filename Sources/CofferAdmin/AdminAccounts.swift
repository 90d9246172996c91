import CofferCore
import CofferStore
import Crypto
import Foundation

/// Admin accounts and the secrets of panel sessions.
public enum AdminAccounts {
    /// The name of the admin the first run creates.
    public static let firstAdminName = "admin"

    /// Creates the first admin, with a generated password, when there is no admin yet.
    ///
    /// - Returns: The password (shown once), or `nil` when an admin exists (or another server made one first).
    public static func createFirstAdmin(store: any CofferStore, hasher: PasswordHasher, now: Date) async throws
        -> String?
    {
        guard try await store.admins().isEmpty else { return nil }
        let password = PasswordHasher.generate()
        do {
            try await store.createAdmin(
                Admin(name: firstAdminName, passwordHash: await hasher.hash(password), createdAt: now))
        } catch StoreError.alreadyExists {
            return nil
        }
        return password
    }

    /// Checks an admin name: 1 to 64 ASCII letters, digits, dots, dashes or underscores, not dots alone (a
    /// name is a path segment of the panel's Admins page).
    public static func check(name: String) throws(AdminError) {
        let allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
        guard (1...64).contains(name.unicodeScalars.count), name.unicodeScalars.allSatisfy({ allowed.contains($0) }),
            !name.allSatisfy({ $0 == "." })
        else {
            throw .invalid("an admin name has 1 to 64 ASCII letters, digits, dots, dashes or underscores")
        }
    }
}

/// Random secrets (user tokens, session tokens, CSRF tokens) and how they are kept and compared.
public enum Secrets {
    /// A new random secret (32 bytes, base64url): a session token or a CSRF token.
    public static func random() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// The hash a session token is stored under.
    public static func hash(_ token: String) -> String {
        Hex.encode(SHA256.hash(data: Data(token.utf8)))
    }

    /// Compares two secrets in time that does not depend on where they differ.
    public static func same(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8)
        let y = Array(b.utf8)
        guard x.count == y.count, !x.isEmpty else { return false }
        var difference: UInt8 = 0
        for index in x.indices { difference |= x[index] ^ y[index] }
        return difference == 0
    }
}

import Foundation

#if canImport(Glibc)
    import Glibc
    private let systemWrite = Glibc.write
#elseif canImport(Darwin)
    import Darwin
    private let systemWrite = Darwin.write
#endif

/// Writes secrets (private keys, a first-run password) into files only their owner can read, created with
/// mode 0600 from the first byte: there is no moment when another user could open them.
public enum OwnerOnlyFile {
    /// Why a secret file could not be written.
    public struct Failure: Error, CustomStringConvertible {
        /// The file.
        public var path: String
        /// Whether it failed because the file exists (only when writing exclusively).
        public var exists: Bool
        /// What went wrong, for people.
        public var description: String
    }

    /// Writes `data` to `path` with mode 0600.
    ///
    /// - Parameters:
    ///   - data: The secret.
    ///   - path: The file.
    ///   - exclusive: Refuse when the file exists (never write one key over another); otherwise an existing
    ///     file is replaced in place, its mode set to 0600 first. A symbolic link is never followed.
    public static func write(_ data: Data, to path: String, exclusive: Bool) throws(Failure) {
        let flags = O_WRONLY | O_CREAT | O_NOFOLLOW | (exclusive ? O_EXCL : O_TRUNC)
        let descriptor = open(path, flags, 0o600)
        guard descriptor >= 0 else {
            let code = errno
            throw Failure(
                path: path, exists: code == EEXIST,
                description: code == EEXIST
                    ? "\(path) exists" : "cannot create \(path): \(String(cString: strerror(code)))")
        }
        defer { close(descriptor) }
        // An existing file keeps its mode through O_TRUNC: make it owner-only before writing the secret.
        guard fchmod(descriptor, 0o600) == 0 else {
            throw Failure(path: path, exists: false, description: "cannot make \(path) owner-only")
        }
        let written = data.withUnsafeBytes { buffer -> Bool in
            guard let base = buffer.baseAddress else { return true }
            var offset = 0
            while offset < buffer.count {
                let count = systemWrite(descriptor, base + offset, buffer.count - offset)
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { return false }
                offset += count
            }
            return true
        }
        guard written else { throw Failure(path: path, exists: false, description: "cannot write \(path)") }
    }
}

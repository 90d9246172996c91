import Crypto
import Foundation
import Synchronization
import X509

#if canImport(Glibc)
    import Glibc
#endif

/// What a test OCSP responder answers about the one certificate it knows.
public enum OCSPAnswer: Sendable {
    /// The certificate is good.
    case good
    /// The certificate was revoked an hour ago.
    case revoked
    /// The responder has never heard of it.
    case unknown
}

/// `openssl ocsp` serving one issuer's index on a loopback port.
public final class OpenSSLResponder {
    private let process: Process

    /// Starts a responder on `port` answering for `subject`, signed by its issuer.
    ///
    /// - Parameters:
    ///   - folder: Where the responder's files are written.
    ///   - name: A name for its files.
    ///   - port: The port it listens on (all interfaces, as `openssl ocsp` binds).
    ///   - issuer: The certificate that issued `subject`; it signs the answers.
    ///   - issuerKey: The issuer's key.
    ///   - subject: The certificate the responder knows about.
    ///   - status: What it answers about `subject`.
    public init(
        folder: URL, name: String, port: UInt16, issuer: Certificate, issuerKey: P256.Signing.PrivateKey,
        subject: Certificate, status: OCSPAnswer
    ) throws {
        guard
            let openssl = ["/usr/bin/openssl", "/usr/local/bin/openssl"].first(where: {
                FileManager.default.isExecutableFile(atPath: $0)
            })
        else {
            throw LocalPort.Failure(
                description: "openssl is needed for the OCSP tests (apt-get install openssl); .ci/run installs it")
        }
        let certificatePath = folder.appendingPathComponent("\(name)-issuer.pem")
        let keyPath = folder.appendingPathComponent("\(name)-issuer.key")
        let indexPath = folder.appendingPathComponent("\(name)-index.txt")
        try issuer.serializeAsPEM().pemString.write(to: certificatePath, atomically: true, encoding: .utf8)
        try issuerKey.pemRepresentation.write(to: keyPath, atomically: true, encoding: .utf8)
        let serial = subject.serialNumber.bytes.map { String(format: "%02X", $0) }.joined()
        let expiry = Self.utcTime(subject.notValidAfter)
        let line: String =
            switch status {
            case .good: "V\t\(expiry)\t\t\(serial)\tunknown\t/CN=\(name)\n"
            case .revoked:
                "R\t\(expiry)\t\(Self.utcTime(Date().addingTimeInterval(-3_600)))\t\(serial)\tunknown\t/CN=\(name)\n"
            case .unknown: ""
            }
        try line.write(to: indexPath, atomically: true, encoding: .utf8)
        process = Process()
        process.executableURL = URL(fileURLWithPath: openssl)
        process.arguments = [
            "ocsp", "-index", indexPath.path, "-port", "\(port)", "-rsigner", certificatePath.path,
            "-rkey", keyPath.path, "-CA", certificatePath.path, "-ndays", "1", "-ignore_err",
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        // openssl prints `ACCEPT [::]:PORT` once it listens. (Probing the port with an empty connection
        // would send OpenSSL 3.0's responder into a busy loop.)
        var printed = Data()
        while !String(decoding: printed, as: UTF8.self).contains("ACCEPT") {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty {
                process.waitUntilExit()
                throw LocalPort.Failure(
                    description: "openssl ocsp exited (\(process.terminationStatus)) before listening")
            }
            printed.append(chunk)
        }
    }

    /// Stops the responder. SIGKILL, since a child started from a concurrency thread inherits its blocked
    /// SIGTERM.
    public func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    private static func utcTime(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyMMddHHmmss"
        return formatter.string(from: date) + "Z"
    }
}

/// Loopback ports for test servers.
public enum LocalPort {
    /// Why a port could not be found or served.
    public struct Failure: Error, CustomStringConvertible {
        /// What happened.
        public var description: String
    }

    /// Ports handed out in this process, never handed out twice.
    private static let given = Mutex<Set<UInt16>>([])

    /// A port nothing listens on now, below the kernel's ephemeral range (32768 and up), so no outgoing
    /// connection takes it before its server starts, and never one handed out before in this process (two
    /// suites running at once each get their own).
    public static func free() throws -> UInt16 {
        for _ in 0..<1_000 {
            let port = UInt16.random(in: 20_000..<32_000)
            guard given.withLock({ $0.insert(port).inserted }) else { continue }
            if try canBind(port) { return port }
        }
        throw Failure(description: "no free port between 20000 and 32000")
    }

    private static func canBind(_ port: UInt16) throws -> Bool {
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketFD >= 0 else { throw Failure(description: "socket() failed") }
        defer { close(socketFD) }
        var address = loopback(port)
        let length = socklen_t(MemoryLayout<sockaddr_in>.size)
        return withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in bind(socketFD, raw, length) == 0 }
        }
    }

    private static func loopback(_ port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}

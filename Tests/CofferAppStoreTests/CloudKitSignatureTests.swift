import CofferAppStore
import Crypto
import Foundation
import Testing

/// CloudKit Web Services' server-to-server signature, checked against the procedure Apple documents (the message
/// `date:base64(sha256(body)):subpath`, signed with `openssl dgst -sha256 -sign eckey.pem`).
@Suite("CloudKit request signature")
struct CloudKitSignatureTests {
    static let subpath = "/database/1/iCloud.com.example.app/development/public/records/query"
    static let body = Data(#"{"query":{"recordType":"BankrollBackup"}}"#.utf8)
    static let date = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01T00:00:00Z

    static func run(_ arguments: [String], input: Data) throws -> (Int32, Data) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let stdin = Pipe()
        let stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        try process.run()
        stdin.fileHandleForWriting.write(input)
        try stdin.fileHandleForWriting.close()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, output)
    }

    @Test("the signed message is the documented one: the date without fractions, the body's SHA-256, the subpath")
    func message() {
        #expect(CloudKitSignature.dateText(Self.date) == "2026-01-01T00:00:00Z")
        let message = CloudKitSignature.message(date: "2026-01-01T00:00:00Z", body: Self.body, subpath: Self.subpath)
        // The hash computed apart (Python's hashlib) for this body.
        #expect(
            String(decoding: message, as: UTF8.self)
                == "2026-01-01T00:00:00Z:JNM2T0Z7K2y58fMXuY9LvckzHwT5sY14NVDUG4mhl18=:" + Self.subpath)
    }

    @Test("openssl's signature (Apple's documented way) verifies here, and Coffer's verifies with openssl")
    func openssl() throws {
        let key = P256.Signing.PrivateKey()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ck-sig-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let privatePath = folder.appendingPathComponent("eckey.pem").path
        let publicPath = folder.appendingPathComponent("public.pem").path
        try Data(key.pemRepresentation.utf8).write(to: URL(fileURLWithPath: privatePath))
        try Data(key.publicKey.pemRepresentation.utf8).write(to: URL(fileURLWithPath: publicPath))
        let dateText = CloudKitSignature.dateText(Self.date)
        let message = CloudKitSignature.message(date: dateText, body: Self.body, subpath: Self.subpath)

        let (status, signature) = try Self.run(["openssl", "dgst", "-sha256", "-sign", privatePath], input: message)
        #expect(status == 0, "openssl is needed (the OCSP tests use it too)")
        let headers = [
            CloudKitSignature.keyIdHeader: "key-1", CloudKitSignature.dateHeader: dateText,
            CloudKitSignature.signatureHeader: signature.base64EncodedString(),
        ]
        #expect(
            CloudKitSignature.refusal(
                header: { headers[$0] }, body: Self.body, subpath: Self.subpath, keys: ["key-1": key.publicKey],
                now: Self.date) == nil)

        let ours = try CloudKitSignature.headers(
            key: CloudKitKey(keyId: "key-1", privateKey: key), body: Self.body, subpath: Self.subpath, at: Self.date)
        let ourSignature = try #require(ours.first { $0.0 == CloudKitSignature.signatureHeader }?.1)
        let signaturePath = folder.appendingPathComponent("signature.der")
        try #require(Data(base64Encoded: ourSignature)).write(to: signaturePath)
        let (verified, output) = try Self.run(
            ["openssl", "dgst", "-sha256", "-verify", publicPath, "-signature", signaturePath.path], input: message)
        #expect(verified == 0, "\(String(decoding: output, as: UTF8.self))")
    }

    @Test("a request is refused for another key, body, subpath or date, a stale date, or no signature")
    func refusals() throws {
        let key = P256.Signing.PrivateKey()
        let keys = ["key-1": key.publicKey]
        let signed = Dictionary(
            uniqueKeysWithValues: try CloudKitSignature.headers(
                key: CloudKitKey(keyId: "key-1", privateKey: key), body: Self.body, subpath: Self.subpath,
                at: Self.date))
        func refusal(
            _ headers: [String: String] = signed, body: Data = Self.body, subpath: String = Self.subpath,
            now: Date = Self.date, keys: [String: P256.Signing.PublicKey] = keys
        ) -> String? {
            CloudKitSignature.refusal(header: { headers[$0] }, body: body, subpath: subpath, keys: keys, now: now)
        }
        #expect(refusal() == nil)
        #expect(refusal(now: Self.date.addingTimeInterval(599)) == nil)
        #expect(refusal(body: Data("{}".utf8)) == "the signature does not verify")
        #expect(refusal(subpath: Self.subpath.replacingOccurrences(of: "development", with: "production")) != nil)
        #expect(refusal(now: Self.date.addingTimeInterval(601)) == "the request's date is too far from now")
        #expect(refusal(keys: ["key-1": P256.Signing.PrivateKey().publicKey]) == "the signature does not verify")
        #expect(refusal(keys: [:]) == "unknown key id")
        var moved = signed
        moved[CloudKitSignature.dateHeader] = "2026-01-01T00:00:01Z"
        #expect(refusal(moved) == "the signature does not verify")
        moved[CloudKitSignature.dateHeader] = "2026-01-01T00:00:00.000Z"
        #expect(refusal(moved) != nil)
        var unsigned = signed
        unsigned[CloudKitSignature.signatureHeader] = nil
        #expect(refusal(unsigned) == "the signature does not verify")
        unsigned[CloudKitSignature.signatureHeader] = String(repeating: "A", count: 5000)
        #expect(refusal(unsigned) == "the signature does not verify")
    }
}

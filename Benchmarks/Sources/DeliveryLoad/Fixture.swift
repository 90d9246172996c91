// What a run serves and posts: the catalog, a simulator chain the server trusts, customers, signed
// transactions and refund notifications, and files of ready-made HTTP requests for wrk.
import CofferSimulator
import Foundation

/// A customer the run created through `POST /v1/users`.
struct Customer: Sendable {
    var token: String
    var supportId: String
    var appAccountToken: String
}

/// The files and keys of one run, in a folder of its own.
struct Fixture: Sendable {
    static let bundleId = "com.example.coffer"
    static let productId = "com.example.credits"
    static let creditsPerPurchase: Int64 = 100

    let folder: URL
    let pki: SimulatorPKI
    let signer: JWSSigner
    let now: Date

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-load-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data(
            #"{"products": [{"id": "\#(Self.productId)", "kind": "consumable", "credits": \#(Self.creditsPerPurchase)}]}"#
                .utf8
        ).write(to: folder.appendingPathComponent("catalog.json"))
        now = Date()
        pki = try SimulatorPKI(
            validFrom: now.addingTimeInterval(-86_400), leafValidUntil: now.addingTimeInterval(86_400))
        try pki.rootDER().write(to: folder.appendingPathComponent("root.der"))
        signer = try pki.signer()
    }

    func remove() { try? FileManager.default.removeItem(at: folder) }

    /// `coffer serve`'s arguments for this fixture.
    func serveArguments(port: Int, databaseURL: String, wallet: String) -> [String] {
        [
            "serve", "--bundle-id", Self.bundleId, "--apple-root", folder.appendingPathComponent("root.der").path,
            "--catalog", folder.appendingPathComponent("catalog.json").path, "--port", String(port),
            "--database-url", databaseURL, "--wallet", wallet,
        ]
    }

    var signedMilliseconds: Int64 { Int64(now.timeIntervalSince1970 * 1000) }

    /// The payload of a consumable purchase, written by hand (every value is plain ASCII; Foundation's
    /// JSONSerialization is slow on Linux), optionally refunded.
    func transactionPayload(id: Int, customer: Customer, refunded: Bool = false) -> String {
        let date = signedMilliseconds
        let revocation = refunded ? #","revocationDate":\#(date),"revocationReason":0"# : ""
        return """
            {"transactionId":"\(id)","originalTransactionId":"\(id)","webOrderLineItemId":"\(id)",\
            "bundleId":"\(Self.bundleId)","productId":"\(Self.productId)","purchaseDate":\(date),\
            "originalPurchaseDate":\(date),"quantity":1,"type":"Consumable",\
            "inAppOwnershipType":"PURCHASED","signedDate":\(date),"environment":"Sandbox",\
            "transactionReason":"PURCHASE","storefront":"USA","storefrontId":"143441","price":990,\
            "currency":"USD","appAccountToken":"\(customer.appAccountToken)"\(revocation)}
            """
    }

    /// A StoreKit 2 signed transaction.
    func signedTransaction(id: Int, customer: Customer) throws -> String {
        try signer.sign(payloadJSON: Data(transactionPayload(id: id, customer: customer).utf8))
    }

    /// Apple's REFUND notification of a transaction (`signedPayload`).
    func refundNotification(id: Int, customer: Customer) throws -> String {
        let transaction = try signer.sign(
            payloadJSON: Data(transactionPayload(id: id, customer: customer, refunded: true).utf8))
        let payload = """
            {"notificationType":"REFUND","notificationUUID":"\(UUID().uuidString.lowercased())","version":"2.0",\
            "signedDate":\(signedMilliseconds),"data":{"bundleId":"\(Self.bundleId)","bundleVersion":"1",\
            "environment":"Sandbox","signedTransactionInfo":"\(transaction)"}}
            """
        return try signer.sign(payloadJSON: Data(payload.utf8))
    }
}

/// Creates `count` customers through the API, a few at a time.
func createCustomers(_ count: Int, base: String, http: HTTP) async throws -> [Customer] {
    try await withThrowingTaskGroup(of: [Customer].self) { group in
        let lanes = min(8, max(1, count))
        for lane in 0..<lanes {
            group.addTask {
                var made: [Customer] = []
                for _ in stride(from: lane, to: count, by: lanes) {
                    let (status, data) = try await http.call("POST", base + "/v1/users")
                    guard status == 201, let json = try JSONSerialization.jsonObject(with: data) as? [String: Any],
                        let token = json["token"] as? String, let supportId = json["supportId"] as? String,
                        let accountToken = json["appAccountToken"] as? String
                    else { throw LoadFailure("cannot create a customer: \(status)") }
                    made.append(
                        Customer(token: token, supportId: supportId, appAccountToken: accountToken.lowercased()))
                }
                return made
            }
        }
        var customers: [Customer] = []
        for try await made in group { customers += made }
        return customers
    }
}

/// A file of ready-made HTTP/1.1 requests for wrk's script: each an 8-digit length and the request's bytes.
final class RequestFile {
    let path: String
    private let handle: FileHandle
    private var buffer = Data()
    private(set) var count = 0

    init(path: String) throws {
        self.path = path
        FileManager.default.createFile(atPath: path, contents: nil)
        guard let handle = FileHandle(forWritingAtPath: path) else { throw LoadFailure("cannot write \(path)") }
        self.handle = handle
        buffer.reserveCapacity(1 << 20)
    }

    /// Appends a request.
    func append(method: String, path: String, token: String?, headers: [(String, String)] = [], body: String?) {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        if let token { head += "Authorization: Bearer \(token)\r\n" }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        let bodyBytes = body.map { Data($0.utf8) } ?? Data()
        if body != nil { head += "Content-Type: application/json\r\n" }
        head += "Content-Length: \(bodyBytes.count)\r\n\r\n"
        let request = Data(head.utf8) + bodyBytes
        buffer.append(Data(String(format: "%08d", request.count).utf8))
        buffer.append(request)
        count += 1
        if buffer.count >= 1 << 20 { flush() }
    }

    func flush() {
        handle.write(buffer)
        buffer.removeAll(keepingCapacity: true)
    }

    func close() throws {
        flush()
        try handle.close()
    }
}

/// Signs deliveries for `customers` (transaction ids from `firstId`, round robin over customers) into `files`
/// (in blocks, one per file), on every core. Transaction `id` belongs to `customers[id % customers.count]`.
func writeDeliveries(count: Int, firstId: Int, customers: [Customer], files: [String], fixture: Fixture)
    async throws
{
    let perFile = (count + files.count - 1) / max(1, files.count)
    try await withThrowingTaskGroup(of: Void.self) { group in
        for (fileIndex, path) in files.enumerated() {
            group.addTask {
                // Each file is signed in slices by several tasks, then written in order.
                let slices = 8
                let sliceSize = (perFile + slices - 1) / slices
                let bodies = try await withThrowingTaskGroup(of: (Int, [(Int, String)]).self) { inner in
                    for slice in 0..<slices {
                        inner.addTask {
                            var made: [(Int, String)] = []
                            let start = slice * sliceSize
                            for item in start..<min(perFile, start + sliceSize) {
                                let id = firstId + fileIndex * perFile + item
                                let customer = customers[id % customers.count]
                                made.append((id, try fixture.signedTransaction(id: id, customer: customer)))
                            }
                            return (slice, made)
                        }
                    }
                    var parts = [[(Int, String)]](repeating: [], count: slices)
                    for try await (slice, made) in inner { parts[slice] = made }
                    return parts.flatMap { $0 }
                }
                let file = try RequestFile(path: path)
                for (id, jws) in bodies {
                    let customer = customers[id % customers.count]
                    file.append(
                        method: "POST", path: "/v1/transactions", token: customer.token,
                        body: #"{"signedTransaction":"\#(jws)"}"#)
                }
                try file.close()
            }
        }
        try await group.waitForAll()
    }
}

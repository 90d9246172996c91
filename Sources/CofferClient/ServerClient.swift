import CofferAPI
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The Coffer server's client API, over URLSession: what the SDK says to the server.
public struct ServerClient: Sendable {
    /// The server, e.g. `https://coffer.example.com`.
    public let baseURL: URL
    private let session: URLSession

    /// A client of the server at `baseURL`; requests time out after `timeout` seconds.
    public init(baseURL: URL, timeout: TimeInterval = 20) {
        self.baseURL = baseURL
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        session = URLSession(configuration: configuration)
    }

    /// `POST /v1/users`: a new user; keep the answer in the credential store.
    public func createUser() async throws(ServerClientError) -> CreateUserResponse {
        try await send("POST", "/v1/users")
    }

    /// `GET /v1/me`.
    public func me(token: String) async throws(ServerClientError) -> MeResponse {
        try await send("GET", "/v1/me", token: token)
    }

    /// `POST /v1/transactions`: the server verifies and delivers once.
    public func post(signedTransaction: String, token: String) async throws(ServerClientError) -> TransactionResponse {
        try await send(
            "POST", "/v1/transactions", token: token, body: TransactionRequest(signedTransaction: signedTransaction))
    }

    /// `GET /v1/me/backup`, or `nil` when there is none yet.
    public func backup(token: String) async throws(ServerClientError) -> BackupBody? {
        do {
            return try await send("GET", "/v1/me/backup", token: token)
        } catch .refused(404, _, _) {
            return nil
        }
    }

    /// `PUT /v1/me/backup` with `If-Match` (none for the first write); a conflict comes back as
    /// ``ServerClientError/refused(_:_:_:)`` with status 412.
    public func saveBackup(value: Int64, device: String, version: Int64?, token: String)
        async throws(ServerClientError) -> BackupBody
    {
        try await send(
            "PUT", "/v1/me/backup", token: token, body: BackupRequest(value: value, device: device),
            headers: version.map { ["If-Match": String($0)] } ?? [:])
    }

    /// `GET /v1/me/grants?status=pending`.
    public func pendingGrants(token: String) async throws(ServerClientError) -> [GrantBody] {
        let response: GrantsResponse = try await send("GET", "/v1/me/grants?status=pending", token: token)
        return response.grants
    }

    /// `POST /v1/me/grants/{id}/claim` (idempotent).
    public func claim(grant id: UUID, token: String) async throws(ServerClientError) -> ClaimResponse {
        try await send("POST", "/v1/me/grants/\(id.uuidString.lowercased())/claim", token: token)
    }

    /// `GET /v1/me/adjustments`: the device wallet's mailbox.
    public func adjustments(token: String) async throws(ServerClientError) -> [AdjustmentBody] {
        let response: AdjustmentsResponse = try await send("GET", "/v1/me/adjustments", token: token)
        return response.adjustments
    }

    private func send<Answer: Decodable>(
        _ method: String, _ path: String, token: String? = nil, body: (some Encodable)? = String?.none,
        headers: [String: String] = [:]
    ) async throws(ServerClientError) -> Answer {
        guard let url = URL(string: path, relativeTo: baseURL) else { throw .transport("bad path \(path)") }
        var request = URLRequest(url: url)
        request.httpMethod = method
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let body {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            do {
                request.httpBody = try JSONEncoder().encode(body)
            } catch {
                throw .transport("cannot encode the request: \(error)")
            }
        }
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await session.data(for: request)
        } catch {
            throw .transport(error.localizedDescription)
        }
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        guard (200..<300).contains(status) else {
            let detail = try? decoder.decode(ErrorResponse.self, from: data)
            if status >= 500 || status == 0 || status == 429 {
                throw .transport("the server answered \(status) \(detail?.error.message ?? "")")
            }
            throw .refused(status, detail?.error.code ?? "http-\(status)", detail?.error.message ?? "")
        }
        do {
            return try decoder.decode(Answer.self, from: data)
        } catch {
            throw .transport("the server's answer is not readable: \(error)")
        }
    }
}

/// Why a server call failed.
public enum ServerClientError: Error, Equatable, Sendable {
    /// The server could not be reached or failed (5xx, 429): try again later; nothing is lost.
    case transport(String)
    /// The server refused the request (4xx) with a code; retrying the same request will not help.
    case refused(Int, String, String)
}

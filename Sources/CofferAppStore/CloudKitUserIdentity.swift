import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat

/// Who a CloudKit web auth token belongs to, asked of CloudKit Web Services (`users/caller` with the container's
/// API token and the token an app fetched with `CKFetchWebAuthTokenOperation`): the proof that a CloudKit claim
/// comes from the iCloud user it names, since the user record name alone is public.
public struct CloudKitUserIdentity: Sendable {
    /// The longest web auth token taken from an app (Apple's are a few hundred characters).
    public static let maximumTokenLength = 4_096

    private let httpClient: HTTPClient
    private let baseURL: String
    private let container: String
    private let environment: String
    private let apiToken: String
    private let timeout: Duration

    /// A client of one container's environment.
    ///
    /// - Parameters:
    ///   - apiToken: The container's API token from CloudKit Console (a secret of the server's).
    ///   - baseURL: Apple's address, or the simulator's.
    ///   - timeout: The longest wait for CloudKit's answer.
    public init(
        httpClient: HTTPClient, container: String, environment: String, apiToken: String,
        baseURL: String = CloudKitClient.appleURL, timeout: Duration = .seconds(10)
    ) throws(CloudKitError) {
        try CloudKitClient.check(container: container, environment: environment)
        guard !apiToken.isEmpty, apiToken.count <= 256, apiToken.allSatisfy({ $0.isASCII && !$0.isWhitespace }) else {
            throw .invalidRequest("the CloudKit API token must be the one CloudKit Console shows (no spaces)")
        }
        self.httpClient = httpClient
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.container = container
        self.environment = environment
        self.apiToken = apiToken
        self.timeout = timeout
    }

    /// Whether a web auth token from an app is worth asking about: 1 to ``maximumTokenLength`` printable ASCII
    /// characters.
    public static func isToken(_ token: String) -> Bool {
        !token.isEmpty && token.utf8.count <= maximumTokenLength
            && token.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value < 0x7F }
    }

    /// The user record name of the iCloud user whose web auth token this is (the token is used up).
    ///
    /// - Throws: ``CloudKitError/server(httpStatus:code:reason:)`` when CloudKit refuses the token (401, 421
    ///   `AUTHENTICATION_REQUIRED`) or the API token, ``CloudKitError/transport(_:)`` when it does not answer in
    ///   time, ``CloudKitError/malformed(_:)`` for an answer without a user record name.
    public func caller(webAuthToken: String) async throws(CloudKitError) -> String {
        guard Self.isToken(webAuthToken) else { throw .invalidRequest("not a CloudKit web auth token") }
        var components = URLComponents(string: baseURL + "/database/1/\(container)/\(environment)/public/users/caller")
        components?.queryItems = [
            URLQueryItem(name: "ckAPIToken", value: apiToken),
            URLQueryItem(name: "ckWebAuthToken", value: webAuthToken),
        ]
        // `+`, `/` and `=` of a token are escaped too: CloudKit reads the query as form values.
        let query = components?.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%2B")
        components?.percentEncodedQuery = query
        guard let url = components?.url?.absoluteString else { throw .invalidRequest("cannot make the request URL") }
        var http = HTTPClientRequest(url: url)
        http.method = .GET
        http.headers.add(name: "User-Agent", value: "Coffer")
        let status: Int
        let bytes: ByteBuffer
        do {
            let response = try await httpClient.execute(http, timeout: CloudKitClient.timeAmount(timeout))
            status = Int(response.status.code)
            bytes = try await response.body.collect(upTo: 1024 * 1024)
        } catch {
            throw .transport("CloudKit users/caller: \(error)")
        }
        let data = Data(buffer: bytes)
        guard status == 200 else {
            let payload = try? AppleJSON.decode(CloudKitErrorBody.self, from: data)
            throw .server(httpStatus: status, code: payload?.serverErrorCode, reason: payload?.reason)
        }
        guard let name = Self.userRecordName(in: data) else {
            throw .malformed("users/caller answered no userRecordName")
        }
        return name
    }

    /// The user record name in a `users/caller` answer: a user identity (`{"userRecordName": ...}`) or the list
    /// holding one (`{"users": [{"userRecordName": ...}]}`).
    static func userRecordName(in data: Data) -> String? {
        struct Identity: Decodable { var userRecordName: String? }
        struct Answer: Decodable {
            var userRecordName: String?
            var users: [Identity]?
        }
        guard let answer = try? AppleJSON.decode(Answer.self, from: data) else { return nil }
        guard let name = answer.userRecordName ?? answer.users?.first?.userRecordName, !name.isEmpty,
            name.utf8.count <= 255, name.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F })
        else { return nil }
        return name
    }
}

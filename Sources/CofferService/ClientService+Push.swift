import CofferAPI
import CofferAppStore
import CofferCore
import CofferStore
import Foundation

extension ClientService {
    /// Registers this device's APNs token for the user (`PUT /v1/me/push-token`): registering again refreshes
    /// it; a token another user registered before moves to this one (the device now runs this install).
    ///
    /// - Throws: ``ServiceError/badRequest(_:)`` for a token that is not hex of 16 to 100 bytes, or an
    ///   environment other than `sandbox` or `production`.
    public func registerPushToken(_ request: PushTokenRequest, user: User) async throws {
        let (token, gateway) = try Self.pushToken(request)
        try await store.savePushToken(
            PushToken(
                token: token, owner: user.id, environment: user.environment, gateway: gateway,
                updatedAt: dependencies.now()))
    }

    /// Forgets this device's APNs token (`DELETE /v1/me/push-token`), when the user holds it.
    ///
    /// - Throws: ``ServiceError/notFound(_:)`` when the user has no such token.
    public func unregisterPushToken(_ request: PushTokenRequest, user: User) async throws {
        let (token, _) = try Self.pushToken(request)
        guard
            try await store.pushTokens(owner: user.id, environment: user.environment).contains(where: {
                $0.token == token
            })
        else { throw ServiceError.notFound("this user has no such push token") }
        try await store.deletePushToken(token)
    }

    static func pushToken(_ request: PushTokenRequest) throws -> (String, PushToken.Gateway) {
        guard APNsClient.isDeviceToken(request.token) else {
            throw ServiceError.badRequest("token must be the device token in hex (16 to 100 bytes)")
        }
        guard let gateway = PushToken.Gateway(rawValue: request.environment ?? "production") else {
            throw ServiceError.badRequest("environment must be sandbox or production")
        }
        return (request.token.lowercased(), gateway)
    }
}
